"""QA 45 F1, F2, F3, F7, F8: one list of secret shapes (the redaction's) for the leak scan and the
publish scan; every shape the harvest redacts refused by `cases review --edit` and in a review note;
the set loader's warning naming every kind a proposer sees redacted; a failure report that does not
repeat a secret; Chinese resident ID numbers redacted (GB 11643 check character)."""

from __future__ import annotations

import base64
import json

import pytest
from conftest import REPO, flat, run_cli
from test_qa15_files import SKILL as LIVE_SKILL, live_copy, releases, write
from test_qa22_cases_review import staged_case

from skillforge.evaluation.datasets import read_set, set_files
from skillforge.evolution.archive import write_failures
from skillforge.rules.casetext import case_warnings, for_proposer
from skillforge.rules.leaks import LeakContext, LeakKind, scan_leaks
from skillforge.rules.redact import _LABELS, SCAN_KINDS, cn_id, redact, residue
from skillforge.rules.secrets import SECRET_PATTERNS
from skillforge.rules.skillfiles import scan_text
from skillforge.sessions import review as rv
from skillforge.sessions.staging import read_staged, write_staged
from skillforge.state.evaluate import Case, Expectation
from skillforge.state.evolve import Candidate, CandidateVerdict, EvolveState, PatchFormatName
from skillforge.state.sessions import StagedFile
from skillforge.testing.evolve_world import SKILL, new_workspace

JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJxYTQ1In0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
B64_PAIR = base64.b64encode(b"admin:QA45patchB64pw!").decode()  # YWRtaW46UUE0NXBhdGNoQjY0cHch
CN_ID = "11010519491231002X"  # GB 11643's own example: check character X
NEW_KINDS = {_LABELS.get(kind, kind) for kind, _, _ in SCAN_KINDS} - {"credential assignment", *(label for label, _ in SECRET_PATTERNS)} | {"base64-credential"}


def secrets_in(text: str) -> list[tuple[str, str]]:
    return [(f.source, f.evidence) for f in scan_leaks(text, LeakContext(cases=())) if f.kind is LeakKind.SECRET]


@pytest.mark.parametrize("line,kind", [
    (f'- 输入："token {JWT}" → 只估价。', None),  # named by the key word before it, or as a JWT
    (f"- 示例：{JWT}", "jwt"),
    (f"- 样例：{B64_PAIR}", "base64-credential"),
    ("- call with Authorization: Bearer Xk9QmT2vLp8RzW4nBc7Y", "bearer-token"),
])
def test_a_jwt_and_a_base64_user_pass_are_secret_findings_of_a_patch(line, kind):
    found = secrets_in(line + "\n")
    assert found, line
    if kind is not None:
        assert [k for k, _ in found] == [kind]
    shown = " ".join(e for _, e in found)
    assert JWT.split(".")[2][:8] not in shown and B64_PAIR[6:] not in shown  # never the value
    # the publish scan reads the same shapes (rules/skillfiles.scan_text -> secrets.secret_spans)
    assert scan_text("SKILL.md", "# s\n" + line + "\n")


@pytest.mark.parametrize("line", [
    "Authorization: Bearer <token>", "Authorization: Bearer YOUR_ACCESS_TOKEN_HERE",
    "postgres://user:password@db.example.com/app", base64.b64encode(b"hello world, this is fine").decode(),
    "eyJ is how a JSON object starts in base64url", "订单号 110105194912314521", f"身份证 {CN_ID}",
])
def test_prose_placeholders_and_personal_data_are_not_secret_findings(line):
    assert secrets_in(line) == []


def test_no_new_secret_finding_in_the_shipped_skills_and_fixtures():
    """Measured: 0 findings of the redaction's shapes in skills/**/SKILL.md and tests/fixtures (and 1
    in docs: the chunked AWS example id of docs/safety.md, a documented sample)."""
    hits = []
    files = [*(REPO / "skills").rglob("SKILL.md"), *(p for p in (REPO / "tests" / "fixtures").rglob("*") if p.is_file())]
    for p in files:
        try:
            text = p.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        hits += [(p.name, f.kind) for f in scan_text(str(p), text) if f.kind.removesuffix(" (split)") in NEW_KINDS]
    assert len(files) > 20 and hits == []


