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
from collections.abc import Sequence
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
