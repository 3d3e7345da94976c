"""QA15 undo and crash findings, on real workspaces (git + SQLite), the CLI and the scripted world.

- TRUST-4: a file the live release holds that the skill folder lacks is an unpublished change,
  listed as `deleted: PATH` and refused by `release publish --from`, `release revert`, the evolve
  L1 publish and `review approve`; `--force` lists it in `<backup>.deleted.txt`. A deletion the
  candidate makes itself is not one.
- TRUST-5: `runs cancel` of a run killed inside its publish abandons the run's own dead PREPARING
  release and puts the live bytes (and a commit saying so) back, with the LEFT_PREPARING warning.
- MESSAGE-4: `evolve --resume` after such a kill prints that warning; `skills list` and `releases
  list` name the interrupted publish and what to run, and change nothing.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env, flat, machine_of, run_cli

from skillforge.errors import UnpublishedChanges
from skillforge.skill.tree import Entry, read_tree
from skillforge.state.release import ReleaseStatus

SKILL = "news-digest"
REF = "references/sources.md"
LEFT = "was left PREPARING by a process that is gone; abandoning it"
EVOLVE_CHILD = Path(__file__).with_name("evolve_publish_kill_child.py")


def sf(*args: str, ok: int | None = 0) -> subprocess.CompletedProcess[str]:
    return run_cli(list(args), ok=ok)


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def ws(examples_ws: Path) -> Path:
    """news-digest published twice with a reference file: 1.2.1 and 1.2.2 both hold REF."""
    folder = examples_ws / "skills" / SKILL
    (folder / "references").mkdir()
    (folder / REF).write_text("- the wire services\n")
    m = machine_of(examples_ws)
    m.publish(SKILL)
    (folder / "SKILL.md").write_text((folder / "SKILL.md").read_text() + "\n- a second published line\n")
    m.publish(SKILL)
    assert [r.version for r in m.store.releases(SKILL)][-2:] == ["1.2.1", "1.2.2"]
    m.store.close()
    return examples_ws


# ---- TRUST-4 --------------------------------------------------------------------------------------
def test_revert_refuses_a_file_deleted_by_hand_and_force_records_the_deletion(ws):
    folder = ws / "skills" / SKILL
    (folder / REF).unlink()
    listed = json.loads(sf("skills", "list", "--json", "-w", str(ws)).stdout)["skills"]
    assert [s["worktree"] for s in listed if s["name"] == SKILL] == ["modified"]
    refused = flat(sf("release", "revert", SKILL, "1.2.1", "-w", str(ws), ok=2).stderr)
    assert f"unpublished changes that would be lost: deleted: {REF}" in refused and "--force" in refused
    assert not (folder / REF).exists() and [r.version for r in machine_of(ws).store.releases(SKILL)][-1] == "1.2.2"
    done = sf("release", "revert", SKILL, "1.2.1", "--force", "-w", str(ws))
    said = flat(done.stderr)
    assert f"brings back what was deleted from skills/{SKILL} by hand: {REF}" in said
    [backup] = [p for p in (ws / "runs" / "backups").iterdir() if p.is_dir()]
    manifest = backup.with_name(backup.name + ".deleted.txt")
    assert f"deleted: {REF}\n" in manifest.read_text() and manifest.name in said
    assert REF not in read_tree(backup) and (folder / REF).read_text() == "- the wire services\n"


def test_publish_from_refuses_a_deletion_it_would_undo_but_not_one_the_candidate_makes(ws, tmp_path):
    folder = ws / "skills" / SKILL
    cand = tmp_path / "cand" / SKILL
    cand.parent.mkdir()
    subprocess.run(["cp", "-a", str(folder), str(cand)], check=True)
    (cand / "SKILL.md").write_text((cand / "SKILL.md").read_text() + "\n- candidate line\n")
    (folder / REF).unlink()
    refused = flat(sf("release", "publish", SKILL, "--from", str(cand), "-w", str(ws), ok=2).stderr)
    assert f"deleted: {REF}" in refused and not (folder / REF).exists()
    # the candidate deletes the file itself: the folder's deletion is what it publishes, nothing is lost
    (cand / REF).unlink()
    sf("release", "publish", SKILL, "--from", str(cand), "-w", str(ws))
    assert not (ws / "runs" / "backups").exists() and not (folder / REF).exists()
    m = machine_of(ws)
    assert REF not in m.tree_of(m.store.current(SKILL))


def test_machine_lists_deletions_after_edits_and_a_candidate_deleting_a_file_is_no_deletion(ws):
    m = machine_of(ws)
    folder = m.folder_of(SKILL)
    live = read_tree(folder)
    cand = {**live, "SKILL.md": Entry(live["SKILL.md"].data + b"\n- candidate\n")}
    (folder / REF).unlink()
    (folder / "draft.md").write_text("mine\n")
    with pytest.raises(UnpublishedChanges) as info:
        m.publish(SKILL, cand)
    assert info.value.files == ["draft.md", f"deleted: {REF}"]
    (folder / "draft.md").unlink()
    (folder / REF).write_text("- the wire services\n")
    del cand[REF]  # the publish itself deletes REF: the folder still has it, so it is no edit
    rel = m.publish(SKILL, cand)
    assert rel.status is ReleaseStatus.PUBLISHED and not (folder / REF).exists() and not m.backups


def test_evolve_l1_publish_and_review_approve_refuse_a_deleted_file(tmp_path):
    from evolve_fakes import SKILL as EVOLVED, World, examples_patch, new_workspace, seed_failures

    from skillforge.runners.evolve import Runner

    ws = new_workspace(tmp_path / "ws")
    folder = ws.skills_dir / EVOLVED
    (folder / "references").mkdir()
    (folder / "references" / "zones.md").write_text("airport zone rules\n")
    machine_of(ws.root).publish(EVOLVED)
    world = World(lambda r: [examples_patch()])
    seed_failures(ws, world.llm())
    (folder / "references" / "zones.md").unlink()
    out = Runner(ws, llm_factory=world.llm).start(EVOLVED, run_id="run-del")
    assert out["status"] == "PENDING_REVIEW" and "deleted: references/zones.md" in str(out["message"]), out
    with pytest.raises(UnpublishedChanges, match="deleted: references/zones.md"):
        Runner(ws, llm_factory=world.llm).answer_review("run-del", "approve")
    done = Runner(ws, llm_factory=world.llm).answer_review("run-del", "approve", force=True)
    assert done["status"] == "PUBLISHED", done
    [manifest] = (ws.runs_dir / "backups").glob("*.deleted.txt")
    assert "deleted: references/zones.md" in manifest.read_text()
    assert (folder / "references" / "zones.md").read_text() == "airport zone rules\n"


# ---- TRUST-5 and MESSAGE-4 ------------------------------------------------------------------------
@pytest.fixture
def killed_run(tmp_path):
    """An evolve run of the scripted world killed right after its publish's `git commit`: its
    PREPARING release, the candidate in the folder and a commit that reads like a release."""
    from evolve_fakes import SKILL as EVOLVED, World, new_workspace, seed_failures

    ws = new_workspace(tmp_path / "ws")
    seed_failures(ws, World(lambda r: []).llm())
    m = machine_of(ws.root)
    live = m.store.current(EVOLVED)
    live_files = m.tree_of(live)
    m.store.close()
    child = subprocess.run([sys.executable, str(EVOLVE_CHILD), str(ws.root), "run-killed", "git-committed"],
                           capture_output=True, text=True, env={**cli_env(), "OMP_NUM_THREADS": "1"}, timeout=300)
    assert child.returncode == -signal.SIGKILL, child.stdout + child.stderr
    m = machine_of(ws.root)
    [dead] = m.store.preparing_of(EVOLVED)
    assert read_tree(m.folder_of(EVOLVED)) != live_files and dead.release_id in git(ws.root, "log", "-1", "--format=%s")
    return ws, EVOLVED, dead, live, live_files


def test_listings_name_the_interrupted_publish_and_change_nothing(killed_run):
    ws, skill, dead, live, live_files = killed_run
    w = ["-w", str(ws.root)]
    head = git(ws.root, "rev-parse", "HEAD")
    folder = read_tree(machine_of(ws.root).folder_of(skill))
    hint = f"a publish of {dead.version} was interrupted (release {dead.release_id[:8]} is PREPARING"
    todo = "skillforge evolve --resume run-killed"
    for args in (["skills", "list"], ["releases", "list", skill]):
        said = flat(sf(*args, *w).stdout)
        assert f"{skill}: {hint}" in said and todo in said and "skillforge runs cancel run-killed" in said
    listed = json.loads(sf("skills", "list", "--json", *w).stdout)
    assert [(i["skill"], i["version"], i["run_id"], i["command"]) for i in listed["interrupted"]] == \
        [(skill, dead.version, "run-killed", todo)]
    [row] = [s for s in listed["skills"] if s["name"] == skill]
    assert row["interrupted"][0]["release_id"] == dead.release_id
    releases = json.loads(sf("releases", "list", skill, "--json", *w).stdout)
    assert [r["interrupted"]["command"] if r["interrupted"] else None for r in releases][-1] == todo
    assert all(r["interrupted"] is None for r in releases[:-1])
    # read only: the row, the folder and git are as the kill left them
    m = machine_of(ws.root)
    assert m.store.release(dead.release_id).status is ReleaseStatus.PREPARING
    assert read_tree(m.folder_of(skill)) == folder and git(ws.root, "rev-parse", "HEAD") == head


def test_runs_cancel_abandons_the_runs_dead_release_and_puts_the_live_bytes_back(killed_run):
    ws, skill, dead, live, live_files = killed_run
    done = sf("runs", "cancel", "run-killed", "--comment", "give up", "-w", str(ws.root), ok=3)
    assert f"{skill}: release {dead.release_id} {LEFT}" in flat(done.stderr)
    assert "CANCELLED" in done.stdout
    m = machine_of(ws.root)
    assert m.store.release(dead.release_id).status is ReleaseStatus.ABANDONED and not m.store.preparing_of(skill)
    assert m.store.current(skill).release_id == live.release_id
    assert read_tree(m.folder_of(skill)) == live_files
    assert m.repo.tree_at(git(ws.root, "rev-parse", "HEAD").strip(), live.skill_path) == live_files
    assert "after abandoned release" in git(ws.root, "log", "-1", "--format=%s")
    assert git(ws.root, "status", "--porcelain", "--", "skills") == ""
    listed = json.loads(sf("skills", "list", "--json", "-w", str(ws.root)).stdout)
    assert listed["interrupted"] == [] and [s["worktree"] for s in listed["skills"] if s["name"] == skill] == ["clean"]


def test_runs_cancel_of_an_edited_folder_keeps_the_edit_and_says_it_may_hold_the_candidate(killed_run):
    """QA pass 17 TRUST-6: a hand edit after the kill; cancel kept the folder (right) without a word,
    and the next `release publish` shipped the never-approved candidate with the edit."""
    ws, skill, dead, live, live_files = killed_run
    skill_md = machine_of(ws.root).folder_of(skill) / "SKILL.md"
    edited = skill_md.read_text(encoding="utf-8") + "\n- my own hand note\n"
    skill_md.write_text(edited, encoding="utf-8")
    done = sf("runs", "cancel", "run-killed", "-w", str(ws.root), ok=3)
    said = flat(done.stderr)
    assert f"was edited after release {dead.release_id[:8]}" in said and "is left as it is" in said, said
    assert f"skillforge release revert {skill} {live.version} --force" in said
    assert skill_md.read_text(encoding="utf-8") == edited  # the edit is never overwritten


def test_runs_cancel_leaves_another_runs_or_a_live_release_alone(killed_run):
    ws, skill, dead, live, live_files = killed_run
    from skillforge.evolution.archive import abandon_own

    assert abandon_own(ws, "another-run") == []
    m = machine_of(ws.root)
    assert m.store.release(dead.release_id).status is ReleaseStatus.PREPARING
    # the same release, owned by a live process (this one): not abandoned either
    m.store.conn.execute("UPDATE releases SET owner = ? WHERE release_id = ?", (m.owner.token, dead.release_id))
    m.store.conn.commit()
    assert abandon_own(ws, "run-killed") == []
    assert m.store.release(dead.release_id).status is ReleaseStatus.PREPARING


def test_evolve_resume_says_it_abandons_the_dead_release(killed_run, caplog):
    from evolve_fakes import World, examples_patch

    from skillforge.llm.cache import CACHE_FILE, LLMCache
    from skillforge.runners.evolve import Runner

    ws, skill, dead, live, live_files = killed_run
    world = World(lambda r: [examples_patch()])
    cache = LLMCache(ws.runs_dir / CACHE_FILE)
    with caplog.at_level("WARNING"):
        out = Runner(ws, llm_factory=lambda ledger: world.llm(ledger, cache)).resume("run-killed")
    assert out["status"] == "PUBLISHED", out
    assert f"{skill}: release {dead.release_id} {LEFT}" in caplog.text
    assert machine_of(ws.root).store.release(dead.release_id).status is ReleaseStatus.ABANDONED
