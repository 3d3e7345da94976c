"""Characters a skill file must not carry (pure, no I/O).

Control characters (C0 and C1 but tab and newline, DEL, a carriage return that does not end a line)
make a terminal move the cursor, erase a line or recolour text, so a reviewer can be shown something
other than the file. Format characters (Unicode category Cf: zero-width space and joiners, bidi
embeddings, overrides and isolates, soft hyphen, invisible operators, tag characters) are invisible:
they hide a copied phrase from a scan and carry prompt injections ("ASCII smuggling"). Skills have no
use for either. What is encoding rather than content stays allowed:
- a byte-order mark as the very first character;
- CRLF line ends (a carriage return right before a newline);
- a zero-width joiner between two pictographs (emoji sequences such as 👩‍💻).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

ALLOWED_CONTROLS = frozenset("\t\n")
BOM = "\ufeff"
ZWJ = "\u200d"
_EMOJI_MODIFIERS = frozenset(["\ufe0e", "\ufe0f", *map(chr, range(0x1F3FB, 0x1F400))])


@dataclass(frozen=True)
class HiddenChar:
    """One hidden character and where it is (1-based line and column)."""

    line: int
    column: int
    char: str

    @property
    def label(self) -> str:
        """`U+200B ZERO WIDTH SPACE`: the character named without printing it."""
        return char_label(self.char)


def char_label(ch: str) -> str:
    """The code point and Unicode name of `ch` (controls have no name: `U+001B`)."""
    name = unicodedata.name(ch, "")
    return f"U+{ord(ch):04X}" + (f" {name}" if name else "")


def is_hidden(ch: str) -> bool:
    """True for a control character other than tab and newline, or a format character (Cf)."""
    if ch in ALLOWED_CONTROLS:
        return False
    return unicodedata.category(ch) in ("Cc", "Cf")


def _emoji_joiner(text: str, i: int) -> bool:
    """True when the ZWJ at `i` joins two pictographs (skipping variation selectors and skin tones)."""
    j = i - 1
    while j >= 0 and text[j] in _EMOJI_MODIFIERS:
        j -= 1
    return (j >= 0 and i + 1 < len(text) and unicodedata.category(text[j]) == "So"
            and unicodedata.category(text[i + 1]) == "So")


def hidden_characters(text: str) -> list[HiddenChar]:
    """Every character of `text` a skill file must not carry, in order, with its line and column.
    Lines are counted at '\\n' only, so a bare carriage return is reported, not counted as a line."""
    found: list[HiddenChar] = []
    line, start = 1, 0
    for i, ch in enumerate(text):
        if ch == "\n":
            line, start = line + 1, i + 1
            continue
        if not is_hidden(ch):
            continue
        if (ch == BOM and i == 0) or (ch == "\r" and text[i + 1:i + 2] == "\n") or (ch == ZWJ and _emoji_joiner(text, i)):
            continue
        found.append(HiddenChar(line, i - start + 1, ch))
    return found


def hidden_in(text: str) -> list[str]:
    """The distinct hidden characters of `text` (see hidden_characters), in order of first use."""
    return list(dict.fromkeys(h.char for h in hidden_characters(text)))


def line_rules(found: Sequence[HiddenChar]) -> list[tuple[int, str]]:
    """(line, rule sentence) for each line holding hidden characters, lines in order."""
    by_line: dict[int, list[HiddenChar]] = {}
    for h in found:
        by_line.setdefault(h.line, []).append(h)
    return [(line, f"line {line}: holds invisible or control character(s) {describe_hidden(hs)}; skills have no "
                   "use for them and they can hide text from a reader") for line, hs in by_line.items()]


def added_hidden(parent: str, new: str) -> list[HiddenChar]:
    """The hidden characters of `new` on lines that `parent` does not have word for word: what a
    patch adds (a line the parent already carried was seen by whoever published it)."""
    old_lines = set(parent.split("\n"))
    new_lines = new.split("\n")
    return [h for h in hidden_characters(new) if new_lines[h.line - 1] not in old_lines]


def describe_hidden(found: Sequence[HiddenChar]) -> str:
    """`U+200B ZERO WIDTH SPACE, U+001B`: the distinct characters found, in order of first use."""
    return ", ".join(dict.fromkeys(h.label for h in found))


# ---- the files of a skill folder ----------------------------------------------------------------
@dataclass(frozen=True)
class FileHiddenChar:
    """One hidden character in a skill folder's file: the file's relative path, its 1-based line and
    column; line 0 when it is in the path itself (the column then counts characters of the path)."""

    path: str
    line: int
    column: int
    char: str

    @property
    def label(self) -> str:
        return char_label(self.char)

    def describe(self) -> str:
        """`scripts/x.sh:3:7: U+202E RIGHT-TO-LEFT OVERRIDE`, the character named, never printed (one
        in the path is shown as `\\u202e`)."""
        path = "".join(f"\\u{ord(ch):04x}" if is_hidden(ch) else ch for ch in self.path)
        where = f"{path} (its name, character {self.column})" if self.line == 0 else f"{path}:{self.line}:{self.column}"
        return f"{where}: {self.label}"


def file_text(data: bytes) -> str | None:
    """A file's bytes as the text this rule reads, or None for a binary file: one with a NUL byte or
    not valid UTF-8 (its hidden characters are out of this rule's scope; the secret scan still
    reads such files, rules/skillfiles.py). A UTF-8 byte-order mark stays the text's first character."""
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def files_hidden(texts: Mapping[str, str]) -> list[FileHiddenChar]:
    """Every hidden character (hidden_characters' rule: a leading BOM, CRLF and a ZWJ inside an emoji
    sequence allowed) in the text files of a skill folder, given as relative path -> text, and in the
    paths themselves; ordered by path, then line and column. Binary files are the caller's to leave
    out (file_text gives None for them): this reads text only."""
    found: list[FileHiddenChar] = []
    for path in sorted(texts):
        found += [FileHiddenChar(path, 0, i + 1, ch) for i, ch in enumerate(path) if is_hidden(ch)]
        found += [FileHiddenChar(path, h.line, h.column, h.char) for h in hidden_characters(texts[path])]
    return found


def file_rules(found: Sequence[FileHiddenChar]) -> list[str]:
    """One line per file line holding hidden characters: `path:line:column: LABEL` for its first one,
    the line's other characters named after it (line_rules' grouping, with the file and column)."""
    by_line: dict[tuple[str, int], list[FileHiddenChar]] = {}
    for f in found:
        by_line.setdefault((f.path, f.line), []).append(f)
    lines = []
    for hs in by_line.values():
        more = [c for c in dict.fromkeys(h.label for h in hs) if c != hs[0].label]
        lines.append(hs[0].describe() + (f" (also {', '.join(more)})" if more else "")
                     + (f", {len(hs)} on the line" if len(hs) > 1 else ""))
    return lines
