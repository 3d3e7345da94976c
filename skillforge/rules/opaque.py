"""Encoded runs no decoded view reads (pure, no I/O; QA 40 F1): the leak scan (rules/leaks.py) reads a
patch's added text as written and in decoded views (rules/leakviews.py), but it cannot decode every
cipher. `opaque_runs` finds, in added text, a run that looks encoded and that none of those views
decodes to readable text; rules/levels.py sends an L1 change holding one to a person (L2).

A run looks encoded when it is
- MIN_RUN or more characters of the base64/base64url alphabet (base32 and hex are inside it) with a
  piece (the run cut at `/ _ = + - .`) of MIN_PIECE or more characters holding at least two digits
  and two letters (`4S5Y5Z5AQHS2JNHG…`, `5LuO56CB5aS0…`, `e4bb8ee7a081…`); or
- MIN_PCT_BYTES or more `%XX` in a row (`%E4%BB%8E%E7%A0%81…`).
Not a run: words, paths and identifiers (`scripts/build_index_v2.py`: no piece mixes 16 characters),
a UUID (its pieces are 12 characters at most), and a piece of hex alone of a digest's length (32, 40
or 64: an md5, a git commit id, a sha256), which a doc may quote and which holds 32 bytes at most.
A URL's runs are read like any other text (a new URL under an L1 part is L2 already: rules/shellcmd.py).

MASS (QA 43 T1: runs cut short, under MIN_RUN, one a line or parted by spaces, and ciphers with
symbols, base85, Ascii85, uuencode): when the text holds no such run, its mixed tokens
(`mixed_tokens`: random-looking alphanumeric pieces of MIN_MIXED+ characters, tokens heavy with
rare symbols), leaving out those in a token some view reads, and unless all those tokens joined by
spaces in order are read (pieces of one stream), are one opaque run (their text joined by spaces)
when they hold MIN_MASS or more characters in all. Measured (views40b): the L1 parts (frontmatter,
## Examples) of the 33 shipped and fixture SKILL.md files hold 18 at most (a UPS tracking number),
the 232 evaluation queries 18 at most; a line with a flight number, a time and an order id
(`CA1234`, `10:30pm`, `ORD-2026-000123`) 0, with a UPS number 18; three random-looking ids
(`AB12CD34EF 8f3k2Lq9 fl_b10r77`) 24: a person looks. A uuencoded text is opaque even when read (its
spaces part its tokens); the leak scan reads it.

Read: some view of the run that decodes it (percent, base64, hex, base32, alone or chained; a
leet reading last left out, it makes words of anything) holds a
line of MIN_READ or more characters with MIN_WORDS common English words (3+ letters) or two-character
Chinese words (wordfreq, as leakviews), and no encoded run of its own. Printable gibberish (a shifted
cipher inside base64) is not read.

Unread Chinese (QA 44 F3, QA 46 F2): a line of MIN_CJK+ CJK characters, or a stretch of WINDOW of them,
that common Chinese words barely cover (`unread_cjk`: a per-character cipher or a reversed query, also
after an ordinary clause) is L2 as well; rules/levels.py says it apart from an encoded run.

"""

from __future__ import annotations

import re

from skillforge.rules.leakdecode import ascii_lookalikes
from skillforge.rules.textnorm import simplified
from skillforge.rules.leakviews import _DECODERS, _cjk_words, _common, _known, _zh_words, leak_views

