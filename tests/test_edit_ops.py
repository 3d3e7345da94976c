"""The ops proposal format (rules/edits.py), its per-request anchor enum, the textual learning rate
(rules/learning_rate.py) and the format choice (rules/memory.choose_format): pure rules and the
propose service with a scripted proposer."""

from __future__ import annotations

import json

import pytest

from skillforge.evolution.propose import (FieldEdit, LineEdit, OpsProposal, OpsProposalSet, PatchProposal,
                                          ProposalSet, build_candidates, ops_schemas, propose)
from skillforge.llm.client import LLM, schema_json
from skillforge.llm.config import proposer_format, resolve_all
from skillforge.errors import ConfigError
from skillforge.rules.edits import (MAX_ANCHOR_CHARS, MAX_ANCHORS, START, EditError, EditKind, EditOp, EditRefusal,
                                    anchors, apply_edits)
from skillforge.rules.learning_rate import MAX_CHANGED_LINES, change_size, over_budget
from skillforge.rules.memory import choose_format
from skillforge.skill.file import parse
from skillforge.state.evolve import FormatOutcome, PatchFormatName, ProposerFormat
from skillforge.state.llm import Role
from skillforge.testing.evolve_world import ENV
from skillforge.testing.fake_chat import ScriptedChatModel

SKILL = """---
name: demo
description: "Does a demo thing."
use_when: "the user wants a demo"
keywords:
  - demo
  - sample
examples: ["show me a demo"]
---
## Overview
Demo skill.

## Instructions
- Step one.
- Same line.
- Same line.

## Constraints
- Be brief.
"""


def ins(anchor: str, text: str) -> EditOp:
    return EditOp(EditKind.INSERT_AFTER, anchor=anchor, text=text)


def test_anchor_enum_is_the_bodys_distinct_lines_with_start_first():
    a = anchors(SKILL)
    assert a.labels == (START, "## Overview", "Demo skill.", "## Instructions", "- Step one.", "- Same line.",
                        "## Constraints", "- Be brief.")
    lines = SKILL.split("\n")
    assert lines[a.line_of["- Same line."]] == "- Same line." and a.line_of["- Same line."] == 14  # the first one
    assert lines[a.line_of[START]] == "---" and "description" not in " ".join(a.labels)  # no frontmatter line


def test_anchor_enum_is_bounded_keeps_headings_and_cuts_long_lines():
    body = "\n".join(f"## H{i}\n" + "\n".join(f"line {i}-{k} " + "x" * 80 for k in range(5)) for i in range(20))
    a = anchors("---\nname: big\ndescription: d\n---\n" + body + "\n")
    assert len(a.labels) == MAX_ANCHORS
    assert all(f"## H{i}" in a.labels for i in range(20))  # every heading survives the bound
    assert max(map(len, a.labels)) == MAX_ANCHOR_CHARS and a.labels[2].endswith("…")
    assert list(a.line_of.values()) == sorted(a.line_of.values())  # file order


def test_each_line_op_kind():
    out = apply_edits(SKILL, [ins("- Step one.", "- Step two."), EditOp(EditKind.REPLACE, "- Be brief.", "- Be kind.\n- Be brief."),
                              EditOp(EditKind.DELETE, "Demo skill.")])
    assert "- Step one.\n- Step two.\n- Same line." in out
    assert "## Constraints\n- Be kind.\n- Be brief.\n" in out and "Demo skill." not in out
    assert parse(out, "SKILL.md", "demo").name == "demo"


def test_anchors_refer_to_the_original_file_so_order_never_fails():
    ops = [EditOp(EditKind.DELETE, "- Step one."), ins("- Step one.", "- After the deleted line."),
           EditOp(EditKind.REPLACE, "- Step one.", "- Replaced last wins."), ins("- Step one.", "- Second insert.")]
    out = apply_edits(SKILL, ops)
    assert "## Instructions\n- Replaced last wins.\n- After the deleted line.\n- Second insert.\n- Same line." in out


def test_duplicate_lines_the_label_names_the_first_and_the_second_stays():
    out = apply_edits(SKILL, [EditOp(EditKind.REPLACE, "- Same line.", "- Changed.")])
    assert "- Changed.\n- Same line.\n" in out and out.count("- Same line.") == 1


