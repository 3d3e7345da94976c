"""When two OpenAI-compatible base URLs name one server (pure): the judge-is-the-proposer guard
compares roles by (server, model), and `http://localhost:8772/v1` is `http://127.0.0.1:8772/v1/`.

The key lower-cases the scheme and host, drops a trailing dot and the default port (80 for http,
443 for https), counts every loopback name as one (localhost, 127.0.0.0/8, ::1, 0.0.0.0 and ::),
and drops trailing slashes, the query and the fragment. Anything else stays as written: two names
of one remote host (a DNS alias) are not found, which only makes the guard miss, as before."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_DEFAULT_PORTS = {"http": 80, "https": 443}
LOOPBACK = "loopback"


def server_key(url: str | None) -> str:
    """A comparable form of an OpenAI-compatible base URL (None: the OpenAI default)."""
    raw = (url or DEFAULT_BASE_URL).strip()
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError:
        return raw.rstrip("/")
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".").lower()
    if _is_loopback(host):
        host = LOOPBACK
    if port is None or port == _DEFAULT_PORTS.get(scheme):
        port = _DEFAULT_PORTS.get(scheme)
    path = parts.path.rstrip("/")
    return f"{scheme}://{host}:{port}{path}"


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified
