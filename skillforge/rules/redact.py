"""Redaction of harvested session text: API-key and token shapes, credential assignments, private
keys, basic-auth headers, passwords in URLs, payment card numbers, email addresses and phone numbers
become `[REDACTED:<kind>]` before anything is staged, shown or sent to a model.

The secret shapes are the leak scan's (rules/secrets.py: SECRET_PATTERNS, and the credential
assignment at its lenient level), so what the leak scan would refuse in a patch never reaches a
staged case; redaction is the more aggressive of the two (`password=hunter2` goes here, a patch may
say it). Where a rule has a `value` group only the value is replaced (`DB_PASSWORD=[REDACTED:...]`,
quotes kept), so a reviewer still sees what was there. A whole PEM block is replaced, not only its
header. In JSON, a value under a credential key (`{"password": "..."}`) is replaced whole.

Numbers: a card number is 13-19 digits (optionally grouped by spaces, dashes or dots) with a card
network's prefix and length that passes the Luhn check; phone numbers need separators or a leading +
(international), or a Chinese mobile shape (1[3-9] and 9 more digits, not inside a longer run of
digits). A Chinese resident ID number (`cn-id`: 18 characters, the last may be X) needs a real birth
date and the GB 11643 check character (`cn_id`); the old 15-digit form has none and is not read.
Order and tracking numbers that are bare digit runs, or fail those checks, survive. An
e-mail address written out (`jane[at]example[dot]com`, `jane dot doe at example dot com`) is one too
(redactviews.OBFUSCATED_EMAIL).
"""

from __future__ import annotations

import datetime
import re
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from skillforge.rules.redactviews import (AWS_ID_CHUNKED, AWS_SECRET_SPACED, CLI_PASSWORD_KINDS, CREDENTIAL_SPACED,
                                          OBFUSCATED_EMAIL, obfuscated_email_ok,
                                          SPACED_KEY, aws_id_chunked, prefix_joined_findings, spaced_credential_ok,
                                          spaced_key_ok, view_findings)
from skillforge.rules.secrets import (CREDENTIAL_LABEL, CREDENTIAL_PATTERNS, SECRET_PATTERNS, credential_ok,
                                      credential_value, is_credential_key, split_secrets)

if TYPE_CHECKING:
    from pydantic import JsonValue

PEM_BLOCK = re.compile(r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----.*?(?:-----END (?:[A-Z]+ )*PRIVATE KEY-----|\Z)", re.DOTALL)
BEARER = re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}")
BASIC_AUTH = re.compile(r"(?i)\b(?:proxy-)?authorization\\?['\"]?[ \t]*[:=][ \t]*\\?['\"]?"
                        r"(?:basic|token|digest|apikey|api-key|key|negotiate|ntlm|hmac|sso)[ \t]+"
                        r"(?P<value>[A-Za-z0-9+/_-]{6,}={0,2})")
URL_PASSWORD = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]{1,15}://[^\s:/@'\"\[\]]+:(?P<value>[^\s/@'\"\[\]]+)@")
JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")
CARD = re.compile(r"(?<![\w-])(?<!\d[ .-])\d(?:[ .-]?\d){12,18}(?![\w-])(?![ .-]\d)")
EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}\b")
PHONE_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?)(?:[ .-]?\d{2,4}){2,4}(?!\w)"),
    re.compile(r"(?<![\w-])\(?\d{3}\)?[ .-]\d{3}[ .-]\d{4}(?![\w-])"),
    re.compile(r"(?<![A-Za-z0-9_-])1[3-9]\d(?:[ -]?\d{4}){2}(?![A-Za-z0-9_-])"),  # ASCII edges: `电话13712345678`
)

CN_ID = re.compile(r"(?<![A-Za-z0-9_-])[1-9]\d{5}(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx]"
                   r"(?![A-Za-z0-9_-])")
"""ASCII edges only: `身份证是11010519491231002X` is one (a CJK character is a word character)."""
_CN_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def cn_id(text: str) -> bool:
    """A Chinese resident identity number (GB 11643-1999): 17 digits (region, birth date, sequence) and a
    check character, `1 0 X 9 8 7 6 5 4 3 2`[sum of digit x weight mod 11]; the birth date a real date.
    About one 18-digit run in eleven passes the check alone, and the date test leaves fewer: an order
    number of 18 digits is rarely taken. The old 15-digit form has no check character and is not read."""
    if not CN_ID.fullmatch(text):
        return False
    try:
        datetime.date(int(text[6:10]), int(text[10:12]), int(text[12:14]))
    except ValueError:
        return False
    total = sum(int(c) * w for c, w in zip(text[:17], _CN_ID_WEIGHTS))
    return "10X98765432"[total % 11] == text[17].upper()


