"""Printing user data safely: literally (never as Rich markup, so `[/x]` or `[red]` in a name, path
or message shows as typed), with control characters neutralised (ESC, a bare CR, DEL and C1
controls become visible `\\x1b`-style escapes, so a description cannot retitle or repaint the
terminal). Every CLI line that holds user data is built with `plain` or `styled`."""

from __future__ import annotations

import logging
import re
import unicodedata

from rich.console import Console
from rich.text import Text

# the characters of rules.frontmatter.CONTROL_RE, except a CR that ends a CRLF line
_DISPLAY_CONTROLS = re.compile(r"\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_JSON_CONTROLS = re.compile(r"[\x7f-\x9f]")  # json.dumps escapes C0 itself, but not DEL or C1


def safe(value: object) -> str:
    """`str(value)` with every control character but \\n, \\t and CRLF shown as `\\xNN`."""
    return _DISPLAY_CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value))


def one_line(value: object) -> str:
    """`safe(value)` with newlines and tabs escaped too: a path or name printed inside a line."""
    return safe(value).replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")


def revealed(value: object) -> str:
    """`one_line(value)` with invisible and bidi characters (Unicode Cf: U+202E, zero-width spaces)
    shown as `\\u202e`: user text shown for review, where they could reorder or hide what is read."""
    return unhidden(one_line(value))


def unhidden(value: object) -> str:
    """`safe(value)` with invisible and bidi characters (Unicode Cf) and the line and paragraph
    separators U+2028/U+2029 (a line break on some terminals) shown as `\\u200b`, newlines kept: an
    error naming what the user typed (`'flight\\u200bstatus' is not a skill name`)."""
    return "".join(f"\\u{ord(ch):04x}" if unicodedata.category(ch) in ("Cf", "Zl", "Zp") else ch for ch in safe(value))


def plain(value: object) -> Text:
    """User data as a Rich Text: printed literally, never parsed as markup or highlighted."""
    return Text(safe(value))


def styled(*parts: object) -> Text:
    """A line of literal parts; a `(text, style)` tuple is styled (labels such as "error:")."""
    text = Text()
    for part in parts:
        if isinstance(part, tuple):
            text.append(safe(part[0]), style=str(part[1]))
        else:
            text.append(safe(part))
    return text


def terminal_safe(text: str, console: Console) -> str:
    """`text` neutralised when `console` writes to a terminal; byte-exact when redirected."""
    return safe(text) if console.is_terminal else text


def json_safe(text: str) -> str:
    """JSON text with DEL and C1 characters written as \\u escapes: the same JSON value, inert on a terminal."""
    return _JSON_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class SafeLogRecords(logging.Filter):
    """Neutralises control characters in every log message before a handler prints it."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Render the message once, neutralised; always keep the record."""
        record.msg, record.args = safe(record.getMessage()), None
        return True
