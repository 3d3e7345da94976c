"""The one normal form the leak scan matches in (pure, no I/O).

A disguised copy of evaluation data must look like the original once both are normalised, and the
same function is applied to the candidate text and to every partition's text (queries, facts,
fixture constants, case ids). Steps, in order:

- NFKC (full-width forms, ligatures, math alphanumerics, compatibility ideographs), and text
  under a right-to-left override reversed, as a reader is shown it;
- invisible characters dropped: Unicode format characters (category Cf: zero-width, bidi
  controls, soft hyphen, tags) and the other default-ignorable code points (Hangul fillers,
  variation selectors, the combining grapheme joiner);
- combining marks dropped (a stacked U+0301 or U+0336 no longer splits a word);
- confusables folded to a Latin or CJK character (Cyrillic 'а', Greek 'ο', Cherokee 'Ꭺ' ...), per
  the data of the maintained `confusable-homoglyphs` package (Unicode's confusables.txt);
- Traditional Chinese characters as Simplified (「從碼頭打車」 -> 「从码头打车」), character by
  character with OpenCC's t2s, tw2s and hk2s tables (the `opencc` package): no phrase rewriting,
  so the text keeps its length and a character folds the same wherever it stands;
- an upper-case Roman numeral of two or more of I V X L C before a CJK character as digits
  ("XVI 分钟" -> "16 分钟"; "MIX", "CIVIL", "mix 套餐" are left alone);
- case folded;
- digits of any script as ASCII digits; numbers in words as digits: English with text2num's
  alpha2digit ("seventy-three thousand and nineteen" -> 73019), Chinese with cn2an, run by run
  (「七万三千零一十九」, 「七三零一九」 -> 73019; 「周六」 -> "周6" on both sides alike);
- digit words hyphenated one by one as spaced digits ("five-eight-two-six-zero"), "oh" between two
  numbers as 0 ("sixty-six oh two" -> "66 0 2");
- digit-group separators removed ("73,019", "73 019", "73'019", "73·019", "73•019" -> 73019), three or more groups of one
  or two digits spaced out joined ("7 3 0 1 9", "seven three zero one nine" -> 73019);
- a unit after a number in one spelling: minutes ("16 min", "16 minutes", "16 mins") as 「分钟」, yuan
  ("96 yuan", "96 CNY", "96 RMB") as 「元」;
- a space between a number and a CJK character dropped ("约 16 分钟" -> "约16分钟", "十六 分钟" ->
  "16分钟"); a space between two CJK characters stays (it may part two numbers in characters), and
  so does one next to a Latin word;
- markdown emphasis and code marks (`*`, `~`, backtick) dropped, whitespace collapsed;
- HTML character references decoded first (「&#20174;&#30721;」, `&amp;#x4ece;` -> 「从码」, up to
  HTML_DECODE_ROUNDS levels), and every `&` left afterwards read as a space, so that no fold holds
  text a second fold would decode;
- whitespace holding a line break between two CJK characters dropped (「16分」 + line break + 「钟」 ->
  「16分钟」), unless both are Chinese numerals (「七三\n九十」 stays two numbers, as with a space).

`digits_as_letters()` is a second reading for the injection patterns only: a non-ASCII digit that
looks like a letter as that letter ("ign०re").

`visible()` is the first four steps only (no case or number change): what a reader sees, for the
pattern rules (secrets, injection phrases, paths) whose patterns are case-sensitive.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from collections.abc import Iterable

import cn2an
import opencc
from confusable_homoglyphs.confusables import confusables_data
from text_to_num import alpha2digit

# Default_Ignorable_Code_Point (DerivedCoreProperties.txt) that are not in category Cf.
_IGNORABLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0xE0000, 0xE0FFF),
)
_CJK_IDEOGRAPH = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]")
_KANA_HANGUL = re.compile(r"[\u3040-\u30ff\u3130-\u318f\uac00-\ud7af]")
_GROUP_SEPARATOR = re.compile(r"(?<=\d)[ ,'’_·•∙⋅‧・](?=\d{3}(?!\d))")
"""A digit-group separator: a space (thin and narrow spaces are spaces after NFKC), comma, apostrophe,
underscore or a middle dot or bullet ("58·260", "58•260")."""
_SPACED_DIGITS = re.compile(r"(?<![\d.:])\d{1,2}(?: \d{1,2}(?![\d.:])){2,}")
_MARKUP = re.compile(r"[*~`]")
_DIGIT_WORD = r"(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)"
_HYPHEN_DIGITS = re.compile(rf"(?<![a-z-]){_DIGIT_WORD}(?:-{_DIGIT_WORD}){{2,}}(?![a-z-])")
"""Digit words hyphenated one by one ("five-eight-two-six-zero"): read as spaced digits."""
_OH = re.compile(r"(?<=\d) (?:oh|o) (?=\d)")
"""'oh' read as a zero between two numbers ("sixty-six oh two" -> "66 0 2" -> 6602)."""
_CN_NUMERALS = re.compile(r"[零〇一二三四五六七八九十百千万亿两壹贰叁肆伍陆柒捌玖拾佰仟]+")
_CN_DIGIT = dict(zip("零〇一二三四五六七八九两", "001234567892"))
MAX_NUMERAL_RUN = 24
"""A longer run of Chinese numerals is read digit by digit (bounds cn2an's work on hostile text)."""
_OVERRIDE = re.compile("\u202e([^\u202a-\u202e\n]*)(?:\u202c|$)", re.M)
_SPACES = re.compile(r"\s+")
_NON_ASCII_RUN = re.compile(r"[^\x00-\x7f]+")
_CJK_CLASS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
_CJK_RUN = re.compile(f"[{_CJK_CLASS}]+")
_CJK_SPACE = re.compile(f"(?<=\\d) (?=[{_CJK_CLASS}])|(?<=[{_CJK_CLASS}]) (?=\\d)")
_ROMAN = re.compile(f"(?<![A-Za-z0-9])(?=[IVXLC]{{2}})C{{0,3}}(?:XC|XL|L?X{{0,3}})(?:IX|IV|V?I{{0,3}})(?= ?[{_CJK_CLASS}])")
_ROMAN_VALUE = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100}
_BREAKS = "\\n\\r\\v\\f\\x1c-\\x1e\\x85\\u2028\\u2029"
_CJK_BREAK = re.compile(f"(?<=[{_CJK_CLASS}])[^\\S{_BREAKS}]*[{_BREAKS}]\\s*(?=[{_CJK_CLASS}])")
"""Whitespace holding a line break (any str.splitlines boundary) between two CJK characters."""
_UNIT = re.compile(r"(\d) ?(?:(min(?:ute)?s?)|yuan|cny|rmb)(?![a-z])")
"""A Latin minute or yuan unit after a number (in a case-folded text)."""
HTML_DECODE_ROUNDS = 3
"""Levels of HTML character references decoded (`&amp;amp;#20174;` is three)."""
OPENCC_CONFIGS = ("t2s", "tw2s", "hk2s")
"""OpenCC's Traditional-to-Simplified tables, in the order a character is tried."""


