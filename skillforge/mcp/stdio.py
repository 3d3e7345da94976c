"""Serve MCP on stdio so that every bad line gets an answer.

The SDK's stdio transport (mcp.server.stdio) validates each line and, when a line is not one JSON-RPC
message, hands the session the exception, which logs it and sends nothing. A client that sent the
line with an id then waits for that id forever. Over streamable HTTP the same body gets an error.

`serve_stdio` keeps the SDK's transport (it owns fd 0 and 1 while serving) and screens what it
reads: a message goes on to the server as before; an exception becomes a JSON-RPC error written
back on the wire (`error_reply`), with the request's id when the line has one:
- not JSON, or a string JSON allows but UTF-8 cannot carry (a lone surrogate escape): -32700 (a
  line nested too deep to parse still gets its top-level id, read without descending);
- a batch (a JSON array; MCP has no batches since 2025-06-18), or an object that is not a valid
  request, notification or response, e.g. `params` that is not an object: -32600;
- a request method (not notifications/...) whose id is missing or not a string or an integer (an
  object, an array, a boolean, 1.5): the SDK reads it as a notification; it gets -32600, id null.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

log = logging.getLogger("skillforge.mcp")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
_SHOWN = 200  # characters of a bad line quoted in the log


def error_reply(exc: Exception) -> types.JSONRPCError | None:
    """The JSON-RPC error that answers the line the transport could not read (`exc`, as the SDK
    stdio reader raised it); its id is the line's own when the line is an object with a valid id.
    None for a blank line, which is no message and gets no answer."""
    if not isinstance(exc, ValidationError):
        return _error(None, PARSE_ERROR, f"Parse error: the line could not be read ({type(exc).__name__})")
    raw, parsed = _what_was_sent(exc)
    if raw is not None and not raw.strip():
        return None
    if raw is not None and parsed is _TOO_DEEP:
        return _error(_shallow_id(raw), PARSE_ERROR, "Parse error: the line nests arrays or objects too deep to read")
    if raw is not None and parsed is _UNPARSED:
        return _error(None, PARSE_ERROR, "Parse error: the line is not JSON (send one JSON-RPC message per line)")
    if isinstance(parsed, list):
        return _error(None, INVALID_REQUEST, "Invalid Request: batches (JSON arrays) are not supported; "
                                             "send one JSON-RPC message per line")
    msg_id = _request_id(parsed)
    if raw is not None:  # JSON to Python, not to UTF-8: a lone surrogate escape such as "\ud800"
        return _error(msg_id, PARSE_ERROR, "Parse error: the line holds a string that is not valid Unicode "
                                           "(a lone surrogate escape such as \\ud800)")
    if not isinstance(parsed, dict):
        return _error(None, INVALID_REQUEST, "Invalid Request: a JSON-RPC message is a JSON object")
    return _error(msg_id, INVALID_REQUEST, f"Invalid Request: {_reason(parsed)}")


_UNPARSED = object()
_TOO_DEEP = object()


def _what_was_sent(exc: ValidationError) -> tuple[str | None, Any]:
    """(the raw line when the reader could not parse it, what the line holds as JSON or _UNPARSED);
    (None, the value the validator saw) when the line was JSON of the wrong shape."""
    errors = exc.errors(include_url=False)
    for err in errors:
        if err.get("type") == "json_invalid":
            raw = err.get("input")
            raw = raw if isinstance(raw, str) else ""
            try:
                return raw, json.loads(raw)
            except ValueError:
                return raw, _UNPARSED
            except RecursionError:  # JSON nested deeper than Python's stack
                return raw, _TOO_DEEP
    for err in errors:  # the whole value: what a union branch got, or the object a top-level field is missing from
        loc = err.get("loc", ())
        if len(loc) <= 1 or (len(loc) == 2 and err.get("type") == "missing"):
            return None, err.get("input")
    return None, None


def _request_id(value: Any) -> int | str | None:
    """The id of a request-shaped object (a "method", or neither "result" nor "error": a request that
    lost its method), when it is one JSON-RPC allows (a string or an integer). A response's id is
    the client's answer to the server, not a request to answer."""
    if isinstance(value, dict) and ("method" in value or not {"result", "error"} & value.keys()):
        msg_id = value.get("id")
        if isinstance(msg_id, str) or (isinstance(msg_id, int) and not isinstance(msg_id, bool)):
            return msg_id
    return None


