"""Publishes and reverts of one skill racing each other, as separate processes: the version is
chosen inside the transaction that inserts the release (no UNIQUE-constraint internal error); a
command that meets another process's release in flight says so (never `--force` or `watchdog`);
`--version` is compared by semver order; a manual publish stamps metadata.version like evolve."""

from __future__ import annotations

import json
import subprocess
import sys
import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import EXAMPLE_SKILLS, edited, finish_cli, flat, run_cli, start_cli, machine_of

from skillforge.errors import BaseMoved, FolderChanged, SkillFileError
from skillforge.library.stamps import stamp_tag
from skillforge.skill import file as skillfile
from skillforge.skill.tree import Entry, as_tree, read_tree, signature, tree_digest
from skillforge.skill.version import stamped, with_version
from skillforge.state.release import ReleaseStatus

SKILL = "news-digest"
BUSY = "another process is publishing 'news-digest' right now"
MOVED = "the live release of 'news-digest' changed while this publish ran"


@pytest.fixture
def ws(examples_ws: Path) -> Path:
    return examples_ws


def candidate(tmp_path: Path, name: str, line: str) -> Path:
    cand = tmp_path / name / SKILL
    if not cand.exists():
        shutil.copytree(EXAMPLE_SKILLS / SKILL, cand)
    (cand / "SKILL.md").write_text((cand / "SKILL.md").read_text() + f"- {line}\n")
    return cand


