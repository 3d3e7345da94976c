"""A publish or revert killed (SIGKILL) at any step boundary is recovered by the next publish
(issue 21 item 3): no --force, exactly one new PUBLISHED release, the dead one ABANDONED, the
live bytes in the folder, git's index and `git status` clean for the skill.

The kills are deterministic: a forked child patches itself (release_worker.die_at) to die right
after one named boundary. The first test is the issue's own repro through the CLI, timing-based:
poll for SKILL.md's new inode every 1 ms and SIGKILL the publish.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import EXAMPLE_SKILLS, SKILLFORGE_EXE, cli_env, flat, run_cli
from release_worker import BOUNDARIES, die_at

from skillforge.skill import file as skillfile
from skillforge.config import Workspace, init_workspace
from skillforge.errors import UnpublishedChanges
from skillforge.library.releases import ReleaseStateMachine
from skillforge.skill.tree import Entry, Tree, read_tree
from skillforge.skill.version import stamped
from skillforge.state.release import Release, ReleaseStatus

SKILL = "news-digest"
ROUNDS = 5
DEAD = "killed"
"""triggered_by of the releases the children begin."""


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


def one_skill_workspace(tmp_path: Path, skill: str = SKILL) -> Path:
    ws = init_workspace(tmp_path / "ws")
    shutil.copytree(EXAMPLE_SKILLS / skill, ws.skills_dir / skill)
    m = ReleaseStateMachine.open(ws)
    assert len(m.import_skills(skillfile.scan(ws.skills_dir, ws.root)).imported) == 1
    m.store.close()
    return ws.root


def machine_of(root: Path) -> ReleaseStateMachine:
    return ReleaseStateMachine.open(Workspace.open(root))


def killed(root: Path, point: str, op: Callable[[ReleaseStateMachine], object]) -> None:
    """Run `op` in a forked child that SIGKILLs itself at `point`; the child opens its own store
    and repository (the parent holds none open across the fork)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns
        code = 3  # op finished without crossing `point`
        try:
            die_at(point)
            op(machine_of(root))
        except BaseException:
            traceback.print_exc()
            code = 4
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"the child never reached {point}")
        time.sleep(0.002)
    status = done[1]
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, \
        f"child at {point}: exit {os.waitstatus_to_exitcode(status)}"


def candidate(m: ReleaseStateMachine, n: int) -> Tree:
    """The live files with a new line and a second file (so a kill can land between two files)."""
    tree = read_tree(m.folder_of(SKILL))
    tree["SKILL.md"] = Entry(tree["SKILL.md"].data.rstrip(b"\n") + f"\n- round {n} rule\n".encode())
    tree["references/round.md"] = Entry(f"notes of round {n}\n".encode())
    return tree


def published(m: ReleaseStateMachine) -> list[Release]:
    return [r for r in m.store.releases(SKILL) if r.status is ReleaseStatus.PUBLISHED]


def assert_clean(root: Path, m: ReleaseStateMachine, want: Tree) -> None:
    """The folder and HEAD hold `want` (the live release's files), nothing staged, nothing left."""
    current = m.store.current(SKILL)
    assert read_tree(m.folder_of(SKILL)) == want
    assert m.repo.tree_at(current.commit_hash, current.skill_path) == want
    assert git(root, "status", "--porcelain", "--", "skills") == ""  # nothing staged, changed or left over
    assert not (root / "skills" / ".sf-swap").exists()
    assert not m.store.preparing_of(SKILL)


def dead_release(m: ReleaseStateMachine) -> Release:
    """The latest release a killed child began."""
    return [r for r in m.store.releases(SKILL) if r.triggered_by == DEAD][-1]


def publish_killed_then_again(root: Path, point: str, n: int) -> None:
    m = machine_of(root)
    live, before = m.store.current(SKILL), len(published(m))
    cand = candidate(m, n)
    m.store.close()
    killed(root, point, lambda child: child.publish(SKILL, cand, triggered_by=DEAD))
    m = machine_of(root)
    dead = dead_release(m)
    if point == "published":  # the publish transaction committed: the release stands
        assert m.store.current(SKILL).release_id == dead.release_id
    else:
        assert dead.status is ReleaseStatus.PREPARING and m.store.current(SKILL).release_id == live.release_id
        again = m.publish(SKILL, cand, triggered_by="retry")  # no force
        assert m.store.release(dead.release_id).status is ReleaseStatus.ABANDONED
        assert m.store.current(SKILL).release_id == again.release_id
    assert len(published(m)) == before + 1
    assert_clean(root, m, stamped(cand, m.store.current(SKILL).version))  # publish sets metadata.version
    m.store.close()


