"""QA 34 F5: a set with fewer cases for the skill than the sign test needs (5) ran every case, paid
for it, and could only end INVALID. `skillforge evaluate` now refuses it before any request."""

from __future__ import annotations

import pytest
from conftest import EXAMPLE_SKILLS, flat, run_cli
from evaluate_fakes import make_set

from skillforge.testing.openai_server import FakeOpenAIServer, Reply


@pytest.mark.parametrize("n", [1, 4])
def test_a_set_too_small_to_decide_is_refused_before_any_request(tmp_path, n):
    root = tmp_path / "ws"
    run_cli(["init", str(root)], {}, ok=0)
    run_cli(["skills", "import", "--from", str(EXAMPLE_SKILLS), "-w", str(root)], {}, ok=0)
    make_set(root / "evaluation_sets", n)
    with FakeOpenAIServer(default=Reply.text("OK")) as srv:
        env = {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_JUDGE_MODEL": "j"}
        for extra in (["--candidate", str(root / "skills" / "taxi-hailing")], ["--aa"]):
            proc = run_cli(["evaluate", "taxi-hailing", *extra, "--set", "t", "-w", str(root)], env, ok=2)
            said = flat(proc.stderr)
            assert f"set 't' has {n} case(s) for 'taxi-hailing': the sign test needs at least 5" in said, said
            assert "Nothing was sent" in said
        assert srv.hits == 0
    traces = root / "runs" / "traces"
    assert not traces.exists() or not list(traces.glob("*.jsonl"))  # no run was made
