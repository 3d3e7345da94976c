"""The evaluate graph: load_cases -> run_case per case (Send) -> measure -> record.

Is a candidate release of a skill better than the current one, and safe to publish?

    from skillforge.graphs.evaluate import build_evaluate_graph
    g = build_evaluate_graph(checkpointer=SqliteSaver(conn))
    g.invoke(EvalState(...), {"configurable": {"thread_id": run_id}, "max_concurrency": 8}, context=ctx)

Each finished case is written to the checkpoint as it completes, so `g.invoke(None, cfg, ...)`
after a crash runs only the unfinished cases. `graph` (no checkpointer) is for `langgraph dev`.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from skillforge.context import EvalContext
from skillforge.nodes.evaluate import fan_out, load_cases, measure_node, record, run_case
from skillforge.state.evaluate import CaseTask
from skillforge.state.evaluate_graph import EvalState


def build_evaluate_graph(checkpointer: Checkpointer = None,
                         context_schema: type[EvalContext] = EvalContext) -> CompiledStateGraph:
    g = StateGraph(EvalState, context_schema=context_schema)
    g.add_node("load_cases", load_cases)
    g.add_node("run_case", run_case, input_schema=CaseTask)
    g.add_node("measure", measure_node)
    g.add_node("record", record)
    g.add_edge(START, "load_cases")
    g.add_conditional_edges("load_cases", fan_out, ["run_case", "measure"])
    g.add_edge("run_case", "measure")
    g.add_edge("measure", "record")
    g.add_edge("record", END)
    return g.compile(checkpointer=checkpointer)


graph = build_evaluate_graph()
