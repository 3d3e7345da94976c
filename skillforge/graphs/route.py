"""The route graph: rule_match -> embed_match -> llm_choose -> record.

    from skillforge.graphs.route import graph
    from skillforge.context import route_context
    result = graph.invoke({"query": "明天上海会下雨吗"}, context=route_context(ws))

A layer that decides sets `hit_layer`; the next layer runs only if none has. Without a router
model the cascade ends after embed_match. `graph` is compiled without a checkpointer (routing is
one short step; `langgraph dev` refuses graphs with their own), on first use: importing langgraph
costs seconds, and `route_plain` walks the same nodes and edges without it (the CLI's cold path).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from skillforge.context import RouteContext
from skillforge.nodes.route import embed_match, llm_choose, record, rule_match
from skillforge.state.route import RouteState

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

NODES: dict[str, Callable[..., dict[str, object]]] = {
    "rule_match": rule_match, "embed_match": embed_match, "llm_choose": llm_choose, "record": record}


def _after_rule(state: RouteState) -> str:
    return "record" if state.hit_layer is not None else "embed_match"


def _after_embed(state: RouteState) -> str:
    return "record" if state.hit_layer is not None else "llm_choose"


EDGES: dict[str, Callable[[RouteState], str]] = {
    "rule_match": _after_rule, "embed_match": _after_embed, "llm_choose": lambda _: "record"}
"""Where each node leads: the graph's edges, and `route_plain`'s walk."""


def build_route_graph(context_schema: type[RouteContext] = RouteContext) -> CompiledStateGraph:
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(RouteState, context_schema=context_schema)
    for name, node in NODES.items():
        g.add_node(name, node)
    g.add_edge(START, "rule_match")
    g.add_conditional_edges("rule_match", _after_rule, ["embed_match", "record"])
    g.add_conditional_edges("embed_match", _after_embed, ["llm_choose", "record"])
    g.add_edge("llm_choose", "record")
    g.add_edge("record", END)
    return g.compile()


@functools.cache
def _graph() -> CompiledStateGraph:
    return build_route_graph()


def __getattr__(name: str) -> object:
    """`graph` (langgraph.json, Studio, `from skillforge.graphs.route import graph`), compiled once."""
    if name == "graph":
        return _graph()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def route(query: str, context: RouteContext, candidates: list[str] | None = None) -> RouteState:
    """Route one query with the compiled graph; the result as a RouteState."""
    out = _graph().invoke({"query": query, "candidates": candidates}, context=context)
    return RouteState.model_validate(out)


@dataclass(frozen=True)
class _Run:
    """What a node reads of LangGraph's Runtime: the context."""

    context: RouteContext


def route_plain(query: str, context: RouteContext, candidates: list[str] | None = None) -> RouteState:
    """Route one query by calling the graph's nodes along its edges in this process, without
    LangGraph: the same decision, reason and router log line as `route`. Each node's update
    replaces the fields it names, as the graph's channels do."""
    run = _Run(context)
    state = RouteState(query=query, candidates=candidates)
    step = "rule_match"
    while True:
        state = RouteState.model_validate({**state.model_dump(), **NODES[step](state, run)})
        if step == "record":
            return state
        step = EDGES[step](state)


def reaches_embed(query: str, context: RouteContext, candidates: list[str] | None = None) -> bool:
    """Whether routing `query` gets to embed_match (the rule layer, run as the graph runs it, leaves
    it undecided), so its vector will be needed: `route eval` embeds only those queries, in batches,
    beforehand. Pure: nothing is logged."""
    state = RouteState(query=query, candidates=candidates)
    state = RouteState.model_validate({**state.model_dump(), **NODES["rule_match"](state, _Run(context))})
    return EDGES["rule_match"](state) == "embed_match"


def router_for(context: RouteContext) -> Callable[[str, RouteContext, list[str] | None], RouteState]:
    """The compiled graph (`route`) when the LLM layer is on, else `route_plain`: the same answer
    and router log line, without importing langgraph, langchain or openai, and without the
    graph's per-call overhead (the CLI's cold start, the MCP server's hot path)."""
    return route if context.llm is not None else route_plain
