"""Harvest decisions, pure: which tool call loaded which skill, what the person's next message says
about the answer, what expectation a correction suggests, which tool call is a fixture, and which
partition an accepted case goes to.

The follow-up rules are deliberately narrow: a message counts as a correction or a complaint only
when it opens with (or is) a negation or a complaint, in English or Chinese. A miss costs one case
nobody stages; a false hit costs a person one `--reject`. Nothing here is a gate: every harvested
case waits for a person.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence

from pydantic import JsonValue

from skillforge.rules.containment import held_within  # noqa: F401  (review's leak-direction rule, kept importable here)
from skillforge.rules.failures import near_duplicate
from skillforge.rules.hidden import char_label, hidden_in
from skillforge.rules.injection import session_steering
from skillforge.rules.leaks import INJECTION_PATTERNS
from skillforge.rules.overrides import overrides
from skillforge.rules.textnorm import fold
from skillforge.state.evaluate import Expectation, Partition
from skillforge.state.sessions import Signal, ToolCallRec

SKILL_PATH = re.compile(r"(?:^|[\s'\"`/=:(])(?:[^\s'\"`]*/)?skills/([a-z0-9][a-z0-9-]{0,63})/SKILL\.md\b")
"""A path to a skill's SKILL.md inside a Read / cat / sed / shell call."""
LOADER_TOOLS = frozenset({"skill", "read", "view", "bash", "shell", "local_shell", "exec_command", "shell_command",
                          "container.exec", "str_replace_based_edit_tool"})
"""Tools that load or read skills (never a case's fixtures)."""

CORRECTION_OPENERS = re.compile(
    r"(?ix)^\W*(?:no\b(?![\s,.!-]*(?:thanks|thank|problem|worries|need|rush|that'?s\s+(?:all|it|fine)|it'?s\s+fine|"
    r"i'?m\s+(?:good|fine)|all\s+good)\b)(?=[\s,.!-]*\w)|nope\b|wrong\b|incorrect\b|not\s+(?:quite|right|correct|true)\b|that(?:'s|\s+is)\s+"
    r"(?:wrong|incorrect|not\s+(?:right|correct|true|what)|false)\b|actually\b|you(?:'re|\s+are)\s+wrong\b|"
    r"you\s+(?:got|have)\s+(?:it|that)\s+wrong\b|it\s+should\s+(?:be|have)\b|that\s+was\s+wrong\b)"
    r"|^\s*(?:不对|不是|错了|搞错|弄错|说错|应该是|其实是|并不是)")
NEGATIVE = re.compile(
    r"(?ix)\b(?:useless|unhelpful|not\s+helpful|doesn'?t\s+(?:help|work)|didn'?t\s+(?:help|work|answer)|"
    r"that\s+didn'?t|you\s+didn'?t\s+(?:tell|say|answer|mention)|you\s+(?:forgot|missed|ignored)|"
    r"(?:this|that)\s+is\s+(?:bad|terrible|wrong)|not\s+what\s+i\s+asked|still\s+(?:wrong|broken|not))"
    r"|没用|不行|没回答|没告诉|没说|答非所问|不是我要的|太差|还是不对|忘了|漏了")
END = r"(?=[\"”」』]|['’](?!\w)|[,.](?!\d)|[;!?，。；！？\n]|\s+(?:not|instead|but)\b|不是|而不是|$)"
"""Where a phrase of a correction ends: a quote (an apostrophe inside a word, "user's", is not one),
punctuation (not a decimal or thousands mark), "not"."""
AFTER_SHOULD = re.compile(r"(?i)(?:should\s+be|is\s+actually|was\s+actually|it'?s\s+actually|应该是|其实是|正确的是)"
                          r"\s*[:：]?\s*[\"“'‘「『]?(.{2,60}?)" + END)
