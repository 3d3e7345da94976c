"""Shared fixtures: real workspaces (real git repository, real SQLite file) in tmp_path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from forkserve import ForkServer
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

os.environ.setdefault("OMP_NUM_THREADS", "1")
# Hypothesis: nothing written into the checkout (no example database; its unicode cache in the
# system temp folder, not ./.hypothesis), and no per-example wall-clock deadline (a loaded
# 2-core box makes it flaky).
settings.register_profile("skillforge", database=None, deadline=None)
settings.load_profile("skillforge")
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "skillforge-tests-hypothesis")

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
BENCH = FIXTURES / "bench"  # a copy of the routing bench library, see tests/fixtures/README.md
BENCH_SKILLS = BENCH / "skills"
ROUTE_DEV = BENCH / "route_dev.jsonl"
EXAMPLE_SKILLS = REPO / "skills"

from skillforge.skill import file as skillfile  # noqa: E402
from skillforge.config import Workspace, init_workspace  # noqa: E402
from skillforge.library.releases import ReleaseStateMachine  # noqa: E402


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    """An initialised, empty workspace."""
    return init_workspace(tmp_path / "ws")


def machine_of(root: Path) -> ReleaseStateMachine:
    """The release state machine of the workspace at `root`."""
    return ReleaseStateMachine.open(Workspace.open(root))


@pytest.fixture
def examples_ws(tmp_path: Path) -> Path:
    """A workspace with the example skills imported (set up in-process: the CLI runs are the tests)."""
    workspace = init_workspace(tmp_path / "ws")
    with_examples(workspace)
    return workspace.root


def with_examples(workspace: Workspace) -> ReleaseStateMachine:
    """The 10 example skills copied into `workspace` and imported as IMPORTED releases."""
    shutil.copytree(EXAMPLE_SKILLS, workspace.skills_dir, dirs_exist_ok=True)
    m = ReleaseStateMachine.open(workspace)
    result = m.import_skills(skillfile.scan(workspace.skills_dir, workspace.root))
    assert not result.errors and len(result.imported) == 10
    return m


@pytest.fixture
def machine(workspace: Workspace) -> ReleaseStateMachine:
    """A workspace with the 10 example skills imported as IMPORTED releases."""
    return with_examples(workspace)


def live_release(ws: Workspace, skill: str) -> str:
    """The id of `skill`'s live release, read from the workspace's store."""
    from skillforge.library.store import Store

    store = Store(ws.db_path)
    try:
        return store.current(skill).release_id
    finally:
        store.close()


def edited(m: ReleaseStateMachine, skill: str, line: str) -> dict[str, bytes]:
    """The skill's current working-tree files with one line appended to SKILL.md."""
    folder = m.folder_of(skill)
    files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    files["SKILL.md"] = files["SKILL.md"].rstrip(b"\n") + f"\n- {line}\n".encode()
    return files


SKILLFORGE_EXE = Path(sys.executable).parent / "skillforge"


KEPT_ENV = ("SKILLFORGE_CACHE_DIR",)
"""Kept by `cli_env`: the session's cache folder (see `auto_routing_cache`), not an LLM setting."""


def cli_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """This environment without its LLM settings (SKILLFORGE_*, OPENAI_*; KEPT_ENV stays), plus `env`."""
    base = {k: v for k, v in os.environ.items() if k in KEPT_ENV or not k.startswith(("SKILLFORGE_", "OPENAI_"))}
    return {**base, **(env or {})}


def _checked(proc: subprocess.CompletedProcess[str], ok: int | None) -> subprocess.CompletedProcess[str]:
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    if ok is not None:
        assert proc.returncode == ok, f"skillforge {proc.args[1:]} -> {proc.returncode}\n{proc.stdout}{proc.stderr}"
    return proc


def flat(text: str) -> str:
    """Output with line wrapping undone (long paths wrap at the console width)."""
    return " ".join(text.split())


CLI_TIMEOUT_S = 180
SPAWN_ENV = "SKILLFORGE_TEST_SPAWN"
"""Set to 1 to make every `run_cli` spawn the console script afresh (no fork server)."""


CLI_FORK_CHILD = Path(__file__).with_name("cli_fork_child.py")