def _shallow_id(raw: str, limit: int = 65536) -> int | str | None:
    """The top-level "id" of a JSON object line too deep to parse whole, read without descending into
    the nested values (within the first `limit` characters); None when there is none to read."""
    dec, i, depth, key_next = json.JSONDecoder(), 0, 0, False
    text = raw[:limit]
    while i < len(text):
        ch = text[i]
        if ch == '"':
            try:
                word, end = dec.raw_decode(text, i)
            except ValueError:
                return None
            if depth == 1 and key_next and word == "id":
                rest = text[end:].lstrip(" \t\r\n")
                if not rest.startswith(":"):
                    return None
                rest = rest[1:].lstrip(" \t\r\n")
                if rest[:1] in ("[", "{", ""):
                    return None
                try:
                    return _request_id({"method": "", "id": dec.raw_decode(rest)[0]})
                except ValueError:
                    return None
            key_next, i = False, end
            continue
        if ch in "{[":
            depth += 1
            key_next = ch == "{" and depth == 1
        elif ch in "}]":
            depth -= 1
        elif ch == "," and depth == 1:
            key_next = True
        i += 1
    return None


def _reason(value: dict) -> str:
    """What is wrong with a request-shaped object, in a few words."""
    if value.get("jsonrpc") != "2.0":
        return '"jsonrpc" must be "2.0"'
    if "method" in value and not isinstance(value["method"], str):
        return '"method" must be a string'
    if "method" not in value and not {"result", "error"} & value.keys():
        return 'no "method": a request names its method (a response has "result" or "error")'
    if "params" in value and not isinstance(value["params"], dict):
        return '"params" must be an object'
    return "not a JSON-RPC request, notification or response"


def idless_request(item: SessionMessage) -> types.JSONRPCError | None:
    """The error for a request method that came without an id JSON-RPC allows (none, an object, an
    array, a boolean or a fraction): the SDK reads such a line as a notification and answers nothing,
    so a client that sent an id waits for ever (QA 32 M1). Methods under notifications/ are left be."""
    msg = item.message
    if not isinstance(msg, types.JSONRPCNotification) or msg.method.startswith("notifications/"):
        return None
    return _error(None, INVALID_REQUEST, f"Invalid Request: '{msg.method[:80]}' is a request and needs an \"id\" "
                                         "that is a string or an integer; without one it reads as a notification")


def _error(msg_id: int | str | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=msg_id, error=types.ErrorData(code=code, message=message))


async def serve_stdio(server: MCPServer) -> None:
    """Serve `server` on stdin/stdout until stdin closes, answering each unreadable line."""
    lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async serves; the SDK has no public accessor
    async with stdio_server() as (wire_in, wire_out):
        to_server, from_wire = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def screen() -> None:
            async with to_server:
                async for item in wire_in:
                    if not isinstance(item, Exception) and (reply := idless_request(item)) is None:
                        await to_server.send(item)
                        continue
                    try:
                        reply = reply if not isinstance(item, Exception) else error_reply(item)
                    except Exception:  # noqa: BLE001 - the answer to a bad line never stops the server
                        log.exception("skillforge mcp: could not read a bad line's id; answered without it")
                        reply = _error(None, PARSE_ERROR, "Parse error: the line could not be read")
                    if reply is None:
                        continue
                    log.warning("skillforge mcp: answered an unreadable line with %s (id %s): %s",
                                reply.error.code, reply.id, _brief(item))
                    await wire_out.send(SessionMessage(reply))

        async with anyio.create_task_group() as tg:
            tg.start_soon(screen)
            await lowlevel.run(from_wire, wire_out, lowlevel.create_initialization_options())


def _brief(exc: Exception | SessionMessage) -> str:
    if isinstance(exc, SessionMessage):
        return "a request without a usable id"
    text = exc.errors(include_url=False)[0].get("msg", "") if isinstance(exc, ValidationError) else str(exc)
    return text[:_SHOWN]
