"""The three graphs as `langgraph dev` (LangGraph Studio, `make studio`) loads them: langgraph.json
points here. The server reads each graph from the module's own namespace (`module.__dict__[name]`),
not through attribute access, so a graph it serves must be compiled at import: route.py's `graph`
is compiled on first attribute access (its module `__getattr__`), which the server never makes,
so that the CLI's cold route path need not import LangGraph.

    {"graphs": {"route": "skillforge.graphs.studio:route", "evaluate": "skillforge.graphs.studio:evaluate",
                "evolve": "skillforge.graphs.studio:evolve"}}
"""

from __future__ import annotations

from skillforge.graphs.evaluate import graph as evaluate
from skillforge.graphs.evolve import graph as evolve
from skillforge.graphs.route import graph as route  # the module's __getattr__ compiles it, here at import

__all__ = ["evaluate", "evolve", "route"]