NOT_PHRASE = re.compile(r"(?i)\bnot\s+(?:the\s+|a\s+|an\s+)?(.{2,40}?)" + END + r"|不是\s*(.{2,20}?)" + END)
QUOTED = re.compile(r"\"([^\"\n]{2,60})\"|“([^”\n]{2,60})”|「([^」\n]{2,60})」|『([^』\n]{2,60})』"
                    r"|(?<![\w'’])['‘](?=[^\s'‘’])([^\n]{2,60}?)(?<=[^\s'‘’])['’](?![\w'’])")
"""A quoted phrase: in double, curly or corner quotes, or in single quotes that stand outside words.
An apostrophe inside a word (that's, don't, the user's, O'Brien) never opens or closes a quote."""
NEGATED_QUOTE = re.compile(r"(?i)(?:\bnot|n[’']t\s+(?:say|write|use|put|mention|show)|\bnever\s+(?:say|write|use)|"
                           r"\binstead\s+of|\brather\s+than|\bno\s+longer|\bavoid|不是|不要说?|别说?|而不是)\s*[:：]?\s*$")
"""Words right before a quoted phrase that say it is what should NOT be there ("don't say 'tomorrow'")."""
CODE = re.compile(r"(?<![A-Za-z0-9-])(?=[A-Za-z0-9-]*\d)[A-Za-z0-9][A-Za-z0-9-]{3,}(?![A-Za-z0-9-])")
"""Identifiers with a digit (tracking numbers, order ids, times like 18:30 are not matched)."""
NUMBER = re.compile(r"\d[\d,.:]*\d")
DEFAULT_SHARES: tuple[tuple[Partition, int], ...] = (
    (Partition.REPAIR, 60), (Partition.HOLDOUT, 30), (Partition.FINAL_AUDIT, 10))
"""Where accepted cases go, by a stable hash of their id: percent per partition."""


def _skill_arg(args: Mapping[str, JsonValue]) -> str | None:
    for key in ("skill", "name", "skill_name", "command"):
        v = args.get(key)
        if isinstance(v, str) and v.strip():
            return v.strip().rsplit(":", 1)[-1]  # a plugin skill: "plugin:name"
    return None


def _text_args(args: Mapping[str, JsonValue]) -> str:
    parts: list[str] = []
    for v in args.values():
        if isinstance(v, str):
            parts.append(v)
        elif isinstance(v, list):
            parts.extend(x for x in v if isinstance(x, str))
    return " ".join(parts)


def loaded_skills(call: ToolCallRec, skills: Iterable[str]) -> list[str]:
    """The workspace skills this tool call loaded: the `Skill` tool, any `*use_skill` tool (the MCP
    server's, the executor's), or a read of `skills/<name>/SKILL.md` (Read, cat, sed, a shell)."""
    known = set(skills)
    name = call.name.casefold()
    if name == "skill" or name.endswith("use_skill"):
        s = _skill_arg(call.arguments)
        return [s] if s in known else []
    if name.rsplit("__", 1)[-1].rsplit(".", 1)[-1] in LOADER_TOOLS or name in LOADER_TOOLS:
        found = [m.group(1) for m in SKILL_PATH.finditer(_text_args(call.arguments))]
        return sorted({s for s in found if s in known})
    return []


def is_loader(call_name: str) -> bool:
    name = call_name.casefold()
    return name == "skill" or name.endswith("use_skill") or name.rsplit("__", 1)[-1] in LOADER_TOOLS or name in LOADER_TOOLS


def fixture_name(call_name: str, declared: Iterable[str]) -> str | None:
    """The skill's declared tool a session's tool call stands for: the same name, or the same last
    part (`mcp__shop__track_package`, `shop.track_package` -> `logistics.track_package`) when only one
    declared tool ends that way. None: not one of the skill's tools (not a fixture)."""
    declared = list(declared)
    if call_name in declared:
        return call_name
    tail = re.split(r"__|\.|/", call_name)[-1].casefold()
    hits = [d for d in declared if re.split(r"__|\.|/", d)[-1].casefold() == tail]
    return hits[0] if len(hits) == 1 else None


