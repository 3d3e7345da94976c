"""`-w/--workspace` and `--json` before the command as well as after it (cli/global_opts.py): real
commands on temporary workspaces, as a user runs them. After the command wins over before it;
before it beats $SKILLFORGE_WORKSPACE; a command without the option is a usage error naming it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLE_SKILLS, run_cli

from skillforge.cli.global_opts import global_option


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """Workspace A with news-digest and taxi-hailing published, workspace B with news-digest only."""
    tmp = tmp_path_factory.mktemp("globalopts")
    made = []
    for label, names in (("a", ("news-digest", "taxi-hailing")), ("b", ("news-digest",))):
        src = tmp / f"src-{label}"
        for name in names:
            shutil.copytree(EXAMPLE_SKILLS / name, src / name)
        root = tmp / label
        run_cli(["init", str(root)])
        run_cli(["skills", "import", "--from", str(src), "-w", str(root)])
        made.append(str(root))
    return made[0], made[1]


def said(stderr: str) -> str:
    """A usage error's text with rich's box (which may wrap it) taken away."""
    return " ".join(stderr.translate({ord(c): " " for c in "│╭╮╰╯─"}).split())


def names(stdout: str) -> list[str]:
    return [s["name"] for s in json.loads(stdout)["skills"]]


def test_workspace_and_json_before_or_after_the_command(two):
    a, b = two
    assert names(run_cli(["skills", "list", "--json", "-w", a]).stdout) == ["news-digest", "taxi-hailing"]
    for args in (["-w", a, "skills", "list", "--json"], ["--workspace", a, "--json", "skills", "list"],
                 [f"--workspace={a}", "skills", "list", "--json"], [f"-w{a}", "--json", "skills", "list"],
                 ["--json", "skills", "list", "-w", a]):
        assert names(run_cli(args).stdout) == ["news-digest", "taxi-hailing"], args
    assert names(run_cli(["-w", b, "--json", "skills", "list"]).stdout) == ["news-digest"]


def test_route_and_releases_take_them_before_the_command(two):
    a, _ = two
    query = "summarise today's news"
    before = json.loads(run_cli(["-w", a, "--json", "route", query, "--no-llm"]).stdout)
    after = json.loads(run_cli(["route", query, "--no-llm", "--json", "-w", a]).stdout)
    assert before["chosen"] == after["chosen"] == "news-digest" and before["query"] == query
    table = run_cli(["--workspace", a, "route", query, "--no-llm"]).stdout  # no --json: the text output
    assert table.startswith("news-digest") and not table.lstrip().startswith("{")
    history = json.loads(run_cli(["-w", a, "--json", "releases", "list", "taxi-hailing"]).stdout)
    assert history == json.loads(run_cli(["releases", "list", "taxi-hailing", "--json", "-w", a]).stdout)
    assert "taxi-hailing" in json.dumps(history)


def test_between_a_group_and_its_command(two):
    """`skills -w WS list` was "No such option: -w" (QA pass 16), though `route -w WS eval` worked."""
    a, b = two
    for args in (["skills", "-w", a, "list", "--json"], ["skills", "--json", "-w", a, "list"],
                 ["skills", f"--workspace={a}", "--json", "list"], ["-w", b, "skills", "-w", a, "--json", "list"]):
        assert names(run_cli(args).stdout) == ["news-digest", "taxi-hailing"], args
    runs = json.loads(run_cli(["runs", "-w", a, "list", "--json"]).stdout)
    assert runs == json.loads(run_cli(["runs", "list", "--json", "-w", a]).stdout)
    no_json = run_cli(["skills", "--json", "export", "news-digest", "-w", a], ok=2)
    assert "`skillforge skills export` has no --json" in said(no_json.stderr)
    assert "Usage: skillforge skills" in run_cli(["skills", "-w", a, "--help"]).stdout


def test_after_the_command_wins_and_before_beats_the_env_variable(two):
    a, b = two
    assert names(run_cli(["-w", a, "skills", "list", "--json", "-w", b]).stdout) == ["news-digest"]
    assert names(run_cli(["-w", b, "--json", "skills", "list", "-w", a]).stdout) == ["news-digest", "taxi-hailing"]
    env = {"SKILLFORGE_WORKSPACE": b}
    assert names(run_cli(["skills", "list", "--json"], env=env).stdout) == ["news-digest"]  # the variable alone
    assert names(run_cli(["-w", a, "skills", "list", "--json"], env=env).stdout) == ["news-digest", "taxi-hailing"]
    assert names(run_cli(["skills", "list", "--json", "-w", a], env=env).stdout) == ["news-digest", "taxi-hailing"]


def test_a_workspace_named_like_a_command(two, tmp_path):
    """The value of -w is never taken for the command: a workspace folder called `skills`."""
    a, _ = two
    shutil.copytree(a, tmp_path / "skills", symlinks=True)
    proc = run_cli(["-w", "skills", "--json", "skills", "list"], cwd=tmp_path)
    assert names(proc.stdout) == ["news-digest", "taxi-hailing"]


def test_a_command_without_the_option_is_a_usage_error(two, tmp_path):
    a, _ = two
    no_ws = run_cli(["-w", a, "init", str(tmp_path / "new")], ok=2)
    assert "`skillforge init` has no --workspace" in said(no_ws.stderr) and not (tmp_path / "new").exists()
    no_json = run_cli(["--json", "skills", "export", "news-digest", "-w", a], ok=2)
    assert "`skillforge skills export` has no --json" in said(no_json.stderr)
    assert "requires an argument" in run_cli(["-w"], ok=2).stderr
    assert "No such command" in run_cli(["-w", a, "nosuchcommand"], ok=2).stderr
    assert "Usage: skillforge skills" in run_cli(["-w", a, "skills", "--help"]).stdout  # a group: its help


@pytest.mark.parametrize(("token", "expected"), [
    ("-w", ("--workspace", True)), ("--workspace", ("--workspace", True)), ("-wdir", ("--workspace", False)),
    ("--workspace=dir", ("--workspace", False)), ("--json", ("--json", False)),
    ("--version", None), ("--json=1", None), ("--workspaces", None), ("skills", None), ("--", None),
])
def test_which_tokens_are_global_options(token, expected):
    assert global_option(token) == expected


def test_existing_env_forms_still_work(two, tmp_path):
    """`cd WS && skillforge ...` (no -w at all) still opens the current folder."""
    a, _ = two
    assert names(run_cli(["skills", "list", "--json"], cwd=Path(a)).stdout) == ["news-digest", "taxi-hailing"]
