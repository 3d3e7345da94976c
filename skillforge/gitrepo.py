"""The git repository that holds the bytes of every release (gitpython).

Writes to a skill folder are crash-safe: the new content is built in a hidden sibling folder and
swapped in with two renames, so a folder is always either wholly old or wholly new. `recover()`
finishes or undoes a swap that a killed process left half-way.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

import git

from skillforge.errors import GitError, NotWritable, SkillFileError

SWAP_DIR = ".sf-swap"
"""Hidden sibling folder of the skill folders where swaps are built; recover() only lists it."""
STAGE_PREFIX = "stage-"
OLD_PREFIX = "old-"
log = logging.getLogger(__name__)
_IDENTITY = {"GIT_AUTHOR_NAME": "SkillForge", "GIT_AUTHOR_EMAIL": "skillforge@localhost",
             "GIT_COMMITTER_NAME": "SkillForge", "GIT_COMMITTER_EMAIL": "skillforge@localhost"}


def safe_relpath(rel: str, where: str) -> PurePosixPath:
    """A relative path that stays inside its folder, or SkillFileError."""
    p = PurePosixPath(rel.replace("\\", "/"))
    if not rel or p.is_absolute() or any(part in ("..", "") for part in p.parts):
        raise SkillFileError(where, "path", f"'{rel}' escapes the skill folder")
    if any(part == ".git" for part in p.parts):
        raise SkillFileError(where, "path", f"'{rel}' may not write into .git")
    return p


def not_writable(path: Path | str, e: OSError) -> NotWritable:
    """The named error for an OSError met while writing `path` (read-only, not a folder, full disk)."""
    where = e.filename or path
    return NotWritable(f"cannot write {where}: {e.strerror or e}")


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
    """Every regular file under `folder` (relative posix path -> bytes); empty if missing."""
    if not folder.is_dir():
        return {}
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out[p.relative_to(folder).as_posix()] = p.read_bytes()
    return out


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
        path = Path(self.repo.git_dir) / "skillforge.lock"
        probe_writable(path.parent)  # git writes its index and objects here: refuse before any step begins
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise not_writable(path, e) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
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
        missing = []
        for sha in dict.fromkeys(commits):
            try:
                _, kind, _ = self.repo.git.get_object_header(sha)
            except (ValueError, git.GitCommandError):
                missing.append(sha)
                continue
            if kind not in (b"commit", "commit"):
                missing.append(sha)
        return missing

    def head(self) -> str | None:
        try:
            return self.repo.head.commit.hexsha
        except ValueError:  # no commits yet
            return None

    # ---- reading bytes at a commit ------------------------------------------------------
    def read(self, commit: str, path: str) -> bytes:
        """The bytes of `path` at `commit`, through git's persistent cat-file process."""
        try:
            _, kind, _, data = self.repo.git.get_object_data(f"{commit}:{path}")
        except (git.GitCommandError, ValueError, OSError) as e:
            raise GitError(f"cannot read {path} at {commit[:10]}: {e}") from None
        if kind not in (b"blob", "blob"):
            raise GitError(f"{path} at {commit[:10]} is a {kind}, not a file")
        return data

    def folder_at(self, commit: str, folder_rel: str) -> dict[str, bytes]:
        """Every file under `folder_rel` at `commit` (relative posix path -> bytes)."""
        try:
            tree = self.repo.commit(commit).tree / folder_rel
        except (KeyError, ValueError, git.BadName) as e:
            raise GitError(f"no folder {folder_rel} at {commit[:10]}: {e}") from None
        return {PurePosixPath(b.path).relative_to(folder_rel).as_posix(): b.data_stream.read()
                for b in tree.traverse() if b.type == "blob"}

    # ---- writing the working tree ------------------------------------------------------
    def replace_folder(self, folder: Path, files: Mapping[str, bytes]) -> None:
        """Make `folder` hold exactly `files`, swapping whole folders so no file is half-written."""
        for rel in files:
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
            for rel, data in files.items():
                target = stage / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                with open(target, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
            stage.mkdir(exist_ok=True)
            if folder.exists():
                os.rename(folder, old)
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

    def commit_folders(self, folders: list[Path], message: str) -> str:
        """Commit the working-tree state of `folders` (only them) and return the commit hash.
        If they already match HEAD, HEAD holds their bytes and is returned."""
        rels = [self.rel(f) for f in folders]
        try:
            self.repo.git.add("-A", "--", *rels)
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
