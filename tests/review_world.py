"""Workspaces for the review tests: one with a taxi-hailing run waiting for review (the L2 ETA fix
of the scripted world, made on the imported 0.3.1), built once per module and copied per test."""

from __future__ import annotations

import shutil
from pathlib import Path

from evolve_fakes import SKILL, World, eta_patch, new_workspace, seed_failures
from skillforge.runners.evolve import Runner
from skillforge.config import Workspace
from skillforge.evolution.propose import PatchProposal

RUN = "evolve-pending"


def pending_workspace(root: Path, patch: PatchProposal | None = None, run_id: str = RUN) -> Workspace:
    """A workspace whose run `run_id` waits for review on `patch` (default: the ETA fix at L2)."""
    ws = new_workspace(root)
    world = World(lambda r: [patch or eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    out = Runner(ws, llm_factory=world.llm).start(SKILL, run_id=run_id)
    assert out["status"] == "PENDING_REVIEW", out
    return ws


def copy_of(template: Workspace, root: Path) -> Workspace:
    """A copy of a workspace (git repository, store and checkpoints included) at `root`."""
    shutil.copytree(template.root, root, symlinks=True)
    return Workspace.open(root)
