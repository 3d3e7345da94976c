"""What a proposer-role prompt may show of an evaluation case's text, and why a set's case deserves
a warning (pure, no I/O).

Harvested cases are redacted before they are staged (sessions/harvest.py); hand-written set cases
are not, so every case text that goes into a proposer-role prompt (analyze, propose, the neighbours'
rewording) passes through `for_proposer` first:
- a text with a prompt-injection phrase (rules/sessions.injection_phrases: the leak scan's
  INJECTION_PATTERNS, sending data to an address, steering) is replaced whole by FLAGGED: the
  proposer is told a case is there, never what it orders;
- any other text has its secrets, card numbers, emails and phone numbers replaced
  (rules/redact.redact, the redaction of harvested text: `[REDACTED:<kind>]`), and, as the patch
  scan does, a key cut into chunks by spaces (rules/redact.redact_split).

`case_warnings` says, per case, which fields hold a secret shape (emails and phone numbers are
redacted but not warned about) or an injection phrase (the query, the fixtures, the
expectations), naming kinds, never the text: the set loader logs them.
"""

from __future__ import annotations

import functools
import json

from skillforge.rules.redact import redact, redact_split
from skillforge.rules.sessions import injection_phrases
from skillforge.state.evaluate import Case

FLAGGED = "[flagged: possible prompt injection]"
"""What a proposer sees instead of a text with a prompt-injection phrase."""
PERSONAL = frozenset({"email", "phone"})
"""Redacted for a proposer, but not worth a warning: a hand-written case may well name an address."""


def for_proposer(text: str) -> str:
    """`text` as a proposer-role prompt may show it: FLAGGED when it holds an injection phrase,
    else redacted."""
    if not text:
        return text
    if injection_phrases(text):
        return FLAGGED
    return redact(redact_split(text)[0])[0]


def _fields(case: Case) -> list[tuple[str, str]]:
    return [("query", case.query),
            ("fixtures", json.dumps(case.fixtures, ensure_ascii=False) if case.fixtures else ""),
            ("expectations", " | ".join([*case.expect.must_include, *case.expect.must_not_include]))]


def case_warnings(case: Case, *, proposer_sees: bool = True) -> list[str]:
    """One line per field of `case` that holds a secret shape or a prompt-injection phrase (kinds
    only, never the text); empty when there is none. `proposer_sees`: the case is in a partition a
    proposer reads (dev, repair, p0), so the line says what the proposer gets instead."""
    out: list[str] = []
    for name, text in _fields(case):
        if not text:
            continue
        kinds, injected = _findings(text)
        if kinds:
            out.append(f"its {name} has a secret shape ({', '.join(kinds)})"
                       + (": a proposer sees it redacted" if proposer_sees else ""))
        if injected:
            out.append(f"its {name} has a possible prompt injection"
                       + (f": a proposer sees {FLAGGED!r} instead" if proposer_sees else ""))
    return out


@functools.lru_cache(maxsize=4096)
def _findings(text: str) -> tuple[tuple[str, ...], bool]:
    """The secret kinds (emails and phones aside) and whether an injection phrase is in `text`:
    remembered, since every load of the sets asks again for the same texts (~2 ms a case)."""
    kinds = sorted((set(redact(text)[1]) - PERSONAL) | {f"{k} (split)" for k in redact_split(text)[1]})
    return tuple(kinds), bool(injection_phrases(text))