@functools.lru_cache(maxsize=8192)
def _dropped(ch: str) -> bool:
    """True for a character `visible` drops: a format character (Cf), another default-ignorable
    one, or a combining mark (Mn). Only called for non-ASCII characters."""
    if unicodedata.category(ch) in ("Cf", "Mn"):
        return True
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _IGNORABLE_RANGES)


@functools.cache
def _confusable_table() -> dict[int, str]:
    """Code point -> the Latin (ASCII letter or digit) or CJK character it is confusable with.
    ASCII itself, CJK ideographs, kana, Hangul and decimal digits of any script (fold reads
    those as digits: Devanagari '०' is 0, not 'o') are never folded; a letter target is preferred
    to a digit, a digit to punctuation ('О' -> 'O', 'З' -> '3', the hyphen U+2010 -> '-')."""
    table: dict[int, str] = {}
    for ch, entries in confusables_data.items():
        if len(ch) != 1 or ch.isascii() or _CJK_IDEOGRAPH.match(ch) or _KANA_HANGUL.match(ch):
            continue
        if unicodedata.decimal(ch, None) is not None:  # a digit stays a digit ('०' is not 'o'): fold reads it
            continue
        targets = [e["c"].replace("\u200e", "").replace("\u200f", "") for e in entries]
        single = [t for t in targets if len(t) == 1 and ((t.isascii() and t.isprintable()) or _CJK_IDEOGRAPH.match(t))]
        single.sort(key=lambda t: (not t.isalpha(), not t.isdigit()))  # stable: letters, digits, the rest
        if single and single[0] != " ":
            # confusables.txt's prototype of 'I' is 'l'; an upper-case source ('Ι', 'І', 'Ⅰ') stands for 'I'
            table[ord(ch)] = "I" if single[0] == "l" and ch.isupper() else single[0]
    return table


