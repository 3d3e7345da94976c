"""The CLI's start-up: building the typer app (`skillforge --help`, `--version`, and the first step of
every command) imports no heavy library. numpy, gitpython, pydantic, langgraph/langchain and the
library and runner modules are imported inside the commands that use them (the enums and defaults
the commands' signatures name live in state/cliopts.py), so a script, a cron line or an agent
hook calling `skillforge` many times does not pay for them on each call. A deterministic check of
which modules a fresh interpreter has imported, never a timer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("numpy", "git", "gitdb", "langgraph", "langchain_core", "langchain_openai", "openai", "mcp", "yaml",
         "sqlite3", "pydantic", "pydantic_core")
"""Third-party (and stdlib) packages no command needs to be defined; each is imported by a command's body."""

HEAVY_OURS = ("skillforge.library.services", "skillforge.library.store", "skillforge.library.gitrepo",
              "skillforge.library.registry", "skillforge.library.releases", "skillforge.library.canary",
              "skillforge.library.canaries", "skillforge.library.split", "skillforge.library.importer",
              "skillforge.context", "skillforge.routing", "skillforge.graphs", "skillforge.nodes",
              "skillforge.runners.evaluate", "skillforge.runners.rejudge", "skillforge.runners.budget",
              "skillforge.runners.evolve", "skillforge.llm.client", "skillforge.llm.ledger", "skillforge.skill.file",
              "skillforge.evaluation")
"""Our modules that pull the packages above (or the store and the router) in; also imported only by commands."""


def _imported_by(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", f"{code}; import sys; print('\\n'.join(sorted(sys.modules)))"],
                         capture_output=True, text=True, timeout=120, check=True)
    return set(out.stdout.split())


def _offenders(modules: set[str]) -> list[str]:
    return sorted(m for m in modules
                  if any(m == h or m.startswith(h + ".") for h in (*HEAVY, *HEAVY_OURS)))


def test_importing_the_cli_imports_no_heavy_module() -> None:
    assert _offenders(_imported_by("import skillforge.cli.main")) == []


def test_building_the_app_imports_no_heavy_module() -> None:
    """typer reads every command's signature when it builds the click group (what --help does): the
    option types and defaults those signatures name stay cheap to import."""
    code = "import typer; from skillforge.cli.main import app; typer.main.get_command(app)"
    assert _offenders(_imported_by(code)) == []


def test_the_check_sees_a_heavy_import() -> None:
    """The check can fail: a command module that imports, say, the library services at its top
    level is caught."""
    assert _offenders(_imported_by("import skillforge.cli.main, skillforge.library.services")) != []
    assert "numpy" in _offenders(_imported_by("import skillforge.cli.main, skillforge.library.split"))


def test_a_light_command_still_runs(tmp_path: Path) -> None:
    """`--version`, `init` and `skills list` work with their imports moved into the commands (a real
    workspace, a fresh interpreter: nothing imported beforehand)."""
    from skillforge.cli.main import package_version

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        code = "import sys; from skillforge.cli.main import main; sys.argv[0] = 'skillforge'; main()"
        return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120,
                              check=False)

    version = run("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"skillforge {package_version()}"
    ws = tmp_path / "ws"
    assert run("init", str(ws)).returncode == 0
    listed = run("skills", "list", "-w", str(ws), "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == {"skills": [], "unregistered": [], "retired": [], "interrupted": []}
