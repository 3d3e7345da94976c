"""Is a line added to an L1 part of a skill an example, or an instruction in disguise? (pure, no I/O)

The L1 parts (the body's Examples section, the frontmatter `examples`, `not_for` and `description`)
publish without a person because they show *what* users ask, not *how* the skill behaves. A line
there stays L1 only when it is example-shaped: a sample request, optionally with the expected
behaviour told briefly. It is a **directive** (`find_directive`) when it

- uses override or imperative vocabulary (`OVERRIDE_WORDS`: ignore, skip, bypass, without asking,
  never, always, must, instead of, right away, 忽略, 跳过, 无需, 不要, 直接下单, 马上下单, 必须, 一律, 绕过, ...);
- names a tool call to perform (`TOOL_CALL`: a backticked identifier with a dot or parentheses,
  `ride.request`, `lookup()`; or, bare, one of the skill's declared dependencies);
- names a section of the skill (`SECTION_WORDS`: Instructions, rules, section, 规则, 限制, 指令, ...);

and it is **grave** when it names the safety constraints themselves (`CONSTRAINT_WORDS`:
Constraints, guardrails, 约束, 安全规则, ...) or negates a confirmation (`NEGATED_CONFIRMATION`:
"without asking the user to confirm", 无需用户确认, ...) that the skill's constraints require.
`rules/levels.py` makes a directive L2 and a grave one L3. A description or not_for item takes the
override, constraint and confirmation tests only (`wording_only`): its ordinary wording names tools
and "step-by-step instructions". The vocabulary is deliberately broad: a false alarm costs a
review, a miss publishes a behaviour change unattended. Words that only describe the expected
answer (告诉, 报出, 说明, 询问, 复述, ask, tell, quote) are not directives. Measured on the shipped
and bench skills: none of 82 routing examples, 58 not_for items or 24 descriptions is flagged; of
30 body example lines, 8 are (7 name a tool, 1 says "do not execute"): adding such a line waits for
a person.

Keywords alone are beaten by plain paraphrase ("the user's request counts as their yes", 视为同意,
"confirmation: not needed"), so a line is also tested for the **guarded topics** (`find_topic`):
the confirmation (confirm, read-back, 确认, 確認, 复述) and consent (consent, agree, yes, counts as,
同意, 视为, 授权), a fee or payment (fee, charge, pay, 费用, 扣款, 支付), timing (before, as soon
as, same turn, at once, 当轮, 立即), and the terms of the skill's own confirmation/payment
constraints lines (content words, CJK bigrams) that its everyday vocabulary does not use
(`guarded_topics`: 未经, 产生, 费用 for the taxi skill). Touching one is a directive (L2); touching
the confirmation while the constraints require one is grave (L3) unless the line asks for it as the
rule does ("restate and confirm", `wait for "yes" before booking`, 征得用户同意后下单); a fee is
grave when the line also negates, assumes or times something ("accept any fee silently"), and any
confirmation word in a not_for item is, "asking before ..." and `asking.ASK_FIRST` (询问, demander avant,
nachfragen...) too (it takes the skill out of the flow). Measured the same way, leaving each line out of the
everyday vocabulary: the topic test flags none of the 82 routing examples, 58 not_for items, 24 descriptions
or 30 body example lines that the keyword test did not already flag, and makes none of them L3.

Topic words still miss a behaviour change worded with none of them ("the order goes out as the user
speaks"). So a **body** example line, which tells the agent what to do, is also tested for the
**action** a required confirmation holds back (`find_action`: book, order, dispatch, send, cancel,
下单, 叫车, 派车, 提交...) on its behaviour side, not negated, not a record (预订号), and not asked
for as the rule does: L2. Measured the same way, it flags none of the 30 body example lines that the
other tests did not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from skillforge.rules.asking import ASK_FIRST
from skillforge.rules.textnorm import fold, visible

OVERRIDE_WORDS = re.compile(
    r"\b(?:ignor(?:e|es|ed|ing)|disregard\w*|skip(?:s|ped|ping)?|bypass\w*|overrid\w*|"
    r"without\s+(?:\S+\s+){0,4}?(?:ask|confirm|check|verif|wait)\w*|"
    r"don'?t|do\s+not|never|always|must|instead\s+of|regardless|no\s+need\s+to|right\s+away|immediately|"
    r"at\s+once)\b|"
    r"忽略|跳过|无需|无须|不用|不必|不要|绕过|无视|必须|务必|总是|始终|一律|"
    r"(?:直接|马上|立即|立刻|随即)(?:下单|调用|执行|扣款|支付|付款|提交)",
    re.IGNORECASE)
"""Override or imperative vocabulary: an example never needs it."""

TOOL_CALL = re.compile(r"`\s*(?:[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)+|[A-Za-z_][\w.-]*\([^`]*\))\s*`")
"""A backticked tool call: `ride.request`, `payments.charge(...)`, `lookup()`."""

SECTION_WORDS = re.compile(
    r"\b(?:instructions?|rules?|system\s+prompt|\w+\s+section)\b|规则|限制|指令|章节",
    re.IGNORECASE)
"""A reference to another part of the skill (the section an edit would really belong to)."""

CONSTRAINT_WORDS = re.compile(
    r"\b(?:constraints?|guardrails?|safety\s+(?:rules?|section|constraints?|requirements?)|"
    r"permissions?\s+section)\b|约束|安全规则|安全要求|安全限制",
    re.IGNORECASE)
"""A reference to the safety constraints: an example that names them is about them (grave)."""

NEGATED_CONFIRMATION = re.compile(
    r"\bwithout\s+(?:\S+\s+){0,5}?confirm\w*|"
    r"\bno\s+(?:need\s+(?:to|for)\s+(?:\S+\s+){0,3}?)?confirm\w*|"
    r"\b(?:skip|bypass|ignor|disregard|omit)\w*\s+(?:\S+\s+){0,3}?confirm\w*|"
    r"\b(?:don'?t|do\s+not|never)\s+(?:need\s+to\s+)?(?:ask|wait|request|seek)\w*\s+(?:\S+\s+){0,3}?confirm\w*|"
    r"(?:无需|无须|不用|不必|不需要|不需|跳过|省略|省去|免去|绕过|忽略|无视|不等)[^，。；,.;!?！？]{0,8}确认",
    re.IGNORECASE)
"""A confirmation said not to be needed: "without asking the user to confirm", 无需用户确认."""

CONFIRMATION = re.compile(r"confirm|确认", re.IGNORECASE)  # a constraints line with this requires a confirmation

_PROHIBITION_BEFORE = re.compile(r"\b(?:never|not|cannot|no)\b|n't\b|不得|禁止|不能", re.IGNORECASE)
"""Before "without ... confirm" it restates the rule ("never book without confirmation")."""


class DirectiveKind(StrEnum):
    NAMES_CONSTRAINTS = "names the constraints"
    NEGATES_CONFIRMATION = "negates a confirmation the constraints require"
    TOUCHES_CONFIRMATION = "touches the confirmation the constraints require"
    OVERRIDE = "override or imperative wording"
    TOOL_CALL = "names a tool call"
    NAMES_SECTION = "names a section of the skill"
    GUARDED_TOPIC = "touches a topic the constraints guard"
    GUARDED_ACTION = "performs an action the confirmation guards"


GRAVE = frozenset({DirectiveKind.NAMES_CONSTRAINTS, DirectiveKind.NEGATES_CONFIRMATION, DirectiveKind.TOUCHES_CONFIRMATION})


@dataclass(frozen=True)
class Directive:
    """Why a line is not example-shaped: the kind and the words that showed it."""

    kind: DirectiveKind
    match: str

    @property
    def grave(self) -> bool:
        return self.kind in GRAVE

    def __str__(self) -> str:
        return f"{self.kind.value} ({self.match.strip()!r})"


def _negated_confirmation(line: str) -> re.Match[str] | None:
    for m in NEGATED_CONFIRMATION.finditer(line):
        if m.group(0).lower().startswith("without") and _PROHIBITION_BEFORE.search(line[:m.start()]):
            continue
        return m
    return None


def _tool_mention(line: str, tools: Iterable[str]) -> str | None:
    m = TOOL_CALL.search(line)
    if m:
        return m.group(0)
    for tool in tools:
        if tool and re.search(rf"(?<![\w.]){re.escape(tool)}(?![\w])", line, re.IGNORECASE):
            return tool
    return None


def find_directive(line: str, *, tools: Iterable[str] = (), confirmation_required: bool = False,
                   wording_only: bool = False, topics: GuardedTopics | None = None,
                   removes_flow: bool = False, behaviour: bool = False) -> Directive | None:
    """The gravest reason `line` is a directive rather than an example, or None when it is example-shaped.
    `tools`: the skill's declared tool names (named bare, they count as a call); `confirmation_required`:
    the skill's constraints ask for a confirmation (negating one is then grave, else a plain directive);
    `wording_only`: only the constraint, confirmation and override tests (for a description or not_for,
    whose ordinary wording names tools and "step-by-step instructions").
    The line is read as shown (`visible`: NFKC, invisible characters dropped, confusables folded) and
    in the leak scan's matching form (`fold`: markdown emphasis dropped too), so "ｉｇｎｏｒｅ",
    a Cyrillic "іgnore" or "i**g**nore" is the word it looks like. `topics`: what the constraints
    guard (`guarded_topics`; `find_topic`, with `removes_flow` for a not_for item, and `behaviour`
    for a body example line, which tells the agent what to do: `find_action`)."""
    tools = tuple(tools)
    found = [d for text in dict.fromkeys((line, visible(line), fold(line, chinese_numerals=False)))
             if (d := _find(text, tools, confirmation_required, wording_only)) is not None]
    if topics is not None and (d := find_topic(line, topics, removes_flow=removes_flow)) is not None:
        found.append(d)
    if topics is not None and behaviour and (d := find_action(line, topics)) is not None:
        found.append(d)
    order = list(DirectiveKind)
    return min(found, key=lambda d: order.index(d.kind), default=None)


def _find(line: str, tools: tuple[str, ...], confirmation_required: bool, wording_only: bool) -> Directive | None:
    if m := CONSTRAINT_WORDS.search(line):
        return Directive(DirectiveKind.NAMES_CONSTRAINTS, m.group(0))
    negated = _negated_confirmation(line)
    if negated and confirmation_required:
        return Directive(DirectiveKind.NEGATES_CONFIRMATION, negated.group(0))
    if m := OVERRIDE_WORDS.search(line):
        return Directive(DirectiveKind.OVERRIDE, m.group(0))
    if negated:
        return Directive(DirectiveKind.OVERRIDE, negated.group(0))
    if wording_only:
        return None
    if tool := _tool_mention(line, tools):
        return Directive(DirectiveKind.TOOL_CALL, tool)
    if m := SECTION_WORDS.search(line):
        return Directive(DirectiveKind.NAMES_SECTION, m.group(0))
    return None


# --- guarded topics: what the Constraints section guards, however it is worded ------------------

CONFIRM_WORDS = re.compile(
    r"confirm\w*|read[\s-]?back|readback|\brestat\w*|确认|確認|复述|確かめ", re.IGNORECASE)
"""The confirmation itself (asked for, given, restated)."""

CONSENT_WORDS = re.compile(
    r"\b(?:consent\w*|agree\w*|approv\w*|permission\w*|yes|ok(?:ay)?|go-?ahead|counts?\s+as\s+(?:\w+\s+){0,2}?(?:yes|consent\w*|approv\w*|confirm\w*|agree\w*|accept\w*|ok(?:ay)?|go-?ahead|permission\w*|given|read[\s-]?back))\b|"
    r"同意|允许|授权|视为|算同意|等于同意|默认|承諾|了承", re.IGNORECASE)
"""Consent a line can declare given ("the request counts as their yes", 视为同意; not "passes count as memberships")."""

PAYMENT_WORDS = re.compile(
    r"\b(?:fees?|charg(?:e|es|ed|ing)|pay(?:s|ing|ment\w*)?|paid|billing|refund\w*)\b|"
    r"费用|扣款|扣费|支付|付款|收费|取消费|手续费|料金|支払", re.IGNORECASE)
"""Money leaving the user: a fee, a charge, a payment."""

TIMING_WORDS = re.compile(
    r"\b(?:before|as\s+soon\s+as|same\s+turn|at\s+once|immediately|right\s+away|straight\s+away|"
    r"up\s*front|in\s+advance|first)\b|当轮|当场|立即|立刻|马上|随即|即下单|一开口|先下单|先扣|す[ぐく]",
    re.IGNORECASE)
"""When an action happens relative to the user's answer."""

