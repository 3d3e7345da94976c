"""The synthetic 200-skill library (issue 26): deterministic, valid on disk, near-duplicate pairs
labelled, held-out queries unseen, NONE share within bounds."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from skillforge.routing.fit import load_cases
from skillforge.rules.names import is_skill_name
from skillforge.skill import file as skillfile
from skillforge.testing.synth_library import (
    CatalogueError,
    SynthLibrary,
    catalogue,
    parse_catalogue,
    synth_library,
    write_workspace,
)

_CJK = re.compile(r"[\u3400-\u9fff]")


@pytest.fixture(scope="module")
def lib() -> SynthLibrary:
    return synth_library()


def test_same_seed_same_library_other_seed_other_queries(lib: SynthLibrary) -> None:
    again = synth_library()
    assert again.skills == lib.skills
    assert (again.train, again.dev, again.test, again.pairs) == (lib.train, lib.dev, lib.test, lib.pairs)
    other = synth_library(seed=1)
    assert other.test != lib.test


def test_200_skills_with_unique_valid_names(lib: SynthLibrary) -> None:
    names = lib.names
    assert len(names) == 200
    assert len(set(names)) == 200
    assert all(is_skill_name(n) for n in names)
    assert len(set(lib.domains.values())) >= 60


def test_every_skill_is_a_concrete_job(lib: SynthLibrary) -> None:
    for s in lib.skills:
        assert len(s.examples) == 5 and len(set(s.examples)) == 5, s.name
        assert s.keywords, s.name
        assert (12 if _CJK.search(s.description) else 30) <= len(s.description) <= 300, s.name
    zh = sum(bool(_CJK.search(s.description)) for s in lib.skills)
    assert 0.15 <= zh / len(lib.skills) <= 0.3


def test_skills_parse_back_through_the_loader(lib: SynthLibrary, tmp_path: Path) -> None:
    paths = write_workspace(lib, tmp_path)
    report = skillfile.scan(paths["skills"], tmp_path, strict=True)
    assert report.errors == []
    assert report.warnings == []
    assert {n: s.skill for n, s in report.skills.items()} == {s.name: s for s in lib.skills}


def test_query_files_load_as_labelled_cases(lib: SynthLibrary, tmp_path: Path) -> None:
    paths = write_workspace(lib, tmp_path)
    for split in ("train", "dev", "test"):
        cases = load_cases(paths[split], known=lib.names)
        assert [(c.query, c.expected) for c in cases] == getattr(lib, split)
    first = json.loads(paths["test"].read_text(encoding="utf-8").splitlines()[0])
    assert set(first) == {"query", "expected"}
    assert len(load_cases(paths["train_dev"], known=lib.names)) == len(lib.train) + len(lib.dev)


def test_near_duplicate_pairs_name_each_other_in_not_for(lib: SynthLibrary) -> None:
    assert len(lib.pairs) == 40
    by_name = {s.name: s for s in lib.skills}
    for a, b in lib.pairs:
        assert lib.domains[a] == lib.domains[b]
        assert any(b in x for x in by_name[a].not_for), a
        assert any(a in x for x in by_name[b].not_for), b
        # both are tested, with their own queries
        assert {a, b} <= {e for _, e in lib.test}
    unpaired = [s for s in lib.skills if s.name not in lib.pair_skills]
    assert all(not s.not_for for s in unpaired)


def test_held_out_queries_are_not_examples(lib: SynthLibrary) -> None:
    seen = {e for s in lib.skills for e in s.examples} | {q for q, _ in lib.train}
    assert not [q for q, _ in lib.test if q in seen]
    assert not [q for q, _ in lib.dev if q in seen]
    assert not {q for q, _ in lib.dev} & {q for q, _ in lib.test}
    none_seen = {q for q, e in lib.train + lib.dev if e is None}
    assert not [q for q, e in lib.test if e is None and q in none_seen]


def test_query_counts_and_none_share(lib: SynthLibrary) -> None:
    per_skill = len([1 for split in (lib.train, lib.dev, lib.test) for _, e in split if e is not None]) / 200
    assert 9 <= per_skill <= 11
    for split, low, high in ((lib.dev, 0.2, 0.3), (lib.test, 0.2, 0.3), (lib.train, 0.05, 0.3)):
        share = sum(e is None for _, e in split) / len(split)
        assert low <= share <= high
    assert {e for _, e in lib.test} - {None} == set(lib.names)
    zh = sum(bool(_CJK.search(q)) for q, _ in lib.test) / len(lib.test)
    assert 0.1 <= zh <= 0.35


def test_smaller_libraries_and_requests_the_catalogue_cannot_meet() -> None:
    small = synth_library(n_skills=150, seed=3, near_duplicate_pairs=10)
    assert len(small.skills) == 150 and len(small.pairs) == 10
    assert {e for _, e in small.test} - {None} <= set(small.names)
    with pytest.raises(CatalogueError):
        synth_library(n_skills=1000)
    with pytest.raises(CatalogueError):
        synth_library(near_duplicate_pairs=len([p for d in catalogue() for p in d.pairs]) + 1)


def test_catalogue_lines_are_checked() -> None:
    with pytest.raises(CatalogueError):
        parse_catalogue("@ d\nBad_Name | x | y | k\n> a ; b ; c\n< d ; e ; f\n")
    with pytest.raises(CatalogueError):
        parse_catalogue("@ d\nok-name | x | y | k\n> a ; b\n< d ; e ; f\n")


def test_the_data_files_are_package_data() -> None:
    """The catalogue lives in skillforge/testing/data/: every file there must match a package-data
    glob of pyproject.toml, or an installed wheel has no catalogue."""
    import fnmatch
    import tomllib

    from conftest import REPO

    globs = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"]["skillforge.testing"]
    package = REPO / "skillforge" / "testing"
    files = [p.relative_to(package).as_posix() for p in (package / "data").iterdir() if p.is_file()]
    assert {"data/synth_catalogue.txt", "data/synth_none.json"} <= set(files)
    assert [f for f in files if not any(fnmatch.fnmatch(f, g) for g in globs)] == []
