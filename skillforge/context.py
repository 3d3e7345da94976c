"""The runtime context graphs receive (`graph.invoke(input, context=...)`): every dependency a node
needs, built once from settings by the CLI or Studio, or from fakes by tests. Never a global."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from skillforge.config import Workspace
from skillforge.datasets import load_sets
from skillforge.routing.embedding import Embedder, get_embedder
from skillforge.executor import SkillUnderTest
from skillforge.llm.client import LLM, build_llm
from skillforge.registry import SkillRegistry
from skillforge.routing.index import RouteIndex
from skillforge.state.evaluate import EvalSet
from skillforge.state.llm import Role


@dataclass
class RouteContext:
    """What the route graph's nodes read."""

    index: RouteIndex
    llm: LLM | None = None
    """None: no router model configured, the cascade ends after the embed layer."""
    router_log: Path | None = None
    """runs/router.jsonl; None writes no log (benchmarks)."""
    source: str = "route"
    """Logged with each decision: "route" for traffic, "route eval" for an evaluation run."""


def route_context(ws: Workspace, *, embedder: Embedder | None = None, use_llm: bool = True,
                  use_head: bool = True, no_cache: bool = False) -> RouteContext:
    """The context for routing over the workspace's published skills."""
    registry = SkillRegistry.load(ws)
    emb = embedder or get_embedder()
    index = RouteIndex.for_workspace(ws, [p.skill for p in registry.skills.values()], emb, use_head=use_head)
    llm = build_llm(ws, no_cache=no_cache) if use_llm else None
    if llm is not None and not llm.configs[Role.ROUTER].configured:
        llm = None
    return RouteContext(index=index, llm=llm, router_log=ws.router_log)


@dataclass
class EvalContext:
    """What the evaluate graph's nodes read."""

    llm: LLM
    """Executor and judge models (scripted fakes in tests)."""
    sets: dict[str, EvalSet]
    others: dict[str, SkillUnderTest] = field(default_factory=dict)
    """The other published skills, visible in the executor's index on both sides."""
    evaluations_log: Path | None = None
    traces_dir: Path | None = None


def eval_context(ws: Workspace, llm: LLM) -> EvalContext:
    """The evaluation context of a workspace: its sets and its published skills."""
    registry = SkillRegistry.load(ws)
    others = {name: SkillUnderTest(p.skill, p.skill.body, p.release.release_id) for name, p in registry.skills.items()}
    return EvalContext(llm=llm, sets=load_sets(ws, registry.names()), others=others,
                       evaluations_log=ws.evaluations_log, traces_dir=ws.traces_dir)


@dataclass
class EvolveContext:
    """What the evolve graph's nodes read: the workspace (store, git, sets, runs/), the models, and
    the embedder for the routing gate (None: the default, built on first use)."""

    ws: Workspace
    llm: LLM
    embedder: Embedder | None = None

    def get_embedder(self) -> Embedder:
        if self.embedder is None:
            self.embedder = get_embedder()
        return self.embedder


def evolve_context(ws: Workspace, llm: LLM | None = None) -> EvolveContext:
    """The evolve context of a workspace, with the models from its settings unless given."""
    return EvolveContext(ws=ws, llm=llm if llm is not None else build_llm(ws))
