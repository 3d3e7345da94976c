"""State of the route graph: the query in, the decision and its evidence out."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field
from skillforge.state.inputs import GraphInput


class HitLayer(StrEnum):
    """Which layer answered. NONE: nobody was sure (or the query is out of scope)."""

    RULE = "rule"
    EMBED = "embed"
    LLM = "llm"
    NONE = "none"


class RouteState(GraphInput):
    """Read and written by rule_match -> embed_match -> llm_choose -> record."""

    query: str
    """The user's query, as typed."""
    candidates: list[str] | None = None
    """Restrict routing to these skills (None: every published skill)."""
    chosen: str | None = None
    """The skill to use, or None for NONE / no confident answer."""
    hit_layer: HitLayer | None = None
    """Set by the layer that decided; None while the cascade is still running."""
    scores: dict[str, dict[str, float]] = Field(default_factory=dict)
    """Per layer (rule / embed / llm), the score of each skill it considered."""
    latency_ms: dict[str, float] = Field(default_factory=dict)
    """Per layer, how long it took."""
    top_k: list[str] = Field(default_factory=list)
    """The embed layer's best skills, best first (handed to the LLM layer)."""
    none_share: float | None = None
    """What the head left for NONE, when the query fell in the router model's band (the band's NONE
    guard, rules.band: the model may answer a skill only at RouteThresholds.llm_none_ratio times it)."""
    reason: str = ""
    """Why the cascade stopped where it did."""
