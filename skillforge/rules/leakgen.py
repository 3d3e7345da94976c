"""Held-out numbers found by generating their spellings (pure, no I/O): the part of the number scan
that does not parse the patch but, for each of the few protected numbers of a set, writes the number
out and looks for it.

rules/leaknumbers.py reads a patch's numbers: digits of any script, separators, English words, and
text2num's French, German, Spanish, Italian and Portuguese. Languages text2num has no parser for
are covered here the other way round:

- **Number words** of SPELLING_LANGUAGES, written by the maintained `num2words` package (pure
  Python, offline): Dutch "achtenvijftigduizend tweehonderdzestig", Russian, Polish, Ukrainian,
  Czech, Turkish, Swedish, Danish, Norwegian, Finnish, Korean and others. Each spelling is folded
  (`textnorm.fold`, as the patch is) and squeezed to its letters, and so is the patch, so spaces,
  hyphens and apostrophes inside it do not matter ("achtenvijftig-duizend"); a connector word ("og",
  "and", "и") may be left out. A spelling matches only from a word start to a word end (Korean
  aside, whose particles attach to the word), and only one of MIN_SPELLING letters or more (one
  shorter could be an ordinary word); it is written as num2words gives it, in capitals and with each
  word capitalised (a text in other mixed case is not read). A longer number whose words begin with
  the held-out one's (58261 in Russian, "... шестьдесят один") is read as it too. Japanese is written in Chinese numerals, which fold already
  reads; num2words has no Chinese (cn2an reads it).
- **Roman numerals** as written, in capitals, of three or more letters ("CCCV", "MMCCXCI"; "CX",
  "CD", "MD" are common abbreviations and are not read). A dozen lines, not a dependency.
- **Hexadecimal** with its `0x` prefix ("0xE394"), or bare when it has MIN_BARE_HEX characters or
  more with both a letter and a digit ("e394"; "beef" is a word).
- **A number in words with its last digits written as digits** ("fifty-eight thousand 260", which
  fold reads as 58000260, "58000, 260" or "58000 and 260"): the thousands plus the rest.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from skillforge.rules.textnorm import fold, visible


@functools.cache
def _num2words():  # noqa: ANN202
    """num2words, imported on the first spelling (~40 ms): not by every command that loads the rules."""
    from num2words import num2words

    return num2words

SPELLING_LANGUAGES = ("nl", "ru", "pl", "uk", "cs", "sk", "sl", "sr", "tr", "sv", "da", "no", "fi", "hu",
                      "ro", "lt", "lv", "id", "vi", "ca", "ko", "he", "en", "fr", "de", "es", "it", "pt")
"""num2words' languages a protected number is written out in (ja is Chinese numerals, which fold
reads; num2words has no zh). Measured for 20 numbers: num2words ~50 ms, with each spelling folded
0.25 s on a loaded 2-core box; once per process (`spellings` is cached); then ~2 ms a scan."""
MIN_SPELLING = 6
"""Letters a squeezed spelling needs to be looked for (Hangul: MIN_HANGUL syllables)."""
MIN_HANGUL = 3
MIN_ROMAN = 3
MIN_BARE_HEX = 4
CONNECTORS = frozenset(("and", "og", "och", "e", "y", "und", "en", "si", "și", "i", "и", "і", "ve", "ja"))
"""Words between the parts of a number some languages write and a patch may leave out."""

_HANGUL = re.compile(r"[\uac00-\ud7af]")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_MIXED = re.compile(r"(?<![\d.])(\d+)000(?:(\d{3})|(?:, ?| and | )(\d{1,3}))(?![\d.])")
_ROMAN_VALUES = ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"),
                 (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"))


def roman(n: int) -> str | None:
    """`n` as an upper-case Roman numeral, or None outside 1-3999."""
    if not 0 < n < 4000:
        return None
    out = ""
    for value, letters in _ROMAN_VALUES:
        while n >= value:
            out, n = out + letters, n - value
    return out


def squeeze(folded: str) -> tuple[str, frozenset[int]]:
    """The letters and digits of a folded text run together, and the offsets (in that run) where a
    word starts or ends."""
    chars: list[str] = []
    bounds = {0}
    inside = False
    for ch in folded:
        if ch.isalnum():
            if not inside:
                bounds.add(len(chars))
            chars.append(ch)
            inside = True
        elif inside:
            bounds.add(len(chars))
            inside = False
    bounds.add(len(chars))
    return "".join(chars), frozenset(bounds)


@functools.lru_cache(maxsize=4096)
def spellings(n: int) -> frozenset[str]:
    """The squeezed folds of `n` in words in SPELLING_LANGUAGES (with and without CONNECTORS), long
    enough to be looked for and holding no digit (a fold to digits is the parser's)."""
    out: set[str] = set()
    for lang in SPELLING_LANGUAGES:
        try:
            text = _num2words()(n, lang=lang)
        except (NotImplementedError, OverflowError, ValueError, TypeError, KeyError, IndexError):
            continue
        words = re.split(r"[\s,]+", text)
        short = " ".join(w for w in words if w.casefold() not in CONNECTORS)
        # Cyrillic in capitals and capitalised too: fold folds look-alikes before case ('Т' is 'T', 'т'
        # is not); a Latin letter folds alike in either case
        cased = (str.upper, lambda t: " ".join(w.capitalize() for w in t.split())) if _CYRILLIC.search(text) else ()
        for variant in {v for t in (text, short) for v in (t, *(f(t) for f in cased))}:
            s, _ = squeeze(fold(variant))
            if s and not any(ch.isdigit() for ch in s) and len(s) >= (MIN_HANGUL if _HANGUL.match(s) else MIN_SPELLING):
                out.add(s)
    return frozenset(out)


def _found(needle: str, run: str, bounds: frozenset[int]) -> bool:
    """`needle` occurs in the squeezed `run` from a word start to a word end (a Hangul edge free)."""
    i = run.find(needle)
    while i != -1:
        end = i + len(needle)
        if (i in bounds or _HANGUL.match(needle[0])) and (end in bounds or _HANGUL.match(needle[-1])):
            return True
        i = run.find(needle, i + 1)
    return False


def mixed_readings(folded: str) -> set[str]:
    """Thousands in words with the rest in digits, as fold leaves them ("58000260", "58000, 260")."""
    return {str(int(m.group(1)) * 1000 + int(m.group(2) or m.group(3))) for m in _MIXED.finditer(folded)}


_ROMAN_TOKEN = re.compile(rf"(?<![A-Za-z0-9])[MDCLXVI]{{{MIN_ROMAN},}}(?![A-Za-z0-9])")
_HEX_TOKEN = re.compile(r"(?<![a-z0-9])(0x)?([0-9a-f]+)(?![a-z0-9])")
_ROMAN_DIGIT = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def _roman_numbers(seen: str) -> set[int]:
    """The values of the well-formed upper-case Roman numerals of MIN_ROMAN letters or more in `seen`."""
    out: set[int] = set()
    for m in _ROMAN_TOKEN.finditer(seen):
        values = [_ROMAN_DIGIT[ch] for ch in m.group(0)]
        n = sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))
        if roman(n) == m.group(0):  # "IIII" or "VX" is no numeral
            out.add(n)
    return out