MIN_RUN = 24
"""Characters a base64/base32/hex-like run needs to count (shorter ids and tokens are left alone)."""
MIN_PIECE = 16
"""Characters of the run's longest piece between separators that mixes digits and letters."""
MIN_PCT_BYTES = 8
"""`%XX` in a row a percent-encoded run needs."""
MIN_READ = 6
"""Characters a decoded line needs to count as read."""
MIN_WORDS = 2
"""Common words (English, or two-character Chinese) a decoded line needs to count as read: one is
found by chance in what a percent-decoding of random bytes leaves (`%fAB%6F`)."""
DIGEST_LENGTHS = frozenset({32, 40, 64})
"""Lengths of a hex piece left alone as a digest (md5, sha1 / git commit id, sha256)."""
MIN_MASS = 24
"""Characters of mixed tokens (`mixed_tokens`) an L1 part's added lines may hold that no view reads."""
MIN_MIXED = 6
"""Characters an alphanumeric piece needs to count to the mass."""
MIN_SWITCHES = 3
"""Switches between digits, capitals and small letters a piece needs (`CA1234` has one, `AB12CD34` three)."""
MIN_85 = 10
"""Characters a token heavy with ODD_SYMBOLS needs to count to the mass (base85, Ascii85, uuencode)."""
ODD_SYMBOLS = frozenset("!#$&+;=?^~\\")
"""Symbols rare in prose but about a tenth of a base85, Ascii85 or uuencoded token (not quotes,
brackets, `<>`, `*`, `|`, backticks, `%`, `,`, `:`: markdown, placeholders, format strings and JSON
hold those)."""
ODD_SHARE = 14
"""A token counts when one character in ODD_SHARE or more is of ODD_SYMBOLS (three at least)."""
MAX_SHOWN = 16
"""Characters of a run a reason shows (a prefix: the run itself may be the leak)."""

_RUN = re.compile(rf"(?<![A-Za-z0-9+/=_%-])[A-Za-z0-9+/=_-]{{{MIN_RUN},}}(?![A-Za-z0-9+/=_-])")
_PCT_RUN = re.compile(rf"(?:%[0-9A-Fa-f]{{2}}){{{MIN_PCT_BYTES},}}")
_PIECE = re.compile(r"[^/_=+.-]+")
_HEX = re.compile(r"[0-9a-fA-F]+")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")
_ASCII_TOKEN = re.compile(r"[!-~]+")
_ALNUM = re.compile(r"[A-Za-z0-9]+")
_QP_BYTES = re.compile(r"(?:=[0-9A-F]{2}){3}")
_URL = re.compile(r"(?i)[\W_]*[a-z][a-z0-9+.-]*://")
_UUID = re.compile(r"(?i)(?<![0-9a-z])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![0-9a-z])")
_DIGEST = re.compile(r"(?i)(?<![0-9a-z])(?:[0-9a-f]{64}|[0-9a-f]{40}|[0-9a-f]{32})(?![0-9a-z])")


def _looks_encoded(run: str) -> bool:
    for piece in _PIECE.findall(run):
        if len(piece) < MIN_PIECE or (len(piece) in DIGEST_LENGTHS and _HEX.fullmatch(piece)):
            continue
        digits = sum(c.isdigit() for c in piece)
        if digits >= 2 and len(piece) - digits >= 2:
            return True
    return False


def _encoded_runs(text: str) -> list[str]:
    """The runs of `text` that look encoded (see the module's docstring), in order."""
    found = [(m.start(), m.group(0)) for m in _RUN.finditer(text) if _looks_encoded(m.group(0))]
    found += [(m.start(), m.group(0)) for m in _PCT_RUN.finditer(text)]
    return [run for _, run in sorted(found)]


def _read(run: str) -> bool:
    """Whether a decoding view of `run` (alone or chained) yields a readable line (module docstring)."""
    for key, view in leak_views(run):
        steps = key.split(">")
        if not any(step in _DECODERS for step in steps) or steps[-1].startswith("leet"):
            continue
        for line in view.splitlines():
            if len(line.strip()) >= MIN_READ and not _encoded_runs(line) \
                    and _known(line) + _cjk_words(line) >= MIN_WORDS:
                return True
    return False


def _transitions(piece: str) -> int:
    kind = [c.isdigit() + 2 * c.isupper() for c in piece]
    return sum(a != b for a, b in zip(kind, kind[1:]))


