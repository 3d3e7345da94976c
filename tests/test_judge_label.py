"""`skillforge judge label`: the golden file (append-only, one label a pair), the pairs of a real
stored run (runs/traces/<run>.jsonl + meta.json as the evaluate driver writes them), the labelling
page over real HTTP on 127.0.0.1, the terminal fallback, and the command itself."""

from __future__ import annotations

import http.client
import io
import json
import re
import signal
import subprocess

import pytest
from conftest import SKILLFORGE_EXE, cli_env, finish_cli, flat, run_cli, start_cli

from skillforge.calibration.golden import (GoldenFileError, LabelError, NothingToLabel, append_label, golden_path,
                                           labelled_ids, pairs_from_run, read_golden)
from skillforge.calibration.labelpage import LabelServer
from skillforge.calibration.tty import TtyLabeller
from skillforge.config import Workspace
from skillforge.errors import BadArgument, InvalidId, UnknownRun
from skillforge.evaluation.stored import StoredRunError
from skillforge.journal import append_jsonl
from skillforge.rules.calibration import pair_id, sha256_text
from skillforge.state.calibration import HUMAN_DIMENSIONS
from skillforge.state.evaluate import Case, CaseResult, Execution, Expectation, SkillSide

SKILL = "taxi-hailing"
HOSTILE = "<script>alert('x')</script> and </div><b>bold</b> \x1b[2J\u202e"


def case_result(i: int, baseline: str, candidate: str) -> CaseResult:
    case = Case(id=f"dev-taxi-{i:02d}", skill=SKILL, query=f"Get me a taxi to terminal {i} <now>",
                fixtures={"maps.geocode": {"place": f"Terminal {i}", "lat": 31.2 + i}, "taxi.quote": {"eta_min": i}},
                expect=Expectation(must_include=[f"T{i}"], must_not_include=["booked"]))
    return CaseResult(case=case, baseline=Execution(answer=baseline), candidate=Execution(answer=candidate))


def stored_run(ws: Workspace, results: list[CaseResult], run: str = "run-a1") -> str:
    """A stored evaluation run written the way the evaluate driver writes one (meta.json, one trace
    line per case result)."""
    ws.traces_dir.mkdir(parents=True, exist_ok=True)
    meta = {"run_id": run, "skill": SKILL, "eval_set": "dev", "mode": "behaviour", "kind": "ab",
            "baseline": SkillSide(text="old skill").model_dump(), "candidate": SkillSide(text="new skill").model_dump()}
    (ws.traces_dir / f"{run}.meta.json").write_text(json.dumps(meta), encoding="utf-8")
    for r in results:
        append_jsonl(ws.traces_dir / f"{run}.jsonl", {"run_id": run, "mode": "behaviour", **r.model_dump(mode="json"),
                                                       "baseline_release": "r1", "candidate_release": None})
    return run


def differing(k: int, start: int = 0) -> list[CaseResult]:
    return [case_result(i, f"Old answer {i}: a taxi is on its way.", f"New answer {i}: T{i}, ETA {i} min.")
            for i in range(start, start + k)]


def test_pairs_are_the_cases_with_two_different_non_empty_answers_shown_in_a_random_order(workspace):
    results = [*differing(40), case_result(90, "same", "same"), case_result(91, "an answer", ""),
               case_result(92, "  ", "an answer"), case_result(93, "same text", "same text\n"),
               case_result(94, "first", "differs"), case_result(94, "now equal", "now equal")]  # the last line wins
    run = stored_run(workspace, results)
    pairs = pairs_from_run(workspace, run, n=100, seed=7)
    assert {p.case_id for p in pairs} == {f"dev-taxi-{i:02d}" for i in range(40)}
    by_case = {r.case.id: r for r in results}
    for p in pairs:
        r = by_case[p.case_id]
        first, second = (r.baseline, r.candidate) if p.a_is == "baseline" else (r.candidate, r.baseline)
        assert (p.answer_a, p.answer_b) == (first.answer, second.answer)
        assert (p.sha_a, p.sha_b) == (sha256_text(p.answer_a), sha256_text(p.answer_b))
        assert p.pair_id == pair_id(SKILL, p.case_id, p.sha_b, p.sha_a)  # the same whichever side is first
        assert p.skill == SKILL and p.run == run and p.query == r.case.query
        assert p.must_include == list(r.case.expect.must_include) and p.must_not_include == ["booked"]
        assert p.fixtures_summary.splitlines()[0].startswith("maps.geocode: {") and "taxi.quote:" in p.fixtures_summary
    sides = [p.a_is for p in pairs]
    assert 10 <= sides.count("baseline") <= 30  # drawn per pair, not one side always first
    assert [p.case_id for p in pairs] != sorted(p.case_id for p in pairs)  # and the pairs in a random order
    again = pairs_from_run(workspace, run, n=100, seed=7)
    assert [(p.case_id, p.a_is) for p in again] == [(p.case_id, p.a_is) for p in pairs]  # a seed repeats it
    assert len(pairs_from_run(workspace, run, n=5)) == 5


