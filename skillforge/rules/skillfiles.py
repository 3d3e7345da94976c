"""The files of a skill beside its SKILL.md (pure, no I/O): what differs between two versions of a
skill folder, the evaluation gate's cap for what it did not measure, and the secret scan of a
skill's text files.

- `file_changes(old, new)`: every path whose bytes or mode differ between two folder signatures
  (path -> (git mode, blob id), as skill/tree.py `signature` gives them): added, deleted, changed,
  or only its mode changed (100755 -> 100644). SKILL.md is left out by default: it is what an
  evaluation measures.
- `cap_verdict(verdict, not_evaluated)`: an evaluation only ever runs SKILL.md, so a PASS of a
  candidate whose scripts/ or references/ differ from the baseline's is REVIEW, with a reason that
  names them: a person must look at what no case exercised. REVIEW, DECLINED and INVALID stand.
- `scan_secrets(files)`: the leak scan's secret rules (rules/secrets.py: the token shapes, a token
  split by spaces, and the strict credential assignment) over every text file given (a file with
  a NUL byte in its first 8000 bytes is binary, as git decides; other bytes are read as UTF-8 with
  bad bytes replaced). A finding names the file, the line and the kind, and shows at most a short
  prefix of the match (a token's vendor prefix, or the key name of an assignment), never the value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from skillforge.rules.secrets import CREDENTIAL_LABEL, SECRET_PATTERNS, credential_matches, split_secrets
from skillforge.rules.textnorm import visible
from skillforge.state.cliopts import EvalVerdict

SKILL_FILE = "SKILL.md"
SYMLINK_MODE = 0o120000
BINARY_PROBE = 8000
"""Bytes read for a NUL to call a file binary (git's own heuristic)."""
SHOWN_TOKEN = 6
"""Characters of a token shown in a finding: its vendor prefix and a little more, never the secret."""
SHOWN_KEY = 24


class ChangeKind(StrEnum):
    ADDED = "added"
    DELETED = "deleted"
    CHANGED = "changed"
    MODE = "mode"
    """Same bytes, another mode (an executable bit lost or gained, a file become a symlink)."""


@dataclass(frozen=True)
class FileChange:
    """One path that differs: its kind, and both modes (None on the side that has no such file)."""

    path: str
    kind: ChangeKind
    old_mode: int | None = None
    new_mode: int | None = None

    @property
    def mode_moved(self) -> bool:
        return self.old_mode is not None and self.new_mode is not None and self.old_mode != self.new_mode

    def describe(self) -> str:
        """`scripts/rotate.py changed`, `scripts/backup.sh mode 100755 -> 100644`, `x added`."""
        modes = f"{self.old_mode:o} -> {self.new_mode:o}" if self.mode_moved else ""
        if self.kind is ChangeKind.MODE:
            return f"{self.path} mode {modes}"
        return f"{self.path} {self.kind.value}" + (f" (mode {modes})" if modes else "")


Signature = Mapping[str, tuple[int, str]]
"""path -> (git mode, blob id) of one version of a skill folder."""


def file_changes(old: Signature, new: Signature, *, skip: Iterable[str] = (SKILL_FILE,)) -> list[FileChange]:
    """Every path of `old` or `new` whose bytes or mode differ, by path; `skip` is left out."""
    left_out = set(skip)
    out = []
    for path in sorted((old.keys() | new.keys()) - left_out):
        was, now = old.get(path), new.get(path)
        if was == now:
            continue
        if was is None:
            out.append(FileChange(path, ChangeKind.ADDED, None, now[0]))  # type: ignore[index]
        elif now is None:
            out.append(FileChange(path, ChangeKind.DELETED, was[0], None))
        else:
            kind = ChangeKind.MODE if was[1] == now[1] else ChangeKind.CHANGED
            out.append(FileChange(path, kind, was[0], now[0]))
    return out


def not_evaluated_reason(not_evaluated: Sequence[str]) -> str:
    """The REVIEW reason naming what no case exercised."""
    shown = ", ".join(not_evaluated[:10]) + (f" and {len(not_evaluated) - 10} more" if len(not_evaluated) > 10 else "")
    return f"{shown}: not evaluated (only SKILL.md is run): a person must look"


def cap_verdict(verdict: EvalVerdict, not_evaluated: Sequence[str]) -> tuple[EvalVerdict, str | None]:
    """(verdict, the reason it was capped or None): PASS with files outside SKILL.md that differ
    (`not_evaluated`, each a `FileChange.describe()`) is REVIEW; every other case is unchanged."""
    if verdict is EvalVerdict.PASS and not_evaluated:
        return EvalVerdict.REVIEW, not_evaluated_reason(not_evaluated)
    return verdict, None


@dataclass(frozen=True)
class SecretFinding:
    """A secret in a skill file: where, what kind, and a short prefix of the match."""

    path: str
    line: int
    kind: str
    shown: str

    def describe(self) -> str:
        return f"{self.path}:{self.line}: {self.kind} ({self.shown})"


def is_text(data: bytes) -> bool:
    """Text unless a NUL byte sits in its first BINARY_PROBE bytes."""
    return b"\0" not in data[:BINARY_PROBE]


def _shown(label: str, match_text: str, key: str | None) -> str:
    if key is not None:
        return key.strip().strip("'\"")[:SHOWN_KEY] + "=…"
    return match_text[:SHOWN_TOKEN] + "…"


def scan_text(path: str, text: str) -> list[SecretFinding]:
    """The secrets in one file's text, in order; a match that overlaps an earlier one (the AWS
    secret key is also a credential assignment) is not named twice."""
    seen = visible(text)  # as a reader sees it (zero-width characters inside a token dropped); keeps line breaks
    found: list[tuple[int, int, str, str]] = []
    for label, pattern in SECRET_PATTERNS:
        for m in pattern.finditer(seen):
            key = seen[m.start():m.start("value")].rstrip(" \t:='\"\\") if "value" in pattern.groupindex else None
            found.append((m.start(), m.end(), label, _shown(label, m.group(0), key)))
    for start, end, label in split_secrets(seen):
        found.append((start, end, f"{label} (split)", _shown(label, seen[start:end], None)))
    for m in credential_matches(seen, strict=True):
        found.append((m.start(), m.end(), CREDENTIAL_LABEL, _shown(CREDENTIAL_LABEL, m.group(0), m.group("key"))))
    kept: list[tuple[int, int, str, str]] = []
    for item in found:  # token shapes first: an assignment holding the same value is not named again
        if not any(item[0] < k[1] and k[0] < item[1] for k in kept):
            kept.append(item)
    return [SecretFinding(path, seen.count("\n", 0, start) + 1, label, shown)
            for start, _, label, shown in sorted(kept)]


def scan_secrets(files: Mapping[str, tuple[int, bytes]]) -> list[SecretFinding]:
    """The secrets in every text file of `files` (path -> (git mode, bytes)); symlinks and binary
    files are not read."""
    out: list[SecretFinding] = []
    for path in sorted(files):
        mode, data = files[path]
        if mode == SYMLINK_MODE or not is_text(data):
            continue
        out += scan_text(path, data.decode("utf-8", errors="replace"))
    return out


__all__ = ["ChangeKind", "FileChange", "SecretFinding", "cap_verdict", "file_changes", "is_text",
           "not_evaluated_reason", "scan_secrets", "scan_text"]
