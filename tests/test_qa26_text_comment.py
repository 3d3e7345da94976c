"""QA 26 N15: a release comment (`-m`) with a bidi override, an invisible or a control character is
refused (BadArgument, exit 2, nothing done), named by code point; whitespace is still joined into
one line (QA 18); a 'triggered by' stored before (or by other code) is shown escaped in `releases
list` and the HTML report."""

from __future__ import annotations

import getpass
import json
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLE_SKILLS, run_cli

from skillforge.config import Workspace
from skillforge.library.releases import ReleaseStateMachine
from skillforge.rules.comment import comment_problem, refused_chars, shown

SKILL = "news-digest"
RLO, PDF = "\u202e", "\u202c"


@pytest.mark.parametrize("text, bad", [
    (f"fix {RLO}gnp.exe{PDF} ok", [RLO, PDF]), ("a\u200bb", ["\u200b"]), ("a\x1bb\x00", ["\x1b", "\x00"]),
    ("\ufeffx", ["\ufeff"]), ("a\u2066b", ["\u2066"]), ("a\x7f", ["\x7f"]), ("a\x9bb", ["\x9b"]),
    ("tag\U000e0041", ["\U000e0041"]),
])
def test_refused_characters(text, bad):
    assert refused_chars(text) == bad
    problem = comment_problem(text)
    assert problem is not None and "U+" in problem and not any(c in problem for c in bad)


@pytest.mark.parametrize("text", ["", "plain", "a\nb\tc", "x\u2028y\u2029z\x85", "ok 👩\u200d💻 fine", "中文 说明", "é"])
def test_allowed(text):
    assert comment_problem(text) is None


def test_length_and_type_are_the_feedback_rule():
    assert "at most 4000" in (comment_problem("x" * 4001) or "")
    assert "must be text" in (comment_problem(3) or "")


def test_shown_escapes_what_could_reorder_or_split_a_row():
    assert shown(f"a {RLO}b{PDF}\nc\u2028d\x1b") == "a \\u202eb\\u202c\\u000ac\\u2028d\\u001b"
    assert shown("ok 👩\u200d💻 fine") == "ok 👩\u200d💻 fine" and shown("plain") == "plain"


def _cand(tmp_path: Path) -> Path:
    cand = tmp_path / SKILL
    shutil.copytree(EXAMPLE_SKILLS / SKILL, cand)
    (cand / "SKILL.md").write_text((cand / "SKILL.md").read_text() + "- Name the source.\n")
    return cand


def test_publish_revert_retire_refuse_a_bidi_comment_before_anything(examples_ws: Path, tmp_path: Path) -> None:
    ws = str(examples_ws)
    before = run_cli(["releases", "list", SKILL, "-w", ws, "--json"]).stdout
    for args in (["publish", SKILL, "--from", str(_cand(tmp_path))], ["revert", SKILL, "1.2.0"], ["retire", SKILL]):
        proc = run_cli(["release", *args, "-m", f"fix {RLO}gnp.exe{PDF}", "-w", ws], ok=2)
        assert "U+202E RIGHT-TO-LEFT OVERRIDE" in proc.stderr and RLO not in proc.stderr
    assert run_cli(["releases", "list", SKILL, "-w", ws, "--json"]).stdout == before


def test_a_newline_is_still_joined_into_one_line(examples_ws: Path, tmp_path: Path) -> None:
    ws = str(examples_ws)
    run_cli(["release", "publish", SKILL, "--from", str(_cand(tmp_path)), "-m", "two\nlines\u2028here", "-w", ws])
    rows = json.loads(run_cli(["releases", "list", SKILL, "-w", ws, "--json"]).stdout)
    assert rows[-1]["triggered_by"] == f"cli publish by {getpass.getuser()}: two lines here"


def test_a_stored_bidi_row_is_shown_escaped(examples_ws: Path, tmp_path: Path) -> None:
    ws = Workspace.open(examples_ws)
    folder = ws.skills_dir / SKILL
    tree = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    tree["SKILL.md"] += b"- one more\n"
    m = ReleaseStateMachine.open(ws)
    m.publish(SKILL, tree, triggered_by=f"api by x: fix {RLO}gnp.exe{PDF}\nsecond line")
    m.store.close()
    listed = run_cli(["releases", "list", SKILL, "-w", str(ws.root)]).stdout
    assert RLO not in listed and "\\u202egnp.exe\\u202c\\u000asecond" in listed
    page = tmp_path / "r.html"
    run_cli(["report", SKILL, "--html", str(page), "-w", str(ws.root)])
    html = page.read_text()
    assert RLO not in html and "\\u202egnp.exe" in html