def revert_killed_then_again(root: Path, point: str) -> None:
    m = machine_of(root)
    live, before = m.store.current(SKILL), len(published(m))
    target = published(m)[-2]
    want = m.repo.tree_at(target.commit_hash, target.skill_path)
    m.store.close()
    killed(root, point, lambda child: child.revert(SKILL, target.release_id))
    m = machine_of(root)
    [dead] = [r for r in m.store.releases(SKILL) if r.status is ReleaseStatus.PREPARING] or \
        [m.store.current(SKILL)]
    if point == "published":
        assert dead.release_id != live.release_id and dead.commit_hash == target.commit_hash
    else:
        assert m.store.current(SKILL).release_id == live.release_id
        again = m.revert(SKILL, target.release_id)
        assert m.store.release(dead.release_id).status is ReleaseStatus.ABANDONED
        assert m.store.current(SKILL).release_id == again.release_id
    assert len(published(m)) == before + 1
    assert_clean(root, m, want)
    m.store.close()


@pytest.mark.parametrize("point", BOUNDARIES)
def test_a_publish_and_a_revert_killed_at_each_boundary_recover_without_force(tmp_path, point):
    root = one_skill_workspace(tmp_path)
    for n in range(ROUNDS):
        publish_killed_then_again(root, point, n)
        revert_killed_then_again(root, point)


