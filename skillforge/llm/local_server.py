"""The embedded local model server: `llama_cpp.server` on 127.0.0.1, one per workspace.

It is started as `python -m skillforge.llm.llama_serve`, llama-cpp-python's server with the grammar
checked lazily for greedy decoding (same tokens, see that module).

`serve()` starts it detached (or reuses the running one), recorded in `runs/llm_server.json`;
other commands find it there; `stop()` stops it by PID, guarding against PID reuse.

It runs with one thread per core that other processes leave idle right now (`idle_threads` over a
1 s window of /proc/stat, not the lagging load average: on free cores 2 threads take a cold
1.3k-token prompt from 32 s to 18 s on the reference box, on busy ones they are 10x slower than 1) and llama.cpp's multi-state prompt cache
(`--cache`): the server already reuses the KV cache of the longest common prefix with the previous
request; the RAM cache keeps the states of earlier prompts too, so alternating between the executor's
and the judge's system prompts does not start cold. `--logits_all false`: with it on, every cached
state would carry a (n_ctx x vocab) float array (2.5 GB for Qwen2.5 at n_ctx 4096), larger than the
whole cache, and the prompt's logits would be computed for every token instead of the last.
"""

from __future__ import annotations

import datetime
import http.client
import importlib.util
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from enum import Enum
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from skillforge.config import Workspace
from skillforge.errors import LocalModelError, LocalModelUnavailable
from skillforge.llm.local_model import INSTALL_HINT, MODEL_ALIAS, assemble, file_lock, write_atomic
from skillforge.routing.cpuload import others_busy, read_sample
from skillforge.rules.threads import idle_threads

log = logging.getLogger(__name__)

SERVER_FILE = "llm_server.json"
SERVER_LOG = "llm_server.log"
SERVER_LOCK = "llm_server.lock"
HOST = "127.0.0.1"
PROBE_TIMEOUT_S = 2.0
LOG_TAIL_LINES = 20
CMDLINE_CHECK_ARGS = 3
DEFAULT_N_CTX = 8192
THREADS_WINDOW_S = 1.0
"""How long the server's thread choice watches what other processes use (100 ticks per core at 100 Hz)."""
PROMPT_CACHE_BYTES = 1 << 30
"""RAM for llama.cpp's prompt-state cache: a state is the KV cells in use (~28 KB per token for the
1.5B model), so 1 GiB holds ~25 states of 1.5k tokens."""
SERVER_MODULE = "skillforge.llm.llama_serve"
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")

# Popen handles of the servers this process started, so that stopping one also reaps it (no zombie).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
# Local probes must never go through an HTTP(S)_PROXY from the environment.
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Health(Enum):
    """What one GET {url}/models says about a server."""

    READY = "ready"  # answered 200
    BUSY = "busy"  # accepted the connection but did not answer in time (llama_cpp holds it while generating)
    DOWN = "down"  # refused, reset, or answered an error


class ServerInfo(BaseModel):
    """One running model server, as recorded in `runs/llm_server.json`."""

    url: str = Field(description="OpenAI base URL, http://127.0.0.1:PORT/v1")
    pid: int = Field(description="pid of the server; also its process group (started in a new session)")
    port: int
    model: str = Field(description="model name to send in requests (the server's --model_alias)")
    model_path: str = Field(description="the GGUF file served; empty for a custom command without one")
    started_at: str = Field(description="ISO-8601 UTC time the server became ready")
    log_path: str = Field(description="file receiving the server's stdout and stderr")
    command: list[str] = Field(default_factory=list,
                               description="argv it was started with; stop() checks /proc/<pid>/cmdline against it")
    n_ctx: int = Field(default=DEFAULT_N_CTX, description="its context window in tokens (the roles' context_tokens)")


