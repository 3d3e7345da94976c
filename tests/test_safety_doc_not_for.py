"""docs/safety.md states what the not_for topic rule does (QA qa13 MESSAGE-2): a confirmation or
consent word in a not_for item is L3 (grave), another guarded topic such as timing is L2, and an
item with none of those words is not caught. The examples the page quotes are checked against
rules/directives.find_topic, so page and rule cannot drift apart silently."""

from __future__ import annotations

import re
from pathlib import Path

from skillforge.rules.directives import DirectiveKind, find_topic, guarded_topics

SAFETY = Path(__file__).resolve().parents[1] / "docs" / "safety.md"
TOPICS = guarded_topics(["Never send an email or delete a message without the user's explicit confirmation."])


def page() -> str:
    return " ".join(SAFETY.read_text(encoding="utf-8").split())


def test_the_page_no_longer_says_any_mention_in_not_for_is_l3():
    assert "any mention of it in not_for is L3" not in page()


def test_the_not_for_examples_on_the_page_behave_as_it_says():
    text = page()
    grave, plain, missed = ("a second round of approval before mail goes out",
                            "checking with the user before removing old mail", "asking the user about deleting")
    for example in (grave, plain, missed):
        assert f'"{example}"' in text, example
    assert re.search(r"In not_for.*?is L3.*?" + re.escape(grave), text)
    assert re.search(re.escape(plain) + r"\": 'before'\)", text) and "timing" in text
    d = find_topic(grave, TOPICS, removes_flow=True)
    assert d is not None and d.kind is DirectiveKind.TOUCHES_CONFIRMATION and d.grave
    d = find_topic(plain, TOPICS, removes_flow=True)
    assert d is not None and d.kind is DirectiveKind.GUARDED_TOPIC and not d.grave and "before" in str(d)
    assert find_topic(missed, TOPICS, removes_flow=True) is None
