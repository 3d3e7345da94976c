"""LLM roles and the per-run budget ledger. The ledger travels in graph state, so a resumed run
keeps its spend."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class Role(StrEnum):
    """Who is calling: each role has its own endpoint, model and prices."""

    ROUTER = "router"
    EXECUTOR = "executor"
    JUDGE = "judge"
    PROPOSER = "proposer"


class BudgetCaps(BaseModel):
    """Hard caps of one run. None means no cap."""

    model_config = ConfigDict(frozen=True)

    max_calls: int | None = None
    max_tokens: int | None = None
    """Prompt plus completion tokens."""
    max_cost_usd: float | None = None


class RoleSpend(BaseModel):
    calls: int = 0
    """Requests actually sent (failed ones included); cache hits are not calls."""
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


class BudgetLedger(BaseModel):
    """What a run has spent, by role, against its caps."""

    caps: BudgetCaps = Field(default_factory=BudgetCaps)
    by_role: dict[Role, RoleSpend] = Field(default_factory=dict)

    def spend(self, role: Role) -> RoleSpend:
        return self.by_role.setdefault(role, RoleSpend())

    @property
    def calls(self) -> int:
        return sum(s.calls for s in self.by_role.values())

    @property
    def tokens(self) -> int:
        return sum(s.prompt_tokens + s.completion_tokens for s in self.by_role.values())

    @property
    def cost_usd(self) -> float:
        return sum(s.cost_usd for s in self.by_role.values())

    @property
    def cache_hits(self) -> int:
        return sum(s.cache_hits for s in self.by_role.values())
