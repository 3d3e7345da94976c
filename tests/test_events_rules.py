"""rules/events.py at its edges: the effective projection (a mis-tap and its correction count once,
chains, later feedback, corrections of what the log does not show, private and unnumbered events
ignored, order and repeats do not matter) and which session ids and texts may be recorded."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillforge.events.projection import render
from skillforge.rules.events import (SESSION_MAX, TEXT_MAX, latest_verdict, parse_outcome, project,
                                     session_problem, text_problem)
from skillforge.state.events import Event, EventKind, FeedbackOutcome

GOOD, BAD, NEUTRAL = FeedbackOutcome.GOOD, FeedbackOutcome.BAD, FeedbackOutcome.NEUTRAL


def fb(seq, outcome, session="s", release="r1", skill="k", **kw):
    return Event(kind=EventKind.FEEDBACK, session_id=session, skill=skill, release_id=release, seq=seq,
                 outcome=outcome, at=f"t{seq}", **kw)


def corr(seq, corrects, outcome, session="s", release="r1", skill="k", **kw):
    return Event(kind=EventKind.CORRECTION, session_id=session, skill=skill, release_id=release, seq=seq,
                 outcome=outcome, corrects=corrects, at=f"t{seq}", **kw)


def used(seq, kind=EventKind.SKILL_USED, session="s", release="r1", skill="k"):
    return Event(kind=kind, session_id=session, skill=skill, release_id=release, seq=seq, at=f"t{seq}")


def tally(p, release="r1"):
    [t] = [t for t in p.releases if t.release_id == release]
    return t.good, t.bad, t.neutral


def test_empty_log_gives_an_empty_projection():
    p = project([])
    assert p.last_seq == 0 and p.verdicts == [] and p.releases == []


def test_a_mis_tap_and_its_correction_count_once():
    p = project([fb(1, BAD), corr(2, 1, GOOD)])
    [v] = p.verdicts
    assert (v.outcome, v.seq, v.decided_by, v.corrections) == (GOOD, 1, 2, 1)
    assert tally(p) == (1, 0, 0)


def test_a_correction_of_a_correction_goes_back_to_the_first_feedback():
    p = project([fb(1, BAD), corr(2, 1, GOOD), corr(3, 2, NEUTRAL)])
    [v] = p.verdicts
    assert (v.outcome, v.seq, v.decided_by, v.corrections) == (NEUTRAL, 1, 3, 2)
    assert tally(p) == (0, 0, 1)


def test_two_corrections_of_one_feedback_the_later_wins():
    [v] = project([fb(1, BAD), corr(2, 1, GOOD), corr(3, 1, NEUTRAL)]).verdicts
    assert v.outcome is NEUTRAL and v.decided_by == 3


def test_a_later_feedback_of_the_session_replaces_the_earlier():
    p = project([fb(1, BAD), fb(2, GOOD)])
    [v] = p.verdicts
    assert (v.outcome, v.seq) == (GOOD, 2) and tally(p) == (1, 0, 0)


def test_correcting_an_earlier_feedback_does_not_override_a_later_one():
    [v] = project([fb(1, BAD), fb(2, NEUTRAL), corr(3, 1, GOOD)]).verdicts
    assert (v.outcome, v.seq) == (NEUTRAL, 2)


def test_a_correction_of_an_unseen_seq_stands_alone():
    """The target is private (not in the public input) or unknown: the correction is the user's verdict."""
    p = project([corr(5, 4, GOOD)])
    [v] = p.verdicts
    assert (v.outcome, v.seq, v.corrections) == (GOOD, 5, 0)


def test_a_correction_of_a_later_seq_or_of_a_use_does_not_correct_it():
    p = project([used(1), corr(2, 1, BAD), corr(3, 4, GOOD), fb(4, NEUTRAL, session="t")])
    by_session = {v.session_id: v for v in p.verdicts}
    assert by_session["s"].outcome is GOOD and by_session["s"].seq == 3  # 2 stood alone, 3 replaced it
    assert by_session["t"].outcome is NEUTRAL and by_session["t"].corrections == 0