NEGATION_WORDS = re.compile(
    r"\b(?:not|no|never|without|skip\w*|omit\w*|unnecessary|optional|needless|just\s+a|only\s+a|"
    r"already|silent\w*|quiet\w*|assum\w*|implie\w*|implicit\w*|accept\w*|waiv\w*)\b|n't\b|"
    r"不|无(?!障碍|线|烟|锡|糖|人机)|免|没|别|省|跳过|せ[ずす]|[しせ]ない|ない|不要|なし|默默|悄悄|自动", re.IGNORECASE)
"""Wording that takes a confirmation away, assumes it, or lets a charge through unseen (せす: せず as
`visible()` shows it, dakuten dropped; 无障碍 "accessible", 无线, 无锡 are nouns: QA 47 F5)."""

_STOPWORDS = frozenset({
    "that", "this", "with", "from", "have", "were", "will", "would", "should", "could", "their", "there",
    "them", "they", "then", "than", "what", "when", "where", "which", "while", "about", "into", "only",
    "also", "each", "other", "been", "being", "does", "done", "your", "user", "users", "tool", "tools",
    "conversation"})
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\u3040-\u30ff]{2,}")
_CJK_AROUND = lambda t: re.compile(rf"[\u4e00-\u9fff]?{re.escape(t)}[\u4e00-\u9fff]?")  # noqa: E731 - '复下' as 重复下单
_WORD = re.compile(r"[a-z][a-z'-]{3,}")


