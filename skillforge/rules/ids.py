"""Ids that become paths: may this text name a run, a skill, a set or a batch? And the thread ids
of a checkpoint database that several workspaces share. Pure, no I/O.

A run id names files under runs/ (`failures/<run>.md`, `reviews/<run>.md`, `traces/<run>.jsonl`,
...), a skill name a folder under skills/, a batch id `runs/batches/<batch>.json`. Whatever a
caller sends (the CLI, the Python API, a Studio input), such an id must stay one plain file-name
component: `../../tmp/x` once wrote `/tmp/x.md` from a Studio input.
"""

from __future__ import annotations

import re
from enum import StrEnum

from skillforge.state.skill import NAME_MAX, NAME_RE

ID_MAX = 200
"""Longest run / batch id or set name: the files named after a run add suffixes (`.meta.json`,
`-rejudge-xxxx`) and must stay under 255 bytes."""
EVOLVE_RUN_MAX = 160
"""Longest evolve run id: its evaluations are runs named `<run>-<candidate>-final_audit` (up to 18
characters more), which must be valid run ids too."""
SLUG_MAX = 24
"""Characters of the folder name a workspace id starts with (readable in messages and listings)."""
ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
"""A run or batch id: ASCII letters, digits, '.', '_' and '-', starting with a letter or digit (so
never '.', '..' or a hidden file), never a path separator."""
SET_NAME_BAD = re.compile(r"[/\\\x00-\x1f\x7f-\x9f]")
"""What a set name may not hold (sets are named by their files' `meta.name`, which is free text):
path separators and control characters."""


class IdKind(StrEnum):
    RUN = "run id"
    EVOLVE_RUN = "evolve run id"
    BATCH = "batch id"
    WORKSPACE = "workspace id"
    SKILL = "skill name"
    SET = "set name"


def id_problem(kind: IdKind, value: object) -> str | None:
    """Why `value` cannot be a `kind`, or None when it can. Run and batch ids: ID_RE, at most
    ID_MAX characters (an evolve run's EVOLVE_RUN_MAX); skill names: the SKILL.md name rule; set
    names: 1 to ID_MAX characters, no path separator or control character, no leading '.'."""
    if not isinstance(value, str):
        return f"the {kind} must be text, got {type(value).__name__}"
    shown = value if len(value) <= 60 else value[:60] + "…"
    if not value:
        return f"the {kind} must not be empty"
    if kind is IdKind.SKILL:
        if len(value) > NAME_MAX or not NAME_RE.fullmatch(value):
            return (f"{shown!r} is not a valid {kind} (1-{NAME_MAX} lowercase letters, digits and single hyphens, "
                    "no leading or trailing hyphen)")
        return None
    longest = EVOLVE_RUN_MAX if kind is IdKind.EVOLVE_RUN else ID_MAX
    if len(value) > longest:
        return f"the {kind} must be at most {longest} characters, got {len(value)} ({shown!r})"
    if kind is IdKind.SET:
        if SET_NAME_BAD.search(value) or value.startswith("."):
            return f"{shown!r} is not a valid {kind} (no '/', '\\', control characters or leading '.')"
        return None
    if not ID_RE.fullmatch(value):
        return (f"{shown!r} is not a valid {kind} (ASCII letters, digits, '.', '_' and '-', starting with a letter "
                "or digit; it names files under runs/, so never a path)")
    return None


def new_workspace_id(folder: str, token: str) -> str:
    """A workspace id: the folder's name folded to `a-z0-9-` (at most SLUG_MAX characters, `ws`
    when nothing is left), a hyphen and `token` (random hex, made by the caller)."""
    slug = re.sub(r"[^a-z0-9]+", "-", folder.casefold()).strip("-")[:SLUG_MAX].strip("-") or "ws"
    return f"{slug}-{token}"


SCOPE_SEP = "/"
"""Between the workspace id and the run id in a shared database's thread ids (never in either)."""


def thread_id(scope: str | None, run_id: str) -> str:
    """The thread id of run `run_id` under `scope`: `<workspace id>/<run id>`, or the run id."""
    return run_id if scope is None else f"{scope}{SCOPE_SEP}{run_id}"


def scoped_run_ids(threads: list[str], scope: str | None) -> list[str]:
    """The run ids of `scope`'s threads among `threads` (all of them when unscoped), sorted."""
    if scope is None:
        return sorted(threads)
    prefix = scope + SCOPE_SEP
    return sorted(t[len(prefix):] for t in threads if t.startswith(prefix))


def run_owner(threads: list[str], scope: str | None, run_id: str) -> str | None:
    """The workspace id another workspace holds run `run_id` under ('' for a thread written before
    runs were scoped), or None when no other workspace has it."""
    if scope is None:
        return None
    for t in threads:
        owner, sep, rest = t.rpartition(SCOPE_SEP)
        if (rest == run_id and owner != scope) or (not sep and t == run_id):
            return owner
    return None
