"""`skillforge skills new "NEED"`: draft a new skill with the proposer model, check it (strict
validation, leak scan, the conflict rule against every live skill) and leave it waiting for review
(`skillforge review show|approve|reject RUN`). It is never published without a person.

Exit codes follow the run's status (as `evolve`): 0 waiting for review, 3 refused or no usable
draft (nothing registered), 4 paused at its budget, 5 failed; a refusal before the run (empty need,
bad or taken name, unreadable --from-queries file, models not configured) is 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from skillforge import jsontext
from skillforge.cli.common import WorkspaceOpt, nonempty_path
from skillforge.cli.evolve import EXIT, JsonOpt, err, score_line, show_summary
from skillforge.cli.output import plain, styled
from skillforge.config import Workspace
from skillforge.errors import BadArgument
from skillforge.journal import text_lines

MAX_QUERY_FILE_BYTES = 2_000_000


def read_queries(path: Path) -> tuple[list[str], list[str]]:
    """Queries from a file: JSONL of {"query": ...} (what `skills suggest` writes) or plain lines,
    and the lines skipped, each as `line N (why)`: a line that starts like JSON (`{`, `[`) must be an
    object whose "query" is a non-empty string, given once. BadArgument for a missing, oversized or
    non-UTF-8 file. Blank lines are skipped without a word."""
    try:
        if path.stat().st_size > MAX_QUERY_FILE_BYTES:
            raise BadArgument(f"{path}: over {MAX_QUERY_FILE_BYTES} bytes; give a smaller sample of queries")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise BadArgument(f"cannot read --from-queries {path}: {getattr(e, 'strerror', None) or e}") from None
    out: list[str] = []
    skipped: list[str] = []
    for n, line in enumerate(text_lines(text), 1):  # lines as the file numbers them: BOM dropped, U+2028 kept
        line = line.strip()
        if not line:
            continue
        if not line.startswith(("{", "[")):
            out.append(line)
            continue
        try:
            row = jsontext.parse(line, unique_keys=True)
        except jsontext.BadJSON as e:
            skipped.append(f"line {n} (not JSON: {e})"[:120])
            continue
        q = row.get("query") if isinstance(row, dict) else None
        if isinstance(q, str) and q.strip():
            out.append(q)
        else:
            skipped.append(f"line {n} (" + ("not an object" if not isinstance(row, dict) else
                                          "no \"query\"" if q is None else "\"query\" is no text or empty") + ")")
    return out, skipped


def session_queries(paths: list[Path]) -> list[str]:
    """The user requests of agent sessions (Claude Code, Codex or generic JSONL; a file or a folder),
    as `sessions harvest` reads them. SourceError (exit 2) for a path that does not exist."""
    from skillforge.sessions.harvest import read_transcripts

    out: list[str] = []
    for path in paths:
        transcripts, _ = read_transcripts("auto", path)
        out += [m.text for t in transcripts for m in t.messages if m.role == "user" and m.text.strip()]
    return out


def _require_proposer(ws: Workspace) -> None:
    from skillforge.evaluation.compare import require_roles
    from skillforge.llm.client import build_llm
    from skillforge.state.llm import Role

    require_roles(build_llm(ws), (Role.PROPOSER,))


def skills_new(need: Annotated[str, typer.Argument(help="What the new skill should do, in plain words.")],
               name: Annotated[str | None, typer.Option(help="The new skill's name (default: from the need).")] = None,
               from_queries: Annotated[Path | None, typer.Option("--from-queries", metavar="FILE", parser=nonempty_path,
                                                                 help="Users' requests behind the need: JSONL of "
                                                                      "{\"query\": ...} or one per line.")] = None,
               from_sessions: Annotated[list[Path] | None, typer.Option("--from-sessions", metavar="PATH", parser=nonempty_path,
                                                                        help="Agent sessions (a file or folder; "
                                                                             "repeatable): their user requests.")] = None,
               workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """Draft a new skill (CAPTURED) for NEED, check it against the library, and wait for review."""
    from skillforge.evolution.capture import capture_name
    from skillforge.runners.evolve import Runner

    ws = Workspace.open(workspace)
    queries, skipped = read_queries(from_queries) if from_queries is not None else ([], [])
    if skipped:
        err.print(styled(("warning", "yellow"), " ", f"--from-queries {from_queries}: {len(skipped)} line(s) skipped: "
                         + ", ".join(skipped[:5]) + (", …" if len(skipped) > 5 else "")), soft_wrap=True)
    queries += session_queries(list(from_sessions or []))
    capture_name(ws, need, name)  # a bad or taken name is said before a missing model
    _require_proposer(ws)
    with err.status("drafting and checking the new skill…"):
        summary = Runner(ws).capture(need, name=name, queries=queries)
    show_summary(summary, as_json)
    conflict = summary.get("conflict")
    if not as_json and isinstance(conflict, dict) and conflict:
        err.print(plain(f"  {score_line('conflict', conflict)} (score: held-out queries that reach it; "
                        "vs live: share the live router already answers)"), soft_wrap=True)
        for why in conflict.get("reasons") or []:
            err.print(plain(f"    {why}"), soft_wrap=True)
    raise typer.Exit(EXIT.get(str(summary["status"]), 5))