def cli_fork_server(env: dict[str, str]) -> ForkServer:
    """A started fork server of `skillforge` commands (tests/cli_fork_child.py) in `env`, this
    checkout first on its import path."""
    path = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return ForkServer([sys.executable, str(CLI_FORK_CHILD)], {**env, "PYTHONPATH": path})


class _ForkServer:
    """This test process's fork server, started at the first `run_cli`: the CLI imported once, each
    command a fork of it. One command at a time; a `run_cli` from another thread while one runs
    spawns the console script instead, so commands a test runs side by side still run side by side."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.server: ForkServer | None = None
        self.start_env: dict[str, str] = {}

    @staticmethod
    def at_start(env: dict[str, str]) -> dict[str, str]:
        """What an interpreter reads once, as it starts (PYTHON*, locale, BLAS threads): a command
        whose values differ from the server's is spawned, never forked."""
        return {k: v for k, v in env.items()
                if k.startswith(("PYTHON", "LC_")) or k in ("LANG", "LD_PRELOAD", "LD_LIBRARY_PATH")
                or k.endswith("_NUM_THREADS")}

    def _started(self) -> ForkServer:
        if self.server is None or not self.server.alive():
            self.start_env = self.at_start(cli_env())
            self.server = cli_fork_server(cli_env())
        return self.server

    def run(self, argv: list[str], env: dict[str, str], cwd: str) -> subprocess.CompletedProcess[str] | None:
        """The command's result, or None when the server is busy (another thread's command) or the
        command's environment differs in what an interpreter reads at start."""
        if not self.lock.acquire(blocking=False):
            return None
        try:
            server = self._started()
            if self.at_start(env) != self.start_env:
                return None
            r = server.run({"args": argv[1:], "argv0": argv[0], "full_env": env, "cwd": cwd,
                            "timeout_s": CLI_TIMEOUT_S})
            if r["timed_out"]:
                raise subprocess.TimeoutExpired(argv, CLI_TIMEOUT_S, r["stdout"], r["stderr"])  # type: ignore[arg-type]
            return subprocess.CompletedProcess(argv, r["code"], r["stdout"], r["stderr"])  # type: ignore[arg-type]
        finally:
            self.lock.release()

    def close(self) -> None:
        if self.server is not None:
            self.server.close()


_FORKS = _ForkServer()


@pytest.fixture(scope="session", autouse=True)
def _fork_server_closed() -> Iterator[None]:
    yield
    _FORKS.close()


def run_cli(args: list[str], env: dict[str, str] | None = None, *, cwd: Path | None = None,
            ok: int | None = 0, wrap: list[str] | None = None, spawn: bool = False) -> subprocess.CompletedProcess[str]:
    """Run the `skillforge` console script as a user would: a real process, with the LLM settings
    of this environment removed (and `env` added), stdin empty, never a traceback, exit code `ok`
    if given. The process is forked from this session's fork server (the CLI already imported: the
    same `sys.exit(main())`, environment, working folder and exit as a spawned script, a second
    less each); `spawn=True` (or SKILLFORGE_TEST_SPAWN=1) starts the script afresh, for what
    start-up itself does. `wrap` is a command line the script runs under (say, `unshare ...`),
    given the script and args (always spawned)."""
    argv = [str(SKILLFORGE_EXE), *args]
    full_env = cli_env(env)
    if not (wrap or spawn or os.environ.get(SPAWN_ENV) == "1"):
        proc = _FORKS.run(argv, full_env, str(cwd or os.getcwd()))
        if proc is not None:
            return _checked(proc, ok)
    proc = subprocess.run([*(wrap or []), *argv], capture_output=True, text=True, cwd=cwd, env=full_env,
                          stdin=subprocess.DEVNULL, timeout=CLI_TIMEOUT_S)
    return _checked(proc, ok)


def closed_stdout_run(args: list[str], env: dict[str, str] | None = None, *,
                      cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The console script with its stdout a pipe whose reader has already closed it, as after
    `skillforge ... | head -1` (every write: EPIPE). Only stderr is captured."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([str(SKILLFORGE_EXE), *args], stdout=write_end, stderr=subprocess.PIPE, text=True,
                              cwd=cwd, env=cli_env(env), timeout=180)
    finally:
        os.close(write_end)


