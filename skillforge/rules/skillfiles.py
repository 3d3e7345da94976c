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
- `scan_secrets(files)`: the leak scan's secret rules (rules/secrets.py `secret_spans`: the token shapes, a
  password in a URL, a token split by spaces, the strict credential assignment and a generic key with a
  high-entropy value) over every file given (`file_text`): a UTF-32/UTF-16/UTF-8 byte-order mark, or UTF-16 without one (a NUL in every
  other byte), decodes it as that; a file with a NUL byte in its first 8000 bytes otherwise is
  binary (as git decides) and its printable ASCII runs and UTF-16 runs of 4+ characters are scanned
  (`strings`, `strings -el`), so one NUL does not hide a key (a script, rules/hidden.script_like, is read
  with its NULs taken out, as bash runs it); other bytes are read as UTF-8, bad ones replaced. In a code file
  (`code_like`) adjacent string literals are also read joined (`joined_literals`: `"AKIA" +` /
  `"IOSF…"`, Python's implicit concatenation). A symlink's target and every path are scanned too.
  A compressed file (rules/archives.py `unpack`: gzip, bzip2, xz, zip, tar) is read in memory and
  its members scanned as `archive.zip!inner/path`; one not read fully is an `UNSCANNED` finding.
  The archive's own bytes are scanned too, as a binary's are (a zip or gzip comment, an extra field,
  a pax header, bytes before or after the archive): what its members already showed is not repeated.
  A finding names the file, the line and the kind, and shows at most a short prefix of the match (a token's
  vendor prefix, an assignment's key, a URL's scheme and user), never the value.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from skillforge.rules.archives import archive_kind, unpack
from skillforge.rules.hidden import script_like
from skillforge.rules.redactviews import (CLI_PASSWORDS, CREDENTIAL_SPACED, CURL_USER, curl_user_ok, prefix_joined_findings,
                                          spaced_credential_ok)
from skillforge.rules.secrets import (CREDENTIAL_LABEL, GENERIC_LABEL, SECRET_PATTERNS, URL_LABEL, credential_value,
                                      secret_spans)
from skillforge.rules.textnorm import visible
from skillforge.state.cliopts import EvalVerdict

SKILL_FILE = "SKILL.md"
SYMLINK_MODE = 0o120000
BINARY_PROBE = 8000
"""Bytes read for a NUL to call a file binary (git's own heuristic)."""
SHOWN_TOKEN = 6
"""Characters of a token shown in a finding: its vendor prefix and a little more, never the secret."""
SHOWN_KEY = 24
SHOWN_URL = 40
"""Characters of a URL's `scheme://user` shown before `:…@`."""


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

    @property
    def became_link(self) -> bool:
        """A file (or a folder's path) replaced by a symlink."""
        return self.new_mode == SYMLINK_MODE and self.old_mode is not None and self.old_mode != SYMLINK_MODE

    def describe(self, link_target: str | None = None) -> str:
        """`scripts/rotate.py changed`, `scripts/backup.sh mode 100755 -> 100644`, `x added`; a file
        replaced by a symlink, given its `link_target`: `scripts/backup.sh -> symlink to rotate.py
        (was a 100755 file)`."""
        if link_target is not None and self.became_link:
            return f"{self.path} -> symlink to {link_target} (was a {self.old_mode:o} file)"
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
    """A secret in a skill file: where, what kind, and a short prefix of the match. `line` 0: the
    secret is in the path itself (`path` then shows it cut to its prefix)."""

    path: str
    line: int
    kind: str
    shown: str

    @property
    def where(self) -> str:
        """`path:line`, `path (file name)` for a secret in the path itself, or `path` (an archive)."""
        return f"{self.path}:{self.line}" if self.line else \
            f"{self.path} (file name)" if self.kind.endswith("in the file name") else self.path

    def describe(self) -> str:
        return f"{self.path}{f':{self.line}' if self.line else ''}: {self.kind} ({self.shown})"


def is_text(data: bytes) -> bool:
    """Text unless a NUL byte sits in its first BINARY_PROBE bytes (after `file_text` found no
    UTF-16/32 in it)."""
    return b"\0" not in data[:BINARY_PROBE]


_BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"), (codecs.BOM_UTF8, "utf-8"),
         (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
"""UTF-32 before UTF-16: FF FE 00 00 starts both."""
_PRINTABLE_RUN = re.compile(rb"[\t\n\r\x20-\x7e]{4,}")
_UTF16LE_RUN = re.compile(rb"(?:[\t\n\r\x20-\x7e]\x00){4,}")
_UTF16BE_RUN = re.compile(rb"(?:\x00[\t\n\r\x20-\x7e]){4,}")


def _utf16_order(probe: bytes) -> str | None:
    """UTF-16 without a byte-order mark: ASCII-range text has a NUL in every other byte."""
    pairs = len(probe) // 2
    if pairs < 2:
        return None
    even, odd = probe[0:2 * pairs:2].count(0), probe[1:2 * pairs:2].count(0)
    if odd >= 0.6 * pairs and even <= 0.05 * pairs:
        return "utf-16-le"
    if even >= 0.6 * pairs and odd <= 0.05 * pairs:
        return "utf-16-be"
    return None


def _strings(data: bytes) -> str:
    """A binary's printable ASCII runs of 4+ characters (as `strings` finds them), and its UTF-16 runs
    (LE or BE: 4+ such characters each beside a NUL, as `strings -el`/`-eb` find them), everything
    else one NUL each; its line breaks are kept, so a line number still counts the file's lines."""
    runs = [(m.start(), m.end(), m.group(0).decode("ascii")) for m in _PRINTABLE_RUN.finditer(data)]
    for pattern, codec in ((_UTF16LE_RUN, "utf-16-le"), (_UTF16BE_RUN, "utf-16-be")):
        runs += [(m.start(), m.end(), m.group(0).decode(codec)) for m in pattern.finditer(data)]
    out, at = [], 0
    for start, end, text in sorted(runs):
        if end <= at + 1:  # the same bytes read the other way (an LE run is a BE run one byte on)
            continue
        if start >= at:
            out.append("\0" + "\n" * data.count(b"\n", at, start))
        else:  # it begins inside the run before (`abcdA\0B\0…`): read from a NUL of its own
            out.append("\0")
        out.append(text)
        at = end
    if at < len(data):
        out.append("\0" + "\n" * data.count(b"\n", at))
    return "".join(out)


def file_text(data: bytes) -> tuple[str, bool]:
    """(the text the secret scan reads in a file's bytes, whether the file is binary): decoded by
    its byte-order mark, as UTF-16 when every other byte is NUL, as UTF-8 (bad bytes replaced) when
    no NUL sits in its first BINARY_PROBE bytes, and otherwise its printable runs (`_strings`)."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return data[len(bom):].decode(codec, errors="replace"), False
    if is_text(data):
        return data.decode("utf-8", errors="replace"), False
    if codec := _utf16_order(data[:BINARY_PROBE]):
        return data.decode(codec, errors="replace"), False
    return _strings(data), True


CODE_SUFFIXES = frozenset({
    ".py", ".pyw", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".java", ".kt", ".kts", ".scala", ".groovy",
    ".go", ".rs", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".swift", ".rb", ".php", ".pl", ".pm", ".lua",
    ".sh", ".bash", ".zsh", ".ps1", ".r", ".jl", ".dart", ".ex", ".exs",
})
_LIT = r"""(?:"[^"\\\n]*(?:\\.[^"\\\n]*)*"|'[^'\\\n]*(?:\\.[^'\\\n]*)*')"""
_GLUE = r"[ \t]*(?:\+|\.\.?|\\(?=\n))?[ \t]*\n?[ \t]*(?:\+|\.\.?)?[ \t]*(?:[rRbBuUfF]{1,2}(?=[\"']))?"
"""Between two literals: spaces, at most one line break, a `+` (`.` in PHP and Perl, `..` in Lua) or
a `\\` line continuation, and a string prefix (`f"…"`)."""
_LITERAL_RUN = re.compile(_LIT + r"(?:" + _GLUE + _LIT + r")+")
_ONE_LITERAL = re.compile(_LIT)
_PARENS = re.compile(r"([=:][ \t]*)\((\s*)(" + _LIT + r")(\s*)\)")


def code_like(path: str, text: str) -> bool:
    """A source file (by its suffix, or a `#!` first line): where a string is built from pieces."""
    name = path.rsplit("/", 1)[-1].lower()
    return text.startswith("#!") or ("." in name and name[name.rindex("."):] in CODE_SUFFIXES)


def _join_run(m: re.Match[str]) -> str:
    pieces = _ONE_LITERAL.findall(m.group(0))
    quote = pieces[0][0]
    return quote + "".join(p[1:-1] for p in pieces) + quote + "\n" * m.group(0).count("\n")


def joined_literals(text: str) -> str:
    """`text` with each run of adjacent string literals (`"AKIA" + "IOSF…"`, `("wJal"` / `"/bPx")`)
    read as one literal, and `= ("…")` as `= "…"`; the line breaks taken out follow it, so every
    line after keeps its number."""
    joined = _LITERAL_RUN.sub(_join_run, text)
    return _PARENS.sub(lambda m: m.group(1) + m.group(3) + m.group(2) + m.group(4), joined)


CLI_LABEL = "command-line password"


def _shown(label: str, match_text: str, key: str | None) -> str:
    if label == URL_LABEL and key is not None:
        return key[:SHOWN_URL] + ":…@"
    if key is not None:
        return key.strip().strip("'\"")[:SHOWN_KEY] + "=…"
    return match_text[:SHOWN_TOKEN] + "…"


def _spans(text: str) -> list[tuple[int, int, str, str]]:
    """(start, end, kind, shown) of every secret in `text`: rules/secrets.py `secret_spans`; `curl -u`,
    `mysql -p`, `sshpass -p` and a credential name with its value across white space (`password:\nXk9Q…`)
    when the value passes the strict test; a vendor token cut into runs (prefix_joined_findings)."""
    found = [(s.start, s.end, s.label, _shown(s.label.removesuffix(" (split)"), s.prefix, s.key)) for s in secret_spans(text)]
    more = [(m.start(), m.end(), CLI_LABEL, _shown(CLI_LABEL, m.group(0)[:m.start("value") - m.start()], None))
            for p in CLI_PASSWORDS for m in p.finditer(text)
            if (p is not CURL_USER or curl_user_ok(m)) and credential_value(m.group("value"), strict=True)]
    more += [(m.start(), m.end(), CREDENTIAL_LABEL, _shown(CREDENTIAL_LABEL, "", m.group("key")))
             for m in CREDENTIAL_SPACED.finditer(text) if spaced_credential_ok(m, strict=True)]
    more += [(a, b, f"{label} (split)", _shown(label, text[a:a + 4], None)) for a, b, label in prefix_joined_findings(text, (
        (label, p, None) for label, p in SECRET_PATTERNS))]
    for item in more:
        if not any(x < item[1] and item[0] < y for x, y, _, _ in found):
            found.append(item)
    return found


def _line_numbers(text: str, starts: list[int]) -> dict[int, int]:
    """The line (from 1) of each position in `starts`, counting each stretch of `text` once."""
    out, at, line = {}, 0, 1
    for start in sorted(set(starts)):
        line += text.count("\n", at, start)
        out[start], at = line, start
    return out


def scan_text(path: str, text: str, *, code: bool | None = None) -> list[SecretFinding]:
    """The secrets in one file's text, in order. In a code file (`code`, by default `code_like`) a
    secret that only its `joined_literals` form shows is named too, on its first line."""
    seen = visible(text)  # as a reader sees it (zero-width characters inside a token dropped); keeps line breaks
    spans = _spans(seen)
    line_of = _line_numbers(seen, [start for start, *_ in spans])
    out = [SecretFinding(path, line_of[start], label, shown) for start, _, label, shown in spans]
    if code if code is not None else code_like(path, text):
        joined = joined_literals(seen)
        if joined != seen:
            lines = {f.line for f in out}
            spans = _spans(joined)
            line_of = _line_numbers(joined, [start for start, *_ in spans])
            for start, _, label, shown in spans:
                if (line := line_of[start]) not in lines:
                    lines.add(line)
                    out.append(SecretFinding(path, line, f"{label} (joined literals)", shown))
            out.sort(key=lambda f: f.line)
    return out


def scan_name(path: str) -> list[SecretFinding]:
    """A secret in a path (`references/AKIA….txt`): the path is shown with each one cut to its prefix."""
    spans = _spans(visible(path))
    if not spans:
        return []
    seen, masked, at = visible(path), [], 0
    for start, end, _, shown in spans:
        masked += [seen[at:start], shown]
        at = end
    shown_path = "".join(masked) + seen[at:]
    return [SecretFinding(shown_path, 0, f"{label} in the file name", shown) for _, _, label, shown in spans]


UNSCANNED = "unscanned archive"
"""The kind of a finding for an archive the scan could not read fully (rules/archives.py): refused and
warned about like a secret, since what is not read is not known to be clean."""


def scan_secrets(files: Mapping[str, tuple[int, bytes]]) -> list[SecretFinding]:
    """The secrets in every file of `files` (path -> (git mode, bytes)), read by `file_text`, in a
    symlink's target, and in each path; in an archive (rules/archives.py), in each member, named
    `archive.zip!inner/path`, and an archive not read fully is an UNSCANNED finding."""
    out: list[SecretFinding] = []
    for path in sorted(files):
        mode, data = files[path]
        out += scan_name(path)
        if mode != SYMLINK_MODE and (unpacked := unpack(path, data)) is not None:
            if unpacked.problem:
                out.append(SecretFinding(path, 0, UNSCANNED, f"{unpacked.problem}; fail closed"))
            inner = _scan_files({f"{path}!{p}": (m, b) for p, m, b in unpacked.members if not archive_kind(p, b)})
            inner += _scan_files({f"{path} ({label})": (0, b) for label, b in unpacked.meta}, names=False)
            shown = {f.shown for f in inner}
            out += inner + [f for p, b in unpacked.nested for f in _own_bytes(f"{path}!{p}", b, shown)]
            out += _own_bytes(path, data, shown)
        else:
            out += _scan_files({path: (mode, data)}, names=False)
    return out


def _scan_files(files: Mapping[str, tuple[int, bytes]], *, names: bool = True) -> list[SecretFinding]:
    out: list[SecretFinding] = []
    for path in sorted(files):
        mode, data = files[path]
        if names:
            out += scan_name(path)
        if mode == SYMLINK_MODE:
            out += [replace(f, kind=f"{f.kind} in the link target")
                    for f in scan_text(path, data.decode("utf-8", errors="replace"), code=False)]
            continue
        text, binary = file_text(data)
        if binary and script_like(data, path):  # a NUL-padded script runs as text (bash drops NULs): read it so
            text, binary = file_text(data.replace(b"\0", b""))  # a key a NUL cuts in two is whole again
        if binary:
            out += [replace(f, kind=f"{f.kind} in binary data") for f in _binary_findings(path, text)]
        else:
            out += scan_text(path, text, code=code_like(path, text))
    return out


def _own_bytes(path: str, data: bytes, shown: set[str]) -> list[SecretFinding]:
    """The secrets in an archive's own bytes, read as a binary's (`_strings`), but for one its members
    or fields already showed (a stored member's bytes, a member's name in its headers), once each."""
    out: list[SecretFinding] = []
    for f in _binary_findings(path, _strings(data)):
        if f.shown not in shown:
            shown.add(f.shown)
            out.append(replace(f, kind=f"{f.kind} in the archive's own bytes"))
    return out


def _binary_findings(path: str, text: str) -> list[SecretFinding]:
    """The secrets in a binary's printable runs (`_strings`): an assignment counts on a whole text line
    only (`token=…` glued from a .pyc's names does not)."""
    lines = text.split("\n")
    return [f for f in scan_text(path, text, code=False)
            if f.kind not in (CREDENTIAL_LABEL, GENERIC_LABEL) or "\0" not in lines[f.line - 1]]


__all__ = [
    "UNSCANNED",
    "ChangeKind",
    "FileChange",
    "SecretFinding",
    "cap_verdict",
    "code_like",
    "file_changes",
    "file_text",
    "is_text",
    "joined_literals",
    "not_evaluated_reason",
    "scan_name",
    "scan_secrets",
    "scan_text",
]
