"""The actions a skill's own Constraints forbid, and an added line that does one (pure, no I/O).

A Constraints line "Never drop a database." forbids a verb done to an object. An example or
instruction a patch adds that does that ("→ drop the old orders_archive database, then back up")
turns the rule around as surely as deleting it, so `rules/levels.py` makes it L3, like a removed
safety line. The test is kept simple and measurable:

- `forbidden_actions` reads each constraints line that starts a prohibition (never, never ever, do
  not, don't, must not, you may not, cannot, should not, under no circumstances (should you), at no
  time; 不要, 不得, 禁止, 切勿, 严禁, 绝不, 请勿, 不能, 不可, 不许), or ends with one ("Deleting the
  newest backup is forbidden / prohibited / not allowed", read as "never delete …"), and takes the
  verb after it (with a particle: "make up") and the head noun of each object it names (the last
  word before a preposition, "and"/"or" or punctuation: "the newest backup of a database" ->
  backup); in Chinese the first two characters after the prohibition and the last two of its
  clause (不要删除最新的备份 -> 删除, 备份);
- a delete verb stands for all of them (`DELETE_VERBS`: drop, delete, remove, erase, purge, nuke,
  wipe, destroy, truncate...; 删, 删掉, 清空, 移除...), and a known object for its other names in
  both languages (`OBJECT_SYNONYMS`: database, db, 数据库; backup, 备份; `CJK_WHOLE`: 删库), so
  "Never drop a database" is also 把数据库删了 and 不要删除任何数据库 is also "nuke the db";
- `find_forbidden` flags an added line holding the verb, in any inflection (drop, drops, dropped,
  dropping), and one of the nouns (singular or plural) later in the same clause (up to 16 words, up
  to . ; ! ? → or "then"), or before a past participle ("the database is dropped"), or named earlier
  in the line when the verb takes a pronoun ("… is a database nobody uses, so drop it"); in Chinese
  the noun after the verb, or before it after 把/将 or with the verb ending its clause (数据库删了);
  a verb negated just before it ("never drop the database", 不删除) restates the rule and is not a
  finding;
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
from dataclasses import dataclass, replace

from skillforge.rules.directives import ACTION_NEGATED, QUOTED, affirms_confirmation
from skillforge.rules.textnorm import visible

PROHIBITION = re.compile(
    r"(?:^[\s>*+\-\d.)]*|[.;:!?]\s+)(?:(?:you|we|the\s+(?:agent|assistant|model|skill))\s+)?"
    r"(?:never|do\s+not|don'?t|must\s+not|mustn'?t|may\s+not|cannot|can'?t|should\s+not|shouldn'?t|shall\s+not|"
    r"(?:is|are)\s+not\s+(?:allowed|permitted)\s+to|"
    r"(?:under\s+no\s+circumstances?|in\s+no\s+case|at\s+no\s+(?:time|point))\s*,?"
    r"(?:\s+(?:should|may|must|shall|will|can|do|does|are|is)\s+(?:you|we|it|the\s+(?:agent|assistant|model|skill))"
    r"(?:\s+be\s+(?:allowed|permitted))?(?:\s+to)?)?)"
    r"\s+(?:ever\s+|directly\s+|automatically\s+)?", re.IGNORECASE)
POSTFIX_PROHIBITION = re.compile(
    r"^[\s>*+\-\d.)]*(?:to\s+)?(?P<subject>[A-Za-z]+\s.+?)\s+(?:is|are)\s+(?:strictly\s+|absolutely\s+|always\s+)?"
    r"(?:forbidden|prohibited|banned|not\s+(?:allowed|permitted))\b", re.IGNORECASE)
"""`Deleting the newest backup is forbidden.`, `To drop a database is not allowed.`: read as "never <verb> …"."""
CJK_PROHIBITION = re.compile(r"(?:千万|千萬|绝对|絕對)?(?:不要|不得|不能|不可|不许|不許|不准)|[绝絕决決]不(?:能|可|要|会|會)?|"
                             r"禁止|切勿|[严嚴]禁|[请請]勿")
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
_CJK_STOP = re.compile(r"[，。；,;!?！？→]")
_CJK_NEGATED = re.compile(r"(?:不|别|勿|未|没|禁止|切勿|严禁)[\u3400-\u9fff]{0,3}$")
NOUN_WINDOW = 6
"""The noun must come within this many words before a past participle."""
CLAUSE_WINDOW = 16
"""After the verb, the noun may come this many words on, in the same clause (up to . ; ! ? → or "then")."""
_CLAUSE_STOP = re.compile(r"[.;!?](?=\s|$)|→|->|\bthen\b|[。；！？]", re.IGNORECASE)
_PRONOUNS = frozenset({"it", "them"})
"""`… is a database nobody uses, so drop it`: the object named earlier in the line."""
DELETE_VERBS = ("drop", "delete", "remove", "erase", "purge", "nuke", "wipe", "destroy", "truncate", "scrap",
                "trash", "rid", "discard", "shred")
"""One action, many words: a "Never delete/drop …" forbids each of them (`rid`: "get rid of")."""
CJK_DELETE_VERBS = ("删", "刪", "清空", "清除", "清掉", "移除", "销毁", "銷毀", "抹掉", "抹除", "丢弃", "丟棄", "干掉")
OBJECT_SYNONYMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "database": (("database", "db", "databases", "dbs"), ("数据库", "資料庫", "數據庫", "database")),
    "backup": (("backup", "backups"), ("备份", "備份", "backup")),
    "table": (("table", "tables"), ("数据表", "資料表")),
}
"""Object concept -> (English words, CJK words): `db` is a database, 数据库 too, whatever the rule's language."""
CJK_WHOLE = {"database": ("删库", "刪庫", "删数据库", "刪資料庫")}
"""A word holding both the delete and the object (删库)."""


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
    cjk_verbs: frozenset[str] = frozenset()
    cjk_nouns: frozenset[str] = frozenset()
    cjk_whole: frozenset[str] = frozenset()

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
    verb = text[:2]
    noun = next((w for _, zh in OBJECT_SYNONYMS.values() for w in zh if text.endswith(w) and len(w) > 2), text[-2:])
    return _widen(Forbidden(verb, (noun,), line.strip(), conditional, frozenset(), frozenset(), frozenset(), True,
                            frozenset({verb}), frozenset({noun})), text)