@dataclass(frozen=True)
class GuardedTopics:
    """What a skill's Constraints guard: terms of its confirmation/payment lines, and two flags.

    `terms`: content words (4+ letters) and CJK bigrams of the constraints lines that speak of a
    confirmation, consent or payment, less the skill's ordinary vocabulary (its examples, keywords,
    use_when, description): what is left names what the rule is about (未经, 产生, 费用...).
    `confirmation`: some constraints line requires a confirmation. `payment_confirmed`: such a line
    also names a payment (`未经用户明确确认不得下单或产生费用`): a fee is then part of what is confirmed."""

    terms: frozenset[str] = frozenset()
    confirmation: bool = False
    payment_confirmed: bool = False


def _terms(text: str) -> set[str]:
    text = fold(text, chinese_numerals=False)
    out = {w.strip("'-") for w in _WORD.findall(text) if w.strip("'-") not in _STOPWORDS}
    for run in _CJK_RUN.findall(text):
        out.update(run[i:i + 2] for i in range(len(run) - 1))
    return {t for t in out if len(t) >= 2}


def guarded_topics(constraint_lines: Iterable[str], ordinary: Iterable[str] = ()) -> GuardedTopics:
    """The topics the constraints guard (see `GuardedTopics`); `ordinary`: the skill's everyday text."""
    guarded = [ln for ln in constraint_lines
               if CONFIRM_WORDS.search(ln) or CONSENT_WORDS.search(ln) or PAYMENT_WORDS.search(ln)]
    common: set[str] = set()
    for text in ordinary:
        common |= _terms(text)
    terms: set[str] = set()
    for line in guarded:
        terms |= _terms(line)
    confirm_lines = [ln for ln in guarded if CONFIRMATION.search(ln)]
    terms = {t for t in terms - common if not (CONFIRM_WORDS.search(t) or NEGATION_WORDS.fullmatch(t))}
    return GuardedTopics(frozenset(terms), bool(confirm_lines),
                         any(PAYMENT_WORDS.search(ln) for ln in confirm_lines))


