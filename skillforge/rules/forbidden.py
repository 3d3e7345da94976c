"""The actions a skill's own Constraints forbid, and an added line that does one (pure, no I/O).

A Constraints line "Never drop a database." forbids a verb done to an object. An example or
instruction a patch adds that does that ("→ drop the old orders_archive database, then back up")
turns the rule around as surely as deleting it, so `rules/levels.py` makes it L3, like a removed
safety line. The test is kept simple and measurable:

- `forbidden_actions` reads each constraints line that starts a prohibition (never, do not, don't,
  must not, may not, cannot, should not; 不要, 不得, 禁止, 切勿, 严禁, 请勿, 不能, 不可) and takes the
  verb after it (with a particle: "make up") and the head noun of each object it names (the last
  word before a preposition, "and"/"or" or punctuation: "the newest backup of a database" ->
  backup); in Chinese the first two characters after the prohibition and the last two of its
  clause (不要删除最新的备份 -> 删除, 备份);
- `find_forbidden` flags an added line holding the verb, in any inflection (drop, drops, dropped,
  dropping), and one of the nouns (singular or plural) within a few words after it, or before a
  past participle ("the database is dropped"); a verb negated just before it ("never drop the
  database", 不删除) restates the rule and is not a finding;
- a prohibition with a condition (without confirmation, unless, until, 未经...) forbids the action
  only unconfirmed: a line that asks for the confirmation as the rule does
  (`directives.affirms_confirmation`) is not a finding.

In a body example line the quoted text is the user's request ("drop the orders database" → refuse)
and is not read; a frontmatter example is read whole (it routes that request to the skill).
A not_for item naming the action ("dropping databases") keeps the skill away from it: levels does
not apply this test there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from skillforge.rules.directives import ACTION_NEGATED, QUOTED, affirms_confirmation
from skillforge.rules.textnorm import visible

PROHIBITION = re.compile(
    r"(?:^[\s>*+\-\d.)]*|[.;:!?]\s+)(?:never|do\s+not|don'?t|must\s+not|mustn'?t|may\s+not|cannot|can'?t|should\s+not|shouldn'?t|"
    r"(?:is|are)\s+not\s+(?:allowed|permitted)\s+to)\s+(?:ever\s+|directly\s+|automatically\s+)?", re.IGNORECASE)
CJK_PROHIBITION = re.compile(r"不要|不得|禁止|切勿|严禁|请勿|不能|不可")
CONDITION = re.compile(r"\b(?:without|unless|until|before|except|only\s+(?:after|if|when))\b|未经|除非|之前|确认|同意",
                       re.IGNORECASE)
"""A prohibition with a condition: the action is forbidden unconfirmed only."""
RESTRICTED = re.compile(r"^\s*(?:that|which|who|whose|not|unless|except|outside|beyond|other\s+than|until|if|when)\b",
                        re.IGNORECASE)
"""After the object: the prohibition covers only some of those objects ("live data that no tool returned"),
which a verb and a noun cannot tell apart; unless the condition is a confirmation, it is not read."""
_BOUNDARY = frozenset({
    "of", "in", "on", "at", "for", "from", "to", "into", "onto", "with", "without", "unless", "until", "before",
    "after", "when", "while", "if", "that", "which", "by", "than", "because", "so", "as", "or", "and", "but",
    "nor", "via", "under", "over", "about", "outside", "inside", "except", "unasked"})
_SKIP = frozenset({"a", "an", "the", "any", "all", "every", "each", "some", "its", "their", "your", "his", "her",
                   "our", "my", "this", "that", "these", "those", "user's", "users'", "other", "more", "no"})
_PARTICLES = frozenset({"up", "out", "off", "down", "away", "over", "back"})
_NO_OBJECT_VERBS = frozenset({"be", "is", "are", "have", "has", "let", "get", "ever", "again"})
_IRREGULAR = {"run": ("ran",), "send": ("sent",), "give": ("gave", "given"), "take": ("took", "taken"),
              "make": ("made",), "write": ("wrote", "written"), "tell": ("told",), "pay": ("paid",),
              "buy": ("bought",), "sell": ("sold",), "leave": ("left",), "keep": ("kept",),
              "spend": ("spent",), "throw": ("threw", "thrown"), "show": ("shown",), "shut": (), "put": (),
              "set": (), "cut": (), "hide": ("hid", "hidden"), "lose": ("lost",), "break": ("broke", "broken")}
_WORD = re.compile(r"[a-z][a-z'_-]*")
_CLAUSE_END = re.compile(r"[.;:,!?()（），。；：！？、]")
_CJK_CLAUSE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]{2,}")
_CJK_CONDITIONAL_START = ("未经", "在", "未", "没有", "擅自", "为", "对", "给", "向", "把", "跟", "和", "与", "替",
                          "让")
"""A clause starting with a condition or a coverb (为同一用户...): its first two characters are no verb."""
_CJK_NEGATED = re.compile(r"(?:不|别|勿|未|没|禁止|切勿|严禁)[\u3400-\u9fff]{0,3}$")
NOUN_WINDOW = 6
"""The noun must come within this many words after the verb (or before a past participle)."""


@dataclass(frozen=True)
class Forbidden:
    """One forbidden action: the verb's forms, the object nouns' forms, and the constraints line."""

    verb: str
    nouns: tuple[str, ...]
    line: str
    conditional: bool
    verb_forms: frozenset[str]
    noun_forms: frozenset[str]
    participles: frozenset[str]
    cjk: bool = False

    def __str__(self) -> str:
        return f"{self.verb} + {'/'.join(self.nouns)}"


def _verb_forms(verb: str) -> tuple[frozenset[str], frozenset[str]]:
    """(every form, the past participles) of an English verb: drop, drops, dropped, dropping."""
    v = verb.lower()
    past = {v + "ed", v + "d"} if not v.endswith("e") else {v + "d"}
    forms = {v, v + "s", v + "es", v + "ing"}
    if v.endswith("e"):
        forms.add(v[:-1] + "ing")
    if v.endswith("y") and len(v) > 2 and v[-2] not in "aeiou":
        forms.add(v[:-1] + "ies")
        past.add(v[:-1] + "ied")
    if re.search(r"(?:^|[^aeiou])[aeiou][bdgklmnprtvz]$", v):
        forms.add(v + v[-1] + "ing")
        past.add(v + v[-1] + "ed")
    past.update(_IRREGULAR.get(v, ()))
    return frozenset(forms | past), frozenset(past)


def _noun_forms(noun: str) -> set[str]:
    n = noun.lower()
    forms = {n, n + "s", n + "es"}
    if n.endswith("y"):
        forms.add(n[:-1] + "ies")
    if n.endswith("ies"):
        forms.add(n[:-3] + "y")
    elif n.endswith("s"):
        forms.add(n[:-1])
    return forms


def _english(line: str, m: re.Match[str], conditional: bool) -> Forbidden | None:
    clause = _CLAUSE_END.split(line[m.end():], maxsplit=1)[0].lower()
    rest_of_line = line[m.end() + len(clause):]
    if RESTRICTED.match(re.sub(r"^[\s(（]*[^)）]*[)）]", "", rest_of_line)) and not conditional:
        return None
    words = _WORD.findall(clause)
    if not words or words[0] in _NO_OBJECT_VERBS:
        return None
    verb, rest = words[0], words[1:]
    while len(rest) > 1 and rest[0] in ("or", "and", "nor"):  # "book or cancel": verbs, not objects
        rest = rest[2:]
    if rest and rest[0] in _PARTICLES:
        verb, rest = f"{verb} {rest[0]}", rest[1:]
    nouns: list[str] = []
    run: list[str] = []
    for word in [*rest, "and"]:
        if word in ("that", "which", "unless", "except", "until", "if", "when") and not conditional:
            return None  # restricted to some objects only (RESTRICTED)
        if word in ("and", "or", "nor") or word in _BOUNDARY:
            if run:
                nouns.append(run[-1])
            run = []
            if word not in ("and", "or", "nor"):
                break
        elif word not in _SKIP:
            run.append(word)
    nouns = [n for n in nouns if len(n) > 2]
    if not nouns:
        return None
    head = verb.split()[0]
    forms, participles = _verb_forms(head)
    if " " in verb:
        particle = verb.split()[1]
        forms = frozenset(f"{f} {particle}" for f in forms)
        participles = frozenset(f"{f} {particle}" for f in participles)
    return Forbidden(verb, tuple(dict.fromkeys(nouns)), line.strip(), conditional, forms,
                     frozenset(f for n in nouns for f in _noun_forms(n)), participles)


def _chinese(line: str, m: re.Match[str], conditional: bool) -> Forbidden | None:
    run = _CJK_CLAUSE.match(line, m.end())
    if run is None or run.group(0).startswith(_CJK_CONDITIONAL_START) or len(run.group(0)) < 4:
        return None
    text = run.group(0)
    verb, noun = text[:2], text[-2:]
    return Forbidden(verb, (noun,), line.strip(), conditional, frozenset({verb}), frozenset({noun}), frozenset(), True)


def forbidden_actions(constraint_lines: Iterable[str]) -> tuple[Forbidden, ...]:
    """The verb + object each prohibition of the constraints lines forbids (see the module doc)."""
    found: list[Forbidden] = []
    for raw in constraint_lines:
        line = visible(raw)
        conditional = CONDITION.search(line) is not None
        for m in PROHIBITION.finditer(line):
            if (f := _english(line, m, conditional)) is not None:
                found.append(f)
        for m in CJK_PROHIBITION.finditer(line):
            if (f := _chinese(line, m, conditional)) is not None:
                found.append(f)
    return tuple(dict.fromkeys(found))


def _does(text: str, f: Forbidden) -> str | None:
    """The words of `text` that do `f`'s action, or None."""
    if f.cjk:
        at = text.find(f.verb)
        while at != -1:
            if text.find(f.nouns[0], at + len(f.verb)) != -1 and not _CJK_NEGATED.search(text[:at]):
                return text[at:text.find(f.nouns[0], at + len(f.verb)) + len(f.nouns[0])]
            at = text.find(f.verb, at + 1)
        return None
    spans = [(m.group(0), m.start()) for m in _WORD.finditer(text.lower())]
    words = [w for w, _ in spans]
    two = [f"{w} {words[i + 1]}" if i + 1 < len(words) else w for i, w in enumerate(words)]
    for i, word in enumerate(words):
        form = two[i] if two[i] in f.verb_forms else word if word in f.verb_forms else None
        if form is None or ACTION_NEGATED.search(text[:spans[i][1]]):
            continue
        after = words[i + 1:i + 1 + NOUN_WINDOW + (1 if " " in form else 0)]
        before = words[max(0, i - NOUN_WINDOW + 1):i] if form in f.participles else []
        if hit := next((w for w in after if w in f.noun_forms), None):
            return f"{form} … {hit}"
        if hit := next((w for w in before if w in f.noun_forms), None):
            return f"{hit} … {form}"
    return None


def find_forbidden(line: str, forbidden: Iterable[Forbidden], *, told: bool = False) -> tuple[Forbidden, str] | None:
    """The first forbidden action `line` does, with the words that show it, or None (module doc).
    `told`: a body example line ("input" → behaviour), whose quoted text is the user's request, not
    what the skill does: only the rest is read."""
    text = visible(line)
    if told:
        text = QUOTED.sub(" ", text)
    for f in forbidden:
        if (shown := _does(text, f)) is not None and not (f.conditional and affirms_confirmation(text)):
            return f, shown
    return None
