"""Whether an evolve candidate may take the skill name it releases as (pure).

A FIX releases as its own skill, so its name is the parent's. A DERIVED or CAPTURED candidate makes
a new skill: its name must be new. Taken are the names the store has registered and the folders
under skills/ (a folder someone is filling by hand is a skill in the making). Names are compared
case-folded, so that a case-insensitive file system cannot merge two of them. The format of a name
(a-z, 0-9, single hyphens) is the SKILL.md rule, checked where the file is parsed.
"""

from __future__ import annotations

from collections.abc import Set
from enum import StrEnum

from skillforge.state.evolve import CandidateKind


class NameVerdict(StrEnum):
    NEW = "NEW"
    """Free to take (or, for a FIX, the parent's own name)."""
    REGISTERED = "REGISTERED"
    """A skill of that name is registered in the store."""
    FOLDER = "FOLDER"
    """skills/ already holds a folder (or file) of that name."""
    INVALID = "INVALID"
    """No name, or a FIX that would release under another skill's name."""


def new_skill_name(kind: CandidateKind, target: str, parent: str, registered: Set[str],
                   folders: Set[str]) -> NameVerdict:
    """Decide whether a candidate of `kind` may release as `target`, made from skill `parent`."""
    name = target.strip().casefold()
    if not name:
        return NameVerdict.INVALID
    if kind is CandidateKind.FIX:
        return NameVerdict.NEW if name == parent.casefold() else NameVerdict.INVALID
    if name == parent.casefold() or name in {n.casefold() for n in registered}:
        return NameVerdict.REGISTERED
    if name in {n.casefold() for n in folders}:
        return NameVerdict.FOLDER
    return NameVerdict.NEW


def name_refusal(verdict: NameVerdict, kind: CandidateKind, target: str) -> str:
    """Why a candidate may not take its name, in a user's words ("" when it may)."""
    if verdict is NameVerdict.REGISTERED:
        return f"a {kind.value} candidate may not take the name of the existing skill '{target}'"
    if verdict is NameVerdict.FOLDER:
        return f"a {kind.value} candidate may not take the name '{target}': skills/{target} already exists"
    if verdict is NameVerdict.INVALID:
        return f"a {kind.value} candidate may not release as '{target}'"
    return ""
