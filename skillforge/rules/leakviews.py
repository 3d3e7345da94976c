"""Decoded views of a patch's added text (pure, no I/O): what the leak scan (rules/leaks.py) also
reads the copied-text rules in (QA 29 F1), beside the text as written.

A patch can carry a held-out query or name in a form one decoding step makes plain again, which the
scan's normal form (`textnorm.fold`) does not undo. Each view below holds only the lines it changes,
and the scan's copied-text rules (queries, n-grams, facts, fixture values, case ids, held-out
numbers, names, near-copies) run on it as they do on the text; a finding there names its view
("found in the percent-decoded text"). Secrets, injection phrases and paths are not read in views.

- **percent-decoded**: a run of `%XX` that spells printable UTF-8 decoded (`%E4%BB%8E` -> 从, QA 40
  F1), else its `%XX` of printable ASCII, repeated while it changes, at most PERCENT_ROUNDS times
  (`?q=Reserve%20a%20bike…`, `%2520`);
- **base64-decoded**: each base64 or base64url blob (redactviews' B64_BLOB and decoder) that decodes
  to printable UTF-8, also when the blob was cut short;
- **hex-decoded**: each hex blob (HEX_BLOB), and hex written byte by byte (`5a 65 70`, `5a:65:70`,
  `\\x5a\\x65`, `0x5a, 0x65`, six bytes or more; QA 31 F1), that decodes to printable UTF-8;
- **base32-decoded**: each base32 blob (RFC 4648, upper or lower case, padded or not, 16+ characters,
  also cut short) that decodes to printable UTF-8 (QA 40 F1);
- **quoted-printable-decoded**, **base85-decoded** (base85 and Ascii85), **uudecoded** and
  **pieces-joined-decoded** (a base64, base32 or hex stream cut into pieces parted by spaces or lines,
  joined): QA 43 T1, see rules/leakdecode.py, which holds every decoding view;
- **hyphen-joined**: a word hyphenated over a line break joined (`Lindq-` ⏎ `  vist` -> `Lindqvist`);
- **letters-joined**: MIN_SPACED or more single letters parted by one to three spaces or tabs, or by
  a dot, dash, underscore or middle dot, joined (`Z e p h y r i n e`, `Z.e.p.h.y.r`, `Q  u  e  n`;
  QA 31 F2); a gap wider than the run's narrowest parts words;
- **reversed**: a line backwards (`tnecserC dlogiraM`), numbers in it kept as written;
- **rot13-decoded**: ROT13 of a line's ASCII letters. These two read a line whole only when the
  reading holds more common English words (wordfreq, Zipf COMMON_ZIPF+) than the line as written, or
  the line holds none; else only its words that look enciphered (a capitalised word backwards,
  `tnecserC`; a capitalised word not common in English, `Dhraol`). Read whole and everywhere, with
  numbers backwards, they flagged 32 patches of the shipped docs and fixtures (`181` backwards).
  A line of MIN_CJK+ CJK characters is read reversed whole, numbers kept, and digits reversed too
  (`line[::-1]`: "钟分61 69" -> "96 16分钟"; QA 40 F1) when a part of it (cut at quotes, commas,
  brackets, colons, spaces and CJK punctuation) backwards holds more common Chinese words (two characters, Zipf COMMON_ZIPF+) than as
  written; numbers kept only when the line holds none (Japanese, Korean). Read so always, it flagged
  2 shipped patches (`011` backwards) and doubled the scan time of a Chinese SKILL.md;
- **leet-read**: digits and symbols inside a word that mixes them with letters read as the letters
  they look like (`Mar1gold`, `Cr3scent`, `st4t10n`, `M@rigold`, `$ilverton`, `L!ndqvist`, `|ake`,
  `Z€phyrine`; leak pass 32); a 1, `!` or `|` read as i, and in a second view as l (`|` the other
  way); a symbol after a word is read only when it is no punctuation (`Hello!`, `C++` stay); a
  token of digits only (a number, `$5`) and an e-mail address or host (`bob@example.org`) are left alone;
- **ordinal-read**: an English ordinal word after a number word read as its cardinal
  (`fifty-eight thousand two hundred sixtieth` -> `… sixty`, which fold reads as 58260); an ordinal
  alone ("the first 100") is left alone.

Chained (leak pass 32): each view is read again by the others where that can decode more (any view
of a decoding view's text (percent, base64, hex, base32, quoted-printable, base85, uu, joined); base64 and hex of the whole text ROT13-enciphered or
reversed; base32 as well), up to CHAIN_DEPTH steps and CHAIN_BUDGET characters, each chained view only with lines no
earlier view holds; its key is its steps joined by `>`, its name outermost first ("found in the
percent-decoded base64-decoded text": base64 of a percent-encoded query).

Not read (docs/safety.md): arithmetic (`58000 + 260`), paraphrase, other ciphers, a name cut into
parts in prose.
"""