def test_start_anchor_insert_replace_and_delete():
    top = apply_edits(SKILL, [ins(START, "# Demo")])
    assert "---\n# Demo\n## Overview" in top
    assert apply_edits(SKILL, [EditOp(EditKind.REPLACE, START, "# Demo")]) == top
    assert apply_edits(SKILL, [EditOp(EditKind.DELETE, START)]) == SKILL


def test_deleting_a_heading_keeps_its_lines():
    out = apply_edits(SKILL, [EditOp(EditKind.DELETE, "## Constraints")])
    assert "## Constraints" not in out and "\n- Be brief.\n" in out


def test_empty_body_has_only_the_start_anchor_and_can_be_filled():
    empty = "---\nname: demo\ndescription: d\n---\n"
    assert anchors(empty).labels == (START,)
    out = apply_edits(empty, [ins(START, "## Instructions\n- Do it.")])
    assert out == "---\nname: demo\ndescription: d\n---\n## Instructions\n- Do it.\n"
    assert parse(out, "SKILL.md", "demo").body.startswith("## Instructions")


@pytest.mark.parametrize("name,value,expect", [
    ("description", "A better description.", '"A better description."'),
    ("use_when", "the user asks for a demo\nor a sample", "the user asks for a demo or a sample"),
    ("not_for", "- real work\n- production", ["real work", "production"]),
    ("keywords", "demo\nexample\n\n", ["demo", "example"]),
    ("examples", "show a demo\n给我看个例子", ["show a demo", "给我看个例子"]),
])
def test_set_field_each_key(name, value, expect):
    out = apply_edits(SKILL, [EditOp(EditKind.SET_FIELD, field=name, text=value)])
    skill = parse(out, "SKILL.md", "demo")
    got = getattr(skill, name)
    assert got == (json.loads(expect) if isinstance(expect, str) and expect.startswith('"') else expect)
    assert skill.body == parse(SKILL, "SKILL.md", "demo").body  # the body is untouched
    if name == "keywords":  # a block list is replaced whole, not left dangling
        assert "  - sample" not in out and out.count("keywords:") == 1


def test_set_field_unknown_field_and_unknown_anchor_are_named_refusals():
    with pytest.raises(EditError) as e:
        apply_edits(SKILL, [EditOp(EditKind.SET_FIELD, field="name", text="other")])
    assert e.value.reason is EditRefusal.UNKNOWN_FIELD
    with pytest.raises(EditError) as e:
        apply_edits(SKILL, [ins("- A line that is not there.", "x")])
    assert e.value.reason is EditRefusal.UNKNOWN_ANCHOR and "'## Overview'" in str(e.value)


def test_the_request_schema_carries_the_files_anchors_as_an_enum_and_parses_any_string():
    many, _ = ops_schemas(SKILL)
    schema = json.loads(schema_json(many))
    enum = schema["$defs"]["LineEdit"]["properties"]["anchor"]["enum"]
    assert tuple(enum) == anchors(SKILL).labels
    assert schema["$defs"]["FieldEdit"]["properties"]["field"]["enum"] == [
        "description", "use_when", "not_for", "keywords", "examples"]
    assert ops_schemas(SKILL)[0] is many  # one class per file: the runnable and schema caches are reused
    other = json.loads(schema_json(ops_schemas(SKILL.replace("Be brief", "Be short"))[0]))
    assert "- Be short." in other["$defs"]["LineEdit"]["properties"]["anchor"]["enum"]
    # a server that ignores the enum: the answer still parses, the rule refuses it by name
    parsed = many.model_validate({"candidates": [{"edits": [{"op": "delete", "anchor": "nope", "text": ""}],
                                                  "fields": [], "rationale": "r", "claimed_level": 1}]})
    assert parsed.candidates[0].edits[0].anchor == "nope"


def test_change_size_and_budget_refusal_with_the_numbers():
    new = SKILL.replace("- Be brief.\n", "".join(f"- Rule {i}.\n" for i in range(19)))
    size = change_size(SKILL, new)
    assert size.lines == 19
    assert over_budget(size) == f"changes 19 lines, budget {MAX_CHANGED_LINES}"
    assert over_budget(change_size(SKILL, SKILL.replace("Step one", "Step 1"))) is None
    assert "changes 1300 characters, budget 1200" in over_budget(change_size(SKILL, SKILL + "x" * 1300 + "\n"))


