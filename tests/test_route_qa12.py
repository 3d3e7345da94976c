"""QA pass 12 on routing: repeated queries in `route eval`, the route graph's output shape, empty
paths, global options between `route` and its subcommand, retired candidates, duplicate skills'
confusion hint, the empty curve, and case-file labelling mistakes (a real workspace, the real
embedder and SQLite store; no network)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli
from helpers import PLAIN, FakeEmbedder, bench_skills

from skillforge.context import RouteContext
from skillforge.graphs.route import graph
from skillforge.routing.eval import CandidatesError, load_eval_cases
from skillforge.routing.fit import CasesError, load_cases
from skillforge.routing.index import RouteIndex
from skillforge.rules import confusions
from skillforge.rules.confusions import RankedCase, confusion_pairs

HOTEL = "book a hotel in Paris for two nights"


def write(path: Path, *rows: object) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def log_lines(ws: Path) -> list[dict]:
    log = ws / "runs" / "router.jsonl"
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []


# ---- CRASH-1: a repeated query in route eval --------------------------------------------------
def test_repeats_count_once_and_other_candidates_are_another_case(tmp_path: Path) -> None:
    names = ["hotel-booking", "restaurant-booking", "taxi-hailing"]
    path = write(tmp_path / "c.jsonl",
                 {"query": HOTEL, "expected": "hotel-booking"},
                 {"query": HOTEL, "expected": "hotel-booking"},
                 {"query": "Book a hotel in  PARIS for two nights", "expected": "hotel-booking"},  # normalised: the same
                 {"query": HOTEL, "expected": "hotel-booking", "candidates": ["hotel-booking", "taxi-hailing"]},
                 {"query": HOTEL, "expected": "hotel-booking", "candidates": ["taxi-hailing", "hotel-booking"]},
                 {"query": "a table for two", "expected": None})
    cases = load_eval_cases(path, names)
    assert [(c.query, c.candidates) for c in cases] == [
        (HOTEL, None), (HOTEL, ("hotel-booking", "taxi-hailing")), ("a table for two", None)]
    assert len(load_cases(path, names)) == 2  # calibrate and fit read no candidates: one query, one NONE


def test_cli_route_eval_with_a_repeated_line(examples_ws: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "dup.jsonl", {"query": HOTEL, "expected": "hotel-booking"},
                 {"query": HOTEL, "expected": "hotel-booking"}, {"query": "tell me a joke", "expected": None})
    args = ["route", "eval", "--cases", str(path), "-w", str(examples_ws), "--no-llm"]
    report = json.loads(run_cli([*args, "--json", "--curve"], PLAIN).stdout)
    assert [c["query"] for c in report["cases"]] == [HOTEL, "tell me a joke"]
    text = run_cli(args, PLAIN)
    assert "1 line repeats a query with the same label" in text.stderr and "2 queries" in text.stdout


# ---- CRASH-2: every output of the route graph carries chosen ----------------------------------
@pytest.mark.parametrize("query, candidates, reason", [
    ("", None, "empty query"),
    ("weather-query", None, "the query only names a skill"),
    ("will it rain tomorrow", [], "an empty candidate list"),
    ("给我讲个笑话", None, ""),
], ids=["empty", "only-a-name", "no-candidates", "embed"])
def test_graph_output_has_every_documented_key(tmp_path: Path, query: str, candidates: list[str] | None,
                                               reason: str) -> None:
    index = RouteIndex.build(bench_skills(), FakeEmbedder())
    out = graph.invoke({"query": query, "candidates": candidates},
                       context=RouteContext(index, None, tmp_path / "router.jsonl"))
    assert {"query", "candidates", "chosen", "hit_layer", "scores", "latency_ms", "top_k", "reason",
            "none_share"} <= set(out)
    assert out["chosen"] is None and out["reason"].startswith(reason)


def test_graph_output_with_no_skills(tmp_path: Path) -> None:
    out = graph.invoke({"query": "will it rain tomorrow"},
                       context=RouteContext(RouteIndex.build([], FakeEmbedder()), None, tmp_path / "router.jsonl"))
    assert out["chosen"] is None and out["reason"] == "no published skills to route to" and out["top_k"] == []


# ---- MESSAGE-1: an empty path is a usage error naming the option ------------------------------
@pytest.mark.parametrize("args, option", [
    (["eval", "--cases", "CASES", "--skills", ""], "--skills"),
    (["eval", "--cases", ""], "--cases"),
    (["calibrate", "--cases", ""], "--cases"),
    (["fit", "--cases", ""], "--cases"),
])
def test_empty_paths_are_refused(examples_ws: Path, tmp_path: Path, args: list[str], option: str) -> None:
    cases = write(tmp_path / "c.jsonl", {"query": HOTEL, "expected": "hotel-booking"})
    args = [str(cases) if a == "CASES" else a for a in args]
    proc = run_cli(["route", *args, "-w", str(examples_ws)], PLAIN, cwd=tmp_path, ok=2)
    assert option in proc.stderr and "empty path" in proc.stderr and "Is a directory" not in proc.stderr


# ---- MESSAGE-2: -w between `route` and its subcommand ------------------------------------------
def test_global_options_before_a_route_subcommand(examples_ws: Path, tmp_path: Path) -> None:
    before = len(log_lines(examples_ws))
    proc = run_cli(["route", "-w", str(examples_ws), "reset"], PLAIN, ok=2)
    assert "--yes" in proc.stderr and len(log_lines(examples_ws)) == before  # not routed as a query
    cases = write(tmp_path / "c.jsonl", {"query": HOTEL, "expected": "hotel-booking"})
    report = json.loads(run_cli(["route", "--json", "-w", str(examples_ws), "eval", "--cases", str(cases)], PLAIN).stdout)
    assert report["cases"][0]["query"] == HOTEL
    assert [line["source"] for line in log_lines(examples_ws)[before:]] == ["route eval"]
    routed = json.loads(run_cli(["route", f"--workspace={examples_ws}", "--json", "--", "reset"], PLAIN).stdout)
    assert routed["query"] == "reset"  # `--` still routes the word


# ---- MESSAGE-4: a retired skill among the candidates ---------------------------------------------
def test_retired_candidates_say_retired(examples_ws: Path, tmp_path: Path) -> None:
    run_cli(["release", "retire", "hotel-booking", "-w", str(examples_ws)], PLAIN)
    proc = run_cli(["route", "--no-llm", "--candidates", "hotel-booking,taxi-hailing", "book a hotel",
                    "-w", str(examples_ws)], PLAIN, ok=2)
    assert "RETIRED" in proc.stderr and "release revert hotel-booking" in proc.stderr
    assert "Did you mean" not in proc.stderr
    cases = write(tmp_path / "c.jsonl",
                  {"query": HOTEL, "expected": "taxi-hailing", "candidates": ["hotel-booking", "taxi-hailing"]})
    proc = run_cli(["route", "eval", "--cases", str(cases), "-w", str(examples_ws)], PLAIN, ok=2)
    assert "'hotel-booking' is retired" in proc.stderr and "release revert hotel-booking" in proc.stderr
    assert "no skill has" not in proc.stderr


# ---- MESSAGE-5: two skills with the same description --------------------------------------------
def test_duplicate_descriptions_get_no_not_for_hint() -> None:
    same = "Book a hotel room in any city for given nights."
    rows = [RankedCase("q1", "alpha-one", "alpha-two"), RankedCase("q2", "alpha-two", "alpha-one")]
    [pair] = confusion_pairs(rows, {"alpha-one": same, "alpha-two": same.lower().rstrip(".")})
    out = pair.as_json()
    assert out["duplicate"] is True and out["not_for"] == []
    assert "duplicate each other" in out["hint"] and "not_for" not in out["hint"]
    [pair] = confusion_pairs(rows, {"alpha-one": same, "alpha-two": "Book a hostel bed in Rome."})
    assert pair.as_json()["duplicate"] is False and "not_for" in pair.as_json()["hint"]
    assert not confusions.same_description("", "") and confusions.same_description(same, same + " ")
    assert not confusions.same_description("Book a hotel room in a city for some nights.",
                                           "Book a hostel bed in a city for some nights.")  # told apart


# ---- MESSAGE-9: --curve with no case at the embed layer -------------------------------------------
def test_no_curve_is_said(examples_ws: Path, tmp_path: Path) -> None:
    cases = write(tmp_path / "c.jsonl", {"query": "book a hotel in Paris", "expected": "hotel-booking"})
    args = ["route", "eval", "--cases", str(cases), "-w", str(examples_ws), "--no-llm", "--curve"]
    report = json.loads(run_cli([*args, "--json"], PLAIN).stdout)
    assert report["cases"][0]["hit_layer"] == "rule" and report["curve"] == []
    out = run_cli(args, PLAIN).stdout
    assert "no curve: no case reached the embed layer" in out and "clears the threshold" not in out


# ---- MESSAGE-10: labelling mistakes ------------------------------------------------------------
NAMES = ["hotel-booking", "restaurant-booking", "taxi-hailing"]


@pytest.mark.parametrize("line, words", [
    ({"query": "q", "expected": "NONE"}, ["'NONE' is not a skill", '"expected": null']),
    ({"query": "q", "expected": "none"}, ["'none' is not a skill", "null"]),
    ({"query": "q", "expected": "hotel-bookin"}, ["unknown skill 'hotel-bookin'", "Did you mean: hotel-booking?"]),
    ('{"query": "q", "expected": "hotel-booking", "expected": null}', [":1:", "duplicate key 'expected'"]),
    ('{"query": "q", "query": "r", "expected": null}', [":1:", "duplicate key 'query'"]),
])
def test_labelling_mistakes_are_named(tmp_path: Path, line: object, words: list[str]) -> None:
    with pytest.raises(CasesError) as err:
        load_eval_cases(write(tmp_path / "c.jsonl", line), NAMES)
    for word in words:
        assert word in str(err.value)


def test_padded_candidates_are_stripped(tmp_path: Path) -> None:
    [case] = load_eval_cases(write(tmp_path / "c.jsonl", {"query": "q", "expected": "hotel-booking",
                                                           "candidates": [" hotel-booking ", "taxi-hailing", " "]}),
                             NAMES)
    assert case.candidates == ("hotel-booking", "taxi-hailing")
    with pytest.raises(CandidatesError, match="'hotel-bookin' .*did you mean hotel-booking"):
        load_eval_cases(write(tmp_path / "d.jsonl", {"query": "q", "expected": "hotel-booking",
                                                     "candidates": [" hotel-bookin "]}), NAMES)
