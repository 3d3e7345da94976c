"""Redaction of harvested session text: API-key and token shapes, private keys, email addresses and
phone numbers become `[REDACTED:<kind>]` before anything is staged, shown or sent to a model.

The secret shapes are the leak scan's (rules/leaks.SECRET_PATTERNS), so what the leak scan would
refuse in a patch never reaches a staged case. A whole PEM block is replaced, not only its header.
Phone numbers need separators or a leading + (international), or a Chinese mobile shape
(1[3-9] and 9 more digits, not inside a longer run of digits), so order and tracking numbers that
are bare digit runs survive.
"""

from __future__ import annotations

import re
from collections import Counter

from pydantic import JsonValue

from skillforge.rules.leaks import SECRET_PATTERNS

PEM_BLOCK = re.compile(r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----.*?(?:-----END (?:[A-Z]+ )*PRIVATE KEY-----|\Z)", re.S)
BEARER = re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}")
JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")
EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}\b")
PHONE_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?)(?:[ .-]?\d{2,4}){2,4}(?!\w)"),
    re.compile(r"(?<![\w-])\(?\d{3}\)?[ .-]\d{3}[ .-]\d{4}(?![\w-])"),
    re.compile(r"(?<![\w-])1[3-9]\d(?:[ -]?\d{4}){2}(?![\w-])"),
)

KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private-key", PEM_BLOCK),
    *((label.lower().replace(" ", "-"), pattern) for label, pattern in SECRET_PATTERNS if label != "private key"),
    ("bearer-token", BEARER),
    ("jwt", JWT),
    ("email", EMAIL),
    *(("phone", p) for p in PHONE_PATTERNS),
)


def mark(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def redact(text: str) -> tuple[str, Counter[str]]:
    """`text` with every secret, email and phone number replaced, and how many of each kind."""
    found: Counter[str] = Counter()
    for kind, pattern in KINDS:
        def sub(m: re.Match[str], kind: str = kind) -> str:
            found[kind] += 1
            return mark(kind)
        text = pattern.sub(sub, text)
    return text, found


def redact_json(value: JsonValue) -> tuple[JsonValue, Counter[str]]:
    """`value` with `redact` applied to every string in it (keys included)."""
    found: Counter[str] = Counter()

    def walk(v: JsonValue) -> JsonValue:
        if isinstance(v, str):
            out, n = redact(v)
            found.update(n)
            return out
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {walk(k): walk(x) for k, x in v.items()}  # type: ignore[misc]
        return v

    return walk(value), found


def residue(text: str) -> list[str]:
    """Secret shapes still present after redaction (the check that fails a case closed)."""
    return [kind for kind, pattern in KINDS if kind != "phone" and pattern.search(text)]