def _mixed(text: str) -> list[tuple[str, list[str]]]:
    """(token, the parts of it that count to the mass) of each printable ASCII token of `text`."""
    text = _DIGEST.sub(" ", _UUID.sub(" ", text))
    found: list[tuple[str, list[str]]] = []
    for m in _ASCII_TOKEN.finditer(text):
        token = m.group(0)
        odd = sum(c in ODD_SYMBOLS for c in token)
        digits = sum(c.isdigit() for c in token)
        varied = len(ODD_SYMBOLS.intersection(token)) >= 2 or _QP_BYTES.search(token)  # not `a=1,b=2,c=3`
        if len(token) >= MIN_85 and odd >= 3 and odd * ODD_SHARE >= len(token) and digits >= 2 and varied \
                and sum(c.isalpha() for c in token) >= 2 and not _URL.match(token):
            found.append((token, [token]))
            continue
        parts = [piece for piece in _ALNUM.findall(token) if len(piece) >= MIN_MIXED
                 and 2 <= sum(c.isdigit() for c in piece) <= len(piece) - 2 and _transitions(piece) >= MIN_SWITCHES]
        if parts:
            found.append((token, parts))
    return found


def mixed_tokens(text: str) -> list[str]:
    """The tokens of `text` that count to its encoded MASS (module docstring), in order: an alphanumeric
    piece of MIN_MIXED+ characters with two digits, two letters and MIN_SWITCHES switches between
    digits, capitals and small letters (`5LuO56CB5aS0`, `e4bb8ee7a081`; not `CA1234`, `SF1234567890123`,
    `10:30pm`), or a token of MIN_85+ printable ASCII characters, two digits and two letters, with
    one ODD_SYMBOLS character in ODD_SHARE or more, two different ones or three `=XX` in a row
    (`<hzdNpn>J2wC0JE=)I=pj=…`, `=E4=BB=8F…`; not `a=1,b=2,c=3`). UUIDs, hex digests and URLs are left out."""
    return [part for _, parts in _mixed(text) for part in parts]


def opaque_mass(text: str) -> str | None:
    """The mixed tokens of `text`, joined by spaces, when those in tokens no view reads (alone, or
    all joined: pieces of one stream) hold MIN_MASS or more characters; else None."""
    found = _mixed(text)
    if sum(len(p) for _, parts in found for p in parts) < MIN_MASS:
        return None
    found = [(token, parts) for token, parts in found if not _read(token)]
    parts = list(dict.fromkeys(p for _, ps in found for p in ps))
    if sum(map(len, parts)) < MIN_MASS or _read(" ".join(token for token, _ in found)):
        return None
    return " ".join(parts)


def opaque_runs(text: str) -> list[str]:
    """The runs of `text` that look encoded and that no decoded view of the leak scan reads, in order;
    then, if there is none, the mixed tokens no view reads when they hold MIN_MASS characters or more.
    Fullwidth and mathematical letters and digits count as ASCII (QA 44 F1)."""
    text = ascii_lookalikes(text)
    runs = [run for run in dict.fromkeys(_encoded_runs(text)) if not _read(run)]
    return runs or [mass for mass in (opaque_mass(text),) if mass]


MIN_CJK = 12
"""CJK characters a line needs before its readability is judged."""
MIN_CJK_READ = 0.25
"""The least share of a line's CJK characters that common Chinese words cover in readable text."""
WINDOW = 16
MIN_WINDOW_READ = 0.125
"""The least share of any WINDOW CJK characters in a row (the line's CJK runs in order) that common words
cover in readable text: an ordinary clause before a cipher lifts the line's share, not the cipher's
(QA 46 F2). Measured: 0 or 1 of 16 for the QA's ciphers and reversed queries after such a clause; 3
of 16 at the least in shipped text (`周五晚7点甬府静安店5位，帮我查下有没有位`: a restaurant and a
place), then 4 (a number in words, 七三零一九三), over the 221 lines of 16+ CJK characters of the
SKILL.md files, eval queries and docs."""


