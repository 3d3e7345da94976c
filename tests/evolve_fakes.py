"""The evolve test world, now in skillforge.testing.evolve_world (the Studio test's graphs in the
server process run on it too); re-exported here for the tests and benchmarks that import it."""

from skillforge.testing.evolve_world import (  # noqa: F401
    ENV, HOLDOUT_FROM, INSTRUCTION_ANCHOR, OVERFIT, PLACES, QUOTE_ETA, SKILL, Scenario, World, _case, eta_patch,
    examples_patch, executor_reply, judge_reply, new_workspace, seed_failures, sets_dir_bytes, write_sets,
)