def test_sessions_and_releases_are_kept_apart():
    p = project([fb(1, BAD, session="a"), fb(2, GOOD, session="b"), fb(3, GOOD, session="a", release="r2"),
                 used(4), used(5, EventKind.TOOL_ERROR), used(6, release="r2")])
    assert tally(p, "r1") == (1, 1, 0) and tally(p, "r2") == (1, 0, 0)
    [r1] = [t for t in p.releases if t.release_id == "r1"]
    assert (r1.uses, r1.tool_errors) == (1, 1)
    assert latest_verdict(p, "a", "r1").outcome is BAD
    assert latest_verdict(p, "a", "r2").outcome is GOOD
    assert latest_verdict(p, "a", "r3") is None and latest_verdict(p, "a", "r1", skill="other") is None


def test_private_and_unnumbered_events_are_ignored():
    p = project([fb(1, BAD, private=True), fb(None, GOOD), corr(2, 1, GOOD, private=True)])
    assert p.verdicts == [] and p.releases == [] and p.last_seq == 0


def test_a_feedback_without_an_outcome_says_nothing():
    assert project([fb(1, None)]).verdicts == []


def test_a_repeated_seq_counts_once_the_first():
    [v] = project([fb(1, BAD), fb(1, GOOD)]).verdicts
    assert v.outcome is BAD


def test_a_release_none_is_its_own_release():
    p = project([fb(1, BAD, release=None), fb(2, GOOD)])
    assert {(t.release_id, t.bad, t.good) for t in p.releases} == {(None, 1, 0), ("r1", 0, 1)}


@given(st.lists(st.tuples(st.sampled_from(["fb", "corr", "use", "err"]), st.sampled_from(list(FeedbackOutcome)),
                          st.sampled_from(["a", "b"]), st.sampled_from(["r1", "r2"]), st.integers(1, 30)),
                max_size=30), st.randoms())
def test_the_projection_is_the_same_bytes_in_any_order(spec, rnd):
    events = []
    for seq, (kind, outcome, session, release, target) in enumerate(spec, 1):
        if kind == "fb":
            events.append(fb(seq, outcome, session, release))
        elif kind == "corr":
            events.append(corr(seq, target, outcome, session, release))
        else:
            events.append(used(seq, EventKind.SKILL_USED if kind == "use" else EventKind.TOOL_ERROR, session, release))
    shuffled = list(events)
    rnd.shuffle(shuffled)
    p = project(events)
    assert render(p) == render(project(shuffled))
    assert len({(v.skill, v.release_id, v.session_id) for v in p.verdicts}) == len(p.verdicts)
    assert sum(t.good + t.bad + t.neutral for t in p.releases) == len(p.verdicts)


@pytest.mark.parametrize("value,ok", [
    ("s", True), ("x" * SESSION_MAX, True), ("会话-1 with spaces", True),
    ("", False), ("   ", False), ("x" * (SESSION_MAX + 1), False), ("a\x00b", False), ("a\nb", False),
    ("a\x1bb", False), ("a\x85b", False), ("a\u200bb", False), ("a\u2028b", False), (None, False), (7, False)])
def test_session_ids(value, ok):
    assert (session_problem(value) is None) is ok


@pytest.mark.parametrize("value,ok", [
    (None, True), ("", True), ("two\nlines\tand a tab", True), ("x" * TEXT_MAX, True),
    ("x" * (TEXT_MAX + 1), False), ("bell\x07", False), ("esc\x1b[2J", False)])
def test_comments(value, ok):
    assert (text_problem("comment", value) is None) is ok


@pytest.mark.parametrize("value,expected", [
    ("good", GOOD), (" BAD ", BAD), ("neutral", NEUTRAL), (GOOD, GOOD), ("great", None), ("", None), (1, None)])
def test_outcomes(value, expected):
    assert parse_outcome(value) is expected


def test_random_log_still_counts_each_session_once():
    rnd = random.Random(7)
    events = []
    for seq in range(1, 201):
        if rnd.random() < 0.3 and seq > 1:
            events.append(corr(seq, rnd.randint(1, seq - 1), rnd.choice(list(FeedbackOutcome)),
                               session=rnd.choice("abc")))
        else:
            events.append(fb(seq, rnd.choice(list(FeedbackOutcome)), session=rnd.choice("abc")))
    p = project(events)
    assert len(p.verdicts) == 3 and sum(tally(p)) == 3
