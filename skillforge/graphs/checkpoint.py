"""The SqliteSaver for CLI and batch runs, with SkillForge's state types registered, so checkpoints
round-trip them as typed models (and stay loadable once LangGraph blocks unregistered types)."""

from __future__ import annotations

import enum
import importlib
import inspect
import sqlite3
from pathlib import Path

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import BaseModel

STATE_MODULES = ("skillforge.state.evaluate", "skillforge.state.evaluate_graph", "skillforge.state.llm",
                 "skillforge.state.route", "skillforge.state.skill", "skillforge.state.release",
                 "skillforge.evaluation", "skillforge.rules.ratchet", "skillforge.rules.paired",
                 "skillforge.state.evolve")


def state_types() -> list[tuple[str, str]]:
    """(module, class) of every pydantic model and enum the graphs keep in state."""
    found = []
    for name in STATE_MODULES:
        module = importlib.import_module(name)
        for attr, obj in vars(module).items():
            if inspect.isclass(obj) and obj.__module__ == name and issubclass(obj, (BaseModel, enum.Enum)):
                found.append((name, attr))
    return sorted(found)


def sqlite_saver(path: Path) -> SqliteSaver:
    path.parent.mkdir(parents=True, exist_ok=True)
    serde = JsonPlusSerializer(allowed_msgpack_modules=state_types())
    return SqliteSaver(sqlite3.connect(path, check_same_thread=False), serde=serde)
