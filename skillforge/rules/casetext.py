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

`case_warnings` says, per case, which fields hold a secret shape (every kind `for_proposer` replaces:
e-mails, phone and resident ID numbers too) or an injection phrase (the query, the fixtures, the
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


def for_proposer(text: str) -> str:
    """`text` as a proposer-role prompt may show it: FLAGGED when it holds an injection phrase,
    else redacted."""
    return _for_proposer(text)[0] if text else text


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


FINDINGS_CACHE = 1 << 17
"""Distinct texts whose findings a process remembers: a set of 20 000 cases has up to 60 000 field
texts, and a command loads the sets several times; with a bound below that the least recently used
text is always the next one asked for, so every load computed every text again (QA F10)."""


@functools.lru_cache(maxsize=FINDINGS_CACHE)
def _findings(text: str) -> tuple[tuple[str, ...], bool]:
    """The kinds `for_proposer` replaces and whether an injection phrase is in `text`;
    remembered apart from `_for_proposer` (only these few words, not the redacted text)."""
    _, kinds, injected = _for_proposer(text)
    return tuple(sorted(set(kinds))), injected  # every kind it replaces (QA 45 F3: e-mails and phones were left out)


@functools.lru_cache(maxsize=4096)
def _for_proposer(text: str) -> tuple[str, tuple[str, ...], bool]:
    """What a proposer sees of `text`, the kinds replaced on the way there and whether it is FLAGGED:
    one computation, so a warning names exactly what `for_proposer` takes out (QA 25 T1b); remembered,
    since every load of the sets asks again for the same texts (~2 ms a case). A flagged text still
    names its secret kinds (they are replaced too: by FLAGGED, whole)."""
    split, split_kinds = redact_split(text)
    shown, found = redact(split)
    kinds = (*found, *(f"{k} (split)" for k in split_kinds))
    if injection_phrases(text):
        return FLAGGED, kinds, True
    return shown, kinds, False
