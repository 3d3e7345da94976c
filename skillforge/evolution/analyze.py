"""analyze's service: the root cause of a skill's failures, with the case ids that show it.

The proposer model names one category (routing trigger / instruction behaviour / dependency /
boundary) and cites failure case ids. Ids it invents are dropped; if it cites none of the real
failures, or its answer is unusable, the finding falls back to a rule over the failures themselves
(and says so), so a garbage answer can never steer the round. Case text reaches the model redacted,
and an injection-shaped query as a flag (rules/casetext.for_proposer).
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Literal

from pydantic import BaseModel, Field

from skillforge.errors import BudgetExceeded, LLMError, LLMTimeout, LLMUnavailable
from skillforge.llm.client import LLM
from skillforge.rules.casetext import for_proposer
from skillforge.state.evolve import Failure, RootCause, RootCauseFinding
from skillforge.state.llm import Role

log = logging.getLogger(__name__)

QUERY_CHARS = 300


class RootCauseAnswer(BaseModel):
    """The model's finding."""

    category: Literal["routing_trigger", "instruction_behaviour", "dependency", "boundary"] = Field(
        description="routing_trigger: the skill was not chosen/loaded; instruction_behaviour: the "
                    "instructions led to a wrong answer; dependency: a tool is missing or misused; "
                    "boundary: the skill took or refused requests outside its scope")
    summary: str = Field(description="one or two sentences, general: no copied queries or values")
    evidence: list[str] = Field(description="ids of the failure cases that show this cause")


def analyze_messages(skill_text: str, failures: list[Failure]) -> list[tuple[str, str]]:
    """A stable system prompt first (KV-cache reuse), the variable parts last."""
    lines = [f"- id={f.case.id} kind={f.kind.value} skill_loaded={f.skill_loaded} "
             f"query={for_proposer(f.case.query)[:QUERY_CHARS]!r} why={for_proposer(f.reason)[:200]!r}" for f in failures]
    return [("system", "You diagnose why an agent skill (a SKILL.md file) failed on evaluation cases. Name the "
                       "single most likely root-cause category and cite the ids of the failure cases that show it."),
            ("user", f"SKILL.md:\n{skill_text}\n\nFailures:\n" + "\n".join(lines))]


def heuristic_cause(failures: list[Failure]) -> RootCauseFinding:
    """A rule over the failures: mostly never loaded -> routing trigger; otherwise instruction behaviour."""
    not_loaded = [f.case.id for f in failures if not f.skill_loaded]
    if failures and len(not_loaded) * 2 > len(failures):
        return RootCauseFinding(category=RootCause.ROUTING_TRIGGER, evidence=not_loaded,
                                summary="(rule) the agent did not load the skill in most failures")
    kinds = Counter(f.kind.value for f in failures)
    return RootCauseFinding(category=RootCause.INSTRUCTION_BEHAVIOUR, evidence=[f.case.id for f in failures],
                            summary=f"(rule) the skill was loaded but its answers failed: {dict(kinds)}")


def analyze(llm: LLM, skill_text: str, failures: list[Failure]) -> RootCauseFinding:
    """The root cause of `failures`. BudgetExceeded propagates (the run pauses), LLMUnavailable and
    LLMTimeout too (the run stops open); other LLM errors and answers without real evidence fall
    back to `heuristic_cause`."""
    try:
        answer = llm.structured(Role.PROPOSER, RootCauseAnswer, analyze_messages(skill_text, failures)).value
    except (BudgetExceeded, LLMUnavailable, LLMTimeout):
        raise  # no answer at all: the run stops open, and asks the model again when resumed
    except LLMError as e:
        log.warning("analyze: the proposer's answer is unusable (%s); using the rule", e)
        return heuristic_cause(failures)
    real = {f.case.id for f in failures}
    evidence = [cid for cid in dict.fromkeys(answer.evidence) if cid in real]
    if not evidence:
        log.warning("analyze: the proposer cited no real failure case; using the rule")
        return heuristic_cause(failures)
    return RootCauseFinding(category=RootCause(answer.category), summary=answer.summary.strip()[:500],
                            evidence=evidence)