_ANY = range(13, 20)
CARD_NETWORKS: tuple[tuple[int, int, range | tuple[int, ...]], ...] = (
    # (lowest prefix, highest prefix, lengths): the networks' published IIN ranges
    (4, 4, (13, 16, 19)),                                          # Visa
    (51, 55, (16,)), (2221, 2720, (16,)),                          # Mastercard
    (34, 34, (15,)), (37, 37, (15,)),                              # American Express
    (6011, 6011, range(16, 20)), (644, 649, range(16, 20)), (65, 65, range(16, 20)),  # Discover
    (3528, 3589, range(16, 20)),                                   # JCB
    (300, 305, range(14, 20)), (36, 36, range(14, 20)), (38, 39, range(14, 20)),      # Diners Club
    (62, 62, range(16, 20)),                                       # UnionPay
)


def luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def card_number(text: str) -> bool:
    """13-19 digits (spaces, dashes and dots ignored) with a network's prefix and length, Luhn-valid."""
    digits = re.sub(r"[ .-]", "", text)
    if not digits.isdigit() or len(digits) not in _ANY or not luhn(digits):
        return False
    return any(lo <= int(digits[:len(str(lo))]) <= hi and len(digits) in lengths for lo, hi, lengths in CARD_NETWORKS)


Check = Callable[[re.Match[str]], bool]
KINDS: tuple[tuple[str, re.Pattern[str], Check | None], ...] = (
    ("private-key", PEM_BLOCK, None),
    *((label.lower().replace(" ", "-"), pattern, None) for label, pattern in SECRET_PATTERNS if label != "private key"),
    ("bearer-token", BEARER, None),
    ("basic-auth", BASIC_AUTH, None),
    ("url-password", URL_PASSWORD, None),
    ("jwt", JWT, None),
    ("aws-access-key", AWS_ID_CHUNKED, aws_id_chunked),
    ("aws-secret-key", AWS_SECRET_SPACED, None),
    *CLI_PASSWORD_KINDS,
    *((CREDENTIAL_LABEL.replace(" ", "-"), p, lambda m: credential_ok(m, strict=False)) for p in CREDENTIAL_PATTERNS),
    ("high-entropy-key-assignment", SPACED_KEY, spaced_key_ok),
    (CREDENTIAL_LABEL.replace(" ", "-"), CREDENTIAL_SPACED, spaced_credential_ok),
    ("cn-id", CN_ID, lambda m: cn_id(m.group(0))),
    ("card-number", CARD, lambda m: card_number(m.group(0))),
    ("email", EMAIL, None),
    ("email", OBFUSCATED_EMAIL, obfuscated_email_ok),
    *(("phone", p, None) for p in PHONE_PATTERNS),
)
"""In the order they are applied: distinctive shapes before the credential assignment, so
`api_key: sk-proj-...` counts as the key's kind."""
_TOKEN_KINDS = tuple((label.lower().replace(" ", "-"), p, None) for label, p in SECRET_PATTERNS if label != "private key")
"""The vendor shapes a token cut into runs is read against (`prefix_joined_findings`), before KINDS."""


