"""Hostile and careless use of the `skillforge` CLI (issue 8, items 12, 14, 15 and 16): each input
gets one named error line and exit code 2, the store and the working tree stay as they were.
Every test runs the real console script on a real workspace (git repository, SQLite file)."""

from __future__ import annotations

import json
import shutil
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest
from conftest import EXAMPLE_SKILLS, SKILLFORGE_EXE, cli_env, run_cli
from evaluate_fakes import make_set

from skillforge.config import Workspace
from skillforge.library.releases import ReleaseStateMachine
from skillforge.testing.openai_server import FakeOpenAIServer, Reply


def sf(*args: str, ok: int | None = 0, **kw: object) -> subprocess.CompletedProcess[str]:
    return run_cli(list(args), ok=ok, **kw)  # type: ignore[arg-type]


def one_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The single `error:` line a named error prints (exit 2); fails on anything else."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def history(ws: Path, skill: str) -> list[tuple[str, str]]:
    rows = json.loads(sf("releases", "list", skill, "--json", "-w", str(ws)).stdout)
    return [(r["release_id"], r["status"]) for r in rows]


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    sf("init", str(root))
    sf("skills", "import", "--from", str(EXAMPLE_SKILLS), "-w", str(root))
    return root


# ---- 12. import --from something that holds no skill ---------------------------------------
def test_import_from_a_missing_folder_a_file_or_no_skills_is_a_named_error(tmp_path):
    root = tmp_path / "ws"
    sf("init", str(root))
    (tmp_path / "plain.txt").write_text("not a folder\n")
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    (tmp_path / "empty" / "sub" / "README.md").write_text("no skill here\n")
    cases = {tmp_path / "missing": "does not exist", tmp_path / "plain.txt": "is not a folder",
             tmp_path / "empty": "no skill under"}
    for source, says in cases.items():
        proc = sf("skills", "import", "--from", str(source), "-w", str(root), ok=None)
        line = one_error(proc)
        assert says in line and str(source) in line and "imported" not in proc.stdout
    assert json.loads(sf("skills", "list", "--json", "-w", str(root)).stdout)["skills"] == []


# ---- 14. named errors instead of `internal error` (exit 70) --------------------------------
def test_export_out_a_folder_or_an_unwritable_path_is_a_named_error(ws, tmp_path):
    line = one_error(sf("skills", "export", "news-digest", "--out", str(tmp_path), "-w", str(ws), ok=None))
    assert "is a folder" in line and str(tmp_path) in line
    (tmp_path / "file").write_text("x")
    line = one_error(sf("skills", "export", "news-digest", "--out", str(tmp_path / "file" / "out.md"), "-w", str(ws), ok=None))
    assert "cannot write" in line and "out.md" in line
    assert (tmp_path / "file").read_text() == "x"


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", 'mount --bind -o ro "$0" "$0"', "/tmp"],
                           capture_output=True)
    return probe.returncode == 0


