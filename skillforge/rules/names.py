"""Skill names (pure): whether an evolve candidate may take the name it releases as, and the name
a folder from `skills import --from DIR --rename` is given when its own is not valid.

A FIX releases as its own skill, so its name is the parent's. A DERIVED or CAPTURED candidate makes
a new skill: its name must be new. Taken are the names the store has registered and the folders
under skills/ (a folder someone is filling by hand is a skill in the making). Names are compared
case-folded, so that a case-insensitive file system cannot merge two of them. The format of a name
(a-z, 0-9, single hyphens) is the SKILL.md rule, checked where the file is parsed.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence, Set
from dataclasses import dataclass, field
from enum import StrEnum

from skillforge.state.evolve import CandidateKind
from skillforge.state.skill import NAME_MAX, NAME_RE


class NameVerdict(StrEnum):
    NEW = "NEW"
    """Free to take (or, for a FIX, the parent's own name)."""
    REGISTERED = "REGISTERED"
    """A skill of that name is registered in the store."""
    FOLDER = "FOLDER"
    """skills/ already holds a folder (or file) of that name."""
    INVALID = "INVALID"
    """No name, or a FIX that would release under another skill's name."""


def new_skill_name(kind: CandidateKind, target: str, parent: str, registered: Set[str],
                   folders: Set[str]) -> NameVerdict:
    """Decide whether a candidate of `kind` may release as `target`, made from skill `parent`."""
    name = target.strip().casefold()
    if not name:
        return NameVerdict.INVALID
    if kind is CandidateKind.FIX:
        return NameVerdict.NEW if name == parent.casefold() else NameVerdict.INVALID
    if name == parent.casefold() or name in {n.casefold() for n in registered}:
        return NameVerdict.REGISTERED
    if name in {n.casefold() for n in folders}:
        return NameVerdict.FOLDER
    return NameVerdict.NEW


def name_refusal(verdict: NameVerdict, kind: CandidateKind, target: str) -> str:
    """Why a candidate may not take its name, in a user's words ("" when it may)."""
    if verdict is NameVerdict.REGISTERED:
        return f"a {kind.value} candidate may not take the name of the existing skill '{target}'"
    if verdict is NameVerdict.FOLDER:
        return f"a {kind.value} candidate may not take the name '{target}': skills/{target} already exists"
    if verdict is NameVerdict.INVALID:
        return f"a {kind.value} candidate may not release as '{target}'"
    return ""


# ---- names for `skills import --from DIR --rename` ---------------------------------------------
_ACRONYM_WORD = re.compile(r"([A-Z]+)([A-Z][a-z])")
"""`URLTool`: an upper-case run, then a capitalised word (split before the word's capital)."""
_LOWER_UPPER = re.compile(r"([a-z0-9])([A-Z])")
"""`pdfTool`, `Web2Pdf`: a lower-case letter or digit, then a capital."""
_DROPPED = frozenset("'\"`\u2018\u2019\u201c\u201d")
"""Apostrophes and quotes vanish (`Tom's Tool` is `toms-tool`); other punctuation separates words."""


def is_skill_name(value: object) -> bool:
    """Whether `value` is a valid skill name (the SKILL.md rule: 1-NAME_MAX of a-z, 0-9 and single
    hyphens, no hyphen at either end)."""
    return isinstance(value, str) and len(value) <= NAME_MAX and NAME_RE.fullmatch(value) is not None


def kebab_name(raw: str) -> str | None:
    """The kebab-case skill name proposed for `raw` (a tool's folder name), or None when nothing is
    left. CamelCase is split (`PDF&URLTool` -> `pdf-url-tool`, `AI2sql` -> `ai2sql`); whitespace and
    ASCII or Unicode punctuation and symbols (`&`, `_`, `.`, ...) separate words; apostrophes and
    quotes are dropped; any other character outside a-z0-9 (a non-ASCII letter: nothing is
    transliterated) is dropped. Hyphens are collapsed and stripped, and a name over NAME_MAX
    characters is cut at the last hyphen that keeps it within (at NAME_MAX when it has none)."""
    spaced = _LOWER_UPPER.sub(r"\1-\2", _ACRONYM_WORD.sub(r"\1-\2", raw))
    chars = []
    for c in spaced:
        if c.isascii() and c.isalnum():
            chars.append(c.lower())
        elif c in _DROPPED:
            continue
        elif c.isspace() or unicodedata.category(c)[0] in "PSZC":
            chars.append("-")
        # a non-ASCII letter, mark or digit: dropped (no transliteration)
    name = re.sub(r"-{2,}", "-", "".join(chars)).strip("-")
    if len(name) > NAME_MAX:
        head = name[: NAME_MAX + 1]
        name = head[:NAME_MAX] if "-" not in head[1:] else head[: head.rindex("-")]
        name = name.strip("-")
    return name if is_skill_name(name) else None


def import_name(folder: str, declared: object) -> str | None:
    """The name a skill folder copied in by `import --from` takes, when its folder name or its
    SKILL.md `name:` (`declared`: None when missing or unreadable) is not a valid skill name. The
    valid one of the two wins (the folder's when both are valid); when neither is, the kebab-case
    of the folder name, else of `declared`. None when no name can be made."""
    if is_skill_name(folder):
        return folder
    if is_skill_name(declared):
        assert isinstance(declared, str)
        return declared
    return kebab_name(folder) or (kebab_name(declared) if isinstance(declared, str) else None)


def needs_import_name(folder: str, declared: object) -> bool:
    """Whether `import --from` must name the folder (`import_name`): its folder name or its `name:`
    is not valid. A valid folder under a different valid `name:` is not renamed: which of the two is
    meant is the author's to say (the SKILL.md rule refuses it as before)."""
    return not (is_skill_name(folder) and is_skill_name(declared))


@dataclass(frozen=True)
class SourceName:
    """A skill folder of an import source, as the name rules see it."""

    where: str
    """The folder, relative to the source (unique; messages show it)."""
    folder: str
    """The folder's own name."""
    declared: str | None
    """Its SKILL.md `name:` when that is text, else None."""


@dataclass
class NamePlan:
    """Which folders of a source import under a new name, and what stops them."""

    renames: dict[str, str] = field(default_factory=dict)
    """where -> the name it would import under (`import_name`)."""
    unnamed: list[str] = field(default_factory=list)
    """Folders that need a name and get none (nothing of a-z0-9 in either name)."""
    clashes: dict[str, list[str]] = field(default_factory=dict)
    """A name that two or more source folders would take -> those folders (at least one renamed)."""
    existing: dict[str, str] = field(default_factory=dict)
    """where -> its new name, which a skill of the workspace (registered, or a folder under skills/)
    already has."""


def plan_names(sources: Sequence[SourceName], taken: Set[str]) -> NamePlan:
    """The NamePlan of an import source: each folder that `needs_import_name`, its `import_name`,
    and where the new names collide with each other, with a folder that keeps its own name, or with
    `taken` (the workspace's skill names). Names are compared case-folded."""
    plan = NamePlan()
    final: dict[str, list[str]] = {}
    for s in sources:
        if needs_import_name(s.folder, s.declared):
            target = import_name(s.folder, s.declared)
            if target is None:
                plan.unnamed.append(s.where)
                continue
            plan.renames[s.where] = target
        else:
            target = s.folder
        final.setdefault(target.casefold(), []).append(s.where)
    taken_folded = {t.casefold() for t in taken}
    for where, target in plan.renames.items():
        group = final[target.casefold()]
        if len(group) > 1:
            plan.clashes.setdefault(target, sorted(group))
        elif target.casefold() in taken_folded:
            plan.existing[where] = target
    return plan


# ---- names for `skills new "NEED"` -----------------------------------------------------------------
_NEED_STOPWORDS = frozenset("a an the my our your their some any to for of at in on by with and or from me us "
                            "i we please can could would you help".split())
NEED_WORDS = 4


def need_name(need: str) -> str | None:
    """The name proposed for a need in plain words: its first NEED_WORDS content words in kebab
    case ("track a flight's status" -> `track-flight-status`), or None when nothing is left (a need
    in a script without ASCII letters: give --name)."""
    words = [w for w in (kebab_name(re.sub(r"['\u2019]s$", "", w)) for w in need.replace("-", " ").split()) if w]
    kept = list(dict.fromkeys(w for w in words if w not in _NEED_STOPWORDS))[:NEED_WORDS]  # each word once
    return kebab_name("-".join(kept)) if kept else None


TOPIC_WORDS = 3
_TOPIC_STOPWORDS = _NEED_STOPWORDS | frozenset(
    "what when where which who why how does did do is are was were will this that these there here it its "
    "today tomorrow tonight now yet still get got need want tell show know much many".split())


def topic_name(queries: Sequence[str], taken: Set[str] = frozenset()) -> str | None:
    """A name for a cluster of users' requests (`skills suggest`): the TOPIC_WORDS ASCII content
    words found in the most of them (at least two), most frequent first, ties alphabetical ("is
    flight CA1 late", "flight status of MU5", "my flight status" -> `flight-status`). Words with digits (flight
    numbers, dates) do not count. None when no word recurs (a cluster in a script without ASCII
    words) or the name is in `taken`."""
    df: dict[str, int] = {}
    for q in queries:
        words = {w for w in (kebab_name(re.sub(r"['\u2019]s$", "", t)) for t in q.split()) if w}
        for w in words:
            if len(w) >= 3 and w.isalpha() and w not in _TOPIC_STOPWORDS:
                df[w] = df.get(w, 0) + 1
    top = sorted((w for w, n in df.items() if n >= 2), key=lambda w: (-df[w], w))[:TOPIC_WORDS]
    name = kebab_name("-".join(top)) if top else None
    return name if name and name not in taken else None
