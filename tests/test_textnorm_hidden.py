"""The pure rules behind issue 21 items 1 and 5: the leak scan's normal form (rules/textnorm.py) and
the characters a skill file must not carry (rules/hidden.py)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillforge.rules.hidden import added_hidden, hidden_characters
from skillforge.rules.textnorm import fold, visible


# ---- the normal form -------------------------------------------------------------------------

@pytest.mark.parametrize("disguised,plain", [
    ("ma\u200bch\u00adine\u2060", "machine"),
    ("\u2066espresso\u2069 \u202eenihcam\u202c", "espresso machine"),
    ("ѕеvеntу-thrее thousand and nineteen", "73019"),
    ("𝐞𝐬𝐩𝐫𝐞𝐬𝐬𝐨 ＥＳＰＲＥＳＳＯ", "espresso espresso"),
    ("c\u0336a\u0301f\u0308e", "cafe"),
    ("73,019 · 73 019 · 73\u202f019 · ７３０１９ · ٧٣٠١٩ · ⁷³⁰¹⁹ · 7 3 0 1 9", "73019 · 73019 · 73019 · 73019 · 73019 · 73019 · 73019"),
    ("**Espresso**\n  `machine`", "espresso machine"),
    ("七万三千零一十九 七三零一九 一万八千", "73019 73019 18000"),
    ("单号73019三天", "单号73019 3天"),
    ("ORD\u201088231", "ord-88231"),
])
def test_fold_sees_through_a_disguise(disguised: str, plain: str) -> None:
    assert fold(disguised) == fold(plain)


def test_fold_keeps_what_it_must_not_merge() -> None:
    assert fold("18 pounds") != fold("80 pounds")
    assert fold("room 12 and 345") == "room 12 and 345"  # a 3-digit group after 'and' is not a separator
    assert fold("poi_dtf_0317 18:30 v1.2.300") == "poi_dtf_0317 18:30 v1.2.300"
    assert fold("周六晚上", chinese_numerals=False) == "周六晚上" and fold("周六晚上") == "周6晚上"
    assert visible("Ig\u200bnore ALL") == "Ignore ALL"  # case and digits kept for case-sensitive patterns


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(st.one_of(st.characters(), st.sampled_from(list("零一二三四五六七八九十百千万亿两 ,0123456789"))), max_size=80))
def test_fold_never_raises_on_any_text(text: str) -> None:
    assert isinstance(fold(text), str) and isinstance(visible(text), str)


def test_fold_bounds_a_long_run_of_chinese_numerals() -> None:
    assert fold("一" * 5000) == "1" * 5000


# ---- hidden characters -----------------------------------------------------------------------

@pytest.mark.parametrize("text,found", [
    ("\ufeff---\r\nname: x\r\n", []),                          # BOM first, CRLF: encoding, not content
    ("tab\tand emoji 👩\u200d💻 ❤️\u200d🔥\n", []),               # ZWJ inside an emoji sequence
    ("a\u200bb\n", [(1, 2, "\u200b")]),
    ("ok\nmid\ufeffdle\n", [(2, 4, "\ufeff")]),                # a BOM that is not the first character
    ("line\r\x1b[2K\x1b[1A\n", [(1, 5, "\r"), (1, 6, "\x1b"), (1, 10, "\x1b")]),
    ("trailing CR\r", [(1, 12, "\r")]),
    ("c1 \x9b2J and DEL \x7f\n", [(1, 4, "\x9b"), (1, 16, "\x7f")]),
    ("bidi \u202e and tag \U000E0041 and zwj\u200din a word", [(1, 6, "\u202e"), (1, 16, "\U000E0041"), (1, 25, "\u200d")]),
])
def test_hidden_characters_edges(text: str, found: list[tuple[int, int, str]]) -> None:
    assert [(h.line, h.column, h.char) for h in hidden_characters(text)] == found


def test_added_hidden_blames_only_the_lines_a_patch_adds() -> None:
    parent = "---\nname: x\n---\nold\u200bline\n"
    assert added_hidden(parent, parent + "new line\n") == []
    (h,) = added_hidden(parent, parent + "new\u2060line\n")
    assert (h.line, h.label) == (5, "U+2060 WORD JOINER")
