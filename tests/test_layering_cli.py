"""The CLI is the top layer: no module of the package outside skillforge/cli/ imports skillforge.cli,
at module level or inside a function (a runner, a node or a service that needs a CLI piece has it
moved out of cli/). Checked on the source files, without importing them."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "skillforge"
CLI = "skillforge.cli"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _dynamic_import(call: ast.Call) -> bool:
    """`importlib.import_module("...")` or `__import__("...")` with a literal name."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return (name in ("import_module", "__import__") and bool(call.args) and isinstance(call.args[0], ast.Constant)
            and isinstance(call.args[0].value, str))


def cli_imports(source: str, module: str, is_package: bool = False) -> list[str]:
    """`line: what` for every import of skillforge.cli in `source` (the module `module`), at any
    depth: `import skillforge.cli.x`, `from skillforge.cli import x`, `from skillforge import cli`,
    relative imports that resolve into skillforge.cli, and import_module / __import__ of a literal name."""
    found = []
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.Call) and _dynamic_import(node):
            names = [node.args[0].value]  # type: ignore[attr-defined]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)] if node.level > 1 else anchor
                base = ".".join([*anchor, *([base] if base else [])])
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        hits = [n for n in names if n == CLI or n.startswith(CLI + ".")]
        if hits:
            found.append(f"{node.lineno}: {hits[0]}")
    return found


def test_no_module_outside_cli_imports_the_cli():
    modules = [p for p in sorted(PACKAGE.rglob("*.py")) if not p.is_relative_to(PACKAGE / "cli")]
    assert len(modules) > 50  # the walk found the package
    offenders = {str(p.relative_to(PACKAGE.parent)): hits for p in modules
                 if (hits := cli_imports(p.read_text(encoding="utf-8"), _module_name(p), p.name == "__init__.py"))}
    assert not offenders, f"modules outside skillforge/cli/ import skillforge.cli: {offenders}"


def test_the_check_sees_every_form_of_import():
    """The check can fail: each form below imports the CLI, at module level or in a function."""
    forms = {
        "import skillforge.cli.interrupt": "skillforge.runners.evolve",
        "import skillforge.cli": "skillforge.runners.evolve",
        "from skillforge.cli import interrupt": "skillforge.runners.evolve",
        "from skillforge.cli.evaluate import _saver": "skillforge.runners.evolve",
        "from skillforge import cli": "skillforge.runners.evolve",
        "def f():\n    from skillforge.cli.budget import report\n": "skillforge.runners.evolve",
        "class C:\n    def m(self):\n        import skillforge.cli.output as o\n": "skillforge.nodes.evaluate",
        "from ..cli import common": "skillforge.runners.evolve",
        "from . import cli": "skillforge",
        "import importlib\nimportlib.import_module('skillforge.cli.main')": "skillforge.runners.evolve",
        "__import__('skillforge.cli')": "skillforge.runners.evolve",
    }
    for source, module in forms.items():
        assert cli_imports(source, module, module == "skillforge"), source
    for source in ("import skillforge.client", "from skillforge.runners import interrupt",
                   "from skillforge import clients", "from . import interrupt", "import typer",
                   "importlib.import_module(name)", "importlib.import_module('skillforge.runners.evolve')"):
        assert not cli_imports(source, "skillforge.runners.evolve"), source