@functools.cache
def _digit_letters() -> dict[int, str]:
    """A decimal digit outside ASCII -> the Latin letter confusables.txt says it looks like
    (Devanagari '०' -> 'o', Extended Arabic-Indic '۱' -> 'l'): 32 code points."""
    table: dict[int, str] = {}
    for ch, entries in confusables_data.items():
        if len(ch) == 1 and not ch.isascii() and unicodedata.decimal(ch, None) is not None:
            letters = [e["c"] for e in entries if len(e["c"]) == 1 and e["c"].isascii() and e["c"].isalpha()]
            if letters:
                table[ord(ch)] = letters[0]
    return table


def digits_as_letters(text: str) -> str:
    """`text` with each non-ASCII digit that looks like a letter as that letter: the reading the
    injection patterns also get ("ign०re" is "ignore" to a reader), never the one numbers are read in
    (fold keeps '०' a 0)."""
    return text.translate(_digit_letters())


@functools.cache
def _converters() -> tuple[opencc.OpenCC, ...]:
    """OpenCC's converters, loaded on the first Chinese character folded (~35 ms)."""
    return tuple(opencc.OpenCC(config) for config in OPENCC_CONFIGS)


class _SimplifiedTable(dict[int, str]):
    """Code point of a CJK ideograph -> its Simplified form, filled as characters are first met (at
    most the ~92 000 ideographs, ~1.5 µs each with the compiled OpenCC), for str.translate. A
    character is converted alone, so a phrase entry never applies, and until it no longer changes
    ('薴' -> '苧' -> '苎'), so a folded text folds to itself."""

    def __missing__(self, cp: int) -> str:
        ch = chr(cp)
        for _ in range(4):
            out = next((o for cc in _converters() if (o := cc.convert(ch)) != ch), ch)
            if len(out) != 1 or out == ch or not _CJK_RUN.fullmatch(out):
                break
            ch = out
        self[cp] = ch
        return ch


_SIMPLIFIED = _SimplifiedTable()


def simplified(text: str) -> str:
    """`text` with every Traditional Chinese character as its Simplified form, one for one."""
    return _CJK_RUN.sub(lambda m: m.group(0).translate(_SIMPLIFIED), text)


def _roman(m: re.Match[str]) -> str:
    """An upper-case Roman numeral as digits ("XCVI" -> "96")."""
    values = [_ROMAN_VALUE[ch] for ch in m.group(0)]
    return str(sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values)))


def _digit(ch: str) -> str:
    """A decimal digit of any script as its ASCII digit (Arabic-Indic '٧' -> '7'); others kept."""
    if ch.isascii():
        return ch
    value = unicodedata.decimal(ch, None)
    return str(value) if value is not None else ch


def visible(text: str, *, marks: bool = False) -> str:
    """`text` as a reader sees it: NFKC, invisible characters and combining marks dropped,
    confusables folded. Case, digits and spacing are kept. With `marks`, combining marks are kept
    (composed again: "fünf" stays "fünf"), for reading number words whose spelling needs them."""
    if text.isascii():  # every step below leaves ASCII as it is (the confusable table folds no ASCII)
        return text
    text = _OVERRIDE.sub(lambda m: m.group(1)[::-1], unicodedata.normalize("NFKC", text))  # shown reversed
    keep = "Mn" if marks else ""
    text = _NON_ASCII_RUN.sub(lambda m: "".join(ch for ch in m.group(0) if not _dropped(ch) or unicodedata.category(ch) == keep),
                              unicodedata.normalize("NFD", text))  # ASCII is never dropped: test only the rest
    return unicodedata.normalize("NFC", text).translate(_confusable_table())


def _cn2an(run: str) -> str | None:
    """A run of Chinese numerals as digits, or None when cn2an cannot read it."""
    try:
        return str(cn2an.cn2an(run, "smart"))
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def _chinese_number(m: re.Match[str]) -> str:
    """One run of Chinese numerals as digits: the longest prefix cn2an reads, then the rest alike
    (「七万三千零一十九三」 of 「…七万三千零一十九三天」 -> "73019 3"); a run longer than
    MAX_NUMERAL_RUN, or a character nothing reads, digit by digit. A space separates the result
    from ASCII digits around it, so "73019三天" keeps its token 73019."""
    run, parts, i = m.group(0), [], 0
    while i < len(run):
        if len(run) > MAX_NUMERAL_RUN:
            parts.append("".join(_CN_DIGIT.get(ch, ch) for ch in run))
            break
        for k in range(len(run), i, -1):
            if (digits := _cn2an(run[i:k])) is not None:
                parts.append(digits)
                i = k
                break
        else:
            parts.append(_CN_DIGIT.get(run[i], run[i]))
            i += 1
    text, before, after = " ".join(parts), m.string[m.start() - 1:m.start()], m.string[m.end():m.end() + 1]
    return (" " if before.isdigit() else "") + text + (" " if after.isdigit() else "")


