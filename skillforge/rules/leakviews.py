"""Decoded views of a patch's added text (pure, no I/O): what the leak scan (rules/leaks.py) also
reads the copied-text rules in (QA 29 F1), beside the text as written.

A patch can carry a held-out query or name in a form one decoding step makes plain again, which the
scan's normal form (`textnorm.fold`) does not undo. Each view below holds only the lines it changes,
and the scan's copied-text rules (queries, n-grams, facts, fixture values, case ids, held-out
numbers, names, near-copies) run on it as they do on the text; a finding there names its view
("found in the percent-decoded text"). Secrets, injection phrases and paths are not read in views.

- **percent-decoded**: `%XX` of printable ASCII decoded, repeated while it changes, at most
  PERCENT_ROUNDS times (`?q=Reserve%20a%20bike…`, `%2520`); redactviews' pattern and bound;
- **base64-decoded**: each base64 or base64url blob (redactviews' B64_BLOB and decoder) that decodes
  to printable UTF-8, also when the blob was cut short;
- **hex-decoded**: each hex blob (HEX_BLOB), and hex written byte by byte (`5a 65 70`, `5a:65:70`,
  `\\x5a\\x65`, `0x5a, 0x65`, six bytes or more; QA 31 F1), that decodes to printable UTF-8;
- **hyphen-joined**: a word hyphenated over a line break joined (`Lindq-` ⏎ `  vist` -> `Lindqvist`);
- **letters-joined**: MIN_SPACED or more single letters parted by one to three spaces or tabs, or by
  a dot, dash, underscore or middle dot, joined (`Z e p h y r i n e`, `Z.e.p.h.y.r`, `Q  u  e  n`;
  QA 31 F2); a gap wider than the run's narrowest parts words;
- **reversed**: a line backwards (`tnecserC dlogiraM`), numbers in it kept as written;
- **rot13-decoded**: ROT13 of a line's ASCII letters. These two read a line whole only when the
  reading holds more common English words (wordfreq, Zipf COMMON_ZIPF+) than the line as written, or
  the line holds none; else only its words that look enciphered (a capitalised word backwards,
  `tnecserC`; a capitalised word not common in English, `Dhraol`). Read whole and everywhere, with
  numbers backwards, they flagged 32 patches of the shipped docs and fixtures (`181` backwards);
- **leet-read**: digits inside a token that mixes letters and digits read as the letters they look like
  (`Mar1gold`, `Cr3scent`, `st4t10n`); a 1 read as i, and in a second view as l; a token of digits only
  (a number) is left alone;
- **ordinal-read**: an English ordinal word after a number word read as its cardinal
  (`fifty-eight thousand two hundred sixtieth` -> `… sixty`, which fold reads as 58260); an ordinal
  alone ("the first 100") is left alone.

Not read (docs/safety.md): arithmetic (`58000 + 260`), paraphrase, other ciphers and encodings
chained (base64 of rot13), a name cut into parts in prose.
"""

from __future__ import annotations

import codecs
import difflib
import functools
import re

from skillforge.rules.redactviews import _PERCENT, B64_BLOB, HEX_BLOB, PERCENT_ROUNDS, _decoded

MIN_SPACED = 4
"""Single letters in a row a letters-joined run needs ("e.g." and "U.S.A." are shorter)."""
COMMON_ZIPF = 3.0
"""A word of at least this Zipf frequency in English (wordfreq, as rules/leaknames.py) is a common word."""
MIN_DECODED = 6
"""Characters a decoded blob needs to be read (shorter plain text is no copy of anything)."""
VIEW_NAMES = {
    "percent": "percent-decoded", "base64": "base64-decoded", "hex": "hex-decoded", "hyphen": "hyphen-joined",
    "letters": "letters-joined", "reversed": "reversed", "rot13": "rot13-decoded",
    "leet_i": "leet-read", "leet_l": "leet-read", "ordinal": "ordinal-read",
}

_L = r"[^\W\d_]"
_SOFT_BREAK = re.compile(rf"(?<={_L})-[ \t]*(?:\r?\n|\r)[ \t]*(?={_L})")
_SPACED = re.compile(rf"(?<![\w]){_L}(?:(?:[ \t]{{1,3}}|[._·-]){_L}(?!\w)){{{MIN_SPACED - 1},}}")
_HEX_BYTES = re.compile(r"(?i)(?<![0-9a-z])(?:0x|\\x)?[0-9a-f]{2}(?:(?:[ \t]*[:,;-][ \t]*|[ \t]+|0x|\\x|[ \t]*,[ \t]*0x)[0-9a-f]{2}){5,}(?![0-9a-z])")
"""Hex written byte by byte (`5a 65 70`, `5a:65:70`, `\\x5a\\x65`, `0x5a, 0x65`): six bytes or more."""
_MIXED_TOKEN = re.compile(r"(?<![A-Za-z0-9])(?=[A-Za-z0-9]*[A-Za-z])(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{3,}(?![A-Za-z0-9])")
_NUMBER = re.compile(r"\d(?:[\d:.,/-]*\d)?")
_ASCII_WORD = re.compile(r"[A-Za-z]{3,}")
_LEET = {"0": "o", "2": "z", "3": "e", "4": "a", "5": "s", "6": "g", "7": "t", "8": "b", "9": "g"}
_CARDINAL_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
    "seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million")