@pytest.fixture
def live_ws(workspace, machine):  # noqa: ANN001 - conftest fixtures: the example skills imported
    return workspace.root


def test_release_publish_refuses_a_bare_jwt_and_a_base64_pair_unless_allowed(live_ws, tmp_path):
    cand = live_copy(live_ws, tmp_path / "c")
    text = (cand / "SKILL.md").read_text(encoding="utf-8")
    write(cand / "SKILL.md", text.rstrip("\n") + f"\n\n- 示例：{JWT}\n- 样例：{B64_PAIR}\n")
    before = len(releases(live_ws))
    proc = run_cli(["release", "publish", LIVE_SKILL, "--from", str(cand), "-w", str(live_ws)], ok=2)
    said = flat(proc.stderr)
    assert "jwt" in said and "base64-credential" in said
    assert JWT.split(".")[2][:8] not in said and B64_PAIR[6:] not in said
    assert len(releases(live_ws)) == before
    run_cli(["release", "publish", LIVE_SKILL, "--from", str(cand), "--allow-secrets", "-w", str(live_ws)])
    assert len(releases(live_ws)) == before + 1


def test_cn_id_needs_a_real_date_and_the_check_character():
    assert cn_id(CN_ID) and cn_id(CN_ID.lower())
    assert not cn_id("11010519491231452X")      # wrong check character
    assert not cn_id("110105194913310027")      # month 13
    assert not cn_id("123456789012345678")      # an order number
    assert redact(f"身份证号 {CN_ID}，订单 110105194912314521")[0] == "身份证号 [REDACTED:cn-id]，订单 110105194912314521"
    assert for_proposer(f"我的身份证是{CN_ID}") == "我的身份证是[REDACTED:cn-id]"
    assert redact(f"id {CN_ID}x")[0] == f"id {CN_ID}x"  # inside a longer word: not one


PHONES = ["13845674545", "+86 138 4567 4545", "+1 415-555-0199", "138-4567-4545"]


@pytest.mark.parametrize("text", [*PHONES, CN_ID])
def test_the_edit_check_refuses_phones_and_ids_the_harvest_check_does_not_fail_on_them(text):
    assert residue(json.dumps({"query": f"call {text}"}), personal=True)
    assert residue(json.dumps({"query": f"call {text}"})) == []  # the harvest's fail-closed check: redacted, not dropped


@pytest.fixture
def ws(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    write_staged(ws, StagedFile(skill=SKILL, cases=[staged_case(n) for n in range(3)]))
    return ws


def snapshot(ws) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in [*set_files(ws), *(ws.evaluation_sets_dir / "staged").glob("*.json")]}


@pytest.mark.parametrize("text", [*PHONES, CN_ID, "a@example.com"])
def test_an_edit_with_a_phone_or_id_is_refused_like_an_email(ws, text):
    cid = read_staged(ws, SKILL).cases[0].id
    before = snapshot(ws)
    with pytest.raises(rv.ReviewError, match=r"the edit holds a secret shape \((phone|cn-id|email)\); nothing was changed"):
        rv.edit(ws, cid, json.dumps({"query": f"从望京打车去国贸，到了打 {text}"}, ensure_ascii=False), embed=None)
    assert snapshot(ws) == before


NOTE = "ask DB_PASSWORD=NOTEqa45pw, mail note.qa45@example.com, tel 13712340000"