def test_the_issue_repro_kill_at_the_new_inode_then_publish_again(tmp_path):
    """Issue 21 item 3 as reported: SIGKILL `release publish --from` as soon as SKILL.md has a new
    inode; publishing again was exit 2 ("unpublished changes") and left the dead release PREPARING."""
    root = one_skill_workspace(tmp_path)
    target = root / "skills" / SKILL / "SKILL.md"
    cand = tmp_path / "cand" / SKILL
    shutil.copytree(root / "skills" / SKILL, cand)
    (cand / "SKILL.md").write_text((cand / "SKILL.md").read_text() + "\n- candidate line\n")
    inode = target.stat().st_ino
    proc = subprocess.Popen([str(SKILLFORGE_EXE), "release", "publish", SKILL, "--from", str(cand), "-w", str(root)],
                            env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            if target.stat().st_ino != inode:
                break
        except FileNotFoundError:
            pass  # between the swap's two renames
        time.sleep(0.001)
    proc.kill()
    assert proc.wait() == -signal.SIGKILL, "the publish finished before it could be killed"
    again = run_cli(["release", "publish", SKILL, "--from", str(cand), "-w", str(root)])
    assert "published news-digest 1.2.1" in again.stdout, again.stdout + again.stderr
    m = machine_of(root)
    assert [r.status for r in m.store.releases(SKILL)] == [ReleaseStatus.PUBLISHED, ReleaseStatus.ABANDONED,
                                                            ReleaseStatus.PUBLISHED]
    assert_clean(root, m, stamped(read_tree(cand), "1.2.1"))


@pytest.mark.parametrize("point", ["before-add", "added", "git-committed"])
def test_a_persons_edit_after_the_kill_is_never_overwritten(tmp_path, point):
    """The dead release's bytes are put back only while the folder holds exactly them: an edit
    made since is refused without --force, kept, and publishable from the working tree."""
    root = one_skill_workspace(tmp_path)
    m = machine_of(root)
    live = m.store.current(SKILL)
    cand = candidate(m, 0)
    m.store.close()
    killed(root, point, lambda child: child.publish(SKILL, cand, triggered_by=DEAD))
    skill_md = root / "skills" / SKILL / "SKILL.md"
    skill_md.write_text(skill_md.read_text() + "- my own edit on top\n")
    mine = read_tree(skill_md.parent)
    m = machine_of(root)
    with pytest.raises(UnpublishedChanges):
        m.publish(SKILL, candidate(m, 1))
    assert read_tree(skill_md.parent) == mine and m.store.current(SKILL).release_id == live.release_id
    assert m.store.release(dead_release(m).release_id).status is ReleaseStatus.ABANDONED
    assert git(root, "diff", "--cached", "--name-only", "HEAD") == ""
    assert m.publish(SKILL).version == "1.2.1"  # the person's edit, published with its version set
    assert_clean(root, m, stamped(mine, "1.2.1"))


@pytest.mark.parametrize("point", ["swapped", "before-add", "git-committed"])
def test_a_new_skill_killed_at_the_swap_is_removed_and_published_again(tmp_path, point):
    """A skill with no live release yet has no folder to put back: the dead release's folder is
    removed (and its commit undone), and publishing it again needs no --force."""
    root = one_skill_workspace(tmp_path)
    folder = root / "skills" / "fresh-skill"
    files = {"SKILL.md": b"---\nname: fresh-skill\ndescription: A new skill. Use when testing.\n---\nDo it.\n"}
    head = git(root, "rev-parse", "HEAD:skills").strip()
    killed(root, point, lambda child: child.publish("fresh-skill", files, triggered_by=DEAD))
    m = machine_of(root)
    rel = m.publish("fresh-skill", files)
    assert [r.status for r in m.store.releases("fresh-skill")] == [ReleaseStatus.ABANDONED, ReleaseStatus.PUBLISHED]
    assert m.store.current("fresh-skill").release_id == rel.release_id
    assert read_tree(folder) == stamped({"SKILL.md": Entry(files["SKILL.md"])}, "0.1.0")
    assert git(root, "status", "--porcelain", "--", "skills") == ""
    assert git(root, "diff", "--name-only", head, "HEAD:skills") == "fresh-skill/SKILL.md\n"


EVOLVE_CHILD = Path(__file__).with_name("evolve_publish_kill_child.py")


@pytest.mark.parametrize("point", ["before-add", "git-committed"])
def test_evolve_resume_after_a_kill_in_its_publish_needs_no_force(tmp_path, point):
    """The issue's `evolve --resume` path: the run killed inside its publish, between the swap and
    `git add` (or after `git commit`), is resumed by another process and publishes exactly once."""
    from evolve_fakes import SKILL as EVOLVED, World, examples_patch, new_workspace, seed_failures

    from skillforge.runners.evolve import Runner
    from skillforge.llm.cache import CACHE_FILE, LLMCache

    ws = new_workspace(tmp_path / "ws")
    seed_failures(ws, World(lambda r: []).llm())
    live = machine_of(ws.root).store.current(EVOLVED)
    child = subprocess.run([sys.executable, str(EVOLVE_CHILD), str(ws.root), "run-killed", point],
                           capture_output=True, text=True, env={**cli_env(), "OMP_NUM_THREADS": "1"}, timeout=300)
    assert child.returncode == -signal.SIGKILL, child.stdout + child.stderr
    m = machine_of(ws.root)
    [dead] = m.store.preparing_of(EVOLVED)
    assert dead.triggered_by == "evolve:run-killed" and m.store.current(EVOLVED).release_id == live.release_id
    world = World(lambda r: [examples_patch()])
    cache = LLMCache(ws.runs_dir / CACHE_FILE)
    out = Runner(ws, llm_factory=lambda ledger: world.llm(ledger, cache)).resume("run-killed")
    assert out["status"] == "PUBLISHED", out
    rows = [r for r in m.store.releases(EVOLVED) if r.triggered_by == "evolve:run-killed"]
    assert [r.status for r in rows] == [ReleaseStatus.ABANDONED, ReleaseStatus.PUBLISHED]
    current = m.store.current(EVOLVED)
    assert current.release_id == rows[1].release_id == out["release_id"]
    assert read_tree(m.folder_of(EVOLVED)) == m.repo.tree_at(current.commit_hash, current.skill_path)
    assert git(ws.root, "diff", "--cached", "--name-only", "HEAD") == ""
    assert git(ws.root, "status", "--porcelain", "--", "skills") == ""


def test_a_working_tree_publish_after_a_killed_one_stops_after_the_warning(tmp_path):
    """QA 20 MESSAGE-5: after a `--from` publish killed past its swap, the next working-tree publish
    warned that the folder may hold the dead release's never-published changes and then published
    them in the same command. It stops there now (exit 2, nothing published); run again, it publishes."""
    root = one_skill_workspace(tmp_path)
    m = machine_of(root)
    live = m.store.current(SKILL)
    cand = candidate(m, 0)
    m.store.close()
    killed(root, "before-add", lambda child: child.publish(SKILL, cand, triggered_by=DEAD))
    skill_md = root / "skills" / SKILL / "SKILL.md"
    skill_md.write_text(skill_md.read_text() + "- my own edit on top\n")
    first = run_cli(["release", "publish", SKILL, "-w", str(root)], ok=2)
    assert "may still hold the never-published changes" in flat(first.stderr) and "nothing was published" in flat(first.stderr)
    m = machine_of(root)
    assert m.store.current(SKILL).release_id == live.release_id
    run_cli(["release", "publish", SKILL, "-w", str(root)])
    assert "my own edit on top" in m.repo.tree_at(m.store.current(SKILL).commit_hash, f"skills/{SKILL}")["SKILL.md"].data.decode()
