"""ReleaseStateMachine: the four steps, crashes between them, concurrency, idempotency, revert."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import edited

from skillforge.skill import file as skillfile
from skillforge.errors import ReleaseConflict, ReleaseStateError, SkillFileError
from skillforge.library.gitrepo import OLD_PREFIX, SWAP_DIR, read_folder
from skillforge.journal import read_jsonl
from skillforge.library.registry import SkillRegistry
from skillforge.library.orphans import in_flight
from skillforge.library.releases import ReleaseStateMachine
from skillforge.rules.watchdog import IN_FLIGHT_HOURS
from skillforge.state.release import LineageKind, ReleaseLevel, ReleaseStatus

WORKER = Path(__file__).with_name("release_worker.py")
SKILL = "news-digest"


def leftovers(m: ReleaseStateMachine) -> list[str]:
    swap = m.ws.skills_dir / SWAP_DIR
    return sorted(p.name for p in swap.iterdir()) if swap.exists() else []


def backdate(m: ReleaseStateMachine, release_id: str, hours: float) -> None:
    """Make a PREPARING release `hours` old (a person's shell could; the store's trigger guards
    only rows that left PREPARING)."""
    m.store.conn.execute("UPDATE releases SET created_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?) "
                         "WHERE release_id = ?", (f"-{hours * 3600:.0f} seconds", release_id))


def assert_recovers(m: ReleaseStateMachine, old_id: str, old_files: dict[str, bytes]) -> None:
    """After a crash: the old release is live; the watchdog abandons the orphan and gives the
    folder its published bytes back; a new release can begin and publish. An orphan this live
    process left open is swept once it is past IN_FLIGHT_HOURS; a dead process's at once."""
    assert m.store.current(SKILL).release_id == old_id
    [orphan] = [r for r in m.store.releases(SKILL) if r.status is ReleaseStatus.PREPARING]
    if m.owner.alive(orphan.owner):
        assert m.watchdog_sweep(0) == []  # maybe still being written: a publish takes seconds
        backdate(m, orphan.release_id, IN_FLIGHT_HOURS + 0.01)  # float days: exactly 15 min may read 14.99…
    assert SkillRegistry.load(m.ws).use_skill(SKILL, "after crash") == \
        skillfile.split_frontmatter(old_files["SKILL.md"].decode())[1]
    swept = m.watchdog_sweep(0)
    assert [r.release_id for r in swept] == [orphan.release_id]
    assert m.store.release(orphan.release_id).status is ReleaseStatus.ABANDONED
    assert read_folder(m.folder_of(SKILL)) == old_files
    assert leftovers(m) == []
    rel = m.publish(SKILL, edited(m, SKILL, "after recovery"))
    assert m.store.current(SKILL).release_id == rel.release_id


def test_four_steps_publish(machine):
    m = machine
    old = m.store.current(SKILL)
    rel = m.begin_release(SKILL, level=ReleaseLevel.L1, triggered_by="test")
    assert rel.status is ReleaseStatus.PREPARING and rel.version == "1.2.1"
    sha = m.write_commit(rel.release_id, edited(m, SKILL, "new rule"))
    assert m.repo.head() == sha and m.store.release(rel.release_id).commit_hash == sha
    assert m.store.current(SKILL).release_id == old.release_id  # not live before commit_release
    m.append_evaluation(rel.release_id, {"eval_set": "dev", "effect_score": 0.8})
    [line] = read_jsonl(m.ws.evaluations_log)
    assert line["release_id"] == rel.release_id and line["effect_score"] == 0.8
    done = m.commit_release(rel.release_id)
    assert done.status is ReleaseStatus.PUBLISHED and done.eval_summary == {"eval_set": "dev", "effect_score": 0.8}
    assert m.store.current(SKILL).release_id == rel.release_id
    assert [(link.parent, link.kind) for link in m.store.lineage(rel.release_id)] == [(old.release_id, LineageKind.FIX)]


def test_commit_release_twice_is_a_noop_with_the_same_answer(machine):
    m = machine
    rel = m.begin_release(SKILL)
    m.write_commit(rel.release_id, edited(m, SKILL, "x"))
    first = m.commit_release(rel.release_id)
    second = m.commit_release(rel.release_id)
    assert first == second
    rows = m.store.conn.execute("SELECT count(*) FROM releases WHERE release_id = ? AND status = 'PUBLISHED'",
                                (rel.release_id,)).fetchone()[0]
    assert rows == 1 and len([r for r in m.store.releases(SKILL) if r.status is ReleaseStatus.PUBLISHED]) == 2


