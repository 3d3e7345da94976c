"""Issue 21 items 1 and 5 end to end: the scripted evolve world (real workspace, git, SQLite,
checkpointer) with a proposer whose patch carries a disguised holdout query or hidden characters.
The run must stop the candidate at check, with the reason recorded per candidate."""

from __future__ import annotations

import json
import re

import pytest

from evolve_fakes import QUOTE_ETA, SKILL, World, _case, eta_patch, seed_failures, write_sets
from skillforge.runners.evolve import Runner

HIDDEN_CHARACTERS = "hidden_characters"  # evolution/check.py's rejection reason, spelled as the run reports it

ENGLISH_HOLDOUT = "please book a taxi from the airport to my hotel downtown right now"
CYRILLIC = str.maketrans("aeopcxyi", "аеорсхуі")


def with_english_holdout(ws, query: str = ENGLISH_HOLDOUT):  # noqa: ANN001, ANN201 - the workspace
    """The scripted world's sets, and one more holdout case in English (`query`)."""
    write_sets(ws)
    path = ws.evaluation_sets_dir / "holdout.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["cases"].append({**_case(f"holdout-{SKILL}-en", 20), "query": query})
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    return ws


@pytest.fixture
def world_ws(machine):
    return with_english_holdout(machine.ws)


def _run(ws, line: str):
    world = World(lambda r: [eta_patch(claimed=1, line=f"- {QUOTE_ETA}：{line}")])
    seed_failures(ws, world.llm())
    runner = Runner(ws, llm_factory=world.llm)
    out = runner.start(SKILL, max_rounds=1)
    return out, runner.state(out["run_id"]).candidates[0]


HOLDOUT_9 = str(_case("x", 9)["query"])  # a holdout query of the world (cases 8+ are holdout / final_audit)


@pytest.mark.parametrize("line,source", [
    (re.sub(r"\b(\w)(\w{2,})", lambda m: m[1] + "\u200b" + m[2], ENGLISH_HOLDOUT), f"holdout-{SKILL}-en"),  # zero-width
    (ENGLISH_HOLDOUT.translate(CYRILLIC), f"holdout-{SKILL}-en"),                     # Cyrillic homoglyphs
    # a guard: CJK n-grams already skipped zero-width characters before issue 21
    ("\u200b".join(HOLDOUT_9.replace("9号", "九号")), f"holdout-{SKILL}-01"),
])
def test_a_disguised_holdout_query_is_rejected_at_the_leak_scan(world_ws, line, source):
    out, cand = _run(world_ws, line)
    assert out["status"] == "NO_IMPROVEMENT", out
    assert (cand.verdict.value, cand.rejected_by) == ("LEAK", "leak_scan")
    assert any(source in x for x in cand.leaks), cand.leaks
    assert out["candidates"][0]["rejected_by"] == "leak_scan"


def test_a_candidate_line_that_hides_itself_from_a_terminal_is_refused(world_ws):
    out, cand = _run(world_ws, "报价时同时说明到达时间。\r\x1b[2K\x1b[1A")
    assert out["status"] == "NO_IMPROVEMENT", out
    assert (cand.verdict.value, cand.rejected_by) == ("REFUSED", HIDDEN_CHARACTERS)
    assert out["candidates"][0]["rejected_by"] == HIDDEN_CHARACTERS
    assert any("U+000D" in n and "U+001B" in n for n in cand.notes), cand.notes


def test_the_next_round_hears_the_leak_kind_never_the_holdout_text_or_its_case(world_ws):
    prompts: list[str] = []

    class Recording(World):
        def proposer_reply(self, messages):  # noqa: ANN001, ANN201
            prompts.append("\n".join(str(m.content) for m in messages))
            return super().proposer_reply(messages)

    world = Recording(lambda r: [eta_patch(claimed=1, line=f"- {QUOTE_ETA}：{ENGLISH_HOLDOUT}")] if r == 1
                      else [eta_patch(claimed=1)])
    seed_failures(world_ws, world.llm())
    out = Runner(world_ws, llm_factory=world.llm).start(SKILL, max_rounds=2)
    assert out["rounds"] == 2, out
    retry = [p for p in prompts if "leak: " in p]
    assert retry, "the second round's prompt says the first candidate leaked"
    for p in prompts[1:]:
        assert ENGLISH_HOLDOUT not in p and f"holdout-{SKILL}-en" not in p
