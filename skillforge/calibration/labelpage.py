"""The blind labelling page of `skillforge judge label`: a stdlib HTTP server on 127.0.0.1 only.

GET / is one self-contained page (no external asset) holding the session's pairs, one shown at a
time: the request, the facts the judge is also given, the tool results, Answer A and Answer B side by
side, and per dimension A / tie / B with an optional note. Every text from the run is escaped (an
answer is untrusted), and a Content-Security-Policy lets only the page's own script and style run.
The page never says which answer came from which side: `a_is` stays in the server.

POST /label {"pair_id", "labels": {dimension: choice}, "note"} appends a GoldenLabel (source "web")
unless the golden file already holds that pair: then 200 "already labelled", nothing written (a double
click, a reload re-sending). A pair not served in this session, a missing or unknown dimension or a bad
choice is 400 with a message, nothing written. A request whose Host is not 127.0.0.1 / localhost on
this port (DNS rebinding), or whose Origin is another site, is 403.
"""

from __future__ import annotations

import html
import json
import logging
import secrets
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from skillforge.calibration.golden import (LabelError, append_label, dimension_questions, read_golden,
                                           visible)
from skillforge.errors import BadArgument, SkillForgeError
from skillforge.state.calibration import HUMAN_DIMENSIONS, GoldenLabel, GoldenPair

log = logging.getLogger(__name__)
HOST = "127.0.0.1"
BODY_MAX = 64 * 1024
NOTE_CHARS = 2000


class LabelServer:
    """The page and its POST endpoint for `pairs`, labels appended to the golden file `path`.
    `all_done` is set once every pair of the session is labelled; `saved` counts this session's appends."""

    def __init__(self, pairs: Sequence[GoldenPair], path: Path, *, labeller: str = "", port: int = 0,
                 title: str = "") -> None:
        self.pairs = {p.pair_id: p for p in pairs}
        self.path, self.labeller, self.title = path, labeller, title
        self.saved = 0
        self._lock = threading.Lock()
        self.all_done = threading.Event()
        try:
            self.httpd = ThreadingHTTPServer((HOST, port), _Handler)
        except OSError as e:
            raise BadArgument(f"--port {port}: cannot listen on {HOST}:{port} ({e.strerror or e})") from None
        self.httpd.daemon_threads = False  # close() waits for the answers being written (the last Save's)
        self.httpd.label_server = self  # type: ignore[attr-defined]
        self.port = self.httpd.server_address[1]
        self._thread: threading.Thread | None = None
        if self.labelled().keys() == self.pairs.keys():
            self.all_done.set()

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def start(self) -> LabelServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="judge-label", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join()
            self._thread = None
        self.httpd.server_close()

    def __enter__(self) -> LabelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def labelled(self) -> dict[str, GoldenLabel]:
        """The session's pairs the golden file holds a label of, by pair id."""
        return {g.pair_id: g for g in read_golden(self.path) if g.pair_id in self.pairs}

    def label(self, body: object) -> tuple[int, dict[str, object]]:
        """(HTTP status, JSON answer) of a POST /label body; appends at most one label."""
        if not isinstance(body, dict):
            return 400, {"error": "the body must be a JSON object {pair_id, labels, note}"}
        pid = body.get("pair_id")
        pair = self.pairs.get(pid) if isinstance(pid, str) else None
        if pair is None:
            return 400, {"error": "unknown pair_id: only the pairs of this page can be labelled"}
        note = body.get("note", "")
        if not isinstance(note, str) or len(note) > NOTE_CHARS:
            return 400, {"error": f"the note must be text of at most {NOTE_CHARS} characters"}
        try:
            added = append_label(self.path, pair, body.get("labels"), note=note.strip(), source="web",  # type: ignore[arg-type]
                                 labeller=self.labeller)
        except LabelError as e:
            return 400, {"error": str(e)}
        except SkillForgeError as e:  # the golden file cannot be read or written: nothing was kept
            return 500, {"error": f"not saved: {e}"}
        if added is not None:
            with self._lock:
                self.saved += 1
        done = len(self.labelled())
        if done == len(self.pairs):
            self.all_done.set()
        return 200, {"status": "saved" if added is not None else "already labelled", "labelled": done,
                     "total": len(self.pairs)}


