"""The hand-written golden fixture (evaluation_sets/golden/*.jsonl, made by scripts/golden_fixture.py):
every line is a GoldenLabel whose ids and hashes are what the rules compute, every pair comes from
a dev/repair/p0 case of the example sets with that case's query and expectations, the labels are
spread over A, B and tie on each dimension, the files are what the script writes, and the golden
folder does not disturb the loaders of the evaluation sets. Reads the repository; writes only tmp_path."""

from __future__ import annotations

import importlib.util
import json
import shutil
from collections import Counter
from types import ModuleType

import pytest
from conftest import REPO

from skillforge.config import init_workspace
from skillforge.evaluation.datasets import load_proposer_bundle, load_sets, set_files
from skillforge.rules.calibration import pair_id, sha256_text
from skillforge.state.calibration import HUMAN_DIMENSIONS, GoldenLabel

SETS = REPO / "evaluation_sets"
GOLDEN = SETS / "golden"
MIN_PAIRS = 40
MIN_PER_CHOICE = {"A": 5, "B": 5, "tie": 3}


def golden_files() -> list:
    return sorted(GOLDEN.glob("*.jsonl"))


def golden_lines() -> list[tuple[str, int, str]]:
    """(file name, line number, text) of every non-blank line of every golden file."""
    return [(f.name, n, line) for f in golden_files()
            for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1) if line.strip()]


@pytest.fixture(scope="module")
def every_label() -> list[tuple[str, GoldenLabel]]:
    """Every line of the golden files: the fixture and any label a person appended after it."""
    return [(name, GoldenLabel.model_validate_json(text)) for name, _, text in golden_lines()]


@pytest.fixture(scope="module")
def labels(every_label) -> list[tuple[str, GoldenLabel]]:
    """The hand-written fixture's lines."""
    return [(name, x) for name, x in every_label if x.source == "fixture"]


