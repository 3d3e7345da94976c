"""Apply a proposed patch to a SKILL.md safely, or not at all.

A patch is either a FULL file or SEARCH/REPLACE blocks:

    <<<<<<< SEARCH
    lines that are in the file now
    =======
    the lines that replace them
    >>>>>>> REPLACE

Each SEARCH block must match exactly one place. Matching is tolerant in three steps (exact, then
whitespace-normalised, then indentation-flexible); a tolerant match must also reach a similarity
floor against the real text. A block that matches nothing or more than once is refused with the
nearest lines of the file, so that a retry can be given the real content. The result must still be a
skill: it parses, keeps its name, has a body, and carries no reasoning tags. A file whose every line
ends in CRLF keeps CRLF: the patch is applied to its LF reading and the result written back with CRLF
(`keep_line_ending`), so the new lines do not end in LF among CRLF ones.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from skillforge.errors import SkillFileError, SkillForgeError
from skillforge.skill.file import parse
from skillforge.state.evolve import PatchFormatName as PatchFormat  # one enum for state and service
from skillforge.state.skill import SkillFile

SIMILARITY_FLOOR = 0.85
"""A tolerant match must be at least this similar (difflib ratio) to the SEARCH text."""

_BLOCK = re.compile(r"<{5,9} ?SEARCH[^\n]*\n(.*?)\n?={5,9}[^\n]*\n(.*?)\n?>{5,9} ?REPLACE[^\n]*", re.S)
REASONING_TAGS = re.compile(r"</?\s*(think|thinking|reasoning|scratchpad|reflection|analysis)\s*>", re.I)
_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n(.*?)\n\s*```\s*$", re.S)


class MatchMode(StrEnum):
    EXACT = "exact"
    WHITESPACE = "whitespace"
    INDENTATION = "indentation"


class PatchRefusal(StrEnum):
    NO_MATCH = "no_match"
    AMBIGUOUS = "ambiguous"
    NO_BLOCKS = "no_blocks"
    REASONING_TAG = "reasoning_tag"
    NOT_A_SKILL = "not_a_skill"
    NAME_CHANGED = "name_changed"
    EMPTY_BODY = "empty_body"
    UNKNOWN_ANCHOR = "unknown_anchor"
    """An edit operation names a line the file does not have (`rules/edits.py`)."""
    UNKNOWN_FIELD = "unknown_field"
    OVER_BUDGET = "over_budget"
    """The change is larger than the round's textual learning rate (`rules/learning_rate.py`)."""


class PatchError(SkillForgeError):
    """A patch that cannot be applied safely. `nearest` holds the closest lines of the real file."""

    def __init__(self, reason: PatchRefusal, message: str, nearest: str = "") -> None:
        super().__init__(message + (f"\nnearest lines in the file:\n{nearest}" if nearest else ""))
        self.reason = reason
        self.nearest = nearest


@dataclass(frozen=True)
class Applied:
    """A patch applied: the new text, the parsed skill, how each block matched, and the unified diff."""

    text: str
    skill: SkillFile
    modes: tuple[MatchMode, ...]
    diff: str


def crlf(text: str) -> bool:
    """True when every line break of `text` is CRLF (and there is one)."""
    return "\r\n" in text and text.count("\r\n") == text.count("\n")


def as_lf(text: str) -> str:
    """`text` with CRLF line ends read as LF."""
    return text.replace("\r\n", "\n")


def keep_line_ending(parent_text: str, new_text: str) -> str:
    """`new_text` written with `parent_text`'s line ends: CRLF throughout when the parent is all CRLF
    (`crlf`), else as it is (a file of mixed ends is not rewritten)."""
    return as_lf(new_text).replace("\n", "\r\n") if crlf(parent_text) else new_text


def parse_blocks(patch: str) -> list[tuple[str, str]]:
    """The (search, replace) pairs of a SEARCH/REPLACE patch, in order."""
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(patch)]


def _norm_ws(line: str) -> str:
    """Runs of inner whitespace collapsed and trailing space dropped; the indentation is kept."""
    indent = len(line) - len(line.lstrip())
    return line[:indent] + re.sub(r"\s+", " ", line[indent:]).rstrip()


def _norm_indent(line: str) -> str:
    """As `_norm_ws`, and the indentation dropped too."""
    return re.sub(r"\s+", " ", line).strip()


def _find(lines: list[str], search: list[str], key: Callable[[str], str]) -> list[int]:
    """Start indexes where `search` matches `lines` under the line normaliser `key`."""
    target = [key(s) for s in search]
    keyed = [key(x) for x in lines]
    n = len(target)
    return [i for i in range(len(lines) - n + 1) if keyed[i:i + n] == target]