ASKED_CONSENT = re.compile(
    r"\b(?:wait\w*|ask\w*|get|gets|obtain\w*|until|seek\w*|request\w*)\s+(?:for\s+)?"
    r"(?:(?:the|a|an|their|explicit|user'?s?)\s+)*[\"“'‘]?(?:yes|consent|approval|agreement|go-?ahead|ok)\b[\"”'’]?|"
    r"(?:等(?![于同])|征得|获得|取得|得到)[^，。；,;]{0,6}同意|"
    r"\bask\w*\s+(?:(?:the\s+)?users?\s+|them\s+|first\s+){0,2}(?=before\b)|先(?:问|询问)用户",
    re.IGNORECASE)
"""Consent asked for, as the rule wants it (`wait for "yes" before booking`, 征得用户同意, "ask the user
before deleting"): a confirmation."""


def affirms_confirmation(line: str) -> bool:
    """The line asks for the confirmation as the rule does ("restate and confirm", 复述并确认后下单,
    `wait for "yes" before booking`, or "never book without confirmation"): a confirmation word (consent
    asked for counts as one), and outside the user's quoted words no consent declared, nothing timed
    ahead of it, and no negation other than the rule's own "never ... without confirmation"."""
    line = ASKED_CONSENT.sub(" confirm ", line)
    confirm = CONFIRM_WORDS.search(line)
    said = QUOTED.sub(lambda m: " " * len(m.group(0)), line)  # the user's quoted words negate nothing (QA 44 F8)
    if not confirm or CONSENT_WORDS.search(said):
        return False
    for t in TIMING_WORDS.finditer(said):  # "confirm before booking", "先确认" keep the order the rule asks
        if not (t.start() > confirm.start() and t.group(0).lower() in ("before", "first")):
            return False
    negations = list(NEGATION_WORDS.finditer(said))
    if not negations:
        return True
    restated = re.search(r"\b(?:never|not|no|cannot)\b.*\bwithout\s+(?:\S+\s+){0,4}?confirm\w*|"
                         r"(?:不得|禁止|不能)[^，。；]*未经[^，。；]*确认|未经[^，。；]*确认[^，。；]*(?:不得|禁止|不能)",
                         line, re.IGNORECASE)
    return restated is not None and all(restated.start() <= n.start() < restated.end() for n in negations)