ORDINALS = {
    "first": "one", "second": "two", "third": "three", "fourth": "four", "fifth": "five", "sixth": "six",
    "seventh": "seven", "eighth": "eight", "ninth": "nine", "tenth": "ten", "eleventh": "eleven",
    "twelfth": "twelve", "thirteenth": "thirteen", "fourteenth": "fourteen", "fifteenth": "fifteen",
    "sixteenth": "sixteen", "seventeenth": "seventeen", "eighteenth": "eighteen", "nineteenth": "nineteen",
    "twentieth": "twenty", "thirtieth": "thirty", "fortieth": "forty", "fiftieth": "fifty", "sixtieth": "sixty",
    "seventieth": "seventy", "eightieth": "eighty", "ninetieth": "ninety", "hundredth": "hundred",
    "thousandth": "thousand", "millionth": "million",
}
_ORDINAL = re.compile(rf"(?i)\b({_CARDINAL_WORDS})([ \t-]+(?:and[ \t]+)?)({'|'.join(ORDINALS)})\b")


def added_text(old: str, new: str) -> str:
    """The lines of `new` that are not in `old` (by line diff): what a patch adds (the text the leak
    scan and its views read)."""
    a, b = old.splitlines(), new.splitlines()
    out: list[str] = []
    for tag, _i1, _i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            out.extend(b[j1:j2])
    return "\n".join(out)


def percent_decoded(text: str) -> str:
    """`%XX` (printable ASCII) decoded while it changes, at most PERCENT_ROUNDS times."""
    for _ in range(PERCENT_ROUNDS):
        decoded = _PERCENT.sub(lambda m: chr(int(m.group(1), 16)), text)
        if decoded == text:
            break
        text = decoded
    return text


