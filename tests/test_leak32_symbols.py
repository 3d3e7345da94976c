"""Symbols for letters (rules/leakviews.py leet-read, leak pass 32): `M@rigold`, `$ilverton`,
`L!ndqvist`, `|ake`, `Z€phyrine` inside a word are read as the letters they look like, in the two
leet views (`!` and `|` as i in one and l in the other, as `1`). What is not a word spelled with
symbols stays as written: e-mail addresses, prices (`$5`), shell variables' meaning aside (`$HOME`
reads `sHOME`, which copies nothing), `!=`, `C++`, markdown tables, a `!` ending a sentence."""

from __future__ import annotations

import json

import pytest

from skillforge.rules.leaks import EvalText, LeakContext, scan_leaks
from skillforge.rules.leakviews import leak_views, leet_read

CTX = LeakContext(cases=(
    EvalText("holdout-bike-01", "holdout", "Is Lindqvist Terrace dock full today?", (), json.dumps({"station": "Lindqvist Terrace"})),
    EvalText("holdout-bike-03", "holdout", "bikes near Marigold Crescent please", (), json.dumps({"station": "Marigold Crescent"})),
    EvalText("holdout-bike-04", "holdout", "any docks at Zephyrine Plaza?", (), json.dumps({"station": "Zephyrine Plaza"})),
    EvalText("holdout-bike-05", "holdout", "return it at Silverton Lake", (), json.dumps({"station": "Silverton Lake"})),
))

DISGUISES = {
    "at": ("- e.g. M@rigold Crescent", "holdout-bike-03"),
    "dollar_and_at": ("- e.g. M@rigold Cre$cent", "holdout-bike-03"),
    "bang": ("- e.g. L!ndqvist Terrace", "holdout-bike-01"),
    "bang_twice": ("- e.g. L!ndqv!st Terrace", "holdout-bike-01"),
    "pipe": ("- e.g. |indqvist Terrace", "holdout-bike-01"),
    "dollar_first": ("- e.g. $ilverton |ake", "holdout-bike-05"),
    "euro": ("- e.g. Z€phyrin€ Plaza", "holdout-bike-04"),
    "mixed_with_digits": ("- e.g. M@r1g0ld Cr3$cent", "holdout-bike-03"),
}


@pytest.mark.parametrize("name", DISGUISES)
def test_symbols_inside_a_word_are_read_as_letters(name: str) -> None:
    text, case = DISGUISES[name]
    found = scan_leaks(text, CTX)
    assert any(f.view == "leet-read" and case in f.source for f in found), [str(f) for f in found]


def test_what_the_leet_views_read_and_leave() -> None:
    assert leet_read("M@rigold $ilverton L!ndqvist |ake Z€phyrin€", "i") == "Marigold silverton Lindqvist lake Zephyrine"
    assert leet_read("L!ndqvist |ake", "l") == "Llndqvist iake"  # the other reading of each
    for text in ("write to bob@example.org or ops@bikes.example.com", "costs $5 or 12€", "a != b and !x",
                 "Hello! Fine!", "C++ and C#", "| a | b |\n|---|---|", "done."):
        assert leet_read(text, "i") == text, text


CLEAN = [
    "- Mail support@bike-share.example.org or call; prices from $5, 3€ a day.",
    "- Run `echo $HOME`, `${VAR:-x}` and `if [ \"$x\" != \"\" ]`; $USER owns $TMPDIR.",
    "- | station | docks |\n  |---------|-------|\n  | A | 3 |",
    "- Never say it's full! Ask again!! Use C++ or C# for the client, a+b for sums.",
    "- Tag @maintainers in the issue; decorators like @property are fine.",
    "- Use !important sparingly; `a|b` in a regex means a or b.",
]


@pytest.mark.parametrize("text", CLEAN)
def test_ordinary_symbols_are_not_flagged(text: str) -> None:
    assert scan_leaks(text, CTX) == []


def test_no_leet_view_without_a_symbol_or_digit_beside_a_letter() -> None:
    assert [k for k, _ in leak_views("- Always say how many docks are free, $5 a day.")] == []
