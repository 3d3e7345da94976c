"""Held-out numbers and near-copies of held-out facts (pure, no I/O): the part of the leak scan that
protects holdout and final_audit values a patch can carry without copying a whole fact or query.

- **Held-out numbers.** Every number of MIN_DIGITS or more digits (leading zeros aside), and every
  two-digit number with a CJK unit of money, time or distance ("96元", "16分钟"), in a holdout or
  final_audit case's query, expected facts or fixture values is protected; a round number (one
  significant digit: 100, 2000, "20,000 yen") only when an expected fact holds it. A patch is read generously (`number_readings`): its
  fold (`textnorm.fold`: separators, number words in English, digit by digit, "oh", spaced digits);
  digit groups parted by a point ("58.260") joined; up to MAX_JOINED digit runs parted only by
  a gap of a space or line break and punctuation (at most MAX_GAP characters, no letter) joined ("regatta 22"
  ⏎ `"91"` -> 2291); MIN_SINGLE_DIGITS or more single digits joined one by one by the same hyphen,
  point, slash, underscore or middle dot ("5-8-2-6-0"; a version 1.4.0 or a date is not); digits, a
  scale word and the rest ("58 thousand 260", "58 tausend zweihundertsechzig"); and its number words
  read in NUMBER_LANGUAGES with text2num ("soixante-treize mille dix-neuf" -> 73019), also with
  their accents kept ("achtundfünfzigtausend…" as one compound; "fuenf" and "funf" respelt "fünf").
  Dutch, Russian, Polish and other languages text2num lacks are not parsed: the protected numbers are
  written out in them instead (rules/leakgen.py: num2words, Roman numerals, hexadecimal). A held-out number is not
  a finding when the parent skill, read the same way, already holds it, nor when a visible case
  (repair, dev, p0) holds it: the proposer saw it there, so the patch carries nothing only held-out
  text has. A year (1900-2099) is protected, as a round number is, only when an expected fact holds
  it: one in a query or fixture alone would refuse every example that names the year.
- **Near-copies of a held-out fact.** A held-out expected fact with NEAR_MIN_WORDS or more content
  words (folded, stopwords out, numbers as digits) is found when one added line, or two consecutive
  non-blank added lines together (a fact split over a line break), hold all of them in any order
  ("Tuesday appointment moved, Brightwater" for "Brightwater appointment moved to Tuesday"), or at
  least NEAR_MIN_WORDS and NEAR_SHARE of them including a distinctive one (a number, or a
  capitalised word that is no weekday or month: "Brightwater Tuesday appointment"), unless a line
  or two consecutive lines of the parent already do.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from text_to_num import alpha2digit

from skillforge.rules.leakgen import generated, mixed_readings
from skillforge.rules.textnorm import fold, visible

HELD_OUT = frozenset({"holdout", "final_audit"})
MIN_DIGITS = 3
NUMBER_LANGUAGES = ("fr", "de", "es", "it", "pt")
"""Languages besides English (which fold reads) whose number words a patch is also read in."""
MAX_GAP = 4
MAX_JOINED = 4
NEAR_MIN_WORDS = 3
NEAR_SHARE = 0.75
STOPWORDS = frozenset("""
a an the and or but of to in on at for from by with as is are was were be been being it its this that
these those there here into onto over under about after before up down out off than then so not no
do does did done will would can could should may might must shall i you he she we they me him her us
them my your his our their mine yours what which who whom whose when where why how all any each some
per via if please just also too very
""".split())
CALENDAR = frozenset("""
monday tuesday wednesday thursday friday saturday sunday january february march april may june july
august september october november december
""".split())

_RUN = re.compile(r"\d+")
_DOTTED = re.compile(r"(?<![\d.])\d{1,3}(?:\.\d{3})+(?![\d.])")
_GAP = re.compile(rf"(?=[^\w]{{0,{MAX_GAP - 1}}}\s)[^\w]{{1,{MAX_GAP}}}")
"""A gap two digit runs are joined across: a space or line break, with at most MAX_GAP characters
and no letter or digit ("22" ⏎ `"91"`); "1.4.0", "10:30" or "2025-06-20" are not joined."""
_UNIT = re.compile(r"(?<!\d)(\d{2})(分钟|小时|公里|元|块|秒|分|天|米)")
"""A two-digit number with a CJK unit of money, time or distance (after fold: "16 min" is 16分钟)."""
_ROUND = re.compile(r"[1-9]0+")
_YEAR = re.compile(r"(?:19|20)\d\d")
"""A year (1900-2099): common in any prose, protected only when an expected fact holds it."""
MIN_SINGLE_DIGITS = 4
_SINGLES = re.compile(rf"(?<![\w.\-/·])\d([-./_·])\d(?:\1\d){{{MIN_SINGLE_DIGITS - 2},}}(?![\w]|[-./_·]\d)")
SCALE_WORDS = {"thousand": 1000, "tausend": 1000, "mille": 1000, "mil": 1000, "mila": 1000,
               "million": 10**6, "millions": 10**6, "millionen": 10**6, "millones": 10**6, "milioni": 10**6}
_SCALE = re.compile(rf"(?<![\d.,])(\d{{1,3}})[ \t-]*({'|'.join(SCALE_WORDS)})\b(?=[ \t-]*(?:and[ \t]+)?([^\n]*))")
_GERMAN = re.compile(r"fu(?:e)?nf|zwo(?:e)?lf")
"""German digit words written without their umlaut ("funf", "fuenf"), respelt before text2num reads them."""
_GERMAN_SPELLING = {"funf": "fünf", "zwolf": "zwölf"}
_WORD = re.compile(r"[a-z0-9]+")


def _key(digits: str) -> str | None:
    """A digit run as it is compared (leading zeros dropped), or None when it is too short to count."""
    d = digits.lstrip("0")
    return d if len(d) >= MIN_DIGITS else None


def protected_numbers(folded: str, *, round_numbers: bool = True) -> set[str]:
    """The numbers a held-out text protects, read from its fold as written: digit runs of MIN_DIGITS
    or more and two-digit numbers with their CJK unit; without `round_numbers`, not one of one
    significant digit (100, 2000, "20,000 yen": common in any prose)."""
    out = {k for m in _RUN.finditer(folded) if (k := _key(m.group(0))) and (round_numbers or not _ROUND.fullmatch(k))}
    return out | {m.group(1) + m.group(2) for m in _UNIT.finditer(folded)}


def _joined_runs(folded: str) -> set[str]:
    """Digit runs parted only by a short gap without a letter, joined in twos up to MAX_JOINED."""
    runs = list(_RUN.finditer(folded))
    out: set[str] = set()
    for i in range(len(runs)):
        digits = runs[i].group(0)
        for j in range(i + 1, min(i + MAX_JOINED, len(runs))):
            gap = folded[runs[j - 1].end():runs[j].start()]
            if not _GAP.fullmatch(gap):
                break
            digits += runs[j].group(0)
            if k := _key(digits):
                out.add(k)
    return out


def _one_by_one(folded: str) -> set[str]:
    """Single digits joined one by one by the same hyphen, point, slash, underscore or middle dot
    ("5-8-2-6-0", "5.8.2.6.0"): MIN_SINGLE_DIGITS or more, so a version (1.4.0) or a date is not."""
    return {k for m in _SINGLES.finditer(folded) if (k := _key(re.sub(r"\D", "", m.group(0))))}


def _scaled(seen: str) -> set[str]:
    """Digits, a scale word and what follows ("58 thousand 260", "58 thousand two hundred sixty",
    "58 tausend 260"): the digits times the scale, plus the number after it when it is smaller."""
    out: set[str] = set()
    for m in _SCALE.finditer(seen):
        scale = SCALE_WORDS[m.group(2)]
        value = int(m.group(1)) * scale
        rest = _RUN.match(fold(m.group(3)))
        if rest and int(rest.group(0)) < scale:
            value += int(rest.group(0))
        if k := _key(str(value)):
            out.add(k)
    return out


def _words(seen: str) -> set[str]:
    """Numbers in words of NUMBER_LANGUAGES read by text2num (only the lines it changed)."""
    out: set[str] = set()
    for lang in NUMBER_LANGUAGES:
        text = _GERMAN.sub(lambda m: _GERMAN_SPELLING[m.group(0).replace("e", "")], seen) if lang == "de" else seen
        try:
            other = alpha2digit(text, lang, threshold=0)
        except (ValueError, RuntimeError):  # the Rust converter refuses some inputs
            continue
        if other != text:  # only the lines the converter changed are read again
            changed = "\n".join(b for a, b in zip(text.splitlines(), other.splitlines(), strict=False) if a != b)
            out |= protected_numbers(f := fold(changed)) | _joined_runs(f)
    return out


def number_readings(text: str) -> set[str]:
    """Every number `text` can be read as (see the module docstring), in the form of
    `protected_numbers`."""
    folded = fold(text)
    out = protected_numbers(folded) | _joined_runs(folded) | _one_by_one(folded) | mixed_readings(folded)
    out |= {k for m in _DOTTED.finditer(folded) if (k := _key(m.group(0).replace(".", "")))}
    seen = visible(text).casefold()
    out |= _scaled(seen) | _words(seen)
    if (accented := visible(text, marks=True).casefold()) != seen:  # "fünf" as written, not "funf"
        out |= _words(accented)
    return out


def content_words(folded: str) -> tuple[str, ...]:
    """The content words of a folded text, in order, each once: stopwords out, numbers as digits."""
    return tuple(dict.fromkeys(w for w in _WORD.findall(folded) if w not in STOPWORDS))


def distinctive_words(fact: str) -> frozenset[str]:
    """The words of a fact that carry it: its numbers and its capitalised words (names), a weekday or
    month name aside."""
    names = {w.casefold() for w in re.findall(r"\b[A-Z][A-Za-z]+", visible(fact))} - CALENDAR
    return frozenset(w for w in _WORD.findall(fold(fact)) if w.isdigit() or w in names)


def near_copy(words: tuple[str, ...], line_words: set[str], distinctive: frozenset[str] = frozenset()) -> bool:
    """Whether a line's words hold enough of a fact's content `words` (see the module docstring)."""
    hit = {w for w in words if w in line_words}
    if len(hit) < NEAR_MIN_WORDS or len(hit) < math.ceil(NEAR_SHARE * len(words)):
        return False
    return len(hit) == len(words) or bool(hit & distinctive)


def _line_words(text: str) -> list[set[str]]:
    """The words of each non-blank line of a text, then of each two consecutive ones joined (a fact
    split over two lines is near-copied as much as one on a line)."""
    lines = [set(_WORD.findall(fold(ln))) for ln in text.splitlines() if ln.strip()]
    return lines + [a | b for a, b in itertools.pairwise(lines)]


def scalars(value: object) -> Iterable[str]:
    """Every leaf of a JSON value as text (fixtures), booleans and nulls left out."""
    if isinstance(value, Mapping):
        for v in value.values():
            yield from scalars(v)
    elif isinstance(value, list):
        for v in value:
            yield from scalars(v)
    elif not (isinstance(value, bool) or value is None):
        yield str(value)


@dataclass
class HeldOut:
    """What the held-out cases protect beyond whole facts: their numbers (number -> first source) and
    their facts' content words; and the numbers visible cases hold (never a finding)."""

    numbers: dict[str, str] = field(default_factory=dict)
    visible_numbers: set[str] = field(default_factory=set)
    facts: list[tuple[tuple[str, ...], frozenset[str], str, str]] = field(default_factory=list)
    """(content words, distinctive words, the fact, source) of each held-out fact with NEAR_MIN_WORDS
    or more content words."""

    def add(self, partition: str, source: str, query: str, facts: Iterable[str], fixtures_json: str) -> None:
        """Take in one case (its query, expected facts and fixture values)."""
        try:
            fixtures = json.loads(fixtures_json)
        except ValueError:
            fixtures = {}
        facts = tuple(facts)
        texts = [(t, t in facts) for t in (*facts, query, *scalars(fixtures))]
        if partition not in HELD_OUT:
            for t, _ in texts:
                self.visible_numbers |= protected_numbers(fold(t))
            return
        for t, fact in texts:
            for n in sorted(protected_numbers(fold(t), round_numbers=fact)):
                if fact or not _YEAR.fullmatch(n):
                    self.numbers.setdefault(n, source)
        for f in facts:
            words = content_words(fold(f))
            if len(words) >= NEAR_MIN_WORDS:
                self.facts.append((words, distinctive_words(f), f, source))

    def scan(self, text: str, parent: str = "", folded: str | None = None) -> list[tuple[str, str, str]]:
        """(kind, evidence, source) for each held-out number `text` carries and each held-out fact one
        of its lines near-copies; kind is "held_out_number" or "near_copy"; what `parent` (the live
        skill) already holds is not reported. `folded`: `fold(text)`, when the caller has it."""
        found: list[tuple[str, str, str]] = []
        if self.numbers:
            wanted = self.numbers.keys() - self.visible_numbers
            have = number_readings(text) | generated(text, wanted, folded)  # parsed, and written out (rules/leakgen.py)
            known = self.visible_numbers | (number_readings(parent) | generated(parent, wanted) if parent else set())
            found += [("held_out_number", n, self.numbers[n]) for n in sorted(have & self.numbers.keys() - known)]
        if self.facts:
            lines, before = _line_words(text), _line_words(parent)
            for words, names, fact, source in self.facts:
                if any(near_copy(words, ln, names) for ln in lines) and not any(near_copy(words, ln, names) for ln in before):
                    found.append(("near_copy", fact, source))
        return found
