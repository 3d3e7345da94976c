"""Shifted copies of a case query (pure, no I/O): every character moved by the same number of code
points ("cpshift", QA 40 F1), or every letter by the same Caesar key.

No decoded view can guess the shift, but a shift keeps the differences between consecutive code
points: 「从码头打车去新天地」 and 「仏砂夵扔轧厼斱夨圱」 (each +1) have the same ones. So every case
query (all partitions: queries are protected in all) is indexed by its windows of WINDOW consecutive
differences, and a window of the patch with the same differences and a NONZERO shift is a finding (a
plain copy, shift 0, is the other rules' business: exact queries and n-grams).

- **Code points.** The text as a reader sees it (`textnorm.visible`: zero-width characters out), any
  script: CJK, Latin, digits, punctuation and spaces all shift together. A window whose shifted copy
  is only a change of case ("INTERNATIONAL" for "international") is no finding.
- **Caesar, mod 26.** A shift that wraps ("z" + 1 = "a") breaks code-point differences, so the
  letters a-z of the text (case folded, everything else dropped) are indexed too by their
  differences mod 26: any Caesar key 1-25 is caught, ROT13 included, whatever the spaces and
  punctuation did (they are not letters, so they are not read).
- **Distinctive windows only.** A window with fewer than MIN_DISTINCT different differences
  ("abcdefghi", "aaaaaaaaa", "ababababa") is not indexed: a run of letters in order or repeated is
  no copy of anything.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from skillforge.rules.textnorm import visible

WINDOW = 8
"""Consecutive differences in a window: WINDOW + 1 characters."""
MIN_DISTINCT = 3
"""A window needs this many different differences to be distinctive."""


def _letters(text: str) -> tuple[str, list[int]]:
    """The letters a-z of `text`, case folded, and where each stands in `text`."""
    out, where = [], []
    for i, ch in enumerate(text):
        c = ch.lower()
        if "a" <= c <= "z":
            out.append(c)
            where.append(i)
    return "".join(out), where


def _diffs(text: str, modulo: int = 0) -> str:
    """The differences between consecutive code points of `text` (mod `modulo` when given), one character
    each (mod 0x110000: two differences of code points never differ by that much)."""
    codes = [ord(ch) for ch in text]
    return "".join(chr((b - a) % (modulo or 0x110000)) for a, b in zip(codes, codes[1:]))


def _windows(text: str, modulo: int = 0) -> Iterable[tuple[int, str]]:
    """(start, differences) of each distinctive window of `text` (what is indexed)."""
    diffs = _diffs(text, modulo)
    for i in range(len(diffs) - WINDOW + 1):
        key = diffs[i:i + WINDOW]
        if len(set(key)) >= MIN_DISTINCT:
            yield i, key


def _found(index: dict[str, tuple[str, str]], text: str, modulo: int = 0) -> Iterable[tuple[int, tuple[str, str]]]:
    """(start, indexed window and source) of each window of `text` the index holds (all distinctive)."""
    diffs = _diffs(text, modulo)
    for i in range(len(diffs) - WINDOW + 1):
        hit = index.get(diffs[i:i + WINDOW])
        if hit is not None:
            yield i, hit


@dataclass
class ShiftIndex:
    """Windows of every case query: differences -> (the window as written, source), for code points and
    for letters mod 26."""

    points: dict[str, tuple[str, str]] = field(default_factory=dict)
    letters: dict[str, tuple[str, str]] = field(default_factory=dict)

    def add(self, source: str, query: str) -> None:
        seen = visible(query)
        for i, key in _windows(seen):
            self.points.setdefault(key, (seen[i:i + WINDOW + 1], source))
        letters, _ = _letters(seen)
        for i, key in _windows(letters, 26):
            self.letters.setdefault(key, (letters[i:i + WINDOW + 1], source))

    def scan(self, text: str, parent: str = "", seen: str | None = None) -> list[tuple[str, str]]:
        """(evidence, source) of each query `text` holds shifted, one per source; not one `parent` holds
        with the same shift. `seen`: `visible(text)` when the caller has it."""
        if not self.points:
            return []
        found = self._hits(text, seen)
        if found and parent:
            public = {(source, shift) for source, shift, _ in self._hits(parent).values()}
            found = {k: v for k, v in found.items() if (v[0], v[1]) not in public}
        return [(evidence, source) for source, _, evidence in found.values()]

    def _hits(self, text: str, seen: str | None = None) -> dict[str, tuple[str, str, str]]:
        """source -> (source, shift label, evidence), the first window found per source."""
        seen = visible(text) if seen is None else seen
        found: dict[str, tuple[str, str, str]] = {}
        for i, hit in _found(self.points, seen):
            if hit[1] in found:
                continue
            window = seen[i:i + WINDOW + 1]
            shift = ord(window[0]) - ord(hit[0][0])
            if shift and window.casefold() != hit[0].casefold():
                label = f"{shift:+d} code point{'s' if abs(shift) != 1 else ''}"
                found[hit[1]] = (hit[1], label, f"{window} (the query's {hit[0]!r} shifted by {label})")
        letters, where = _letters(seen)
        for i, hit in _found(self.letters, letters, 26):
            if hit[1] in found:
                continue
            shift = (ord(letters[i]) - ord(hit[0][0])) % 26
            if shift:
                window = seen[where[i]:where[i + WINDOW] + 1]
                label = f"Caesar key {shift}"
                found[hit[1]] = (hit[1], label, f"{window} (the query's letters {hit[0]!r} shifted by {label})")
        return found
