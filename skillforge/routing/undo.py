"""`route calibrate --undo` of a `route fit`: the head and the head thresholds it replaced come back.

`save_fit` records in fit.json whether a fitted head was in use before (`head_before`). Undoing a
first fit moves the fitted head aside (head.previous.npz), so the workspace routes by its auto
head again, and puts the head thresholds back; undoing a later fit swaps the two heads. The
record stays with `undone` flipped, so undoing twice redoes the fit. It does not depend on the
skills: a fit that went stale after an edit is undone the same way. A calibration or a reset
after the fit removes the record (index.save_thresholds): the last change is then theirs.
"""

from __future__ import annotations

import json

from skillforge.config import Workspace
from skillforge.routing.index import (FIT_FILE, HEAD_FILE, PREVIOUS_HEAD_FILE, NothingToUndo, routing_dir,
                                      undo_thresholds, write_whole)
from skillforge.rules.thresholds import Scorer


def record_fit(ws: Workspace, embedder: str, head_before: bool) -> None:
    """Note that the last change of `embedder`'s routing was a fit (written after its thresholds)."""
    write_whole(routing_dir(ws, embedder) / FIT_FILE, {"head_before": head_before, "undone": False})


def undo_fit(ws: Workspace, embedder: str) -> tuple[str, list[str]] | None:
    """If the last change of `embedder`'s routing was a fit (or the undo of one), undo it (or redo
    it): ("undid" or "redid", what was put back). None if the last change was not a fit."""
    folder = routing_dir(ws, embedder)
    record_path = folder / FIT_FILE
    if not record_path.exists():
        return None
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
        head_before, undone = bool(record["head_before"]), bool(record["undone"])
    except (ValueError, KeyError, TypeError, OSError, UnicodeDecodeError) as e:
        raise NothingToUndo(f"{record_path} is unreadable ({str(e).splitlines()[0] if str(e) else type(e).__name__}): "
                            "cannot undo the fit") from None
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
