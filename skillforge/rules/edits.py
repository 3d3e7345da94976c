"""Edit operations: a proposal format that every model can apply (pure, no I/O).

A proposal in the `ops` format is a list of line operations on the SKILL.md body and of field
operations on its frontmatter:

- `insert_after(anchor, text)`: the text's lines go after the anchor's line;
- `replace(anchor, text)`: the anchor's line becomes the text's lines (an empty text removes it);
- `delete(anchor)`: the anchor's line is removed;
- `set_field(field, value)`: a frontmatter key of `EDITABLE_FIELDS` gets a new value (written as a
  JSON scalar or list, which YAML reads as it is; a list field takes one item per non-empty line).

**Anchors.** An anchor names a line of the *current* file. `anchors(text)` builds them per request:
each distinct non-empty body line, stripped and cut to `MAX_ANCHOR_CHARS` (a line whose label was
already taken by an earlier line, a duplicate, is not an anchor of its own: the label names the
first such line), plus `START` (the top of the body). A body with more distinct lines than
`MAX_ANCHORS` keeps every heading and the first other lines up to the bound, in file order. The
labels are the enum of the `anchor` field of the JSON schema sent with the request, so a server
that turns the schema into a grammar (llama.cpp) can only name text that exists: an operation can
never fail to match. Model output from a server that ignores the enum and names a label that is
not there is refused (`EditRefusal.UNKNOWN_ANCHOR`), with the labels, for a retry.

**Semantics.** Every anchor refers to the file the proposal was made on, not to the file after
earlier operations, so the order of operations never makes one fail: replacing or deleting the
same line twice keeps the last one, insertions after one line keep their order, an insertion after
a deleted line goes where the line was, `replace(START, t)` inserts at the top and `delete(START)`
does nothing. `set_field` twice on one field keeps the last value. The result must still be a
skill; that, the leak scan, the computed level, the fingerprint and the textual learning rate are
checked on the produced text by the callers, exactly as for any other format.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

START = "(start of body)"
"""The anchor before the first body line: insert_after(START) adds text at the top of the body."""
MAX_ANCHORS = 48
"""Labels in one request's enum, START included. The example skills have 23-25 body lines."""
MAX_ANCHOR_CHARS = 40
"""A label is its line, stripped, cut to this many characters (the enum is part of every request)."""
EDITABLE_FIELDS = ("description", "use_when", "not_for", "keywords", "examples")
LIST_FIELDS = frozenset({"not_for", "keywords", "examples"})
_TOP_KEY = re.compile(r"^[A-Za-z_][\w.-]*\s*:")


class EditKind(StrEnum):
    INSERT_AFTER = "insert_after"
    REPLACE = "replace"
    DELETE = "delete"
    SET_FIELD = "set_field"


LINE_KINDS = (EditKind.INSERT_AFTER, EditKind.REPLACE, EditKind.DELETE)


class EditRefusal(StrEnum):
    UNKNOWN_ANCHOR = "unknown_anchor"
    """The operation names a line the file does not have (a server that ignored the enum)."""
    UNKNOWN_FIELD = "unknown_field"
    NO_FRONTMATTER = "no_frontmatter"


