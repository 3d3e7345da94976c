"""QA 32 T1: a held-out query routed by hand (as typed, with a `?`, a greeting or a suffix) never
reaches a model as a need: `skills suggest` leaves its near-copies out of its clusters and the
`skills new` command it prints, and `skills new` (`--from-queries`, `--from-sessions`, the Python
API) leaves them out of the proposer's prompt, or refuses a need that copies one before any call."""

from __future__ import annotations

import difflib
import json
import random
import shutil
from datetime import timedelta

import pytest
from langchain_core.messages import BaseMessage
from suggest_world import NOW, PLANTED, route_line, write_log
from test_skill_new import FLIGHT, REPO

from evolve_fakes import ENV, new_workspace
from skillforge.config import init_workspace
from skillforge.evolution.heldout import HeldOut, copied_from, held_out_queries, split_copies
from skillforge.library.suggest import scan
from skillforge.llm.client import LLM
from skillforge.llm.config import resolve_all
from skillforge.rules.containment import copies_held_out, held_within
from skillforge.rules.failures import NEAR_DUPLICATE_RATIO, _norm, near_duplicate
from skillforge.runners.evolve import Runner
from skillforge.state.llm import Role
from skillforge.state.suggest import SuggestStatus
from skillforge.testing.fake_chat import ScriptedChatModel

HELD = ["Where is my parcel 1Z999AA10123456784 right now, it has not moved for three days",
        "京东快递 JDVC08837152641 三天没动静了，怎么回事？",
        "has my DHL package to Berlin cleared customs yet"]


@pytest.mark.parametrize("seen, copy", [
    (HELD[0], True),
    (HELD[0] + "?", True),
    (HELD[0].upper() + "??", True),
    ("Hi there! " + HELD[1] + " Thanks!", True),
    ("Hi there! " + HELD[2] + " Thanks a lot, you are a star, I have been waiting all week", True),
    ("has my DHL package to Berlin cleared customs", True),                # a few characters off
    ("has my UPS parcel to Paris been delivered", False),                  # same domain, another request
    ("track package", False),
    ("where is my parcel", False),
    ("JD Express JDVC08837152641 hasn't moved for three days, what's going on?", True),   # QA 35 T2: translated,
    ("我的UPS包裹1Z999AA10123456784显示有点奇怪", True),                                    # the identifier kept
    ("my parcel 1Z999AA10123456799 is late", False),                                      # another number
    ("order 2025 and 12345 items", False),                                                # short numbers
])
def test_copies_held_out_edges(seen: str, copy: bool) -> None:
    assert any(copies_held_out(seen, h) for h in HELD) is copy


def test_a_cosine_at_the_dedupe_threshold_counts() -> None:
    assert copies_held_out("book a cab to the station", "get me a taxi to the railway station", cosine=0.97)
    assert not copies_held_out("book a cab to the station", "get me a taxi to the railway station", cosine=0.96)


def _old_near_duplicate(a: str, b: str) -> bool:
    x, y = _norm(a), _norm(b)
    return x == y or difflib.SequenceMatcher(a=x, b=y, autojunk=False).ratio() >= NEAR_DUPLICATE_RATIO


def test_the_quick_bounds_change_no_judgement() -> None:
    """near_duplicate and held_within now skip pairs by bounds of their ratio / shared words: the
    same answers as the full comparison on the shipped sets' queries and edits of them."""
    queries = [c["query"] for f in ("dev", "repair", "holdout", "final_audit", "p0")
               for c in json.loads((REPO / "evaluation_sets" / f"{f}.json").read_text(encoding="utf-8"))["cases"]]
    rng = random.Random(7)
    edited = []
    for q in queries[:80]:
        words = q.split()
        edited += [q + "?", "Hi! " + q + " thanks", " ".join(words[:-1]), q[:-3], q.replace(" ", "  ", 2),
                   " ".join(rng.sample(words, len(words)))]
    pairs = [(a, b) for a in queries[:60] for b in queries[:60]] + [(e, q) for e in edited for q in queries[:80:7]]
    same = sum(near_duplicate(a, b) for a, b in pairs)
    assert all(near_duplicate(a, b) is _old_near_duplicate(a, b) for a, b in pairs)
    assert same > 60  # the diagonal and the near edits: the test compares positives too
    within = [held_within(b, a) for a, b in pairs]
    assert sum(within) > 60


