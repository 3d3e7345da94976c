"""What a release comment (`release publish|revert|retire -m WHY`) may hold, and how a stored one
is shown (pure, no I/O).

The comment is stored in the release's "triggered by" and shown in `releases list`, the HTML
report and its lineage graph, as one line. Like a feedback comment (rules/events `text_problem`,
whose type and length checks it reuses) it may not hold control characters, nor, since it is an
audit trail shown beside other rows, a bidi override, a zero-width or other invisible character
(Unicode Cf, as rules/hidden finds them: a ZWJ inside an emoji sequence is fine), which could make
the row read as something else. Whitespace (a newline, a tab, U+2028) is not refused: the CLI joins
the words with single spaces (QA 18: `-m "$(cat notes)"` stays one line), so none is stored.
"""

from __future__ import annotations

import unicodedata

from skillforge.rules.hidden import BOM, char_label, hidden_in

FIELD = "release comment (-m)"
SHOWN_ESCAPED = frozenset({"Cc", "Zl", "Zp"})
"""Unicode categories `shown` escapes in stored text besides hidden (Cf) characters."""


def refused_chars(value: str) -> list[str]:
    """The distinct characters of `value` a release comment may not hold, in order of first use:
    every control but whitespace (ESC, NUL, DEL, C1), and every format character (Cf: bidi
    overrides, zero-width spaces, a BOM) but a zero-width joiner inside an emoji sequence (👩‍💻),
    as rules/hidden allows in skills."""
    hidden = set(hidden_in(value))
    return list(dict.fromkeys(c for c in value if not c.isspace() and (
        c in hidden or c == BOM or unicodedata.category(c) == "Cc")))


def shown(text: str) -> str:
    """Stored one-line text (a release's 'triggered by') with every control, format (bidi,
    invisible; not a ZWJ inside an emoji) and line-separating character shown as `\\u202e`: a row
    stored before `-m` refused them, or written by other code, cannot reorder what is read or start
    a line of its own."""
    bad = {*hidden_in(text), *(c for c in text if c == BOM or unicodedata.category(c) in SHOWN_ESCAPED)}
    return "".join(f"\\u{ord(c):04x}" if c in bad else c for c in text) if bad else text


def comment_problem(value: object) -> str | None:
    """Why `value` cannot be a release comment, as one line that names the characters by code point
    (never printing them); None when it can (an empty comment is no comment)."""
    from skillforge.rules.events import text_problem  # its state models import pydantic: not at the CLI's start

    problem = text_problem(FIELD, value)  # type: ignore[arg-type]  # not text, too long
    if problem is not None and "control characters" not in problem:
        return problem
    bad = refused_chars(value) if isinstance(value, str) else []
    if not bad:
        return None
    named = ", ".join(map(char_label, bad[:5])) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
    return (f"the {FIELD} may not hold control, bidi or invisible characters ({named}): it is stored in the "
            "release's 'triggered by' and shown beside other releases; give it as plain text")


__all__ = ["FIELD", "SHOWN_ESCAPED", "comment_problem", "refused_chars", "shown"]
