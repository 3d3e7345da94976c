"""validate's services: the checks chosen by a candidate's change surface.

- Metadata edits: the workspace's router set and negatives routed with the live card and with
  the candidate's (rule + embed layers, no LLM, no fitted head, so only the card differs), judged by
  `rules.interference.routing_verdict`.
- Every candidate: the evaluation subgraph on the targeted failures, the P0 cases and neighbour
  variants of each failure (same intent, other wording), baseline = the live release.
- The selected candidate only: the evaluation subgraph once on holdout.

The graphs they run (the evaluate graph, the router) are given by the evolve graph (`Subgraphs`):
a service never imports a graph.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, Field

from skillforge.calibration.records import statuses_for
from skillforge.config import Workspace
from skillforge.context import EvalContext, RouteContext
from skillforge.errors import BudgetExceeded, LLMError, LLMTimeout, LLMUnavailable
from skillforge.evaluation.executor import SkillUnderTest
from skillforge.llm.client import LLM
from skillforge.routing.embedding import Embedder
from skillforge.routing.fit import load_cases
from skillforge.routing.index import RouteIndex
from skillforge.rules.casetext import for_proposer
from skillforge.rules.failures import near_duplicate
from skillforge.rules import outage
from skillforge.rules.interference import RoutedPair, routing_verdict
from skillforge.rules.paired import PRIMARY
from skillforge.state.evaluate import Case, EvalSet, ExecutionMode, Partition, SetMeta, SkillSide
from skillforge.state.evaluate_graph import EvalState
from skillforge.state.evolve import Failure, SetScore
from skillforge.state.llm import Role
from skillforge.state.route import RouteState
from skillforge.state.result import EvalResult, EvalVerdict, Outcome
from skillforge.state.skill import SkillFile

log = logging.getLogger(__name__)

NEIGHBOURS_PER_FAILURE = 1
MAX_NEIGHBOURS = 8
"""Reworded failures per round (the `evolve.neighbours` setting's auto value) on a hosted model."""
LOCAL_NEIGHBOURS = 2
"""The auto value on the embedded model, where each one costs a proposer call and a case of every
candidate's selection run (~40 s each on 2 cores): the demo's one round took 929 s with up to 8."""
EVAL_CONCURRENCY = 2


class EvaluateGraph(Protocol):
    """What validation calls of the evaluate graph (graphs/evaluate.py)."""

    def invoke(self, input: EvalState, config: RunnableConfig | None = None, *, context: EvalContext,
               durability: str | None = None) -> object: ...


Router = Callable[[str, RouteContext], RouteState]
"""Routes one query with the given context (graphs/route.route)."""


@dataclass(frozen=True)
class Subgraphs:
    """The graphs validation runs, built by the evolve graph's wiring (graphs/evolve.py) and given to
    the nodes that validate: the services here import no graph."""

    evaluate: EvaluateGraph
    """The evaluate graph compiled without a checkpointer of its own (a re-run node re-evaluates from
    the LLM cache)."""
    route: Router
    """The router, given a context with the LLM layer off (the routing gate)."""


# ---- routing ------------------------------------------------------------------------------

def router_cases(ws: Workspace, known: Sequence[str]) -> list[tuple[str, str | None]]:
    """(query, expected) of the workspace's router set and negatives; [] when it has none."""
    out: list[tuple[str, str | None]] = []
    for name in ("dev.jsonl", "negatives.jsonl"):
        path = ws.evaluation_sets_dir / "router" / name
        if path.exists():
            out += [(c.query, c.expected) for c in load_cases(path) if c.expected is None or c.expected in known]
    return out


def routing_check(route: Router, ws: Workspace, embedder: Embedder, published: Mapping[str, SkillFile], skill: str,
                  candidate: SkillFile) -> SetScore:
    """Route the router set with the live card and with the candidate's (`route`, with the LLM layer
    off); the interference rule decides."""
    cases = router_cases(ws, list(published))
    if not cases:
        return SetScore(name="routing", cases=0, verdict=EvalVerdict.INVALID,
                        reasons=["the workspace has no router set (evaluation_sets/router/*.jsonl): cannot check"])
    base_skills = list(published.values())
    cand_skills = [candidate if s.name == skill else s for s in base_skills]
    if skill not in published:
        cand_skills.append(candidate)
    base = RouteContext(index=RouteIndex.for_workspace(ws, base_skills, embedder, use_head=False))
    # the candidate's card under the live thresholds: auto thresholds computed for its own examples
    # would move the cut with the change being judged
    cand_index = RouteIndex.build(cand_skills, embedder, cache=base.index.cache, ws=ws, use_head=False)
    cand_index.thresholds = base.index.thresholds
    cand = RouteContext(index=cand_index)
    pairs = [RoutedPair(q, exp, route(q, base).chosen, route(q, cand).chosen) for q, exp in cases]
    v = routing_verdict(skill, pairs)
    return SetScore(name="routing", cases=len(pairs), verdict=EvalVerdict.PASS if v.passed else EvalVerdict.DECLINED,
                    improvement=Outcome.INCONCLUSIVE, reasons=list(v.reasons),
                    score=v.candidate_correct / len(pairs), baseline_score=v.baseline_correct / len(pairs))


# ---- neighbour variants ---------------------------------------------------------------------

class Paraphrases(BaseModel):
    queries: list[str] = Field(description="rewordings with the same intent and the same facts")


def neighbour_limit(setting: int | None, local: bool) -> int:
    """How many neighbours a round makes: the `evolve.neighbours` setting, else (auto) LOCAL_NEIGHBOURS
    on the embedded model and MAX_NEIGHBOURS elsewhere."""
    if setting is not None:
        return setting
    return LOCAL_NEIGHBOURS if local else MAX_NEIGHBOURS


def neighbours(llm: LLM, failures: Sequence[Failure], known_queries: Sequence[str], *,
               limit: int = MAX_NEIGHBOURS) -> list[Case]:
    """One rewording per failure (the same intent, fixtures and expectations), none near-duplicating
    a known query, at most `limit`. A failure whose query holds a secret shape or a prompt-injection
    phrase (rules/casetext.for_proposer) gets none: the proposer is not sent it, and a rewording of
    its redacted or flagged form would not be the same request. BudgetExceeded propagates; an
    unusable answer gives no neighbour for that case."""
    out: list[Case] = []
    for f in failures:
        if len(out) >= limit:
            break
        if for_proposer(f.case.query) != f.case.query:  # a rewording must keep the facts: never sent redacted
            log.warning("neighbours of %s: its query holds a secret shape or a possible prompt injection; "
                        "no rewording is asked for it", f.case.id)
            continue
        msgs = [("system", "Rewrite a user request so that it keeps exactly the same intent, entities and facts "
                           "but uses different wording. Same language as the original."),
                ("user", f"Request: {f.case.query}\nGive {NEIGHBOURS_PER_FAILURE} rewording(s).")]
        try:
            answer = llm.structured(Role.PROPOSER, Paraphrases, msgs).value
        except (BudgetExceeded, LLMUnavailable, LLMTimeout):
            raise  # no answer at all: the run stops open rather than validate on fewer cases
        except LLMError as e:
            log.warning("neighbours of %s: %s", f.case.id, e)
            continue
        for i, q in enumerate(answer.queries[:NEIGHBOURS_PER_FAILURE], 1):
            q = q.strip()
            if not q or any(near_duplicate(q, k) for k in [*known_queries, *(c.query for c in out)]):
                continue
            out.append(f.case.model_copy(update={"id": f"{f.case.id}_nb{i}", "query": q,
                                                 "tags": [*f.case.tags, "neighbour"]}))
    return out


# ---- evaluation ------------------------------------------------------------------------------

def score_of(name: str, result: EvalResult, unreachable: Sequence[str] = ()) -> SetScore:
    """The gate's answer in short: verdict, improvement, dimensions with a LOSS, P0 flips, scores;
    `unreachable`: the roles whose endpoint failed in INVALID cases (kept for an INVALID verdict)."""
    m = result.measured
    losses = [d for d, ev in result.evidence.items() if ev.outcome is Outcome.LOSS]
    effect = result.evidence.get(PRIMARY)
    endpoint = result.primary or PRIMARY
    primary = result.evidence.get(endpoint)
    return SetScore(name=name, cases=(m.valid_cases + m.invalid_cases) if m else 0, verdict=result.verdict,
                    improvement=result.improvement or Outcome.INCONCLUSIVE, losses=losses, p0_flips=list(m.p0_flips) if m else [],
                    score=result.ratchet.get("new_effect"), baseline_score=result.ratchet.get("old_effect"),
                    effect_wins=effect.wins if effect else None, effect_losses=effect.losses if effect else None,
                    effect_ties=effect.ties if effect else None, primary=endpoint,
                    primary_reason=result.primary_reason or "",
                    primary_wins=primary.wins if primary else None, primary_losses=primary.losses if primary else None,
                    primary_ties=primary.ties if primary else None, primary_mean=primary.mean if primary else None,
                    reasons=list(result.reasons), run_id=result.run_id,
                    unreachable=list(unreachable) if result.verdict is EvalVerdict.INVALID else [])


def evaluate_cases(graph: EvaluateGraph, llm: LLM, others: Mapping[str, SkillUnderTest], run_id: str, name: str,
                   skill: str, cases: Sequence[Case], baseline: SkillSide, candidate: SkillSide, *,
                   partition: Partition = Partition.REPAIR, ws: Workspace | None = None,
                   mode: ExecutionMode = ExecutionMode.BEHAVIOUR) -> SetScore:
    """The evaluation subgraph `graph` (compiled without a checkpointer of its own) on `cases`, in
    `mode`: behaviour (the skill loaded up front) for body edits, disclosure (index + use_skill) for
    edits of the routing surface."""
    if not cases:
        return SetScore(name=name, cases=0, verdict=EvalVerdict.INVALID, reasons=["no cases to evaluate"])
    eval_set = EvalSet(meta=SetMeta(name=name, partition=partition, skills=[skill]), cases=list(cases))
    ctx = EvalContext(llm=llm, sets={name: eval_set}, others=dict(others),
                      evaluations_log=ws.evaluations_log if ws else None, traces_dir=ws.traces_dir if ws else None,
                      judge_calibration=statuses_for(ws, llm.configs.get(Role.JUDGE)))
    state = EvalState(run_id=run_id, skill=skill, eval_set=name, baseline=baseline, candidate=candidate, mode=mode)
    # no checkpointer of its own (a re-run node re-evaluates from the LLM cache); "exit" keeps the
    # parent run's durability=sync from asking this uncheckpointed subgraph to wait for a save
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*durability.*has no effect", category=UserWarning)
        out = graph.invoke(state, {"max_concurrency": EVAL_CONCURRENCY}, context=ctx, durability="exit")
    final = EvalState.model_validate(out) if not isinstance(out, EvalState) else out
    for r in final.results:  # the executor and judge turn a model error into an INVALID case; a hard
        errors = " ".join(filter(None, [r.error, r.baseline.error, r.candidate.error]))  # cap is not one
        if r.budget_refused:
            raise BudgetExceeded(f"the budget ran out during the {name} evaluation: {errors[:300]}")
    result = final.result
    if result is None:
        return SetScore(name=name, cases=len(cases), verdict=EvalVerdict.INVALID, reasons=["the evaluation gave no result"])
    score = score_of(name, result, outage.unreachable(final.results))
    if score.unreachable:  # INVALID because an endpoint failed: no verdict on the edit, so the run
        raise LLMUnavailable(outage.unjudged_stop(name, score, final.results))  # stops open (resumable)
    return score
