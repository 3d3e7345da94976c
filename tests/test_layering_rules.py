"""Rules are pure: a module under skillforge/rules/ imports no SkillForge module but state/ and other
rules (read from the source with `ast`, so an import inside a function counts too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import skillforge

PACKAGE = Path(skillforge.__file__).parent
RULES = PACKAGE / "rules"
ALLOWED = ("skillforge.state", "skillforge.rules")


def imported(source: str, module: str) -> list[str]:
    """Every module that `source` (the text of module `module`, e.g. skillforge.rules.ids) imports,
    relative imports resolved; for `from package import name`, also `package.name` (it may be a
    module)."""
    package = module.rsplit(".", 1)[0]
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            found.append(base)
            found += [f"{base}.{alias.name}" for alias in node.names]
    return found


def outside_layer(source: str, module: str) -> list[str]:
    """The SkillForge modules `source` imports that are neither state/ nor rules/ (for `from
    skillforge import x`, the name `skillforge.x`)."""
    bad = set()
    for name in imported(source, module):
        if name != "skillforge" and not name.startswith("skillforge."):
            continue
        if name == "skillforge" or any(name == a or name.startswith(a + ".") for a in ALLOWED):
            continue
        bad.add(name)
    return sorted(bad)


def rules_modules() -> list[Path]:
    return sorted(RULES.rglob("*.py"))


def test_there_are_rules_to_check():
    assert len(rules_modules()) > 20


@pytest.mark.parametrize("path", rules_modules(), ids=lambda p: p.name)
def test_a_rules_module_imports_only_state_and_rules(path: Path):
    module = "skillforge." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
    assert outside_layer(path.read_text(encoding="utf-8"), module) == []


@pytest.mark.parametrize("source", [
    "from skillforge.skill.file import NAME_RE\n",
    "import skillforge.llm.client\n",
    "from skillforge import errors\n",
    "from ..skill import file\n",
    "from ..errors import InvalidId\n",
    "def f():\n    from skillforge.journal import append_jsonl\n",
])
def test_the_check_sees_every_kind_of_import_outside_the_layer(source: str):
    assert outside_layer(source, "skillforge.rules.example") != []


@pytest.mark.parametrize("source", [
    "from skillforge.state.evolve import CandidateKind\n",
    "import skillforge.rules.paired\n",
    "from skillforge.rules import paired\n",
    "from skillforge import state\n",
    "from . import paired\n",
    "from .paired import PRIMARY\n",
    "from ..state.skill import NAME_RE\n",
    "import math\nimport numpy as np\nfrom pydantic import BaseModel\n",
])
def test_the_check_lets_state_rules_and_other_packages_through(source: str):
    assert outside_layer(source, "skillforge.rules.example") == []
