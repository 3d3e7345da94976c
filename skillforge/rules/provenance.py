"""Provenance: every live value an answer states must come from this run. Pure, no I/O.

Each evaluation run stamps a fresh nonce (``sfn-`` + 12 lowercase hex chars) into its fixture
responses. An answer fails the case's task dimension when it states a live value that is in none of
the sources (this run's fixture responses, as the tools returned them, and the user's query), or
when it carries a nonce that is not this run's (an answer remembered from another run).

**Live values** (what :func:`live_values` returns, each as the text it was written with):

- clock times: ``14:20``, ``9:05``, ``14:20:00``, ``2:20 PM``, ``3pm``, ``下午3点``, ``3点20分``,
  ``15点`` (a bare ``3点`` with no period word and no minutes is read as a small number);
- dates: ``2026-11-29``, ``2026/11/29``, ``11/29/2026``, ``29.11.2026``, ``2026年11月29日``,
  ``11月29日``, ``11月``, ``29日`` / ``29号``, ``Nov 29``, ``29 November 2026``;
- prices and amounts with a currency sign or word: ``¥368``, ``$42.50``, ``368元``, ``€12``,
  ``USD 30``, ``30 dollars``;
- percentages: ``12%``, ``12 percent``, ``百分之12``;
- numbers with a unit attached: ``25°C``, ``12km``, ``3.5kg``, ``30 mph``, ``3级``, ``2小时``
  (see ``_UNITS``; counters such as 件/个/天/options are not units);
- numbers with a decimal point (``23.5``), and any number >= 10 (``368``, ``2,450``, ``2026``),
  also with a multiplier (``3.5万``, ``12k``).

**Not live:** bare integers < 10 ("3 options", "共3件", "step 2"), ordinals (``第3``, a list marker
such as ``1.`` or ``10、`` at the start of a line), version-like dotted runs (``1.2.3``), and any
digit inside a nonce. Chinese numerals (三百) are not read.

**Support** is by value, never by text. Every number, time and date in the sources counts (small
ones too), read the same way; a source that parses as JSON is walked (keys, strings, numbers, nested
lists) so JSON punctuation never glues numbers together. Then:

- a number is supported by an equal source number (``2,450`` by ``2450``, ``42.50`` by ``42.5``,
  ``¥368`` by ``"price": 368``), or by a more precise source number that rounds to it at the
  answer's precision (``23.5`` by ``23.46``); a percentage also by its fraction (``80%`` by
  ``0.8``), a multiplied number also by its plain value (``3.5万`` by ``35000`` or ``3.5``). Signs are
  ignored (``-5°C`` and ``5°C`` are the same value); units are not converted;
- a time by a source time with the same hour and minute (``14:20`` by ``"14:20:00"``); a time
  without AM/PM or a period word may be either half of the day;
- a date by a source date agreeing on every field both state, where the answer's month and day
  must be stated by the source (a year the source leaves out is allowed); a bare year by a source
  number or the year of a source date.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation

NONCE_RE = re.compile(r"sfn-[0-9a-f]{12}")
"""This run's nonce, as :func:`new_nonce` builds it."""
NONCE_TOKEN_BYTES = 6
"""Random bytes a nonce needs (12 hex chars)."""
SMALL_INT_LIMIT = 10
"""Bare integers below this are counts and list numbers, not live values."""
SHOWN_IN_REASON = 5
"""Unsupported values named in the reason; the rest are counted."""

_ANY_NONCE = re.compile(r"sfn-[0-9a-f]{12}", re.IGNORECASE)