def statuses(root: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(root / "runs" / "skillforge.db") as conn:
        return conn.execute("SELECT version, status FROM releases WHERE skill_name = ? ORDER BY rowid", (SKILL,)).fetchall()


def test_the_version_is_chosen_in_the_transaction_that_inserts_the_release(ws):
    """QA's D3, made deterministic: another process publishes between the moment B chose its
    version and B's insert. B chose 1.2.1 outside the transaction and failed at the end with
    `IntegrityError: UNIQUE constraint failed: releases.skill_name, releases.version` (exit 70)."""
    a, b = machine_of(ws), machine_of(ws)
    real_insert = b.store.insert_release

    def insert_after_a_published(*args, **kwargs):
        a.publish(SKILL, edited(a, SKILL, "from A"))  # a whole publish by another owner, in between
        return real_insert(*args, **kwargs)
    b.store.insert_release = insert_after_a_published  # type: ignore[method-assign]
    rel = b.publish(SKILL, edited(b, SKILL, "from B"))
    assert rel.status is ReleaseStatus.PUBLISHED and rel.version == "1.2.2"
    assert statuses(ws) == [("1.2.0", "PUBLISHED"), ("1.2.1", "PUBLISHED"), ("1.2.2", "PUBLISHED")]


def test_a_publish_listed_against_a_release_that_is_no_longer_live_publishes_nothing(ws):
    """QA 18 TRUST-2: two terminals list their changes against 1.2.0; A publishes 1.2.1 between B's
    listing and B's release, and B then landed on top of 1.2.1, undoing A's change without a word.
    Given the base it listed against, B is refused (BaseMoved) and A's release stays live."""
    a, b = machine_of(ws), machine_of(ws)
    listed = b.store.current(SKILL).release_id
    real_insert = b.store.insert_release

    def insert_after_a_published(*args, **kwargs):
        a.publish(SKILL, edited(a, SKILL, "from A"))
        return real_insert(*args, **kwargs)
    b.store.insert_release = insert_after_a_published  # type: ignore[method-assign]
    with pytest.raises(BaseMoved, match=r"changed while this publish ran .* nothing was published"):
        b.publish(SKILL, edited(b, SKILL, "from B"), shown_base=listed)
    assert statuses(ws) == [("1.2.0", "PUBLISHED"), ("1.2.1", "PUBLISHED"), ("1.2.2", "ABANDONED")]
    live = a.store.current(SKILL)
    assert live.version == "1.2.1" and "from A" in (ws / "skills" / SKILL / "SKILL.md").read_text()
    b.store.insert_release = real_insert  # type: ignore[method-assign]
    assert b.publish(SKILL, edited(b, SKILL, "from B"), shown_base=live.release_id).version == "1.2.2"  # an abandoned version is free


@pytest.mark.parametrize("command", ["publish", "revert"])
@pytest.mark.parametrize("stage", ["begun", "swapped"])
def test_a_release_in_flight_in_a_live_process_is_named(ws, tmp_path, command, stage):
    """While this (live) process holds a PREPARING release of the skill (just begun, or with its
    new files swapped into the folder but not yet committed), a publish or revert in another
    process says so: it said `finish it or run skillforge watchdog`, or `unpublished changes ...
    pass --force` for the files of the swap in flight."""
    m = machine_of(ws)
    if command == "revert":
        m.publish(SKILL, edited(m, SKILL, "1.2.1"))
    rel = m.begin_release(SKILL)
    folder = ws / "skills" / SKILL
    if stage == "swapped":
        files = edited(m, SKILL, "in flight")
        m.store.set_writes_folder(rel.release_id, tree_digest(signature({k: Entry(v) for k, v in files.items()})))
        m.repo.replace_folder(folder, files)
    args = (["release", "publish", SKILL, "--from", str(candidate(tmp_path, "cand", "mine"))] if command == "publish"
            else ["release", "revert", SKILL, "1.2.0"])
    proc = run_cli([*args, "-w", str(ws)], ok=2)
    said = flat(proc.stderr)
    assert BUSY in said and rel.release_id[:8] in said and "try again when it ends" in said, said
    assert "--force" not in said and "watchdog" not in said and "unpublished" not in said
    assert m.abandon(rel.release_id)
    run_cli([*args, "-w", str(ws)])  # once it is over, the same command goes through


def test_concurrent_publishes_never_end_in_an_internal_error(ws, tmp_path):
    """QA's repro through the CLI: two `release publish --from` of one skill at once, again and
    again. Each either publishes (a version of its own), is told another process is publishing, or
    (QA 18 TRUST-2) that the live release changed while it ran; nothing is left PREPARING and the
    folder holds the live release's bytes."""
    published = 0
    for i in range(8):
        procs = [start_cli(["release", "publish", SKILL, "--from", str(candidate(tmp_path, side, f"{side}{i}")),
                            "-w", str(ws)]) for side in ("ra", "rb")]
        for proc in procs:
            done = finish_cli(proc, ok=None)
            assert done.returncode in (0, 2), done.stderr
            if done.returncode == 2:
                assert BUSY in flat(done.stderr) or MOVED in flat(done.stderr), done.stderr
            published += done.returncode == 0
    rows = statuses(ws)
    assert not [r for r in rows if r[1] == "PREPARING"]
    versions = [v for v, s in rows if s == "PUBLISHED"]
    assert len(versions) == len(set(versions)) == published + 1
    m = machine_of(ws)
    assert read_tree(ws / "skills" / SKILL) == m.tree_of(m.store.current(SKILL))


def test_version_refusal_names_the_highest_by_semver(ws, tmp_path):
    """`max()` over strings named 1.9.0 above 1.10.0, and 1.3.0-rc1 above 1.3.0."""
    for i, version in enumerate(["1.9.0", "1.10.0"]):
        run_cli(["release", "publish", SKILL, "--from", str(candidate(tmp_path, "c", f"v{i}")), "--version", version,
                 "-w", str(ws)])
    proc = run_cli(["release", "publish", SKILL, "--from", str(candidate(tmp_path, "c", "late")), "--version", "1.5.0",
                    "-w", str(ws)], ok=2)
    assert "is not above 1.10.0, the highest version published" in flat(proc.stderr), proc.stderr
    for i, version in enumerate(["1.13.0-rc1", "1.13.0"]):
        run_cli(["release", "publish", SKILL, "--from", str(candidate(tmp_path, "c", f"r{i}")), "--version", version,
                 "-w", str(ws)])
    proc = run_cli(["release", "publish", SKILL, "--from", str(candidate(tmp_path, "c", "rc")), "--version", "1.12.0",
                    "-w", str(ws)], ok=2)
    assert "is not above 1.13.0, the highest version published " in flat(proc.stderr) + " ", proc.stderr


def test_a_whole_version_names_that_version_or_its_build_not_a_prerelease(ws, tmp_path):
    """QA: `release revert NAME 1.0.0` with 1.0.0-rc.1 and 1.0.0+build published (and no 1.0.0) was
    "ambiguous ... give a version". A whole version is that version, or it with build metadata."""
    for i, version in enumerate(["2.0.0-rc.1", "2.0.0+build", "2.0.1"]):
        run_cli(["release", "publish", SKILL, "--from", str(candidate(tmp_path, "c", f"b{i}")), "--version", version,
                 "-w", str(ws)])
    done = run_cli(["release", "revert", SKILL, "2.0.0", "-w", str(ws)])
    assert "now serves" in done.stdout and "ambiguous" not in done.stderr
    assert machine_of(ws).store.current(SKILL).triggered_by.startswith("revert to 2.0.0+build")  # type: ignore[union-attr]
    gone = run_cli(["release", "revert", SKILL, "2.5.0", "-w", str(ws)], ok=2)
    assert "no release 2.5.0 of skill" in flat(gone.stderr)
    rc = run_cli(["release", "revert", SKILL, "2.0.0-rc.1", "-w", str(ws)])  # a pre-release by its own name
    assert "now serves" in rc.stdout


@pytest.mark.parametrize("source", ["from", "folder"])
def test_a_manual_publish_stamps_metadata_version(ws, tmp_path, source):
    """`release publish --version 5.0.0` left `metadata: {version: "1.2.0"}` in the stored SKILL.md:
    `skills show` and `export --strict` said 1.2.0. Now the bytes say 5.0.0, the folder holds them
    (not `modified`), and a --from folder is left as it was."""
    folder = ws / "skills" / SKILL
    if source == "from":
        cand = candidate(tmp_path, "cand", "a new line")
        given = read_tree(cand)
        run_cli(["release", "publish", SKILL, "--from", str(cand), "--version", "5.0.0", "-w", str(ws)])
        assert read_tree(cand) == given
    else:
        (folder / "SKILL.md").write_text((folder / "SKILL.md").read_text() + "- my edit\n")
        run_cli(["release", "publish", SKILL, "--version", "5.0.0", "-w", str(ws)])
    shown = run_cli(["skills", "show", SKILL, "-w", str(ws)]).stdout
    assert 'version: "5.0.0"' in shown and "1.2.0" not in shown.split("\n---")[0]
    assert skillfile.parse(shown).version == "5.0.0"
    assert skillfile.parse(run_cli(["skills", "export", SKILL, "--strict", "-w", str(ws)]).stdout).version == "5.0.0"
    assert (folder / "SKILL.md").read_text() == shown
    listed = json.loads(run_cli(["skills", "list", "-w", str(ws), "--json"]).stdout)["skills"]
    assert [s["worktree"] for s in listed if s["name"] == SKILL] == ["clean"]
    run_cli(["release", "revert", SKILL, "1.2.0", "-w", str(ws)])  # no unpublished changes to refuse


def test_export_says_the_live_version_after_a_revert(ws, tmp_path):
    """QA: a revert serves the old release's commit byte for byte, so its SKILL.md keeps the old
    metadata.version; `skills export` printed it although another version is live."""
    run_cli(["release", "publish", SKILL, "--from", str(candidate(tmp_path, "c", "v")), "--version", "3.0.0",
             "-w", str(ws)])
    run_cli(["release", "revert", SKILL, "1.2.0", "-w", str(ws)])  # served as 3.0.1, with 1.2.0's bytes
    for strict in ([], ["--strict"]):
        text = run_cli(["skills", "export", SKILL, *strict, "-w", str(ws)]).stdout
        assert "3.0.1" in text and "1.2.0" not in text, text[:300]
    assert "1.2.0" in run_cli(["skills", "show", SKILL, "-w", str(ws)]).stdout  # the stored bytes stay as they are


@pytest.mark.parametrize("when", ["replace_folder", "commit_folders"])
def test_an_edit_made_while_a_publish_writes_the_folder_is_never_lost_or_committed_unseen(ws, when, caplog):
    """QA 18 TRUST-4/5: a hand edit made while `publish --from` copied the candidate was lost (the
    old folder, edit and all, was swapped out), and one made after the swap went into the release's
    commit without being listed or scanned. Either is FolderChanged now: nothing committed, the
    live release stays, and the edit is left in the folder."""
    m = machine_of(ws)
    live = m.store.current(SKILL)
    head = m.repo.head()
    folder = m.folder_of(SKILL)
    real = getattr(m.repo, when)

    def edit_first(*args, **kwargs):
        with open(folder / "SKILL.md", "a", encoding="utf-8") as f:
            f.write("- a person's edit, saved by an editor meanwhile\n")
        return real(*args, **kwargs)
    setattr(m.repo, when, edit_first)
    with pytest.raises(FolderChanged, match="changed while the release"):
        m.publish(SKILL, edited(m, SKILL, "the candidate"), shown_base=live.release_id)
    assert m.store.current(SKILL).release_id == live.release_id and m.repo.head() == head
    assert "a person's edit" in (folder / "SKILL.md").read_text()
    assert statuses(ws)[-1][1] == "ABANDONED"
    assert m.repo.staged_signature(folder) == signature(m.repo.tree_at(head, f"skills/{SKILL}"))
    if when == "replace_folder":  # nothing was swapped: no word of the release's never-published changes (QA 21)
        assert "never-published" not in caplog.text, caplog.text


def test_a_dead_publishs_half_written_skill_md_is_removed_not_published(ws):
    """QA 18 TRUST-1: a working-tree publish killed between writing SKILL.md's temp file (its new
    metadata.version) and renaming it left `.SKILL.md.<hex>.tmp` in the folder; the next publish
    listed it as added and committed it into the release. The recovery, run before the listing,
    removes it and says so; the person's edit stays and is what is published."""
    begin = ("from skillforge.config import Workspace; from skillforge.library.releases import ReleaseStateMachine;"
             f"ReleaseStateMachine.open(Workspace.open({str(ws)!r})).begin_release({SKILL!r})")
    subprocess.run([sys.executable, "-c", begin], check=True)  # its process is gone: an orphan
    folder = ws / "skills" / SKILL
    (folder / "SKILL.md").write_text((folder / "SKILL.md").read_text() + "- the person's edit\n")
    [dead] = machine_of(ws).store.preparing_of(SKILL)
    stamped_text = with_version((folder / "SKILL.md").read_text(), dead.version)
    own = f".SKILL.md.{stamp_tag(dead.release_id)}.tmp"  # the name its stamp writes
    (folder / own).write_text(stamped_text[: len(stamped_text) // 2])  # cut short by the kill
    (folder / ".SKILL.md.c0ffee00.tmp").write_text("a person's own notes, under a name like the tool's")  # QA 20 TRUST-2
    (folder / ".SKILL.md.0badcafe.tmp").write_text(stamped_text[:40])  # QA 21 TRUST-6: the stamp's text, not its name
    done = run_cli(["release", "publish", SKILL, "-w", str(ws)])
    assert own not in done.stdout and "SKILL.md changed" in done.stdout, done.stdout
    assert f"removed {own}" in flat(done.stderr) and "c0ffee00" not in done.stderr and "0badcafe" not in done.stderr
    assert not (folder / own).exists() and "the person's edit" in (folder / "SKILL.md").read_text()
    assert (folder / ".SKILL.md.c0ffee00.tmp").read_text().startswith("a person's own notes")
    assert (folder / ".SKILL.md.0badcafe.tmp").read_text() == stamped_text[:40]
    m = machine_of(ws)
    assert sorted(m.tree_of(m.store.current(SKILL))) == sorted(p.name for p in folder.iterdir() if p.is_file())


def test_publishing_the_live_release_again_from_a_folder_is_nothing_to_publish(ws, tmp_path):
    """QA 18 MESSAGE-2: `publish --from DIR` run again (the retry after a kill) made a second release
    whose only difference was the metadata.version the tool itself writes."""
    cand = candidate(tmp_path, "c", "one more rule")
    run_cli(["release", "publish", SKILL, "--from", str(cand), "-w", str(ws)])
    again = run_cli(["release", "publish", SKILL, "--from", str(cand), "-w", str(ws)], ok=2)
    assert "nothing to publish" in flat(again.stderr) and "metadata.version aside" in flat(again.stderr)
    assert "SKILL.md changed" not in again.stdout  # QA 20 MESSAGE-3: it listed a change, then said there was none
    assert [s for _, s in statuses(ws)].count("PUBLISHED") == 2


@pytest.mark.parametrize("edit", ["chmod", "delete"])
def test_an_edit_after_the_staged_check_is_not_in_the_commit(ws, edit, monkeypatch):
    """QA 20 TRUST-1: `git commit -- PATH` reads the folder again after the staged check, so a chmod
    or a deletion made in between went into the release unseen. The tree checked is the tree
    committed; the edit stays in the folder, an unpublished change."""
    m = machine_of(ws)
    folder = m.folder_of(SKILL)
    victim = folder / "SKILL.md"
    import git

    real = git.cmd.Git.execute

    def edit_at_write_tree(self, command, *args, **kwargs):
        if list(command)[:2] == ["git", "write-tree"]:
            victim.chmod(0o755) if edit == "chmod" else victim.unlink()
        return real(self, command, *args, **kwargs)
    monkeypatch.setattr(git.cmd.Git, "execute", edit_at_write_tree)
    cand = edited(m, SKILL, "the candidate")
    rel = m.publish(SKILL, cand, shown_base=m.store.current(SKILL).release_id)
    committed = m.repo.tree_at(rel.commit_hash, rel.skill_path)
    assert signature(committed) == signature(stamped(as_tree(cand), rel.version))  # the candidate, as checked
    assert signature(committed)["SKILL.md"][0] == 0o100644
    assert m.repo.staged_signature(folder) == signature(committed)  # git's index holds what was committed
    assert (victim.exists() and victim.stat().st_mode & 0o111) if edit == "chmod" else not victim.exists()


def test_a_file_deleted_while_a_working_tree_publish_reads_it_is_folder_changed(ws, monkeypatch):
    """QA 20 MESSAGE-4: a file deleted between listing the folder and reading it gave a raw
    `field 'path': cannot read: No such file or directory`; it now says what happened."""
    import skillforge.skill.tree as tree_mod

    m = machine_of(ws)
    folder = m.folder_of(SKILL)
    (folder / "notes.md").write_text("a note beside the skill\n")
    m.publish(SKILL)
    (folder / "SKILL.md").write_text((folder / "SKILL.md").read_text() + "- an edit to publish\n")
    real = tree_mod._read_regular

    def deleted_first(path, *args, **kwargs):
        if str(path).endswith("notes.md"):
            Path(path).unlink(missing_ok=True)
        return real(path, *args, **kwargs)
    monkeypatch.setattr(tree_mod, "_read_regular", deleted_first)
    live = m.store.current(SKILL)
    with pytest.raises(SkillFileError, match="notes.md: field 'path': was deleted while the folder was being read"):
        m.publish(SKILL)
    assert m.store.current(SKILL).release_id == live.release_id


@pytest.mark.parametrize("edit", ["chmod", "new file"])
def test_a_working_tree_edit_after_the_listing_is_folder_changed(ws, edit):
    """QA 21 TRUST-7: a working-tree publish committed the folder as it was at commit time, so a
    chmod or a symlink retarget made after the listing went in unlisted. Given the tree it listed
    (as `release publish` gives it), an edit since is FolderChanged."""
    m = machine_of(ws)
    folder = m.folder_of(SKILL)
    (folder / "SKILL.md").write_text((folder / "SKILL.md").read_text() + "- an edit to publish\n")
    shown = read_tree(folder)
    if edit == "chmod":
        (folder / "SKILL.md").chmod(0o755)
    else:
        (folder / "later.md").write_text("written after the listing\n")
    live = m.store.current(SKILL)
    with pytest.raises(FolderChanged, match="changed while the release was being written"):
        m.publish(SKILL, shown_base=live.release_id, listed=shown)
    assert m.store.current(SKILL).release_id == live.release_id
    rel = m.publish(SKILL, shown_base=live.release_id, listed=read_tree(folder))  # listed again: published
    assert rel.version == "1.2.1"
