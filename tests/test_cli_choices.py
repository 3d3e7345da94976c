"""An option whose value is one of a few names: a typo is a usage error that lists them and offers
the closest, without the validator's "Value error," wording (QA pass 16 M7); a right value works."""

from __future__ import annotations

import pytest

from conftest import flat, run_cli


@pytest.mark.parametrize(("args", "wrong", "close"), [
    (["llm", "status", "--for", "evolv"], "'evolv' is not one of evolve, evaluate, route", "did you mean 'evolve'?"),
    (["evaluate", "taxi-hailing", "--candidate", "x", "--mode", "behavior"],
     "'behavior' is not one of behaviour, disclosure", "did you mean 'behaviour'?"),
])
def test_a_typo_lists_the_names_and_offers_the_closest(args, wrong, close, tmp_path):
    said = " ".join(flat(run_cli(args, cwd=tmp_path, ok=2).stderr).translate({ord(c): " " for c in "│╭╮╰╯─"}).split())
    assert wrong in said and close in said and "Value error" not in said


def test_a_right_value_is_taken(tmp_path):
    proc = run_cli(["llm", "status", "--for", "route", "--json"], cwd=tmp_path, ok=None)  # parsed: then the workspace
    assert "Invalid value" not in proc.stderr and "not a SkillForge workspace" in flat(proc.stderr)
