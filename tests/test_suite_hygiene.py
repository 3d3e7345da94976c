"""The test suite itself: it runs from a fresh clone (nothing read from outside the repository),
and the guard that keeps it from writing into the repository's tree detects a write."""

from __future__ import annotations

import json
import re

from conftest import BENCH_SKILLS, REPO, ROUTE_DEV, repo_snapshot, snapshot_changes

TESTS = REPO / "tests"
# a path built to ../shared (or any folder beside the checkout), however it is spelled
OUTSIDE = re.compile(r"""\.\./shared|/\s*["']shared["']|/work/shared|REPO\.parent|\.parents\[2\]|\.parent\.parent""")


def test_no_test_reads_outside_the_repository() -> None:
    offenders = [f"{path.relative_to(REPO)}:{n}" for path in sorted(TESTS.rglob("*.py"))
                 if path.name != "test_suite_hygiene.py"
                 for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if OUTSIDE.search(line)]
    assert offenders == []


def test_bench_fixture_is_complete() -> None:
    skills = sorted(p.parent.name for p in BENCH_SKILLS.glob("*/SKILL.md"))
    assert len(skills) == 14 and "weather-query" in skills
    cases = [json.loads(line) for line in ROUTE_DEV.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(cases) == 40
    assert {c["expected"] for c in cases} - {None} <= set(skills) and None in {c["expected"] for c in cases}


def test_snapshot_changes_sees_added_removed_and_changed_files() -> None:
    before = {"skills/a/SKILL.md": (10, 1), "skills/b/SKILL.md": (5, 1), "runs/x": (1, 1)}
    after = {"skills/a/SKILL.md": (10, 1), "skills/b/SKILL.md": (5, 2), "runs/y": (1, 1)}
    assert snapshot_changes(before, after) == ["runs/x", "runs/y", "skills/b/SKILL.md"]
    assert snapshot_changes(before, dict(before)) == []


def test_repo_snapshot_covers_the_data_folders() -> None:
    snap = repo_snapshot()
    assert "skills/taxi-hailing/SKILL.md" in snap and "evaluation_sets/dev.json" in snap
    assert any(k.startswith("tests/fixtures/bench/skills/") for k in snap)
