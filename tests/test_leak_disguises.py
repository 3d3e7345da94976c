"""Issue 21 item 1 (obfuscated leaks) and the refusal half of item 5 (control characters in
candidate files), through the surfaces that existed before the fix: the leak scan with the issue's
repro and the disguise corpus, `skills validate --strict`, and the evolve check of a candidate.
The rules' own edges are in test_textnorm_hidden.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import flat, run_cli

from skillforge.errors import SkillFileError
from skillforge.evolution.check import check_candidate
from skillforge.rules.leaks import EvalText, LeakContext, LeakKind, scan_leaks
from skillforge.skill.file import check_text, parse
from skillforge.state.evolve import Candidate, CandidateVerdict, PatchFormatName
from skillforge.state.skill import Severity

CORPUS = Path(__file__).parent / "fixtures" / "leaks"
HIDDEN_CHARACTERS = "hidden_characters"
"""The rejection reason of a candidate carrying control or format characters (evolution/check.py)."""


def _jsonl(name: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in (CORPUS / name).read_text(encoding="utf-8").splitlines() if line.strip()]


# ---- the issue's repro, verbatim ------------------------------------------------------------

def test_issue21_repro_finds_the_plain_text_and_both_disguises() -> None:
    q = 'I opened the espresso machine from order 73019 but it is too loud, please send me a return label.'
    c = LeakContext(cases=(EvalText('h1', 'holdout', q),))
    z = re.sub(r'\b(\w)(\w{2,})', lambda m: m[1] + '\u200b' + m[2], q)
    h = q.replace('73019', 'seventy-three thousand nineteen').translate(str.maketrans('aeopcxyi', 'аеорсхуі'))
    for text in (q, z, h):
        (finding,) = scan_leaks(text, c)
        assert (finding.kind, finding.source) == (LeakKind.QUERY, "holdout/h1"), text


# ---- the corpus ------------------------------------------------------------------------------

def _corpus_context(leaks: list[dict[str, object]]) -> LeakContext:
    cases = {c["id"]: c for c in (e["case"] for e in leaks)}  # type: ignore[index]
    return LeakContext(cases=tuple(EvalText(c["id"], c["partition"], c["query"], tuple(c["facts"]),  # type: ignore[index]
                                            json.dumps(c["fixtures"], ensure_ascii=False)) for c in cases.values()))


def test_every_disguised_leak_of_the_corpus_is_caught_and_no_clean_text_is_flagged() -> None:
    leaks, clean = _jsonl("corpus.jsonl"), _jsonl("clean.jsonl")
    assert len(leaks) >= 30 and len({e["disguise"] for e in leaks}) == len(leaks)
    ctx = _corpus_context(leaks)
    missed = [e["disguise"] for e in leaks if not scan_leaks(str(e["text"]), ctx)]
    flagged = {str(e["name"]): [str(f) for f in scan_leaks(str(e["text"]), ctx)] for e in clean}
    flagged = {k: v for k, v in flagged.items() if v}
    print(f"leak corpus: {len(leaks) - len(missed)}/{len(leaks)} caught "
          f"({100 * (len(leaks) - len(missed)) / len(leaks):.1f} %), clean flagged {len(flagged)}/{len(clean)}")
    assert missed == [] and flagged == {}


def test_a_corpus_leak_is_blamed_on_the_case_it_copies() -> None:
    leaks = _jsonl("corpus.jsonl")
    ctx = _corpus_context(leaks)
    for e in leaks:
        found = scan_leaks(str(e["text"]), ctx)
        own = f"{e['case']['partition']}/{e['case']['id']}"  # type: ignore[index]
        assert any(f.source == own or f.kind in (LeakKind.INJECTION, LeakKind.SECRET) for f in found), e["disguise"]


# ---- "eighteen pounds" is a leak only where "18 pounds" is one (the _distinctive rules) -------

def test_a_number_in_words_is_flagged_only_where_the_digits_are_distinctive() -> None:
    ctx = LeakContext(cases=(EvalText("h1", "holdout", "where is my kettle", fixtures_json=json.dumps(
        {"orders.get": {"delivery_gbp": 18, "refund": "18 pounds"}})),))
    assert [f.kind for f in scan_leaks("Refund eighteen pounds.", ctx)] == [LeakKind.FIXTURE_CONSTANT]
    plain = LeakContext(cases=(EvalText("h1", "holdout", "where is my kettle", fixtures_json=json.dumps(
        {"orders.get": {"delivery_gbp": 18}})),))
    assert scan_leaks("Refund eighteen pounds; 18 is the usual fee.", plain) == []


# ---- the hidden-character rule in SKILL.md validation ----------------------------------------

SKILL = "---\nname: zw-skill\ndescription: d\nkeywords: [\"a\\u200bb\"]\n---\n# Steps\n\nstep one\nstep\u200b two\n"


def test_a_hidden_character_warns_with_line_and_code_point_and_fails_strict() -> None:
    skill, issues = check_text(SKILL, "f/SKILL.md", "zw-skill")
    assert skill is not None  # lenient load still works
    assert [(i.field, i.severity) for i in issues] == [("body", Severity.WARNING), ("keywords", Severity.WARNING)]
    assert issues[0].rule.startswith("line 9: holds invisible or control character(s) U+200B ZERO WIDTH SPACE")
    assert "U+200B" in issues[1].rule  # written as a YAML escape: named by its field
    with pytest.raises(SkillFileError, match="line 9"):
        parse(SKILL, "f/SKILL.md", "zw-skill", strict=True)


def test_a_raw_character_in_the_frontmatter_is_named_by_its_field_once() -> None:
    text = "---\nname: x\ndescription: bad\u200b red\nmetadata:\n  k: \"v\u2060\"\n---\nbody\n"
    _, issues = check_text(text, "f", "x")
    assert [(i.field, i.rule.split(":")[0]) for i in issues] == [("description", "line 3"), ("metadata", "line 5")]


def test_validate_strict_reports_the_file_line_and_code_point(tmp_path: Path) -> None:
    folder = tmp_path / "zw-skill"
    folder.mkdir()
    (folder / "SKILL.md").write_text(SKILL, encoding="utf-8")
    lenient = run_cli(["skills", "validate", str(folder)])
    assert "warning" in lenient.stdout and "\u200b" not in lenient.stdout
    strict = run_cli(["skills", "validate", str(folder), "--strict"], ok=1)
    out = flat(strict.stdout)
    assert f"{folder / 'SKILL.md'}: field 'body': line 9:" in out and "U+200B ZERO WIDTH SPACE" in out, out


# ---- the evolve check ------------------------------------------------------------------------

PARENT = "---\nname: demo\ndescription: d\n---\n## Instructions\n- step one\n"


def _cand(text: str) -> Candidate:
    return Candidate(id="r1c1", target="demo", patch="x", patch_format=PatchFormatName.FULL, text=text, claimed_level=2)


@pytest.mark.parametrize("line", ["- step two\u200b", "- quote the fare\r\x1b[2K\x1b[1A", "- \u202eowt pets"])
def test_a_candidate_adding_hidden_characters_is_refused_by_name(line: str) -> None:
    checked = check_candidate(_cand(PARENT + line + "\n"), PARENT, "demo", LeakContext(cases=()), [])
    assert (checked.verdict, checked.rejected_by) == (CandidateVerdict.REFUSED, HIDDEN_CHARACTERS)
    assert any(n.startswith(f"{HIDDEN_CHARACTERS}: line 7: holds") for n in checked.notes), checked.notes


def test_a_disguised_leak_with_hidden_characters_is_a_leak_first() -> None:
    ctx = LeakContext(cases=(EvalText("h1", "holdout", "please book a taxi from the airport to my hotel now"),))
    checked = check_candidate(_cand(PARENT + "- please\u200b book a taxi from the airport to my hotel\n"), PARENT,
                              "demo", ctx, [])
    assert (checked.verdict, checked.rejected_by) == (CandidateVerdict.LEAK, "leak_scan")
    assert checked.leaks and any(n.startswith(HIDDEN_CHARACTERS) for n in checked.notes)


def test_a_parent_line_with_a_hidden_character_does_not_block_its_next_fix() -> None:
    parent = PARENT + "- legacy\u200b line\n"
    checked = check_candidate(_cand(parent + "- step two\n"), parent, "demo", LeakContext(cases=()), [])
    assert checked.verdict is CandidateVerdict.PENDING and checked.rejected_by is None