from __future__ import annotations

import codecs
import difflib
import functools
import re

from skillforge.rules.leakterms import chinese_words
from skillforge.rules.leakdecode import (MIN_DECODED, ascii_lookalikes, base32_decoded, base64_decoded, base85_decoded,  # noqa: F401
                                         hex_decoded, joined_decoded, percent_decoded, qp_decoded, uu_decoded)

MIN_SPACED = 4
"""Single letters in a row a letters-joined run needs ("e.g." and "U.S.A." are shorter)."""
COMMON_ZIPF = 3.0
"""A word of at least this Zipf frequency in English (wordfreq, as rules/leaknames.py) is a common word."""
CHAIN_DEPTH = 3
"""Views applied one to another's output at most (base64 of percent-encoded text is 2)."""
CHAIN_BUDGET = 40_000
"""Characters the chained views (beyond the first) read in all, per text scanned: a bound on the work."""
VIEW_NAMES = {
    "percent": "percent-decoded", "base64": "base64-decoded", "hex": "hex-decoded", "base32": "base32-decoded",
    "qp": "quoted-printable-decoded", "base85": "base85-decoded", "uu": "uudecoded", "joined": "pieces-joined-decoded",
    "hyphen": "hyphen-joined",
    "letters": "letters-joined", "reversed": "reversed", "rot13": "rot13-decoded",
    "leet_i": "leet-read", "leet_l": "leet-read", "ordinal": "ordinal-read",
}

_L = r"[^\W\d_]"
_SOFT_BREAK = re.compile(rf"(?<={_L})-[ \t]*(?:\r?\n|\r)[ \t]*(?={_L})")
_SPACED = re.compile(rf"(?<![\w]){_L}(?:(?:[ \t]{{1,3}}|[._·-]){_L}(?!\w)){{{MIN_SPACED - 1},}}")
_SYMBOLS = "@$!|€¢¡§+"
"""Symbols read as the letters they look like inside a word (`M@rigold`, `$ilverton`, `L!ndqvist`, `|ake`)."""
_S = re.escape(_SYMBOLS)
_LEET_TOKEN = re.compile(rf"(?<![A-Za-z0-9{_S}])[{_S}]?[A-Za-z0-9]+(?:[{_S}][A-Za-z0-9]+)*[€¢$@§]?")
"""A word of letters and digits, with a symbol of _SYMBOLS before it or between its parts, and after
it only one that is no punctuation (`Zephyrin€`; `Hello!`, `a!=b`, `C++` keep theirs)."""
_LEET_HINT = re.compile(rf"[A-Za-z][0-9{_S}]|[0-9{_S}][A-Za-z]")
_EMAIL_HOST = re.compile(r"\.[A-Za-z0-9]")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
MIN_CJK = 4
"""CJK characters a line needs to be read reversed whole (English word counts say nothing of it)."""
_CHUNK = re.compile(r"[\"',\[\]|;:()?!。，、；：？！（）【】「」『』“”‘’《》…]|\s+")
"""Where a line is cut to compare its CJK parts backwards and forwards (a quoted list of examples; an
ordinary clause before a reversed query, cut at its colon or space, cannot outvote it: QA 46 F1)."""
_BLOB_LIKE = re.compile(r"[A-Za-z0-9+/_-]{16}")
"""Sixteen base64 characters in a row: what ROT13 or reversal may have made of a base64 or hex blob."""
_NUMBER = re.compile(r"\d(?:[\d:.,/-]*\d)?")
_ASCII_WORD = re.compile(r"[A-Za-z]{3,}")
_LEET = {"0": "o", "2": "z", "3": "e", "4": "a", "5": "s", "6": "g", "7": "t", "8": "b", "9": "g",
         "@": "a", "$": "s", "€": "e", "¢": "c", "¡": "i", "§": "s", "+": "t"}
_ONE_LIKE = {"i": {"1": "i", "!": "i", "|": "l"}, "l": {"1": "l", "!": "l", "|": "i"}}
"""`1`, `!` and `|` read as i or as l: the two leet views take each one way (`L!ndqvist`, `|ake`)."""
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


def hyphen_joined(text: str) -> str:
    """A word hyphenated over a line break joined (`Lindq-` ⏎ `  vist` -> `Lindqvist`)."""
    return _SOFT_BREAK.sub("", text)


def letters_joined(text: str) -> str:
    """Runs of MIN_SPACED or more single letters parted by one to three spaces or tabs, or by one
    of `._·-`, joined; and MIN_SPACED or more lines in a row each holding one character (a list item
    `- Q`, `- u`, ...; a CJK character too), joined, with a one-word line after them as the next word
    (`Quenby Wharf`; QA 46 F3)."""
    joined = _SPACED.sub(_join_letters, text)
    stacked = _one_per_line(text.splitlines())
    return joined + "\n" + "\n".join(stacked) if stacked else joined