def test_a_labelled_pair_is_not_offered_again_whichever_side_comes_first(workspace):
    run = stored_run(workspace, differing(6))
    path = golden_path(workspace, SKILL)
    first = pairs_from_run(workspace, run, seed=1)
    for p in first[:2]:
        assert append_label(path, p, {"task": "A", "robustness": "tie", "readability": "B"}) is not None
    for seed in range(5):  # other seeds flip sides: the pair id does not change
        left = pairs_from_run(workspace, run, seed=seed)
        assert {p.pair_id for p in left} == {p.pair_id for p in first[2:]}
    for p in first[2:]:
        append_label(path, p, dict.fromkeys(HUMAN_DIMENSIONS, "tie"))
    with pytest.raises(NothingToLabel, match="all 6 of its output pairs are already labelled"):
        pairs_from_run(workspace, run)


def test_runs_that_cannot_be_labelled_are_named_errors(workspace):
    with pytest.raises(UnknownRun, match="no stored run 'nope'"):
        pairs_from_run(workspace, "nope")
    with pytest.raises(InvalidId):
        pairs_from_run(workspace, "../../etc/passwd")
    run = stored_run(workspace, [case_result(1, "same", "same"), case_result(2, "", "only one")])
    with pytest.raises(NothingToLabel, match="none of its 2 cases has two different, non-empty answers"):
        pairs_from_run(workspace, run)
    other = stored_run(workspace, differing(2), run="run-b2")
    with pytest.raises(BadArgument, match="evaluated 'taxi-hailing', not 'hotel-booking'"):
        pairs_from_run(workspace, other, skill="hotel-booking")
    assert len(pairs_from_run(workspace, other, skill=SKILL)) == 2
    with pytest.raises(BadArgument, match="at least 1"):
        pairs_from_run(workspace, other, n=0)
    (workspace.traces_dir / f"{other}.meta.json").write_text("{", encoding="utf-8")
    with pytest.raises(StoredRunError, match="cannot label"):
        pairs_from_run(workspace, other)


def test_the_golden_file_is_append_only_one_label_a_pair_and_tolerates_a_torn_line(workspace):
    run = stored_run(workspace, differing(3))
    a, b, c = pairs_from_run(workspace, run, seed=3)
    path = golden_path(workspace, SKILL)
    assert path == workspace.evaluation_sets_dir / "golden" / f"{SKILL}.jsonl"
    saved = append_label(path, a, {"task": "a", "robustness": "T", "readability": "B"}, note="a is better",
                         source="tty", labeller="ann")
    assert saved is not None and saved.labels == {"task": "A", "robustness": "tie", "readability": "B"}
    before = path.read_bytes()
    assert append_label(path, a, {"task": "B", "robustness": "B", "readability": "B"}) is None  # not twice
    assert path.read_bytes() == before
    for bad, why in (({"task": "A", "robustness": "A"}, "no choice for readability"),
                     ({"task": "A", "robustness": "A", "readability": "A", "overall": "A"}, "unknown dimension"),
                     ({"task": "A", "robustness": "maybe", "readability": "A"}, "not a choice"),
                     ({"task": 1, "robustness": "A", "readability": "A"}, "not a choice"),
                     (["A", "A", "A"], "must be an object")):
        with pytest.raises(LabelError, match=why):
            append_label(path, b, bad)  # type: ignore[arg-type]
    assert path.read_bytes() == before
    with path.open("ab") as f:
        f.write(b'{"pair_id": "torn", "skill": "taxi')  # a writer killed mid-line
    append_label(path, b, dict.fromkeys(HUMAN_DIMENSIONS, "A"))
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3 and lines[0] == before.decode().rstrip("\n") and json.loads(lines[2])["pair_id"] == b.pair_id
    stored = read_golden(path)
    assert [g.pair_id for g in stored] == [a.pair_id, b.pair_id]
    assert (stored[0].sha_a, stored[0].sha_b, stored[0].a_is) == (a.sha_a, a.sha_b, a.a_is)
    assert (stored[0].note, stored[0].source, stored[0].labeller) == ("a is better", "tty", "ann")
    # two sessions that raced on the same pair: the first label stands
    with path.open("a", encoding="utf-8") as f:
        f.write(lines[2].replace('"A"', '"B"') + "\n")
    assert [g.labels["task"] for g in read_golden(path)] == ["A", "A"] and labelled_ids(path) == {a.pair_id, b.pair_id}
    assert c.pair_id not in labelled_ids(path)