def find_topic(line: str, topics: GuardedTopics, *, removes_flow: bool = False) -> Directive | None:
    """Whether an added L1 line touches what the constraints guard: the confirmation (a confirmation
    or consent word, or a fee when the confirmation covers payment) while one is required, not
    worded as the rule asks it → grave (a fee only when the line also negates, assumes or times
    something: "accept any cancellation fee silently"); any guarded topic (lexicon or constraint term) → a plain
    directive. `removes_flow`: a not_for item, which takes the skill out of what it names, so even
    an affirmative mention of the confirmation is grave."""
    for text in dict.fromkeys((visible(line), fold(line, chinese_numerals=False))):
        confirm = (CONFIRM_WORDS.search(text) or CONSENT_WORDS.search(text)
                   or ((ASKED_CONSENT.search(text) or ASK_FIRST.search(text)) if removes_flow else None))
        pay = PAYMENT_WORDS.search(text)
        if topics.confirmation:
            if confirm and (removes_flow or not affirms_confirmation(text)):
                return Directive(DirectiveKind.TOUCHES_CONFIRMATION, confirm.group(0))
            unseen = NEGATION_WORDS.search(text) or CONSENT_WORDS.search(text) or TIMING_WORDS.search(text)
            if pay and topics.payment_confirmed and (removes_flow or (unseen and not affirms_confirmation(text))):
                return Directive(DirectiveKind.TOUCHES_CONFIRMATION, pay.group(0))
        affirmed = affirms_confirmation(text)
        if confirm and not affirmed:
            return Directive(DirectiveKind.GUARDED_TOPIC, confirm.group(0))
        if m := pay or (None if affirmed else TIMING_WORDS.search(text)):
            return Directive(DirectiveKind.GUARDED_TOPIC, m.group(0))
        if hit := sorted(t for t in _terms(text) if t in topics.terms):  # a bigram quoted with a character each side
            return Directive(DirectiveKind.GUARDED_TOPIC, m.group(0) if (m := _CJK_AROUND(hit[0]).search(text)) else hit[0])
    return None


ACTION_WORDS = re.compile(
    r"\b(?:book(?:s|ed|ing)?|order(?:s|ed|ing)?|dispatch\w*|reserv\w*|purchas\w*|buy(?:s|ing)?|bought|"
    r"submit\w*|send(?:s|ing)?|sent|transfer\w*|delet\w*|cancel\w*|hail\w*|arrang\w*|schedul\w*|"
    r"purg\w*|eras(?:e|es|ed|ing)|wip(?:e|es|ed|ing)|trash\w*|clear(?:s|ed|ing)?|remov(?:e|es|ed|ing)|"
    r"deliver\w*|dispos\w*|(?:goes|go|went|going)\s+out|"
    r"secur(?:e|es|ed|ing)|lock(?:s|ed|ing)?\s+in|"
    r"(?:call|get|send|summon|request|line\s+up)\w*\s+(?:\S+\s+){0,2}?(?:car|cab|taxi|ride|driver|table|room|seat|ticket)s?)\b|"
    r"下单|叫车|叫辆|派车|派单|约车|打车|预订|预定|预约|订票|订座|订房|订餐|购买|提交|发送|发出|转账|删除|取消|安排|清空|清除|移除|寄出",
    re.IGNORECASE)