# ---- dates -------------------------------------------------------------------------------------
_MONTHS = {"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
           "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9,
           "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12}
_MON = "|".join(sorted({v for k in _MONTHS for v in (k.capitalize(), k.upper())}, key=len, reverse=True))
_DATE_PATTERNS = (
    re.compile(r"(?<![\d.])(?P<y>\d{4})(?P<sep>[-/.])(?P<m>\d{1,2})(?P=sep)(?P<d>\d{1,2})(?!\d)"),
    re.compile(r"(?<![\d.])(?P<m>\d{1,2})/(?P<d>\d{1,2})/(?P<y>\d{4})(?!\d)"),
    re.compile(r"(?<![\d.])(?P<d>\d{1,2})\.(?P<m>\d{1,2})\.(?P<y>\d{4})(?!\d)"),
    re.compile(r"(?<![\d.])(?:(?P<y>\d{4})\s{0,2}年\s{0,2})?(?P<m>\d{1,2})\s{0,2}月"
               r"(?:(?P<d>\d{1,2})\s{0,2}[日号])?"),
    re.compile(rf"(?<![A-Za-z])(?P<mon>{_MON})(?![A-Za-z])\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?(?!\d)"
               r"(?:,?\s+(?P<y>\d{4})(?!\d))?"),
    re.compile(rf"(?<![\d.])(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mon>{_MON})(?![A-Za-z])"
               r"(?:,?\s+(?P<y>\d{4})(?!\d))?"),
    re.compile(r"(?<![\d.])(?P<d>\d{1,2})\s{0,2}[日号](?![元本语文线楼门房台机车床位院币])"),
)

# ---- times -------------------------------------------------------------------------------------
_PM_WORDS = ("下午", "傍晚", "晚上", "夜里", "夜间", "今晚", "明晚", "pm")
_AM_WORDS = ("凌晨", "清晨", "早上", "早晨", "上午", "am")
_PERIOD = (r"(?P<period>凌晨|清晨|早上|早晨|上午|中午|下午|傍晚|晚上|夜里|夜间|今晚|明晚)?"
           r"\s{0,2}")
"""An optional Chinese period word before a time (下午3点, 晚上8:30)."""
_AMPM = r"(?:\s{0,2}(?P<ampm>[ap]\.?m\.?)(?![A-Za-z]))?"
_TIME_PATTERNS = (
    re.compile(_PERIOD + r"(?<![\d.+])(?<!\d:)(?P<h>\d{1,2}):(?P<m>\d{2})(?::\d{2}(?:\.\d+)?)?(?![\d:])" + _AMPM,
               re.IGNORECASE),
    re.compile(_PERIOD + r"(?<![\d.])(?P<h>\d{1,2})\s{0,2}[点點时時]"
               r"(?:\s{0,2}(?P<m>\d{1,2})\s{0,2}分|\s{0,2}(?P<half>半)|\s{0,2}(?P<whole>整))?"),
    re.compile(r"(?<![\d.:])(?P<h>\d{1,2})\s{0,2}(?P<ampm>[ap]\.?m\.?)(?![A-Za-z])", re.IGNORECASE),
)

# ---- numbers -----------------------------------------------------------------------------------
_NUMBER = re.compile(r"(?<![\d.])(?P<int>\d{1,3}(?:,\d{3})+(?!\d|,\d)|\d+)(?P<frac>\.\d+)?(?!\.\d)")
_MULTIPLIER = re.compile(r"\s?(?P<cjk>万|亿)|(?P<k>[kK])(?![A-Za-z])"
                         r"|\s?(?P<word>thousand|million|billion)(?![A-Za-z])", re.IGNORECASE)
_MULTIPLIERS = {"万": 10_000, "亿": 100_000_000, "k": 1_000, "thousand": 1_000, "million": 10**6, "billion": 10**9}
_CURRENCY_CODES = "USD|CNY|RMB|EUR|GBP|JPY|HKD"
_CURRENCY_BEFORE = re.compile(rf"(?:[¥$€£₩₹]|US\$|HK\$|人民币|(?<![A-Za-z])(?:{_CURRENCY_CODES}))\s?$")
_PERCENT_BEFORE = re.compile(r"百分之\s?$")
_LATIN_AFTER = ("dollars", "dollar", "euros", "euro", "yuan", "bucks", "USD", "CNY", "RMB", "EUR", "GBP", "JPY",
                "HKD", "percent", "pct")
_CJK_AFTER = ("块钱", "美元", "欧元", "英镑", "日元", "港元", "港币", "人民币", "元", "块")
_UNITS = ("°C", "°F", "°", "km/h", "kph", "mph", "m/s", "km", "cm", "mm", "m", "kg", "mg", "g", "lbs", "lb", "oz",
          "ml", "mL", "L", "TB", "GB", "MB", "KB", "hPa", "kPa", "Pa", "kWh", "kW", "W", "hours", "hour", "hrs",
          "hr", "h", "minutes", "minute", "mins", "min", "seconds", "second", "secs", "sec", "miles", "mile",
          "mi", "ft", "feet",
          "摄氏度", "华氏度", "度", "公里", "千米", "厘米", "毫米", "米", "公斤", "千克", "克", "斤", "毫升", "升",
          "小时", "分钟", "秒钟", "秒", "级", "毫巴", "百帕", "千瓦时", "千瓦", "瓦", "英里", "海里", "平方米", "平米",
          "吨")
"""Units that make even a small number live. Counters (件, 个, 天, options) are deliberately absent."""


def _alternation(words: Sequence[str]) -> str:
    """Longest first, so "km/h" wins over "km" and "m"."""
    return "|".join(map(re.escape, sorted(words, key=len, reverse=True)))


_SUFFIX = re.compile(rf"\s?(?:(?P<pct>%)|(?P<latin>{_alternation(_LATIN_AFTER + _UNITS)})(?![A-Za-z])"
                     rf"|(?P<cjk>{_alternation(_CJK_AFTER)}))")
_LIST_MARKER_LEAD = frozenset(" \t-*•>#")
"""What may stand between a line's start and its list number ("- 1.", "## 2.")."""
_LIST_MARKER_AFTER = re.compile(r"[.、)](?!\d)")


@dataclass(frozen=True)
class _Value:
    """One number, time or date found in a text."""

    start: int
    text: str
    live: bool
    numbers: frozenset[Decimal] = frozenset()
    """Acceptable numeric values (magnitudes), for a number."""
    times: frozenset[tuple[int, int]] = frozenset()
    """Acceptable (hour, minute), for a time."""
    date: tuple[int | None, int | None, int | None] | None = None
    """(year, month, day), for a date; None where the text does not say."""


@dataclass
class _Index:
    """Everything the sources state."""

    numbers: set[Decimal] = field(default_factory=set)
    times: set[tuple[int, int]] = field(default_factory=set)
    dates: list[tuple[int | None, int | None, int | None]] = field(default_factory=list)


@dataclass(frozen=True)
class ProvenanceResult:
    """The verdict on one answer."""

    ok: bool
    unsupported: tuple[str, ...]
    """Live values the answer states that no source holds, as written, in order, once each."""
    stale_nonces: tuple[str, ...]
    """Nonces in the answer that are not this run's."""
    reason: str
    """Empty when ok, else one short sentence naming the first few problems."""


def new_nonce(token: bytes) -> str:
    """``sfn-`` + the first 12 hex chars of caller-supplied random bytes (the caller does os.urandom)."""
    if len(token) < NONCE_TOKEN_BYTES:
        raise ValueError(f"a nonce needs at least {NONCE_TOKEN_BYTES} random bytes, got {len(token)}")
    return "sfn-" + token.hex()[:12]


def _normalise(text: str) -> str:
    """NFKC per character (full-width digits, ％, ：, ￥, ℃ -> °C), keeping the CJK comma "，" a
    separator so that "26，400" never reads as 26400."""
    return "".join(c if c == "，" else unicodedata.normalize("NFKC", c) for c in text)


def _mask_each(pattern: re.Pattern[str], text: str, read: Callable[[re.Match[str]], _Value | None],
               found: list[_Value]) -> str:
    """Record what `read` makes of each match of `pattern`, and blank the matches it accepts
    (same length, so positions hold) so that no later pattern reads their digits again."""
    def replace(m: re.Match[str]) -> str:
        value = read(m)
        if value is None:
            return m.group()
        found.append(value)
        return " " * len(m.group())
    return pattern.sub(replace, text)


def _hours(h: int, period: str | None) -> frozenset[int]:
    """The 24h hours a written hour may mean."""
    p = (period or "").replace(".", "").lower()
    if p in _PM_WORDS:
        return frozenset({h + 12 if h < 12 else h})
    if p == "中午":
        return frozenset({h + 12 if h < 11 else h})
    if p in _AM_WORDS:
        return frozenset({0 if h == 12 else h})
    h %= 24
    return frozenset({h, (h + 12) % 24}) if h <= 12 else frozenset({h})


def _date(m: re.Match[str]) -> _Value | None:
    g = m.groupdict()
    year = int(g["y"]) if g.get("y") else None
    month = _MONTHS[g["mon"].lower()] if g.get("mon") else (int(g["m"]) if g.get("m") else None)
    day = int(g["d"]) if g.get("d") else None
    if (year is not None and not 1900 <= year <= 2199) or (month is not None and not 1 <= month <= 12) \
            or (day is not None and not 1 <= day <= 31):
        return None
    return _Value(m.start(), m.group().strip(), True, date=(year, month, day))


def _time(m: re.Match[str]) -> _Value | None:
    g = m.groupdict()
    h, minute = int(g["h"]), int(g["m"]) if g.get("m") else (30 if g.get("half") else 0)
    chinese_bare = "half" in g and not (g["period"] or g["m"] or g["half"] or g["whole"] or h >= 10)
    if not 0 <= h <= 24 or not 0 <= minute <= 59 or chinese_bare:
        return None
    times = frozenset((hour, minute) for hour in _hours(h, g.get("period") or g.get("ampm")))
    return _Value(m.start(), m.group().strip(), True, times=times)


def _starts_line(text: str, pos: int) -> bool:
    """Only list-marker lead (spaces, bullets) between the line's start and `pos`."""
    while pos > 0 and text[pos - 1] in _LIST_MARKER_LEAD:
        pos -= 1
    return pos == 0 or text[pos - 1] == "\n"


def _numbers(text: str, found: list[_Value]) -> None:
    for m in _NUMBER.finditer(text):
        base = Decimal(m["int"].replace(",", "") + (m["frac"] or ""))
        values, end = {base}, m.end()
        mult = _MULTIPLIER.match(text, end)
        if mult:
            key = (mult["cjk"] or mult["k"] or mult["word"]).lower()
            values.add(base * _MULTIPLIERS[key])
            end = mult.end()
        suffix = _SUFFIX.match(text, end)
        window = max(0, m.start() - 8)
        percent_before = _PERCENT_BEFORE.search(text, window, m.start())
        if percent_before or (suffix and (suffix["pct"] or (suffix["latin"] or "").lower() in ("percent", "pct"))):
            values.add(base / 100)
        prefix = _CURRENCY_BEFORE.search(text, window, m.start()) or percent_before
        start = m.start() - (len(prefix.group()) if prefix else 0)
        if suffix:
            end = suffix.end()
        line_start = _starts_line(text, m.start())
        ordinal = text[window:m.start()].rstrip().endswith("第") or (
            line_start and not m["frac"] and _LIST_MARKER_AFTER.match(text, m.end()) is not None)
        live = not ordinal and bool(prefix or suffix or mult or m["frac"] or base >= SMALL_INT_LIMIT)
        found.append(_Value(start, text[start:end].strip(), live, numbers=frozenset(values)))


def _scan(text: str) -> tuple[list[_Value], list[str]]:
    """Every number, time and date in `text` (live or not), in order, and the nonces it carries."""
    text = _normalise(text)
    nonces = [m.group().lower() for m in _ANY_NONCE.finditer(text)]
    text = _ANY_NONCE.sub(lambda m: " " * len(m.group()), text)
    found: list[_Value] = []
    for pattern in _DATE_PATTERNS:
        text = _mask_each(pattern, text, _date, found)
    for pattern in _TIME_PATTERNS:
        text = _mask_each(pattern, text, _time, found)
    _numbers(text, found)
    return sorted(found, key=lambda v: v.start), nonces


def live_values(text: str) -> list[str]:
    """The live values stated in `text`, as written (see the module docstring for what counts)."""
    return [v.text for v in _scan(text)[0] if v.live]


def _walk_json(node: object, texts: list[str], index: _Index) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            texts.append(str(key))
            _walk_json(value, texts, index)
    elif isinstance(node, list):
        for item in node:
            _walk_json(item, texts, index)
    elif isinstance(node, Decimal):
        index.numbers.add(abs(node))
    elif isinstance(node, str):
        texts.append(node)


def _index(sources: Iterable[str]) -> _Index:
    index = _Index()
    texts: list[str] = []
    for source in sources:
        try:
            parsed = json.loads(source, parse_float=Decimal, parse_int=Decimal, parse_constant=lambda _: None)
        except ValueError:
            parsed = source
        _walk_json(parsed, texts, index)
    for text in texts:
        for value in _scan(text)[0]:
            index.numbers.update(value.numbers)
            index.times.update(value.times)
            if value.date is not None:
                index.dates.append(value.date)
                if value.date[0] is not None:
                    index.numbers.add(Decimal(value.date[0]))
    return index


def _rounds_to(source: Decimal, answer: Decimal) -> bool:
    """The source value equals the answer's, or is more precise and rounds to it."""
    if source == answer:
        return True
    places = answer.as_tuple().exponent
    if not isinstance(places, int) or source.as_tuple().exponent >= places:  # type: ignore[operator]
        return False
    quantum = Decimal(1).scaleb(places)
    try:
        return any(source.quantize(quantum, rounding=r) == answer for r in (ROUND_HALF_UP, ROUND_HALF_EVEN))
    except InvalidOperation:
        return False


def _date_supported(date: tuple[int | None, int | None, int | None], index: _Index) -> bool:
    year, month, day = date
    for y, m, d in index.dates:
        if (month is not None and m != month) or (day is not None and d != day):
            continue
        if year is not None and y is not None and y != year:
            continue
        return True
    return False


def _supported(value: _Value, index: _Index) -> bool:
    if value.date is not None:
        return _date_supported(value.date, index)
    if value.times:
        return bool(value.times & index.times)
    return any(_rounds_to(s, a) for a in value.numbers for s in index.numbers)


def check_provenance(answer: str, sources: Sequence[str], nonce: str) -> ProvenanceResult:
    """Is every live value in `answer` backed by a source, and is every nonce in it this run's?

    `sources` are the JSON texts of this run's fixture responses (with the nonce) and the user's
    query. `nonce` must be a well-formed nonce (ValueError otherwise: a caller bug, not an answer's).
    """
    if not NONCE_RE.fullmatch(nonce):
        raise ValueError(f"not a run nonce: {nonce!r}")
    values, nonces = _scan(answer)
    stale = tuple(dict.fromkeys(n for n in nonces if n != nonce))
    index = _index(sources)
    unsupported = tuple(dict.fromkeys(v.text for v in values if v.live and not _supported(v, index)))
    problems = []
    if unsupported:
        shown = ", ".join(unsupported[:SHOWN_IN_REASON])
        more = f" (+{len(unsupported) - SHOWN_IN_REASON} more)" if len(unsupported) > SHOWN_IN_REASON else ""
        problems.append(f"states {len(unsupported)} live value(s) found in no source of this run: {shown}{more}")
    if stale:
        problems.append(f"carries a nonce from another run: {', '.join(stale[:SHOWN_IN_REASON])}")
    ok = not problems
    return ProvenanceResult(ok=ok, unsupported=unsupported, stale_nonces=stale,
                            reason="" if ok else "answer " + "; ".join(problems))
