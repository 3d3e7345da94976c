"""The route graph: rule_match -> embed_match -> llm_choose -> record.

    from skillforge.graphs.route import graph
    from skillforge.context import route_context
    result = graph.invoke({"query": "明天上海会下雨吗"}, context=route_context(ws))

A layer that decides sets `hit_layer`; the next layer runs only if none has. Without a router
model the cascade ends after embed_match. `graph` is compiled without a checkpointer (routing is
one short step; `langgraph dev` refuses graphs with their own).
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from skillforge.context import RouteContext
from skillforge.nodes.route import embed_match, llm_choose, record, rule_match
from skillforge.state.route import RouteState


def _after_rule(state: RouteState) -> str:
    return "record" if state.hit_layer is not None else "embed_match"


def _after_embed(state: RouteState) -> str:
    return "record" if state.hit_layer is not None else "llm_choose"


def build_route_graph(context_schema: type[RouteContext] = RouteContext) -> CompiledStateGraph:
    g = StateGraph(RouteState, context_schema=context_schema)
    g.add_node("rule_match", rule_match)
    g.add_node("embed_match", embed_match)
    g.add_node("llm_choose", llm_choose)
    g.add_node("record", record)
    g.add_edge(START, "rule_match")
    g.add_conditional_edges("rule_match", _after_rule, ["embed_match", "record"])
    g.add_conditional_edges("embed_match", _after_embed, ["llm_choose", "record"])
    g.add_edge("llm_choose", "record")
    g.add_edge("record", END)
    return g.compile()


graph = build_route_graph()


def route(query: str, context: RouteContext, candidates: list[str] | None = None) -> RouteState:
    """Route one query; the result as a RouteState."""
    out = graph.invoke({"query": query, "candidates": candidates}, context=context)
    return RouteState.model_validate(out)
