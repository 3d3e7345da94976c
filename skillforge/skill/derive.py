"""The children of a split (`skills split NAME`), built from the parent's SKILL.md without a model.

Each piece of the parent goes to the intents it names (`rules.split.mentions`: an intent's tools,
their namespaces, its name, the keywords found in its cases' queries):
- description and use_when, sentence by sentence; examples one by one; keywords by the intents
  whose case queries, then whose examples, hold them (else those they name, else all);
  dependencies by the intents whose cases' fixtures use them (one no case uses: every child);
- the body block by block (rules.split.body_segments: a fenced block, a table, a list item with its
  indented lines, a blockquote go whole to a child, never torn), section by section: a heading that
  names one intent takes its whole section to that child;
- a piece that names no intent goes to every child, except that a sentence or an example that
  names none (an example: or several) goes where `nearest` puts it (the caller's embedder against
  each intent's case queries), when it finds a clear winner; one that names several goes to each
  of them and is listed in `shared` for the reviewer (so is a multi-line block that names none);
  one that names only other intents is left out.
Numbered lists are renumbered; a `## Related` section names the siblings.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from skillforge.rules.split import HEADING, UNIT, body_segments, mentions
from skillforge.rules.versions import FIRST_VERSION
from skillforge.state.skill import SkillFile
from skillforge.state.split import Intent

Nearest = Callable[[str], "str | None"]
"""The intent a text is closest to (the caller's embedder against each intent's case queries), or None."""
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])")
_NUMBERED = re.compile(r"^(\d+)\.(\s)")


@dataclass
class Children:
    files: dict[str, SkillFile]
    """Child name -> its SKILL.md, in intent order."""
    shared: list[str] = field(default_factory=list)
    """Pieces given to more than one child (they name several intents): for the reviewer."""
    dropped: list[str] = field(default_factory=list)
    """Examples that no intent took."""


def _owners_of(piece: str, terms: Mapping[str, Sequence[str]], nearest: Nearest | None) -> set[str]:
    """The intents a piece names; one that names none: the intent `nearest` finds, if any."""
    m = mentions(piece, terms)
    if not m and nearest is not None and (n := nearest(piece)) is not None:
        m = {n}
    return m


def _pick(pieces: Sequence[str], terms: Mapping[str, Sequence[str]], intent: str, shared: list[str],
          nearest: Nearest | None = None) -> list[str]:
    """The pieces for `intent`: those naming it or no intent."""
    out = []
    for p in pieces:
        m = _owners_of(p, terms, nearest)
        if not m or intent in m:
            out.append(p)
            if (len(m) > 1 or (not m and "\n" in p)) and p not in shared:  # a whole block given to every child too
                shared.append(p)
    return out


def _text(text: str, terms: Mapping[str, Sequence[str]], intent: str, shared: list[str], fallback: str,
          nearest: Nearest | None) -> str:
    """The sentences of `text` for `intent` (`fallback` first when none of them names it)."""
    parts = [s for s in _SENTENCE.split(text.strip()) if s.strip()]
    mine = _pick(parts, terms, intent, shared, nearest)
    if not any(intent in _owners_of(s, terms, nearest) for s in mine):
        mine = [fallback, *mine]
    out = ""
    for s in (s.strip() for s in mine):  # a space after Latin punctuation, none after CJK
        out += (" " if out and out[-1] in ".!?;" else "") + s
    return out


def _body(body: str, terms: Mapping[str, Sequence[str]], intent: str, shared: list[str]) -> str:
    """The body's sections with the units (Markdown blocks, kept whole: rules.split.body_segments)
    for `intent`; a section left with only its heading goes."""
    sections: list[list[tuple[str, str]]] = [[]]
    for kind, text in body_segments(body):
        if kind == HEADING:
            sections.append([(kind, text)])
        else:
            sections[-1].append((kind, text))
    out: list[str] = []
    for sec in sections:
        heading = sec[0][1] if sec and sec[0][0] == HEADING else None
        segments = sec[1:] if heading else sec
        owner = mentions(heading, terms) if heading else set()
        if owner and intent not in owner:
            continue
        units = [text for kind, text in segments if kind == UNIT]
        keep = set(_pick(units, terms, intent, shared)) if len(owner) != 1 else set(units)
        kept, n = [], 0
        for kind, unit in segments:
            if kind == UNIT and unit not in keep:
                continue
            if kind == UNIT and (numbered := _NUMBERED.match(unit)):
                n += 1
                unit = f"{n}." + unit[numbered.end(1) + 1:]
            kept.append(unit)
        if units and not any(u.strip() for u in kept):
            continue
        out += ([heading] if heading else []) + kept
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n") + "\n"


def _owners(keyword: str, intents: Sequence[Intent], examples: Mapping[str, list[str]]) -> set[str]:
    """The intents a keyword goes to: those whose case queries hold it, else those whose examples
    do, else those it names, else all."""
    found = {i.name for i in intents if keyword in i.terms}
    found = found or {i.name for i in intents if mentions(" \n".join(examples[i.name]), {i.name: [keyword]})}
    found = found or mentions(keyword, {i.name: i.terms for i in intents})
    return found or {i.name for i in intents}


def derive_children(parent: SkillFile, intents: Sequence[Intent], names: Sequence[str],
                    nearest: Nearest | None = None) -> Children:
    """One SKILL.md per intent, named `names[i]` (see the module docstring). `nearest` gives the
    intent closest to a text: for an example that names no intent or several, and for a sentence
    of description or use_when that names none."""
    terms = {i.name: i.terms for i in intents}
    child_of = dict(zip((i.name for i in intents), names, strict=True))
    shared: list[str] = []
    examples: dict[str, list[str]] = {i.name: [] for i in intents}
    dropped = []
    for ex in parent.examples:
        m = mentions(ex, terms)
        where = next(iter(m)) if len(m) == 1 else nearest(ex) if nearest is not None else None
        if where in examples:
            examples[where].append(ex)
        else:
            dropped.append(ex)
    files = {}
    for intent in intents:
        name = child_of[intent.name]
        siblings = [child_of[i.name] for i in intents if i.name != intent.name]
        keywords = [k for k in parent.keywords if intent.name in _owners(k, intents, examples)]
        used = {t for i in intents for t in i.tools}
        deps = [d for d in parent.dependencies if d in intent.tools or d not in used]
        fallback = f"The {intent.name.replace('-', ' ')} part of {parent.name}."
        related = "\n## Related\n" + "".join(f"- Split from {parent.name}: for the other job use {s}.\n" for s in siblings)
        files[name] = parent.model_copy(update={
            "name": name,
            "description": _text(parent.description, terms, intent.name, shared, fallback, nearest),
            "use_when": None if parent.use_when is None else _text(parent.use_when, terms, intent.name, shared,
                                                                   fallback, nearest),
            "metadata": {**parent.metadata, "version": FIRST_VERSION},
            "not_for": [n for n in parent.not_for if intent.name not in mentions(n, terms)],
            "keywords": keywords, "examples": examples[intent.name], "dependencies": deps,
            "body": _body(parent.body, terms, intent.name, shared) + related})
    return Children(files=files, shared=shared, dropped=dropped)


__all__ = ["Children", "derive_children"]