def start_cli(args: list[str], env: dict[str, str] | None = None, *,
              cwd: Path | None = None) -> subprocess.Popen[str]:
    """Start the `skillforge` console script like `run_cli`, without waiting (to run commands side
    by side); finish it with `finish_cli`."""
    return subprocess.Popen([str(SKILLFORGE_EXE), *args], cwd=cwd, env=cli_env(env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish_cli(proc: subprocess.Popen[str], *, ok: int | None = 0) -> subprocess.CompletedProcess[str]:
    """Wait for a command from `start_cli`; the same checks as `run_cli` (no traceback, exit `ok`)."""
    try:
        out, err = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return _checked(subprocess.CompletedProcess(proc.args, proc.returncode, out, err), ok)


# ---- the repository's own tree is read, never written ----------------------------------------
REPO_DATA = ("skills", "evaluation_sets", "runs", "checkpoints", "tests/fixtures")


def repo_snapshot() -> dict[str, tuple[int, int]]:
    """(size, mtime_ns) of every file under the repository's data folders (REPO_DATA)."""
    out: dict[str, tuple[int, int]] = {}
    for top in REPO_DATA:
        for path in (REPO / top).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                st = path.stat()
                out[path.relative_to(REPO).as_posix()] = (st.st_size, st.st_mtime_ns)
    return out


def snapshot_changes(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    """The files added, removed or changed between two `repo_snapshot`s, sorted."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


@pytest.fixture(scope="session", autouse=True)
def repo_tree_untouched() -> Iterator[None]:
    """Fail the session (an error at the last teardown) if any test wrote into the repository's
    skills/, evaluation_sets/, runs/, checkpoints/ or tests/fixtures/: tests work in tmp_path."""
    before = repo_snapshot()
    yield
    changed = snapshot_changes(before, repo_snapshot())
    assert not changed, f"the test session wrote into the repository: {changed[:20]}"


@pytest.fixture(scope="session", autouse=True)
def auto_routing_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One cache folder for the session, shared by the xdist workers of one run: the many fresh
    workspaces of the same example skills train their auto head once (routing.autocache) and embed
    each text once (routing.vectorshare's vectors.db), and nothing is written into ~/.cache. Tests
    of the training itself set SKILLFORGE_CACHE_DIR=off or a folder of their own."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "skillforge-cache"
    root.mkdir(parents=True, exist_ok=True)
    before = os.environ.get("SKILLFORGE_CACHE_DIR")
    os.environ["SKILLFORGE_CACHE_DIR"] = str(root)
    yield root
    if before is None:
        os.environ.pop("SKILLFORGE_CACHE_DIR", None)
    else:
        os.environ["SKILLFORGE_CACHE_DIR"] = before


# ---- the review tests' shared fixtures (tests/review_world.py, tests/cli_fork.py) ------------------
@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - a Workspace
    """One workspace with an evolve run waiting for review, made once per session (per xdist worker):
    never changed, copied per test (review_world.copy_of)."""
    from review_world import pending_workspace

    return pending_workspace(tmp_path_factory.mktemp("template") / "ws")


@pytest.fixture(scope="module")
def cli():  # noqa: ANN201 - a ForkCLI
    """CLI commands forked from one preloaded process, shared by a test module."""
    from cli_fork import ForkCLI

    server = ForkCLI()
    yield server
    server.close()


@pytest.fixture(scope="session")
def chromium() -> str:
    """The Debian `chromium` binary, installed with apt-get when missing (idempotent: the Makefile's
    `test` target may have installed it already). Skips only when it cannot be installed. Used by the
    report page (test_lineage_report.py) and the labelling page (test_judge_label_browser.py)."""
    exe = shutil.which("chromium")
    if exe is None and shutil.which("apt-get") is not None:
        proc = subprocess.run(["apt-get", "install", "-y", "-q", "chromium"], capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:  # a fresh machine has no package lists yet
            subprocess.run(["apt-get", "update", "-q"], capture_output=True, text=True, timeout=900)
            proc = subprocess.run(["apt-get", "install", "-y", "-q", "chromium"], capture_output=True, text=True,
                                  timeout=900)
        exe = shutil.which("chromium")
        if exe is None:
            pytest.skip(f"chromium is not installed and `apt-get install chromium` failed: {proc.stderr.strip()[-300:]}")
    if exe is None:
        pytest.skip("chromium is not installed and there is no apt-get to install it")
    return exe
