"""The evolve graph: collect -> analyze -> propose -> check -> validate -> decide, then publish (L1),
review (L2: a person approves or rejects through interrupt()), suggest (L3), or back to propose
with feedback while rounds remain. A rebase in review goes back to check (the candidate re-applied
on the live release); a publish that is refused (the base moved, a name is taken, hand edits) goes
to review. A capture run (`skills new`, state.need set) goes capture -> review -> publish.

    from skillforge.graphs.evolve import build_evolve_graph
    g = build_evolve_graph(checkpointer=sqlite_saver(ws.checkpoints_dir / "graphs.sqlite"))
    g.invoke(EvolveState(run_id=rid, skill="taxi-hailing"), {"configurable": {"thread_id": rid}},
             context=evolve_context(ws), durability="sync")

`graph` (compiled without a checkpointer) is for `langgraph dev`, which brings its own.
"""

from __future__ import annotations

from functools import partial

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from skillforge.context import EvolveContext
from skillforge.evolution.validate import Subgraphs
from skillforge.graphs.evaluate import build_evaluate_graph
from skillforge.graphs.route import route
from skillforge.nodes.capture import after_capture, capture
from skillforge.nodes.evolve import after_analyze, after_collect, after_decide, analyze, check, collect, decide, \
    propose, validate
from skillforge.nodes.outcome import after_publish, after_review, publish, review, suggest
from skillforge.state.evolve import EvolveState


def build_evolve_graph(checkpointer: Checkpointer = None,
                       context_schema: type[EvolveContext] = EvolveContext) -> CompiledStateGraph:
    g = StateGraph(EvolveState, context_schema=context_schema)
    sub = Subgraphs(evaluate=build_evaluate_graph(checkpointer=False), route=route)  # what validation runs
    for name, fn in (("collect", collect), ("analyze", analyze), ("propose", propose), ("check", check),
                     ("validate", partial(validate, subgraphs=sub)), ("decide", partial(decide, subgraphs=sub)),
                     ("review", review), ("publish", publish), ("suggest", suggest),
                     ("capture", partial(capture, subgraphs=sub))):
        g.add_node(name, fn)
    g.add_conditional_edges(START, lambda s: "capture" if s.need else "collect",
                            {"capture": "capture", "collect": "collect"})
    g.add_conditional_edges("capture", after_capture, {"review": "review", "end": END})
    g.add_conditional_edges("collect", after_collect, {"analyze": "analyze", "end": END})
    g.add_conditional_edges("analyze", after_analyze, {"propose": "propose", "end": END})
    g.add_edge("propose", "check")
    g.add_edge("check", "validate")
    g.add_edge("validate", "decide")
    g.add_conditional_edges("decide", after_decide, {"propose": "propose", "publish": "publish", "review": "review",
                                                     "suggest": "suggest", "end": END})
    g.add_conditional_edges("review", after_review, {"publish": "publish", "check": "check", "end": END})
    g.add_conditional_edges("publish", after_publish, {"review": "review", "end": END})
    g.add_edge("suggest", END)
    return g.compile(checkpointer=checkpointer)


graph = build_evolve_graph()
