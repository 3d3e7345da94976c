"""Semantic diff of two SKILL.md versions and the risk level computed from it (pure, no I/O).

The level of a proposed change is computed from what it touches, whatever the model claims:
- L1: examples, not_for, description wording, the body's Examples section, as long as what they
  add is example-shaped: an added line that is a directive in disguise (`rules/directives.py`:
  override wording, a tool call, a named section, a guarded topic: confirmation, consent, fees,
  timing, a term of the confirmation constraints) makes the change L2, one that names the
  constraints or negates, assumes or outruns a confirmation they require makes it L3, with the
  line in the reason; the added lines are also read joined (`with-`/`out`, CJK lines), and a
  heading holding "example" (`## Examples 2`) is an Examples section;
- L2: keywords, use_when, instructions (any other body section), unknown extension keys;
- L3: dependencies, allowed-tools, compatibility, licence, the body's Constraints section, and
  any removed body line that carries a safety rule ("never", "must not", 不得, 禁止, ...).
In any part below L3, an added line holding a shell command or remote action (`rules/shellcmd.py`:
`rm -rf`, `curl … | sh`, `nc <ip>`, a new URL, `DROP DATABASE`, a `scripts/` file run with arguments)
makes it at least L2, and one doing what a "Never …" constraint forbids (`rules/forbidden.py`: its
verb and object, not negated; not read in not_for) makes it L3; the reason names the command or rule.
These rules read English and Chinese: an added line of an L1 part written in another language
(`rules/language.py`: another script, or Latin words another language's word list clearly wins)
is at least L2, a person reads what the rules cannot vouch for; the reason names the guess (fr, de, ...).
So is one holding an encoded run no decoded view of the leak scan reads (`rules/opaque.py`: a long
base64/base32/hex-like or `%XX` run; QA 40 F1); the reason shows its first characters only.
A claim lower than the computed level is ignored (`graded_level`).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from enum import IntEnum

from skillforge.rules.directives import (
    Directive,
    GuardedTopics,
    find_directive,
    guarded_topics,
)
from skillforge.rules.forbidden import Forbidden, find_forbidden, forbidden_actions
from skillforge.rules.language import unread_language
from skillforge.rules.opaque import opaque_runs, shown, unread_cjk, unread_latin
from skillforge.rules.redact import redact
from skillforge.rules.sessions import injection_phrases
from skillforge.rules.shellcmd import find_shell, held_targets
from skillforge.rules.textnorm import join_lines
from skillforge.state.skill import SkillFile


class Level(IntEnum):
    """Risk of a change. L1 publishes automatically, L2 needs a person, L3 is a suggestion only."""

    L1 = 1
    L2 = 2
    L3 = 3


FIELD_LEVELS: dict[str, Level] = {
    "description": Level.L1,
    "examples": Level.L1,
    "not_for": Level.L1,
    "keywords": Level.L2,
    "use_when": Level.L2,
    "metadata": Level.L2,
    "extra": Level.L2,
    "dependencies": Level.L3,
    "allowed_tools": Level.L3,
    "compatibility": Level.L3,
    "license": Level.L3,
    "name": Level.L3,
}
"""Frontmatter field -> the level a change to it has. metadata.version is not a change."""

SECTION_LEVELS: dict[str, Level] = {"examples": Level.L1, "constraints": Level.L3, "safety": Level.L3,
                                    "permissions": Level.L3}
"""Body section heading (lower case) -> level. Any other section is instructions: L2."""

DEFAULT_SECTION_LEVEL = Level.L2

SAFETY_MARKERS = re.compile(
    r"\b(never|must not|mustn't|do not|don't|forbidden|not allowed|without (?:explicit )?confirmation|"
    r"only after|confirm)\b|不得|禁止|不要|不能|不可|未经|确认|严禁|切勿", re.IGNORECASE)
"""A removed body line with one of these weakens a safety rule: L3."""

_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


@dataclass(frozen=True)
class FieldChange:
    """One changed part of the skill: a frontmatter field or a body section."""

    part: str
    """`frontmatter.<field>` or `body.<section>`."""
    level: Level
    removed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    reason: str = ""
    """Why the part is above its usual level (a directive under an L1 part), else empty."""


@dataclass(frozen=True)
class SemanticDiff:
    """What changed between two versions of a skill, part by part."""

    changes: tuple[FieldChange, ...]

    @property
    def computed_level(self) -> Level | None:
        """The highest level among the changes; None when nothing changed."""
        return max((c.level for c in self.changes), default=None)

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(c.part for c in self.changes)

    @property
    def metadata_only(self) -> bool:
        """True when only frontmatter changed (routing surface), False if any body section did."""
        return bool(self.changes) and all(c.part.startswith("frontmatter.") for c in self.changes)

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why parts were raised above their usual level, one line each."""
        return tuple(c.reason for c in self.changes if c.reason)

    @property
    def touches_body(self) -> bool:
        return any(c.part.startswith("body.") for c in self.changes)


