"""The gate as a user meets it (issue 9's bars): `skillforge evaluate` against a local OpenAI-compatible
server whose judge answers at random, on a 24-case set generated here.

- a no-op candidate (the live text plus one blank line) is DECLINED in at most 1 of 20 judge seeds
  and never reported as `improvement: WIN`;
- a candidate the judge prefers, in both orders, on half the cases (ties otherwise) gets
  `improvement: WIN` in at least 9 of 10 seeds.

Process start-up dominates on a loaded 2-core box, so the CLI runs seeds 0 and 1 of the no-op (a full
run, then `--rejudge`) and seed 0 of the effect; the other seeds replay the same judge in process on
the stored executions through the same code path as `--rejudge` (judge_case + conclude). The test
first checks that the replay reproduces the CLI's answers exactly for the seeds the CLI ran."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import run_cli
from eval_server import EvalServer, FakeJudge, JudgeMode
from evaluate_fakes import BETTER, ENV, make_set, skill_text

from skillforge.evaluation.compare import conclude, judge_case
from skillforge.evaluation.judge import Judgement
from skillforge.journal import read_jsonl
from skillforge.llm.client import LLM
from skillforge.llm.config import resolve_all
from skillforge.state.evaluate import CaseResult
from skillforge.state.llm import Role
from skillforge.testing.fake_chat import ScriptedChatModel

N_CASES = 24
NOOP_SEEDS = 20
EFFECT_SEEDS = 10


@pytest.fixture
def ws(workspace, machine) -> Path:  # noqa: ANN001 - conftest fixtures: the example skills imported
    make_set(workspace.root / "evaluation_sets", N_CASES)
    return workspace.root


def sf(args: list[str], srv: EvalServer) -> dict[str, object]:
    env = {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_JUDGE_MODEL": "j",
           "SKILLFORGE_LLM_MAX_RETRIES": "0"}
    proc: subprocess.CompletedProcess[str] = run_cli([*args, "--json", "--no-cache"], env, ok=None)
    assert proc.returncode in (0, 3, 4), proc.stderr
    return json.loads(proc.stdout)


def replay(ws: Path, run: str, mode: JudgeMode, seed: int) -> dict[str, object]:
    """What `evaluate --rejudge RUN` gives with this judge seed, computed in process."""
    judge = FakeJudge(mode, seed)
    model = ScriptedChatModel.responding(lambda messages: Judgement(**judge(str(messages[-1].content))))
    llm = LLM(resolve_all(env=ENV), {Role.JUDGE: model})
    meta = json.loads((ws / "runs" / "traces" / f"{run}.meta.json").read_text(encoding="utf-8"))
    stored = [CaseResult.model_validate({k: v for k, v in line.items() if k in CaseResult.model_fields})
              for line in read_jsonl(ws / "runs" / "traces" / f"{run}.jsonl")]
    results = [judge_case(r.case, r.baseline, r.candidate, llm) for r in stored]
    base = {"run_id": f"replay-{seed}", "skill": meta["skill"], "eval_set": meta["eval_set"]}
    return json.loads(conclude(base, meta["baseline"]["text"], meta["candidate"]["text"], results).model_dump_json())


def same_decision(cli: dict[str, object], rep: dict[str, object]) -> bool:
    return (cli["verdict"], cli["improvement"], cli["evidence"]) == (rep["verdict"], rep["improvement"], rep["evidence"])


def candidate(tmp_path: Path, text: str, name: str) -> str:
    path = tmp_path / name / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_noop_is_not_declined_for_noise_and_a_real_effect_is_a_win(ws, tmp_path):
    args = ["evaluate", "taxi-hailing", "--set", "t", "-w", str(ws)]
    with EvalServer(JudgeMode.RANDOM, seed=0) as srv:
        noop = sf([*args, "--candidate", candidate(tmp_path, skill_text() + "\n", "noop")], srv)
        srv.judge.reseed(1)
        noop_1 = sf(["evaluate", "--rejudge", noop["run_id"], "-w", str(ws)], srv)
        srv.judge.reseed(0, JudgeMode.PREFER_HALF)
        effect = sf([*args, "--candidate", candidate(tmp_path, skill_text(BETTER), "better")], srv)

    assert noop["measured"]["valid_cases"] == N_CASES and noop["measured"]["flip_rate"] > 0.3   # a coin-flipping judge
    noops = [replay(ws, noop["run_id"], JudgeMode.RANDOM, seed) for seed in range(NOOP_SEEDS)]
    assert same_decision(noop, noops[0]) and same_decision(noop_1, noops[1])      # the replay is the CLI
    verdicts = [r["verdict"] for r in noops]
    print(f"no-op over {NOOP_SEEDS} seeds: {verdicts.count('DECLINED')} DECLINED, {verdicts.count('REVIEW')} REVIEW, "
          f"{verdicts.count('PASS')} PASS; improvement {[r['improvement'] for r in noops].count('WIN')} WIN; "
          f"mean flip rate {sum(r['measured']['flip_rate'] for r in noops) / NOOP_SEEDS:.2f}")
    assert verdicts.count("DECLINED") <= 1
    assert all(r["improvement"] != "WIN" for r in noops)

    effects = [replay(ws, effect["run_id"], JudgeMode.PREFER_HALF, seed) for seed in range(EFFECT_SEEDS)]
    assert same_decision(effect, effects[0])
    wins = [r["improvement"] for r in effects].count("WIN")
    print(f"real effect over {EFFECT_SEEDS} seeds: improvement WIN {wins}, verdicts {[r['verdict'] for r in effects]}, "
          f"effect wins per seed {[r['evidence']['effect']['wins'] for r in effects]}")
    assert wins >= 9
    assert all(r["evidence"]["effect"]["losses"] == 0 for r in effects)
