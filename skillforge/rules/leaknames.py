"""Held-out names (pure, no I/O): a rare proper name of a holdout or final_audit case, copied alone.

A patch can carry a held-out case without its number or a whole fact: "write to Professor Lindqvist",
"the Juniper Court lease". Names are protected as the scan's other held-out values are, in its
folded form (`textnorm.fold`: case, accents, look-alikes do not hide one):

- **A rare name.** A capitalised word of a held-out query, expected fact or fixture value ("Quenby",
  "Lindqvist": upper case then lower case, MIN_NAME letters or more, no weekday or month) whose
  frequency is under RARE_ZIPF in every language of FREQUENCY_LANGUAGES, per the `wordfreq` package
  (its word lists are in the wheel: offline; ~58 MB installed). A common word ("Invoice", "Court") is no name.
- **A rare pair.** Two capitalised words side by side, the first not the start of a sentence
  ("Juniper Court"), whose frequency as a phrase is under RARE_PAIR_ZIPF: "Main Street" or "New York"
  is common, "Juniper Court" is not.
- **Never protected:** a name a visible case (repair, dev, p0) holds (the proposer saw it) and,
  at scan time, one the parent skill already holds.

Measured on the 24 SKILL.md files of skills/ and the benchmark skills, each against the other
skills' sets: 0 findings; the disguise corpus stays 57/57 caught, 0/14 clean texts flagged. The
tokenizer of the default embedder was measured as the "common word" test and not used: its
multilingual vocabulary holds "Lindqvist", "Brightwater" and "Marigold" as single tokens and splits
"Invoice" and "Aggregate".
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from skillforge.rules.leaknumbers import CALENDAR
from skillforge.rules.textnorm import fold, visible

HELD_OUT = frozenset({"holdout", "final_audit"})
FREQUENCY_LANGUAGES = ("en", "de", "fr", "es", "it", "pt", "nl")
RARE_ZIPF = 3.0
"""A word under this Zipf frequency (about once per million words) in every language is rare."""
RARE_PAIR_ZIPF = 3.5
MIN_NAME = 4

_TOKEN = re.compile(r"[^\W\d_]+")
_FOLDED_WORD = re.compile(r"[^\W_]+")


@functools.lru_cache(maxsize=65536)
def zipf(phrase: str) -> float:
    """The highest Zipf frequency of `phrase` (lower case) in FREQUENCY_LANGUAGES, from wordfreq's
    "small" lists (words of Zipf 3 or more, all a threshold of 3 needs: the 7 load in ~0.2 s, the
    large ones in ~3 s)."""
    from wordfreq import zipf_frequency  # here: importing it takes ~0.27 s, and most commands never ask

    return max(zipf_frequency(phrase, lang, wordlist="small") for lang in FREQUENCY_LANGUAGES)


def _capitalised(word: str) -> bool:
    return len(word) >= MIN_NAME and word[0].isupper() and word[1:].islower() and word.casefold() not in CALENDAR


def _starts_sentence(seen: str, i: int) -> bool:
    """Whether the word at `i` starts the text, a line or a sentence (capitalised for that alone)."""
    while i > 0 and seen[i - 1] in " \t":
        i -= 1
    return i == 0 or seen[i - 1] in ".!?:;。！？\n\r"


def name_candidates(text: str) -> set[str]:
    """The rare names and rare pairs of `text` as written (see the module docstring)."""
    seen = visible(text)
    tokens = list(_TOKEN.finditer(seen))
    out: set[str] = set()
    for i, m in enumerate(tokens):
        word = m.group(0)
        if not _capitalised(word):
            continue
        if zipf(word.casefold()) < RARE_ZIPF:
            out.add(word)
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if (nxt and _capitalised(nxt.group(0)) and seen[m.end():nxt.start()] == " "
                and not _starts_sentence(seen, m.start())
                and zipf(f"{word} {nxt.group(0)}".casefold()) < RARE_PAIR_ZIPF):
            out.add(f"{word} {nxt.group(0)}")
    return out


def _words_and_pairs(folded: str) -> set[str]:
    """The words of a folded text and each two side by side, joined by a space."""
    words = _FOLDED_WORD.findall(folded)
    return set(words) | {f"{a} {b}" for a, b in itertools.pairwise(words)}


@dataclass
class HeldOutNames:
    """The rare names of the held-out cases (folded name -> (name as written, first source)) and the
    words the visible cases hold (a name among them is never a finding)."""

    names: dict[str, tuple[str, str]] = field(default_factory=dict)
    visible_words: set[str] = field(default_factory=set)

    def add(self, partition: str, source: str, texts: Iterable[str]) -> None:
        """Take in one case's texts (query, expected facts, fixture values)."""
        for t in texts:
            if partition not in HELD_OUT:
                self.visible_words |= _words_and_pairs(fold(t))
                continue
            for name in sorted(name_candidates(t)):
                self.names.setdefault(fold(name), (name, source))

    def scan(self, text: str, parent: str = "", folded: str | None = None) -> list[tuple[str, str]]:
        """(name, source) for each protected name `text` holds that `parent` does not."""
        if not self.names:
            return []
        found = _words_and_pairs(fold(text) if folded is None else folded) & self.names.keys()
        public = self.visible_words | (_words_and_pairs(fold(parent)) if found and parent else set())
        have = found - public
        # a pair is not reported beside its rare word ("Lindqvist", not also "Professor Lindqvist"), nor
        # when its rare word is public (the pair was rare for that word alone)
        have = {k for k in have if " " not in k or not {w for w in k.split() if w in self.names} & (have | public)}
        return [self.names[k] for k in sorted(have)]
