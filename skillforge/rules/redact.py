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
digits). Order and tracking numbers that are bare digit runs, or fail those checks, survive. An
e-mail address written out (`jane[at]example[dot]com`, `jane dot doe at example dot com`) is one too
(redactviews.OBFUSCATED_EMAIL).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from pydantic import JsonValue

from skillforge.rules.redactviews import (AWS_ID_CHUNKED, AWS_SECRET_SPACED, CLI_PASSWORD_KINDS, CREDENTIAL_SPACED,
                                          OBFUSCATED_EMAIL, obfuscated_email_ok,
                                          SPACED_KEY, aws_id_chunked, prefix_joined_findings, spaced_credential_ok,
                                          spaced_key_ok, view_findings)
from skillforge.rules.secrets import (CREDENTIAL_LABEL, CREDENTIAL_PATTERNS, SECRET_PATTERNS, credential_ok,
                                      credential_value, is_credential_key, split_secrets)

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
    re.compile(r"(?<![\w-])1[3-9]\d(?:[ -]?\d{4}){2}(?![\w-])"),
)

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


def residue(text: str) -> list[str]:
    """Secret shapes still present after redaction (the check that fails a case closed): every kind
    but phone numbers, with the same checks as `redact`."""
    left: list[str] = []
    for kind, pattern, check in KINDS:
        if kind != "phone" and kind not in left and any(check is None or check(m) for m in pattern.finditer(text)):
            left.append(kind)
    for _, _, kind in view_findings(text, KINDS):
        if kind not in left:
            left.append(kind)
    return left