@pytest.mark.parametrize("stop", [1, 2, 3])
def test_exception_between_steps_leaves_old_release_live(machine, stop):
    m = machine
    old = m.store.current(SKILL)
    old_files = read_folder(m.folder_of(SKILL))
    rel = m.begin_release(SKILL)
    steps = [lambda: m.write_commit(rel.release_id, edited(m, SKILL, "candidate")),
             lambda: m.append_evaluation(rel.release_id, {"kind": "test"})]
    with pytest.raises(RuntimeError):
        for step in steps[: stop - 1]:
            step()
        raise RuntimeError("crash between steps")
    folder = m.folder_of(SKILL)
    assert leftovers(m) == []
    skillfile.load_folder(folder, m.ws.root)  # whole files only: the folder still loads
    with pytest.raises(ReleaseConflict):
        m.begin_release(SKILL)
    assert_recovers(m, old.release_id, old_files)


@pytest.mark.parametrize("stop,mode", [(1, "kill"), (2, "kill"), (3, "kill"), (2, "kill-mid-swap")])
def test_sigkill_between_steps(machine, stop, mode):
    m = machine
    old = m.store.current(SKILL)
    old_files = read_folder(m.folder_of(SKILL))
    proc = subprocess.run([sys.executable, str(WORKER), str(m.ws.root), SKILL, str(stop), mode],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    if mode == "kill":
        assert leftovers(m) == []
        skillfile.load_folder(m.folder_of(SKILL), m.ws.root)
    else:  # killed between the two renames of the folder swap: the old folder waits aside, whole
        assert not m.folder_of(SKILL).exists() and any(n.startswith(OLD_PREFIX) for n in leftovers(m))
    assert_recovers(m, old.release_id, old_files)


def test_watchdog_keeps_a_persons_edit(machine):
    m = machine
    rel = m.begin_release(SKILL)
    m.write_commit(rel.release_id, edited(m, SKILL, "candidate"))
    (m.folder_of(SKILL) / "SKILL.md").write_text((m.folder_of(SKILL) / "SKILL.md").read_text() + "\nhand edit\n")
    mine = read_folder(m.folder_of(SKILL))
    backdate(m, rel.release_id, 1.0)  # left open by this live process an hour ago
    assert m.watchdog_sweep(0)
    assert read_folder(m.folder_of(SKILL)) == mine


def test_watchdog_never_sweeps_a_publish_in_flight(machine):
    """`watchdog --hours 0` (what a listing offers for a dead publish) leaves a live process's
    release alone while it may still be writing it, and sweeps it once it is past IN_FLIGHT_HOURS."""
    m = machine
    rel = m.begin_release(SKILL)
    assert m.watchdog_sweep(0) == []
    assert [r.release_id for r in in_flight(m.store, m.owner, 0)] == [rel.release_id]
    assert in_flight(m.store, m.owner, 1.0) == []  # younger than --hours: not kept for being live
    backdate(m, rel.release_id, IN_FLIGHT_HOURS * 0.9)
    assert m.watchdog_sweep(0) == [] and m.store.release(rel.release_id).status is ReleaseStatus.PREPARING
    backdate(m, rel.release_id, IN_FLIGHT_HOURS + 0.01)  # float days: exactly 15 min may read 14.99…
    assert [r.release_id for r in m.watchdog_sweep(0)] == [rel.release_id]
    assert in_flight(m.store, m.owner, 0) == []


def test_watchdog_spares_fresh_releases(machine):
    m = machine
    rel = m.begin_release(SKILL)
    assert m.watchdog_sweep(1.0) == []
    assert m.store.release(rel.release_id).status is ReleaseStatus.PREPARING


def test_concurrent_begin_exactly_one_wins(machine):
    m = machine
    procs = [subprocess.Popen([sys.executable, str(WORKER), str(m.ws.root), SKILL, "0", "begin"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    (m.ws.runs_dir / "go").touch()
    answers = sorted(p.communicate(timeout=60)[0].split()[0] for p in procs)
    assert answers == ["conflict", "ok"], answers
    assert len([r for r in m.store.releases(SKILL) if r.status is ReleaseStatus.PREPARING]) == 1


def test_revert_then_republish_keeps_linear_complete_history(machine):
    m = machine
    imported = m.store.current(SKILL)
    v2 = m.publish(SKILL, edited(m, SKILL, "second version"))
    reverted = m.revert(SKILL, imported.release_id[:8])
    assert reverted.commit_hash == imported.commit_hash and reverted.version == "1.2.2"
    assert read_folder(m.folder_of(SKILL)) == m.repo.folder_at(imported.commit_hash, imported.skill_path)
    reg = SkillRegistry.load(m.ws)
    assert "second version" not in reg.use_skill(SKILL, "t")
    v4 = m.publish(SKILL, edited(m, SKILL, "fourth version"))
    history = m.store.releases(SKILL)
    assert [r.release_id for r in history] == [imported.release_id, v2.release_id, reverted.release_id, v4.release_id]
    assert [r.version for r in history] == ["1.2.0", "1.2.1", "1.2.2", "1.2.3"]
    assert all(r.status is ReleaseStatus.PUBLISHED for r in history)
    assert [r.published_at for r in history] == sorted(r.published_at for r in history)
    kinds = [m.store.lineage(r.release_id)[0].kind for r in history]
    assert kinds == [LineageKind.IMPORTED, LineageKind.FIX, LineageKind.REVERT, LineageKind.FIX]
    assert m.store.lineage(reverted.release_id)[0].parent == imported.release_id
    assert m.store.lineage(v4.release_id)[0].parent == reverted.release_id
    # every release's bytes are still in git: history was never rewritten
    assert b"second version" in m.repo.read(v2.commit_hash, f"{v2.skill_path}/SKILL.md")
    ancestors = m.repo.repo.git.rev_list(v4.commit_hash).split()
    assert v2.commit_hash in ancestors and imported.commit_hash in ancestors
    assert reg.use_skill(SKILL, "t").rstrip().endswith("fourth version")


def test_revert_refuses_current_and_unpublished(machine):
    m = machine
    cur = m.store.current(SKILL)
    with pytest.raises(ReleaseStateError, match="already serves"):
        m.revert(SKILL, cur.release_id)
    rel = m.begin_release(SKILL)
    m.abandon(rel.release_id)
    with pytest.raises(ReleaseStateError, match="ABANDONED"):
        m.revert(SKILL, rel.release_id)


def test_bad_candidate_writes_nothing(machine):
    m = machine
    before = read_folder(m.folder_of(SKILL))
    head = m.repo.head()
    rel = m.begin_release(SKILL)
    bad = {"SKILL.md": b"---\nname: news-digest\n---\nno description\n"}
    with pytest.raises(SkillFileError, match="description"):
        m.write_commit(rel.release_id, bad)
    escape = {**edited(m, SKILL, "x"), "../evil/SKILL.md": b"boo"}
    with pytest.raises(SkillFileError, match="escapes"):
        m.write_commit(rel.release_id, escape)
    wrong_name = {"SKILL.md": edited(m, SKILL, "x")["SKILL.md"].replace(b"name: news-digest", b"name: other")}
    with pytest.raises(SkillFileError, match="folder"):
        m.write_commit(rel.release_id, wrong_name)
    assert read_folder(m.folder_of(SKILL)) == before and m.repo.head() == head
    assert not (m.ws.skills_dir.parent / "evil").exists()


def test_steps_on_a_closed_release_are_refused(machine):
    m = machine
    rel = m.begin_release(SKILL)
    m.abandon(rel.release_id)
    for step in (lambda: m.write_commit(rel.release_id, edited(m, SKILL, "x")),
                 lambda: m.append_evaluation(rel.release_id, {}),
                 lambda: m.commit_release(rel.release_id)):
        with pytest.raises(ReleaseStateError):
            step()


def test_explicit_version_must_be_semver_and_above_published(machine):
    m = machine
    with pytest.raises(ReleaseStateError, match="semver"):
        m.begin_release(SKILL, version="v2")
    with pytest.raises(ReleaseStateError, match="above"):
        m.begin_release(SKILL, version="1.0.0")
    assert m.begin_release(SKILL, version="2.0.0").version == "2.0.0"


def test_import_reports_bad_skills_and_imports_good_ones(workspace):
    m = ReleaseStateMachine.open(workspace)
    for name, text in (("good-one", "---\nname: good-one\ndescription: d\n---\nbody\n"),
                       ("bad-one", "---\nname: Bad\ndescription: d\n---\nbody\n")):
        (workspace.skills_dir / name).mkdir()
        (workspace.skills_dir / name / "SKILL.md").write_text(text)
    result = m.import_skills(skillfile.scan(workspace.skills_dir, workspace.root))
    assert [r.skill_name for r in result.imported] == ["good-one"]
    assert result.imported[0].version == "0.1.0"
    assert [e.field for e in result.errors] == ["name"]
    again = m.import_skills(skillfile.scan(workspace.skills_dir, workspace.root))
    assert again.imported == [] and again.skipped == ["good-one"]
