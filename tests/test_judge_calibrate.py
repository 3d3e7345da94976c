"""`skillforge judge calibrate` and `skillforge judge status` as a user runs them: a real process against
a local OpenAI-compatible server playing a judge with a known fault, on a golden file the test
generates (42 pairs, the person's choices balanced over A / B / tie on each dimension).

- a judge that always picks the answer shown first: position bias 1 (its interval includes 1);
- a coin-flipping judge: kappa's interval contains 0, every dimension REPORTED;
- a judge that agrees with the person 90 % of the time: kappa >= 0.7, every dimension GATED;
- the record is bound to the judge's fingerprint: another model or another prompt makes it stale.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import Counter
from pathlib import Path

import pytest
from conftest import KEPT_ENV, run_cli

from skillforge.calibration.records import fingerprint_of
from skillforge.rules.calibration import dimension_statuses, pair_id, sha256_text
from skillforge.state.calibration import HUMAN_DIMENSIONS, CalibrationRecord
from skillforge.testing.openai_server import FakeOpenAIServer, Reply
from skillforge.testing.schema_values import JSONDict, pick_tool

CHOICES = ("A", "B", "tie")
SWAP = {"A": "B", "B": "A", "tie": "tie"}
N_PAIRS = 42
SKILL = "taxi-hailing"


def _hash(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()[:8], "big")


def golden_lines(n: int = N_PAIRS) -> list[dict[str, object]]:
    """n labelled pairs; each dimension's choices cycle through A / B / tie with its own phase."""
    lines = []
    for i in range(n):
        a = f"回答 {i}-甲：车费 {10 + i} 元，{i % 7 + 2} 分钟到达。"
        b = f"回答 {i}-乙：暂时无法叫车，请稍后再试 ({i})。"
        sha_a, sha_b = sha256_text(a), sha256_text(b)
        labels = {"task": CHOICES[i % 3], "robustness": CHOICES[(i // 3) % 3], "readability": CHOICES[(2 * i + 1) % 3]}
        lines.append({"pair_id": pair_id(SKILL, f"c{i}", sha_a, sha_b), "skill": SKILL, "case_id": f"c{i}",
                      "query": f"帮我叫一辆去机场的车 #{i}", "must_include": [f"{10 + i} 元"], "answer_a": a,
                      "answer_b": b, "sha_a": sha_a, "sha_b": sha_b, "labels": labels, "source": "fixture",
                      "labelled_at": "2026-01-01T00:00:00+00:00"})
    return lines


def write_golden(path: Path, lines: list[dict[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return path


class JudgeServer(FakeOpenAIServer):
    """Answers the judge's `Judgement` tool call by reading the request. Modes: "first" (A on every
    dimension), "coin" (A / B / tie from a seeded hash), "agree90" (finds the two golden answers in
    the prompt, answers the person's choice in the order shown, wrong on ~10 % by hash), "fail"
    (an unusable label for the pairs in `failing`, else like agree90). A prompt seen again (a
    repeat) hashes with its count, so the random judges answer repeats independently."""

    def __init__(self, mode: str, golden: list[dict[str, object]], seed: int = 7) -> None:
        super().__init__(default=Reply.auto())
        self.mode, self.seed = mode, seed
        self.answers = {str(x["answer_a"]): (x, "A") for x in golden} | {str(x["answer_b"]): (x, "B") for x in golden}
        self.failing: set[str] = set()
        self.judged: Counter[str] = Counter()
        self._seen_lock = threading.Lock()

    def _answer(self, reply: Reply, body: JSONDict) -> object:  # type: ignore[override]
        fn = pick_tool(body)
        if fn is None or fn.get("name") != "Judgement":
            return super()._answer(reply, body)
        prompt = str(body["messages"][-1]["content"])
        with self._seen_lock:
            k = self.judged[prompt]
            self.judged[prompt] += 1
        return super()._answer(Reply.tool_call("Judgement", {**self.labels(prompt, k), "reason": self.mode}), body)

    def labels(self, prompt: str, k: int) -> dict[str, str]:
        if self.mode == "first":
            return dict.fromkeys(("overall", *HUMAN_DIMENSIONS), "A")
        if self.mode == "coin":
            return {d: CHOICES[_hash(self.seed, prompt, d, k) % 3] for d in ("overall", *HUMAN_DIMENSIONS)}
        shown = sorted((prompt.find(text), text) for text in self.answers if text in prompt)
        pair, first_side = self.answers[shown[0][1]]
        if self.mode == "fail" and pair["pair_id"] in self.failing:
            return dict.fromkeys(("overall", *HUMAN_DIMENSIONS), "maybe")
        out = {}
        for d in HUMAN_DIMENSIONS:
            person = pair["labels"][d]
            right = person if first_side == "A" else SWAP[person]
            h = _hash(self.seed, prompt, d, k)
            out[d] = right if h % 10 else [c for c in CHOICES if c != right][(h // 10) % 2]
        return {"overall": out["task"], **out}

    @property
    def judge_requests(self) -> int:
        with self._seen_lock:
            return sum(self.judged.values())


def llm_env(srv: FakeOpenAIServer, judge: str | None = "judge-j") -> dict[str, str]:
    env = {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "exec-m", "SKILLFORGE_LLM_MAX_RETRIES": "0"}
    return env | ({"SKILLFORGE_JUDGE_MODEL": judge} if judge else {})


def calibrate_json(ws: Path, env: dict[str, str], *extra: str) -> dict:
    proc = run_cli(["judge", "calibrate", "--json", "-w", str(ws), *extra], env)
    return json.loads(proc.stdout)


def records(ws: Path) -> list[CalibrationRecord]:
    path = ws / "runs" / "judge_calibration.jsonl"
    if not path.exists():
        return []
    return [CalibrationRecord.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def ws(workspace) -> Path:
    return workspace.root


@pytest.fixture
def golden() -> list[dict[str, object]]:
    return golden_lines()


def test_a_judge_that_always_picks_the_first_answer_shows_position_bias_one(ws, golden):
    write_golden(ws / "evaluation_sets" / "golden" / f"{SKILL}.jsonl", golden)
    with JudgeServer("first", golden) as srv:
        # no judge model of its own: the judge is the executor's and the proposer's model
        proc = run_cli(["judge", "calibrate", "-w", str(ws)], llm_env(srv, judge=None))
        assert srv.judge_requests == N_PAIRS * 2 * 3  # every pair, both orders, 3 repeats (the default)
        assert srv.hits == srv.judge_requests  # the judge only: the executor is never called
    [record] = records(ws)
    assert record.requests == N_PAIRS * 2 * 3 and record.repeats == 3 and record.pairs == N_PAIRS
    assert record.golden == {f"evaluation_sets/golden/{SKILL}.jsonl": hashlib.sha256(
        (ws / "evaluation_sets" / "golden" / f"{SKILL}.jsonl").read_bytes()).hexdigest()}
    for d in record.dimensions.values():
        assert d.position_bias >= 0.95 and d.position_bias_ci[0] <= d.position_bias <= d.position_bias_ci[1] == 1.0
        assert d.flip_rate_orders == 1.0 and d.flip_rate_repeats == 0.0
        assert d.status == "reported"
    assert record.self_preference == {"executor": True, "proposer": True}
    lines = proc.stdout.splitlines()
    cells = [[c.strip() for c in line.strip("│ ").split("│")] for line in lines if line.startswith("│")]
    rows = {row[0]: row for row in cells}
    assert set(rows) == set(HUMAN_DIMENSIONS)
    assert all(r[4].startswith("1.00 [0.9") and r[4].endswith("1.00]") and r[-1] == "REPORTED" for r in rows.values())
    assert record.fingerprint in proc.stdout
    assert sum("self-preference" in line for line in lines) == 2  # executor and proposer


def test_a_coin_flipping_judge_has_kappa_about_zero_and_is_only_reported(ws, golden, tmp_path):
    path = write_golden(tmp_path / "elsewhere" / "labels.jsonl", golden)  # --golden: any file
    with JudgeServer("coin", golden) as srv:
        out = calibrate_json(ws, llm_env(srv), "--golden", str(path), "--repeats", "2")
        assert srv.judge_requests == N_PAIRS * 2 * 2
    assert out["repeats"] == 2 and out["self_preference"] == {"executor": False, "proposer": False}
    for d in out["dimensions"].values():
        lo, hi = d["kappa_ci"]
        assert lo <= 0.0 <= hi and lo <= d["kappa"] <= hi and abs(d["kappa"]) < 0.2
        assert d["status"] == "reported" and d["invalid"] == 0
        assert 0.3 < d["position_bias"] < 0.7  # a coin has no favourite position
        assert d["flip_rate_repeats"] > 0.3   # the repeats were asked again, not served from the cache
    assert records(ws)[-1].model_dump(mode="json") == out


def test_a_judge_that_agrees_ninety_percent_gates_and_a_changed_judge_is_stale(ws, golden):
    write_golden(ws / "evaluation_sets" / "golden" / f"{SKILL}.jsonl", golden)
    with JudgeServer("agree90", golden) as srv:
        env = llm_env(srv)
        out = calibrate_json(ws, env)
        assert srv.judge_requests == N_PAIRS * 2 * 3
        for d in out["dimensions"].values():
            assert d["kappa"] >= 0.7 and d["kappa_ci"][0] > 0.4 and d["agreement"] >= 0.8
            assert d["status"] == "gated" and d["invalid"] == 0
            assert 0 < d["flip_rate_repeats"] < 0.5  # the ~10 % errors differ between repeats
        status = json.loads(run_cli(["judge", "status", "--json", "-w", str(ws)], env).stdout)
        assert status["state"] == "calibrated" and status["fingerprint"] == out["fingerprint"]
        assert set(status["statuses"].values()) == {"gated"}
        # another judge model: the record no longer applies, and the CLI says why
        other = env | {"SKILLFORGE_JUDGE_MODEL": "judge-k"}
        text = run_cli(["judge", "status", "-w", str(ws)], other).stdout
        assert "stale: the judge changed since " + out["created_at"] in text and "model judge-j → judge-k" in text
        endpoint = srv.base_url
    [record] = records(ws)
    assert record.fingerprint == fingerprint_of("judge-j", endpoint)[0]
    assert set(dimension_statuses(record, fingerprint_of("judge-k", endpoint)[0]).values()) == {"uncalibrated"}


def test_a_changed_judge_prompt_makes_the_record_stale(ws, golden, monkeypatch):
    from typer.testing import CliRunner

    from skillforge.calibration.records import append_record
    from skillforge.cli.main import app
    from skillforge.config import Workspace
    from skillforge.evaluation import judge

    for key in [k for k in os.environ if k.startswith(("SKILLFORGE_", "OPENAI_")) and k not in KEPT_ENV]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("SKILLFORGE_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SKILLFORGE_LLM_MODEL", "judge-j")
    endpoint = "http://127.0.0.1:9/v1"
    fp, prompt_sha, rubric_sha = fingerprint_of("judge-j", endpoint)
    record = CalibrationRecord(fingerprint=fp, model="judge-j", endpoint=endpoint, prompt_sha=prompt_sha,
                               rubric_sha=rubric_sha, created_at="2026-02-03T04:05:06+00:00", repeats=3, pairs=0,
                               dimensions={})
    append_record(Workspace.open(ws), record)
    runner = CliRunner()
    same = runner.invoke(app, ["judge", "status", "-w", str(ws)])
    assert same.exit_code == 0 and "calibrated on 2026-02-03T04:05:06+00:00" in same.output
    prompt = judge.judge_prompt_text()
    monkeypatch.setattr(judge, "judge_prompt_text", lambda: prompt + "\nBe brief.")
    changed = runner.invoke(app, ["judge", "status", "-w", str(ws)])
    assert changed.exit_code == 0
    assert "stale: the judge changed since 2026-02-03T04:05:06+00:00 (prompt changed)" in changed.output
    new_fp = fingerprint_of("judge-j", endpoint)[0]
    assert new_fp != fp and set(dimension_statuses(record, new_fp).values()) == {"uncalibrated"}


def test_failed_judgements_are_counted_invalid_and_repeats_bypass_the_cache(ws):
    golden = golden_lines(9)
    write_golden(ws / "evaluation_sets" / "golden" / f"{SKILL}.jsonl", golden)
    with JudgeServer("fail", golden) as srv:
        srv.failing = {str(golden[0]["pair_id"])}
        env = llm_env(srv)
        out = calibrate_json(ws, env)
        assert srv.judge_requests == 9 * 2 * 3
        for d in out["dimensions"].values():
            assert d["invalid"] == 3 and d["judgements"] == 8 * 3 and d["pairs"] == 9
        # again: the first repeat of each pair that answered comes from the cache, the others are asked again
        again = calibrate_json(ws, env)
        assert srv.judge_requests == 9 * 2 * 3 + 9 * 2 * 3 - 8 * 2
        assert again["requests"] == 9 * 2 * 3 and len(records(ws)) == 2


def test_no_labels_and_bad_options_are_named_errors_and_send_nothing(ws, golden, tmp_path):
    with JudgeServer("first", golden) as srv:
        env = llm_env(srv)
        proc = run_cli(["judge", "calibrate", "-w", str(ws)], env, ok=2)
        assert "no golden labels" in proc.stderr and "skillforge judge label RUN" in proc.stderr
        proc = run_cli(["judge", "calibrate", "--golden", str(tmp_path / "missing.jsonl"), "-w", str(ws)], env, ok=2)
        assert "no such golden file" in proc.stderr
        torn = write_golden(tmp_path / "torn.jsonl", golden[:2])
        torn.write_text(torn.read_text(encoding="utf-8")[:-40], encoding="utf-8")  # the second line torn
        write_golden(ws / "evaluation_sets" / "golden" / f"{SKILL}.jsonl", golden[:3])
        proc = run_cli(["judge", "calibrate", "--repeats", "0", "-w", str(ws)], env, ok=2)
        assert "--repeats must be between 1 and" in proc.stderr
        proc = run_cli(["judge", "calibrate", "--budget-calls", "4", "--no-cache", "-w", str(ws)], env, ok=6)
        assert "BUDGET" in proc.stdout and "nothing was recorded" in proc.stdout
        assert srv.judge_requests == 4
        assert records(ws) == []  # nothing recorded so far
        proc = run_cli(["judge", "calibrate", "--golden", str(torn), "--repeats", "1", "-w", str(ws)],
                       {**env, "COLUMNS": "400"})  # the warning is one console line: wide enough for tmp paths
        assert "torn.jsonl:2: skipped a line that is not JSON" in proc.stderr.replace("\n", "")
    [record] = records(ws)
    assert record.pairs == 1 and record.requests == 2  # the torn line was skipped with a warning