# ---- the server -----------------------------------------------------------------------------
def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def cores() -> int:
    """The CPU cores this process may run on (its affinity mask, else the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def others_busy_now(window_s: float = THREADS_WINDOW_S) -> float | None:
    """Cores' worth of CPU that other processes use over the next `window_s` (this process excluded;
    routing/cpuload.py), or None where /proc/stat cannot tell."""
    before = read_sample()
    time.sleep(window_s)
    after = read_sample()
    return others_busy(before, after) if before is not None and after is not None else None


def default_threads() -> int:
    """idle_threads() for this machine now, from what other processes use right now
    (`others_busy_now`), else from the 1-minute load average. The load average lags: it still counts
    processes that have just finished, such as the demo's own steps before it starts the server (an
    idle box read 1.2-1.6 and got 1 thread)."""
    busy = others_busy_now()
    if busy is None:
        try:
            busy = os.getloadavg()[0]
        except OSError:  # pragma: no cover - no load average
            busy = 0.0
    return idle_threads(cores(), busy)


def server_command(model_path: Path, port: int, *, n_ctx: int = DEFAULT_N_CTX, n_threads: int | None = None,
                   prompt_cache: bool = True) -> list[str]:
    """The argv of `python -m skillforge.llm.llama_serve` (llama_cpp.server with a lazy grammar
    check) for the local model (flag names of llama-cpp-python 0.3.x, server/settings.py):
    `n_threads` (default: one per idle core, default_threads()) for generation and batch (prompt)
    processing, and the RAM prompt cache unless `prompt_cache` is False."""
    threads = n_threads if n_threads is not None else default_threads()
    argv = [sys.executable, "-m", SERVER_MODULE, "--model", str(model_path), "--model_alias", MODEL_ALIAS,
            "--host", HOST, "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads),
            "--n_threads_batch", str(threads), "--logits_all", "false"]
    if prompt_cache:
        argv += ["--cache", "true", "--cache_type", "ram", "--cache_size", str(PROMPT_CACHE_BYTES)]
    return argv


def find_server(ws: Workspace) -> ServerInfo | None:
    """The workspace's running server, or None.

    A record whose pid is gone (or now runs another program) is stale: it is removed. A live server that
    holds the connection without answering is busy generating (llama_cpp serialises /v1/models behind
    the model lock) and is returned. A live one that refuses is returned as None but its record is kept,
    so that stop() can still end it.
    """
    path = ws.runs_dir / SERVER_FILE
    info = _read_info(path)
    if info is None:
        return None
    if not _pid_alive(info.pid) or not _same_process(info):
        log.info("removing stale %s: pid %d is no longer the model server", path, info.pid)
        path.unlink(missing_ok=True)
        return None
    health = _probe(info.url)
    if health is Health.BUSY:
        log.info("model server pid %d is busy (no answer within %.1f s); treating it as alive", info.pid, PROBE_TIMEOUT_S)
    if health is not Health.DOWN:
        return info
    log.warning("model server pid %d is alive but %s/models does not answer", info.pid, info.url)
    return None


def serve(ws: Workspace, *, model_path: Path | None = None, n_ctx: int = DEFAULT_N_CTX, n_threads: int | None = None,
          wait_s: float = 180.0, command: list[str] | None = None, prompt_cache: bool = True) -> ServerInfo:
    """Return the workspace's running server, starting one if needed (threads: one per core unless
    `n_threads`; the prompt cache on unless `prompt_cache` is False).

    `command` replaces the llama_cpp argv (tests, custom servers); in it "{port}" becomes the port and
    "{model}" the model path. Without it, llama-cpp-python must be installed and the model is assembled.
    """
    ws.runs_dir.mkdir(parents=True, exist_ok=True)
    with file_lock(ws.runs_dir / SERVER_LOCK):
        found = find_server(ws)
        if found is not None:
            log.info("reusing model server pid %d at %s", found.pid, found.url)
            return found
        stop(ws)  # a recorded server that is alive but not answering
        port = free_port()
        if command is None:
            _require_server_modules()
            model_path = Path(model_path) if model_path is not None else assemble()
            argv = server_command(model_path, port, n_ctx=n_ctx, n_threads=n_threads, prompt_cache=prompt_cache)
        else:
            model_text = str(model_path) if model_path is not None else ""
            argv = [arg.replace("{port}", str(port)).replace("{model}", model_text) for arg in command]
        return _start(ws, argv, port, model_path, wait_s, n_ctx)


def stop(ws: Workspace, timeout_s: float = 10.0) -> bool:
    """Stop the workspace's server (SIGTERM its group, SIGKILL after `timeout_s`); True if one was stopped.

    The pid is signalled only if /proc/<pid>/cmdline still starts like the recorded command, so a
    reused pid is never hit. The record is removed in every case.
    """
    path = ws.runs_dir / SERVER_FILE
    info = _read_info(path)
    if info is None:
        return False
    stopped = False
    if _pid_alive(info.pid):
        if _same_process(info):
            log.info("stopping model server pid %d", info.pid)
            _terminate(info.pid, timeout_s)
            stopped = True
        else:
            log.warning("pid %d now runs another program; not signalling it", info.pid)
    path.unlink(missing_ok=True)
    return stopped


def _start(ws: Workspace, argv: list[str], port: int, model_path: Path | None, wait_s: float,
           n_ctx: int = DEFAULT_N_CTX) -> ServerInfo:
    """Start `argv` detached, wait until it answers, record it."""
    log_path = ws.runs_dir / SERVER_LOG
    # The server module is ours: it must import from this same package, installed or not.
    package_root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p)}
    with log_path.open("wb") as log_file:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                                    env=env, start_new_session=True)
        except OSError as exc:
            raise LocalModelError(f"cannot start the model server {argv[0]}: {exc}") from exc
    _CHILDREN[proc.pid] = proc
    url = f"http://{HOST}:{port}/v1"
    log.info("started model server pid %d on %s (log %s)", proc.pid, url, log_path)
    try:
        _wait_ready(proc, url, wait_s, log_path)
    except BaseException:
        _terminate(proc.pid, timeout_s=3.0)
        raise
    info = ServerInfo(url=url, pid=proc.pid, port=port, model=MODEL_ALIAS,
                      model_path=str(model_path) if model_path is not None else "",
                      started_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                      log_path=str(log_path), command=argv, n_ctx=n_ctx)
    write_atomic(ws.runs_dir / SERVER_FILE, info.model_dump_json(indent=2))
    return info


def _wait_ready(proc: subprocess.Popen[bytes], url: str, wait_s: float, log_path: Path) -> None:
    """Poll {url}/models until 200; raise LocalModelError if the process exits or `wait_s` passes."""
    deadline = time.monotonic() + wait_s
    delay = 0.05
    while True:
        code = proc.poll()
        if code is not None:
            raise LocalModelError(f"the model server exited with code {code} before it was ready. "
                                  f"Last lines of {log_path}:\n{_log_tail(log_path)}")
        left = deadline - time.monotonic()
        if _probe(url, timeout=max(0.1, min(PROBE_TIMEOUT_S, left))) is Health.READY:
            return
        if time.monotonic() >= deadline:
            raise LocalModelError(f"the model server (pid {proc.pid}) did not answer {url}/models within "
                                  f"{wait_s:g} s and was killed. Last lines of {log_path}:\n{_log_tail(log_path)}")
        time.sleep(delay)
        delay = min(delay * 1.5, 1.0)


def _probe(url: str, timeout: float | None = None) -> Health:
    """One GET {url}/models on the loopback, without any proxy."""
    try:
        with _NO_PROXY.open(f"{url}/models", timeout=timeout or PROBE_TIMEOUT_S) as resp:
            return Health.READY if resp.status == 200 else Health.DOWN
    except urllib.error.URLError:  # refused, or an HTTP error status
        return Health.DOWN
    except TimeoutError:  # connected, but no answer in time
        return Health.BUSY
    except (OSError, http.client.HTTPException):
        return Health.DOWN


def _require_server_modules() -> None:
    missing = [name for name in SERVER_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise LocalModelUnavailable(f"llama-cpp-python's server is not installed (missing: {', '.join(missing)}); "
                                    f"install it with {INSTALL_HINT} (or configure an LLM endpoint instead)")


# ---- processes and files --------------------------------------------------------------------
def _pid_alive(pid: int) -> bool:
    """True if `pid` exists and is not a zombie (reaping it first if this process started it)."""
    child = _CHILDREN.get(pid)
    if child is not None and child.poll() is not None:
        _CHILDREN.pop(pid, None)
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text(errors="replace").rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return not Path("/proc").is_dir()


def _same_process(info: ServerInfo) -> bool:
    """True if the pid still runs the recorded command (its first args), as far as /proc can tell."""
    if not info.command:
        return False
    try:
        raw = Path(f"/proc/{info.pid}/cmdline").read_bytes()
    except OSError:
        return not Path("/proc").is_dir()  # no /proc (not Linux): the pid is all we can go by
    actual = [arg.decode("utf-8", errors="surrogateescape") for arg in raw.split(b"\0")]
    count = min(CMDLINE_CHECK_ARGS, len(info.command))
    return actual[:count] == info.command[:count]


def _terminate(pid: int, timeout_s: float) -> None:
    """SIGTERM the process group led by `pid` (or just `pid`), then SIGKILL if it outlives `timeout_s`."""
    try:
        group = os.getpgid(pid) == pid
    except ProcessLookupError:
        return
    for sig, grace in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig) if group else os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if not _pid_alive(pid):
                _CHILDREN.pop(pid, None)
                return
            time.sleep(0.05)
        if sig == signal.SIGTERM:
            log.warning("model server pid %d ignored SIGTERM for %.1f s; sending SIGKILL", pid, timeout_s)
    log.error("model server pid %d survived SIGKILL", pid)


def _read_info(path: Path) -> ServerInfo | None:
    """The recorded server, or None; an unreadable record is removed."""
    if not path.exists():
        return None
    try:
        return ServerInfo.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError, ValueError) as exc:
        log.warning("removing unreadable %s: %s", path, exc)
        path.unlink(missing_ok=True)
        return None


def _log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        with path.open("rb") as src:
            src.seek(max(0, src.seek(0, os.SEEK_END) - 64 * 1024))
            text = src.read().decode("utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(log is empty)"