def _as_lines(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value)
    if isinstance(value, dict):
        return tuple(f"{k}: {v}" for k, v in sorted(value.items()))
    return tuple(str(value).splitlines() or [""])


def sections(body: str) -> dict[str, list[str]]:
    """The body split at markdown headings: lower-cased heading -> its lines (preamble under '')."""
    out: dict[str, list[str]] = {"": []}
    current = ""
    for line in body.splitlines():
        m = _HEADING.match(line)
        if m:
            current = m.group(1).strip().lower()
            out.setdefault(current, [])
            continue
        out.setdefault(current, []).append(line)
    return out


def _norm(lines: list[str] | tuple[str, ...]) -> list[str]:
    """Lines compared modulo trailing spaces and blank lines: whitespace alone is no change."""
    return [ln.rstrip() for ln in lines if ln.strip()]


def _line_delta(old: list[str], new: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    removed: list[str] = []
    added: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            removed.extend(old[i1:i2])
        if tag in ("replace", "insert"):
            added.extend(new[j1:j2])
    return tuple(removed), tuple(added)


def _section_level(heading: str) -> Level:
    """The highest level among the keys the heading holds ("Constraints examples" is L3), else L2."""
    return max((level for key, level in SECTION_LEVELS.items() if key in heading), default=DEFAULT_SECTION_LEVEL)


WORDING_FIELDS = frozenset({"description", "not_for"})
"""L1 fields whose ordinary wording names tools and sections: only override and constraint tests apply."""
MAX_REASON_QUOTE = 160


_ITEM_START = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")
"""A line that starts a list item (the lines after it, up to the next item, continue it)."""
MAX_JOINED_WINDOW = 8
"""Added lines read together in runs of up to this many (a directive split over lines, `with-`/`out`)."""


def _items(lines: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The lines grouped into list items (an item's first line and the lines continuing it), or
    paragraphs: lines are joined only within one, so two separate examples never make a sentence."""
    items: list[list[str]] = []
    for line in lines:
        if not items or _ITEM_START.match(line):
            items.append([line])
        else:
            items[-1].append(line)
    return [tuple(item) for item in items if len(item) > 1]


def _directive_level(where: str, lines: tuple[str, ...], *, tools: tuple[str, ...], topics: GuardedTopics,
                     wording_only: bool = False, removes_flow: bool = False,
                     behaviour: bool = False) -> tuple[Level, str] | None:
    """(L2 or L3, reason) when the added lines of an L1 part hold a directive or touch a guarded topic,
    each line alone and runs of consecutive lines of one item joined (`join_lines`); the gravest
    wins, and a line that continues an item is quoted with its whole item."""
    def check(text: str) -> Directive | None:
        return find_directive(text, tools=() if wording_only else tools, confirmation_required=topics.confirmation,
                              wording_only=wording_only, topics=topics, removes_flow=removes_flow,
                              behaviour=behaviour)

    found: list[tuple[Directive, str]] = [(d, line) for line in lines if (d := check(line)) is not None]
    worst = max((d.grave for d, _ in found), default=None)
    for item in _items(lines) if worst is not True else ():
        for size in range(2, min(len(item), MAX_JOINED_WINDOW) + 1):
            found.extend((d, text) for i in range(len(item) - size + 1)
                         if (d := check(text := join_lines(item[i:i + size]))) is not None
                         and (worst is None or d.grave > worst))
            worst = max((d.grave for d, _ in found), default=None)
            if worst is True:
                break
    if not found:
        return None
    d, line = max(found, key=lambda f: f[0].grave)
    level = Level.L3 if d.grave else Level.L2
    if line in lines:  # a line of a list item broken over lines: quote the whole item
        i = j = lines.index(line)
        while i > 0 and not _ITEM_START.match(lines[i]):
            i -= 1
        while j + 1 < len(lines) and not _ITEM_START.match(lines[j + 1]):
            j += 1
        line = join_lines(lines[i:j + 1])
    quote = line.strip()
    quote = quote if len(quote) <= MAX_REASON_QUOTE else quote[:MAX_REASON_QUOTE] + "…"
    return level, f"{level.name}: a directive line under {where} ({d}): {quote!r}"


def _ordinary_text(skill: SkillFile, body: dict[str, list[str]]) -> list[str]:
    """The skill's everyday vocabulary: routing fields and its examples (not what the constraints guard)."""
    return [*skill.examples, *skill.keywords, skill.use_when or "", skill.description or "",
            *(ln for heading, lines in body.items() if _section_level(heading) is Level.L1 for ln in lines)]


def _quote(line: str) -> str:
    line = line.strip()
    return line if len(line) <= MAX_REASON_QUOTE else line[:MAX_REASON_QUOTE] + "…"


def _skill_text(skill: SkillFile) -> str:
    """Every text of a skill (frontmatter values and body), for what it already holds."""
    return "\n".join([*(ln for name in FIELD_LEVELS for ln in _as_lines(getattr(skill, name))),
                      *_as_lines(skill.description), skill.body])


@dataclass(frozen=True)
class _Risk:
    """What an added line of any part is checked for besides directives: a shell command or remote
    action (`rules/shellcmd.py`, at least L2) and an action the constraints forbid (`rules/forbidden.py`, L3)."""

    held: frozenset[str]
    """URLs and addresses the live skill already holds."""
    forbidden: tuple[Forbidden, ...]

    def raise_(self, level: Level, reason: str, where: str, lines: tuple[str, ...],
               acts: bool = True, told: bool = False, l1: bool = False) -> tuple[Level, str]:
        """(level, reason) after these checks of `lines`; `acts`: False for not_for, whose items name
        what the skill must not take ("dropping databases" keeps it away from the action); `told`:
        body Examples lines, whose quoted user request is not what the skill does; `l1`: an L1 part,
        where a line in a language the rules do not read (`rules/language.py`) or an encoded run
        no leak view reads (`rules/opaque.py`) is at least L2."""
        for line in lines:
            if acts and (hit := find_forbidden(line, self.forbidden, told=told)) is not None:
                rule = hit[0].line.lstrip("-*+ ")
                return Level.L3, (f"L3: a line under {where} does what the constraints forbid ({rule!r}: "
                                  f"{hit[1]!r}): {_quote(line)!r}")
        found = next(((f"a shell command or remote action under {where} ({cmd}): {_quote(line)!r}")
                      for line in lines if (cmd := find_shell(line, self.held)) is not None), None)
        unread = next(((f"a line under {where} is written in a language the level rules do not read "
                        f"(looks like {lang}): a person reviews it: {_quote(line)!r}")
                       for line in (lines if l1 else ()) if (lang := unread_language(line)) is not None), None)
        opaque = next((f"encoded-looking text the leak scan cannot read under {where} (ids or an encoding; "
                        f"a person looks): {shown(run)!r}" for run in (opaque_runs("\n".join(lines)) if l1 else ())
                       if not redact(run)[1]), None)  # a secret's run is the secret reason's, masked (QA 48 F4)
        if opaque is None:  # QA 46 F7: text that reads as no words is not "ids or an encoding"
            opaque = next((f"{script} text under {where} that common words do not cover (scrambled, enciphered "
                           f"or reversed; a person looks): {shown(redact(part)[0])!r}"
                           for script, read in (("Chinese", unread_cjk), ("Latin-letter", unread_latin))
                           for part in (read("\n".join(lines)) if l1 else ())), None)
        shipped = next((f"an instruction under {where} to send data to an outside address ({phrase!r}; a person "
                        f"looks)" for line in (lines if l1 else ()) for phrase in injection_phrases(line)), None)
        personal = next((f"personal data or a secret under {where} ({', '.join(sorted(kinds))}; a person looks): "
                         f"{_quote(masked)!r}" for line in (lines if l1 else ())
                         for masked, kinds in (redact(line),) if kinds), None)  # QA 45 F6: no vet's word alone
        for own in (found, unread, opaque, shipped, personal):
            if own is None:
                continue
            if level >= Level.L2 and reason:
                reason = f"{reason}; also {own}"
            else:
                level, reason = max(level, Level.L2), f"{max(level, Level.L2).name}: {own}"
        return level, reason


def semantic_diff(old: SkillFile, new: SkillFile) -> SemanticDiff:
    """Compare two parsed versions: each changed frontmatter field and body section, with its level."""
    changes: list[FieldChange] = []
    tools = tuple(dict.fromkeys([*old.dependencies, *new.dependencies]))
    old_s, new_s = sections(old.body), sections(new.body)
    topics = guarded_topics([*_l3_lines(old_s), *_l3_lines(new_s)], _ordinary_text(old, old_s))
    risk = _Risk(held_targets(_skill_text(old)), forbidden_actions([*_l3_lines(old_s), *_l3_lines(new_s)]))
    for name, level in FIELD_LEVELS.items():
        before, after = getattr(old, name), getattr(new, name)
        if name == "metadata":
            before = {k: v for k, v in before.items() if k != "version"}
            after = {k: v for k, v in after.items() if k != "version"}
        if before == after:
            continue
        removed, added = _line_delta(list(_as_lines(before)), list(_as_lines(after)))
        reason = ""
        if level is Level.L1 and (raised := _directive_level(
                f"frontmatter {name}", added if name != "description" else (" ".join(added),), tools=tools,
                topics=topics, wording_only=name in WORDING_FIELDS, removes_flow=name == "not_for")):
            level, reason = raised
        if level < Level.L3:
            level, reason = risk.raise_(level, reason, f"frontmatter {name}", added, acts=name != "not_for",
                                        l1=FIELD_LEVELS[name] is Level.L1)
        changes.append(FieldChange(f"frontmatter.{name}", level, removed, added, reason))
    for heading in list(old_s) + [h for h in new_s if h not in old_s]:
        before_lines, after_lines = _norm(old_s.get(heading, [])), _norm(new_s.get(heading, []))
        if before_lines == after_lines:
            continue
        removed, added = _line_delta(before_lines, after_lines)
        level = _section_level(heading)
        reason = ""
        if level is Level.L1:
            checked = added if heading in old_s else (heading, *added)  # a new heading is added text too
            if raised := _directive_level(f"## {heading[:1].upper()}{heading[1:]}", checked, tools=tools,
                                          topics=topics, behaviour=True):
                level, reason = raised
        if level < Level.L3:
            level, reason = risk.raise_(level, reason, f"## {heading[:1].upper()}{heading[1:]}",
                                        added if heading in old_s else (heading, *added),
                                        told=_section_level(heading) is Level.L1,
                                        l1=_section_level(heading) is Level.L1)
        if any(SAFETY_MARKERS.search(line) for line in removed):
            level = Level.L3
        changes.append(FieldChange(f"body.{heading or '(preamble)'}", level, removed, added, reason))
    return SemanticDiff(tuple(changes))


def graded_level(claimed: Level | None, computed: Level | None) -> Level | None:
    """The level a change is released at: the computed one, unless the model claimed higher."""
    if computed is None:
        return None
    if claimed is None:
        return computed
    return max(claimed, computed)


def _l3_lines(body: dict[str, list[str]]) -> list[str]:
    """The lines of a body's L3 sections (Constraints, safety, permissions), by `sections`."""
    return [line for heading, lines in body.items() if _section_level(heading) is Level.L3 for line in lines]


def constraint_lines(skill: SkillFile) -> list[str]:
    """The non-blank lines of the skill's L3 sections (Constraints, safety, permissions)."""
    return [line for line in _l3_lines(sections(skill.body)) if line.strip()]