"""A consequential action: what a confirmation rule exists to hold back (book, order, dispatch, send,
cancel, 下单, 派车, 提交, ...); money is PAYMENT_WORDS."""

QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|「[^」]*」|『[^』]*』|‘[^’]*’")
"""The user's own words inside an example line ("Input: \"book me a car\""): a request, not behaviour."""

_ARROW = re.compile(r"→|->|=>|⟶|⇒")

_ORDER_READ = re.compile(r"\b(?:look\w*\s+up|find\w*|check\w*|track\w*|show\w*|report\w*|read\w*|"
                         r"(?:the\s+)?(?:active|current|latest|last|recent|existing|open))\s+(?:\S+\s+){0,2}$|"
                         r"\b(?:status|number|id|history|details?)\b", re.IGNORECASE)
"""An order read, not placed: "look up the active order", "order status"."""

_CJK_NOUN_AFTER = re.compile(r"号|单号|记录|状态|信息|详情|费|政策|规则|时间|发票|软件|平台|\s*(?i:app)\b")  # 打车 App (QA 47 F5)
"""预订号, 取消费, 下单时间: a noun naming the action's record or fee, not the action."""

ACTION_NEGATED = re.compile(r"(?:\b(?:not|no|never|don'?t|won'?t|nor)\s+(?:\S+\s+){0,2}|[不别勿未没]\S{0,1})$",
                             re.IGNORECASE)


def find_action(line: str, topics: GuardedTopics) -> Directive | None:
    """A body example line (the agent reads it as what to do) that performs a consequential action
    while the constraints require a confirmation, without asking for it as the rule does: a
    directive (L2), however it is worded ("the order goes out as the user speaks", 下单后再告诉用户,
    "dispatch the car first"); grave (L3) when it does ask, but after the action ("book it, then
    confirm", 确认前就下单, 下单后确认: `_confirmed_first`). Only the behaviour side of "input →
    behaviour" is read, and quoted text in it (the user's words) is skipped; a negated action
    ("不下单", "do not book") or an order looked up ("the active order") is not one; "restate and
    confirm, then book" and 确认后下单 affirm the rule."""
    if not topics.confirmation:
        return None
    for text in dict.fromkeys((visible(line), fold(line, chinese_numerals=False))):
        told = _ARROW.split(text, maxsplit=1)[-1]  # the behaviour side of "input → behaviour"
        said = QUOTED.sub(" ", ASKED_CONSENT.sub(" confirm ", told))
        action = next((m for m in ACTION_WORDS.finditer(said) if _performed(said, m)), None)
        if action is None:
            continue
        if not affirms_confirmation(told):
            return Directive(DirectiveKind.GUARDED_ACTION, action.group(0))
        if not _confirmed_first(said, action):
            return Directive(DirectiveKind.TOUCHES_CONFIRMATION, action.group(0))
    return None


def _performed(said: str, m: re.Match[str]) -> bool:
    """The action is done, not negated (不下单, "do not book"), looked up ("the active order") or a
    record (预订号, 取消费)."""
    if m.group(0).lower().startswith("order") and (
            _ORDER_READ.search(said[:m.start()]) or _ORDER_READ.match(said[m.end():].lstrip())):
        return False
    return not _CJK_NOUN_AFTER.match(said[m.end():]) and not ACTION_NEGATED.search(said[:m.start()])


_AFTER = re.compile(r"\bafter\b|[前]", re.IGNORECASE)
"""Between "confirm" and the action it reverses the order: "confirm after booking", 确认前就下单."""
_UNTIL = re.compile(r"\b(?:after|once|until|when|only\s+if|if)\b|[前]", re.IGNORECASE)
"""Between the action and "confirm" it keeps the order: "book after the user confirms", 下单前先确认."""


def _confirmed_first(said: str, action: re.Match[str]) -> bool:
    """The confirmation comes before the action, as the rule wants: "restate and confirm, then book",
    确认后下单, "book after the user confirms", 下单前先确认, `wait for "yes" before booking`."""
    before = [c for c in CONFIRM_WORDS.finditer(said) if c.end() <= action.start()]
    if before and not _AFTER.search(said[before[-1].end():action.start()]):
        return True
    after = next((c for c in CONFIRM_WORDS.finditer(said) if c.start() >= action.end()), None)
    return after is not None and _UNTIL.search(said[action.end():after.start()]) is not None