class EditError(ValueError):
    """An operation list that cannot be applied, and why (the message lists what could be named)."""

    def __init__(self, reason: EditRefusal, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class EditOp:
    """One operation. Line operations use `anchor` and `text`; set_field uses `field` and `text`."""

    kind: EditKind
    anchor: str = ""
    text: str = ""
    field: str = ""


@dataclass(frozen=True)
class Anchors:
    """The enum of one file: labels in file order (START first) and the line index each names."""

    labels: tuple[str, ...]
    line_of: Mapping[str, int] = field(default_factory=dict)
    """Label -> index in `text.split("\\n")`; START -> the closing `---` line (or -1 without one)."""


def _frontmatter_end(lines: Sequence[str]) -> int:
    """Index of the closing `---` line, or -1 when the file has no frontmatter."""
    if not lines or lines[0].lstrip("\ufeff").rstrip("\r \t") != "---":
        return -1
    return next((i for i in range(1, len(lines)) if lines[i].rstrip("\r \t") == "---"), -1)


GRAMMAR_SAFE = str.maketrans({'"': "'", "\\": "/"})
"""Characters a label never holds: llama-cpp-python's server (0.3.36) failed to parse the grammar of
an enum value with a double quote ("failed to parse grammar", then a segfault in libllama), measured
on restaurant-booking's `- 输入："..."` lines. A label still names its line; `apply_ops` looks a
model's anchor up as given and as a label, so a raw line with its quotes is found too."""


def label(line: str) -> str:
    """The anchor label of a line: stripped, double quotes and backslashes made grammar-safe,
    control characters dropped, cut to MAX_ANCHOR_CHARS (with an ellipsis)."""
    s = "".join(ch for ch in line.strip().translate(GRAMMAR_SAFE) if ch >= " " and ch != "\x7f")
    return s if len(s) <= MAX_ANCHOR_CHARS else s[:MAX_ANCHOR_CHARS - 1] + "…"


def anchors(text: str) -> Anchors:
    """The anchors of `text` (see the module docstring): bounded by MAX_ANCHORS, deduplicated."""
    lines = text.split("\n")
    end = _frontmatter_end(lines)
    found: dict[str, int] = {}
    for i in range(end + 1, len(lines)):
        lab = label(lines[i])
        if lab and lab != START and lab not in found:
            found[lab] = i
    room = MAX_ANCHORS - 1
    if len(found) > room:
        headings = [lab for lab in found if lab.startswith("#")][:room]
        others = [lab for lab in found if not lab.startswith("#")][:room - len(headings)]
        keep = set(headings) | set(others)
        found = {lab: i for lab, i in found.items() if lab in keep}
    return Anchors((START, *found), {START: end, **found})


def _lines_of(text: str) -> list[str]:
    """The lines a text becomes: line endings normalised, one trailing newline dropped, none for ''."""
    t = text.replace("\r\n", "\n").replace("\r", "\n")
    t = t.removesuffix("\n")
    return t.split("\n") if t else []


def field_line(name: str, value: str) -> str:
    """`name: <value>` as one frontmatter line: a JSON string, or a JSON list of the value's
    non-empty lines (a leading `- ` bullet dropped) for a list field."""
    if name in LIST_FIELDS:
        items = [re.sub(r"^[-*]\s+", "", s.strip()) for s in _lines_of(value)]
        return f"{name}: " + json.dumps([s for s in items if s], ensure_ascii=False)
    return f"{name}: " + json.dumps(" ".join(s.strip() for s in _lines_of(value) if s.strip()), ensure_ascii=False)


def set_field(front: list[str], name: str, value: str) -> list[str]:
    """The frontmatter lines (between the `---` lines) with top-level key `name` set: its line and
    continuation lines (indented, list items, comments, blank) replaced by one line, or one line
    appended when the key is absent."""
    if name not in EDITABLE_FIELDS:
        raise EditError(EditRefusal.UNKNOWN_FIELD, f"set_field names {name!r}; it may set {', '.join(EDITABLE_FIELDS)}")
    key = re.compile(rf"^{re.escape(name)}\s*:")
    start = next((i for i, ln in enumerate(front) if key.match(ln)), None)
    if start is None:
        return [*front, field_line(name, value)]
    stop = start + 1
    while stop < len(front) and not _TOP_KEY.match(front[stop]):
        stop += 1
    while stop > start + 1 and not front[stop - 1].strip():  # blank lines before the next key stay
        stop -= 1
    return [*front[:start], field_line(name, value), *front[stop:]]


def apply_edits(text: str, ops: Sequence[EditOp]) -> str:
    """The file after `ops`, every anchor read on `text` itself. EditError (UNKNOWN_ANCHOR,
    UNKNOWN_FIELD, NO_FRONTMATTER) when an operation names something the file does not have."""
    lines = text.split("\n")
    table = anchors(text)
    end = table.line_of[START]
    replaced: dict[int, list[str]] = {}
    after: dict[int, list[str]] = {}
    fields: list[EditOp] = []
    for op in ops:
        if op.kind is EditKind.SET_FIELD:
            fields.append(op)
            continue
        at = table.line_of.get(op.anchor)
        if at is None:
            at = table.line_of.get(label(op.anchor))  # the raw line, quotes and all
        if at is None:
            shown = ", ".join(repr(a) for a in table.labels[:12])
            raise EditError(EditRefusal.UNKNOWN_ANCHOR, f"{op.kind.value} names the anchor {op.anchor[:80]!r}, which is "
                            f"not a line of the file; an anchor is one of the schema's enum values "
                            f"({len(table.labels)}: {shown}{', ...' if len(table.labels) > 12 else ''})")
        if op.anchor == START:
            if op.kind is not EditKind.DELETE:  # replace(START) inserts too: there is no line to replace
                after.setdefault(at, []).extend(_lines_of(op.text))
        elif op.kind is EditKind.INSERT_AFTER:
            after.setdefault(at, []).extend(_lines_of(op.text))
        else:
            replaced[at] = _lines_of(op.text) if op.kind is EditKind.REPLACE else []
    if fields and end < 0:
        raise EditError(EditRefusal.NO_FRONTMATTER, "set_field needs a frontmatter, and the file has none")
    out: list[str] = []
    for i, line in enumerate(lines):
        out.extend(replaced.get(i, [line]))
        out.extend(after.get(i, []))
    if end < 0 and -1 in after:
        out = [*after[-1], *out]
    if fields:
        front = out[1:end]  # line operations touch the body only: the frontmatter is unmoved
        for op in fields:
            front = set_field(front, op.field, op.text)
        out = [out[0], *front, *out[end:]]
    new = "\n".join(out)
    return new if new.endswith("\n") else new + "\n"


def describe(ops: Sequence[EditOp]) -> str:
    """The operations as text (stored as the candidate's patch, shown in a retry)."""
    return "\n".join(f"set_field({op.field!r}, {op.text!r})" if op.kind is EditKind.SET_FIELD else
                     f"{op.kind.value}({op.anchor!r})" if op.kind is EditKind.DELETE else
                     f"{op.kind.value}({op.anchor!r}, {op.text!r})" for op in ops)
