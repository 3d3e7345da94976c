"""QA 44 F1: hex, base64 and percent-encoding of a holdout query written in fullwidth characters, or
with only the digits fullwidth or mathematical (𝟎-𝟗), were neither decoded nor counted as encoded,
and published at L1. The views and the opaque rule read such characters as ASCII first."""

from __future__ import annotations

import base64
import urllib.parse

import pytest

from skillforge.rules.leakdecode import ascii_lookalikes
from skillforge.rules.leaks import scan_leaks
from skillforge.rules.opaque import opaque_runs, unread_cjk
from test_leak40_views import CTX, FULL

FW = {c: chr(ord(c) + 0xFEE0) for c in "0123456789abcdefABCDEFghijklmnopqrstuvwxyzGHIJKLMNOPQRSTUVWXYZ%+/="}
MATH_DIGITS = {str(d): chr(0x1D7CE + d) for d in range(10)}


def _fw(text: str, only: str | None = None) -> str:
    return "".join(FW[c] if c in FW and (only is None or c in only) else c for c in text)


HEX = FULL.encode().hex()
DISGUISES = {
    "hexfw": "- 样例：" + _fw(HEX),
    "hexdigfw": "- 样例：" + _fw(HEX, only="0123456789"),
    "hexmath": "- 样例：" + "".join(MATH_DIGITS.get(c, c) for c in HEX),
    "b64fw": "- 样例：" + _fw(base64.b64encode(FULL.encode()).decode()),
    "pctfw": "- " + _fw(urllib.parse.quote(FULL)),
    "pctfwsign": "- " + urllib.parse.quote(FULL).replace("%", "％"),
}


@pytest.mark.parametrize("name", sorted(DISGUISES))
def test_fullwidth_and_math_spellings_of_an_encoding_are_read(name: str) -> None:
    found = scan_leaks(DISGUISES[name], CTX)
    assert any("holdout-taxi-hailing-00" in f.source for f in found), [str(f) for f in found]


def test_lookalikes_become_ascii_and_chinese_punctuation_stays():
    assert ascii_lookalikes("ｅ４ｂ𝟎％＋") == "e4b0%+"
    assert ascii_lookalikes("从码头，车多久能到？（8号）") == "从码头，车多久能到？（8号）"
    assert opaque_runs("- 样例：" + _fw(base64.b64encode(bytes(range(200, 240))).decode()))  # unreadable: L2


def _vig(s: str, key: list[int]) -> str:
    return "".join(chr(ord(c) + key[i % len(key)]) for i, c in enumerate(s))


def _atbash(s: str) -> str:
    return "".join(chr(0x9FFF - (ord(c) - 0x4E00)) if "\u4e00" <= c <= "\u9fff" else c for c in s)


OTHER = "从球馆打车去中山公园要多少钱，车多久能到？（9号）"
CIPHERS = {  # QA 44 F3: per-character ciphers of a held-out query no view decodes
    "vigenere": _vig(FULL, [1, 2]),
    "atbash": _atbash(FULL),
    "pairswap": "".join(FULL[i + 1] + FULL[i] if i + 1 < len(FULL) else FULL[i] for i in range(0, len(FULL), 2)),
    "interleave": "".join(a + b for a, b in zip(FULL, OTHER)),
    "blockshift": "".join(chr(ord(c) + 1 + i // 8) for i, c in enumerate(FULL)),
}


@pytest.mark.parametrize("name", sorted(CIPHERS))
def test_a_line_of_enciphered_chinese_is_unreadable_text(name: str) -> None:
    assert unread_cjk("- 样例：" + CIPHERS[name]), CIPHERS[name]


@pytest.mark.parametrize("line", [
    "- 输入：\"明天早上叫车去公司\" → 先估价，再请用户确认后下单。",
    "- 常见线路：人民广场→虹桥火车站、静安寺→浦东机场（高峰期多预留时间）",
    "周五晚7点甬府静安店5位，帮我查下有没有位",  # the least readable shipped line measured (0.28)
    "- 样例：从码头打车去新天地要多少钱，车多久能到？",
])
def test_ordinary_chinese_lines_are_readable(line: str) -> None:
    assert not opaque_runs(line) and not unread_cjk(line)


B64 = base64.b64encode(FULL.encode()).decode()
B32 = base64.b32encode(FULL.encode()).decode()
SHORT = {  # QA 44 F2: a stream in pieces under 8 characters
    "b64p4_spaces": "- 样例：" + " ".join(B64[i:i + 4] for i in range(0, len(B64), 4)),
    "b64p4_dashes": "- 样例：" + "-".join(B64[i:i + 4] for i in range(0, len(B64), 4)),
    "b32p4": "- 样例：" + " ".join(B32[i:i + 4] for i in range(0, len(B32), 4)),
}


@pytest.mark.parametrize("name", sorted(SHORT))
def test_a_stream_in_short_pieces_is_joined_and_read(name: str) -> None:
    found = scan_leaks(SHORT[name], CTX)
    assert any("holdout-taxi-hailing-00" in f.source for f in found), [str(f) for f in found]


def test_ordinary_short_words_are_not_joined_into_a_finding():
    for line in ("- Book a table for two at 7pm on Fri 12 Dec, near the bay", "- Track 1Z84 X7W9 0391 7726 for me"):
        assert not scan_leaks(line, CTX)
