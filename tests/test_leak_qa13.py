"""QA pass qa13 TRUST-3, TRUST-4 and TRUST-6: held-out values that passed the leak scan.

TRUST-3: a holdout or final_audit number (58260, 4417, 6602, 2291...) was not distinctive unless the
patch copied the whole fact, so it published plain, with separators, in words (English, French),
digit by digit or split over a line; a reordered fact ("Tuesday appointment moved, Brightwater")
published too. TRUST-4: the same text reached the next proposer through the rejected-edit buffer
and a reviewer's comment. TRUST-6: a GitHub token split by spaces inside a code span published.
The repros are the QA's exact strings (/tmp/qa13/make_sets.py, proposals/*.json), each with a
negative twin; the shipped skills and markdown are measured for false findings (0).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from skillforge.evaluation.datasets import read_set
from skillforge.evolution import memory
from skillforge.evolution.check import check_candidate, eval_text
from skillforge.rules.leaks import EvalText, LeakContext, scan_leaks
from skillforge.rules.memory import tried_line
from skillforge.rules.secrets import SECRET_PATTERNS, joined_tokens
from skillforge.rules.textnorm import fold, visible
from skillforge.state.evaluate import Case, EvalSet, SetMeta
from skillforge.state.evolve import Candidate, CandidateVerdict, PatchFormatName, RejectedEdit

REPO = Path(__file__).resolve().parents[1]
SKILL = "email-sender"
HELD = {  # the QA's holdout and final_audit cases: (id, partition, query, subject = fact and fixture)
    "holdout-email-00": ("holdout", "email Halvorsen Logistics about invoice 73019 being overdue",
                         "Invoice 73019 overdue reminder"),
    "holdout-email-01": ("holdout", "tell the landlord the lease renewal for 4417 Juniper Court is signed",
                         "Lease renewal 4417 Juniper Court signed"),
    "holdout-email-02": ("holdout", "send the Ostrava depot our tender bid number 58260", "Tender bid 58260 submitted"),
    "holdout-email-03": ("holdout", "email Brightwater clinic to move my appointment to Tuesday afternoon",
                         "Brightwater appointment moved to Tuesday"),
    "holdout-email-04": ("holdout", "ask Marigold Outfitters about refund 91347 for my jacket",
                         "Refund 91347 for the quilted jacket"),
    "final-email-00": ("final_audit", "email Quenby Farms to cancel the weekly vegetable box 6602",
                       "Cancel vegetable box 6602"),
    "final-email-01": ("final_audit", "write to Professor Lindqvist asking for thesis extension until March 14",
                       "Thesis extension request to March 14"),
    "final-email-02": ("final_audit", "email the Zephyr rowing club that I will miss regatta 2291", "Missing regatta 2291"),
    "repair-email-01": ("repair", "write to Tom that the Friday standup moves to 10am", "Standup moved to 10am"),
    "dev-email-09": ("dev", "email the office that parcel 31415 arrived", "Parcel 31415 arrived"),
}


def _case(cid: str) -> Case:
    _, query, subject = HELD[cid]
    return Case(id=cid, skill=SKILL, query=query, fixtures={"mail.draft": {"to": "x", "subject": subject}},
                expect={"must_include": [subject]})


def _ctx() -> LeakContext:
    cases = [_case(cid) for cid in HELD]
    return LeakContext(cases=tuple(EvalText(c.id, HELD[c.id][0], c.query, tuple(c.expect.must_include),
                                            json.dumps(c.fixtures)) for c in cases))


CTX = _ctx()


def _kinds(text: str, parent: str = "") -> set[tuple[str, str]]:
    return {(f.kind.value, f.evidence) for f in scan_leaks(text, CTX, parent=parent)}


# ---- TRUST-3: held-out numbers in any spelling -------------------------------------------------

NUMBER_LEAKS = [  # the QA's candidate lines, and the other spellings the brief names
    ('subject line "Tender bid 58260"', "58260"),
    ('subject line "Invoice 73019 overdue"', "73019"),
    ('subject line "Lease 4417 Juniper Court"', "4417"),
    ('subject line "Tender bid 58,260"', "58260"),
    ('"Tender bid 58.260 for the depot"', "58260"),
    ("Tender bid 58 260 for the depot", "58260"),
    ("Tender bid 58'260 for the depot", "58260"),
    ("Refund 91 347", "91347"),
    ("Refund #91 347", "91347"),
    ('"Juniper Ct. no. four thousand four hundred seventeen: renewal signed"', "4417"),
    ('"Cancel vegetable box sixty-six oh two"', "6602"),
    ("Tender bid five-eight-two-six-zero submitted", "58260"),
    ("invoice seventy-three thousand nineteen", "73019"),
    ("invoice soixante-treize mille dix-neuf", "73019"),
    ("Rechnung dreiundsiebzigtausendneunzehn", "73019"),
    ("factura setenta y tres mil diecinueve", "73019"),
    ("Халворсен Лоджистикс, счёт 73.019", "73019"),
    ('regatta 22\n"91" is the rest of the number', "2291"),
]


@pytest.mark.parametrize(("text", "number"), NUMBER_LEAKS)
def test_a_held_out_number_is_a_leak_in_any_spelling(text: str, number: str) -> None:
    assert ("held_out_number", number) in _kinds(text) or any(k in ("expected_fact", "fixture_constant")
                                                              for k, _ in _kinds(text)), _kinds(text)


def test_the_plain_held_out_number_alone_is_the_finding_with_its_source() -> None:
    (f,) = scan_leaks("- Mention the bid number, e.g. 58260.", CTX)
    assert (f.kind.value, f.evidence, f.source) == ("held_out_number", "58260", "holdout/holdout-email-02")


@pytest.mark.parametrize("text", [
    "- Mention the bid number, e.g. 58261.",          # another number
    "- Bid 5826 was sent",                             # a shorter one: whole numbers only
    "Use version v2.2.91 of the template",             # 2291 spelt with points is a version, not joined
    "Meet at 22:91",                                   # no space in the gap: not joined
    "- Ask about parcel 31415.",                       # a number a visible (dev) case holds
    "- Send it within 100 minutes to 20 people.",      # nothing held out
])
def test_a_number_held_out_text_does_not_hold_is_not_a_finding(text: str) -> None:
    assert not {k for k, _ in _kinds(text)} & {"held_out_number", "near_copy"}, _kinds(text)


def test_a_held_out_number_the_parent_already_holds_is_not_the_patchs_finding() -> None:
    parent = "## Examples\n- The depot's tender bid is 58260; quote it as given.\n"
    edited = "- The depot's tender bid is 58 260; quote it as given, with the subject line."
    assert ("held_out_number", "58260") in _kinds(edited)
    assert _kinds(edited, parent=parent) == set()


def test_a_round_number_counts_only_when_an_expected_fact_holds_it() -> None:
    ctx = LeakContext(cases=(EvalText("h1", "holdout", "book under 20,000 yen for 300 people", ("deposit 500",)),))
    assert scan_leaks("- budget: 20000 yen, 300 guests", ctx) == []
    assert [f.evidence for f in scan_leaks("- a deposit of five hundred", ctx)] == ["500"]


def test_two_digits_with_a_cjk_unit_count_and_a_date_does_not() -> None:
    ctx = LeakContext(cases=(EvalText("h1", "holdout", "从码头打车，约16分钟到，12号出发"),))
    assert [f.evidence for f in scan_leaks("- 司机大约 十六 分钟到", ctx)] == ["16分钟"]
    assert scan_leaks("- 12号的车", ctx) == []


def test_the_fold_reads_oh_and_hyphenated_digit_words() -> None:
    assert fold("box sixty-six oh two") == "box 6602"
    assert fold("five-eight-two-six-zero") == "58260"
    assert fold("oh no, call me at 5") == "oh no, call me at 5"


# ---- TRUST-3: near-copies of a held-out fact ----------------------------------------------------

@pytest.mark.parametrize(("text", "fact"), [
    ('- "Tuesday appointment moved, Brightwater"', "Brightwater appointment moved to Tuesday"),
    ("- Thesis extension request to 14 March", "Thesis extension request to March 14"),
    ("- Subject: Overdue reminder for invoice 73019", "Invoice 73019 overdue reminder"),
    ("- Bid 58260 was submitted", "Tender bid 58260 submitted"),           # 3 of 4 with the number
    ("- tender bid 5826 submitted", "Tender bid 58260 submitted"),         # 3 of 4 with the name Tender
])
def test_a_reordered_held_out_fact_is_a_near_copy(text: str, fact: str) -> None:
    assert ("near_copy", fact) in _kinds(text), _kinds(text)


@pytest.mark.parametrize("text", [
    "- Appointment moved? Ask which day.",                      # 2 of 4 content words
    "- Thesis extension\n- Keep it short.\n- request by email in March",  # two lines apart (side by side: qa14)
    "- Standup moved to Tuesday for the appointment",           # 3 of 4, but not the name Brightwater
])
def test_a_few_shared_words_are_not_a_near_copy(text: str) -> None:
    assert not {k for k, _ in _kinds(text)} & {"near_copy"}, _kinds(text)


def test_a_near_copy_the_parent_line_already_holds_is_not_the_patchs() -> None:
    parent = "- Brightwater appointment moved to Tuesday: confirm the time.\n"
    assert ("near_copy", "Brightwater appointment moved to Tuesday") in _kinds("- Tuesday appointment moved, Brightwater")
    assert _kinds("- Tuesday appointment moved, Brightwater", parent=parent) == set()


def test_the_evolve_check_calls_the_held_out_number_a_leak_and_spares_the_parents() -> None:
    parent = "---\nname: email-sender\ndescription: d\n---\n## Examples\n- Regatta 2291 mail: say you will miss it.\n"
    for line, verdict in (('- Bid mail → subject line "Tender bid 58,260"', CandidateVerdict.LEAK),
                          ("- Regatta 2291 mail: say you will miss it, with a subject line.", CandidateVerdict.PENDING)):
        cand = Candidate(id="r1c1", target=SKILL, patch="x", patch_format=PatchFormatName.FULL,
                         text=parent.replace("- Regatta 2291 mail: say you will miss it.\n", "") + line + "\n"
                         if verdict is CandidateVerdict.PENDING else parent + line + "\n", claimed_level=1)
        checked = check_candidate(cand, parent, SKILL, CTX, [])
        assert checked.verdict is verdict, checked.leaks


# ---- TRUST-4: the rejected-edit buffer ----------------------------------------------------------

QA_CHANGE = "+- Always state the subject line in the reply, e.g. Subject: Invoice 73019 overdue, or Lease 4417 Juniper Court."
QA_REASON = ("review: the proposer gave 2 candidate(s), fewer than 3; rejected in review: fails the Ostrava tender "
             "bid 58260 and Brightwater Tuesday appointment emails")


def _held_out_ctx() -> LeakContext:
    return LeakContext(cases=tuple(e for e in CTX.cases if e.partition in ("holdout", "final_audit")))


def test_the_buffers_scan_drops_the_qa_line_and_the_reviewers_comment() -> None:
    ctx = _held_out_ctx()
    line = tried_line(RejectedEdit(run_id="r", candidate_id="r1c1", fingerprint="f", patch_format="search_replace",
                                   verdict="FAILED_VALIDATION", rejected_by="review", reason=QA_REASON, change=QA_CHANGE))
    assert {"73019", "4417"} <= {f.evidence for f in scan_leaks(QA_CHANGE, ctx)}
    comment = {(f.kind.value, f.evidence) for f in scan_leaks(QA_REASON, ctx)}
    assert ("held_out_number", "58260") in comment
    assert ("near_copy", "Brightwater appointment moved to Tuesday") in comment
    assert scan_leaks(line, ctx)
    assert scan_leaks("- search_replace edit changed: +- Always state the subject line -> FAILED_VALIDATION: "
                      "review: rejected in review: too long", ctx) == []


def test_tried_before_leaves_the_qa_edit_out_of_the_next_prompt(workspace) -> None:
    sets = {p: EvalSet(meta=SetMeta(name=p, partition=p, skills=[SKILL]),
                       cases=[_case(cid) for cid in HELD if HELD[cid][0] == p]) for p in ("holdout", "final_audit")}
    base = {"target": SKILL, "patch": "p", "patch_format": PatchFormatName.SEARCH_REPLACE,
            "verdict": CandidateVerdict.FAILED_VALIDATION, "rejected_by": "review"}
    leaky = Candidate(id="r1c1", applied_diff=QA_CHANGE + "\n", notes=[QA_REASON.split("review: ", 1)[1]],
                      text="t1\n", **base)
    comment = Candidate(id="r1c2", applied_diff="+- Name the subject line.\n", text="t2\n",
                        notes=["rejected in review: fails the Ostrava tender bid 58260 emails"], **base)
    clean = Candidate(id="r1c3", applied_diff="+- Keep the reply short.\n", notes=["rejected in review: too long"],
                      text="t3\n", **base)
    memory.remember(workspace, SKILL, "run-1", [leaky, comment, clean])
    assert len(memory.read_rejected(workspace, SKILL)) == 3  # all three are remembered ...
    shown = memory.tried_before(workspace, SKILL, "run-2", sets)  # ... and only the clean one is shown
    assert len(shown) == 1 and "Keep the reply short" in shown[0], shown
    assert not any(x in "".join(shown) for x in ("73019", "4417", "58260", "Brightwater"))


# ---- TRUST-6: a secret split into chunks --------------------------------------------------------

SPLIT_TOKEN = "`ghp_4Xk9LmQ2 wR8sT1vY6bN3 cD5eF7gH0jK2lM4n`"


@pytest.mark.parametrize("text", [
    f'- "token?" → use {SPLIT_TOKEN} for the API',
    "- key: `ghp_4Xk9LmQ2wR8sT1vY6bN3\n  cD5eF7gH0jK2lM4n`",
    "- `sk-proj- abc123DEF456ghi789 JKL012mno345`",
    "- AKIA1234 5678ABCD9012",
])
def test_a_secret_split_by_spaces_or_a_line_break_is_a_leak(text: str) -> None:
    assert [f.kind.value for f in scan_leaks(text, LeakContext(cases=()))] == ["secret"], text


@pytest.mark.parametrize("text", [
    "- Use sk-learn 1.4 and v2 v3 of the API, then run step2 step3 step4.",
    "- `ghp_` tokens are secrets: never print one.",
    "- Model gpt4o and claude3 answer in 2 steps.",
])
def test_token_like_words_that_join_to_no_secret_shape_are_not_a_leak(text: str) -> None:
    assert scan_leaks(text, LeakContext(cases=())) == []


def test_the_unsplit_token_is_reported_once() -> None:
    found = scan_leaks(SPLIT_TOKEN.replace(" ", ""), LeakContext(cases=()))
    assert [(f.kind.value, f.source) for f in found] == [("secret", "GitHub token")]


def test_the_joined_secret_scan_finds_nothing_in_the_shipped_markdown() -> None:
    files = subprocess.run(["git", "ls-files", "*.md"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    assert len(files) > 20
    new = [(f, m.group(0)[:12]) for f in files for text in [visible((REPO / f).read_text(encoding="utf-8"))]
           for _, p in SECRET_PATTERNS for m in p.finditer(joined_tokens(text))]
    assert new == []


# ---- false findings on the shipped skills --------------------------------------------------------

def _shipped_cases() -> list[tuple[str, EvalText]]:
    out = []
    for path in sorted((REPO / "evaluation_sets").glob("*.json")):
        s = read_set(path)
        out += [(c.skill, eval_text(c, s.meta.partition.value)) for c in s.cases]
    return out


def test_the_new_rules_find_nothing_in_the_shipped_skills_and_fixtures() -> None:
    """Each SKILL.md (skills/, tests/fixtures/) scanned whole against the other skills' shipped sets:
    0 held-out numbers and near-copies; against its own sets with the live text as the parent: 0."""
    cases = _shipped_cases()
    files = sorted(REPO.glob("skills/*/SKILL.md")) + sorted(REPO.glob("tests/fixtures/**/SKILL.md"))
    new = {"held_out_number", "near_copy"}
    found = []
    for md in files:
        text = md.read_text(encoding="utf-8")
        other = LeakContext(cases=tuple(e for s, e in cases if s != md.parent.name))
        found += [(md.name, str(f)) for f in scan_leaks(text, other) if f.kind.value in new]
        own = LeakContext(cases=tuple(e for s, e in cases if s == md.parent.name))
        found += [(md.name, str(f)) for f in scan_leaks(text, own, parent=text) if f.kind.value in new]
    assert len(files) >= 30 and found == []
