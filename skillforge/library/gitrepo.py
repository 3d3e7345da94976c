"""The git repository that holds the bytes of every release (gitpython).

Writes to a skill folder are crash-safe: the new content is built in a hidden sibling folder and
swapped in with two renames, so a folder is always either wholly old or wholly new. `recover()`
finishes or undoes a swap that a killed process left half-way.
"""

from __future__ import annotations

import binascii
import fcntl
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import TypeVar

import git

from skillforge.errors import FolderChanged, GitError, NotWritable
from skillforge.library.gitlocks import OUR_LOCK, clear_stale_locks
from skillforge.safewrite import not_writable
from skillforge.skill.tree import (Entry, FileMode, Files, Tree, as_tree, read_tree, safe_relpath, signature, tree_digest,
                                   write_tree)

SWAP_DIR = ".sf-swap"
"""Hidden sibling folder of the skill folders where swaps are built; recover() only lists it."""
STAGE_PREFIX = "stage-"
OLD_PREFIX = "old-"
log = logging.getLogger(__name__)
T = TypeVar("T")
_READ_ERRORS = (git.GitError, ValueError, OSError, KeyError, AssertionError)
"""What gitpython raises when its persistent cat-file process died (say, from a Ctrl-C)."""


def _says_missing(e: ValueError) -> bool:
    """Whether gitpython's ValueError is cat-file's answer "<name> missing" (or "ambiguous": no
    such object), not a dead cat-file process (which answers nothing: "SHA is empty ...")."""
    return str(e).rstrip().endswith((" missing'", " ambiguous'"))
_IDENTITY = {"GIT_AUTHOR_NAME": "SkillForge", "GIT_AUTHOR_EMAIL": "skillforge@localhost",
             "GIT_COMMITTER_NAME": "SkillForge", "GIT_COMMITTER_EMAIL": "skillforge@localhost"}


def probe_writable(folder: Path) -> None:
    """Create and remove a file in `folder`: NotWritable unless new files can really be made there
    (this also fails for root on a read-only mount, where permission bits do not)."""
    probe = folder / f".sf-probe-{uuid.uuid4().hex[:8]}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise NotWritable(f"cannot write in {folder}: {e.strerror or e}") from None


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass  # not empty (another skill's swap, or a leftover for recover) or already gone


def read_folder(folder: Path) -> dict[str, bytes]:
    """The bytes of every regular file under `folder` (relative posix path -> bytes); empty if
    missing. Symlinks are not followed (nor listed); `read_tree` gives modes and links too."""
    return {rel: e.data for rel, e in read_tree(folder, check=False).items() if e.mode is not FileMode.SYMLINK}


def folder_digest(folder: Path) -> str:
    """The tree digest of what `folder` holds now, read as it is (links never followed)."""
    return tree_digest(signature(read_tree(folder, check=False)))


