"""`skillforge mcp --http PORT`: streamable HTTP on 127.0.0.1 answers an SDK client; any other
host is refused before anything is loaded or bound."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import anyio
import pytest
from conftest import finish_cli, run_cli, start_cli

from skillforge.library.releases import ReleaseStateMachine

pytest.importorskip("mcp")
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, proc, seconds: float = 150) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")


def test_http_on_loopback_answers_a_route(machine: ReleaseStateMachine) -> None:
    port = free_port()
    proc = start_cli(["mcp", "-w", str(machine.ws.root), "--http", str(port)])
    try:
        wait_listening(port, proc)

        async def main():
            with anyio.fail_after(120):
                async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write):
                    async with ClientSession(read, write) as session:
                        await session.initialize()
                        return await session.call_tool("route", {"query": "帮我叫辆车去虹桥火车站"})

        res = anyio.run(main)
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert not res.is_error and res.structured_content["skill"] == "taxi-hailing", res.content
    assert out == "" and "Traceback" not in err  # no access log or banner on stdout


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "example.com", "::"])
def test_a_non_loopback_host_is_refused(host: str, tmp_path: Path) -> None:
    proc = run_cli(["mcp", "-w", str(tmp_path), "--http", str(free_port()), "--host", host], ok=2)
    assert "loopback only" in proc.stderr and proc.stdout == ""


def test_loopback_hosts_pass_the_check() -> None:
    from skillforge.mcp.server import HostRefused, check_loopback

    assert [check_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "::1", "localhost")] == \
        ["127.0.0.1", "127.0.0.2", "::1", "localhost"]
    with pytest.raises(HostRefused):
        check_loopback("localhost.example.com")


def test_the_cli_does_not_import_the_sdk_until_mcp_runs() -> None:
    """Other commands do not pay for the SDK: importing the CLI leaves `mcp` unimported."""
    import subprocess
    import sys

    code = "import sys, skillforge.cli.main; print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"
    unused = finish_cli(start_cli(["mcp", "--help"]))
    assert "--http" in unused.stdout
