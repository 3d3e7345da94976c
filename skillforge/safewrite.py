"""Writing a whole text file at a path, atomically, and only ever as a regular file.

Every file SkillForge writes at a path a user gave (`report --html`, `skills export --out`,
`evaluate --report`) or under runs/ (failures, suggestions, reviews, audits) and evaluation_sets/
goes through `write_text_atomic`:
- the path must be a regular file or a new name. A folder, a device, a FIFO or a socket (or a
  symlink to one) is refused with NotWritable before anything is written, so that `--html
  /dev/full` run as root no longer turns the device into an HTML file;
- a symlink to a file is followed: the file it points to is replaced, the link stays;
- the text goes to a temp file in the same folder, is fsynced and renamed over the target, so a
  reader sees the old file or the new one, never half of one;
- a new file gets 0666 minus the umask, like any file a shell creates; a replaced file keeps its
  permission bits (mkstemp's 0600 made every report private whatever the umask).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from skillforge.errors import NotWritable

NEW_FILE_MODE = 0o666
"""Permission bits asked for a new file; the kernel takes the umask off."""
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))


ADVICE = {errno.ENOSPC: "the disk is full: free some space",
          errno.EDQUOT: "the disk quota is used up: free some space or raise the quota",
          errno.EROFS: "the file system is read-only: make it writable or use a workspace on another disk",
          errno.EACCES: "permission denied: make it writable for this user",
          errno.EPERM: "operation not permitted: make it writable for this user",
          errno.EFBIG: "the file is larger than this process may write (see `ulimit -f`)"}
"""What to do about the OSErrors a write meets on a sound program: a full disk, a quota, a read-only
mount, permissions, a file size limit."""


def not_writable(path: Path | str, e: OSError, what: str = "", then: str = "") -> NotWritable:
    """The named error for an OSError met while writing `path`: which file (`what` says what it
    is, e.g. "the log "), why, what to do about it (ADVICE), and `then` (how to go on)."""
    where = e.filename if isinstance(e.filename, str) and e.filename else path
    advice = ADVICE.get(e.errno or 0)
    return NotWritable(f"cannot write {what}{where}: {e.strerror or e}" + (f"; {advice}" if advice else "") + then)


def _not_a_file(st: os.stat_result) -> str | None:
    """What the file at hand is when it is not a regular file ("a folder", "a FIFO", ...)."""
    if stat.S_ISREG(st.st_mode):
        return None
    return next((what for test, what in _KINDS if test(st.st_mode)), "not a regular file")


def refusal(path: Path | str) -> str | None:
    """Why `path` (symlinks followed) cannot be written as a file: it is a folder, a device, a
    FIFO or a socket, its folder is missing, or it cannot be looked at; None when it is a regular
    file or a new name in an existing folder. Writes nothing."""
    real = Path(os.path.realpath(Path(path).expanduser()))
    try:
        st = os.stat(real)
    except FileNotFoundError:
        st = None
    except OSError as e:
        return e.strerror or str(e)
    if st is not None and (kind := _not_a_file(st)) is not None:
        return f"it is {kind}, not a regular file; give the path of a file"
    if not real.parent.is_dir():
        return f"no folder {real.parent}"
    return None


def check_target(path: Path | str) -> Path:
    """The real path `write_text_atomic` would replace (symlinks followed), or NotWritable saying
    why (`refusal`)."""
    given = Path(path).expanduser()
    real = Path(os.path.realpath(given))
    why = refusal(given)
    if why is not None:
        shown = f"{given}" if real == given.absolute() else f"{given} (-> {real})"
        raise NotWritable(f"cannot write {shown}: {why}")
    return real


def temp_path(path: Path, tag: str) -> Path:
    """Where `write_text_atomic(path, ..., tag=tag)` writes before its rename: `.NAME.<tag>.tmp`."""
    return path.with_name(f".{path.name}.{tag}.tmp")


def write_text_atomic(path: Path | str, text: str, *, tag: str | None = None) -> Path:
    """Replace (or create) the file at `path` with `text` (UTF-8) as the module docstring says,
    creating missing parent folders first. Returns the path given. NotWritable on refusal or on
    any OSError (full disk, read-only, permission), with the temp file removed."""
    return write_bytes_atomic(path, text.encode("utf-8", "replace"), tag=tag)  # a lone surrogate (model output): no crash


def write_bytes_atomic(path: Path | str, data: bytes, *, tag: str | None = None) -> Path:
    """`write_text_atomic` for bytes (a gzip archive, a JSONL file rewritten line by line): the file's
    own mode kept, fsynced, renamed over it."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        check_target(path)  # says why in terms of `path` ("Not a directory", "no folder ...")
        raise not_writable(path, e) from None
    real = check_target(path)
    existing = real.stat().st_mode if real.exists() else None
    tmp = temp_path(real, tag or uuid.uuid4().hex[:8])  # `tag`: a name a recovery can find
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, NEW_FILE_MODE)
        try:
            if existing is not None:
                os.fchmod(fd, stat.S_IMODE(existing))
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        check_target(real)  # still a file (or nothing) right before the swap
        os.replace(tmp, real)
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise not_writable(path, e) from None
        raise
    return path


__all__ = ["ADVICE", "NEW_FILE_MODE", "check_target", "not_writable", "refusal", "write_bytes_atomic", "write_text_atomic"]


@contextmanager
def exclusive(path: Path, what: str = "") -> Iterator[None]:
    """Hold an exclusive flock on the lock file `path` (created with its folder) for the block: one
    holder at a time across processes; closing the descriptor releases it, and the kernel does if the
    holder dies. NotWritable (naming `what`, e.g. "the events lock ") when it cannot be created."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise not_writable(path, e, what) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def claim_file(path: Path, owner: str, then: str = "") -> str | None:
    """Claim `path` for `owner`: the file is created exclusively holding `owner`. None when the claim
    is `owner`'s (made now, or made before by the same owner); the holder's text when another holds
    it ("" for a claim being written this instant). NotWritable, with `then`, when it cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        held = path.read_text(encoding="utf-8", errors="replace").strip()
        return None if held and held == owner else held
    except OSError as e:
        raise not_writable(path, e, "the run's claim ", then) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(owner)
    except OSError as e:  # a full disk: no half claim is left to refuse the run's own resume
        path.unlink(missing_ok=True)
        raise not_writable(path, e, "the run's claim ", then) from None
    return None

