"""LLM roles, a run's budget caps, and what a run has spent.

The caps travel in graph state (an evolve run's `budget`), so a resumed run keeps them. What a run
has spent does not: it is counted in the workspace's request ledger (skillforge/llm/ledger.py,
runs/llm_ledger.db), one row per request, written before the request is sent, so that a kill, a pause
or a resume never loses or resets it. `Spend` is a reading of that ledger.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, field_validator

from skillforge.state.cliopts import Role  # noqa: F401  (defined without pydantic, for the CLI)

CAP_LIMIT = 2**63 - 1
"""The largest cap: what a checkpoint (msgpack's int64) and the ledger (SQLite INTEGER) can hold. A
larger number was an internal error when the checkpoint was written."""


class BudgetCaps(BaseModel):
    """Hard caps of one run. None means no cap."""

    model_config = ConfigDict(frozen=True)

    max_calls: int | None = Field(default=None, ge=1, le=CAP_LIMIT)
    """Requests sent to an endpoint (retries included); answers from the cache are not counted."""
    max_tokens: int | None = Field(default=None, ge=1, le=CAP_LIMIT)
    """Prompt plus completion tokens."""
    max_cost_usd: float | None = Field(default=None, gt=0)

    @field_validator("max_cost_usd")
    @classmethod
    def _finite(cls, v: float | None) -> float | None:
        """A cost cap is a finite number (NaN passes every comparison and would cap nothing)."""
        if v is not None and not math.isfinite(v):
            raise ValueError("must be a finite number")
        return v


class BudgetLedger(BaseModel):
    """A run's budget as graph state: its caps only. The spend is in the workspace's request ledger
    (one source of truth): a copy in the checkpoint went back to its value before a stage whenever
    that stage was paused or killed."""

    caps: BudgetCaps = Field(default_factory=BudgetCaps)


class RoleSpend(BaseModel):
    """One role's requests in one run, as the ledger counted them."""

    calls: int = 0
    """Requests sent (failed ones and retries included): the paid requests."""
    cache_hits: int = 0
    """Answers served from the cache: no request was sent."""
    refused: int = 0
    """Requests not sent because a cap would have been passed."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reserved_tokens: int = 0
    """The worst case (estimated prompt + reply cap) of requests whose usage is not known: in flight,
    timed out, killed, or answered with usage that is not a count. Counted against the token cap."""
    cost_usd: float = 0.0
    reserved_cost_usd: float = 0.0


class Spend(BaseModel):
    """What one run has spent, by role (a reading of the request ledger)."""

    by_role: dict[Role, RoleSpend] = Field(default_factory=dict)

    def role(self, role: Role) -> RoleSpend:
        return self.by_role.get(role, RoleSpend())

    @property
    def calls(self) -> int:
        """Paid requests."""
        return sum(s.calls for s in self.by_role.values())

    @property
    def cache_hits(self) -> int:
        return sum(s.cache_hits for s in self.by_role.values())

    @property
    def refused(self) -> int:
        return sum(s.refused for s in self.by_role.values())

    @property
    def tokens(self) -> int:
        """Tokens the endpoints reported."""
        return sum(s.prompt_tokens + s.completion_tokens for s in self.by_role.values())

    @property
    def reserved_tokens(self) -> int:
        return sum(s.reserved_tokens for s in self.by_role.values())

    @property
    def cost_usd(self) -> float:
        return sum(s.cost_usd for s in self.by_role.values())

    @property
    def reserved_cost_usd(self) -> float:
        return sum(s.reserved_cost_usd for s in self.by_role.values())

    def report(self) -> dict[str, int | float]:
        """The counts a command shows (--json `budget`)."""
        return {"paid": self.calls, "cached": self.cache_hits, "refused": self.refused, "tokens": self.tokens,
                "reserved_tokens": self.reserved_tokens, "cost_usd": round(self.cost_usd, 6)}
