"""`route calibrate --undo` of a `route fit` or a `route reset` (`undo_reset`): what it replaced comes back.

`save_fit` records in fit.json whether a fitted head was in use before (`head_before`). Undoing a
first fit moves the fitted head aside (head.previous.npz), so the workspace routes by its auto
head again, and puts the head thresholds back; undoing a later fit swaps the two heads. The
record stays with `undone` flipped, so undoing twice redoes the fit. It does not depend on the
skills: a fit that went stale after an edit is undone the same way. A calibration or a reset
after the fit removes the record (index.save_thresholds): the last change is then theirs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from skillforge.config import Workspace
from skillforge.routing.index import (FIT_FILE, HEAD_FILE, PREVIOUS_HEAD_FILE, RESET_FILE, NothingToUndo,
                                      routing_dir, undo_thresholds, write_whole)
from skillforge.rules.thresholds import Scorer

_T = TypeVar("_T")


def record_fit(ws: Workspace, embedder: str, head_before: bool) -> None:
    """Note that the last change of `embedder`'s routing was a fit (written after its thresholds)."""
    write_whole(routing_dir(ws, embedder) / FIT_FILE, {"head_before": head_before, "undone": False})


def undo_fit(ws: Workspace, embedder: str) -> tuple[str, list[str]] | None:
    """If the last change of `embedder`'s routing was a fit (or the undo of one), undo it (or redo
    it): ("undid" or "redid", what was put back). None if the last change was not a fit."""
    folder = routing_dir(ws, embedder)
    record_path = folder / FIT_FILE
    parsed = read_record(record_path, "the fit", lambda r: (bool(r["head_before"]), bool(r["undone"])))
    if parsed is None:
        return None
    head_before, undone = parsed
    head, previous = folder / HEAD_FILE, folder / PREVIOUS_HEAD_FILE
    if head_before:
        needed = [p for p in (head, previous) if not p.exists()]
    else:  # the fitted head is in use (or, once undone, set aside as the previous head)
        needed = [p for p in ((previous,) if undone else (head,)) if not p.exists()]
    if needed:
        raise NothingToUndo(f"{needed[0]} is gone: cannot {'redo' if undone else 'undo'} the fit "
                            "(`skillforge route reset --yes` returns to the auto head; `skillforge route fit` trains a new one)")
    undo_thresholds(ws, embedder, Scorer.HEAD)
    if head_before:  # swap the two fitted heads
        spare = folder / f".{HEAD_FILE}.swap"
        head.replace(spare)
        previous.replace(head)
        spare.replace(previous)
    elif undone:
        previous.replace(head)
    else:
        head.replace(previous)
    write_whole(record_path, {"head_before": head_before, "undone": not undone})
    return ("redid" if undone else "undid"), ["head thresholds", "scoring head"]


def read_record(path: Path, what: str, parse: Callable[[dict], _T]) -> _T | None:
    """An undo record (reset.json, fit.json) parsed by `parse`; None if there is none; NothingToUndo
    naming `what` when it is unreadable."""
    if not path.exists():
        return None
    try:
        return parse(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, KeyError, TypeError, OSError, UnicodeDecodeError) as e:
        raise NothingToUndo(f"{path} is unreadable ({str(e).splitlines()[0] if str(e) else type(e).__name__}): "
                            f"cannot undo {what}") from None


def undo_reset(ws: Workspace, embedder: str) -> list[str] | None:
    """If the last change of `embedder`'s routing was `reset_routing`, put back everything it
    replaced (each scorer's thresholds, and the head from head.previous.npz) and return what; None
    if the last change was not a reset."""
    record_path = routing_dir(ws, embedder) / RESET_FILE
    parsed = read_record(record_path, "the reset", lambda r: ([Scorer(v) for v in r["scorers"]], bool(r["head"])))
    if parsed is None:
        return None
    scorers, head = parsed
    previous_head = routing_dir(ws, embedder) / PREVIOUS_HEAD_FILE
    if head and not previous_head.exists():
        raise NothingToUndo(f"{previous_head} is gone: cannot bring the scoring head back "
                            "(`skillforge route fit` trains a new one)")
    restored = []
    for scorer in scorers:
        undo_thresholds(ws, embedder, scorer)
        restored.append(f"{scorer.value} thresholds")
    if head:
        previous_head.replace(routing_dir(ws, embedder) / HEAD_FILE)
        restored.append("scoring head")
    record_path.unlink(missing_ok=True)
    return restored