def followup_signal(text: str) -> Signal | None:
    """What the person's next message says about the answer: a correction (it opens with a negation
    and says something), a complaint (negative follow-up), or nothing."""
    t = text.strip()
    if not t:
        return None
    if CORRECTION_OPENERS.search(t):
        return Signal.CORRECTION
    if NEGATIVE.search(t):
        return Signal.NEGATIVE_FOLLOWUP
    return None


def expectation_from(correction: str, answer: str) -> Expectation:
    """A suggested expectation from a correction: what it says should be there and the answer lacks
    (a phrase after "should be" / "应该是", a quoted phrase, an identifier with a digit) must be
    included; what it negates and the answer said ("not the front desk") must not. Empty when
    nothing is grounded: the case is then judged pairwise only."""
    folded = answer.casefold()
    include: list[str] = []
    exclude: list[str] = []
    quoted: list[str] = []
    for m in QUOTED.finditer(correction):
        phrase = next(g for g in m.groups() if g is not None).strip()
        if NEGATED_QUOTE.search(correction[max(0, m.start() - 30):m.start()]):
            if phrase.casefold() in folded and phrase not in exclude:
                exclude.append(phrase)  # "don't say 'tomorrow'": what the answer said and should not
        else:
            quoted.append(phrase)
    for phrase in (*(m.group(1).strip() for m in AFTER_SHOULD.finditer(correction)), *quoted):
        number = NUMBER.search(phrase)
        if number and len(number.group(0)) >= 3:  # "1,280.00 元" -> "1,280.00": the unit may be written apart
            phrase = number.group(0)
        if phrase and phrase.casefold() not in folded and phrase not in include:
            include.append(phrase)
    for m in CODE.finditer(correction):
        code = m.group(0)
        if code.casefold() not in folded and not any(code in p for p in include):
            include.append(code)
    for m in NOT_PHRASE.finditer(correction):
        phrase = (m.group(1) or m.group(2) or "").strip()
        words = phrase.split()
        for n in range(len(words), 0, -1):  # the longest leading run of words the answer said
            cand = " ".join(words[:n])
            if len(cand) >= 2 and cand.casefold() in folded:
                exclude.append(cand)
                break
        else:
            if len(phrase) >= 2 and phrase.casefold() in folded and phrase not in exclude:
                exclude.append(phrase)
    include = [p for p in include if not any(p.casefold() == e.casefold() for e in exclude)]
    return Expectation(must_include=include[:3], must_not_include=list(dict.fromkeys(exclude))[:3])


EMAIL = re.compile(r"[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)+")
TOKEN = re.compile(r"(?<![a-z0-9_])[a-z0-9_][a-z0-9_.:/#-]*")
"""A run of ASCII letters, digits and joiners (`.:/#-_`) in the folded text: an identifier when it
holds a digit (tracking and order numbers, flight numbers, "parcel 0", "building 12", 18:30, dates)."""


def identifiers(text: str) -> frozenset[str]:
    """The identifier-like tokens of a request, in the leak scan's normal form (so full-width
    digits and Chinese numerals are digits): every token with a digit, even a lone one ("parcel 0"),
    and email addresses. Two requests that name different ones are two cases."""
    norm = fold(text)
    found = {m.group(0) for m in EMAIL.finditer(norm)}
    found |= {t for t in (m.group(0).rstrip(".:/#-") for m in TOKEN.finditer(EMAIL.sub(" ", norm)))
              if any(ch.isdigit() for ch in t)}
    return frozenset(found)


def identifier_hashes(text: str, salt: bytes) -> list[str]:
    """The identifiers of `text` (take it before redaction), each as HMAC-SHA256 under `salt`, 16
    hex, sorted: what a staged case keeps so that two requests differing only in an e-mail address
    or a phone number (both read [REDACTED:...] once redacted) stay apart, without the raw value."""
    import hmac

    return sorted({hmac.new(salt, i.encode("utf-8"), "sha256").hexdigest()[:16] for i in identifiers(text)})


