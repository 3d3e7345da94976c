"""The enums and defaults the CLI's command signatures name, free of pydantic.

typer reads every command's signature to build the app (`skillforge --help`, and the first step of
every command), so what those signatures name must import cheaply (tests/test_cli_startup.py). Each
is defined here and re-exported by its home module (state.llm, state.evaluate, state.result,
llm.config, rules.canary, rules.health), which the rest of the code keeps importing it from: the
same objects either way.
"""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    """Who is calling: each role has its own endpoint, model and prices."""

    ROUTER = "router"
    EXECUTOR = "executor"
    JUDGE = "judge"
    PROPOSER = "proposer"


class ExecutionMode(StrEnum):
    """How the executor meets the skill under test."""

    BEHAVIOUR = "behaviour"
    """Loaded up front (its body in the system prompt, recorded as loaded): what the instructions do."""
    DISCLOSURE = "disclosure"
    """The skill index plus use_skill: whether the agent picks the skill, then follows it."""


class EvalVerdict(StrEnum):
    """What an evaluation answers (`EvalResult.verdict`, `SetScore.verdict`): the ratchet's verdict,
    or INVALID when the run cannot tell and the ratchet is not consulted. The values are the strings
    of `evaluate --json`, runs/evaluations.jsonl and the CLI's exit codes."""

    PASS = "PASS"
    REVIEW = "REVIEW"
    DECLINED = "DECLINED"
    INVALID = "INVALID"


MAX_CONCURRENCY = 64
"""The most cases (evaluate --concurrency) or skills (evolve --max-concurrency) run at once: each is a
thread (with --worker, one database session too); 2**64 of them was a crash, not a speed-up."""

DEFAULT_MIN_SESSIONS = 100
"""Sessions each arm of a canary needs before it may be promoted (rules.canary)."""
DEFAULT_MAX_AGE_HOURS = 168.0
"""A canary this old that still lacks its minimum sessions is reaped (rules.canary)."""
DEFAULT_WINDOW_DAYS = 30
"""The days of usage events `skills health` and `skills suggest` read by default (rules.health)."""
