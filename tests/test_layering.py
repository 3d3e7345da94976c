"""Bars on the package's layering, read from the source with `ast` (every import statement, those
inside functions too, relative ones resolved, and `importlib.import_module("...")` with a literal):

- production code knows no test double: no module outside skillforge/testing/ imports
  skillforge.testing (the Studio test brings its fakes through its own graphs' context schema);
- the evolve services take the graphs they run from the evolve graph: no module under
  skillforge/evolution/ imports skillforge.graphs;
- the CLI is the top layer: no module outside skillforge/cli/ imports skillforge.cli;
- rules are pure: a module under skillforge/rules/ imports no SkillForge module but state/ and rules/;
- the package root keeps at most 8 modules (the domains live in subpackages).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO

PACKAGE = REPO / "skillforge"


def module_name(path: Path) -> str:
    """`skillforge/evolution/validate.py` -> `skillforge.evolution.validate` (a package: its name)."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(source: str, module: str, is_package: bool = False) -> Iterator[tuple[int, str]]:
    """(line, module name) of everything `source` (module `module`) imports, anywhere in it.
    `from a import b` yields `a` and `a.b` (b may be a module); relative imports are resolved."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            yield node.lineno, base
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in ("import_module", "__import__"):
                yield node.lineno, node.args[0].value


def offences(files: list[Path], forbidden: str) -> list[str]:
    """`path:line imports name` for every import of `forbidden` (or a module under it) in `files`."""
    found = []
    for path in files:
        for line, name in imports(path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py"):
            if name == forbidden or name.startswith(forbidden + "."):
                found.append(f"{path.relative_to(REPO)}:{line} imports {name}")
    return found


def modules_under(folder: Path, *, outside: Path | None = None) -> list[Path]:
    files = sorted(folder.rglob("*.py"))
    return [p for p in files if outside is None or outside not in p.parents]


def test_no_production_module_imports_the_test_doubles():
    files = modules_under(PACKAGE, outside=PACKAGE / "testing")
    assert len(files) > 100 and not any("testing" in p.relative_to(PACKAGE).parts for p in files)
    assert offences(files, "skillforge.testing") == []


def test_no_evolve_service_imports_a_graph():
    files = modules_under(PACKAGE / "evolution")
    assert PACKAGE / "evolution" / "validate.py" in files
    assert offences(files, "skillforge.graphs") == []


@pytest.mark.parametrize("source", [
    "import skillforge.testing.fake_chat",
    "from skillforge.testing import fake_chat",
    "from skillforge import testing",
    "from skillforge import config, testing as t",
    "def f():\n    from skillforge.testing.evolve_world import World\n    return World",
    "class C:\n    def m(self):\n        import skillforge.testing as t\n        return t",
    "from ..testing import fake_chat",
    "from .. import testing",
    "import importlib\nmod = importlib.import_module('skillforge.testing.studio_graphs')",
    "__import__('skillforge.testing')",
])
def test_the_scan_finds_each_way_of_importing(source):
    names = [name for _, name in imports(source, module_name(PACKAGE / "evolution" / "probe.py"))]
    assert any(n == "skillforge.testing" or n.startswith("skillforge.testing.") for n in names), names


@pytest.mark.parametrize("source", [
    "import skillforge.testingx",
    "from skillforge.state import testing_note",
    "from . import graphs_note",
    "x = 'skillforge.testing'",
])
def test_the_scan_does_not_flag_lookalikes(source):
    names = [name for _, name in imports(source, "skillforge.evolution.probe")]
    assert not any(n == "skillforge.testing" or n.startswith("skillforge.testing.") for n in names), names
    assert not any(n == "skillforge.graphs" or n.startswith("skillforge.graphs.") for n in names), names


def test_no_module_outside_the_cli_imports_it():
    entry = PACKAGE / "__main__.py"  # `python -m skillforge`: the command itself, so it runs the CLI
    files = [f for f in modules_under(PACKAGE, outside=PACKAGE / "cli") if f != entry]
    assert PACKAGE / "runners" / "evolve.py" in files and PACKAGE / "cli" / "main.py" not in files
    assert offences(files, "skillforge.cli") == []


RULES_MAY_IMPORT = ("skillforge.state", "skillforge.rules")


def outside_rules_layer(source: str, module: str) -> list[str]:
    """The SkillForge modules `source` imports that are neither state/ nor rules/ (`from skillforge
    import x` counts as `skillforge.x`)."""
    return sorted({name for _, name in imports(source, module)
                   if name.startswith("skillforge.")
                   and not any(name == a or name.startswith(a + ".") for a in RULES_MAY_IMPORT)})


def test_rules_import_only_state_and_rules():
    files = modules_under(PACKAGE / "rules")
    assert len(files) > 20
    found = {str(p.relative_to(REPO)): bad for p in files
             if (bad := outside_rules_layer(p.read_text(encoding="utf-8"), module_name(p)))}
    assert found == {}


@pytest.mark.parametrize("source", [
    "from skillforge.skill.file import NAME_RE\n",
    "import skillforge.llm.client\n",
    "from skillforge import errors\n",
    "from ..skill import file\n",
    "from ..errors import InvalidId\n",
    "def f():\n    from skillforge.journal import append_jsonl\n",
])
def test_the_rules_check_sees_every_kind_of_import_outside_the_layer(source):
    assert outside_rules_layer(source, "skillforge.rules.example") != []


@pytest.mark.parametrize("source", [
    "from skillforge.state.evolve import CandidateKind\n",
    "import skillforge.rules.paired\n",
    "from skillforge.rules import paired\n",
    "from . import paired\n",
    "from .paired import PRIMARY\n",
    "from ..state.skill import NAME_RE\n",
    "import math\nimport numpy as np\nfrom pydantic import BaseModel\n",
])
def test_the_rules_check_lets_state_rules_and_other_packages_through(source):
    assert outside_rules_layer(source, "skillforge.rules.example") == []


def test_the_package_root_keeps_at_most_eight_modules():
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert "__init__.py" in root and len(root) <= 8, root
