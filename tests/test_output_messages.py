"""Wording of three outputs QA found misleading (qa10a F16, qa11 N10): the A/A self-check's headline
and its line in the skill report, `report --html` to a place where no file can be made, and the
`evolve --all` summary's note column. Real `skillforge` processes against a local fake LLM server."""

from __future__ import annotations

from pathlib import Path

from conftest import flat, run_cli
from eval_server import EvalServer, JudgeMode
from evaluate_fakes import make_set
from rich.console import Console

from skillforge.cli.evolve import batch_table
from skillforge.state.result import aa_outcome


def test_aa_run_is_headed_as_an_aa_and_the_skill_report_says_no_false_alarm(examples_ws: Path, tmp_path: Path) -> None:
    make_set(examples_ws / "evaluation_sets", 8)
    with EvalServer(JudgeMode.CONTENT) as srv:
        env = {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_JUDGE_MODEL": "j",
               "SKILLFORGE_LLM_MAX_RETRIES": "0"}
        proc = run_cli(["evaluate", "taxi-hailing", "--aa", "--set", "t", "-w", str(examples_ws)], env, ok=0)
    head = proc.stdout.splitlines()[0]
    assert head.startswith("A/A: no false alarm (both sides are the same release"), proc.stdout
    assert "taxi-hailing on t (run " in head
    assert not any(w in head for w in ("PASS", "DECLINED", "REVIEW", "improvement"))
    page = tmp_path / "r.html"
    run_cli(["report", "taxi-hailing", "--html", str(page), "-w", str(examples_ws)])
    html = page.read_text(encoding="utf-8")
    assert "<b>A/A self-check on t</b>: no false alarm (both sides are the same release" in html
    assert "<b>aa on t</b>" not in html


def test_aa_outcome_names_the_dimensions_of_a_false_alarm() -> None:
    said = aa_outcome(True, ["effect WIN", "robustness LOSS"])
    assert said.startswith("A/A: FALSE ALARM (effect WIN, robustness LOSS)")
    assert aa_outcome(False).startswith("A/A: no false alarm")


def test_report_to_a_place_that_takes_no_file_names_the_file(examples_ws: Path) -> None:
    """/proc takes no new file: it said 'cannot write in /proc: No such file or directory'."""
    proc = run_cli(["report", "taxi-hailing", "--html", "/proc/sf-report.html", "-w", str(examples_ws)], ok=2)
    assert proc.stderr.startswith("error: cannot write the report to /proc/sf-report.html: no new file can be made "
                                  "in /proc ("), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    export = run_cli(["skills", "export", "taxi-hailing", "--out", "/proc/sf.md", "-w", str(examples_ws)], ok=2)
    assert "cannot write the skill to /proc/sf.md" in flat(export.stderr)


def test_evolve_batch_note_is_shown_whole() -> None:
    note = ("no failure of the live release to work on: 3 reviewed failures were all fixed by a release "
            "published after they were found in reviewed session case-2026-12-01-abc")
    console = Console(width=100, record=True, color_system=None)
    console.print(batch_table([{"skill": "taxi-hailing", "status": "NO_FAILURES", "run_id": "run-1", "message": note}]))
    text = console.export_text()
    squeezed = "".join(ch for ch in text if not ch.isspace() and ch not in "│┃┏┓┗┛┡┩└┘━─┳┻╇╈┯┷┼")
    assert note.replace(" ", "") in squeezed, text
