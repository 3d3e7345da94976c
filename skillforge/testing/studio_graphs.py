"""The route, evaluate and evolve graphs with scripted models, for `langgraph dev` in a test
(tests/test_studio.py writes a langgraph.json that points at `route`, `evaluate` and `evolve` here).

They are skillforge.graphs' own builds with a context schema of their own: a run that brings no
context gets one built from the workspace $SKILLFORGE_WORKSPACE (as with the real graphs), whose
models are the evolve test world's (skillforge.testing.evolve_world): scripted executor, judge and
proposer, the proposer offering the ETA fix as an L2 edit, so an evolve run stops in review. The
route graph gets no router model (the cascade ends after the embed layer).

Production code never imports this module: the fakes come in from the outside, through the graphs'
context schema.
"""

from __future__ import annotations

from dataclasses import dataclass

from skillforge.config import Workspace
from skillforge.context import EvalContext, EvolveContext, RouteContext, eval_context, route_context, shared_embedder
from skillforge.graphs.evaluate import build_evaluate_graph
from skillforge.graphs.evolve import build_evolve_graph
from skillforge.graphs.route import build_route_graph
from skillforge.llm.client import LLM
from skillforge.testing.evolve_world import World, eta_patch


def scripted_llm() -> LLM:
    """The evolve world's models (a fresh set per call: replies depend only on the messages)."""
    return World(lambda round_no: [eta_patch(claimed=2)]).llm()


@dataclass
class ScriptedRouteContext(RouteContext):
    """RouteContext whose settings-built context has no router model."""

    @classmethod
    def from_settings(cls, ws: Workspace) -> RouteContext:
        return route_context(ws, embedder=shared_embedder(), use_llm=False)


@dataclass
class ScriptedEvalContext(EvalContext):
    """EvalContext whose settings-built context runs the scripted models."""

    @classmethod
    def from_settings(cls, ws: Workspace) -> EvalContext:
        return eval_context(ws, scripted_llm())


@dataclass
class ScriptedEvolveContext(EvolveContext):
    """EvolveContext whose settings-built context runs the scripted models."""

    @classmethod
    def from_settings(cls, ws: Workspace) -> EvolveContext:
        return EvolveContext(ws=ws, llm=scripted_llm(), embedder=shared_embedder())


route = build_route_graph(ScriptedRouteContext)
evaluate = build_evaluate_graph(context_schema=ScriptedEvalContext)
evolve = build_evolve_graph(context_schema=ScriptedEvolveContext)