class _Handler(BaseHTTPRequestHandler):
    server_version = "skillforge-label"
    sys_version = ""
    timeout = 15  # seconds: a client that stops sending cannot hold close() for long

    @property
    def app(self) -> LabelServer:
        return self.server.label_server  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: object) -> None:
        log.debug("judge label: " + format, *args)

    def _send(self, status: int, body: bytes, content_type: str, csp: str = "default-src 'none'") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Content-Security-Policy", csp)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, data: dict[str, object]) -> None:
        self._send(status, json.dumps(data, ensure_ascii=False).encode("utf-8"), "application/json; charset=utf-8")

    def _host_ok(self) -> bool:
        """The Host header names this server (127.0.0.1 or localhost, this port): a page of another
        site whose name was re-pointed at 127.0.0.1 (DNS rebinding) is refused."""
        host = (self.headers.get("Host") or "").strip().lower()
        name, _, port = host.rpartition(":") if ":" in host else (host, "", "")
        return name in (HOST, "localhost") and port in ("", str(self.app.port))

    def _origin_ok(self) -> bool:
        origin = self.headers.get("Origin")
        return origin is None or origin in (f"http://{HOST}:{self.app.port}", f"http://localhost:{self.app.port}")

    def do_GET(self) -> None:
        if not self._host_ok():
            return self._json(403, {"error": "this server answers only to 127.0.0.1 and localhost"})
        path = self.path.split("?", 1)[0]
        if path == "/favicon.ico":
            return self._send(204, b"", "text/plain")
        if path != "/":
            return self._json(404, {"error": f"no page {path[:80]!r}; the page is /"})
        nonce = secrets.token_urlsafe(16)
        try:
            labelled = self.app.labelled()
        except SkillForgeError as e:
            return self._json(500, {"error": str(e)})
        page = render_page(list(self.app.pairs.values()), labelled, nonce, self.app.title, str(self.app.path))
        self._send(200, page.encode("utf-8"), "text/html; charset=utf-8",
                   f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
                   "connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")

    def do_POST(self) -> None:
        if not self._host_ok() or not self._origin_ok():
            return self._json(403, {"error": "this server answers only to its own page on 127.0.0.1 / localhost"})
        if self.path.split("?", 1)[0] != "/label":
            return self._json(404, {"error": "POST /label only"})
        if not (self.headers.get("Content-Type") or "").lower().startswith("application/json"):
            return self._json(400, {"error": "send the label as application/json"})
        try:
            length = int(self.headers.get("Content-Length") or "-1")
        except ValueError:
            length = -1
        if not 0 <= length <= BODY_MAX:
            return self._json(400, {"error": f"a label body has a Content-Length of at most {BODY_MAX} bytes"})
        try:
            body = json.loads(self.rfile.read(length).decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return self._json(400, {"error": "the body is not JSON"})
        status, answer = self.app.label(body)
        self._json(status, answer)


def _text(value: str) -> str:
    return html.escape(visible(value), quote=True)


def _pair_html(i: int, n: int, pair: GoldenPair, done: GoldenLabel | None, questions: dict[str, str]) -> str:
    facts = ""
    if pair.must_include or pair.must_not_include:
        facts = ('<div class="block facts">'
                 + (f'<div><h3>Facts a correct answer contains</h3><p>{_text("; ".join(pair.must_include))}</p></div>'
                    if pair.must_include else "")
                 + (f'<div><h3>Must not appear</h3><p>{_text("; ".join(pair.must_not_include))}</p></div>'
                    if pair.must_not_include else "") + "</div>")
    tools = (f'<details class="block" open><summary>Tool results the assistant saw</summary>'
             f'<pre class="tools">{_text(pair.fixtures_summary)}</pre></details>' if pair.fixtures_summary else
             '<p class="block muted">No tool results for this request.</p>')
    off = " disabled" if done else ""
    dims = []
    for d in HUMAN_DIMENSIONS:
        chosen = done.labels.get(d) if done else None
        radios = "".join(f'<label class="choice"><input type="radio" name="{d}" value="{v}"'
                         f'{" checked" if chosen == v else ""}{off}><span>{shown}</span></label>'
                         for v, shown in (("A", "A"), ("tie", "Tie"), ("B", "B")))
        dims.append(f'<fieldset data-dim="{d}"><legend>{d.capitalize()}</legend>'
                    f'<p class="q">{html.escape(questions[d])}</p><div class="choices">{radios}</div></fieldset>')
    note = _text(done.note) if done else ""
    return f"""
<section class="pair" data-pair="{html.escape(pair.pair_id)}" data-done="{1 if done else 0}" hidden>
  <div class="head"><h2>Pair {i} of {n}</h2><span class="badge">labelled</span></div>
  <div class="block"><h3>Request</h3><div class="text query">{_text(pair.query)}</div></div>
  {facts}
  {tools}
  <div class="answers">
    <article><h3>Answer A</h3><div class="text answer">{_text(pair.answer_a)}</div></article>
    <article><h3>Answer B</h3><div class="text answer">{_text(pair.answer_b)}</div></article>
  </div>
  <form class="verdict">
    <div class="dims">{"".join(dims)}</div>
    <label class="note">Note (optional)<textarea name="note" rows="2" maxlength="{NOTE_CHARS}"{off}>{note}</textarea></label>
    <div class="actions"><button type="submit" class="save"{off}>Save</button>
      <button type="button" class="next">Next pair</button><span class="msg" role="alert"></span></div>
  </form>
</section>"""


def render_page(pairs: Sequence[GoldenPair], labelled: dict[str, GoldenLabel], nonce: str, title: str = "",
                golden: str = "") -> str:
    """The whole page: every pair of the session (the labelled ones read-only with their choices), the
    first unlabelled one shown. No field says which side of the run an answer came from."""
    questions = dimension_questions()
    n = len(pairs)
    sections = "".join(_pair_html(i, n, p, labelled.get(p.pair_id), questions) for i, p in enumerate(pairs, 1))
    nav = "".join(f'<button type="button" data-i="{i}" class="{"done" if p.pair_id in labelled else ""}">{i + 1}</button>'
                  for i, p in enumerate(pairs))
    done = sum(p.pair_id in labelled for p in pairs)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Blind labelling · {_text(title)}</title>
<style nonce="{nonce}">{_CSS}</style></head>
<body>
<header><div class="title"><b>Blind labelling</b> <span class="muted">{_text(title)}</span></div>
  <div class="progress" role="status"><span><span id="count">{done}</span> of {n} labelled</span>
  <progress id="bar" max="{n}" value="{done}"></progress></div></header>
<nav id="nav" aria-label="pairs">{nav}</nav>
<main>
<p class="help">Compare the two answers to the same request. Their order is random. For each dimension choose
A, Tie or B, add a note if you like, and Save. A saved label cannot be changed.</p>
{sections}
<section id="finished" hidden><h2>All {n} pairs labelled</h2><p>The labels are in <code>{_text(golden)}</code>.
You can close this tab.</p></section>
</main>
<script nonce="{nonce}">{_JS}</script>
</body></html>"""


_CSS = """
*{box-sizing:border-box} body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",
"Noto Sans CJK SC",sans-serif;color:#1d2330;background:#f4f5f7}
header{position:sticky;top:0;z-index:2;display:flex;justify-content:space-between;align-items:center;gap:1em;
padding:.6em 1.2em;background:#1d2330;color:#fff} header .muted{color:#b8c0cc}
.progress{display:flex;align-items:center;gap:.6em;white-space:nowrap} progress{width:10em}
nav{display:flex;flex-wrap:wrap;gap:.3em;padding:.6em 1.2em;background:#e6e8ec}
nav button{min-width:2.2em;padding:.15em .4em;border:1px solid #b9bfc9;border-radius:4px;background:#fff;cursor:pointer}
nav button.done{background:#d9f0df;border-color:#7cbf8e} nav button.current{outline:2px solid #2f6fde}
main{max-width:1400px;margin:0 auto;padding:1em 1.2em 3em} .help{color:#4a5262;margin:.2em 0 1em}
.pair .head{display:flex;align-items:center;gap:.8em} .pair h2{margin:.2em 0;font-size:1.2em}
.badge{display:none;padding:.1em .6em;border-radius:1em;background:#d9f0df;color:#1e6b34;font-size:.85em}
.pair[data-done="1"] .badge{display:inline-block}
.block{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:.6em .9em;margin:.6em 0}
.block h3,article h3{margin:0 0 .3em;font-size:.8em;text-transform:uppercase;letter-spacing:.04em;color:#5b6474}
.facts{display:flex;flex-wrap:wrap;gap:2em} .facts p{margin:0}
.text{white-space:pre-wrap;overflow-wrap:anywhere} .query{font-size:1.05em}
details summary{cursor:pointer;font-size:.8em;text-transform:uppercase;letter-spacing:.04em;color:#5b6474}
pre.tools{margin:.4em 0 0;white-space:pre-wrap;overflow-wrap:anywhere;font-size:.85em;color:#333a46}
.muted{color:#6b7383}
.answers{display:grid;grid-template-columns:1fr 1fr;gap:1em;margin:.8em 0}
@media (max-width:900px){.answers{grid-template-columns:1fr}}
article{background:#fff;border:1px solid #c9d3e3;border-top:4px solid #2f6fde;border-radius:6px;padding:.7em 1em;
max-height:60vh;overflow:auto} article:nth-child(2){border-top-color:#c2572d}
form.verdict{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:.8em 1em}
.dims{display:grid;grid-template-columns:repeat(3,1fr);gap:.8em} @media (max-width:900px){.dims{grid-template-columns:1fr}}
fieldset{display:flex;flex-direction:column;justify-content:space-between;border:1px solid #e1e4ea;
border-radius:6px;margin:0;padding:.2em .7em .6em}
legend{padding:0 .3em;font-weight:600} .q{margin:0;font-size:.85em;color:#5b6474}
.choices{display:flex;gap:.4em;margin-top:.3em} .choice{flex:1}
.choice input{position:absolute;opacity:0} .choice span{display:block;text-align:center;padding:.35em 0;
border:1px solid #b9bfc9;border-radius:4px;cursor:pointer;background:#fafbfc}
.choice input:checked+span{background:#2f6fde;border-color:#2f6fde;color:#fff}
.choice input:focus-visible+span{outline:2px solid #1d2330} .choice input:disabled+span{cursor:default;opacity:.75}
.note{display:block;margin-top:.7em;font-size:.9em;color:#4a5262}
.note textarea{display:block;width:100%;margin-top:.2em;font:inherit;padding:.3em .5em;border:1px solid #b9bfc9;border-radius:4px}
.actions{display:flex;align-items:center;gap:.8em;margin-top:.7em}
button.save{padding:.45em 1.6em;font-weight:600;color:#fff;background:#1e7f43;border:0;border-radius:4px;cursor:pointer}
button.save:disabled{background:#9bb5a4;cursor:default} button.next{padding:.45em 1em;border:1px solid #b9bfc9;
border-radius:4px;background:#fff;cursor:pointer} .msg{color:#b3261e}
"""

_JS = """
(() => {
  const sections = Array.from(document.querySelectorAll('section.pair'));
  const navButtons = Array.from(document.querySelectorAll('#nav button'));
  const finished = document.getElementById('finished');
  let current = -1;
  const isDone = (s) => s.dataset.done === '1';
  function show(i) {
    current = i;
    sections.forEach((s, j) => { s.hidden = j !== i; });
    navButtons.forEach((b, j) => b.classList.toggle('current', j === i));
    finished.hidden = i !== -1;
    window.scrollTo(0, 0);
  }
  function nextUndone(from) {
    for (let k = 1; k <= sections.length; k++) {
      const j = (from + k) % sections.length;
      if (!isDone(sections[j])) return j;
    }
    return -1;
  }
  navButtons.forEach((b, j) => b.addEventListener('click', () => show(j)));
  sections.forEach((s, i) => {
    const form = s.querySelector('form');
    const msg = s.querySelector('.msg');
    const save = s.querySelector('button.save');
    s.querySelector('button.next').addEventListener('click', () => {
      const j = nextUndone(i);
      show(j === -1 ? (i + 1) % sections.length : j);
    });
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      if (isDone(s) || save.disabled) return;
      const labels = {};
      for (const fs of s.querySelectorAll('fieldset[data-dim]')) {
        const picked = fs.querySelector('input:checked');
        if (!picked) { msg.textContent = 'Choose A, Tie or B for ' + fs.dataset.dim + '.'; return; }
        labels[fs.dataset.dim] = picked.value;
      }
      save.disabled = true;
      msg.textContent = '';
      try {
        const r = await fetch('/label', {method: 'POST', headers: {'Content-Type': 'application/json'},
          body: JSON.stringify({pair_id: s.dataset.pair, labels: labels, note: form.note.value})});
        const answer = await r.json();
        if (!r.ok) { msg.textContent = answer.error || ('error ' + r.status); save.disabled = false; return; }
        s.dataset.done = '1';
        form.querySelectorAll('input, textarea').forEach((el) => { el.disabled = true; });
        navButtons[i].classList.add('done');
        document.getElementById('count').textContent = answer.labelled;
        document.getElementById('bar').value = answer.labelled;
        show(nextUndone(i));
      } catch (e) {
        msg.textContent = 'Not saved: the labelling server is not answering (' + e + ').';
        save.disabled = false;
      }
    });
  });
  show(sections.length === 0 ? -1 : isDone(sections[0]) ? nextUndone(0) : 0);
})();
"""

__all__ = ["HOST", "LabelServer", "render_page"]
