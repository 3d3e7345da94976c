"""Characters a skill file must not carry (pure, no I/O).

Control characters (C0 and C1 but tab and newline, DEL, a carriage return that does not end a line)
make a terminal move the cursor, erase a line or recolour text, so a reviewer can be shown something
other than the file. Format characters (Unicode category Cf: zero-width space and joiners, bidi
embeddings, overrides and isolates, soft hyphen, invisible operators, tag characters) are invisible:
they hide a copied phrase from a scan and carry prompt injections ("ASCII smuggling"). Skills have no
use for either. What is encoding rather than content stays allowed:
- a byte-order mark as the very first character;
- CRLF line ends (a carriage return right before a newline);
- a zero-width joiner between two pictographs (emoji sequences such as 👩‍💻);
- an emoji tag sequence: tag characters (U+E0020..U+E007E) right after U+1F3F4 WAVING BLACK FLAG,
  ended by U+E007F CANCEL TAG (the subdivision flags such as England's 🏴󠁧󠁢󠁥󠁮󠁧󠁿); a tag character
  anywhere else is refused.
"""

from __future__ import annotations

import codecs
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

ALLOWED_CONTROLS = frozenset("\t\n")
BOM = "\ufeff"
ZWJ = "\u200d"
BLACK_FLAG, CANCEL_TAG = "\U0001F3F4", "\U000E007F"
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


def _flag_tags(text: str) -> set[int]:
    """Indices of the tag characters of emoji tag sequences: U+1F3F4, one or more tag specs
    (U+E0020..U+E007E), then U+E007F CANCEL TAG. A run not ended by CANCEL TAG is not one."""
    allowed: set[int] = set()
    start = text.find(BLACK_FLAG)
    while start >= 0:
        j = start + 1
        while j < len(text) and 0xE0020 <= ord(text[j]) <= 0xE007E:
            j += 1
        if j > start + 1 and text[j:j + 1] == CANCEL_TAG:
            allowed.update(range(start + 1, j + 1))
        start = text.find(BLACK_FLAG, j)
    return allowed


def hidden_characters(text: str) -> list[HiddenChar]:
    """Every character of `text` a skill file must not carry, in order, with its line and column.
    Lines are counted at '\\n' only, so a bare carriage return is reported, not counted as a line."""
    found: list[HiddenChar] = []
    flags = _flag_tags(text) if BLACK_FLAG in text else set()
    line, start = 1, 0
    for i, ch in enumerate(text):
        if ch == "\n":
            line, start = line + 1, i + 1
            continue
        if not is_hidden(ch):
            continue
        if (ch == BOM and i == 0) or (ch == "\r" and text[i + 1:i + 2] == "\n") or (ch == ZWJ and _emoji_joiner(text, i)) \
                or i in flags:
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


SCRIPT_SUFFIXES = frozenset({
    ".sh", ".bash", ".zsh", ".ksh", ".fish", ".ps1", ".psm1", ".bat", ".cmd", ".py", ".js", ".mjs", ".cjs", ".ts",
    ".rb", ".pl", ".pm", ".php", ".lua", ".r", ".tcl", ".awk", ".sed", ".md", ".txt", ".rst", ".csv", ".tsv",
    ".json", ".jsonl", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".conf", ".env", ".xml", ".html", ".htm", ".sql",
})
"""Extensions of files an interpreter or a reader takes as text (bash runs a script with NUL bytes in it,
dropping them): read for hidden characters even with a NUL byte (`file_text`)."""


BINARY_SUFFIXES = frozenset({
    ".png", ".jpg", ".jpeg", ".gif", ".ico", ".webp", ".bmp", ".tif", ".tiff", ".pdf", ".zip", ".gz", ".tgz", ".bz2",
    ".xz", ".7z", ".woff", ".woff2", ".ttf", ".otf", ".mp3", ".mp4", ".wav", ".ogg", ".webm", ".wasm", ".so", ".dll",
    ".dylib", ".exe", ".class", ".pyc", ".jar", ".db", ".sqlite",
})
"""Extensions of binary formats: such a file that is not valid UTF-8 is binary for this rule even with no
NUL byte in its first 8000 bytes (a small image can lack one); one that is valid UTF-8 text is read."""


def _suffix(path: str) -> str:
    name = path.rsplit("/", 1)[-1].casefold()
    return name[name.rindex("."):] if "." in name else ""


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def script_like(data: bytes, path: str = "") -> bool:
    """True for a file read as text whatever NUL bytes it holds: one that starts with `#!` (a script
    the kernel or `bash file` runs) or whose name ends in one of SCRIPT_SUFFIXES (case-folded)."""
    return data.startswith(b"#!") or _suffix(path) in SCRIPT_SUFFIXES


def file_text(data: bytes, path: str = "") -> str | None:
    """A file's bytes as the text this rule reads, or None for a binary file, decided as the secret
    scan decides (rules/skillfiles.file_text, one definition for both): a UTF-32/UTF-16 byte-order
    mark or UTF-16 without one (a NUL in every other byte) is decoded as that (PowerShell reads
    UTF-16 natively); otherwise a NUL byte in the first 8000 bytes (git's heuristic) makes the file
    binary (images, archives, compiled files: their hidden characters are out of this rule's scope,
    random bytes can spell U+202E; the secret scan reads their printable runs), but for a script or
    text file (`script_like`: `#!` first, or a name of SCRIPT_SUFFIXES, when `path` is given), read
    with its NUL bytes taken out as bash does (a NUL-padded script still runs); any other file is
    UTF-8 with an invalid byte read as U+FFFD, not a hidden character: one stray byte must not take a
    script bash still runs out of the scan (QA 30 N2). A UTF-8 byte-order mark stays the text's first
    character."""
    from skillforge.rules.skillfiles import file_text as decoded  # lazy: the secret rules are heavy

    text, binary = decoded(data)
    if binary:
        if not script_like(data, path):
            return None
        text = data.replace(b"\0", b"").decode("utf-8", errors="replace")
    elif _suffix(path) in BINARY_SUFFIXES and not data.startswith(b"#!") and not _utf8(data):
        return None  # an image or font without a NUL in its first 8000 bytes (QA 33 F6): not text
    return BOM + text if data.startswith(codecs.BOM_UTF8) else text


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