def test_held_out_queries_read_held_out_sets_and_every_query_of_an_unreadable_file(tmp_path) -> None:
    ws = init_workspace(tmp_path / "ws")
    d = ws.evaluation_sets_dir
    case = {"id": "h-1", "skill": "package-tracking", "query": HELD[2]}
    (d / "holdout.json").write_text(json.dumps({"meta": {"name": "holdout", "partition": "holdout",
                                                         "skills": ["package-tracking"]}, "cases": [case]}), "utf-8")
    (d / "dev.json").write_text(json.dumps({"meta": {"name": "dev", "partition": "dev", "skills": ["package-tracking"]},
                                            "cases": [{**case, "id": "d-1", "query": "track my parcel"}]}), "utf-8")
    (d / "broken.json").write_text('{"meta": {"partition": "dev"}, "cases": [{"query": "' + HELD[1] + '"}', "utf-8")
    got = held_out_queries(ws)
    assert HeldOut(HELD[2], "holdout.json") in got and HeldOut(HELD[1], "broken.json") in got
    assert all(h.query != "track my parcel" for h in got)
    found = copied_from(["Hello, " + HELD[2] + "? thanks", "track my parcel"], got)
    assert found == [HeldOut(HELD[2], "holdout.json"), None]


# ---- skills suggest ------------------------------------------------------------------------
def test_suggest_leaves_near_copies_of_held_out_queries_out_of_every_cluster(tmp_path) -> None:
    ws = init_workspace(tmp_path / "ws")
    held = PLANTED["flight-status"]  # a whole topic routed by hand: its queries are the holdout's
    cases = [{"id": f"h-{i}", "skill": "flights", "query": q} for i, q in enumerate(held)]
    (ws.evaluation_sets_dir / "holdout.json").write_text(json.dumps(
        {"meta": {"name": "holdout", "partition": "holdout", "skills": ["flights"]}, "cases": cases}), "utf-8")
    lines = [route_line(f"Hi there! {q} Thanks!", NOW - timedelta(hours=i)) for i, q in enumerate(held)]
    lines += [route_line(q + "?", NOW - timedelta(hours=i, minutes=5)) for i, q in enumerate(held)]
    lines += [route_line(q, NOW - timedelta(hours=i, minutes=9)) for t in PLANTED if t != "flight-status"
              for i, q in enumerate(PLANTED[t])]
    write_log(ws.router_log, lines)
    found = scan(ws, now=NOW)
    assert found.counts.held_out_copies == 2 * len(held)
    shown = [q for c in found.clusters for q in c.queries]
    assert shown and not any(copies_held_out(q, h) for q in shown for h in held)
    assert len([c for c in found.clusters if c.status is SuggestStatus.PROPOSE]) == len(PLANTED) - 1
    files = "".join(p.read_text(encoding="utf-8") for p in (ws.runs_dir / "suggestions" / "clusters").iterdir())
    assert not any(h.lower() in files.lower() for h in held)


# ---- skills new ----------------------------------------------------------------------------
def _recording_llm(prompts: list[str]):  # noqa: ANN202 - an llm factory
    def respond(messages: list[BaseMessage]) -> object:
        prompts.append("\n".join(str(m.content) for m in messages))
        return FLIGHT

    def factory(ledger=None, cache=None) -> LLM:
        return LLM(resolve_all(env=ENV), {Role.PROPOSER: ScriptedChatModel.responding(respond)},  # type: ignore[arg-type]
                   cache=cache, ledger=ledger)
    return factory


@pytest.fixture(scope="module")
def ws_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("new32") / "ws"
    ws = new_workspace(root)
    shutil.copytree(REPO / "evaluation_sets" / "router", ws.evaluation_sets_dir / "router")
    return root


@pytest.fixture
def ws(ws_root, tmp_path):
    from skillforge.config import Workspace

    shutil.copytree(ws_root, tmp_path / "ws", symlinks=True)
    return Workspace.open(tmp_path / "ws")