def _blob_text(blob: str) -> str | None:
    """A blob decoded to printable text (whole, or cut to whole base64 quads when it was cut short)."""
    for cut in (blob, blob.rstrip("=")[:len(blob.rstrip("=")) // 4 * 4]):
        plain = _decoded(cut) if len(cut) >= 16 else None
        if plain is not None and len(plain.strip()) >= MIN_DECODED:
            return plain
    return None


def base64_decoded(text: str) -> str:
    """The printable texts the base64 or base64url blobs of `text` decode to, one a line."""
    if len(text) < 16:
        return ""
    found = [p for m in B64_BLOB.finditer(text) if not HEX_BLOB.fullmatch(m.group(0)) and (p := _blob_text(m.group(0)))]
    return "\n".join(dict.fromkeys(found))


def hex_decoded(text: str) -> str:
    """The printable texts the hex of `text` decodes to, one a line: blobs (`5a6570…`) and bytes
    written apart (`5a 65 70`, `5a:65:70`, `\\x5a\\x65`, `0x5a, 0x65`; QA 31 F1)."""
    found = [p for m in HEX_BLOB.finditer(text) if (p := _blob_text(m.group(0)))]
    for m in _HEX_BYTES.finditer(text):
        pairs = "".join(re.findall(r"[0-9a-fA-F]{2}", re.sub(r"(?i)0x|\\x", " ", m.group(0))))
        try:
            p = bytes.fromhex(pairs).decode("utf-8")
        except ValueError:  # UnicodeDecodeError included
            continue
        if len(p.strip()) >= MIN_DECODED and all(c.isprintable() or c in "\n\t\r" for c in p):
            found.append(p)
    return "\n".join(dict.fromkeys(found))


def hyphen_joined(text: str) -> str:
    """A word hyphenated over a line break joined (`Lindq-` ⏎ `  vist` -> `Lindqvist`)."""
    return _SOFT_BREAK.sub("", text)


def letters_joined(text: str) -> str:
    """Runs of MIN_SPACED or more single letters parted by one to three spaces or tabs, or by one
    of `._·-`, joined."""
    return _SPACED.sub(_join_letters, text)


def _join_letters(m: re.Match[str]) -> str:
    """The narrowest white-space gap of the run parts letters, a wider one words (`Z e p  P l a`
    -> `Zep Pla`, `Q  u  e  n  b  y` -> `Quenby`); `._·-` part letters."""
    gaps = [len(g) for g in re.findall(r"[ \t]+", m.group(0))]
    narrow = min(gaps, default=1)
    return re.sub(r"[ \t]+|[._·-]", lambda g: " " if g.group(0).isspace() and len(g.group(0)) > narrow else "", m.group(0))


def rot13(text: str) -> str:
    return codecs.encode(text, "rot13")


def leet_read(text: str, one: str) -> str:
    """The digits of each token mixing letters and digits read as letters (`1` as `one`)."""
    table = str.maketrans({**_LEET, "1": one})
    return _MIXED_TOKEN.sub(lambda m: m.group(0).translate(table), text)


def ordinals_read(text: str) -> str:
    """An English ordinal word after a number word as its cardinal ("two hundred sixtieth" -> "… sixty")."""
    return _ORDINAL.sub(lambda m: m.group(1) + m.group(2) + ORDINALS[m.group(3).casefold()], text)


def reversed_text(text: str) -> str:
    """The text backwards, each number in it (digits, with `:.,/-` inside) as written: a number is
    read as written already, and one read backwards would be a different number (`181` for `181`)."""
    return _NUMBER.sub(lambda m: m.group(0)[::-1], text[::-1])


@functools.lru_cache(maxsize=65536)
def _common(word: str) -> bool:
    from wordfreq import zipf_frequency  # as rules/leaknames.py: imported on first use

    return zipf_frequency(word, "en", wordlist="small") >= COMMON_ZIPF


def _known(line: str) -> int:
    """How many words of `line` (3+ ASCII letters) are common English words."""
    return sum(_common(w.casefold()) for w in _ASCII_WORD.findall(line))


_VIEWS = {
    "percent": percent_decoded, "base64": base64_decoded, "hex": hex_decoded, "hyphen": hyphen_joined,
    "letters": letters_joined,
    "reversed": reversed_text, "rot13": rot13, "leet_i": lambda t: leet_read(t, "i"),
    "leet_l": lambda t: leet_read(t, "l"), "ordinal": ordinals_read,
}
_CIPHERS = {"reversed": reversed_text, "rot13": rot13}
"""Views that change every line: a line is read in one only when it looks like a disguise (`_cipher_line`)."""


def _cipher_line(line: str, view: str) -> bool:
    """A line is read reversed or in rot13 when that reading holds more common English words than the
    line as written, or when the line as written holds none (a name alone: `Dhraol Jusne`)."""
    known = _known(line)
    return _known(view) > known or (known == 0 and _ASCII_WORD.search(line) is not None)


_WORD_CIPHERS = {  # a disguised word inside ordinary prose, read alone
    "reversed": (re.compile(r"\b[a-z]{2,}[A-Z]\b"), lambda w: w[::-1]),  # a capitalised word backwards: `tnecserC`
    "rot13": (re.compile(r"\b[A-Z][a-z]{3,}\b"), lambda w: w if _common(w.casefold()) else rot13(w)),  # `Dhraol`
}


def _cipher_view(key: str, line: str) -> str:
    """One line in a cipher view: whole when `_cipher_line` says so, else its words of
    _WORD_CIPHERS alone (a reversed capitalised word, a capitalised word not common in English)."""
    if (v := _CIPHERS[key](line)) != line and _cipher_line(line, v):
        return v
    pattern, read = _WORD_CIPHERS[key]
    return pattern.sub(lambda m: read(m.group(0)), line)


def view_of(key: str, text: str) -> str:
    """The view `key` of VIEW_NAMES of `text`: its lines that differ from every line of `text` (only
    those are read; a line the view leaves alone was read as written), and of a cipher view only the
    lines that look enciphered (`_cipher_line`). The live skill's too, to compare a finding with."""
    lines = set(text.splitlines())
    if key in _CIPHERS:
        return "\n".join(v for ln in text.splitlines() if (v := _cipher_view(key, ln)) != ln)
    return "\n".join(ln for ln in _VIEWS[key](text).splitlines() if ln not in lines)


def leak_views(text: str) -> list[tuple[str, str]]:
    """(view key, view text) of each view of VIEW_NAMES that differs from `text` (and from an earlier
    view), in a fixed order."""
    skip = {"percent"} if "%" not in text else set()
    skip |= set() if _MIXED_TOKEN.search(text) else {"leet_i", "leet_l"}
    skip |= set() if len(text) >= 16 else {"base64", "hex"}
    seen = {text}
    views: list[tuple[str, str]] = []
    for key in (k for k in VIEW_NAMES if k not in skip):
        view = view_of(key, text)
        if view and view not in seen and re.search(r"\w", view):
            seen.add(view)
            views.append((key, view))
    return views