def _hex_numbers(lower: str) -> set[int]:
    """The values of hexadecimal numbers in a lower-cased text: any after `0x`, a bare one of
    MIN_BARE_HEX characters or more with both a letter and a digit."""
    out: set[int] = set()
    for m in _HEX_TOKEN.finditer(lower):
        h = m.group(2)
        if m.group(1) or (len(h) >= MIN_BARE_HEX and re.search(r"[a-f]", h) and re.search(r"\d", h)):
            out.add(int(h, 16))
    return out


def generated(text: str, numbers: Iterable[str], folded: str | None = None) -> set[str]:
    """Which of `numbers` (digit strings) `text` holds in a generated spelling: words of
    SPELLING_LANGUAGES, a Roman numeral or hexadecimal (see the module docstring). `folded`:
    `fold(text)`, when the caller has it."""
    wanted = [k for k in numbers if k.isdigit()]
    if not wanted:
        return set()
    run, bounds = squeeze(fold(text) if folded is None else folded)
    seen = visible(text)
    other = _roman_numbers(seen) | _hex_numbers(seen.casefold())
    out = {k for k in wanted if int(k) in other}
    index, hangul = _index(tuple(sorted(wanted)))
    for i in sorted(bounds):  # a spelling starts a word: look it up by its first letters there
        for needle, k in index.get(run[i:i + PREFIX], ()):
            if k not in out and run.startswith(needle, i) and (i + len(needle) in bounds or _HANGUL.match(needle[-1])):
                out.add(k)
    if _HANGUL.search(run):
        out |= {k for needle, k in hangul if k not in out and _found(needle, run, bounds)}
    return out


PREFIX = 4
"""Letters a spelling is indexed by (not more than MIN_SPELLING; a Hangul one is not indexed)."""


@functools.lru_cache(maxsize=64)
def _index(wanted: tuple[str, ...]) -> tuple[dict[str, list[tuple[str, str]]], list[tuple[str, str]]]:
    """The spellings of `wanted` by their first PREFIX letters, and those that start in Hangul (looked
    for anywhere: Korean attaches particles to a word)."""
    index: dict[str, list[tuple[str, str]]] = {}
    hangul: list[tuple[str, str]] = []
    for k in wanted:
        for needle in spellings(int(k)):
            if _HANGUL.match(needle):
                hangul.append((needle, k))
            else:
                index.setdefault(needle[:PREFIX], []).append((needle, k))
    return index, hangul
