"""A big evaluation set loads in time linear in its distinct texts (QA F10), with the warnings it
always had: `warn_cases` on a generated set (benchmarks/set_load.py `make_set`: long queries,
repeats, and a case for each warning) says exactly what the reference below (the loader as it was
before the caches grew: every text computed afresh) says, in the same order; a second load in the
same process computes no text again."""

from __future__ import annotations

import importlib.util
import json
import logging

import pytest

from conftest import REPO
from skillforge.config import Workspace
from skillforge.evaluation import datasets
from skillforge.evaluation.datasets import load_sets, read_set, warn_cases
from skillforge.rules import casetext
from skillforge.state.evaluate import VISIBLE_TO_PROPOSER, Case, EvalSet


def _generator():
    spec = importlib.util.spec_from_file_location("set_load_bench", REPO / "benchmarks" / "set_load.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


make_set = _generator().make_set


def _reference_case_warnings(case: Case, proposer_sees: bool) -> list[str]:
    """casetext.case_warnings as it was, each text computed with no cache at all."""
    out: list[str] = []
    for name, text in casetext._fields(case):
        if not text:
            continue
        _, found, injected = casetext._for_proposer.__wrapped__(text)
        kinds = tuple(sorted(set(found)))
        if kinds:
            out.append(f"its {name} has a secret shape ({', '.join(kinds)})"
                       + (": a proposer sees it redacted" if proposer_sees else ""))
        if injected:
            out.append(f"its {name} has a possible prompt injection"
                       + (f": a proposer sees {casetext.FLAGGED!r} instead" if proposer_sees else ""))
    return out


def _reference_lines(path, eval_set: EvalSet) -> list[str]:
    """datasets.warn_cases' lines as it was."""
    sees = eval_set.meta.partition in VISIBLE_TO_PROPOSER
    lines = [f"{path.name}: case '{case.id}': {why}"
             for case in eval_set.cases for why in _reference_case_warnings(case, sees)]
    if unchecked := [c.id for c in eval_set.cases if not (c.expect.must_include or c.expect.must_not_include)]:
        lines.append(f"{path.name}: {len(unchecked)} of {len(eval_set.cases)} case(s) have no expectation (must_include "
                     f"/ must_not_include), e.g. '{unchecked[0]}': the judge alone scores them, the objective pass "
                     "rate leaves them out, and a run with no checked case is REVIEW at best")
    return lines


def _cold() -> None:
    datasets._WARNED.clear()
    casetext._findings.cache_clear()
    casetext._for_proposer.cache_clear()
    datasets._normalise_query.cache_clear()


def _write(tmp_path, n: int, partition: str, seed: int = 11):
    sets = tmp_path / "evaluation_sets"
    sets.mkdir(exist_ok=True)
    path = sets / f"{partition}.json"
    path.write_text(json.dumps(make_set(n, seed=seed, name=partition, partition=partition), ensure_ascii=False),
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("partition", ["repair", "holdout"])
def test_warnings_equal_the_reference_on_a_generated_set(tmp_path, partition):
    path = _write(tmp_path, 400, partition)
    s = read_set(path)
    expected = _reference_lines(path, s)
    said = " ".join(expected)
    for what in ("its query has a secret shape", "its query has a possible prompt injection",
                 "its fixtures has a secret shape", "its fixtures has a possible prompt injection",
                 "its expectations has a secret shape", "(split)", "private-key", "card-number",
                 "have no expectation"):
        assert what in said, what  # the generated set exercises every warning
    _cold()
    assert warn_cases(path, s) == expected
    assert warn_cases(path, read_set(path)) == expected  # remembered: the same lines again


def test_load_sets_logs_the_reference_once_each(tmp_path, caplog):
    paths = [_write(tmp_path, 300, "dev", seed=3), _write(tmp_path, 300, "holdout", seed=5)]
    for p in paths:  # the two sets must not share a query (check_across): one is held out
        data = json.loads(p.read_text(encoding="utf-8"))
        for c in data["cases"]:
            c["query"] = f"{c['query']} [{p.stem}]"
        p.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    expected = [line for p in paths for line in _reference_lines(p, read_set(p))]
    _cold()
    with caplog.at_level(logging.WARNING, logger="skillforge.evaluation.datasets"):
        load_sets(Workspace(tmp_path))
        load_sets(Workspace(tmp_path))
    assert [r.getMessage() for r in caplog.records] == list(dict.fromkeys(expected))


def test_each_distinct_text_is_computed_once_per_process(tmp_path):
    """Linear, not quadratic, and a second load computes nothing: the findings are asked once per
    distinct field text, and the caches hold a set far bigger than this one (20 000 cases)."""
    path = _write(tmp_path, 1000, "repair")
    s = read_set(path)
    texts = {t for c in s.cases for _, t in casetext._fields(c) if t}
    _cold()
    load_sets(Workspace(tmp_path))
    first = casetext._findings.cache_info()
    assert first.misses == len(texts) and first.currsize == len(texts)
    folds = datasets._normalise_query.cache_info()
    assert folds.misses == len({c.query for c in s.cases})
    load_sets(Workspace(tmp_path))
    assert casetext._findings.cache_info().misses == first.misses
    assert datasets._normalise_query.cache_info().misses == folds.misses
    assert casetext.FINDINGS_CACHE >= 3 * 20_000 and datasets._normalise_query.cache_info().maxsize >= 20_000
