"""Reading JSON that users write (evaluation sets, labelled queries): hostile input stays a named
error, and text stays encodable.

`json.loads` raises more than JSONDecodeError: ValueError for an integer over 4 300 digits and
RecursionError for arrays nested ~100 000 deep. A QA pass turned both into internal errors (exit 70)
in `route eval`, `route fit` and `evaluate`. A "\\ud800" escape decodes to a lone surrogate, which
every later UTF-8 encode refuses (the embedder, the logs, the LLM request).
"""

from __future__ import annotations

import json


class BadJSON(ValueError):
    """Text that is not JSON this program can take: `reason` in a few words, and where if known."""

    def __init__(self, reason: str, where: str = "") -> None:
        self.reason = reason
        super().__init__(f"{reason} {where}".strip())


def valid_utf8(text: str) -> str:
    """`text` with lone surrogates (invalid UTF-8 on a command line, a JSON "\\ud800") replaced by
    U+FFFD, so that it can be encoded as UTF-8."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


def _clean(value: object) -> object:
    if isinstance(value, str):
        return valid_utf8(value)
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {valid_utf8(k): _clean(v) for k, v in value.items()}
    return value


class DuplicateKey(BadJSON):
    """An object that gives one key twice (`unique_keys`): parsers disagree on which value wins."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(f"duplicate key '{valid_utf8(key)}'")


def _unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
    seen: dict[str, object] = {}
    for key, value in pairs:
        if key in seen:
            raise DuplicateKey(key)
        seen[key] = value
    return seen


def parse(text: str, *, unique_keys: bool = False) -> object:
    """json.loads, with every failure a BadJSON and every string encodable. `unique_keys`: an
    object giving a key twice is a DuplicateKey (json.loads would silently keep the last value);
    for what users label by hand, where the two values mean two different things."""
    try:
        data = json.loads(text, object_pairs_hook=_unique if unique_keys else None)
    except BadJSON:
        raise
    except json.JSONDecodeError as e:
        raise BadJSON(e.msg, f"at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise BadJSON("nested too deeply") from None
    except ValueError as e:  # e.g. an integer of more than 4 300 digits
        raise BadJSON(str(e).split(";")[0].split(":")[0]) from None
    try:
        return _clean(data)
    except RecursionError:  # pragma: no cover - json.loads refuses deeper nesting than this walk
        raise BadJSON("nested too deeply") from None
