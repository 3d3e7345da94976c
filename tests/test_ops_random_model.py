"""The bar "a random model's proposals always apply": a local OpenAI-compatible server that fills
every schema with random valid values (tests/random_server.py, the same HTTP path as a real
endpoint) is the proposer for 20 rounds of the ops format. Every candidate applies; refusals come
only from checks (learning rate, structure, leak scan, level, fingerprint), never from no_match,
no_blocks or an unknown anchor."""

from __future__ import annotations

import re

from evolve_fakes import SKILL, write_sets
from random_server import RandomOpenAIServer
from skillforge.config import init_workspace
from skillforge.evaluation.datasets import load_sets, proposer_bundle
from skillforge.evolution.check import check_candidate, leak_context
from skillforge.evolution.propose import propose
from skillforge.llm.client import LLM
from skillforge.llm.config import resolve_all
from skillforge.state.evolve import Attempt, CandidateVerdict, PatchFormatName, RootCause, RootCauseFinding

ROUNDS = 20
MATCH_REFUSALS = re.compile(r"\b(no_match|no_blocks|ambiguous|unknown_anchor|unknown_field)\b")
STRUCTURE = re.compile(r": (not_a_skill|empty_body|reasoning_tag): ")
CHECKS = {None, "learning_rate", "apply", "leak_scan", "fingerprint", "hidden_characters"}


def test_twenty_rounds_of_random_ops_always_apply(tmp_path):
    ws = init_workspace(tmp_path / "w")
    write_sets(ws)
    sets = load_sets(ws)
    bundle, ctx = proposer_bundle(sets), leak_context(ws, sets)
    parent = (__import__("pathlib").Path(__file__).resolve().parents[1] / "skills" / SKILL / "SKILL.md").read_text(
        encoding="utf-8")
    cause = RootCauseFinding(category=RootCause.INSTRUCTION_BEHAVIOUR, summary="answers omit the pickup ETA")
    seen: list[str] = []
    total = applied = 0
    verdicts: dict[str, int] = {}
    with RandomOpenAIServer(seed=11) as srv:
        llm = LLM(resolve_all(env={"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "random",
                                   "SKILLFORGE_LLM_MAX_RETRIES": "0"}))
        for rnd in range(1, ROUNDS + 1):
            feedback = [Attempt(round=rnd, candidate_id="x", rationale="", rejected_by="", why="")]  # varies the prompt
            cands, note = propose(llm, rnd, parent, SKILL, cause, [], bundle, feedback, fmt=PatchFormatName.OPS)
            assert not note.startswith(("the proposer's answer is unusable", "the proposer is unavailable")), note
            for c in cands:
                total += 1
                assert c.patch_format is PatchFormatName.OPS
                assert not any(MATCH_REFUSALS.search(n) for n in c.notes), c.notes
                if c.text is None:  # applied, but the result is not a skill (an empty description, ...)
                    assert c.rejected_by == "apply" and STRUCTURE.search(c.notes[-1]), c.notes
                    continue
                applied += 1
                checked = check_candidate(c, parent, SKILL, ctx, seen)
                if checked.fingerprint:
                    seen.append(checked.fingerprint)
                assert checked.rejected_by in CHECKS, checked
                verdicts[checked.verdict.value] = verdicts.get(checked.verdict.value, 0) + 1
                if checked.verdict is CandidateVerdict.PENDING and checked.text is not None:
                    parent = checked.text  # walk on: the next round's anchors are another file's
    assert total >= ROUNDS  # the server answered every round with candidates
    assert applied / total >= 0.8, (applied, total, verdicts)
    assert verdicts.get("PENDING", 0) >= 5, verdicts
