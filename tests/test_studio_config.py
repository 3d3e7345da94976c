"""The shipped langgraph.json must load as `langgraph dev` loads it (QA 24 finding 1): the server
reads each graph from the module's namespace (`module.__dict__[name]`, langgraph_api/graph.py), so a
graph built on first attribute access (route.py's module `__getattr__`) was not found and the whole
server exited at start. tests/test_studio.py runs the real server on a langgraph.json of its own
(scripted models), so it could not see this."""

from __future__ import annotations

import importlib
import json

from conftest import REPO
from langgraph.pregel import Pregel


def test_every_graph_of_the_shipped_langgraph_json_is_a_compiled_graph_in_its_module_namespace():
    config = json.loads((REPO / "langgraph.json").read_text(encoding="utf-8"))
    assert sorted(config["graphs"]) == ["evaluate", "evolve", "route"]
    for name, spec in config["graphs"].items():
        module_name, variable = spec.split(":")
        module = importlib.import_module(module_name)
        graph = vars(module).get(variable)  # what langgraph_api reads: not getattr
        assert isinstance(graph, Pregel), f"{name}: {spec} is {type(graph).__name__}, not a compiled graph"
        assert graph.checkpointer is None, f"{name}: `langgraph dev` refuses a graph with its own checkpointer"
    from skillforge.graphs import route

    assert vars(importlib.import_module("skillforge.graphs.studio"))["route"] is route.graph  # one compiled route graph
