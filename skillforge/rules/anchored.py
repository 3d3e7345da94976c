"""Anchored matching (pure): the matches of a regular expression, exactly as `pattern.finditer(text)`
gives them, found by trying the pattern only where it can start.

A secret rule has an anchor: a literal every match holds near its start (`ghp_`, `AKIA`, `://`, the
word `password` of a key name). Python's `re` tries a pattern at every position of a text, about 10
MB/s per pattern, and the secret scan runs some twenty of them; `str.find` skips to an anchor at
memory speed. `matches(pattern, text, starts)` tries `pattern.match(text, p)` at each candidate start
`p` (ascending) and keeps a match that begins at or after the end of the last one kept: that is
`finditer`'s own rule, so the result is the same as long as every position where the pattern matches
is among the candidates (the callers' anchors guarantee it; tests/test_secret_scan_speed.py checks it
against `finditer` on generated and adversarial texts). Each match runs on the whole text, so a
lookbehind, `\\b` and a lookahead see what they see in a full scan.

`Folded(text)` gives the positions of a literal, case-sensitive or as `(?i)` reads it: through
`text.lower()`, which keeps every position and, for a letter of ASCII, matches what `(?i)` matches
except for `İ`, `ı` and `ſ` (`(?i)` reads them as `i`, `i` and `s`; `İ`.lower() is two characters).
A text holding one of them has no folded form (`folded` is None): callers then scan it in full.

The anchors of rules/secrets.py's rules live here: `shape_matches` (a token shape's literal prefix,
STARTS_WITH) and `key_starts` (where a key name holding a credential word can begin).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

ODD_CASE = "\u0130\u0131\u017f"
"""Characters `(?i)` matches to an ASCII letter that `str.lower()` does not turn into it (found by
trying every code point against `(?i)[a-z]`: İ, ı, ſ; the Kelvin sign `K` lower-cases to `k`)."""


class Folded:
    """A text and its lower-cased form, for finding literals at their positions in the text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.folded: str | None = text.lower() if not any(c in text for c in ODD_CASE) else None

    def find(self, literals: Iterable[str], *, ci: bool = False) -> list[int]:
        """Every position (overlapping ones too) where one of `literals` starts, ascending; with `ci`
        as `(?i)` matches ASCII letters (the literals given in lower case). Callers check `folded`
        is not None before asking for `ci`."""
        hay = self.folded if ci else self.text
        assert hay is not None
        out: list[int] = []
        for lit in literals:
            i = hay.find(lit)
            while i >= 0:
                out.append(i)
                i = hay.find(lit, i + 1)
        out.sort()
        return out


def matches(pattern: re.Pattern[str], text: str, starts: Iterable[int]) -> Iterator[re.Match[str]]:
    """`pattern.finditer(text)`'s matches, tried only at `starts` (which must hold every position
    where `pattern` matches; unsorted and repeated starts are fine). No pattern here matches empty."""
    end = 0
    for p in sorted(set(starts)):
        if p < end:
            continue
        if (m := pattern.match(text, p)) is not None:
            yield m
            end = max(m.end(), p + 1)


def run_starts(text: str, anchors: Iterable[int], chars: str, reach: int) -> list[int]:
    """For each anchor position, the start of the run of `chars` that ends there, when it is at most
    `reach` characters back (a key name is at most that long before its credential word)."""
    out = []
    for i in anchors:
        lo = max(0, i - reach)
        window = text[lo:i]
        start = i - (len(window) - len(window.rstrip(chars)))
        if start == lo and lo > 0 and text[lo - 1] in chars:
            continue  # the run goes on beyond `reach`: no key of the pattern's length begins there
        out.append(start)
    return out


STARTS_WITH: dict[str, tuple[str, ...]] = {
    "openai-style key": ("sk-",), "AWS access key": ("AKIA", "ASIA"),
    "GitHub token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), "GitHub fine-grained token": ("github_pat_",),
    "GitLab token": ("glpat-", "glptt-", "glrt-"), "Stripe key": ("sk_", "rk_", "whsec_"), "npm token": ("npm_",),
    "Hugging Face token": ("hf_",), "Slack token": ("xox",), "Google API key": ("AIza",),
    "private key": ("-----BEGIN ",),
}
"""The literal every match of a secret shape (rules/secrets.py SECRET_PATTERNS, by label) begins with
(case-sensitive); `AWS secret key` begins with `aws` in any case, a `URL password`'s scheme ends 2-21
characters before `://`. A shape not named here is scanned in full."""


def shape_matches(ft: Folded, patterns: Iterable[tuple[str, re.Pattern[str]]]) \
        -> Iterator[tuple[str, re.Pattern[str], re.Match[str]]]:
    """(label, pattern, match) of every match of `patterns` in `ft.text`, in pattern order: each
    pattern tried only where its anchor is, which finds what `finditer` finds."""
    text = ft.text
    for label, pattern in patterns:
        if label in STARTS_WITH:
            found = matches(pattern, text, ft.find(STARTS_WITH[label]))
        elif label == "AWS secret key" and ft.folded is not None:
            found = matches(pattern, text, ft.find(("aws",), ci=True))
        elif label == "URL password":
            found = matches(pattern, text, (p for i in ft.find(("://",)) for p in range(max(0, i - 21), i - 1)
                                            if text[p].isascii() and text[p].isalpha()))
        else:
            found = pattern.finditer(text)
        for m in found:
            yield label, pattern, m


KEY_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
WORD_ANCHORS = ("pass", "pwd", "secret", "key", "token")
"""Every credential word of rules/secrets.py (`_WORD`, `_KEY`) holds one of these, in any case."""
GENERIC_ANCHORS = ("key", "token", "secret", "passw", "credential", "auth")
"""Every generic key word (`_GENERIC_WORD`) holds one of these, in any case."""
KEY_REACH = 64
"""How far before its credential word a key name can begin: at most 40 characters, then `private_`."""
CN_WORDS = ("密码", "口令", "密钥", "私钥", "令牌", "通行码", "支付码", "パスワード", "暗証番号")


def key_starts(ft: Folded, index: int) -> list[int] | None:
    """Where CREDENTIAL_PATTERNS[index] (or GENERIC_PATTERN, `index` -1) of rules/secrets.py can
    begin: the start of the key-name run that holds a credential word (WORD_ANCHORS, or
    GENERIC_ANCHORS; the lookbehind allows no other), or a Chinese key word; None: the text has no
    folded form, scan it in full."""
    words = GENERIC_ANCHORS if index == -1 else WORD_ANCHORS
    if index == 2:
        return ft.find(CN_WORDS)
    if ft.folded is None:
        return None
    chars = KEY_CHARS + ("_-" if index == 1 else "_.-")  # a flag's `_KEY`/`api_key` word holds `_` too
    return run_starts(ft.text, ft.find(words, ci=True), chars, KEY_REACH)


__all__ = ["GENERIC_ANCHORS", "ODD_CASE", "STARTS_WITH", "WORD_ANCHORS", "Folded", "key_starts", "matches", "run_starts",
           "shape_matches"]