def nearest_lines(text: str, search: str, context: int = 1) -> str:
    """The window of the file most similar to `search`, with line numbers, for the retry prompt."""
    lines = text.splitlines()
    want = search.splitlines() or [search]
    n = max(1, len(want))
    best, best_i = -1.0, 0
    for i in range(max(1, len(lines) - n + 1)):
        r = difflib.SequenceMatcher(a="\n".join(want), b="\n".join(lines[i:i + n]), autojunk=False).ratio()
        if r > best:
            best, best_i = r, i
    lo, hi = max(0, best_i - context), min(len(lines), best_i + n + context)
    return "\n".join(f"{k + 1:4d}| {lines[k]}" for k in range(lo, hi))


def _apply_block(text: str, search: str, replace: str) -> tuple[str, MatchMode]:
    if not search.strip():
        raise PatchError(PatchRefusal.NO_MATCH, "a SEARCH block is empty: it anchors nothing")
    if search in text:
        count = text.count(search)
        if count > 1:
            raise PatchError(PatchRefusal.AMBIGUOUS, f"the SEARCH block matches {count} places; make it unique",
                             nearest_lines(text, search))
        return text.replace(search, replace, 1), MatchMode.EXACT
    lines = text.split("\n")
    want = search.split("\n")
    modes: tuple[tuple[MatchMode, Callable[[str], str]], ...] = (
        (MatchMode.WHITESPACE, _norm_ws), (MatchMode.INDENTATION, _norm_indent))
    for mode, key in modes:
        hits = _find(lines, want, key)
        if len(hits) > 1:
            raise PatchError(PatchRefusal.AMBIGUOUS, f"the SEARCH block matches {len(hits)} places ({mode}); "
                             "make it unique", nearest_lines(text, search))
        if len(hits) == 1:
            i = hits[0]
            found = "\n".join(lines[i:i + len(want)])
            ratio = difflib.SequenceMatcher(a=search, b=found, autojunk=False).ratio()
            if ratio < SIMILARITY_FLOOR:
                raise PatchError(PatchRefusal.NO_MATCH, f"the closest match is only {ratio:.2f} similar "
                                 f"(floor {SIMILARITY_FLOOR})", nearest_lines(text, search))
            new_lines = lines[:i] + replace.split("\n") + lines[i + len(want):]
            return "\n".join(new_lines), mode
    raise PatchError(PatchRefusal.NO_MATCH, "the SEARCH block matches nothing in the file",
                     nearest_lines(text, search))


def _strip_fence(text: str) -> str:
    m = _FENCE.match(text)
    return m.group(1) + "\n" if m else text


def check_skill_text(text: str, parent: SkillFile, file: str = "SKILL.md") -> SkillFile:
    """Refuse model output that is not a skill: reasoning tags, unparseable, renamed, empty body."""
    tag = REASONING_TAGS.search(text)
    if tag:
        raise PatchError(PatchRefusal.REASONING_TAG, f"the patched file contains a reasoning tag {tag.group(0)!r}")
    try:
        skill = parse(text, file, parent.name)
    except SkillFileError as exc:
        raise PatchError(PatchRefusal.NOT_A_SKILL, f"the patched file is not a valid SKILL.md: {exc}") from exc
    if skill.name != parent.name:
        raise PatchError(PatchRefusal.NAME_CHANGED, f"the patch renames the skill to {skill.name!r}")
    if not skill.body.strip():
        raise PatchError(PatchRefusal.EMPTY_BODY, "the patched file has an empty body")
    return skill


def apply_patch(parent_text: str, parent: SkillFile, patch: str, fmt: PatchFormat) -> Applied:
    """Apply `patch` to `parent_text`. Raises PatchError, naming why, if it cannot be done safely."""
    modes: list[MatchMode] = []
    own_eol = crlf(parent_text)  # applied to the LF reading, written back with CRLF (keep_line_ending)
    if fmt is PatchFormat.FULL:
        new_text = _strip_fence(as_lf(patch) if own_eol else patch)
    else:
        blocks = parse_blocks(as_lf(patch) if own_eol else patch)
        if not blocks:
            raise PatchError(PatchRefusal.NO_BLOCKS, "no SEARCH/REPLACE block found in the patch")
        new_text = as_lf(parent_text) if own_eol else parent_text
        for search, replace in blocks:
            tag = REASONING_TAGS.search(replace)
            if tag:
                raise PatchError(PatchRefusal.REASONING_TAG, f"a REPLACE block contains a reasoning tag {tag.group(0)!r}")
            new_text, mode = _apply_block(new_text, search, replace)
            modes.append(mode)
    if not new_text.endswith("\n"):
        new_text += "\n"
    new_text = keep_line_ending(parent_text, new_text)
    skill = check_skill_text(new_text, parent)
    return Applied(new_text, skill, tuple(modes), text_diff(parent_text, new_text))


def text_diff(old: str, new: str) -> str:
    """The unified diff of two SKILL.md texts, as a candidate's applied diff."""
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), "a/SKILL.md", "b/SKILL.md"))