def llm_with(proposer: ScriptedChatModel) -> LLM:
    return LLM(resolve_all(env=ENV), {Role.PROPOSER: proposer})


def ops(*edits: tuple[str, str, str], rationale: str = "r") -> OpsProposal:
    return OpsProposal(edits=[LineEdit(op=o, anchor=a, text=t) for o, a, t in edits], fields=[], rationale=rationale,
                       claimed_level=2)


def test_over_budget_ops_are_refused_with_the_numbers_fed_back_and_a_smaller_retry_applies():
    big = ops(("insert_after", "- Step one.", "\n".join(f"- Rule {i}." for i in range(19))))
    small = ops(("insert_after", "- Step one.", "- One rule."))
    proposer = ScriptedChatModel.of({"name": "OneOpsProposal", "args": {"candidate": small.model_dump()}})
    [cand] = build_candidates(llm_with(proposer), 1, SKILL, "demo", [big])
    assert cand.text is not None and "- One rule." in cand.text and cand.verdict.value == "PENDING"
    assert cand.notes == [("apply attempt 1: over_budget: the change is over the round's budget: changes 19 lines, "
                           "budget 12")]
    retry_prompt = proposer.received[0][-1].content
    assert "changes 19 lines, budget 12" in retry_prompt and "Make it smaller" in retry_prompt
    # no retry left: REFUSED by the budget, the numbers in the note, the text kept for the buffer
    proposer = ScriptedChatModel.of(*[{"name": "OneOpsProposal", "args": {"candidate": big.model_dump()}}] * 3)
    [cand] = build_candidates(llm_with(proposer), 1, SKILL, "demo", [big])
    assert (cand.verdict.value, cand.rejected_by) == ("REFUSED", "learning_rate") and cand.text is not None
    assert all("changes 19 lines, budget 12" in n for n in cand.notes) and len(cand.notes) == 4


def test_over_budget_text_patch_is_refused_too():
    full = PatchProposal(format="full", patch=SKILL.replace("- Be brief.\n", "".join(f"- R{i}.\n" for i in range(15))),
                         rationale="r", claimed_level=1)
    proposer = ScriptedChatModel.of(*[{"name": "OneProposal", "args": {"candidate": full.model_dump()}}] * 3)
    [cand] = build_candidates(llm_with(proposer), 1, SKILL, "demo", [full])
    assert (cand.verdict.value, cand.rejected_by) == ("REFUSED", "learning_rate")
    assert "changes 15 lines, budget 12" in cand.notes[-1]


def test_unknown_anchor_from_a_server_without_grammar_is_retried_with_the_reason():
    wrong = ops(("replace", "- Step 1.", "- Step one, carefully."))
    right = ops(("replace", "- Step one.", "- Step one, carefully."))
    proposer = ScriptedChatModel.of({"name": "OneOpsProposal", "args": {"candidate": right.model_dump()}})
    [cand] = build_candidates(llm_with(proposer), 1, SKILL, "demo", [wrong])
    assert "unknown_anchor" in cand.notes[0] and "- Step one, carefully." in (cand.text or "")
    assert (cand.patch_format, cand.kind.value) == (PatchFormatName.OPS, "FIX")
    assert "not a line of the file" in proposer.received[0][-1].content
    assert "replace('- Step one.', '- Step one, carefully.')" == cand.patch


def test_propose_in_ops_format_sends_the_enum_and_the_ops_system_prompt():
    seen: list[list[object]] = []

    def reply(messages, tools):
        seen.append(tools)
        return OpsProposalSet(candidates=[ops(("insert_after", "- Step one.", f"- Extra {i}.")) for i in range(3)])

    from skillforge.evaluation.datasets import ProposerBundle
    from skillforge.state.evolve import RootCause, RootCauseFinding
    proposer = ScriptedChatModel.responding(reply)
    cands, note = propose(llm_with(proposer), 1, SKILL, "demo", RootCauseFinding(category=RootCause.BOUNDARY,
                          summary="s"), [], ProposerBundle([], [], []), [], fmt=PatchFormatName.OPS, tried=["- tried X"])
    assert note == "" and [c.text is not None for c in cands] == [True] * 3
    params = seen[0][0]["function"]["parameters"]
    assert seen[0][0]["function"]["name"] == "OpsProposalSet"
    assert START in json.dumps(params, ensure_ascii=False) and "- Same line." in json.dumps(params, ensure_ascii=False)
    system, user = proposer.received[0][0].content, proposer.received[0][-1].content
    assert "insert_after" in system and "SEARCH" not in system
    assert "Already tried in earlier runs, and why it failed" in user and "- tried X" in user