class SkillsRepo:
    """The repository containing the workspace's skills/ folder."""

    def __init__(self, skills_dir: Path) -> None:
        try:
            self.repo = git.Repo(skills_dir, search_parent_directories=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise GitError(f"{skills_dir} is not inside a git repository; run `skillforge init`") from None
        self.workdir = Path(self.repo.working_tree_dir or skills_dir).resolve()
        self._env = self._identity_env()

    def _identity_env(self) -> dict[str, str]:
        reader = self.repo.config_reader()
        has_name = reader.has_option("user", "name")
        has_email = reader.has_option("user", "email")
        if has_name and has_email or os.environ.get("GIT_AUTHOR_NAME"):
            return {}
        return dict(_IDENTITY)

    def rel(self, path: Path) -> str:
        return Path(path).resolve().relative_to(self.workdir).as_posix()

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Serialise our git writes across processes (git's own index.lock fails instead of waiting)."""
        path = Path(self.repo.git_dir) / OUR_LOCK
        probe_writable(path.parent)  # git writes its index and objects here: refuse before any step begins
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise not_writable(path, e) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            clear_stale_locks(Path(self.repo.git_dir), Path(self.repo.common_dir))
            yield
        finally:
            os.close(fd)

    def check_writable(self, *folders: Path) -> None:
        """NotWritable unless the git folder and each of `folders` accept new files. Run before a
        release begins, so that a read-only workspace is refused with nothing recorded."""
        for folder in (Path(self.repo.git_dir), *folders):
            probe_writable(folder)

    def missing_commits(self, commits: Iterable[str]) -> list[str]:
        """The hashes in `commits` that this repository does not hold as commits (say, after its
        .git was deleted and re-created), in the order given."""
        def kind_of(sha: str) -> str | None:
            try:
                kind = self.repo.git.get_object_header(sha)[1]
                return kind.decode("ascii") if isinstance(kind, bytes) else str(kind)
            except ValueError as e:
                if _says_missing(e):
                    return None
                raise  # cat-file died (a Ctrl-C): retried by _with_fresh_git, never read as "missing"

        missing = []
        for sha in dict.fromkeys(commits):
            if self._with_fresh_git(f"commit {sha[:10]}", lambda sha=sha: kind_of(sha)) != "commit":
                missing.append(sha)
        return missing

    def head(self) -> str | None:
        """HEAD's commit hash, None in a repository without commits.

        gitpython answers ValueError both for an unborn HEAD and when its persistent cat-file
        process died under the read (a Ctrl-C reaches the whole process group, and a process
        killed after the request was written answers nothing). Taking the second for the first
        made a Ctrl-C'd revert un-stage its whole skill folder (`unstage` saw no HEAD and ran
        `git rm --cached`). So any failure is decided again by a fresh `git rev-parse`."""
        try:
            return self.repo.head.commit.hexsha
        except (ValueError, OSError, git.GitError):
            self.repo.git.clear_cache()
        status, out, err = self.repo.git.execute(["git", "rev-parse", "--verify", "--quiet", "HEAD^{commit}"],
                                                 with_extended_output=True, with_exceptions=False)
        if status == 0 and out.strip():
            return out.strip()
        if status == 1 and not err.strip():
            return None  # no commits yet
        raise GitError(f"cannot read HEAD: {err.strip() or f'git rev-parse exited {status}'}")

    # ---- reading bytes at a commit ------------------------------------------------------
    def _with_fresh_git(self, what: str, fn: Callable[[], T]) -> T:
        """Run a read; if git's persistent cat-file process died under it (a Ctrl-C reaches the
        whole process group), restart it once and retry."""
        try:
            return fn()
        except _READ_ERRORS:
            self.repo.git.clear_cache()
        try:
            return fn()
        except _READ_ERRORS as e:
            raise GitError(f"cannot read {what}: {e}") from None

    def read(self, commit: str, path: str) -> bytes:
        """The bytes of `path` at `commit`, through git's persistent cat-file process."""
        try:
            _, kind, _, data = self._with_fresh_git(f"{path} at {commit[:10]}",
                                                    lambda: self.repo.git.get_object_data(f"{commit}:{path}"))
        except GitError:
            if self.missing_commits([commit]):
                raise GitError(f"cannot read {path}: commit {commit[:10]} is missing from the repository "
                               "(history rewritten and garbage-collected)") from None
            raise
        if kind not in (b"blob", "blob"):
            raise GitError(f"{path} at {commit[:10]} is a {kind}, not a file")
        return data

    def tree_at(self, commit: str, folder_rel: str, *, missing_ok: bool = False) -> Tree:
        """Every file under `folder_rel` at `commit`, with git's modes; symlinks as SYMLINK entries
        holding their target. A missing folder is GitError, or {} with `missing_ok`."""
        def load() -> Tree | None:
            try:  # cat-file resolves commit:path in C; parsing skills/ (1000 entries) in Python is slow
                hexsha, kind, _ = self.repo.git.get_object_header(f"{commit}:{folder_rel}")
            except ValueError as e:
                if not _says_missing(e):
                    raise  # cat-file died: _with_fresh_git retries
                try:
                    self.repo.git.get_object_header(commit)
                except ValueError as e2:
                    if not _says_missing(e2):
                        raise
                    raise GitError(f"commit {commit[:10]} is not in the repository (history rewritten and "
                                   "garbage-collected?)") from None
                return None
            if kind not in ("tree", b"tree"):
                raise GitError(f"{folder_rel} at {commit[:10]} is a {kind!s}, not a folder")
            out: Tree = {}
            for b in git.Tree(self.repo, binascii.unhexlify(hexsha), path=folder_rel).traverse():
                if b.type != "blob":
                    continue  # sub-trees are walked; submodules (commit entries) hold no bytes
                mode = FileMode(b.mode) if b.mode in FileMode._value2member_map_ else FileMode.REGULAR
                out[PurePosixPath(b.path).relative_to(folder_rel).as_posix()] = Entry(b.data_stream.read(), mode)
            return out
        try:
            found = self._with_fresh_git(f"{folder_rel} at {commit[:10]}", load)
        except (git.BadName, git.BadObject) as e:
            raise GitError(f"no commit {commit[:10]}: {e}") from None
        if found is None:
            if missing_ok:
                return {}
            raise GitError(f"no folder {folder_rel} at {commit[:10]}")
        return found

    def folder_at(self, commit: str, folder_rel: str) -> dict[str, bytes]:
        """The bytes of every regular file under `folder_rel` at `commit` (see tree_at for modes)."""
        return {rel: e.data for rel, e in self.tree_at(commit, folder_rel).items() if e.mode is not FileMode.SYMLINK}

    # ---- git's index ------------------------------------------------------------------------
    def _listing(self, *args: str, env: Mapping[str, str] | None = None) -> dict[str, tuple[int, str]]:
        """path -> (mode, blob id) from `git ls-files -s -z` or `git ls-tree -r -z`."""
        out = {}
        for line in self.repo.git.execute(["git", *args], env=env).split("\0"):
            if not line:
                continue
            meta, path = line.split("\t", 1)
            fields = meta.split()
            sha = fields[2] if len(fields) >= 3 else ""
            out[path] = (int(fields[0], 8), sha if args[0] == "ls-tree" else fields[1])
        return out

    def unstage(self, folder: Path) -> bool:
        """Make git's index hold HEAD's version of `folder` again (the working tree is left
        alone). A publish killed after `git add` leaves its files staged; this undoes that."""
        rel = self.rel(folder)
        head = self.head()
        try:
            staged = self._listing("ls-files", "-s", "-z", "--", rel)
            committed = self._listing("ls-tree", "-r", "-z", "--full-tree", head, "--", rel) if head else {}
            if staged == committed:
                return False
            if head is None:
                self.repo.git.rm("-r", "--cached", "-q", "--ignore-unmatch", "--", rel)
            else:
                self.repo.git.reset("-q", head, "--", rel)
        except git.GitCommandError as e:
            raise GitError(f"cannot reset git's index for {rel}: {e.stderr.strip() or e}") from None
        return True

    def staged_signature(self, folder: Path, env: Mapping[str, str] | None = None) -> dict[str, tuple[int, str]]:
        """What git's index (`env`'s GIT_INDEX_FILE, if given) holds under `folder`: relative path ->
        (mode, blob id)."""
        rel = self.rel(folder)
        try:
            listing = self._listing("ls-files", "-s", "-z", "--", rel, env=env)
        except git.GitCommandError as e:
            raise GitError(f"cannot list git's index for {rel}: {e.stderr.strip() or e}") from None
        return {PurePosixPath(p).relative_to(rel).as_posix(): v for p, v in listing.items()}

    # ---- writing the working tree ------------------------------------------------------
    def replace_folder(self, folder: Path, files: Files, *, unchanged: str | None = None,
                       before_swap: Callable[[], None] | None = None) -> None:
        """Make `folder` hold exactly `files` (modes and in-folder symlinks included), swapping
        whole folders so no file is half-written. Refuses unsafe paths and links before writing.
        No files at all removes the folder (moved aside first, like the old side of a swap).
        `unchanged`: the tree digest the folder had when it was checked; FolderChanged, nothing
        swapped, when it differs once the new files are staged (an edit made meanwhile is kept).
        `before_swap` runs right before the folder is moved (a release records what it writes)."""
        tree = as_tree(files)
        for rel in tree:
            safe_relpath(rel, str(folder))
        swap = folder.parent / SWAP_DIR
        try:
            swap.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise not_writable(swap, e) from None
        token = uuid.uuid4().hex[:8]
        stage = swap / f"{STAGE_PREFIX}{folder.name}-{token}"
        old = swap / f"{OLD_PREFIX}{folder.name}-{token}"
        try:
            if tree:
                write_tree(stage, tree)
            if unchanged is not None and folder_digest(folder) != unchanged:
                raise FolderChanged(f"{self.rel(folder)} changed while the release's files were being written: "
                                    "nothing was replaced, and the edit is left in the folder; publish again")
            if before_swap is not None:
                before_swap()
            if folder.exists():
                os.rename(folder, old)
            if tree:
                os.rename(stage, folder)
        except BaseException as e:
            if old.exists() and not folder.exists():
                os.rename(old, folder)
            shutil.rmtree(stage, ignore_errors=True)
            if isinstance(e, OSError):
                raise not_writable(folder, e) from None
            raise
        shutil.rmtree(old, ignore_errors=True)
        _remove_if_empty(swap)

    def recover(self, folder: Path) -> list[str]:
        """Undo what a killed `replace_folder` left: restore a folder caught between its two
        renames and delete leftover staging copies. Returns what it did."""
        swap = folder.parent / SWAP_DIR
        if not swap.is_dir():
            return []
        done = []
        olds = sorted(swap.glob(f"{OLD_PREFIX}{folder.name}-*"))
        if olds and not folder.exists():
            os.rename(olds[-1], folder)
            done.append(f"restored {folder.name} from {olds[-1].name}")
            olds = olds[:-1]
        for leftover in [*olds, *swap.glob(f"{STAGE_PREFIX}{folder.name}-*")]:
            shutil.rmtree(leftover, ignore_errors=True)
            done.append(f"removed {leftover.name}")
        _remove_if_empty(swap)
        return done

    def pack(self) -> None:
        """Pack loose objects: reads through cat-file are ~3x faster from a pack."""
        try:
            self.repo.git.repack("-d", "-q")
        except git.GitCommandError as e:  # an optimisation only: never fail a release over it
            log.warning("git repack failed: %s", e)

    def _commit_exactly(self, rel: str, message: str, expect: Mapping[str, tuple[int, str]]) -> str:
        """Commit folder `rel` as `expect` says or not at all: it is staged in a private index (HEAD's
        tree plus the folder as it is now), compared with `expect`, and that very index is committed
        (`git commit -- PATH` would read the folder again, after the check). FolderChanged otherwise;
        git's own index holds the folder as committed (a kill before the commit: recovery unstages)."""
        index = Path(self.repo.git_dir) / f"sf-index-{uuid.uuid4().hex[:8]}"
        env = {**os.environ, **self._env, "GIT_INDEX_FILE": str(index)}
        run = self.repo.git.execute
        try:
            head = self.head()
            if head is not None:
                run(["git", "read-tree", head], env=env)
            run(["git", "add", "-A", "--force", "--", rel], env=env)
            got = self.staged_signature(self.workdir / rel, env=env)
            if got != dict(expect):
                changed = sorted(p for p in {*got, *expect} if got.get(p) != expect.get(p))
                raise FolderChanged(f"{rel} changed while the release was being written ({', '.join(changed[:5])}"
                                    f"{' …' if len(changed) > 5 else ''}): nothing was committed, and the edit is "
                                    "left in the folder; publish again to see what differs")
            tree = run(["git", "write-tree"], env=env).strip()
            if head is not None and tree == run(["git", "rev-parse", f"{head}^{{tree}}"]).strip():
                return head
            run(["git", "reset", "-q", tree, "--", rel])  # git's own index first, as `git commit` updates it
            run(["git", "commit", "-q", "-m", message, "--no-verify"], env=env)  # the private index, as checked
            sha = self.head()
        except git.GitCommandError as e:
            raise GitError(f"git commit of {rel} failed: {e.stderr.strip() or e}") from None
        finally:
            index.unlink(missing_ok=True)
        assert sha is not None
        return sha

    def commit_folders(self, folders: list[Path], message: str, *,
                       expect: Mapping[str, tuple[int, str]] | None = None) -> str:
        """Commit the working-tree state of `folders` (only them) and return the commit hash.
        If they already match HEAD, HEAD holds their bytes and is returned. Files git would ignore
        (a skill's own .gitignore, the workspace's `runs/` pattern, a global excludes file) are
        added too: a release holds every file of its folder, as read_tree reads it. `expect`: the
        signature the one folder must have once staged; else FolderChanged, nothing committed (a
        person's edit made while the release was written is never committed unseen)."""
        rels = [self.rel(f) for f in folders]
        if expect is not None:
            return self._commit_exactly(rels[0], message, expect)
        try:
            self.repo.git.add("-A", "--force", "--", *rels)
            head = self.head()
            if head is not None:
                changed = self.repo.git.diff("--cached", "--name-only", head, "--", *rels)
                if not changed.strip():
                    return head
            self.repo.git.commit("-m", message, "--no-verify", "--", *rels, env=self._env)
        except git.GitCommandError as e:
            raise GitError(f"git commit of {', '.join(rels)} failed: {e.stderr.strip() or e}") from None
        head = self.head()
        assert head is not None
        return head