# ---- the page over HTTP ------------------------------------------------------------------------------
def request(server: LabelServer, method: str, path: str, body: object = None, *, host: str | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, str, dict[str, str]]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host if host is not None else f"127.0.0.1:{server.port}")
        data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        hdrs = {"Content-Type": "application/json", **(headers or {})} if method == "POST" else dict(headers or {})
        for k, v in hdrs.items():
            conn.putheader(k, v)
        if method == "POST":
            conn.putheader("Content-Length", str(len(data)))
        conn.endheaders(data or None)
        resp = conn.getresponse()
        return resp.status, resp.read().decode("utf-8"), {k.lower(): v for k, v in resp.getheaders()}
    finally:
        conn.close()


@pytest.fixture
def served(workspace):
    results = differing(3)
    results.append(case_result(7, HOSTILE, "A plain answer about cars."))
    run = stored_run(workspace, results)
    pairs = pairs_from_run(workspace, run, seed=11)
    with LabelServer(pairs, golden_path(workspace, SKILL), title=f"skill {SKILL} · run {run}") as server:
        yield server


def test_the_page_escapes_answers_and_never_says_which_side_an_answer_came_from(served):
    status, page, headers = request(served, "GET", "/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert "script-src 'nonce-" in headers["content-security-policy"] and headers["cache-control"] == "no-store"
    assert len(re.findall(r"<script", page, re.I)) == 1  # the page's own; the answer's is text
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; and &lt;/div&gt;&lt;b&gt;bold&lt;/b&gt;" in page
    assert "\\x1b[2J\\u202e" in page and "\x1b" not in page and "\u202e" not in page
    hostile = next(p for p in served.pairs.values() if p.case_id == "dev-taxi-07")
    assert hostile.a_is in ("baseline", "candidate")
    assert re.findall(r"baseline|candidate", page, re.I) == []  # nothing on the page names a side of the run
    assert page.count('<section class="pair"') == 4 and "0</span> of 4 labelled" in page
    for p in served.pairs.values():
        assert f'data-pair="{p.pair_id}" data-done="0"' in page


def test_post_label_appends_once_and_refuses_bad_input_writing_nothing(served):
    path = served.path
    pid = next(iter(served.pairs))
    good = {"pair_id": pid, "labels": {"task": "A", "robustness": "tie", "readability": "B"}, "note": " ok "}
    refused = [({**good, "pair_id": "0123456789abcdef"}, "unknown pair_id"),
               ({**good, "pair_id": ["x"]}, "unknown pair_id"),
               ({**good, "labels": {"task": "A", "robustness": "A"}}, "no choice for readability"),
               ({**good, "labels": {**good["labels"], "task": "C"}}, "not a choice"),
               ({**good, "note": 5}, "the note must be text"),
               ({**good, "note": "x" * 3000}, "at most 2000"),
               ([1, 2], "JSON object"),
               (b"{not json", "not JSON")]
    for body, why in refused:
        status, text, _ = request(served, "POST", "/label", body)
        assert status == 400 and why in json.loads(text)["error"], (body, text)
    status, text, _ = request(served, "POST", "/label", good, headers={"Content-Type": "text/plain"})
    assert status == 400 and "application/json" in text
    assert not path.exists()  # nothing written by any of them
    status, text, _ = request(served, "POST", "/label", good)
    assert status == 200 and json.loads(text) == {"status": "saved", "labelled": 1, "total": 4}
    assert not re.search(r"baseline|candidate", text)
    status, text, _ = request(served, "POST", "/label", good)  # a double click, a reload re-sending
    assert status == 200 and json.loads(text)["status"] == "already labelled"
    status, text, _ = request(served, "POST", "/label", {**good, "labels": dict.fromkeys(HUMAN_DIMENSIONS, "B")})
    assert status == 200 and json.loads(text)["status"] == "already labelled"  # never edited either
    (line,) = path.read_text(encoding="utf-8").splitlines()
    stored = json.loads(line)
    pair = served.pairs[pid]
    assert stored["labels"] == good["labels"] and stored["note"] == "ok" and stored["source"] == "web"
    assert (stored["sha_a"], stored["sha_b"], stored["a_is"]) == (pair.sha_a, pair.sha_b, pair.a_is)
    assert served.saved == 1 and not served.all_done.is_set()
    _, page, _ = request(served, "GET", "/")
    assert "1</span> of 4 labelled" in page and f'data-pair="{pid}" data-done="1"' in page
    for other in list(served.pairs)[1:]:
        request(served, "POST", "/label", {**good, "pair_id": other})
    assert served.all_done.is_set() and served.saved == 4 and len(path.read_text().splitlines()) == 4


def test_a_request_for_another_host_or_from_another_origin_is_refused(served):
    assert request(served, "GET", "/", host=f"localhost:{served.port}")[0] == 200
    for host in ("evil.example", f"evil.example:{served.port}", "127.0.0.1:1", "", f"127.0.0.1.evil.example:{served.port}"):
        assert request(served, "GET", "/", host=host)[0] == 403, host
    pid = next(iter(served.pairs))
    body = {"pair_id": pid, "labels": dict.fromkeys(HUMAN_DIMENSIONS, "A")}
    assert request(served, "POST", "/label", body, host="evil.example")[0] == 403
    assert request(served, "POST", "/label", body, headers={"Origin": "http://evil.example"})[0] == 403
    assert not served.path.exists()
    assert request(served, "POST", "/label", body, headers={"Origin": f"http://127.0.0.1:{served.port}"})[0] == 200
    assert request(served, "GET", "/nope")[0] == 404 and request(served, "POST", "/other", body)[0] == 404


def test_a_golden_file_that_cannot_be_written_is_a_500_with_its_reason_never_a_lost_label(workspace):
    run = stored_run(workspace, differing(1))
    (pair,) = pairs_from_run(workspace, run)
    path = golden_path(workspace, SKILL)
    with LabelServer([pair], path) as server:
        path.mkdir(parents=True)  # a folder where the file belongs
        status, text, _ = request(server, "POST", "/label", {"pair_id": pair.pair_id,
                                                              "labels": dict.fromkeys(HUMAN_DIMENSIONS, "A")})
        assert status == 500 and "not saved" in json.loads(text)["error"] and server.saved == 0
        assert request(server, "GET", "/")[0] == 500
    with pytest.raises(GoldenFileError, match="cannot be read"):
        pairs_from_run(workspace, run)


# ---- the terminal ------------------------------------------------------------------------------
def test_the_terminal_asks_again_on_bad_input_skips_and_stops_at_the_end_of_input(workspace):
    results = differing(2)
    results.append(case_result(5, HOSTILE, "another answer"))
    run = stored_run(workspace, results)
    pairs = sorted(pairs_from_run(workspace, run, seed=2), key=lambda p: p.case_id, reverse=True)
    assert pairs[0].case_id == "dev-taxi-05"
    path = golden_path(workspace, SKILL)
    stdin, stdout = io.StringIO("maybe\nA\n\nt\nb\n  looks fine \ns\nB\n"), io.StringIO()
    session = TtyLabeller(pairs, path, stdin=stdin, stdout=stdout)
    assert session.run() == 1 and session.stopped and session.skipped == 1
    shown = stdout.getvalue()
    assert "answer A, t (tie) or B" in shown and shown.count("Task: which answer better completes") == 4
    assert "\x1b" not in shown and "\\x1b[2J" in shown and "<script>alert('x')</script>" in shown
    assert "Pair 3 of 3" in shown and "stopped; the labels saved so far are kept" in shown
    assert not re.search(r"baseline|candidate", shown, re.I)
    (label,) = read_golden(path)
    assert label.pair_id == pairs[0].pair_id and label.source == "tty" and label.note == "looks fine"
    assert label.labels == {"task": "A", "robustness": "tie", "readability": "B"}
    quits = TtyLabeller(pairs, path, stdin=io.StringIO("q\n"), stdout=io.StringIO())
    assert quits.run() == 0 and quits.stopped and len(read_golden(path)) == 1


# ---- the command -------------------------------------------------------------------------------
def test_the_command_serves_until_every_pair_is_labelled_then_says_what_it_appended(workspace):
    run = stored_run(workspace, differing(2))
    proc = start_cli(["judge", "label", run, "--no-browser", "--n", "2", "-w", str(workspace.root)])
    try:
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert url, line + proc.stderr.read() if proc.poll() is not None else line
        port = int(url.group(1))
        page = _get(port)
        for pid in re.findall(r'data-pair="([0-9a-f]{16})"', page):
            assert _post(port, {"pair_id": pid, "labels": dict.fromkeys(HUMAN_DIMENSIONS, "tie")}) == 200
    except BaseException:
        proc.kill()
        raise
    done = finish_cli(proc, ok=0)
    path = golden_path(workspace, SKILL)
    assert f"appended 2 label(s) to {path}; 2 of 2 pair(s) of this session labelled" in flat(done.stdout)
    assert len(read_golden(path)) == 2


def test_ctrl_c_stops_the_page_keeping_the_labels_and_errors_are_named(workspace):
    run = stored_run(workspace, differing(3))
    proc = start_cli(["judge", "label", run, "--no-browser", "-w", str(workspace.root)])
    try:
        port = int(re.search(r"127\.0\.0\.1:(\d+)/", proc.stdout.readline()).group(1))
        pid = re.findall(r'data-pair="([0-9a-f]{16})"', _get(port))[0]
        assert _post(port, {"pair_id": pid, "labels": dict.fromkeys(HUMAN_DIMENSIONS, "B")}) == 200
        proc.send_signal(signal.SIGINT)
    except BaseException:
        proc.kill()
        raise
    done = finish_cli(proc, ok=0)
    assert "appended 1 label(s)" in flat(done.stdout) and "1 of 3 pair(s) of this session labelled" in flat(done.stdout)
    ws = str(workspace.root)
    assert "no stored run 'nope'" in flat(run_cli(["judge", "label", "nope", "-w", ws], ok=2).stderr)
    assert "not 'hotel-booking'" in flat(run_cli(["judge", "label", run, "--skill", "hotel-booking", "-w", ws],
                                                 ok=2).stderr)
    tty = subprocess.run([str(SKILLFORGE_EXE), "judge", "label", run, "--tty", "-w", ws], input="A\nA\nA\n\n",
                         capture_output=True, text=True, env=cli_env(), timeout=120)
    assert tty.returncode == 0 and "Traceback" not in tty.stderr, tty.stderr
    assert "appended 1 label(s)" in flat(tty.stdout) and "1 of 2 pair(s)" in flat(tty.stdout)
    assert len(read_golden(golden_path(workspace, SKILL))) == 2


def _get(port: int) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/")
    return conn.getresponse().read().decode("utf-8")


def _post(port: int, body: dict[str, object]) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", "/label", json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    resp.read()
    return resp.status


def test_a_golden_file_is_never_read_as_an_evaluation_set(workspace):
    from skillforge.evaluation.datasets import load_sets, set_files

    run = stored_run(workspace, differing(1))
    path = golden_path(workspace, SKILL)
    append_label(path, pairs_from_run(workspace, run)[0], dict.fromkeys(HUMAN_DIMENSIONS, "A"))
    assert path.parent == workspace.evaluation_sets_dir / "golden" and path.exists()
    assert path not in set_files(workspace) and "golden" not in load_sets(workspace)
    with pytest.raises(InvalidId):
        golden_path(workspace, "../skills/x")


def test_two_labelling_processes_cannot_both_append_a_pair(workspace, tmp_path):
    """The check and the append hold a flock on the golden file's lock file: while another process
    holds it, an append waits; once it is free, a pair already appended there is not appended again."""
    import fcntl
    import os
    import subprocess
    import sys
    import time

    from skillforge.calibration.golden import lock_path
    from skillforge.journal import append_jsonl
    from skillforge.state.calibration import GoldenLabel

    run = stored_run(workspace, differing(2))
    path = golden_path(workspace, SKILL)
    pair = pairs_from_run(workspace, run, seed=3)[0]
    dump = tmp_path / "pair.json"
    dump.write_text(pair.model_dump_json(), encoding="utf-8")
    child = ("import sys; from pathlib import Path; from skillforge.calibration.golden import append_label; "
             "from skillforge.state.calibration import GoldenPair; "
             "p = GoldenPair.model_validate_json(Path(sys.argv[2]).read_text()); "
             "print('appended' if append_label(Path(sys.argv[1]), p, dict(task='A', robustness='B', readability='tie')) "
             "else 'already labelled')")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path(path), os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another labelling session is mid-append
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", child, str(path), str(dump)], stdout=subprocess.PIPE, text=True,
                            env=env)
    try:
        time.sleep(1.5)
        assert proc.poll() is None and not path.exists()  # it waits for the lock, nothing written
        other = GoldenLabel.model_validate({**pair.model_dump(), "labels": dict.fromkeys(HUMAN_DIMENSIONS, "B"),
                                            "source": "web", "labelled_at": "2026-12-06T00:00:00Z"})
        append_jsonl(path, other.model_dump(mode="json"), durable=True)  # the other session's append
    finally:
        os.close(fd)  # its lock released
    out, _ = proc.communicate(timeout=60)
    assert out.strip() == "already labelled"
    assert [label.labels["task"] for label in read_golden(path)] == ["B"] and len(path.read_text().splitlines()) == 1
