"""How a network failure is worded (QA19 MESSAGE-3), against real local sockets: a 429 whose
Retry-After is longer than the openai client waits is sent once and says it was not retried; a
connection the endpoint drops after it read the request says so ("connection reset by the
endpoint"), apart from an endpoint that cannot be connected to."""

from __future__ import annotations

import datetime as dt
import email.utils
import re
import socket
import struct
import threading

import pytest

from skillforge.errors import LLMUnavailable
from skillforge.llm.client import LLM
from skillforge.llm.config import resolve_all
from skillforge.state.llm import Role
from skillforge.testing.openai_server import FakeOpenAIServer, Reply

ASK = [("user", "which?")]


def llm_at(url: str, retries: int = 2) -> LLM:
    return LLM(resolve_all(env={"SKILLFORGE_LLM_BASE_URL": url, "SKILLFORGE_LLM_MODEL": "m",
                                "SKILLFORGE_JUDGE_MODEL": "j", "SKILLFORGE_LLM_API_KEY": "k",
                                "SKILLFORGE_LLM_MAX_RETRIES": str(retries), "SKILLFORGE_LLM_TIMEOUT": "5"}))


def test_a_retry_after_longer_than_we_wait_is_named_and_sent_once():
    with FakeOpenAIServer([Reply.error(429, "qa rate limited", retry_after=3600)]) as srv:
        llm = llm_at(srv.base_url)
        with pytest.raises(LLMUnavailable) as e:
            llm.text(Role.JUDGE, ASK)
        assert srv.hits == 1 == llm.ledger.calls
    assert "HTTP 429 (Retry-After 3600 s, longer than the 120 s we wait: not retried): " in str(e.value), e.value


def test_a_retry_after_given_as_an_http_date_is_named_too():
    """QA 21 MESSAGE-3: a Retry-After may be an HTTP date (RFC 9110), which the openai client reads too."""
    later = email.utils.format_datetime(dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1), usegmt=True)
    with FakeOpenAIServer([Reply.error(429, "qa rate limited", retry_after=later)]) as srv:
        with pytest.raises(LLMUnavailable) as e:
            llm_at(srv.base_url).text(Role.JUDGE, ASK)
        assert srv.hits == 1
    assert re.search(r"HTTP 429 \(Retry-After 3[56]\d\d s, longer than the 120 s we wait: not retried\): ", str(e.value)), e.value


def test_a_short_retry_after_is_waited_and_retried_as_before():
    with FakeOpenAIServer([Reply.error(429, retry_after=0.01)] * 3) as srv:
        with pytest.raises(LLMUnavailable) as e:
            llm_at(srv.base_url).text(Role.JUDGE, ASK)
        assert srv.hits == 3
    assert "HTTP 429: " in str(e.value) and "not retried" not in str(e.value)


class ResettingServer:
    """Accepts, reads the request, then resets the connection (SO_LINGER 0): the endpoint got it."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.hits = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.recv(65536)
            self.hits += 1
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"


def test_a_connection_reset_after_the_request_is_not_cannot_connect():
    srv = ResettingServer()
    try:
        llm = llm_at(srv.url, retries=1)
        with pytest.raises(LLMUnavailable) as e:
            llm.text(Role.JUDGE, ASK)
    finally:
        srv.sock.close()
    assert srv.hits == 2 == llm.ledger.calls
    assert "connection reset by the endpoint after the request was sent" in str(e.value), e.value
    assert "cannot connect" not in str(e.value)
    assert llm.ledger.spend(Role.JUDGE).reserved_tokens > 0  # the endpoint got them: their cost stays unknown


def test_an_endpoint_that_refuses_the_connection_cannot_be_connected_to():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    llm = llm_at(f"http://127.0.0.1:{port}/v1", retries=2)
    with pytest.raises(LLMUnavailable) as e:
        llm.text(Role.JUDGE, ASK)
    assert "cannot connect: " in str(e.value) and "refused" in str(e.value).lower(), e.value
    # QA 37 F2: requests that never reached an endpoint generated no token: no reservation is left
    spend = llm.ledger.spend(Role.JUDGE)
    assert llm.ledger.calls == 3 and spend.reserved_tokens == 0 and spend.prompt_tokens == 0
