"""The labelling page of `skillforge judge label` driven in headless Chromium over the DevTools
protocol (a websocket; `websockets` comes with langgraph's SDK, no browser driver package): a person
labels 3 pairs by clicking the choices and Save, double-clicks a Save, reloads the page, and the
golden file holds exactly 3 labels with the right hashes and choices. A screenshot is left in
tmp_path to look at."""

from __future__ import annotations

import base64
import json
import subprocess
import time
import urllib.request

import pytest

from skillforge.calibration.golden import golden_path, pairs_from_run, read_golden
from skillforge.calibration.labelpage import LabelServer
from test_judge_label import HOSTILE, SKILL, case_result, differing, stored_run

ws_client = pytest.importorskip("websockets.sync.client")
SHOWN = "section.pair:not([hidden])"


class Tab:
    """One Chromium tab over the DevTools protocol: evaluate JS, click with the mouse, screenshot."""

    def __init__(self, ws: object) -> None:
        self.ws = ws
        self.n = 0

    def call(self, method: str, **params: object) -> dict:
        self.n += 1
        self.ws.send(json.dumps({"id": self.n, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=30))
            if msg.get("id") == self.n:  # events in between are not needed
                assert "error" not in msg, msg
                return msg["result"]

    def js(self, expression: str, *, wait: bool = False) -> object:
        res = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=wait)
        assert "exceptionDetails" not in res, res["exceptionDetails"]
        return res["result"].get("value")

    def until(self, expression: str, timeout: float = 15) -> object:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            value = self.js(expression)
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"never true in the page: {expression}")

    def click(self, selector: str) -> None:
        """A real left click (mouse down and up) at the middle of the element `selector` names."""
        x, y = self.js(f"""(() => {{ const e = document.querySelector({json.dumps(selector)});
            e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect();
            return [r.x + r.width / 2, r.y + r.height / 2]; }})()""")  # type: ignore[misc]
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def load(self, url: str | None = None) -> None:
        self.call("Page.navigate", url=url) if url else self.call("Page.reload", ignoreCache=True)
        self.until("document.readyState === 'complete' && !!document.getElementById('count')")


@pytest.fixture
def browser(chromium, tmp_path):
    profile = tmp_path / "chromium-profile"
    proc = subprocess.Popen([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                             "--no-default-browser-check", f"--user-data-dir={profile}", "--remote-debugging-port=0",
                             "--remote-debugging-address=127.0.0.1", "--window-size=1280,1000", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file, end = profile / "DevToolsActivePort", time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            assert proc.poll() is None and time.monotonic() < end, "chromium did not start its DevTools endpoint"
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        no_proxy = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        targets = json.loads(no_proxy.open(f"http://127.0.0.1:{port}/json/list", timeout=30).read())
        url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
        with ws_client.connect(url, proxy=None, max_size=None, open_timeout=30) as ws:
            yield Tab(ws)
    finally:
        proc.kill()
        proc.wait()


CHOICES = [{"task": "A", "robustness": "tie", "readability": "B"},
           {"task": "B", "robustness": "B", "readability": "A"},
           {"task": "tie", "robustness": "A", "readability": "tie"}]


def test_a_person_labels_three_pairs_by_clicking_and_a_reload_adds_nothing(workspace, browser, tmp_path):
    results = differing(3)
    results.append(case_result(7, HOSTILE, "Your taxi to Terminal 7 (T7) arrives in 7 min, plate 沪A·12345."))
    run = stored_run(workspace, results)
    pairs = pairs_from_run(workspace, run, seed=5)
    path = golden_path(workspace, SKILL)
    with LabelServer(pairs, path, title=f"skill {SKILL} · run {run}") as server:
        browser.load(server.url)
        assert browser.js("getComputedStyle(document.querySelector('header')).position") == "sticky"  # CSS ran
        assert browser.js("document.querySelectorAll('script').length") == 1  # the answer's is text
        labelled = []
        for i, choice in enumerate(CHOICES):
            pid = browser.until(f"document.querySelector('{SHOWN}')?.dataset.pair")
            assert browser.js("document.getElementById('count').textContent") == str(i)
            for dim, value in choice.items():
                browser.click(f'{SHOWN} fieldset[data-dim="{dim}"] input[value="{value}"] + span')
            browser.js(f"document.querySelector('{SHOWN} textarea').value = 'note {i}'")
            browser.click(f"{SHOWN} button.save")
            if i == 2:
                browser.click(f"{SHOWN} button.save")  # a double click on Save
            browser.until(f"document.querySelector('[data-pair=\"{pid}\"]').dataset.done === '1'")
            labelled.append(pid)
        browser.until("document.getElementById('count').textContent === '3'")
        assert browser.js(f"document.querySelector('{SHOWN}').dataset.pair") not in labelled

        browser.load()  # a reload: the page comes back from the golden file, and sends nothing
        assert browser.js("document.getElementById('count').textContent") == "3"
        assert browser.js(f"document.querySelector('{SHOWN}').dataset.done") == "0"
        browser.click("#nav button[data-i='0']")  # back to a labelled pair: read-only, with its choices
        first = browser.js(f"document.querySelector('{SHOWN}').dataset.pair")
        assert first in labelled
        assert browser.js(f"Array.from(document.querySelectorAll('{SHOWN} input:checked')).map(e => e.value)") == \
            list(CHOICES[labelled.index(first)].values())
        assert browser.js(f"document.querySelector('{SHOWN} button.save').disabled") is True
        browser.click(f'{SHOWN} fieldset[data-dim="task"] input[value="B"] + span')
        browser.click(f"{SHOWN} button.save")  # clicking again changes nothing
        sent = browser.js(f"""fetch('/label', {{method: 'POST', headers: {{'Content-Type': 'application/json'}},
            body: JSON.stringify({{pair_id: '{labelled[0]}', labels: {{task: 'B', robustness: 'B', readability: 'B'}}}})
            }}).then(r => r.json())""", wait=True)
        assert sent == {"status": "already labelled", "labelled": 3, "total": 4}
        hostile = next(i for i, p in enumerate(pairs) if p.case_id == "dev-taxi-07")
        browser.click(f"#nav button[data-i='{hostile}']")
        browser.until(f"document.querySelector('{SHOWN}')?.dataset.pair === '{pairs[hostile].pair_id}'")
        assert "<script>alert('x')</script>" in browser.js(f"document.querySelector('{SHOWN} .answers').innerText")
        shot = tmp_path / "judge-label.png"
        shot.write_bytes(base64.b64decode(browser.call("Page.captureScreenshot", format="png")["data"]))
        page = browser.js("document.documentElement.outerHTML")
    assert shot.stat().st_size > 20_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "baseline" not in page.lower() and "candidate" not in page.lower()

    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3
    by_id = {p.pair_id: p for p in pairs}
    for i, (line, pid) in enumerate(zip(lines, labelled, strict=True)):
        got, pair = json.loads(line), by_id[pid]
        assert got["pair_id"] == pid and got["labels"] == CHOICES[i] and got["note"] == f"note {i}"
        assert (got["sha_a"], got["sha_b"], got["a_is"], got["source"]) == (pair.sha_a, pair.sha_b, pair.a_is, "web")
    assert [g.pair_id for g in read_golden(path)] == labelled
