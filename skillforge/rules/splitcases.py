"""Evaluation cases follow a split (`skills split NAME --publish`). Pure: cases and the store's
split links in, the cases as they count now out. The set files are never rewritten: this is applied
where the sets are read (evaluation/datasets.py), so `release revert` undoes it by itself.

- A case follows a child when that child's split record lists its id and the parent is RETIRED by
  that split (`SplitLink.retired`); its `skill` becomes the child, `split_from` the label its file
  gives it. A case id two children list, or none, stays with the parent (cases in several intents
  or in none); so does every case of a parent that is live again.
- A child that was itself split later passes its cases on the same way (followed until no link
  applies; a loop of links ends where it would revisit a skill).
- Only the label changes: a case stays in its set, so in its partition.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from skillforge.rules.keywords import normalise
from skillforge.state.evaluate import Case
from skillforge.state.split import SplitLink


def case_owners(links: Iterable[SplitLink]) -> dict[str, dict[str, str]]:
    """Parent -> {case id: child} of the splits that retire their parent now; an id listed by two
    children of one split is left out (it stays with the parent)."""
    owners: dict[str, dict[str, str]] = {}
    for link in links:
        if not link.retired:
            continue
        listed = Counter(cid for ids in link.children.values() for cid in set(ids))
        owners[link.parent] = {cid: child for child, ids in sorted(link.children.items()) for cid in ids
                               if listed[cid] == 1}
    return owners


def follow_splits(cases: Sequence[Case], links: Iterable[SplitLink]) -> list[Case]:
    """`cases` in order, each relabelled to the child that owns it now (the same object when none does)."""
    owners = case_owners(links)
    if not owners:
        return list(cases)
    out = []
    for case in cases:
        skill, seen = case.skill, {case.skill}
        while (child := owners.get(skill, {}).get(case.id)) is not None and child not in seen:
            skill = child
            seen.add(child)
        out.append(case if skill == case.skill else case.model_copy(update={"skill": skill, "split_from": case.skill}))
    return out


def route_labels(cases: Sequence[Case], links: Iterable[SplitLink]) -> dict[str, dict[str, str]]:
    """For labelled routing queries (`route eval`, which have no ids): the label the set files give
    a relabelled case -> {its query, normalised as routing compares text: the child}. A query two
    relabelled cases give different children is left out (it keeps its label)."""
    out: dict[str, dict[str, str]] = {}
    clashes: set[tuple[str, str]] = set()
    for before, after in zip(cases, follow_splits(cases, links), strict=True):
        if after.skill == before.skill:
            continue
        q = normalise(before.query)
        known = out.setdefault(before.skill, {})
        if known.get(q, after.skill) != after.skill:
            clashes.add((before.skill, q))
        known[q] = after.skill
    for skill, q in clashes:
        del out[skill][q]
    return {k: v for k, v in out.items() if v}


def split_shares(cases: Sequence[Case], parent: str, children: Iterable[str]) -> tuple[dict[str, list[str]], list[str]]:
    """Of the cases (as loaded: relabelled) whose set files label them `parent`: each child's case
    ids, and the ids that stay with the parent."""
    taken: dict[str, list[str]] = {child: [] for child in children}
    kept: list[str] = []
    for c in cases:
        if (c.split_from or c.skill) != parent:
            continue
        if c.skill == parent:
            kept.append(c.id)
        else:
            taken.setdefault(c.skill, []).append(c.id)
    return taken, kept


def by_parent(links: Iterable[SplitLink]) -> Mapping[str, SplitLink]:
    """The split that retires each parent now (at most one per parent: one open retirement)."""
    return {link.parent: link for link in links if link.retired}


__all__ = ["by_parent", "case_owners", "follow_splits", "route_labels", "split_shares"]
