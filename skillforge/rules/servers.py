"""When two OpenAI-compatible base URLs name one server (pure): the judge-is-the-proposer guard
compares roles by (server, model), and `http://localhost:8772/v1` is `http://127.0.0.1:8772/v1/`.

The key lower-cases the scheme and host, drops a trailing dot and the default port (80 for http,
443 for https), counts every loopback name as one (localhost, 127.0.0.0/8 in any spelling, ::1, ::ffff:127.0.0.1,
0.0.0.0 and ::), collapses repeated slashes and drops trailing ones, the query and the fragment. Anything else stays as written: two names
of one remote host (a DNS alias) are not found, which only makes the guard miss, as before."""

from __future__ import annotations

import ipaddress
import re
import socket
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
    path = re.sub(r"/{2,}", "/", parts.path).rstrip("/")
    return f"{scheme}://{host}:{port}{path}"


def _is_loopback(host: str) -> bool:
    """localhost, or an address on this machine in any spelling: 127/8, ::1, 0.0.0.0 and ::, an
    IPv4-mapped IPv6 (::ffff:127.0.0.1), and the inet_aton shorthands (127.1, 2130706433, 0x7f.1)."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    address = _address(host.strip("[]"))
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address is not None and (address.is_loopback or address.is_unspecified)


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:  # the shorthands a resolver accepts for IPv4 (pure: no lookup is made)
        return ipaddress.IPv4Address(socket.inet_aton(host)) if host and ":" not in host else None
    except OSError:
        return None
