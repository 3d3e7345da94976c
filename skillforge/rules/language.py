"""Lines written in a language the level rules do not read (pure, no I/O).

The rules that read what an added line does (`rules/forbidden.py`, `rules/directives.py`,
`rules/shellcmd.py`) know English and Chinese words only: "supprimer la base de données
orders_archive" or "das neueste Backup ohne Rückfrage löschen" passes them as a harmless example.
Word lists for every language are whack-a-mole, and a meaning check was measured and failed
(benchmarks/README.md, "Constraints by meaning"), so `rules/levels.py` fails closed instead: an
added line of an L1 part that `unread_language` reports is at least L2, a person reads it.

`unread_language(line)` returns a guessed language code, or None when the line is English, Chinese,
or too short to tell:

- **Another script.** MIN_SCRIPT_LETTERS letters or more of one script other than Latin and Han
  (Japanese kana, Hangul, Cyrillic, Arabic, Hebrew, Greek, Devanagari, Thai, ...): a Japanese line
  holds Han too, and its kana decide. Han alone is Chinese, which the rules read.
- **Latin script in another language.** The line's words (letters only: a token holding a digit or
  an underscore, a URL, a path, `code in backticks` and an e-mail address are not words; apostrophes
  split "l'ancienne"; a capitalised word after the first is a name and not scored, unless three
  quarters of them are) are scored in English and each of LATIN_LANGUAGES as the sum of their Zipf
  frequencies in `wordfreq`'s "small" lists (0 for a word the list lacks). Another language wins when
  its sum is at least WIN_RATIO times English's and WIN_MARGIN points more. The whole line is scored,
  and so is each clause of MIN_CLAUSE_WORDS words or more (cut at , ; : → ( ) and quotes), so one
  French clause behind an English one is seen; a line under MIN_WORDS words is not judged.

Measured (docs/safety.md, "Lines in other languages"): no shipped English or Chinese line flagged,
every French, German and Spanish line of benchmarks/constraint_corpus.json caught.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata

LATIN_LANGUAGES = ("fr", "de", "es", "it", "pt", "nl", "sv", "da", "nb", "pl", "cs", "sk", "sl", "ro", "hu",
                   "fi", "tr", "id", "ms", "ca", "lt", "lv", "vi", "fil")
"""wordfreq languages written in Latin script a line is compared with English in."""
MIN_WORDS = 3
"""A line is judged from this many words as written (names counted)."""
MIN_SCORED = 2
"""... and this many of them scored (names left out)."""
MIN_CLAUSE_WORDS = 4
"""A clause of a longer line is judged from this many words as written (names counted), one fewer
scored: a three-word loan ("à la carte") or an address ("Calle de Alcalá 42") is not a line."""
MIN_SCRIPT_LETTERS = 3
WIN_RATIO = 1.5
WIN_MARGIN = 6.0

SCRIPT_LANGUAGE = {"HIRAGANA": "ja", "KATAKANA": "ja", "HANGUL": "ko", "CYRILLIC": "ru", "ARABIC": "ar",
                   "HEBREW": "he", "GREEK": "el", "DEVANAGARI": "hi", "THAI": "th", "BENGALI": "bn",
                   "TAMIL": "ta", "GEORGIAN": "ka", "ARMENIAN": "hy", "ETHIOPIC": "am"}
"""Unicode character-name prefix -> the language reported; another script is reported by its name."""
READ_SCRIPTS = frozenset({"LATIN", "CJK"})
"""Scripts the level rules read (CJK: Han ideographs, Chinese); Latin is then scored by words."""

_CODE = re.compile(r"`[^`]*`|\b\w+://\S+|\S+@\S+\.\S+|\S*[/\\]\S*")
_NOT_WORDS = re.compile(r"\S*[\d_]\S*")
_WORD = re.compile(r"[^\W\d_]+")
_CLAUSE = re.compile(r"[,;:→()\"“”«»„\[\]{}|]|\s[-–—]\s|(?<=\w)[.!?](?:\s|$)")


@functools.cache
def _frequencies(lang: str) -> dict[str, float]:
    """The frequency of each word of `lang`'s small wordfreq list (loaded on first use: wordfreq
    imports in ~0.4 s, each small list in ~30 ms; most commands never ask)."""
    from wordfreq import get_frequency_dict

    return get_frequency_dict(lang, "small")


def _zipf(tokens: list[str], lang: str) -> float:
    """The sum of the Zipf frequencies of `tokens` in `lang` (0 for a word its list lacks)."""
    freqs = _frequencies(lang)
    return sum(math.log10(f) + 9 for w in tokens if (f := freqs.get(w, 0.0)) > 0)


def _script(ch: str) -> str:
    name = unicodedata.name(ch, "")
    return name.split(" ", 1)[0] if name else ""


def _other_script(line: str) -> str | None:
    """The language of a script the rules do not read, when MIN_SCRIPT_LETTERS of its letters appear."""
    counts: dict[str, int] = {}
    for ch in line:
        if ch.isalpha() and not ch.isascii():
            script = _script(ch)
            if script and script not in READ_SCRIPTS:
                key = SCRIPT_LANGUAGE.get(script, script.lower())
                counts[key] = counts.get(key, 0) + 1
    best = max(counts.items(), key=lambda kv: kv[1], default=None)
    return best[0] if best and best[1] >= MIN_SCRIPT_LETTERS else None


def words(text: str) -> tuple[list[str], int]:
    """The letters-only words of `text` that are scored, lower case, and how many words it has as
    written. Names are not scored: a capitalised word after the first ("Casa de la Playa", "Hôtel de
    Ville"), unless three quarters of the words after the first are (Title Case), which is style."""
    found = _WORD.findall(_NOT_WORDS.sub(" ", _CODE.sub(" ", text)))
    names = {i for i, w in enumerate(found) if i and w[:1].isupper() and not w.isupper()}
    scored = [w for i, w in enumerate(found) if i not in names] if 4 * len(names) < 3 * (len(found) - 1) else found
    return [w.casefold() for w in scored], len(found)


def _winner(text: str, least: int = MIN_WORDS, scored: int = MIN_SCORED) -> str | None:
    """The language of LATIN_LANGUAGES that clearly beats English on the words of `text` (at least
    `least` written, `scored` of them scored), else None."""
    tokens, written = words(text)
    if written < least or len(tokens) < scored:
        return None
    english = _zipf(tokens, "en")
    best, lang = max((_zipf(tokens, code), code) for code in LATIN_LANGUAGES)
    return lang if best >= WIN_RATIO * english and best - english >= WIN_MARGIN else None


def unread_language(line: str) -> str | None:
    """The guessed language of `line` when the level rules cannot read it, else None."""
    text = unicodedata.normalize("NFKC", line)
    if (lang := _other_script(text)) is not None:
        return lang
    if (lang := _winner(text)) is not None:
        return lang
    clauses = [c for c in _CLAUSE.split(_CODE.sub(" ", text)) if c and c.strip()]
    if len(clauses) < 2:
        return None
    return next((lang for clause in clauses
                 if (lang := _winner(clause, MIN_CLAUSE_WORDS, MIN_CLAUSE_WORDS - 1)) is not None), None)
