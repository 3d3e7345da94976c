"""The splits the store records, for the cases that follow them (rules/splitcases.py).

A split is a retirement whose `triggered_by` is "split into ..." together with the PUBLISHED
releases DERIVED from the retired release whose evaluation record is of kind "split" and names that
parent and release (library/split.py writes both in one transaction). Each gives a SplitLink: the
case ids each child's record lists, and whether the parent is still RETIRED by it (a `release
revert` or a publish of the parent closes the retirement, and its cases are the parent's again).
Every retirement is read, open or closed, so a parent split, reverted and split again has a link
per split and only the open one applies.
"""

from __future__ import annotations

from skillforge.config import Workspace
from skillforge.library.store import Store
from skillforge.state.split import SplitLink

SPLIT_TRIGGER = "split into "
"""How `retirements.triggered_by` of a split begins (library/split.py, publish_split)."""
SPLIT_KIND = "split"
"""The `kind` of a split child's evaluation record."""


def split_links(store: Store) -> list[SplitLink]:
    """Every split the store records, oldest first."""
    links = []
    for retired in store.retirements():
        if not retired.triggered_by.startswith(SPLIT_TRIGGER):
            continue
        children: dict[str, list[str]] = {}
        for child in store.derived_from(retired.release_id):
            record = child.eval_summary or {}
            cases = record.get("cases")
            if (record.get("kind") == SPLIT_KIND and record.get("parent") == retired.skill_name
                    and record.get("parent_release") == retired.release_id and isinstance(cases, list)):
                children[child.skill_name] = [str(c) for c in cases]
        if children:
            links.append(SplitLink(parent=retired.skill_name, parent_release=retired.release_id, children=children,
                                   retired=retired.restored_by is None))
    return links


def live_split_children(store: Store, parent: str) -> list[str]:
    """The children of every split of `parent` (open or closed) that are live now, sorted: after a
    `release revert` of the parent they still answer its queries until each is retired."""
    return sorted({child for link in split_links(store) if link.parent == parent for child in link.children
                   if store.current(child) is not None})


def workspace_links(ws: Workspace) -> list[SplitLink]:
    """The workspace's splits; none when it has no store yet (nothing was ever published)."""
    if not ws.db_path.exists():
        return []
    store = Store(ws.db_path)
    try:
        return split_links(store)
    finally:
        store.close()


def workspace_retired(ws: Workspace) -> list[str]:
    """The skills RETIRED now (by a split or a plain `release retire`), by name; none without a store.
    Their cases stay in the sets: a retirement is undone by `release revert`, and a case for a
    retired skill is no typo."""
    if not ws.db_path.exists():
        return []
    store = Store(ws.db_path)
    try:
        return store.retired_names()
    finally:
        store.close()


__all__ = ["SPLIT_KIND", "SPLIT_TRIGGER", "live_split_children", "split_links", "workspace_links", "workspace_retired"]
