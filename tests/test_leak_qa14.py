"""QA pass qa14 TRUST-3, TRUST-4 (split fact), TRUST-5, TRUST-6 and MESSAGE-3 (a year).

TRUST-3: a held-out number published as `58·260`, in Devanagari digits (the confusable table read
Devanagari zero '०' as the letter 'o'), as `5-8-2-6-0`, "58 thousand 260" and as one German compound
(`visible` dropped the umlaut of "fünf", which text2num then did not know). TRUST-4: a fact split
over two consecutive lines. TRUST-5: the same spellings in a reviewer's comment reached the next
proposer prompt. TRUST-6: a password's tail after `&` was sent to the proposer; a key cut in two in
a set's query was sent whole. MESSAGE-3: a year in a holdout query refused a harmless example.
The cases are qa13's (test_leak_qa13.HELD: the QA's sets), each spelling with a negative twin.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_leak_qa13 import HELD, SKILL, _case, _held_out_ctx, _kinds

from skillforge.evolution import memory
from skillforge.rules.casetext import case_warnings, for_proposer
from skillforge.rules.leaknumbers import number_readings
from skillforge.rules.leaks import EvalText, LeakContext, scan_leaks
from skillforge.rules.redact import redact
from skillforge.rules.secrets import credential_matches
from skillforge.rules.textnorm import fold
from skillforge.state.evaluate import Case, EvalSet, SetMeta
from skillforge.state.evolve import Candidate, CandidateVerdict, PatchFormatName

REPO = Path(__file__).resolve().parents[1]

# ---- TRUST-3: more spellings of a held-out number ------------------------------------------------

SPELLINGS = [
    'subject line "Ref 58·260"',                          # middle dot
    "Ref 58•260", "Ref 58∙260", "Ref 58\u2009260", "Ref 58\u202f260",  # bullet, bullet operator, thin/narrow space
    'subject line "Ref ५८२६०"',                           # Devanagari
    "Ref ৫৮২৬০", "Ref ๕๘๒๖๐", "Ref ༥༨༢༦༠",                  # Bengali, Thai, Tibetan
    "Ref 5-8-2-6-0", "Ref 5.8.2.6.0", "Ref 5/8/2/6/0",
    "Ref 58 thousand 260", "Ref 58 thousand two hundred sixty", "Ref 58 Tausend 260",
    'subject line "Ref achtundfünfzigtausendzweihundertsechzig"',
    "Ref Achtundfuenfzigtausendzweihundertsechzig",       # the umlaut written out
]


@pytest.mark.parametrize("text", SPELLINGS)
def test_a_held_out_number_is_a_leak_in_these_spellings_too(text: str) -> None:
    assert ("held_out_number", "58260") in _kinds(text), _kinds(text)


@pytest.mark.parametrize("text", [
    "Ref 58·261", "Ref ५८२६१", "Ref 5-8-2-6-1", "Ref 58 thousand 261", "achtundfünfzigtausendzweihunderteinundsechzig",
    "Use v1.4.0 or 2.2.9 of the template",   # versions: fewer than four single digits
    "Send it on 2025-06-20 at 10:30",         # a date
    "Mon · Tue · Wed at 9 · 10",              # a middle dot between words and short numbers
])
def test_a_number_the_held_out_text_does_not_hold_is_not_read_into_one(text: str) -> None:
    assert not {k for k, _ in _kinds(text)} & {"held_out_number", "near_copy"}, _kinds(text)


def test_a_digit_of_any_script_stays_a_digit_in_the_fold() -> None:
    assert fold("५८२६०") == fold("٥٨٢٦٠") == fold("58260") == "58260"
    assert fold("०") == "0"


def test_dutch_and_russian_words_are_not_read() -> None:
    """The parser does not read them (text2num has no Dutch, Russian or Polish); the scan catches them
    by writing the protected numbers out in those languages instead (rules/leakgen.py, test_leak_qa15)."""
    assert "58260" not in number_readings("achtenvijftigduizend tweehonderdzestig")
    assert "58260" not in number_readings("пятьдесят восемь тысяч двести шестьдесят")


# ---- MESSAGE-3: a year only a query or fixture holds ---------------------------------------------

def test_a_year_in_a_held_out_query_alone_is_not_a_finding() -> None:
    ctx = LeakContext(cases=(EvalText("holdout-email-05", "holdout", "send the 2025 plan to Lee", ("Plan for Lee",),
                                      json.dumps({"mail": {"year": "1999"}})),))
    assert scan_leaks('- "mail the 2025 plan to Kim" → show the draft and ask', ctx) == []
    assert scan_leaks("- archive mails from 1999", ctx) == []


def test_a_year_an_expected_fact_holds_is_still_a_finding() -> None:
    ctx = LeakContext(cases=(EvalText("h1", "holdout", "send the plan to Lee", ("Plan 2025 for Lee",)),))
    assert [(f.kind.value, f.evidence) for f in scan_leaks("- the 2025 plan", ctx)] == [("held_out_number", "2025")]


def test_a_non_year_four_digit_number_in_a_query_is_still_a_finding() -> None:
    ctx = LeakContext(cases=(EvalText("h1", "holdout", "send plan 2291 to Lee", ("Plan for Lee",)),))
    assert [f.evidence for f in scan_leaks("- plan 2291", ctx)] == ["2291"]


# ---- TRUST-4: a fact split over two consecutive added lines -------------------------------------

def test_a_fact_split_over_two_consecutive_lines_is_a_near_copy() -> None:
    text = '- "depot" → subject line "Brightwater appointment"\n  … continues "moved to Tuesday …"'
    assert ("near_copy", "Brightwater appointment moved to Tuesday") in _kinds(text), _kinds(text)


def test_a_split_fact_the_parent_already_holds_over_two_lines_is_not_the_patchs() -> None:
    parent = "- Brightwater appointment\n  moved to Tuesday: confirm the time.\n"
    text = '- subject "Brightwater appointment"\n  "moved to Tuesday"'
    assert ("near_copy", "Brightwater appointment moved to Tuesday") in _kinds(text)
    assert not {k for k, _ in _kinds(text, parent=parent)} & {"near_copy"}


def test_words_three_lines_apart_are_not_joined() -> None:
    text = "- Brightwater appointment\n- Keep it short.\n- moved to Tuesday"
    assert not {k for k, _ in _kinds(text)} & {"near_copy"}, _kinds(text)


# ---- TRUST-5: the reviewer's comment in the rejected-edit buffer -------------------------------

QA_COMMENT = ("rejected in review: fails the tender bid 58·260 (५८२६० in the Hindi form), the Juniper Court lease "
              "and Professor Lindqvist")


def test_the_buffers_scan_finds_the_disguised_numbers_of_the_qa_comment() -> None:
    ctx = _held_out_ctx()
    for part in ("fails the bid 58·260", "(५८२६० in the Hindi form)"):
        assert [(f.kind.value, f.evidence) for f in scan_leaks(part, ctx)] == [("held_out_number", "58260")], part


def test_tried_before_leaves_the_qa_comment_out_of_the_next_prompt(workspace) -> None:
    sets = {p: EvalSet(meta=SetMeta(name=p, partition=p, skills=[SKILL]),
                       cases=[_case(cid) for cid in HELD if HELD[cid][0] == p]) for p in ("holdout", "final_audit")}
    base = {"target": SKILL, "patch": "p", "patch_format": PatchFormatName.SEARCH_REPLACE,
            "verdict": CandidateVerdict.FAILED_VALIDATION, "rejected_by": "review"}
    dot = Candidate(id="r1c1", applied_diff="+- Name the subject line.\n", text="t1\n",
                    notes=["rejected in review: fails the tender bid 58·260"], **base)
    hindi = Candidate(id="r1c2", applied_diff="+- Quote the reference.\n", text="t2\n",
                      notes=["rejected in review: the ५८२६० mail is wrong"], **base)
    clean = Candidate(id="r1c3", applied_diff="+- Keep the reply short.\n", notes=["rejected in review: too long"],
                      text="t3\n", **base)
    memory.remember(workspace, SKILL, "run-1", [dot, hindi, clean])
    shown = memory.tried_before(workspace, SKILL, "run-2", sets)
    assert len(shown) == 1 and "Keep the reply short" in shown[0], shown


# ---- TRUST-6: what a hand-written set's case shows a proposer -----------------------------------

def test_a_password_is_redacted_whole_past_an_ampersand() -> None:
    query = "my mailbox password is Tr0ub4dor&3Xq, log in and email Jo the plan"
    assert for_proposer(query) == "my mailbox password is [REDACTED:credential-assignment], log in and email Jo the plan"
    assert [m.group("value") for m in credential_matches(query, strict=True)] == ["Tr0ub4dor&3Xq"]


@pytest.mark.parametrize(("text", "value"), [
    ("https://example.com/?token=abc123XYZ&user=bob", "abc123XYZ"),   # a URL's next parameter ends it
    ("password=hunter2; then log in", "hunter2"),                     # trailing punctuation is not the value
    ("PGPASSWORD=s3cr3t|| exit", "s3cr3t"),
])
def test_a_bare_value_still_ends_at_a_separator_before_a_name_or_at_its_end(text: str, value: str) -> None:
    assert redact(text)[0] == text.replace(value, "[REDACTED:credential-assignment]", 1)


SPLIT_KEY = "send the key: sk-proj-Q8vN3xLr7TzW 2mKp9YbC4dHs6FjA1uE5gR0tViX and email Jo"


def test_a_key_cut_in_two_in_a_set_query_is_redacted_and_warned_about() -> None:
    assert for_proposer(SPLIT_KEY) == "send the key: [REDACTED:openai-style-key] and email Jo"
    case = Case(id="repair-email-15", skill=SKILL, query=SPLIT_KEY, expect={"must_include": ["Key for Jo"]})
    assert case_warnings(case) == ["its query has a secret shape (openai-style-key (split)): a proposer sees it redacted"]


def test_token_like_words_are_not_joined_into_a_redaction() -> None:
    text = "Use sk-learn 1.4 and v2 v3 of the API, then run step2 step3 step4."
    assert for_proposer(text) == text


def test_a_key_with_words_between_its_parts_is_not_joined() -> None:
    """The QA's own phrasing ("first <part> and then <part>") is not read as one key: documented."""
    text = "send the key in two parts: first sk-proj-Q8vN3xLr7TzW and then 2mKp9YbC4dHs6FjA1uE5gR0tViX"
    assert for_proposer(text) == text