PLACEHOLDER = re.compile(r"\[REDACTED:[^\]\s]{1,64}\]")
"""What redaction left where a value was (rules/redact.py)."""


def edited_hashes(old_query: str, old_hashes: Sequence[str] | None, new_query: str, salt: bytes,
                  case_id_: str) -> list[str]:
    """The identifier hashes of a case whose query a person edited (`cases review --edit`): the
    identifiers of the edited text (what the person typed; placeholders are not identifiers), plus,
    when the edit keeps exactly the old query's [REDACTED:...] placeholders, the old hashes of what
    redaction took (the harvest's hashes less those of identifiers still readable in the old text).
    When the edited text holds placeholders whose values cannot be known (other placeholders than
    before, or a case harvested before hashes), one hash no request can have (keyed on the case id)
    is added: such a case never folds a later request into itself (QA 27 T6: bob's request was
    dropped as a near-duplicate of alice's edited case). Sorted, 16 hex each, like identifier_hashes."""
    import hmac

    new = set(identifier_hashes(PLACEHOLDER.sub(" ", new_query), salt))
    marks_new = sorted(PLACEHOLDER.findall(new_query))
    if not marks_new:
        return sorted(new)
    if old_hashes is not None and sorted(PLACEHOLDER.findall(old_query)) == marks_new:
        readable = set(identifier_hashes(PLACEHOLDER.sub(" ", old_query), salt))
        return sorted(new | (set(old_hashes) - readable))
    unknown = hmac.new(salt, f"\0unknown identifiers\0{case_id_}".encode(), "sha256").hexdigest()[:16]
    return sorted(new | {unknown})


def same_identifiers(a: str, b: str, a_hashes: Sequence[str] | None = None,
                     b_hashes: Sequence[str] | None = None) -> bool:
    """The harvest's identifier condition: when both requests carry identifier hashes (taken before
    redaction), the same hashes; else the same identifiers in the two texts as staged."""
    if a_hashes is not None and b_hashes is not None:
        return set(a_hashes) == set(b_hashes)
    return identifiers(a) == identifiers(b)


def same_request(a: str, b: str, cosine: float, threshold: float,
                 a_hashes: Sequence[str] | None = None, b_hashes: Sequence[str] | None = None) -> bool:
    """Near-identical requests for the harvest: the embedder puts them at or above `threshold`
    and they name the same identifiers (two parcels' "where is my package X" are two cases)."""
    return cosine >= threshold and same_identifiers(a, b, a_hashes, b_hashes)


def same_text_request(a: str, b: str, a_hashes: Sequence[str] | None = None,
                      b_hashes: Sequence[str] | None = None) -> bool:
    """The harvest's text rule for folding two requests into one case: rules/failures.near_duplicate
    (the same text up to the leak scan's normal form or a few characters) and the same identifiers,
    so "where is SF1234567890123" and "where is SF1234567890456" stay two cases. (The leak checks,
    review's cross-partition refusal among them, use near_duplicate alone: a copy with another
    tracking number is still a copy there.)"""
    return same_identifiers(a, b, a_hashes, b_hashes) and near_duplicate(a, b)


def leak_copy(a: str, b: str, cosine: float | None, threshold: float) -> bool:
    """Review's cross-partition near-copy judgement, the harvest's two rules without their identifier
    condition (leak direction: a copy with another tracking number still shows the proposer the
    held-out text): rules/failures.near_duplicate, or the embedder's `cosine` at or above `threshold`
    (harvest's DEDUPE_COSINE; None: no embedder, the text rule alone). A greeting wrapped round a
    held-out query, or its clauses reordered, is caught by the cosine."""
    return near_duplicate(a, b) or (cosine is not None and cosine >= threshold)


