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


__all__ = ["ODD_CASE", "Folded", "matches", "run_starts"]
