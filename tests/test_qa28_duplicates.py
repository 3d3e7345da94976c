"""QA28 F1: a description contained whole in another, plus a few filler words, is a duplicate
(the not_for hint would put the skill's own job into its not_for); near-miss wordings are not."""

from __future__ import annotations

import pytest

from skillforge.rules.confusions import RankedCase, confusion_pairs, contained, same_description

HOTEL, HOSTEL = "Book a hotel room in a city for some nights.", "Book a hostel bed in a city for some nights."


@pytest.mark.parametrize(("a", "b", "dup"), [
    ("Cancel an existing expense report.", "Cancel an existing expense report quickly and reliably.", True),
    ("Cancel an existing recipe.", "Cancel an existing recipe quickly and reliably.", True),   # 3 extra on 4
    ("Summarize a recipe into key points.", "Summarize a recipe into key points quickly and reliably.", True),
    ("Cancel an existing expense report.", "Cancel, right now, an existing expense report.", True),   # words between
    ("Book a flight", "Book a flight and a hotel", True),   # 3 extra on 3: at the edge, still one
    ("Book a flight", "Book a flight and a hotel room", False),   # 4 extra on 3
    ("Translate text", "Translate text quickly", False),   # too short to tell
    (HOTEL, HOSTEL, False),   # a word differs: not contained, ratio under 0.9
    ("Cancel an existing expense report.", "Report an existing expense, then cancel it.", False),   # out of order
    ("Cancel an existing expense report.", "", False),
    ("Cancel an existing expense report.", None, False),
])
def test_same_description_edges(a: str, b: str | None, dup: bool) -> None:
    assert same_description(a, b) is dup
    assert same_description(b, a) is dup   # symmetric


def test_contained_needs_every_word_in_order() -> None:
    assert contained(["a", "b", "c"], ["x", "a", "y", "b", "c"])
    assert not contained(["a", "b", "c"], ["c", "b", "a", "x"])
    assert not contained(["a", "b", "c"], ["a", "b", "x", "y"])


def test_a_filler_twin_pair_is_a_duplicate_without_a_not_for_hint() -> None:
    cases = [RankedCase(f"cancel my expense report {i}", "expense-report-cancel", "expense-report-cancel-helper")
             for i in range(3)] + [RankedCase("cancel our expense report", "expense-report-cancel-helper", "expense-report-cancel")]
    pair, = confusion_pairs(cases, {"expense-report-cancel": "Cancel an existing expense report.",
                                    "expense-report-cancel-helper": "Cancel an existing expense report quickly and reliably."})
    out = pair.as_json()
    assert out["duplicate"] is True and out["not_for"] == [] and "duplicate each other" in out["hint"]