def _widen(f: Forbidden, said: str) -> Forbidden:
    """`f` with its verb's synonyms (drop: delete, remove, nuke, 删, 清空...) and its object's other
    names (database: db, 数据库; 删库), in both languages, when they are in the tables (`DELETE_VERBS`,
    `OBJECT_SYNONYMS`). `said`: the rule's words (its nouns, or its CJK clause)."""
    deletes = (f.verb.split()[0] in DELETE_VERBS and " " not in f.verb) if not f.cjk else \
        any(v in f.verb for v in CJK_DELETE_VERBS)
    objects = [key for key, (en, zh) in OBJECT_SYNONYMS.items()
               if (any(w in said for w in zh) if f.cjk else any(n in en for n in f.nouns))]
    if not deletes and not objects:
        return f
    forms, participles, cjk_verbs = set(f.verb_forms), set(f.participles), set(f.cjk_verbs)
    if deletes:
        for verb in DELETE_VERBS:
            more, past = _verb_forms(verb)
            forms |= more
            participles |= past
        cjk_verbs |= set(CJK_DELETE_VERBS)
    nouns, cjk_nouns, whole = set(f.noun_forms), set(f.cjk_nouns), set(f.cjk_whole)
    for key in objects:
        nouns |= {form for w in OBJECT_SYNONYMS[key][0] for form in _noun_forms(w)}
        cjk_nouns |= set(OBJECT_SYNONYMS[key][1])
        whole |= set(CJK_WHOLE.get(key, ())) if deletes else set()
    if not deletes and f.cjk:  # the object in English too, with the rule's own verb only in Chinese
        nouns = set()
    return replace(f, verb_forms=frozenset(forms if nouns else ()), participles=frozenset(participles),
                   noun_forms=frozenset(nouns), cjk_verbs=frozenset(cjk_verbs if (cjk_nouns or whole) else ()),
                   cjk_nouns=frozenset(cjk_nouns), cjk_whole=frozenset(whole))


def _gerund_stems(word: str) -> tuple[str, ...]:
    """The base forms a subject's first word may stand for: deleting -> delete/delet, dropping -> drop."""
    w = word.lower()
    if not w.endswith("ing") or len(w) < 5:
        return (w,)
    stem = w[:-3]
    if len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in "ls":
        return (stem[:-1],)
    return (stem + "e", stem) if re.search(r"(?:[^aeiou][aeiou][bcdgkmnprstvz]|[cgsvz]|ur|ar)$", stem) else (stem, stem + "e")


