"""Scripted fake models selected by an environment variable, for tests that drive the graphs in
another process (the `langgraph dev` server of tests/test_studio.py), where no fake can be passed
through the runtime context. Never on by default: with $SKILLFORGE_FAKE_MODELS unset (or empty)
the contexts use the workspace's own model settings.

    SKILLFORGE_FAKE_MODELS=evolve-l2   the evolve test world (skillforge.testing.evolve_world):
                                       scripted executor / judge / proposer; the proposer offers
                                       the ETA fix as an L2 edit, so an evolve run stops in review.
"""

from __future__ import annotations

import os
from enum import StrEnum

from skillforge.errors import ConfigError
from skillforge.llm.client import LLM

FAKE_MODELS_ENV = "SKILLFORGE_FAKE_MODELS"


class FakeModels(StrEnum):
    """The scripted model sets $SKILLFORGE_FAKE_MODELS can select."""

    EVOLVE_L2 = "evolve-l2"


def selected() -> FakeModels | None:
    """The fake model set $SKILLFORGE_FAKE_MODELS selects; None when unset. ConfigError for an
    unknown name (never a silent fallback to real models)."""
    value = os.environ.get(FAKE_MODELS_ENV, "").strip()
    if not value:
        return None
    try:
        return FakeModels(value)
    except ValueError:
        raise ConfigError(f"{FAKE_MODELS_ENV}={value!r} is not a fake model set; "
                          f"use one of: {', '.join(m.value for m in FakeModels)} (or unset it)") from None


def fake_llm() -> LLM | None:
    """The selected fake models as an LLM (a fresh one per call: replies depend only on the
    messages), or None when no fake is selected."""
    which = selected()
    if which is None:
        return None
    from skillforge.testing.evolve_world import World, eta_patch  # the world imports the graphs' modules

    return World(lambda round_no: [eta_patch(claimed=2)]).llm()
