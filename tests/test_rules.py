"""Pure rules: versions and the watchdog, at their edges."""

from __future__ import annotations

import pytest

from skillforge.rules.versions import FIRST_VERSION, bump_patch, highest, is_semver, next_version, parse_semver
from skillforge.rules.watchdog import is_stale, may_restore_folder


@pytest.mark.parametrize("text,ok", [("1.0.0", True), ("0.0.0", True), ("10.20.30", True), ("1.0.0-rc.1", True),
                                     ("1.0.0+build.5", True), ("1.0", False), ("v1.0.0", False), ("01.0.0", False),
                                     ("1.0.0.0", False), ("", False), ("latest", False),
                                     ("9" * 5000 + ".0.0", False), ("1.0.0-" + "9" * 5000, False),
                                     ("9" * 40 + ".0.0", True)])
def test_semver_parsing(text, ok):
    assert is_semver(text) is ok


def test_semver_order():
    order = ["0.9.9", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-beta", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.10.0", "2.0.0"]
    assert sorted(order, key=parse_semver) == order


@pytest.mark.parametrize("taken,proposed,expected", [
    ([], None, FIRST_VERSION),
    ([], "2.3.4", "2.3.4"),
    ([], "garbage", FIRST_VERSION),
    (["1.0.0"], None, "1.0.1"),
    (["1.0.0", "1.2.0", "1.1.9"], None, "1.2.1"),
    (["1.0.0"], "1.0.0", "1.0.1"),       # not above: bump instead
    (["1.0.0"], "0.9.0", "1.0.1"),
    (["1.0.0"], "1.1.0", "1.1.0"),
    (["1.0.0"], "1.0.1-rc.1", "1.0.1-rc.1"),
    (["1.0.1-rc.1"], None, "1.0.1"),     # a pre-release bumps to its release
    (["not-semver"], None, FIRST_VERSION),
])
def test_next_version(taken, proposed, expected):
    assert next_version(taken, proposed) == expected


def test_highest_is_by_semver_order_not_text():
    assert highest(["1.9.0", "1.10.0", "1.2.0"]) == "1.10.0"  # max() of the strings: 1.9.0
    assert highest(["1.3.0", "1.3.0-rc1"]) == "1.3.0"  # max() of the strings: 1.3.0-rc1
    assert highest(["banana"]) is None and highest([]) is None


def test_bump_patch():
    assert bump_patch("1.2.3") == "1.2.4" and bump_patch("x") == FIRST_VERSION


@pytest.mark.parametrize("age,limit,stale", [(0.0, 0.0, True), (23.99, 24.0, False), (24.0, 24.0, True),
                                             (100.0, 24.0, True), (0.5, 1.0, False)])
def test_is_stale(age, limit, stale):
    assert is_stale(age, limit) is stale


@pytest.mark.parametrize("age,limit,stale", [(0.0, 0.0, False), (0.2499, 0.0, False), (0.25, 0.0, True),
                                             (0.3, 1.0, False), (1.0, 1.0, True), (30.0, 24.0, True)])
def test_is_stale_spares_a_live_process_in_flight(age, limit, stale):
    assert is_stale(age, limit, owner_alive=True) is stale


def test_may_restore_folder():
    old, new, mine = {"SKILL.md": b"old"}, {"SKILL.md": b"new"}, {"SKILL.md": b"mine"}
    assert may_restore_folder(new, new, old)           # untouched candidate: put the published bytes back
    assert not may_restore_folder(mine, new, old)      # a person's edit is never overwritten
    assert not may_restore_folder(old, new, old)       # already the published bytes
    assert not may_restore_folder(new, None, old)      # no commit: nothing proves who wrote the folder
    assert not may_restore_folder(new, new, None)      # nothing published to restore
    assert not may_restore_folder({}, new, old)        # a missing folder is not ours to recreate here


def test_a_5000_digit_version_is_not_semver_and_is_named_briefly():
    """The QA pass: int() of a 5 000-digit part raised, and one such metadata.version aborted a
    whole import (exit 70)."""
    from skillforge.rules.frontmatter import version_problem

    problem = version_problem("9" * 5000 + ".0.0")
    assert problem is not None and "(5004 characters)" in problem and len(problem) < 250
    assert next_version(["1.0.0"], "9" * 5000 + ".0.0") == "1.0.1"