def _postfix(line: str, conditional: bool) -> Forbidden | None:
    """`Deleting the newest backup is forbidden.` read as "never delete the newest backup"."""
    if not (m := POSTFIX_PROHIBITION.match(line)):
        return None
    first, _, rest = m.group("subject").partition(" ")
    stems = _gerund_stems(first)
    said = f"never {stems[0]} {rest}{line[m.end():]}"
    if (f := _english(said, PROHIBITION.match(said), conditional)) is None:
        return None
    f = _widen(f, " ".join(f.nouns))
    forms, past = set(f.verb_forms), set(f.participles)
    for stem in stems[1:]:
        more, more_past = _verb_forms(stem)
        forms |= more
        past |= more_past
    return replace(f, line=line.strip(), verb_forms=frozenset(forms), participles=frozenset(past))


def forbidden_actions(constraint_lines: Iterable[str]) -> tuple[Forbidden, ...]:
    """The verb + object each prohibition of the constraints lines forbids (see the module doc)."""
    found: list[Forbidden] = []
    for raw in constraint_lines:
        line = visible(raw)
        conditional = CONDITION.search(line) is not None
        for m in PROHIBITION.finditer(line):
            if (f := _english(line, m, conditional)) is not None:
                found.append(_widen(f, " ".join(f.nouns)))
        if (not found or found[-1].line != line.strip()) and (f := _postfix(line, conditional)) is not None:
            found.append(f)
        for m in CJK_PROHIBITION.finditer(line):
            if (f := _chinese(line, m, conditional)) is not None:
                found.append(f)
    return tuple(dict.fromkeys(found))


def _does_cjk(text: str, f: Forbidden) -> str | None:
    """The CJK words of `text` doing `f`: a verb, not negated, then its noun; or the noun first with
    把/将 before it, or the verb ending its clause (把数据库删了, 数据库删掉); or a word holding both (删库)."""
    low = text.lower()
    for whole in f.cjk_whole:
        at = low.find(whole)
        if at != -1 and not _CJK_NEGATED.search(low[:at]):
            return whole
    for verb in f.cjk_verbs:
        at = low.find(verb)
        while at != -1:
            if not _CJK_NEGATED.search(low[:at]):
                after = low[at + len(verb):]
                if hit := next((n for n in sorted(f.cjk_nouns, key=len, reverse=True) if n in after), None):
                    return low[at:at + len(verb) + after.find(hit) + len(hit)]
                clause = _CJK_STOP.split(low[:at])[-1]
                ends = re.fullmatch(r"[除掉了光吧啊呢\s]*", _CJK_STOP.split(after, maxsplit=1)[0]) is not None
                for noun in sorted(f.cjk_nouns, key=len, reverse=True):
                    k = clause.rfind(noun)
                    if k != -1 and (ends or re.search(r"[把将將]", clause[:k])):
                        return clause[k:] + verb
            at = low.find(verb, at + 1)
    return None


def _does(text: str, f: Forbidden) -> str | None:
    """The words of `text` that do `f`'s action, or None."""
    if f.cjk_verbs and (f.cjk_nouns or f.cjk_whole) and (shown := _does_cjk(text, f)) is not None:
        return shown
    if not (f.verb_forms and f.noun_forms):
        return None
    low = text.lower()
    spans = [(m.group(0), m.start()) for m in _WORD.finditer(low)]
    words = [w for w, _ in spans]
    stops = [m.start() for m in _CLAUSE_STOP.finditer(low)]
    two = [f"{w} {words[i + 1]}" if i + 1 < len(words) else w for i, w in enumerate(words)]
    for i, word in enumerate(words):
        form = two[i] if two[i] in f.verb_forms else word if word in f.verb_forms else None
        if form is None or ACTION_NEGATED.search(text[:spans[i][1]]):
            continue
        end = next((p for p in stops if p > spans[i][1]), len(low))
        after = [w for w, at in spans[i + 1:] if at < end][:CLAUSE_WINDOW + (1 if " " in form else 0)]
        before = words[max(0, i - NOUN_WINDOW + 1):i] if form in f.participles else []
        if hit := next((w for w in after if w in f.noun_forms), None):
            return f"{form} … {hit}"
        if hit := next((w for w in before if w in f.noun_forms), None):
            return f"{hit} … {form}"
        said = after[1:] if " " in form else after
        if said and said[0] in _PRONOUNS and (hit := next((w for w in words[:i] if w in f.noun_forms), None)):
            return f"{hit} … {form} {said[0]}"
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