def unread_cjk(text: str) -> list[str]:
    """The unreadable part of each line (from the first character of its least covered stretch) whose
    MIN_CJK+ CJK characters common two-character Chinese words (wordfreq's zh list, as leakviews)
    cover under MIN_CJK_READ, or of which a stretch of WINDOW covers under MIN_WINDOW_READ: text
    enciphered character by character (a shift that varies, Atbash, pairs swapped, two queries
    interleaved: QA 44 F3; reversed), which no view decodes, also after an ordinary clause. Measured
    (whole lines): such lines cover 0-0.21; the 282 shipped lines (SKILL.md files, eval queries) of
    12+ CJK characters 0.28 at the least (a list of shop names and times), 0.46 at the 5th percentile."""
    words = _zh_words()
    out: list[str] = []
    for line in text.splitlines():
        shown, line = line, simplified(line)  # Traditional read as Simplified, character by character
        where: list[int] = []  # each CJK character's place in the line, and whether a common word covers it
        mark: list[bool] = []
        for m in _CJK_RUN.finditer(line):
            run = m.group(0)
            covered = [False] * len(run)
            for i in range(len(run) - 1):
                if run[i:i + 2] in words:
                    covered[i] = covered[i + 1] = True
            where += range(m.start(), m.end())
            mark += covered
        if len(mark) < MIN_CJK:
            continue
        low = _least_read(mark)
        start = where[low[0]] if low is not None and low[1] < MIN_WINDOW_READ * WINDOW else None
        if start is not None or sum(mark) < MIN_CJK_READ * len(mark):
            out.append(shown[start or 0:].strip())
    return out


def _least_read(mark: list[bool]) -> tuple[int, int] | None:
    """(start, covered) of the WINDOW-long stretch of `mark` with the fewest covered characters (the
    first such), or None for a line shorter than WINDOW."""
    if len(mark) < WINDOW:
        return None
    covered = sum(mark[:WINDOW])
    best = (0, covered)
    for i in range(WINDOW, len(mark)):
        covered += mark[i] - mark[i - WINDOW]
        if covered < best[1]:
            best = (i - WINDOW + 1, covered)
    return best


LATIN_WINDOW = 6
"""Words (3+ letters) in a row of which none is a common English word: unreadable Latin-letter text."""
LONG_WORD = 24
"""Letters in one lower-case word (a capital first at most) that no language writes: pinyin run together
(`congmatoudachequxintiandi…`); English's long words stop near 20 (`internationalization`), and a
CamelCase identifier is not one unless LONG_CAMEL+ letters (`CongMaTouDaCheQuXinTianDi…`: QA 47 F3)."""
LONG_CAMEL = 40
_LATIN_WORD = re.compile(r"(?<![\w@./-])[A-Za-z]{3,}(?![\w@/-])")
_NOT_PROSE = re.compile(r"`[^`]*`|https?://\S+|\S+@\S+")


def unread_latin(text: str) -> list[str]:
    """The unreadable part of each line (from its first word) holding LATIN_WINDOW words in a row
    (3+ letters; code spans, URLs and e-mail addresses left out) none of which is a common English
    word (wordfreq, Zipf COMMON_ZIPF+, as leakviews): Atbash, Pig Latin, text without its vowels, a
    cipher no view reads, also after an ordinary clause (QA 46 F3; the Latin twin of unread_cjk); or
    one word of LONG_WORD+ lower-case letters.
    Measured: 0 common words in such a window of the QA's ciphers; 3 at the least in the 9 248
    CLINC150 queries of 6+ words, 1 in the 3 473 such lines of the shipped SKILL.md files, docs and
    eval queries (a list of file names; 0 only in a German line and the leak corpus's disguises)."""
    out: list[str] = []
    for line in text.splitlines():
        words = list(_LATIN_WORD.finditer(_NOT_PROSE.sub(lambda m: " " * len(m.group(0)), line)))
        common = [_common(w.group(0).casefold()) for w in words]
        start = next((i for i in range(len(words) - LATIN_WINDOW + 1) if not any(common[i:i + LATIN_WINDOW])), None)
        if start is None:  # one run-on word: pinyin written without spaces (QA 46 F4)
            start = next((i for i, w in enumerate(words) if len(w.group(0)) >= LONG_WORD
                          and (w.group(0)[1:].islower() or len(w.group(0)) >= LONG_CAMEL)), None)
        if start is not None:
            out.append(line[words[start].start():].strip())
    return out


def shown(run: str) -> str:
    """A short prefix of a run, for a reason line."""
    return run if len(run) <= MAX_SHOWN else run[:MAX_SHOWN] + "…"