@pytest.fixture(scope="module")
def cases() -> dict[str, tuple[str, dict]]:
    """Case id -> (partition, case) over the top-level example sets."""
    out = {}
    for path in sorted(SETS.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        out.update({c["id"]: (data["meta"]["partition"], c) for c in data["cases"]})
    return out


def test_every_line_is_a_golden_label_in_its_skill_s_file(every_label, labels) -> None:
    assert golden_lines() and len(every_label) == len(golden_lines())
    for name, label in every_label:
        assert name == f"{label.skill}.jsonl", f"{label.pair_id} is in {name}, not in its skill's file"
        assert set(label.labels) == set(HUMAN_DIMENSIONS), label.pair_id
    for _, label in labels:
        assert label.run is None and label.a_is == "unknown" and label.labeller and label.note.strip()
        assert label.labelled_at.endswith("Z") and "T" in label.labelled_at


def test_at_least_forty_pairs_over_several_skills_partitions_and_languages(labels, cases) -> None:
    assert len(labels) >= MIN_PAIRS
    assert len({x.skill for _, x in labels}) >= 5
    assert {cases[x.case_id][0] for _, x in labels} >= {"dev", "repair", "p0"}
    tags = Counter(t for _, x in labels for t in cases[x.case_id][1].get("tags", []) if t in ("zh", "en"))
    assert tags["zh"] >= 10 and tags["en"] >= 10, tags


def test_hashes_match_the_answers_and_the_answers_differ(every_label) -> None:
    for _, x in every_label:
        assert x.sha_a == sha256_text(x.answer_a) and x.sha_b == sha256_text(x.answer_b), x.pair_id
        assert x.answer_a.strip() != x.answer_b.strip(), x.pair_id


def test_pair_ids_are_the_rule_s_and_unique(every_label) -> None:
    ids = [x.pair_id for _, x in every_label]
    assert len(set(ids)) == len(ids)
    for _, x in every_label:
        assert x.pair_id == pair_id(x.skill, x.case_id, x.sha_a, x.sha_b)


def test_each_pair_is_a_visible_case_of_the_example_sets(labels, cases) -> None:
    for _, x in labels:
        assert x.case_id in cases, f"{x.case_id}: no such case in evaluation_sets/*.json"
        partition, case = cases[x.case_id]
        assert partition in ("dev", "repair", "p0"), f"{x.case_id}: a {partition} case copied into a golden file"
        assert case["skill"] == x.skill and case["query"] == x.query, x.case_id
        expect = case.get("expect", {})
        assert x.must_include == expect.get("must_include", []), x.case_id
        assert x.must_not_include == expect.get("must_not_include", []), x.case_id


def test_every_dimension_has_a_spread_of_choices(labels) -> None:
    for dim in HUMAN_DIMENSIONS:
        seen = Counter(x.labels[dim] for _, x in labels)
        short = {k: seen[k] for k, n in MIN_PER_CHOICE.items() if seen[k] < n}
        assert not short, f"{dim}: too few {short} in {dict(seen)}"
    uniform = sum(len({x.labels[d] for d in HUMAN_DIMENSIONS}) == 1 for _, x in labels)
    assert uniform < len(labels) / 2, "most pairs have the same choice on every dimension"


def load_script() -> ModuleType:
    """scripts/golden_fixture.py as a module."""
    spec = importlib.util.spec_from_file_location("golden_fixture", REPO / "scripts" / "golden_fixture.py")
    assert spec and spec.loader
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_the_files_are_what_the_script_writes() -> None:
    script = load_script()
    built = script.build()
    assert sorted(f"{s}.jsonl" for s in built) == [f.name for f in golden_files()]
    for skill, labels_ in built.items():
        fixture, _ = script.split_lines((GOLDEN / f"{skill}.jsonl").read_text(encoding="utf-8"))
        assert fixture == script.render(labels_), f"{skill}.jsonl: run python scripts/golden_fixture.py"


def test_regenerating_keeps_the_labels_a_person_appended(tmp_path, monkeypatch, labels) -> None:
    script = load_script()
    monkeypatch.setattr(script, "GOLDEN", tmp_path)
    first = labels[0][1]
    person = first.model_copy(update={"answer_a": first.answer_b, "answer_b": first.answer_a, "sha_a": first.sha_b,
                                      "sha_b": first.sha_a, "source": "web", "labeller": "someone"})
    stale = '{"source": "fixture", "note": "an old fixture line"}\n'
    (tmp_path / f"{first.skill}.jsonl").write_text(stale + person.model_dump_json() + "\n", encoding="utf-8")
    assert script.main(["--check"]) == 1
    assert script.main([]) == 0 and script.main(["--check"]) == 0
    text = (tmp_path / f"{first.skill}.jsonl").read_text(encoding="utf-8")
    assert "an old fixture line" not in text and text.endswith(person.model_dump_json() + "\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == [f.name for f in golden_files()]


def test_the_golden_folder_is_not_read_as_a_set(tmp_path) -> None:
    plain, with_golden = init_workspace(tmp_path / "plain"), init_workspace(tmp_path / "golden")
    for f in SETS.glob("*.json"):
        shutil.copy(f, plain.evaluation_sets_dir / f.name)
    shutil.copytree(SETS, with_golden.evaluation_sets_dir, dirs_exist_ok=True)
    assert (with_golden.evaluation_sets_dir / "golden").is_dir()
    assert [p.name for p in set_files(with_golden)] == [p.name for p in set_files(plain)]
    a, b = load_sets(plain), load_sets(with_golden)
    assert {k: len(v.cases) for k, v in a.items()} == {k: len(v.cases) for k, v in b.items()}
    assert len(load_proposer_bundle(with_golden).dev) == len(load_proposer_bundle(plain).dev)


def test_the_readme_counts_are_the_fixture_s(labels) -> None:
    text = (GOLDEN / "README.md").read_text(encoding="utf-8")
    assert f"{len(labels)} pairs" in text
    for dim in HUMAN_DIMENSIONS:
        seen = Counter(x.labels[dim] for _, x in labels)
        row = f"| {dim:<11} | {seen['A']:<2} | {seen['B']:<2} | {seen['tie']:<3} |"
        assert row in text, f"README.md: the {dim} row should read {row}"