def test_choose_format():
    auto, model = ProposerFormat.AUTO, "http://x m"

    def out(fmt: str, proposed: int, applied: int, run: str = "old", rnd: int = 1) -> FormatOutcome:
        return FormatOutcome(model=model, run_id=run, round=rnd, format=fmt, proposed=proposed, applied=applied)
    assert choose_format(ProposerFormat.FULL, True, [], model, "r", 1) is PatchFormatName.FULL
    assert choose_format(ProposerFormat.OPS, False, [], model, "r", 1) is PatchFormatName.OPS
    assert choose_format(auto, True, [], model, "r", 1) is PatchFormatName.OPS  # the embedded model
    assert choose_format(auto, False, [], model, "r", 1) is PatchFormatName.SEARCH_REPLACE
    assert choose_format(auto, False, [out("search_replace", 2, 0)], model, "r", 1) is PatchFormatName.OPS
    assert choose_format(auto, False, [out("search_replace", 0, 0)], model, "r", 1) is PatchFormatName.OPS
    assert choose_format(auto, False, [out("search_replace", 4, 3)], model, "r", 1) is PatchFormatName.SEARCH_REPLACE
    assert choose_format(auto, False, [out("ops", 4, 4)], model, "r", 1) is PatchFormatName.OPS  # stays ops
    other = out("search_replace", 2, 0).model_copy(update={"model": "http://y other"})
    assert choose_format(auto, False, [other], model, "r", 1) is PatchFormatName.SEARCH_REPLACE
    # a round re-run after a resume ignores its own record; an earlier round of the run counts
    assert choose_format(auto, False, [out("search_replace", 2, 0, "r", 1)], model, "r", 1) is PatchFormatName.SEARCH_REPLACE
    assert choose_format(auto, False, [out("search_replace", 2, 0, "r", 1)], model, "r", 2) is PatchFormatName.OPS


def test_the_setting_from_env_and_toml(tmp_path):
    from skillforge.config import init_workspace
    ws = init_workspace(tmp_path / "w")
    assert proposer_format(ws, env={}) is ProposerFormat.AUTO
    (ws.root / "skillforge.toml").write_text('[proposer]\nformat = "ops"\n', encoding="utf-8")
    assert proposer_format(ws, env={}) is ProposerFormat.OPS
    assert proposer_format(ws, env={"SKILLFORGE_PROPOSER_FORMAT": "full"}) is ProposerFormat.FULL
    with pytest.raises(ConfigError, match="must be one of ops, search_replace, full, auto"):
        proposer_format(ws, env={"SKILLFORGE_PROPOSER_FORMAT": "diff"})


def test_field_edit_schema_parses(tmp_path):
    p = OpsProposal(edits=[], fields=[FieldEdit(field="keywords", value="a\nb")], rationale="r", claimed_level=1)
    [cand] = build_candidates(llm_with(ScriptedChatModel.of()), 1, SKILL, "demo", [p])
    assert parse(cand.text, "SKILL.md", "demo").keywords == ["a", "b"]
    assert ProposalSet(candidates=[]).candidates == []


def test_labels_hold_no_double_quote_or_backslash_and_the_raw_line_still_applies():
    from skillforge.rules.edits import anchors, apply_edits

    text = ('---\nname: x\ndescription: "d"\n---\n## Examples\n- 输入："帮我订周六晚上7点" → 搜索分店\n'
            '- path C:\\tmp\\x\n- tab\there\n')
    labels = anchors(text).labels
    assert all('"' not in lab and "\\" not in lab and "\t" not in lab for lab in labels), labels
    raw = '- 输入："帮我订周六晚上7点" → 搜索分店'
    out = apply_edits(text, [EditOp(kind=EditKind.INSERT_AFTER, anchor=raw, text="- 新例子")])
    assert out.split("\n")[6] == "- 新例子"
    safe = next(lab for lab in labels if lab.startswith("- 输入"))
    assert apply_edits(text, [EditOp(kind=EditKind.DELETE, anchor=safe)]).count("帮我订") == 0
