"""QA15 TRUST-1/TRUST-2: the files of a skill beside SKILL.md, as a user meets them through the CLI
(real processes, a real workspace: SQLite store and git repository).

- `evaluate --candidate` names the files outside SKILL.md that differ from the baseline (a folder
  side read from disk, a release side from its git tree) and caps a PASS at REVIEW (exit 3);
- `release publish` (and `--canary`) lists the files that differ from the live release, and refuses
  a secret in an added or changed file (exit 2, nothing written) unless `--allow-secrets`;
- `skills validate --strict` fails on a secret in any text file of the folder, a lenient run warns;
  `skills import` warns and imports.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import flat, run_cli
from eval_server import EvalServer, JudgeMode
from evaluate_fakes import make_set

SKILL = "taxi-hailing"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
ROTATE = f'import shutil\nAWS_SECRET_ACCESS_KEY = "{AWS_SECRET}"\nshutil.rmtree("/var/backups/pg")\n'
PG_LINE = "- Connect with PGPASSWORD=hunter2Xk9pq2Lw7RtZ4m before the dump.\n"


def llm_env(srv) -> dict[str, str]:  # noqa: ANN001
    return {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_JUDGE_MODEL": "j",
            "SKILLFORGE_LLM_MAX_RETRIES": "0"}


@pytest.fixture
def ws(workspace, machine) -> Path:  # noqa: ANN001 - conftest fixtures: the example skills imported
    make_set(workspace.root / "evaluation_sets", 6)
    return workspace.root


def live_copy(ws: Path, dest: Path) -> Path:
    """A candidate folder: the live folder of the skill, copied with its modes."""
    folder = dest / SKILL
    shutil.copytree(ws / "skills" / SKILL, folder)
    return folder


def write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.chmod(path, mode)


def git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(ws / "skills"), *args], capture_output=True, text=True, check=True).stdout


def releases(ws: Path) -> list[dict[str, object]]:
    return json.loads(run_cli(["releases", "list", SKILL, "--json", "-w", str(ws)]).stdout)


def test_evaluate_caps_pass_at_review_and_names_unevaluated_files(ws, tmp_path):
    same = live_copy(ws, tmp_path / "same")          # only SKILL.md, and the same text: PASS
    cand = live_copy(ws, tmp_path / "cand")
    write(cand / "scripts" / "rotate.py", ROTATE, 0o755)
    report = tmp_path / "report.html"
    with EvalServer(JudgeMode.CONTENT) as srv:
        env = llm_env(srv)
        base = ["evaluate", SKILL, "--set", "t", "--no-cache", "-w", str(ws)]
        control = json.loads(run_cli([*base, "--candidate", str(same), "--json"], env, ok=0).stdout)
        assert control["verdict"] == "PASS" and control["not_evaluated"] == []
        got = json.loads(run_cli([*base, "--candidate", str(cand), "--json", "--report", str(report)], env, ok=3).stdout)
        assert got["verdict"] == "REVIEW" and got["not_evaluated"] == ["scripts/rotate.py added"]
        assert any(r.startswith("scripts/rotate.py added: not evaluated") and "a person must look" in r
                   for r in got["reasons"])
        assert "scripts/rotate.py added" in report.read_text(encoding="utf-8")
        text = flat(run_cli([*base, "--candidate", str(cand)], env, ok=3).stdout)
        assert text.startswith("REVIEW")
        assert "not evaluated (1 file(s) outside SKILL.md differ from the baseline's): scripts/rotate.py added" in text
        again = json.loads(run_cli(["evaluate", "--rejudge", got["run_id"], "--json", "-w", str(ws)], env, ok=3).stdout)
        assert again["verdict"] == "REVIEW" and again["not_evaluated"] == ["scripts/rotate.py added"]
    lines = [json.loads(x) for x in (ws / "runs" / "evaluations.jsonl").read_text().splitlines()]
    assert [(x["verdict"], x["not_evaluated"]) for x in lines] == [
        ("PASS", []), ("REVIEW", ["scripts/rotate.py added"]), ("REVIEW", ["scripts/rotate.py added"]),
        ("REVIEW", ["scripts/rotate.py added"])]


def test_evaluate_reads_release_sides_from_git_with_modes_and_deletions(ws, tmp_path):
    before = releases(ws)[-1]["version"]
    cand = live_copy(ws, tmp_path / "v2")
    write(cand / "scripts" / "run.sh", "#!/bin/sh\necho fare\n", 0o755)
    write(cand / "references" / "fares.md", "# Fares\n")
    run_cli(["release", "publish", SKILL, "--from", str(cand), "-w", str(ws)])
    after = releases(ws)[-1]["version"]
    os.chmod(cand / "scripts" / "run.sh", 0o644)                 # the folder: mode lost, a reference deleted
    (cand / "references" / "fares.md").unlink()
    with EvalServer(JudgeMode.CONTENT) as srv:
        env = llm_env(srv)
        base = ["evaluate", SKILL, "--set", "t", "--no-cache", "--json", "-w", str(ws)]
        both = json.loads(run_cli([*base, "--candidate", after, "--baseline", before], env, ok=3).stdout)
        assert both["not_evaluated"] == ["references/fares.md added", "scripts/run.sh added"]
        folder = json.loads(run_cli([*base, "--candidate", str(cand)], env, ok=3).stdout)  # baseline: the live one
        assert folder["not_evaluated"] == ["references/fares.md deleted", "scripts/run.sh mode 100755 -> 100644"]
        assert folder["verdict"] == "REVIEW"


def test_publish_lists_files_and_refuses_a_secret_with_nothing_written(ws, tmp_path):
    cand = live_copy(ws, tmp_path / "bad")
    write(cand / "scripts" / "rotate.py", ROTATE, 0o755)
    head, history = git(ws, "rev-parse", "HEAD"), releases(ws)
    for extra in ([], ["--canary", "10%"]):
        proc = run_cli(["release", "publish", SKILL, "--from", str(cand), "-w", str(ws), *extra], ok=2)
        said = flat(proc.stderr)
        assert "1 file(s) differ from the live release" in proc.stdout and "scripts/rotate.py added" in proc.stdout
        assert len(proc.stderr.strip().splitlines()) == 1 and said.startswith(
            "error: refused: 1 secret(s) in the files this publish adds or changes: scripts/rotate.py:2: AWS secret key")
        assert "--allow-secrets" in said and AWS_SECRET[:8] not in said + proc.stdout
        assert git(ws, "rev-parse", "HEAD") == head and releases(ws) == history  # nothing written
        assert not (ws / "skills" / SKILL / "scripts").exists()
    proc = run_cli(["release", "publish", SKILL, "--from", str(cand), "--allow-secrets", "-w", str(ws)])
    assert proc.stdout.splitlines()[-1].startswith(f"published {SKILL} ")
    assert "scripts/rotate.py:2: AWS secret key (AWS_SECRET_ACCESS_KEY=…): published anyway (--allow-secrets)" \
        in flat(proc.stderr)
    # the live release holds the file now: a publish that leaves it as it is scans only what it changes
    (cand / "SKILL.md").write_text((cand / "SKILL.md").read_text(encoding="utf-8") + "\n- Say the fare first.\n",
                                   encoding="utf-8")
    os.chmod(cand / "scripts" / "rotate.py", 0o644)
    proc = run_cli(["release", "publish", SKILL, "--from", str(cand), "-w", str(ws)])
    assert proc.stdout.splitlines()[:3] == ["2 file(s) differ from the live release " + releases(ws)[-2]["version"]
                                            + f" ({releases(ws)[-2]['release_id'][:8]}):", "  SKILL.md changed",
                                            "  scripts/rotate.py mode 100755 -> 100644"]
    said = flat(proc.stderr)  # it is not refused (the live release holds it), but it is named
    assert "scripts/rotate.py:2: AWS secret key (AWS_SECRET_ACCESS_KEY=…): already in the live release" in said
    assert "only rewriting the repository's history" in said and AWS_SECRET[:8] not in said


def test_publish_of_the_working_tree_refuses_a_credential_in_skill_md(ws):
    file = ws / "skills" / SKILL / "SKILL.md"
    file.write_text(file.read_text(encoding="utf-8") + PG_LINE, encoding="utf-8")
    head = git(ws, "rev-parse", "HEAD")
    proc = run_cli(["release", "publish", SKILL, "-w", str(ws)], ok=2)
    assert "SKILL.md changed" in proc.stdout and "credential assignment (PGPASSWORD=…)" in flat(proc.stderr)
    assert "hunter2" not in proc.stderr and git(ws, "rev-parse", "HEAD") == head


def test_validate_strict_fails_and_import_warns_on_secrets_in_any_file(workspace, tmp_path):
    src = tmp_path / "src"
    folder = src / "db-backup"
    write(folder / "SKILL.md", "---\nname: db-backup\ndescription: Back up a PostgreSQL database with pg_dump "
                               "and rotate old dumps.\n---\n\n# DB backup\n\nRun scripts/rotate.py after each dump.\n")
    write(folder / "scripts" / "rotate.py", ROTATE, 0o755)
    (folder / "references").mkdir()
    (folder / "references" / "sample.bin").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)))  # no secret
    lenient = run_cli(["skills", "validate", str(folder)], ok=0)
    assert "warning" in lenient.stdout and "scripts/rotate.py:2: field 'secret': AWS secret key" in flat(lenient.stdout)
    strict = run_cli(["skills", "validate", str(folder), "--strict", "--json"], ok=1)
    issues = json.loads(strict.stdout)["issues"]
    assert [(Path(i["file"]).name, i["field"]) for i in issues] == [("rotate.py:2", "secret")]
    assert AWS_SECRET[:8] not in strict.stdout
    imported = run_cli(["skills", "import", "--from", str(src), "-w", str(workspace.root)], ok=0)
    assert "imported 1 skill(s)" in imported.stdout
    assert "skills/db-backup/scripts/rotate.py:2: AWS secret key" in flat(imported.stderr)
    clean = tmp_path / "clean" / "db-backup"
    shutil.copytree(folder, clean)
    (clean / "scripts" / "rotate.py").write_text('KEY = os.environ["AWS_SECRET_ACCESS_KEY"]\n', encoding="utf-8")
    assert "secret" not in run_cli(["skills", "validate", str(clean), "--strict"], ok=0).stdout
