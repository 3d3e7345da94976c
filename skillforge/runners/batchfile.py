"""runs/batches/<batch>.json: a batch's runs and the options they start with (`evolve --all`,
`evolve --resume BATCH`)."""

from __future__ import annotations

import json
from pathlib import Path

from skillforge.config import Workspace
from skillforge.errors import UnknownRun
from skillforge.rules.ids import IdKind
from skillforge.state.evolve import MAX_ROUNDS, EvolveMode
from skillforge.state.ids import require_id


def write_batch(ws: Workspace, batch_id: str, runs: dict[str, str], *, mode: EvolveMode = EvolveMode.AUTONOMOUS,
                max_rounds: int = MAX_ROUNDS) -> Path:
    """runs/batches/<batch>.json: its runs and the options its runs start with (resume reuses them)."""
    path = ws.runs_dir / "batches" / f"{require_id(IdKind.BATCH, batch_id)}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"batch_id": batch_id, "runs": runs, "mode": mode.value, "max_rounds": max_rounds},
                               indent=1), encoding="utf-8")
    return path


def read_batch(ws: Workspace, batch_id: str) -> tuple[dict[str, str], EvolveMode, int]:
    """A batch's runs, mode and rounds (the defaults for a file from before they were kept)."""
    path = ws.runs_dir / "batches" / f"{require_id(IdKind.BATCH, batch_id)}.json"
    if not path.exists():
        raise UnknownRun(f"no batch '{batch_id}' in {path.parent}")
    data = json.loads(path.read_text(encoding="utf-8"))
    return dict(data["runs"]), EvolveMode(data.get("mode", EvolveMode.AUTONOMOUS)), int(data.get("max_rounds", MAX_ROUNDS))


__all__ = ["read_batch", "write_batch"]
