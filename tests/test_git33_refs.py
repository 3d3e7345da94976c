"""QA 33 F1/F2: release commits are kept by SkillForge's own refs (library/gitrefs.py), so branch
deletes, resets and amends followed by reflog expiry + gc never drop a live release's bytes; a skill
whose commit is really gone blocks only itself; a store behind git is named and its versions skipped."""

from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path

import pytest

from skillforge.config import Workspace, init_workspace
from skillforge.errors import HistoryLost
from skillforge.library import gitrefs
from skillforge.library.registry import SkillRegistry
from skillforge.library.releases import ReleaseStateMachine
from skillforge.skill import file as skillfile
from skillforge.state.release import ReleaseStatus


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def gc(root: Path) -> None:
    git(root, "reflog", "expire", "--expire=now", "--all")
    git(root, "gc", "-q", "--prune=now")


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    ws = init_workspace(tmp_path / "ws")
    for name in ("alpha", "beta"):
        (ws.skills_dir / name).mkdir(parents=True)
        (ws.skills_dir / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {name} skill\n---\nbody {name}\n")
    m = ReleaseStateMachine.open(ws)
    assert len(m.import_skills(skillfile.scan(ws.skills_dir, ws.root)).imported) == 2
    gitrefs._warned.clear()
    return ws


def publish_line(ws: Workspace, skill: str, line: str) -> str:
    m = ReleaseStateMachine.open(ws)
    path = ws.skills_dir / skill / "SKILL.md"
    path.write_text(path.read_text() + f"- {line}\n")
    return m.publish(skill).release_id


def branch(ws: Workspace) -> str:
    return git(ws.root, "rev-parse", "--abbrev-ref", "HEAD").strip()


def assert_all_served(ws: Workspace, alpha_line: str) -> None:
    reg = SkillRegistry.load(ws)  # verify_history: no HistoryLost
    assert alpha_line in reg.serve("alpha").body
    assert "body beta" in reg.serve("beta").body
    m = ReleaseStateMachine.open(ws)
    back = m.revert("alpha", "0.1.0")
    assert back.status is ReleaseStatus.PUBLISHED and alpha_line not in SkillRegistry.load(ws).serve("alpha").body


def test_every_release_with_a_commit_has_its_own_ref(ws):
    rid = publish_line(ws, "alpha", "two")
    pinned = gitrefs.refs(ReleaseStateMachine.open(ws).repo)
    m = ReleaseStateMachine.open(ws)
    assert {r.release_id for n in ("alpha", "beta") for r in m.store.releases(n)} == set(pinned)
    assert pinned[rid][0] == m.store.release(rid).commit_hash
    assert "skillforge" not in git(ws.root, "branch", "-a") + git(ws.root, "tag")


def test_a_deleted_topic_branch_and_gc_keep_the_live_release(ws):
    main = branch(ws)
    git(ws.root, "checkout", "-q", "-b", "topic")
    publish_line(ws, "alpha", "from topic")
    git(ws.root, "checkout", "-q", main)
    git(ws.root, "branch", "-q", "-D", "topic")
    gc(ws.root)
    assert_all_served(ws, "from topic")


def test_reset_hard_and_gc_keep_the_live_release(ws):
    first = git(ws.root, "rev-parse", "HEAD").strip()
    publish_line(ws, "alpha", "v2")
    git(ws.root, "reset", "-q", "--hard", first)
    ReleaseStateMachine.open(ws).revert("alpha")  # the folder back: a new restore commit, the row unchanged
    gc(ws.root)
    assert_all_served(ws, "v2")


def test_amend_and_gc_keep_the_live_release(ws):
    publish_line(ws, "alpha", "amended")
    git(ws.root, "commit", "-q", "--amend", "-m", "alpha 0.1.1 (reworded by a teammate)")
    gc(ws.root)
    assert_all_served(ws, "amended")


def test_refs_an_older_skillforge_never_wrote_are_backfilled_when_the_history_is_verified(ws):
    main = branch(ws)
    git(ws.root, "checkout", "-q", "-b", "topic")
    publish_line(ws, "alpha", "from topic")
    for ref in gitrefs.refs(ReleaseStateMachine.open(ws).repo):
        git(ws.root, "update-ref", "-d", gitrefs.RELEASES + ref)  # as an older SkillForge left it (or a crash)
    SkillRegistry.load(ws)  # any command: the backfill
    assert len(gitrefs.refs(ReleaseStateMachine.open(ws).repo)) == 3
    git(ws.root, "checkout", "-q", main)
    git(ws.root, "branch", "-q", "-D", "topic")
    gc(ws.root)
    assert_all_served(ws, "from topic")


def lose_alpha_commit(ws: Workspace) -> None:
    """alpha's live release published on a topic branch, its ref deleted (as before refs existed), the
    branch deleted and the history collected: its commit is gone."""
    main = branch(ws)
    git(ws.root, "checkout", "-q", "-b", "topic")
    publish_line(ws, "alpha", "from topic")
    git(ws.root, "checkout", "-q", main)
    subprocess.run(["git", "update-ref", "-d", gitrefs.RELEASES + ReleaseStateMachine.open(ws).store.current("alpha").release_id],
                   cwd=ws.root, check=True)  # as before refs existed
    git(ws.root, "branch", "-q", "-D", "topic")
    gc(ws.root)


def test_a_lost_commit_blocks_only_its_own_skill_and_a_publish_gets_it_going(ws, caplog):
    lose_alpha_commit(ws)
    with caplog.at_level(logging.WARNING):
        reg = SkillRegistry.load(ws)
    assert "body beta" in reg.serve("beta").body
    assert "'alpha' cannot be served" in caplog.text and "release publish alpha" in caplog.text
    assert "alpha" in reg.broken
    publish_line(ws, "alpha", "again")
    assert "again" in SkillRegistry.load(ws).serve("alpha").body


def test_a_replaced_git_folder_is_still_history_lost(ws):
    shutil.rmtree(ws.root / ".git")
    git(ws.root, "init", "-q")
    git(ws.root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "new")
    with pytest.raises(HistoryLost):
        SkillRegistry.load(ws)


def test_a_publish_on_a_detached_head_warns_and_its_commit_survives_gc(ws, caplog):
    main = branch(ws)
    git(ws.root, "checkout", "-q", "--detach")
    with caplog.at_level(logging.WARNING):
        publish_line(ws, "alpha", "detached")
    assert "HEAD is detached" in caplog.text and "no branch shows it" in caplog.text
    git(ws.root, "checkout", "-q", "-f", main)
    gc(ws.root)
    assert "detached" in SkillRegistry.load(ws).serve("alpha").body


def test_an_abandoned_release_loses_its_ref(ws):
    m = ReleaseStateMachine.open(ws)
    rel = m.begin_release("alpha")
    path = ws.skills_dir / "alpha" / "SKILL.md"
    path.write_text(path.read_text() + "- abandoned\n")
    m.write_commit(rel.release_id)
    assert rel.release_id in gitrefs.refs(m.repo)
    m.abandon(rel.release_id)
    SkillRegistry.load(ws)
    assert rel.release_id not in gitrefs.refs(m.repo)


def store_as_now(ws: Workspace):
    """A function that puts the store's files (db, -wal, -shm) back as they are now."""
    sides = [ws.db_path.with_name(ws.db_path.name + tail) for tail in ("", "-wal", "-shm")]
    saved = {p: p.read_bytes() for p in sides if p.exists()}

    def back() -> None:
        for p in sides:
            p.unlink(missing_ok=True)
        for p, data in saved.items():
            p.write_bytes(data)
    return back


def test_a_store_behind_git_is_named_and_its_version_is_never_reused(ws, caplog):
    back = store_as_now(ws)  # the store as it was before the publish (its -wal lost after a kill)
    lost = publish_line(ws, "alpha", "lost")
    back()
    with caplog.at_level(logging.WARNING):
        SkillRegistry.load(ws)
    assert "is behind git" in caplog.text and lost[:8] in caplog.text and "skillforge.db-wal" in caplog.text
    m = ReleaseStateMachine.open(ws)
    assert [r.version for r in m.store.releases("alpha")] == ["0.1.0"]
    nxt = m.store.release(publish_line(ws, "alpha", "next"))
    assert nxt.version == "0.1.2"  # 0.1.1 is the lost release's, in git
    SkillRegistry.load(ws)  # a higher version is published: the lost release's ref is moved aside, kept
    repo = m.repo
    assert lost not in gitrefs.refs(repo) and lost in gitrefs.refs(repo, gitrefs.UNKNOWN)


def test_a_lost_release_on_head_alone_still_keeps_its_version(ws):
    back = store_as_now(ws)
    lost = publish_line(ws, "alpha", "lost")
    git(ws.root, "update-ref", "-d", gitrefs.RELEASES + lost)  # an older SkillForge: no ref, only the commit on HEAD
    back()
    m = ReleaseStateMachine.open(ws)
    assert gitrefs.versions_in_git(m.store, m.repo, "alpha") == ["0.1.1"]
    assert m.store.release(publish_line(ws, "alpha", "next")).version == "0.1.2"


def test_a_skill_whose_live_commit_is_gone_can_be_reverted_to_an_older_release(ws):
    """git33's leftover: restore_live_folder read the lost live commit first, so `release revert alpha
    0.1.0` failed with 'commit ... is not in the repository' until the folder was published again."""
    lose_alpha_commit(ws)
    back = ReleaseStateMachine.open(ws).revert("alpha", "0.1.0")
    assert back.status is ReleaseStatus.PUBLISHED
    assert "body alpha" in SkillRegistry.load(ws).serve("alpha").body