def read_only(path: Path) -> list[str]:
    """A command prefix that runs the CLI with `path` bind-mounted read-only in a private mount
    namespace. Writes then fail with EROFS even for root (tests here run as root, for whom
    `chmod a-w` changes nothing), and the real mount table is never touched."""
    if not _unshare_works():
        pytest.skip("needs `unshare -rm` (user + mount namespaces) to make a folder really read-only")
    return ["unshare", "-rm", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"', str(path)]


@pytest.mark.parametrize("where", [".git", "skills"])
def test_a_read_only_git_or_skills_folder_is_refused_with_nothing_changed(ws, tmp_path, where):
    candidate = tmp_path / "cand"
    shutil.copytree(ws / "skills" / "news-digest", candidate)
    (candidate / "SKILL.md").write_text((candidate / "SKILL.md").read_text() + "\n- One more rule.\n")
    sf("release", "publish", "news-digest", "--from", str(candidate), "-w", str(ws))  # 1.2.1, so revert has a target
    newcomer = tmp_path / "src" / "newcomer"
    newcomer.mkdir(parents=True)
    (newcomer / "SKILL.md").write_text("---\nname: newcomer\ndescription: A new skill.\n---\nDo it well.\n")
    before = {s: history(ws, s) for s in ("news-digest", "recipe-suggest")}
    files_before = tree(ws / "skills")
    head = subprocess.run(["git", "-C", str(ws), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    wrap = read_only(ws / where)
    commands = [("release", "publish", "news-digest", "--from", str(candidate)),
                ("release", "revert", "news-digest", "1.2.0"),
                ("skills", "import", "--from", str(tmp_path / "src"))]
    (candidate / "SKILL.md").write_text((candidate / "SKILL.md").read_text() + "- And another.\n")
    for args in commands:
        line = one_error(sf(*args, "-w", str(ws), ok=None, wrap=wrap))
        assert "cannot write" in line and str(ws / where) in line and "Read-only file system" in line
    assert {s: history(ws, s) for s in before} == before  # no PREPARING, no ABANDONED row: nothing began
    assert tree(ws / "skills") == files_before and not (ws / "skills" / "newcomer").exists()
    assert subprocess.run(["git", "-C", str(ws), "rev-parse", "HEAD"], capture_output=True, text=True).stdout == head


def test_a_file_where_the_swap_folder_belongs_is_a_named_error_and_the_old_release_stays(ws, tmp_path):
    # works without namespaces: a regular file where a folder must be created fails for root too
    candidate = tmp_path / "cand"
    shutil.copytree(ws / "skills" / "news-digest", candidate)
    (candidate / "SKILL.md").write_text((candidate / "SKILL.md").read_text() + "\n- One more rule.\n")
    (ws / "skills" / ".sf-swap").write_text("in the way\n")
    files_before = tree(ws / "skills" / "news-digest")
    line = one_error(sf("release", "publish", "news-digest", "--from", str(candidate), "-w", str(ws), ok=None))
    assert "cannot write" in line and ".sf-swap" in line
    rows = json.loads(sf("releases", "list", "news-digest", "--json", "-w", str(ws)).stdout)
    assert [(r["version"], r["current"]) for r in rows if r["status"] == "PUBLISHED"] == [("1.2.0", True)]
    assert "PREPARING" not in {r["status"] for r in rows}
    assert tree(ws / "skills" / "news-digest") == files_before


def test_every_named_error_exits_2(ws, tmp_path):
    line = one_error(sf("release", "publish", "news-digest", "--from", str(tmp_path / "nonexistent"), "-w", str(ws), ok=None))
    assert "not a skill folder" in line
    shutil.rmtree(ws / "skills" / "news-digest")
    line = one_error(sf("release", "publish", "news-digest", "-w", str(ws), ok=None))
    assert "no folder" in line and "news-digest" in line
    line = one_error(sf("skills", "validate", str(tmp_path / "nothing-here"), ok=None))
    assert "does not exist" in line


# ---- 15. the skills repository lost its history ---------------------------------------------
def test_a_lost_git_history_is_named_in_one_line_by_every_command(ws):
    shutil.rmtree(ws / ".git")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    for args in (("skills", "index"), ("skills", "show", "news-digest"), ("skills", "list"),
                 ("releases", "list", "news-digest"), ("releases", "list", "news-digest", "--json"),
                 ("release", "publish", "news-digest"), ("route", "will it rain tomorrow", "--no-llm")):
        proc = sf(*args, "-w", str(ws), ok=None)
        line = one_error(proc)
        assert "git history lost" in line and "10 of 10" in line and "Did you mean" not in line, line
        assert proc.stdout == ""


def test_a_live_release_that_no_longer_loads_is_named_not_unknown(ws):
    # a release whose stored SKILL.md the loader refuses (as after a rule got stricter), built with
    # the real release steps on the real store and repository
    m = ReleaseStateMachine.open(Workspace.open(ws))
    rel = m.begin_release("news-digest", triggered_by="test")
    folder = ws / "skills" / "news-digest"
    (folder / "SKILL.md").write_text("no frontmatter any more\n")
    sha = m.repo.commit_folders([folder], "an unloadable release")
    m.store.set_commit(rel.release_id, sha, rel.skill_path)
    m.commit_release(rel.release_id)
    index = sf("skills", "index", "-w", str(ws))
    assert "news-digest" not in index.stdout and "taxi-hailing" in index.stdout
    assert "not in the index" in index.stderr and "frontmatter" in index.stderr
    line = one_error(sf("skills", "show", "news-digest", "-w", str(ws), ok=None))
    assert "frontmatter" in line and "unknown skill" not in line and "Did you mean" not in line


def test_a_skill_with_no_published_release_is_not_unknown(ws):
    m = ReleaseStateMachine.open(Workspace.open(ws))
    m.abandon(m.begin_release("brand-new", triggered_by="test").release_id)
    line = one_error(sf("skills", "show", "brand-new", "-w", str(ws), ok=None))
    assert "no published release" in line and "Did you mean" not in line


def test_files_where_workspace_folders_belong_are_named_errors(ws, tmp_path):
    (tmp_path / "plain").write_text("x\n")
    line = one_error(sf("init", str(tmp_path / "plain" / "ws"), ok=None))
    assert "cannot create a workspace" in line and "Not a directory" in line
    (ws / "runs" / "router.jsonl").unlink(missing_ok=True)
    (ws / "runs" / "router.jsonl").mkdir()
    line = one_error(sf("skills", "use", "news-digest", "-w", str(ws), ok=None))
    assert "cannot write the log" in line and "router.jsonl" in line
    shutil.rmtree(ws / "runs")
    (ws / "runs").write_text("in the way\n")
    line = one_error(sf("skills", "list", "-w", str(ws), ok=None))
    assert "runs is not a folder" in line
    line = one_error(sf("skills", "validate", str(tmp_path / "plain"), ok=None))  # never scans tmp_path
    assert "is not a SKILL.md" in line


# ---- 16. smaller defects ----------------------------------------------------------------------
def test_show_prints_the_stored_bytes_however_long_the_lines(ws):
    skill_md = ws / "skills" / "news-digest" / "SKILL.md"
    text = skill_md.read_text() + "\n- " + "A rule that goes on and on, " * 20 + "and ends.  \n\tIndented\ttabs.\n"
    skill_md.write_text(text)
    sf("release", "publish", "news-digest", "-w", str(ws))
    proc = sf("skills", "show", "news-digest", "-w", str(ws))
    stamped = text.replace('version: "1.2.0"', 'version: "1.2.1"')  # publish sets metadata.version
    assert proc.stdout == stamped == skill_md.read_text()  # byte for byte: no wrapping, no header, trailing spaces kept
    assert "news-digest 1.2.1" in proc.stderr


def test_llm_status_rows_do_not_all_name_the_router(ws):
    env = {"SKILLFORGE_LLM_BASE_URL": "http://127.0.0.1:9/v1", "SKILLFORGE_LLM_MODEL": "m",
           "SKILLFORGE_LLM_MAX_RETRIES": "0"}
    rows = json.loads(run_cli(["llm", "status", "--json", "-w", str(ws)], env, ok=1).stdout)
    assert [r["role"] for r in rows] == ["router", "executor", "judge", "proposer"]
    assert all(not r["ok"] and "connect" in r["error"] and "router" not in r["error"] for r in rows), rows
    table = run_cli(["llm", "status", "-w", str(ws)], env, ok=1).stdout
    assert "role 'router'" not in table and table.count("no: cannot connect") == 4


def test_a_bad_candidate_is_named_by_its_path(ws, tmp_path):
    make_set(ws / "evaluation_sets", 2)
    bad = tmp_path / "passwd"
    bad.write_text("root:x:0:0:root:/root:/bin/bash\n")
    with FakeOpenAIServer(default=Reply.text("OK")) as srv:
        env = {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_JUDGE_MODEL": "j"}
        proc = run_cli(["evaluate", "taxi-hailing", "--candidate", str(bad), "--set", "t", "-w", str(ws)], env, ok=None)
        assert srv.hits == 0  # refused before any case ran
    line = one_error(proc)
    assert str(bad) in line and "<text>" not in line and "frontmatter" in line


def test_version():
    proc = sf("--version")
    assert proc.stdout == f"skillforge {version('skillforge')}\n"


def test_an_empty_path_is_a_usage_error_not_the_current_folder(ws, tmp_path):
    """`init ""`, `-w ""` and `--from ""` used to mean the current folder: init made one there, and
    import copied from it."""
    before = sorted(p.name for p in tmp_path.iterdir())
    for args in (["init", ""], ["skills", "list", "-w", ""], ["skills", "import", "--from", "", "-w", str(ws)]):
        proc = sf(*args, ok=2, cwd=tmp_path)
        said = " ".join(proc.stderr.translate({ord(c): " " for c in "│╭╮╰╯─"}).split())  # the box may wrap it
        assert "an empty path; use '.' for the current folder" in said, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing made in the current folder
    assert sf("skills", "list", "-w", str(ws)).returncode == 0


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["skills", "list"], ["skills", "list", "--json"], ["skills", "show", "news-digest"]])
def test_output_to_a_full_device_is_a_named_error_not_an_internal_one(ws, args):
    """`> /dev/full` was exit 70 ("internal error: OSError"): the output is lost, which is exit 2."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run([str(SKILLFORGE_EXE), *args, "-w", str(ws)], stdout=full, stderr=subprocess.PIPE,
                              text=True, env=cli_env(None), timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()  # `skills show` says which release first, on stderr
    assert lines[-1] == "error: cannot write to standard output: No space left on device", proc.stderr
    assert not any("internal error" in line or "Traceback" in line for line in lines), proc.stderr
    with open("/dev/full", "w") as full:  # both streams full: nothing can be said, the code still tells
        proc = subprocess.run([str(SKILLFORGE_EXE), *args, "-w", str(ws)], stdout=full, stderr=full,
                              env=cli_env(None), timeout=120)
    assert proc.returncode == 2
