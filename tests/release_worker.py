"""Runs the release steps of one skill in a child process and dies where told (used by tests).

`die_at(point)` makes the process it runs in SIGKILL itself right after one named boundary of a
publish or revert (the BOUNDARIES, in the order a publish crosses them); tests call it in a
forked child only.

usage: python release_worker.py WORKSPACE SKILL STOP MODE
  STOP  number of steps to finish before dying: 1 begin, 2 write_commit, 3 append_evaluation
  MODE  kill: SIGKILL itself after STOP steps
        kill-mid-swap: SIGKILL inside write_commit, between the two renames of the folder swap
        kill-after-add: SIGKILL inside write_commit, after `git add` staged the candidate and
                        before `git commit`
        begin: only begin_release, print "ok <id>" or "conflict", after a start barrier file
               (and only once both racers answered)
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import git

import skillforge.library.gitrepo
import skillforge.library.releases
from skillforge.config import Workspace
from skillforge.errors import ReleaseConflict
from skillforge.library.gitrepo import SWAP_DIR, SkillsRepo
from skillforge.library.releases import ReleaseStateMachine
from skillforge.library.store import Store

BOUNDARIES = ("begun", "recorded", "stage-partial", "stage-written", "old-moved", "swapped", "before-add",
              "added", "git-committed", "commit-recorded", "logged", "evaluated", "published")
"""Where a publish (or revert) of a candidate can be cut: after its PREPARING row is inserted;
after the swap's digest is recorded; after the first file of the new folder is written aside;
after the whole new folder is; between the swap's two renames; after the second; once the swap is
done, before `git add` (issue 21 item 3); after `git add`; after `git commit`; after the commit
hash is stored; after the evaluations.jsonl line; after the summary is stored; after the publish
transaction."""


def _git_subcommand(command: object) -> str | None:
    args = [str(a) for a in command] if isinstance(command, list | tuple) else str(command).split()
    return next((a for a in args[1:] if not a.startswith("-")), None)


def die_at(point: str) -> None:
    """Patch this process so that it SIGKILLs itself right after the boundary `point`."""
    if point not in BOUNDARIES:
        raise ValueError(f"unknown boundary {point}")

    def after(owner: object, name: str, label: str, when=lambda *a, **k: True) -> None:  # noqa: ANN001
        real = getattr(owner, name)

        def wrapped(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            out = real(*args, **kwargs)
            if label == point and when(*args, **kwargs):
                os.kill(os.getpid(), signal.SIGKILL)
            return out
        setattr(owner, name, wrapped)

    after(Store, "insert_release", "begun")
    after(Store, "set_writes_folder", "recorded")
    after(os, "fsync", "stage-partial", lambda *a: True)  # write_tree fsyncs each file it writes aside
    after(skillforge.library.gitrepo, "write_tree", "stage-written")
    after(os, "rename", "old-moved", lambda src, dst: f"/{SWAP_DIR}/old-" in str(dst))
    after(os, "rename", "swapped", lambda src, dst: f"/{SWAP_DIR}/stage-" in str(src))
    after(SkillsRepo, "replace_folder", "before-add")
    after(git.cmd.Git, "execute", "added", lambda self, command, *a, **k: _git_subcommand(command) == "add")
    after(git.cmd.Git, "execute", "git-committed", lambda self, command, *a, **k: _git_subcommand(command) in ("commit", "update-ref"))
    after(Store, "set_commit", "commit-recorded")
    after(skillforge.library.releases, "append_jsonl", "logged")
    after(Store, "set_eval_summary", "evaluated")
    after(Store, "publish", "published")


def main() -> None:
    ws_root, skill, stop, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    m = ReleaseStateMachine.open(Workspace.open(ws_root))
    if mode == "begin":
        go = Path(ws_root) / "runs" / "go"
        while not go.exists():
            time.sleep(0.001)
        try:
            answer = f"ok {m.begin_release(skill, triggered_by=f'pid {os.getpid()}').release_id}"
        except ReleaseConflict:
            answer = "conflict"
        # stay alive (holding the release) until every racer has answered: a winner that exited
        # would leave a release the loser may rightly recover as orphaned
        (Path(ws_root) / "runs" / f"answer-{os.getpid()}").write_text(answer)
        deadline = time.monotonic() + 60
        while len(list((Path(ws_root) / "runs").glob("answer-*"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.001)
        print(answer, flush=True)
        return
    folder = m.folder_of(skill)
    files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    files["SKILL.md"] += b"\n- crash candidate line\n"
    if mode == "kill-mid-swap":
        real_rename = os.rename
        calls = []

        def rename(src, dst):  # the 2nd rename of the swap puts the new folder in place
            calls.append(src)
            if len(calls) == 2:
                os.kill(os.getpid(), signal.SIGKILL)
            real_rename(src, dst)

        os.rename = rename
    if mode == "kill-after-add":
        def commit_folders(self, folders, message, **kw):
            self.repo.git.add("-A", "--", *[self.rel(f) for f in folders])
            print("dying", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

        SkillsRepo.commit_folders = commit_folders
    rel = m.begin_release(skill, triggered_by="crash test")
    steps = [lambda: m.write_commit(rel.release_id, files),
             lambda: m.append_evaluation(rel.release_id, {"kind": "crash test"}),
             lambda: m.commit_release(rel.release_id)]
    for step in steps[: stop - 1]:
        step()
    print("dying", rel.release_id, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    main()