def test_skills_new_shows_the_proposer_no_held_out_request(ws) -> None:
    held = [h.query for h in held_out_queries(ws)]
    assert len(held) >= 4
    asked = ["Hello! " + held[0] + " thanks", held[1] + "?", held[2].upper(),
             "is flight CA1831 on time today", "has BA38 departed from Heathrow yet"]
    prompts: list[str] = []
    out = Runner(ws, llm_factory=_recording_llm(prompts)).capture("track a flight's status", queries=asked)
    assert len(prompts) == 1, out
    assert "is flight CA1831 on time today" in prompts[0] and "has BA38 departed" in prompts[0]
    assert not any(h.lower()[:40] in prompts[0].lower() for h in held[:3])
    assert "3 of the users' requests left out: they nearly copy held-out queries" in str(out["message"]), out


def test_a_need_that_copies_a_held_out_query_is_refused_before_any_call(ws) -> None:
    held = held_out_queries(ws)[0].query
    prompts: list[str] = []
    out = Runner(ws, llm_factory=_recording_llm(prompts)).capture(held + " please", name="helper-y")
    assert out["status"] == "NO_IMPROVEMENT" and prompts == [], out
    assert "nearly copies a held-out query of" in str(out["message"]) and held not in str(out["message"])


def test_a_held_out_query_typed_over_two_requests_is_left_out_whole() -> None:
    """QA 35 T2: 'My USPS parcel 94001...' then 'shows something weird, can you look?' reached the prompt adjacent."""
    held = [HeldOut("My USPS parcel 9400111899561234509872 shows something weird, can you look?", "holdout.json")]
    texts = ["is flight CA1831 on time", "My USPS parcel", "shows something weird, can you look?", "book a cab"]
    assert [x is not None for x in split_copies(texts, held)] == [False, True, True, False]
    assert split_copies(["book a cab", "is flight CA1831 on time"], held) == [None, None]


def test_a_failed_draft_still_says_how_many_requests_were_left_out(ws) -> None:
    """QA 35 M1: only a draft that waited for review said it."""
    held = [h.query for h in held_out_queries(ws)]

    def factory(ledger=None, cache=None) -> LLM:
        return LLM(resolve_all(env=ENV), {Role.PROPOSER: ScriptedChatModel.responding(lambda m: "not JSON")},  # type: ignore[arg-type]
                   cache=cache, ledger=ledger)
    out = Runner(ws, llm_factory=factory).capture("track a flight's status", queries=[held[0] + "?", "is CA1831 late"])
    assert out["status"] == "NO_IMPROVEMENT" and "no usable draft" in str(out["message"])
    assert "1 of the users' requests left out: they nearly copy held-out queries" in str(out["message"]), out


def test_the_indexed_search_answers_as_every_pair_would() -> None:
    """rules/containment.first_copies asks each rule only where its necessary condition holds: the same
    first copy as copies_held_out over every pair, on the shipped sets' queries and edits of them."""
    from skillforge.rules.containment import first_copies

    sets = {f: json.loads((REPO / "evaluation_sets" / f"{f}.json").read_text(encoding="utf-8"))["cases"]
            for f in ("dev", "repair", "holdout", "final_audit", "p0")}
    held = [c["query"] for f in ("holdout", "final_audit") for c in sets[f]]
    rng = random.Random(3)
    seen = [c["query"] for f in ("dev", "repair", "p0") for c in sets[f]]
    for h in held:
        words = h.split()
        seen += [h + "?", "Hi! " + h + " thanks a lot", h[:-4], " ".join(words[:-1]), h.upper(), "a concatenated " + h,
                 " ".join(rng.sample(words, len(words))), "translated, keeping " + " ".join(w for w in words if any(ch.isdigit() for ch in w))]
    cos = [[rng.choice((0.5, 0.9, 0.97, 0.99)) for _ in held] for _ in seen]
    brute = [next((j for j, h in enumerate(held) if copies_held_out(s, h, c[j])), None) for s, c in zip(seen, cos)]
    assert first_copies(seen, held, cos) == brute
    plain = [next((j for j, h in enumerate(held) if copies_held_out(s, h)), None) for s in seen]
    assert first_copies(seen, held) == plain and sum(x is not None for x in plain) > len(held) * 3