def test_an_accept_or_reject_note_is_refused_like_an_edited_one(ws):
    cases = read_staged(ws, SKILL).cases
    before = snapshot(ws)
    for note in (NOTE, "tel 13712340000", f"id {CN_ID}"):
        with pytest.raises(rv.ReviewError, match=r"the note holds a secret shape \(.+\); nothing was changed"):
            rv.accept(ws, cases[0].id, note=note, embed=None)
        with pytest.raises(rv.ReviewError, match=r"the note holds a secret shape"):
            rv.reject(ws, cases[1].id, note=note)
    assert snapshot(ws) == before
    case, where = rv.accept(ws, cases[0].id, note="checked the fare by hand", embed=None)
    assert case.note == "checked the fare by hand" and read_set(where).cases[-1].id == case.id


def test_the_cli_refuses_a_note_before_doing_anything(ws):
    cases = read_staged(ws, SKILL).cases
    before = snapshot(ws)
    edit = ws.root / "edit.json"
    edit.write_text(json.dumps({"query": "从望京打车去国贸要多久（改）"}, ensure_ascii=False), encoding="utf-8")
    proc = run_cli(["cases", "review", "--edit", cases[2].id, "--from-file", str(edit), "--accept", cases[0].id,
                    "--note", NOTE, "-w", str(ws.root)], ok=2)
    said = flat(proc.stderr)
    assert "the note holds a secret shape (" in said and "NOTEqa45pw" not in said and "13712340000" not in said
    assert snapshot(ws) == before  # the edit was not made either


def test_the_loader_warning_names_every_kind_the_proposer_sees_redacted():
    case = Case(id="c1", skill=SKILL, query=f"从码头打车，回电 +1 415-555-0123，邮箱 a.b@example.com，身份证 {CN_ID}",
                expect=Expectation(must_include=["13712345678"]))
    warned = case_warnings(case)
    assert warned == ["its query has a secret shape (cn-id, email, phone): a proposer sees it redacted",
                      "its expectations has a secret shape (phone): a proposer sees it redacted"]
    shown = for_proposer(case.query)
    assert all(f"[REDACTED:{k}]" in shown for k in ("cn-id", "email", "phone"))


def test_the_failure_report_does_not_repeat_a_secret_its_leak_line_masks(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    key = "sk_live_QA45patchSTRIPEabcdefghijkl"
    line = f'- 输入："付款用 {key}" → 只估价。'
    cand = Candidate(id="r1c1", target=SKILL, patch="x", patch_format=PatchFormatName.FULL, text=line, claimed_level=1,
                     rationale=f"adds {key}", verdict=CandidateVerdict.LEAK, rejected_by="leak_scan",
                     leaks=[str(f) for f in scan_leaks(line, LeakContext(cases=()))],
                     notes=[f"level: an example line {line!r}", f"token {JWT}"],
                     applied_diff=f"--- a\n+++ b\n@@ -1 +1,2 @@\n # s\n+{line}\n")
    path = write_failures(ws, EvolveState(run_id="r45", skill=SKILL, candidates=[cand]))
    report = path.read_text(encoding="utf-8")
    assert "sk_live_QA45" in report  # the leak line's own masked prefix
    assert key not in report and "patchSTRIPE" not in report and JWT not in report
    assert "[REDACTED:stripe-key]" in report and "```diff" in report


def test_runs_show_masks_a_leaking_candidate_as_the_failure_report_does(tmp_path):
    """QA 45 F7: `runs show --json` printed the key in the candidate's notes and diff twice."""
    from skillforge.runners.reader import summarise

    key = "sk_live_QA45patchSTRIPEabcdefghijkl"
    line = f'- 输入："付款用 {key}" → 只估价。'
    leaking = Candidate(id="r1c1", target=SKILL, patch="x", patch_format=PatchFormatName.FULL, text=line,
                        claimed_level=1, rationale=f"adds {key}", verdict=CandidateVerdict.LEAK, rejected_by="leak_scan",
                        leaks=[str(f) for f in scan_leaks(line, LeakContext(cases=()))],
                        notes=[f"level: an example line {line!r}"], applied_diff=f"+{line}\n")
    shown = json.dumps(summarise(EvolveState(run_id="r45", skill=SKILL, candidates=[leaking]), None), ensure_ascii=False)
    assert key not in shown and "[REDACTED:stripe-key]" in shown