def mark(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def _replace(m: re.Match[str], kind: str) -> str:
    """The match with its `value` group (quotes kept) or, without one, all of it replaced."""
    if "value" not in m.re.groupindex:
        return mark(kind)
    whole, start, end = m.group(0), m.start("value") - m.start(), m.end("value") - m.start()
    value = whole[start:end]
    quote = re.fullmatch(r"(\\?['\"]).*?(\\?['\"])", value, re.DOTALL)
    inner = f"{quote.group(1)}{mark(kind)}{quote.group(2)}" if quote else mark(kind)
    return whole[:start] + inner + whole[end:]


def redact(text: str) -> tuple[str, Counter[str]]:
    """`text` with every secret, card number, email and phone number replaced, and how many of each kind."""
    out, found, _ = _redact(text)
    return out, found


def clip(text: str, limit: int) -> str:
    """`text` redacted, then cut to `limit` characters (a secret cut first would lose its shape and
    survive redaction, QA 22 TRUST-8). A cut inside a word drops that word and ends in '…', so no
    partial token is left; a `[REDACTED:...]` mark the cut falls into is kept whole."""
    out = redact(text)[0]
    if len(out) <= limit:
        return out
    cut = out[:limit]
    if out[limit].isspace() or cut[-1].isspace():
        return cut.rstrip() + "…"
    word = re.search(r"\S+$", cut)
    assert word is not None
    mark_at = out.find("[REDACTED:", word.start())
    if 0 <= mark_at < limit and (close := out.find("]", mark_at)) >= limit:
        return out[:close + 1] + "…"
    return cut[:word.start()].rstrip() + "…"


def redact_split(text: str) -> tuple[str, list[str]]:
    """`text` with each secret shape that only reads whole with the spaces between its chunks taken
    out (`secrets.split_secrets`) replaced from its first chunk to its last, and their kinds. Not
    part of `redact` (session text): applied where a hand-written case is shown to a proposer."""
    kinds: list[str] = []
    for start, end, label in sorted(split_secrets(text), reverse=True):
        kinds.append(kind := label.lower().replace(" ", "-"))
        text = text[:start] + mark(kind) + text[end:]
    return text, kinds


def redacted_values(text: str) -> list[str]:
    """What `redact` takes out of `text` (the values, without quotes): a phrase drawn from the same
    text (a suggested expectation) that holds one of them, or sits inside one, must go too."""
    return _redact(text)[2]


def _redact(text: str) -> tuple[str, Counter[str], list[str]]:
    found: Counter[str] = Counter()
    values: list[str] = []
    for start, end, kind in reversed(prefix_joined_findings(text, _TOKEN_KINDS)):  # a token cut into runs, whole
        found[kind] += 1                                                           # (not its first run only)
        values.append(text[start:end])
        text = text[:start] + mark(kind) + text[end:]
    for kind, pattern, check in KINDS:
        def sub(m: re.Match[str], kind: str = kind, check: Check | None = check) -> str:
            if check is not None and not check(m):
                return m.group(0)
            found[kind] += 1
            value = m.group("value") if "value" in m.re.groupindex else m.group(0)
            values.append(value.strip("\\'\""))
            return _replace(m, kind)
        text = pattern.sub(sub, text)
    for start, end, kind in reversed(view_findings(text, KINDS)):  # full-width, percent-encoded, base64
        found[kind] += 1
        values.append(text[start:end])
        text = text[:start] + mark(kind) + text[end:]
    return text, found, values


def redact_json(value: JsonValue) -> tuple[JsonValue, Counter[str]]:
    """`value` with `redact` applied to every string in it (keys included); a value under a
    credential key (`password`, `DB_PASSWORD`, `apiKey`) and an integer that is a card number are
    replaced whole."""
    found: Counter[str] = Counter()
    credential = CREDENTIAL_LABEL.replace(" ", "-")

    def walk(v: JsonValue) -> JsonValue:
        if isinstance(v, str):
            out, n = redact(v)
            found.update(n)
            return out
        if isinstance(v, int) and not isinstance(v, bool) and card_number(str(v)):
            found["card-number"] += 1
            return mark("card-number")
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            out_d: dict[str, JsonValue] = {}
            for k, x in v.items():
                if (isinstance(x, str | int | float) and not isinstance(x, bool) and is_credential_key(k)
                        and credential_value(str(x), strict=False)):
                    found[credential] += 1
                    x = mark(credential)
                out_d[walk(k)] = walk(x)  # type: ignore[index]
            return out_d
        return v

    return walk(value), found


PERSONAL_KINDS = frozenset({"card-number", "email", "phone", "cn-id"})
"""Personal data rather than a secret: redacted like one, never a `secret` finding of a patch."""
_NUMBERS = frozenset({"phone", "cn-id"})
"""Left out of the harvest's fail-closed check (a whole staged case's JSON, with its timestamps and
hashes): digit shapes that loose are only redacted there, not a reason to drop the case."""


def residue(text: str, *, personal: bool = False) -> list[str]:
    """Secret shapes still present after redaction (the check that fails a case closed): every kind
    but phone and resident ID numbers, with the same checks as `redact`. `personal`: those too, so
    every shape `redact` takes out is refused (what a person types: `cases review --edit`, a note)."""
    left: list[str] = []
    for kind, pattern, check in KINDS:
        if (personal or kind not in _NUMBERS) and kind not in left \
                and any(check is None or check(m) for m in pattern.finditer(text)):
            left.append(kind)
    for _, _, kind in view_findings(text, KINDS):
        if kind not in left:
            left.append(kind)
    return left


def _strict(kind: str, pattern: re.Pattern[str], check: Check | None) -> Check | None:
    """A KINDS rule at the patch scan's strictness: a value must look like a credential
    (secrets.credential_value strict), as the scan's own assignment rule asks; skill prose such as
    `Bearer YOUR_ACCESS_TOKEN` or `postgres://user:password@host` is not a secret there."""
    if pattern is BEARER:
        return lambda m: credential_value(m.group(0).split(None, 1)[1], strict=True)
    if "value" in pattern.groupindex:
        return lambda m: (check is None or check(m)) and credential_value(m.group("value"), strict=True)
    return check


_ASSIGNMENTS = (*CREDENTIAL_PATTERNS, CREDENTIAL_SPACED, SPACED_KEY)
SCAN_KINDS: tuple[tuple[str, re.Pattern[str], Check | None], ...] = tuple(
    (kind, pattern, _strict(kind, pattern, check)) for kind, pattern, check in KINDS
    if kind not in PERSONAL_KINDS and pattern not in _ASSIGNMENTS)
"""The redaction's secret shapes (KINDS but personal data) at the patch scan's strictness: what the
leak scan and the publish scan read besides their own rules (QA 45 F1: a JWT, a base64 `user:pass`).
Not the assignments: the scan's own (secrets.credential_matches strict, the high-entropy rule with a
`:` or `=`) decide those, so skill prose such as `- token <base64 sample>` is not a secret there; in a
decoded view (VIEW_KINDS) the strict assignment is read too."""
VIEW_KINDS = (*SCAN_KINDS, *((CREDENTIAL_LABEL.replace(" ", "-"), p, lambda m: credential_ok(m, strict=True))
                             for p in CREDENTIAL_PATTERNS))
_SCANNED = frozenset(p for _, p in SECRET_PATTERNS)
_LABELS = {**{label.lower().replace(" ", "-"): label for label, _ in SECRET_PATTERNS},
           CREDENTIAL_LABEL.replace(" ", "-"): CREDENTIAL_LABEL, "cli-password": "command-line password"}
"""A kind the scans already name (secrets.SECRET_PATTERNS, the assignment, skillfiles.CLI_LABEL) keeps their label."""


def secret_shapes(text: str) -> list[tuple[int, int, str, str]]:
    """(start, end, label, shown) of every secret shape the redaction reads in `text` (SCAN_KINDS, a
    vendor token cut into runs, and the decoded views: full-width, percent-encoded, a base64 or hex
    blob holding a secret or a `user:password` pair), in order, not overlapping. `shown` never holds
    a value: the text before it (`Authorization: Basic `), a JWT's header, or a token's first 4
    characters. Read by secrets.secret_spans, so the leak scan and `release publish` take them; `text`
    as a reader sees it (textnorm.visible, what those scans pass), so full-width forms are not read again."""
    found: list[tuple[int, int, str, str]] = []
    for kind, pattern, check in SCAN_KINDS:
        if pattern in _SCANNED:
            continue  # secrets.secret_spans reads these itself (anchored: faster)
        for m in pattern.finditer(text):
            if check is None or check(m):
                shown = (text[m.start():m.start("value")] if "value" in pattern.groupindex
                         else m.group(0)[:12 if kind == "jwt" else 4])
                label = _LABELS.get(kind, kind) + (" (split)" if pattern is AWS_ID_CHUNKED else "")
                found.append((m.start(), m.end(), label, shown[-40:]))
    for start, end, kind in prefix_joined_findings(text, _TOKEN_KINDS):
        found.append((start, end, f"{_LABELS.get(kind, kind)} (split)", text[start:start + 4]))
    for start, end, kind in view_findings(text, VIEW_KINDS, nfkc=False):  # the scans read textnorm.visible
        found.append((start, end, _LABELS.get(kind, kind), text[start:start + 4]))
    kept: list[tuple[int, int, str, str]] = []
    for item in sorted(found, key=lambda f: (f[0], -f[1])):
        if not kept or item[0] >= kept[-1][1]:
            kept.append(item)
    return kept