_ONE_CHAR_LINE = re.compile(r"^[ \t]*(?:[-*+]|\d{1,3}[.)])?[ \t]*(\w)[ \t]*$")
_ONE_WORD_LINE = re.compile(r"^[ \t]*(?:[-*+]|\d{1,3}[.)])?[ \t]*(\w+)[ \t]*[,.;:!?，。]?[ \t]*$")


def _one_per_line(lines: list[str]) -> list[str]:
    """The runs of MIN_SPACED+ lines holding one character each, joined (and the one-word line after)."""
    out: list[str] = []
    run: list[str] = []
    for line in [*lines, ""]:
        if (m := _ONE_CHAR_LINE.match(line)) is not None:
            run.append(m.group(1))
            continue
        if len(run) >= MIN_SPACED:
            word = _ONE_WORD_LINE.match(line)
            out.append("".join(run) + (" " + word.group(1) if word else ""))
        run = []
    return out


def _join_letters(m: re.Match[str]) -> str:
    """The narrowest white-space gap of the run parts letters, a wider one words (`Z e p  P l a`
    -> `Zep Pla`, `Q  u  e  n  b  y` -> `Quenby`); `._·-` part letters."""
    gaps = [len(g) for g in re.findall(r"[ \t]+", m.group(0))]
    narrow = min(gaps, default=1)
    return re.sub(r"[ \t]+|[._·-]", lambda g: " " if g.group(0).isspace() and len(g.group(0)) > narrow else "", m.group(0))


def rot13(text: str) -> str:
    return codecs.encode(text, "rot13")


def leet_read(text: str, one: str) -> str:
    """The digits and symbols (_SYMBOLS) of each word mixing them with letters read as letters (`1`,
    `!` as `one`, `|` as the other of i and l); a number alone (`$5`, `2026`) and an e-mail address or
    host (`bob@example.org`) are left alone."""
    table = str.maketrans({**_LEET, **_ONE_LIKE[one]})

    def read(m: re.Match[str]) -> str:
        token = m.group(0)
        if len(token) < 3 or token.isalpha() or not any(c.isalpha() for c in token) \
                or ("@" in token and _EMAIL_HOST.match(text, m.end())):
            return token
        return token.translate(table)

    return _LEET_TOKEN.sub(read, text)


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


@functools.lru_cache(maxsize=1)
def _zh_words() -> frozenset[str]:
    """The common two-character Chinese words (Zipf COMMON_ZIPF+; rules/leakterms.chinese_words)."""
    return frozenset(w for w in chinese_words(COMMON_ZIPF) if len(_CJK.findall(w)) == len(w) == 2)


def _cjk_words(line: str) -> int:
    """How many pairs of CJK characters in `line` are common Chinese words (Zipf COMMON_ZIPF+)."""
    return sum(line[i:i + 2] in _zh_words() for i in range(len(line) - 1))


def _known(line: str) -> int:
    """How many words of `line` (3+ ASCII letters) are common English words."""
    return sum(_common(w.casefold()) for w in _ASCII_WORD.findall(line))


