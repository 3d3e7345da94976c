"""The commands that need no model start cold: `skillforge route` with no router model (or with
--no-llm), `skills list|show|index|use` and `--version` import no langgraph, langchain or openai
(seconds of imports on a 2-core box, for a rule answer of 0.3 ms). Each runs in a fresh interpreter
that invokes the typer app in process and then reads `sys.modules`; a route with a router model
configured is the control that shows the check sees those imports when they happen."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLE_SKILLS, REPO, cli_env, run_cli

HEAVY = ("langgraph", "langchain", "langchain_core", "langchain_openai", "openai", "langsmith")
PROBE = f"""
import json, sys
from skillforge.cli.main import app
try:
    app(sys.argv[1:], prog_name="skillforge", standalone_mode=False)
except SystemExit:
    pass
heavy = sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r}))
print("\\nHEAVY=" + json.dumps(heavy))
"""
ROUTER_MODEL = {"SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_LLM_BASE_URL": "http://127.0.0.1:9/v1",
                "SKILLFORGE_LLM_API_KEY": "k"}


def heavy_imports(args: list[str], env: dict[str, str] | None = None) -> list[str]:
    """The heavy top-level packages in sys.modules after the CLI ran `args` in a fresh process."""
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=180,
                          env=cli_env({"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", **(env or {})}))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.rsplit("HEAVY=", 1)[1])


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("cold") / "ws"
    run_cli(["init", str(ws)])
    run_cli(["skills", "import", "--from", str(EXAMPLE_SKILLS), "-w", str(ws)])
    return ws


COLD = [
    (["route", "where is my parcel"], None),  # the rule layer answers
    (["route", "recommend a good book", "--json"], None),  # the embed layer: uncertain, NONE
    (["route", "recommend a good book", "--no-llm"], ROUTER_MODEL),  # a router model, turned off
    (["skills", "list"], None),
    (["skills", "show", "package-tracking"], None),
    (["skills", "index"], None),
    (["skills", "use", "package-tracking"], None),
]


@pytest.mark.parametrize(("args", "env"), COLD, ids=[" ".join(a) for a, _ in COLD])
def test_cold_command_imports_no_llm_stack(ws: Path, args: list[str], env: dict[str, str] | None) -> None:
    assert heavy_imports([*args, "-w", str(ws)], env) == []


def test_version_imports_no_llm_stack() -> None:
    assert heavy_imports(["--version"]) == []


def test_route_with_a_router_model_does_import_it(ws: Path) -> None:
    """The control: with a router model set, routing builds the LLM client and the graph (a rule
    hit sends no request), and the probe sees it."""
    found = heavy_imports(["route", "where is my parcel", "-w", str(ws)], ROUTER_MODEL)
    assert {"langgraph", "openai", "langchain_core"} <= set(found)