def _numbers(text: str) -> str:
    """Numbers in English words and digits of any script as ASCII digits, digit groups joined. A
    text the converter cannot read is kept as it is (it never decides a verdict by raising)."""
    text = "".join(_digit(ch) for ch in text)
    text = _HYPHEN_DIGITS.sub(lambda m: m.group(0).replace("-", " ").replace("oh", "zero"), text)
    try:
        text = alpha2digit(text, "en", threshold=0)
    except (ValueError, RuntimeError):  # the Rust converter refuses some inputs
        pass
    text = _GROUP_SEPARATOR.sub("", _OH.sub(" 0 ", text))
    return _SPACED_DIGITS.sub(lambda m: m.group(0).replace(" ", ""), text)


def _join_units(text: str) -> str:
    """Minutes and yuan after a number as 「分钟」 and 「元」 ("16 min" -> "16分钟"), then a space
    between a number (in digits) and a CJK character dropped ("约 16 分钟" -> "约16分钟")."""
    return _CJK_SPACE.sub("", _UNIT.sub(lambda m: m.group(1) + ("分钟" if m.group(2) else "元"), text))


def _unescape(text: str) -> str:
    """HTML character references of a visible() text decoded, up to HTML_DECODE_ROUNDS levels (what
    one decodes is made visible() again, so `&\u200b#20174;` and `＆#20174;` decode too); then every
    `&` left read as a space."""
    for _ in range(HTML_DECODE_ROUNDS):
        if "&" not in text:
            return text
        decoded = html.unescape(text)
        if decoded == text:
            break
        text = visible(decoded)
    return text.replace("&", " ")


def _cjk_break(m: re.Match[str]) -> str:
    """The line break between two CJK characters dropped, unless both are Chinese numerals."""
    s, i, j = m.string, m.start(), m.end()
    return m.group(0) if _CN_NUMERALS.match(s[i - 1]) and _CN_NUMERALS.match(s[j]) else ""


def read_chinese_numerals(folded: str) -> str:
    """The last step of fold(): runs of Chinese numerals as digits, for a text folded without it."""
    return _join_units(_SPACES.sub(" ", _CN_NUMERALS.sub(_chinese_number, folded)).strip())


def fold(text: str, *, chinese_numerals: bool = True) -> str:
    """The matching form of `text`: visible(), HTML character references decoded, Traditional
    Chinese as Simplified, Roman numerals before a CJK unit as digits, case folded, markdown
    emphasis dropped, a line break between two CJK characters dropped, numbers as digits, minutes
    and yuan after a number as 「分钟」 and 「元」, a space between a number and CJK dropped,
    whitespace collapsed. Equal folds mean the leak scan treats two texts as the same. Without `chinese_numerals`, 「六」 stays a character: the form CJK
    n-grams are cut from, so that a digit does not split or join a run of Chinese where the
    original had none (Simplified and Traditional are one character each: the runs keep their
    length)."""
    text = _SPACES.sub(" ", _CJK_BREAK.sub(_cjk_break, _MARKUP.sub("", simplified(_unescape(visible(text))))))
    text = _ROMAN.sub(_roman, text).casefold()
    text = _join_units(_SPACES.sub(" ", _numbers(text)).strip())
    return read_chinese_numerals(text) if chinese_numerals else text


def join_lines(lines: Iterable[str]) -> str:
    """Lines read as one text: a word hyphenated over a break rejoined (`with-` + `out` → `without`),
    CJK lines joined without a space, others with one; continuation indents dropped."""
    out = ""
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if not out:
            out = line
        elif re.search(r"[A-Za-z]-$", out) and re.match(r"[A-Za-z]", line):
            out = out[:-1] + line
        elif re.search(r"[\u3000-\u30ff\u3400-\u9fff\uff00-\uffef]$", out) or \
                re.match(r"[\u3000-\u30ff\u3400-\u9fff\uff00-\uffef]", line):
            out += line
        else:
            out += " " + line
    return out