def case_id(skill: str, source: str, session_id: str, request_index: int, content_hash: str = "") -> str:
    """`<skill>_auto_s<10 hex>`: the same session request always gets the same id. With
    `content_hash` (the staged case's hash of its query and fixtures): the id of a different request
    that came under a session id and index already taken (a reused session id, two files named
    alike), see `settle_id`."""
    key = f"{source}\0{session_id}\0{request_index}" + (f"\0{content_hash}" if content_hash else "")
    return f"{skill}_auto_s{hashlib.sha256(key.encode()).hexdigest()[:10]}"


def settle_id(base: str, salted: str, content: tuple[object, ...], seen: Mapping[str, tuple[object, ...] | None]
              ) -> tuple[str, str]:
    """Which id a harvested request takes and whether it is new: ("new", id), ("known", id) or
    ("same", id) (this very request is already under that id; with identifier hashes, a third item
    of `content` and of a held value, the same query counts only with the same hashes). `base` is case_id without content
    (the id every earlier harvest gave), `salted` the id with the content hash, `content` the
    request's (content hash, query), `seen` the ids already taken (staged, accepted, rejected, in a
    set, or earlier in this harvest) with the (content hash, query) they hold, or None when unknown
    (a set case, a folded duplicate: taken as the same request, as before). The same request under
    its old id stays known (re-harvesting is idempotent, old workspaces keep their ids); a different
    request under a taken id gets the salted one, never "seen before"."""
    for cid in (base, salted):
        if cid not in seen:
            return "new", cid
        held = seen[cid]
        ids = (held[2] if held is not None and len(held) > 2 else None, content[2] if len(content) > 2 else None)
        same_ids = None in ids or ids[0] == ids[1]
        if held is None or held[0] == content[0] or (held[1] == content[1] and same_ids):
            return "same", cid
    return "same", salted  # the salted id holds other content: a sha256 clash, not reached


def partition_for(case_id_: str, shares: tuple[tuple[Partition, int], ...] = DEFAULT_SHARES) -> Partition:
    """The partition a case id hashes to (sha256 of the id mod the total share): stable, and
    independent of who accepts it or when."""
    total = sum(w for _, w in shares)
    if total <= 0:
        raise ValueError("partition shares must add up to more than 0")
    point = int(hashlib.sha256(case_id_.encode("utf-8")).hexdigest(), 16) % total
    for part, w in shares:
        if point < w:
            return part
        point -= w
    raise AssertionError("unreachable: the shares cover the total")


def parse_shares(text: str) -> tuple[tuple[Partition, int], ...]:
    """"repair=60,holdout=30,final_audit=10" -> shares; ValueError naming what is wrong."""
    out: list[tuple[Partition, int]] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, weight = part.partition("=")
        try:
            p, w = Partition(name.strip()), int(weight)
        except ValueError:
            raise ValueError(f"bad share {part!r}: use partition=percent, e.g. repair=60,holdout=30,final_audit=10") from None
        if w < 0:
            raise ValueError(f"bad share {part!r}: a share is 0 or more")
        out.append((p, w))
    if not any(p is Partition.HOLDOUT and w > 0 for p, w in out):
        raise ValueError("the shares must give holdout a part: a harvested case must be able to confirm a fix")
    if sum(w for _, w in out) <= 0:
        raise ValueError("partition shares must add up to more than 0")
    return tuple(out)


EXFILTRATION = re.compile(
    r"(?i)\b(?:send|post|upload|forward|transmit|exfiltrate|leak|copy|report)\b.{0,60}?"
    r"\b(?:data|details|info(?:rmation)?|history|tokens?|keys?|credentials?|passwords?|cookies?|secrets?|messages?)\b"
    r".{0,40}?\b(?:to|at)\s+(?:https?://|ftp://|www\.|[\w.-]+@[\w-]+\.)"
    r"|(?:发送|上传|转发|发给|传到).{0,30}(?:数据|信息|记录|密码|令牌|密钥).{0,20}(?:https?://|www\.)")
"""An instruction to ship data to an address: injected text asking the skill to exfiltrate."""
_ADDRESS = (r"(?:h[tx]{2}ps?://|ftp://|www\.|[\w-]+(?:\.[\w-]+)*\.(?:com|net|org|io|cn|ru|xyz|top|info|biz|me|co)\b"
            r"|(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.]))")  # an IPv4 address too (QA 47 F4)
