"""Is a line added to an L1 part of a skill an example, or an instruction in disguise? (pure, no I/O)

The L1 parts (the body's Examples section, the frontmatter `examples`, `not_for` and `description`)
publish without a person because they show *what* users ask, not *how* the skill behaves. A line
there stays L1 only when it is example-shaped: a sample request, optionally with the expected
behaviour told briefly. It is a **directive** (`find_directive`) when it

- uses override or imperative vocabulary (`OVERRIDE_WORDS`: ignore, skip, bypass, without asking,
  never, always, must, instead of, right away, 忽略, 跳过, 无需, 不要, 直接下单, 马上下单, 必须,
  一律, 绕过, ...);
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
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

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

_PROHIBITION_BEFORE = re.compile(r"\b(?:never|not|cannot|no)\b|n't\b|不得|禁止|不能", re.IGNORECASE)
"""Before "without ... confirm" it restates the rule ("never book without confirmation")."""

CONFIRMATION = re.compile(r"confirm|确认", re.IGNORECASE)
"""A constraints line with this requires a confirmation."""


class DirectiveKind(StrEnum):
    NAMES_CONSTRAINTS = "names the constraints"
    NEGATES_CONFIRMATION = "negates a confirmation the constraints require"
    OVERRIDE = "override or imperative wording"
    TOOL_CALL = "names a tool call"
    NAMES_SECTION = "names a section of the skill"


GRAVE = frozenset({DirectiveKind.NAMES_CONSTRAINTS, DirectiveKind.NEGATES_CONFIRMATION})


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


def requires_confirmation(constraint_lines: Iterable[str]) -> bool:
    """True when a line of the skill's constraints asks for a confirmation."""
    return any(CONFIRMATION.search(line) for line in constraint_lines)


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
                   wording_only: bool = False) -> Directive | None:
    """The gravest reason `line` is a directive rather than an example, or None when it is example-shaped.
    `tools`: the skill's declared tool names (named bare, they count as a call); `confirmation_required`:
    the skill's constraints ask for a confirmation (negating one is then grave, else a plain directive);
    `wording_only`: only the constraint, confirmation and override tests (for a description or not_for,
    whose ordinary wording names tools and "step-by-step instructions").
    The line is read as shown (`visible`: NFKC, invisible characters dropped, confusables folded) and
    in the leak scan's matching form (`fold`: markdown emphasis dropped too), so "ｉｇｎｏｒｅ",
    a Cyrillic "іgnore" or "i**g**nore" is the word it looks like."""
    tools = tuple(tools)
    found = [d for text in dict.fromkeys((line, visible(line), fold(line, chinese_numerals=False)))
             if (d := _find(text, tools, confirmation_required, wording_only)) is not None]
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
