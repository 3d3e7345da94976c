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

Read: some view of the run that decodes it (percent, base64, hex, base32, alone or chained; a
leet reading last left out, it makes words of anything) holds a
line of MIN_READ or more characters with MIN_WORDS common English words (3+ letters) or two-character
Chinese words (wordfreq, as leakviews), and no encoded run of its own. Printable gibberish (a shifted
cipher inside base64) is not read.

This module also holds the base32 decoder leakviews uses (`b32_text`).
"""

from __future__ import annotations

import base64
import re

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
MAX_SHOWN = 16
"""Characters of a run a reason shows (a prefix: the run itself may be the leak)."""

B32_BLOB = re.compile(r"(?<![A-Za-z0-9+/=_-])(?:[A-Z2-7]{16,}|[a-z2-7]{16,})={0,6}(?![A-Za-z0-9+/=_-])")
"""A base32 blob (RFC 4648 alphabet, upper or lower case, 16+ characters, padded or not)."""
_RUN = re.compile(rf"(?<![A-Za-z0-9+/=_%-])[A-Za-z0-9+/=_-]{{{MIN_RUN},}}(?![A-Za-z0-9+/=_-])")
_PCT_RUN = re.compile(rf"(?:%[0-9A-Fa-f]{{2}}){{{MIN_PCT_BYTES},}}")
_PIECE = re.compile(r"[^/_=+.-]+")
_HEX = re.compile(r"[0-9a-fA-F]+")


def printable(plain: str) -> bool:
    """Every character printable (line breaks and tabs allowed)."""
    return all(c.isprintable() or c in "\n\t\r" for c in plain)


def b32_text(blob: str, min_chars: int) -> str | None:
    """A base32 blob decoded to printable UTF-8 of `min_chars`+ characters (whole, or cut to whole
    8-character groups when it was cut short; a character cut at the end dropped)."""
    body = blob.rstrip("=").upper()
    for cut in (body + "=" * (-len(body) % 8), body[:len(body) // 8 * 8]):
        try:
            raw = base64.b32decode(cut)
        except ValueError:  # binascii.Error included
            continue
        for end in range(len(raw), max(len(raw) - 4, -1), -1):
            try:
                plain = raw[:end].decode("utf-8")
            except UnicodeDecodeError:
                continue
            if printable(plain) and len(plain.strip()) >= min_chars:
                return plain
            break
    return None


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
    from skillforge.rules.leakviews import _DECODERS, _cjk_words, _known, leak_views  # leakviews imports this module

    for key, view in leak_views(run):
        steps = key.split(">")
        if not any(step in _DECODERS for step in steps) or steps[-1].startswith("leet"):
            continue
        for line in view.splitlines():
            if len(line.strip()) >= MIN_READ and not _encoded_runs(line) \
                    and _known(line) + _cjk_words(line) >= MIN_WORDS:
                return True
    return False


def opaque_runs(text: str) -> list[str]:
    """The runs of `text` that look encoded and that no decoded view of the leak scan reads, in order."""
    return [run for run in dict.fromkeys(_encoded_runs(text)) if not _read(run)]


def shown(run: str) -> str:
    """A short prefix of a run, for a reason line."""
    return run if len(run) <= MAX_SHOWN else run[:MAX_SHOWN] + "…"
