"""The files of a skill folder exactly as git keeps them: bytes, mode, and symlinks as symlinks.

Every read and write of a skill folder goes through here, so one rule holds everywhere (import,
validate, publish, revert, restore, backups):
- a symlink is never followed. One whose target stays inside the skill folder is kept as a
  symlink (git mode 120000); one whose target leaves it (absolute, `..` past the top, or through
  another link that does) is refused with `UnsafeSymlink`. SKILL.md itself must be a regular file;
- executable files stay executable (100755), other files are 100644;
- FIFOs, sockets and devices are refused (reading a FIFO would hang);
- a SKILL.md below the top of a skill folder (a nested skill) is refused with `NestedSkill`;
- `.git` folders inside a source skill folder are version-control data, not skill files: skipped,
  as are empty folders (git keeps none); `left_out` names both, so publish and import can say so;
- any other path git refuses to hold is refused before git sees it: a component that is `.git` in
  any case, or with trailing dots or spaces (`.GIT`, `.git.`), or `git~1` (its NTFS short name).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path, PurePosixPath

from skillforge.errors import NestedSkill, SkillFileError, UnsafeSymlink

SKILL_FILENAME = "SKILL.md"
SKIPPED_DIRS = frozenset({".git"})
MAX_LINK_HOPS = 40
"""Symlinks followed while resolving one target (the kernel's own limit)."""


class FileMode(IntEnum):
    """The three file modes git records for a skill file."""

    REGULAR = 0o100644
    EXECUTABLE = 0o100755
    SYMLINK = 0o120000


@dataclass(frozen=True)
class Entry:
    """One file of a skill folder: its bytes (a symlink's target for SYMLINK) and its mode."""

    data: bytes
    mode: FileMode = FileMode.REGULAR

    @property
    def target(self) -> str:
        """A symlink's target as text."""
        return os.fsdecode(self.data)


Tree = dict[str, Entry]
"""Relative posix path -> Entry: the whole content of one skill folder."""
Files = Mapping[str, "bytes | Entry"]
"""What callers may hand in: plain bytes are regular (100644) files."""


def as_tree(files: Files) -> Tree:
    """`files` with plain bytes turned into REGULAR entries."""
    return {rel: v if isinstance(v, Entry) else Entry(bytes(v)) for rel, v in files.items()}


def blob_sha(entry: Entry) -> str:
    """The git blob id of an entry's bytes (what `git hash-object` prints)."""
    return hashlib.sha1(b"blob %d\0" % len(entry.data) + entry.data).hexdigest()


def signature(tree: Tree) -> dict[str, tuple[int, str]]:
    """path -> (mode, blob id): compares a tree with git's index without reading blobs."""
    return {rel: (int(e.mode), blob_sha(e)) for rel, e in tree.items()}


def tree_digest(sig: Mapping[str, tuple[int, str]]) -> str:
    """One sha256 hex digest of a folder's `signature` (or git's index listing of it): equal
    exactly when the two hold the same paths, modes and bytes. A release records the digest of
    what it swaps into its folder, so recovery can later tell those bytes from a person's edit."""
    h = hashlib.sha256()
    for rel in sorted(sig):
        mode, blob = sig[rel]
        h.update(f"{mode:o} {blob} ".encode("ascii") + os.fsencode(rel) + b"\0")
    return h.hexdigest()


def git_reserved(part: str) -> bool:
    """Whether git refuses a path component: `.git` in any case, also with trailing dots or spaces
    (what Windows and macOS would open as `.git`), or `git~1` (the NTFS short name of `.git`)."""
    return part.rstrip(". ").lower() == ".git" or part.lower() == "git~1"


def safe_relpath(rel: str, where: str) -> PurePosixPath:
    """A relative path that stays inside its folder and that git can hold, or SkillFileError."""
    p = PurePosixPath(rel.replace("\\", "/"))
    if not rel or p.is_absolute() or any(part in ("..", "") for part in p.parts):
        raise SkillFileError(where, "path", f"'{rel}' escapes the skill folder")
    if bad := next((part for part in p.parts if git_reserved(part)), None):
        raise SkillFileError(f"{where}/{rel}", "path", f"git refuses a path with a '{bad}' component ('.git' in any "
                                                        "case, with trailing dots or spaces, or 'git~1'): rename it")
    return p


def link_escapes(links: Mapping[str, str], link: str) -> bool:
    """Whether the symlink at `link` does not resolve inside the folder, given every symlink of the
    folder (`links`: path -> target): it leaves it, or loops (`link_problem`)."""
    return link_problem(links, link) is not None


def link_problem(links: Mapping[str, str], link: str) -> str | None:
    """"outside" when the symlink at `link` resolves outside the folder, "loop" when following it
    never ends (more than MAX_LINK_HOPS links), else None. Resolution is lexical, hop by hop, like
    the kernel's."""
    stack = list(PurePosixPath(link).parent.parts)
    pending = links[link].split("/")
    if links[link].startswith("/"):
        return "outside"
    hops = 1
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not stack:
                return "outside"
            stack.pop()
            continue
        stack.append(part)
        here = "/".join(stack)
        if here in links:
            hops += 1
            if hops > MAX_LINK_HOPS:
                return "loop"
            if links[here].startswith("/"):
                return "outside"
            stack.pop()
            pending = links[here].split("/") + pending
    return None


def check_tree(tree: Tree, where: str, *, rules: bool = True) -> None:
    """Refuse a tree that breaks the folder rules (module docstring); `where` names the folder.
    `rules=False` checks only that writing it stays inside (a backup of a folder as it is)."""
    links = {rel: e.target for rel, e in tree.items() if e.mode is FileMode.SYMLINK}
    for rel in sorted(tree):
        p = safe_relpath(rel, where)
        label = f"{where}/{rel}"
        for n in range(1, len(p.parts)):
            above = "/".join(p.parts[:n])
            if above in links:
                raise UnsafeSymlink(label, "path", f"lies under the symlink '{above}'")
            if above in tree:
                raise SkillFileError(label, "path", f"lies under the file '{above}'")
        if not rules:
            continue
        if rel in links:
            if rel == SKILL_FILENAME:
                raise UnsafeSymlink(label, "path", "SKILL.md must be a regular file, not a symlink")
            problem = link_problem(links, rel)
            if problem == "loop":
                raise UnsafeSymlink(label, "path", f"symlink to '{links[rel]}' is a loop: following it never "
                                                   "reaches a file; take it out or point it at one")
            if problem is not None:
                raise UnsafeSymlink(label, "path", f"symlink to '{links[rel]}' leaves the skill folder; "
                                                   "only links inside the folder are kept")
        elif p.name == SKILL_FILENAME and len(p.parts) > 1:
            raise NestedSkill(label, "path", f"another skill inside skill folder {where}; "
                                             "nested skills are refused: move it out")


def _read_regular(path: str) -> tuple[bytes, bool]:
    """Bytes and executable bit of a regular file, opened without following links or blocking."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SkillFileError(path, "path", "is not a regular file, folder or symlink; refused")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks), bool(st.st_mode & stat.S_IXUSR)
    finally:
        os.close(fd)


def nested_skills(tree: Tree) -> list[str]:
    """The SKILL.md files below the top of a folder's tree (nested skills)."""
    return sorted(rel for rel, e in tree.items()
                  if "/" in rel and rel.rsplit("/", 1)[1] == SKILL_FILENAME and e.mode is not FileMode.SYMLINK)


def skill_source(path: Path, *, file_ok: bool = True, any_name: bool = False) -> Path:
    """The skill folder a user named by `path` (a skill folder, or its SKILL.md when `file_ok`),
    checked before anything is read, the same for `skills validate`, `evaluate --candidate` and
    `release publish --from`: a folder that is itself a link, or a SKILL.md that is a link, is
    UnsafeSymlink (SKILL.md must be a regular file); a missing SKILL.md, or a file where a folder is
    needed, is SourceError naming what to give instead (`any_name`: a file of another name is taken
    too, as evaluate takes a candidate file). Links inside the folder are `read_tree`'s."""
    from skillforge.errors import SourceError

    path = Path(path)
    if path.is_symlink() and (path.name == SKILL_FILENAME or not path.is_dir()):
        raise UnsafeSymlink(str(path), "path", f"{SKILL_FILENAME} must be a regular file, not a symlink (to "
                                               f"{os.readlink(path)}): copy the file itself")
    if path.is_symlink():
        raise UnsafeSymlink(str(path), "path", f"the skill folder is a symlink (to {os.readlink(path)}); "
                                               "copy the folder itself")
    if path.is_file():
        if path.name != SKILL_FILENAME and not any_name:
            raise SourceError(f"{path} is not a {SKILL_FILENAME}; give a skill folder or its {SKILL_FILENAME}")
        if path.parent.is_symlink():
            raise UnsafeSymlink(str(path.parent), "path", f"the skill folder is a symlink (to "
                                                          f"{os.readlink(path.parent)}); copy the folder itself")
        if not file_ok:
            raise SourceError(f"{path} is a file, not a skill folder: give its folder ({path.parent})")
        return path.parent
    if not path.exists():
        raise SourceError(f"{path} is not a skill folder (no such file or folder)")
    if not path.is_dir():
        raise SourceError(f"{path} is not a skill folder (not a folder)")
    file = path / SKILL_FILENAME
    if file.is_symlink():
        raise UnsafeSymlink(str(file), "path", f"{SKILL_FILENAME} must be a regular file, not a symlink (to "
                                               f"{os.readlink(file)}): copy the file itself")
    if not file.is_file():
        raise SourceError(f"{path} is not a skill folder (no {SKILL_FILENAME})")
    return path


def left_out(folder: Path) -> list[str]:
    """What `read_tree` leaves out of `folder` without refusing it, as relative paths ending in `/`:
    nested `.git` folders (version-control data) and folders that hold no file (git keeps none;
    only the topmost of a chain of them is named). Links are not followed; [] if it is no folder."""
    found: list[str] = []

    def holds_files(d: str, prefix: str) -> bool:
        try:
            with os.scandir(d) as it:
                items = sorted(it, key=lambda e: e.name)
        except OSError:
            return True  # read_tree names what cannot be listed
        empty: list[str] = []
        any_file = False
        for item in items:
            if item.is_dir(follow_symlinks=False):
                if item.name in SKIPPED_DIRS:
                    found.append(prefix + item.name + "/")
                elif holds_files(item.path, prefix + item.name + "/"):
                    any_file = True
                else:
                    empty.append(prefix + item.name + "/")
            else:
                any_file = True
        if any_file or not prefix:
            found.extend(empty)
        return any_file

    if Path(folder).is_dir() and not Path(folder).is_symlink():
        holds_files(str(folder), "")
    return sorted(found)


def read_tree(folder: Path, *, contents: bool = True, check: bool = True) -> Tree:
    """Every file of `folder` as git would store it, checked by `check_tree`; {} if missing.
    `contents=False` only checks (regular files get empty data), which is cheap enough for scans.
    `check=False` reads the folder as it is, escaping links included (never followed)."""
    folder = Path(folder)
    if folder.is_symlink():
        raise UnsafeSymlink(str(folder), "path", f"the skill folder is a symlink (to {os.readlink(folder)}); "
                                                 "copy the folder itself")
    if not folder.is_dir():
        return {}
    tree: Tree = {}

    def visit(d: str, prefix: str) -> None:
        try:
            with os.scandir(d) as it:
                items = sorted(it, key=lambda e: e.name)
        except OSError as e:
            raise SkillFileError(d, "path", f"cannot list: {e.strerror or e}") from None
        for item in items:
            rel = prefix + item.name
            try:
                if item.is_symlink():
                    tree[rel] = Entry(os.fsencode(os.readlink(item.path)), FileMode.SYMLINK)
                elif item.is_dir(follow_symlinks=False):
                    if item.name not in SKIPPED_DIRS:
                        visit(item.path, rel + "/")
                elif item.is_file(follow_symlinks=False):
                    data, exe = _read_regular(item.path) if contents else (b"", item.stat(follow_symlinks=False).st_mode & stat.S_IXUSR)
                    tree[rel] = Entry(data, FileMode.EXECUTABLE if exe else FileMode.REGULAR)
                else:
                    raise SkillFileError(item.path, "path", "is not a regular file, folder or symlink "
                                                            "(a FIFO, socket or device); refused")
            except FileNotFoundError:  # listed, then gone: a person (or an editor) is changing the folder
                raise SkillFileError(item.path, "path", "was deleted while the folder was being read (is it being "
                                                        "edited?): nothing was written; run the command again") from None
            except OSError as e:
                raise SkillFileError(item.path, "path", f"cannot read: {e.strerror or e}") from None

    visit(str(folder), "")
    check_tree(tree, str(folder), rules=check)
    return tree


def write_tree(dest: Path, tree: Tree, *, check: bool = True) -> None:
    """Create `dest` (which must not exist yet) holding exactly `tree`: files fsynced, modes set,
    symlinks created as symlinks. The tree is checked first, so nothing is written outside
    (`check=False`: only that, for backups of a folder as it was)."""
    check_tree(tree, str(dest), rules=check)
    dest.mkdir(parents=True)
    for rel, entry in sorted(tree.items()):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if entry.mode is FileMode.SYMLINK:
            os.symlink(entry.target, target)
            continue
        with open(target, "xb") as fh:
            fh.write(entry.data)
            fh.flush()
            os.fsync(fh.fileno())
        if entry.mode is FileMode.EXECUTABLE:
            os.chmod(target, 0o755)


def unsaved_files(work: Tree, *saved: Tree) -> list[str]:
    """Files of the working folder that none of the `saved` trees (from git) holds as they are:
    what overwriting the folder would lose. A deleted file loses nothing."""
    return sorted(rel for rel, e in work.items() if all(s.get(rel) != e for s in saved))


__all__ = ["Entry", "FileMode", "Files", "Tree", "as_tree", "check_tree", "git_reserved", "left_out", "nested_skills", "read_tree", "safe_relpath",
           "signature", "skill_source", "tree_digest", "unsaved_files", "write_tree"]
