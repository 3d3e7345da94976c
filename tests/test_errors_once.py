"""Each named error is defined once, in skillforge/errors.py: no module defines a class of the same
name (two UnknownRun classes once lived in errors.py and the run reader)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import skillforge
from skillforge import errors
from skillforge.runners import evolve, reader

PACKAGE = Path(skillforge.__file__).parent


def test_no_module_redefines_a_named_error():
    named = {name for name, obj in vars(errors).items() if inspect.isclass(obj) and issubclass(obj, Exception)}
    again = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "errors.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        again += [f"{path.relative_to(PACKAGE)}: {node.name}" for node in ast.walk(tree)
                  if isinstance(node, ast.ClassDef) and node.name in named]
    assert again == []


def test_the_run_reader_and_the_runner_raise_the_one_unknown_run():
    assert reader.UnknownRun is errors.UnknownRun and evolve.UnknownRun is errors.UnknownRun
    assert issubclass(errors.UnknownRun, errors.SkillForgeError)  # the CLI's exit code 2, as before