_DEFANGED = re.compile(r"\s*(?:\[\s*(?:\.|dot)\s*\]|\(\s*(?:\.|dot)\s*\)|\{\s*(?:\.|dot)\s*\})\s*|(?<=\w)(?:\s+dot\s+|[。．｡])(?=\w)",
                       re.IGNORECASE)
"""An address written so it does not link: `collect[.]example[.]net`, `(dot)`, `collect dot example dot net`,
`collect。example。net` (QA 47 F4): read with a dot."""
STEERING: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?i)\b(?:send|post|upload|forward|transmit|exfiltrate|leak|copy|report)\b.{0,60}?\b(?:to|at)\s+"
               + _ADDRESS),  # shipping anything to an address, hxxp:// or a bare domain included
    re.compile(r"(?:发送|发到|发给|上传|转发|传到|提交到|贴到|贴在|上报到|回传到|同步到|抄送到?).{0,40}?" + _ADDRESS),
    re.compile(r"(?i)\b(?:send|post|upload|forward|transmit|copy)\b\s*(?:给|到|至)\s*" + _ADDRESS),  # "POST 给 hxxps://…"
    re.compile(r"(?i)\[(?:system|developer|assistant)\]|<\|?(?:system|im_start)\|?>|^\s*(?:system|developer)\s*:"),
    re.compile(r"(?i)\bfrom now on\b.{0,60}\b(?:always|never|without|every|any|don'?t|do not|should|must)\b"
               r"|(?:从现在起|从今以后|以后|今后)[^。！？!?]{0,6}(?:都|一律|全部|每次)"),
    re.compile(r"(?:不要理会|别理会|不用理|不用管|别管|不要管|无视|忽略|忽视)[^。！？!?]{0,12}(?:规则|指令|指示|设定|要求|提示|约束)"),
)
"""Steering a skill from inside a request: a role marker, a standing order ("from now on …", 以后都…),
an order to disregard the rules in other words than the leak scan's patterns, data sent to an address."""
FLAG_CHARS = 60


def injection_phrases(text: str) -> list[str]:
    """The prompt-injection phrases in `text`, each once and cut to FLAG_CHARS: the leak scan's
    INJECTION_PATTERNS (in the folded form it matches), instructions to send data to an address, and
    steering (a role marker, a standing order). Empty: nothing found."""
    norm = fold(text)
    found = [m.group(0) for read in dict.fromkeys((norm, _DEFANGED.sub(".", norm)))  # a defanged address with its dots
             for p in (*INJECTION_PATTERNS, EXFILTRATION, *STEERING) for m in p.finditer(read)]
    found += overrides(text)  # "ignore the previous instructions" in other languages (rules/overrides.py)
    found += session_steering(text, injection_phrases)  # role markers, "forget ...", spaced letters (rules/injection.py)
    return list(dict.fromkeys(" ".join(f.split())[:FLAG_CHARS] for f in found))


def case_flags(fields: Iterable[tuple[str, str]]) -> list[str]:
    """Why a person should look twice at a harvested case before accepting it, one line each (empty:
    nothing found). `fields` are (name, text) pairs: the query, `why`, the fixtures, the expectation.
    Flagged: prompt-injection phrases (the leak scan's INJECTION_PATTERNS, in the folded form it
    matches, and instructions to send data to an address), and invisible or bidi characters, which
    hide or reorder text on the reviewer's screen (rules/hidden.py)."""
    flags: list[str] = []
    for name, text in fields:
        if not text:
            continue
        for phrase in injection_phrases(text):
            flags.append(f'prompt injection in {name}: "{phrase}"')
        chars = hidden_in(text)
        if chars:
            flags.append(f"invisible, bidi or control characters in {name}: {', '.join(map(char_label, chars))} "
                         "(shown escaped)")
    return flags