_VIEWS = {
    "percent": percent_decoded, "base64": base64_decoded, "hex": hex_decoded, "base32": base32_decoded,
    "qp": qp_decoded, "base85": base85_decoded, "uu": uu_decoded, "joined": joined_decoded,
    "hyphen": hyphen_joined,
    "letters": letters_joined,
    "reversed": reversed_text, "rot13": rot13, "leet_i": lambda t: leet_read(t, "i"),
    "leet_l": lambda t: leet_read(t, "l"), "ordinal": ordinals_read,
}
_CIPHERS = {"reversed": reversed_text, "rot13": rot13}
_RAW_CIPHERS = {"reversed": lambda t: t[::-1], "rot13": rot13}
"""A cipher as a chain's first step: the whole text, digits too (a reversed blob's digits are reversed)."""
_DECODERS = ("percent", "base64", "hex", "base32", "qp", "base85", "uu", "joined")
"""Views that decode (what they yield is short and new): any view may read their output again (leak_views)."""


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
    _WORD_CIPHERS alone (a reversed capitalised word, a capitalised word not common in English). A
    line of MIN_CJK or more CJK characters is read reversed whole, numbers kept and, on a second
    line, digits reversed too (a plain `line[::-1]`; QA 40 F1)."""
    if key == "reversed" and len(_CJK.findall(line)) >= MIN_CJK:
        chunks = [c for c in _CHUNK.split(line) if len(_CJK.findall(c)) >= MIN_CJK]
        if any(_cjk_words(c[::-1]) > _cjk_words(c) for c in chunks):
            return reversed_text(line) + "\n" + line[::-1]
        if not _cjk_words(line):
            return reversed_text(line)
    if (v := _CIPHERS[key](line)) != line and _cipher_line(line, v):
        return v
    pattern, read = _WORD_CIPHERS[key]
    return pattern.sub(lambda m: read(m.group(0)), line)


def view_of(key: str, text: str) -> str:
    """The view `key` of VIEW_NAMES of `text`: its lines that differ from every line of `text` (only
    those are read; a line the view leaves alone was read as written), and of a cipher view only the
    lines that look enciphered (`_cipher_line`). The live skill's too, to compare a finding with.
    Fullwidth and mathematical letters and digits are read as ASCII first (`ascii_lookalikes`)."""
    text = ascii_lookalikes(text)
    if ">" in key:
        return chain_view(key, text)
    lines = set(text.splitlines())
    if key in _CIPHERS:
        return "\n".join(v for ln in text.splitlines() if (v := _cipher_view(key, ln)) != ln)
    return "\n".join(ln for ln in _VIEWS[key](text).splitlines() if ln not in lines)


def view_name(key: str) -> str:
    """How a finding names the view `key` of leak_views: `percent-decoded`, and a chain (`percent>base64`,
    steps in the order applied) outermost step first: `base64-decoded percent-decoded`."""
    return " ".join(VIEW_NAMES[k] for k in reversed(key.split(">")))


def _step(key: str, text: str, last: bool) -> str:
    """One step of a view chain: the view `key` of `text`, but a cipher not last in its chain reads
    the whole text (the base64 or hex decoder after it keeps only what decodes to printable text)."""
    return _RAW_CIPHERS[key](text) if key in _CIPHERS and not last else view_of(key, text)


def chain_view(key: str, text: str) -> str:
    """The view `key` of `text` (one of VIEW_NAMES, or a chain of them joined by `>`, as leak_views gives)."""
    steps = key.split(">")
    for i, step in enumerate(steps):
        text = _step(step, text, i == len(steps) - 1)
        if not text:
            break
    return text


def _chains(key: str, text: str) -> tuple[str, ...]:
    """The view keys that may follow the (chained) view `key` of `text`: any view after a decoder
    (percent, base64, hex: what it yields is short and new), base64 and hex after a cipher read whole
    (base64 or hex ROT13-enciphered or reversed: ROT13 and reversal keep a blob a blob), else none."""
    last = key.rsplit(">", 1)[-1]
    if last in _DECODERS:
        return tuple(k for k in VIEW_NAMES if not (k == last == "percent"))
    return ("base64", "hex", "base32") if ">" not in key and last in _CIPHERS else ()


def leak_views(text: str) -> list[tuple[str, str]]:
    """(view key, view text) of each view of VIEW_NAMES that differs from `text` (and from an earlier
    view), in a fixed order; then the views of those views (`_chains`), up to CHAIN_DEPTH steps, their
    key the steps joined by `>` (`base64>percent`: the percent-decoded base64-decoded text), each only
    with lines no earlier view holds, and no more than CHAIN_BUDGET characters read in all. Read with
    fullwidth and mathematical letters and digits as ASCII (`ascii_lookalikes`, QA 44 F1)."""
    text = ascii_lookalikes(text)
    skip = {"percent"} if "%" not in text else set()
    skip |= set() if _LEET_HINT.search(text) else {"leet_i", "leet_l"}
    skip |= set() if len(text) >= 16 else {"base64", "hex", "base32", "qp", "base85", "uu", "joined"}
    skip |= set() if "=" in text else {"qp"}
    seen = {text}
    views: list[tuple[str, str]] = []
    for key in (k for k in VIEW_NAMES if k not in skip):
        view = view_of(key, text)
        if view and view not in seen and re.search(r"\w", view):
            seen.add(view)
            views.append((key, view))
    lines = set(text.splitlines()).union(*(v.splitlines() for _, v in views))
    frontier = [(k, v) for k, v in views if k in _DECODERS]  # a blob stays a blob under ROT13 and reversal:
    frontier += [(k, f(text)) for k, f in _RAW_CIPHERS.items()] if _BLOB_LIKE.search(text) else []
    budget = CHAIN_BUDGET
    for _depth in range(1, CHAIN_DEPTH):
        grown: list[tuple[str, str]] = []
        for key, source in frontier:
            for nxt in _chains(key, source):
                if (budget := budget - len(source)) < 0:
                    return views
                view = "\n".join(ln for ln in _step(nxt, source, True).splitlines() if ln not in lines)
                if view and re.search(r"\w", view):
                    lines.update(view.splitlines())
                    views.append((f"{key}>{nxt}", view))
                    grown.append((f"{key}>{nxt}", view))
        frontier = grown
    return views
