"""The decoding views of the leak scan (pure, no I/O): what rules/leakviews.py reads a patch's added
text in besides its ciphers and spellings (the list, and how a finding names its view, is there).

Each function returns the printable UTF-8 texts the encoded parts of `text` decode to (or, for the
percent and quoted-printable views, the text with its encoded runs decoded in place); a decoded text
shorter than MIN_DECODED characters is no copy of anything and is left out.

- percent, base64, hex (blobs, bytes written apart, and groups of any even length parted by spaces
  or colons: `e4bb 8ee7a081 …`, QA 43 T1), base32 (QA 29 F1, QA 31 F1, QA 40 F1);
- **quoted-printable**: runs of `=XX` (upper-case hex, as QP writes them) that spell printable UTF-8,
  after its soft line breaks (`=` at a line's end) are joined, when the text holds QP_MIN or more;
- **base85** and **Ascii85**: a token of MIN_85 or more printable ASCII characters (between spaces
  and non-ASCII text; three letters or more: a date is no token) that decodes to printable UTF-8 (`<~…~>` too);
- **uudecoded**: a run of uuencode characters whose length characters account for every group (one
  line per run, or lines written one after another) and whose bytes are UTF-8 but for a character
  cut at each end, the bytes of every run in order;
- **joined**: the blob-like tokens (MIN_PIECE+ characters of the base64 alphabet holding a digit or
  `+/=`, or mixing case inside; a shorter last piece ending its line: `929f`, `Nw==`) concatenated in order across spaces and lines (a base64 or hex
  stream cut into pieces, one a line or parted by spaces), decoded as hex, base32 and base64; each
  run of PIECE_PADDING-ended pieces decoded on its own, the bytes joined. Parts of the bytes that
  are no UTF-8 are cut out.
Base85, uu and joined pieces keep only `plausible` writing (most random bytes decode to something).
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata

from skillforge.rules.redactviews import _PERCENT, B64_BLOB, HEX_BLOB, PERCENT_ROUNDS, _decoded

MIN_DECODED = 6
"""Characters a decoded blob needs to be read (shorter plain text is no copy of anything)."""
QP_MIN = 6
"""`=XX` a text needs for its quoted-printable view."""
MIN_85 = 10
"""Characters a base85 or Ascii85 token needs to be decoded."""
MIN_PIECE = 8
"""Characters a blob-like token needs to join the others (shorter ones are words and numbers)."""
MAX_PIECES = 400
"""Blob-like tokens the joined view reads at most (a bound on the work)."""

_PCT_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_HEX_BYTES = re.compile(r"(?i)(?<![0-9a-z])(?:0x|\\x)?[0-9a-f]{2}(?:(?:[ \t]*[:,;-][ \t]*|[ \t]+|0x|\\x|[ \t]*,[ \t]*0x)[0-9a-f]{2}){5,}(?![0-9a-z])")
"""Hex written byte by byte (`5a 65 70`, `5a:65:70`, `\\x5a\\x65`, `0x5a, 0x65`): six bytes or more."""
_HEX_GROUPS = re.compile(r"(?i)(?<![0-9a-z:])(?:[0-9a-f]{2})+(?:[ \t]*[ \t:][ \t]*(?:[0-9a-f]{2})+)+(?![0-9a-z:])")
"""Hex in groups of any even length parted by spaces or colons (`e4bb 8ee7a081 e5a4b4e6`)."""
_QP_RUN = re.compile(r"(?:=[0-9A-F]{2})+")
_QP_SOFT = re.compile(r"=[ \t]*\r?\n")
_ASCII_TOKEN = re.compile(rf"[!-~]{{{MIN_85},}}")
_UU_RUN = re.compile(r"[ -`]{8,}")
_PIECE = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{2,}={0,2}(?![A-Za-z0-9+/=_-])")
_LINE_END = re.compile(r"[ \t]*(?:\n|$)")
_BLOB_HINT = re.compile(r"[0-9+/=]|[a-z][A-Z]")
_SHORT_RUN = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{2,7}={0,2}(?:[ -][A-Za-z0-9+/]{2,7}={0,2}){3,}(?![A-Za-z0-9+/=])")
"""Four or more pieces of 2-7 base64/base32/hex characters parted by one space or dash on a line
(`5LuO 56CB 5aS0...`, `4S5Y-5Z5A-...`; QA 44 F2: pieces under MIN_PIECE were never joined); read only
when the pieces are of one length (the last aside), as a cut stream is and words are not."""
B32_BLOB = re.compile(r"(?<![A-Za-z0-9+/=_-])(?:[A-Z2-7]{16,}|[a-z2-7]{16,})={0,6}(?![A-Za-z0-9+/=_-])")
"""A base32 blob (RFC 4648 alphabet, upper or lower case, 16+ characters, padded or not)."""
_HEXISH = re.compile(r"[0-9a-fA-F]+")
_B32ISH = re.compile(r"[A-Z2-7]+=*|[a-z2-7]+=*")
_BAD = re.compile(r"[\ufffd\x00-\x08\x0b-\x1f\x7f-\x9f]")
_LETTERS3 = re.compile(r"(?:[A-Za-z][^A-Za-z]*){3}")


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
        if (plain := _text(raw, min_chars)) is not None:
            return plain
    return None


def _text(raw: bytes, min_chars: int = MIN_DECODED) -> str | None:
    """`raw` as printable UTF-8 of `min_chars`+ characters (a character cut at the end dropped)."""
    for end in range(len(raw), max(len(raw) - 4, -1), -1):
        try:
            plain = raw[:end].decode("utf-8")
        except UnicodeDecodeError:
            continue
        return plain if printable(plain) and len(plain.strip()) >= min_chars else None
    return None


def _utf8_run(run: str, mark: str) -> str | None:
    """A run of `mark`XX bytes (`%E4%BB%8E`, `=E4=BB=8E`) as the printable UTF-8 it spells, or None."""
    try:
        plain = bytes.fromhex(run.replace(mark, "")).decode("utf-8")
    except ValueError:  # UnicodeDecodeError included
        return None
    return plain if printable(plain) else None


def _pct_run(m: re.Match[str]) -> str:
    """A run of `%XX` bytes as the UTF-8 text it spells when it is printable (`%E4%BB%8E` -> 从), else
    only its `%XX` of printable ASCII decoded (QA 40 F1)."""
    plain = _utf8_run(m.group(0), "%")
    return plain if plain is not None else _PERCENT.sub(lambda x: chr(int(x.group(1), 16)), m.group(0))


def percent_decoded(text: str) -> str:
    """Runs of `%XX` decoded as UTF-8 (or, where a run is no printable UTF-8, its printable ASCII
    `%XX`) while it changes, at most PERCENT_ROUNDS times."""
    for _ in range(PERCENT_ROUNDS):
        decoded = _PCT_RUN.sub(_pct_run, text)
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


_B64_VALUE = re.compile(r"(?<==)[A-Za-z0-9+/_-]{16,}={0,2}(?![A-Za-z0-9+/=_-])")
"""A blob right after `=` (`?d=SXMg…`, `token=…`), which B64_BLOB does not start at (`=` is padding to it)."""


def base64_decoded(text: str) -> str:
    """The printable texts the base64 or base64url blobs of `text` decode to, one a line."""
    if len(text) < 16:
        return ""
    blobs = [m.group(0) for m in B64_BLOB.finditer(text)] + _B64_VALUE.findall(text) if "=" in text else \
        [m.group(0) for m in B64_BLOB.finditer(text)]
    found = [p for b in blobs if not HEX_BLOB.fullmatch(b) and (p := _blob_text(b))]
    return "\n".join(dict.fromkeys(found))


def hex_decoded(text: str) -> str:
    """The printable texts the hex of `text` decodes to, one a line: blobs (`5a6570…`), bytes
    written apart (`5a 65 70`, `5a:65:70`, `\\x5a\\x65`, `0x5a, 0x65`; QA 31 F1) and groups of any
    even length parted by spaces or colons (`e4bb 8ee7a081`; QA 43 T1)."""
    found = [p for m in HEX_BLOB.finditer(text) if (p := _blob_text(m.group(0)))]
    runs = [re.sub(r"(?i)0x|\\x", " ", m.group(0)) for m in _HEX_BYTES.finditer(text)]
    runs += [m.group(0) for m in _HEX_GROUPS.finditer(text) if re.search(r"[0-9a-fA-F]{4}", m.group(0))]
    for run in runs:
        if (p := _text(bytes.fromhex("".join(re.findall(r"[0-9a-fA-F]{2}", run))))) is not None:
            found.append(p)
    return "\n".join(dict.fromkeys(found))


def base32_decoded(text: str) -> str:
    """The printable texts the base32 blobs of `text` decode to, one a line (QA 40 F1)."""
    found = [p for m in B32_BLOB.finditer(text) if (p := b32_text(m.group(0), MIN_DECODED))]
    return "\n".join(dict.fromkeys(found))


def _qp_run(m: re.Match[str]) -> str:
    plain = _utf8_run(m.group(0), "=")
    return plain if plain is not None else m.group(0)


def qp_decoded(text: str) -> str:
    """Quoted-printable: soft line breaks joined and runs of `=XX` that spell printable UTF-8 decoded
    in place (`=E4=BB=8E` -> 从), when the text holds QP_MIN or more `=XX` (QA 43 T1)."""
    if len(_QP_RUN.findall(text)) < QP_MIN and text.count("=") < QP_MIN:
        return text
    joined = _QP_SOFT.sub("", text)
    if sum(len(r) // 3 for r in _QP_RUN.findall(joined)) < QP_MIN:
        return text
    return _QP_RUN.sub(_qp_run, joined)


def _b85(token: str) -> list[str]:
    found = []
    body = token[2:-2] if token.startswith("<~") and token.endswith("~>") else token
    for decode in (base64.b85decode, base64.a85decode):
        try:
            raw = decode(body)
        except ValueError:  # binascii.Error included
            continue
        if (plain := _text(raw)) is not None and plausible(plain):
            found.append(plain)
    return found


def base85_decoded(text: str) -> str:
    """The printable texts the base85 or Ascii85 tokens (MIN_85+ printable ASCII characters) of
    `text` decode to, one a line (QA 43 T1)."""
    found = [p for m in _ASCII_TOKEN.finditer(text) if _LETTERS3.search(m.group(0)) for p in _b85(m.group(0))]
    return "\n".join(dict.fromkeys(found))


def _uu_bytes(run: str) -> bytes | None:
    """A run of uuencode lines written one after another, decoded, when every group's length
    character accounts for the characters after it (the last group may lose three trailing spaces)."""
    out, pos = b"", 0
    while pos < len(run):
        n = (ord(run[pos]) - 32) & 63
        if n == 0:
            break
        end = pos + 1 + (n + 2) // 3 * 4
        if end - len(run) > 3:  # a last group's spaces cut
            return None
        try:
            out += binascii.a2b_uu(run[pos:end].ljust(end - pos))  # trailing spaces an editor cut
        except binascii.Error:
            return None
        pos = end
    return out if len(out) >= MIN_DECODED and run[pos:].strip(" `") == "" else None


def uu_decoded(text: str) -> str:
    """The printable text the uuencoded runs of `text` decode to, their bytes joined in order (a
    stream cut into lines), parts that are no UTF-8 cut out (QA 43 T1)."""
    chunks = []
    for m in _UU_RUN.finditer(text):
        run = m.group(0)
        for start in range(min(4, len(run))):  # after a list mark (`- `, `1. `)
            if (raw := _uu_bytes(run[start:].rstrip())) is not None and len(_BAD.findall(
                    raw.decode("utf-8", errors="replace"))) <= 6:  # a character cut at each end of a line
                chunks.append(raw)
                break
    return "\n".join(_readable_parts(b"".join(chunks)))


def plausible(plain: str) -> bool:
    """Decoded text that may be writing: MIN_DECODED+ characters, at least half of them letters, at
    most a fifth punctuation or symbols, and letters of one script beside ASCII (random bytes read as
    UTF-8 mix Arabic, Hebrew and symbols: `YQzثyׯj[`)."""
    chars = [c for c in plain if not c.isspace()]
    if len(chars) < MIN_DECODED or sum(c.isalpha() for c in chars) * 2 < len(chars):
        return False
    if sum(unicodedata.category(c)[0] in "PS" for c in chars) * 5 > len(chars):
        return False
    scripts = {_script(c) for c in chars if c.isalpha() and not c.isascii()}
    return len(scripts) <= 1 and printable(plain)


def _script(c: str) -> str:
    word = unicodedata.name(c, "?").split(" ")[0]
    return "CJK" if word in ("CJK", "HIRAGANA", "KATAKANA", "HANGUL", "FULLWIDTH", "IDEOGRAPHIC") else word


def _readable_parts(raw: bytes) -> list[str]:
    """The parts of `raw` that are printable UTF-8 and `plausible` writing."""
    parts = re.split(r"[^\S ]|[\ufffd\x00-\x1f\x7f-\x9f]+", raw.decode("utf-8", errors="replace"))
    return list(dict.fromkeys(p for p in parts if plausible(p)))


def _decode_pieces(pieces: list[str]) -> list[str]:
    """Pieces of one stream joined and decoded as hex, base32 or base64 (module docstring)."""
    found: list[str] = []
    joined = "".join(pieces)
    if _HEXISH.fullmatch(joined):
        found += _readable_parts(bytes.fromhex(joined[:len(joined) // 2 * 2]))
    if all(_B32ISH.fullmatch(p) for p in pieces):
        body = joined.replace("=", "").upper()
        try:
            found += _readable_parts(base64.b32decode(body[:len(body) // 8 * 8]))
        except ValueError:
            pass
    raw = b""
    for part in re.findall(r"[^=]+=*", joined):  # each run of pieces ended by padding on its own
        body = part.rstrip("=")
        alt = b"-_" if any(c in "-_" for c in body) else None
        body = body[:len(body) - (len(body) % 4 == 1)]  # a character cut off a quad: dropped
        try:
            raw += base64.b64decode(body + "=" * (-len(body) % 4), altchars=alt)
        except ValueError:
            continue
    return found + _readable_parts(raw)


def _tail(piece: str, pieces: list[str]) -> bool:
    """A short piece ending its line after a hex piece is the stream's last (`929f` after
    `203936203136e58886e9`); one ended by padding after a base64 piece too (`Nw==`)."""
    if not pieces or len(pieces[-1]) < MIN_PIECE:
        return False
    if _HEXISH.fullmatch(pieces[-1]):
        return bool(_HEXISH.fullmatch(piece)) and any(c.isdigit() for c in piece)
    return piece.endswith("=")


def joined_decoded(text: str) -> str:
    """The blob-like tokens of `text` joined in order across spaces and lines and decoded (module
    docstring; QA 43 T1: a base64 stream cut into 20-character pieces, hex of 10-byte pieces)."""
    pieces: list[str] = []
    for m in _PIECE.finditer(text):
        p = m.group(0)
        if len(p) >= MIN_PIECE and _BLOB_HINT.search(p) or len(p) < MIN_PIECE and _tail(p, pieces) \
                and _LINE_END.match(text, m.end()):
            pieces.append(p)
        if len(pieces) >= MAX_PIECES:
            break
    groups: list[list[str]] = [[]]  # hex and other pieces are two streams: a hex run ends a base64 one
    for p in pieces:
        if groups[-1] and bool(_HEXISH.fullmatch(p)) != bool(_HEXISH.fullmatch(groups[-1][-1])):
            groups.append([])
        groups[-1].append(p)
    found = [t for g in groups if len(g) >= 2 for t in _decode_pieces(g)]
    for m in _SHORT_RUN.finditer(text):  # short pieces of one length (the last aside) on a line, joined whole
        parts = re.split(r"[ -]", m.group(0))
        joined = "".join(parts)
        if len({len(p) for p in parts[:-1]}) == 1 and len(parts[0]) >= 3 and len(parts[-1]) <= len(parts[0]) \
                and len(joined) >= 2 * MIN_PIECE and _BLOB_HINT.search(joined):
            found += _decode_pieces([joined])
    return "\n".join(dict.fromkeys(found))


def _lookalike_table() -> dict[int, str]:
    """Fullwidth ASCII letters, digits and the symbols of the encodings (`％＋／＝－＿`) and the
    mathematical alphanumerics (𝟎, 𝐀), each to the ASCII character NFKC makes of it."""
    points = [*range(0xFF10, 0xFF1A), *range(0xFF21, 0xFF3B), *range(0xFF41, 0xFF5B), 0xFF05, 0xFF0B, 0xFF0F,
              0xFF1D, 0xFF0D, 0xFF3F, *range(0x1D400, 0x1D800)]
    table = {}
    for cp in points:
        plain = unicodedata.normalize("NFKC", chr(cp))
        if len(plain) == 1 and plain.isascii() and plain != chr(cp):
            table[cp] = plain
    return table


_LOOKALIKES = _lookalike_table()


def ascii_lookalikes(text: str) -> str:
    """`text` with fullwidth and mathematical letters, digits and encoding symbols as ASCII (QA 44 F1:
    `ｅ４ｂｂ８…`, `％Ｅ４％ＢＢ…`, hex with 𝟎-𝟗 digits were neither decoded nor counted as encoded).
    CJK punctuation (，：（）) is left as written."""
    return text.translate(_LOOKALIKES) if any(ord(c) > 0xFF00 for c in text) else text

