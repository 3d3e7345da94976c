"""Evaluation sets of a workspace: loading, cross-partition checks, and the proposer's view.

A set is a JSON file under `evaluation_sets/` (router sets, JSONL under `router/`, are not eval
sets). Loading refuses a set whose `*_auto_*` case ids differ from `meta.auto_case_ids`, a case id
used twice anywhere in the workspace, a query that appears in two partitions, and a case for a
skill the set does not declare. A case whose query, fixtures or expectations hold a secret shape or
a prompt-injection phrase is loaded with a warning naming it (`warn_cases`); what a proposer gets of
any case text is redacted or flagged where the prompts are built (rules/casetext.py).

The proposer never sees holdout or final_audit: `ProposerBundle` has no field that could hold
them, and `load_proposer_bundle` skips their files by the partition they declare, so their cases
are never parsed into anything a proposer receives (`proposer_bundle` builds the same view of the
sets the evaluator has loaded, leaving those sets out by their partition). A file whose partition
cannot be read (not JSON, no `meta.partition`, an unknown partition) is a DatasetError naming it,
never skipped: a corrupt dev.json must not silently become zero dev cases.

Cases follow a split (rules/splitcases.py): `load_sets` and `load_proposer_bundle`, the readers
every evaluate, evolve, proposer and health path goes through, relabel the cases each child of a
published split lists to that child while the split retires the parent (the store's links,
library/splitlinks.py). The files are never rewritten (`read_set` and the writers see the labels as
written), so `release revert` of the parent gives its cases back by itself; a case keeps its set,
so its partition. The cases a split left with its parent (in several intents or none) still load:
that parent counts as a known skill while it is retired by the split, as does any skill retired by
`release retire` (its cases wait for a `release revert`; evaluating another skill never trips on them). `route_relabels` gives `route
eval`, `calibrate` and `fit` the same relabelling for their labelled queries, matched by query.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from skillforge.config import Workspace
from skillforge import jsontext
from skillforge.errors import SkillForgeError
from skillforge.library.splitlinks import workspace_links, workspace_retired
from skillforge.rules.casetext import case_warnings
from skillforge.rules.splitcases import by_parent, follow_splits, route_labels
from skillforge.rules.textnorm import fold
from skillforge.state.evaluate import VISIBLE_TO_PROPOSER, Case, EvalSet, Partition
from skillforge.state.split import SplitLink

log = logging.getLogger(__name__)

AUTO_MARK = "_auto_"
_WARNED: set[str] = set()
"""Warnings already logged by this process (a command loads the sets several times)."""


class DatasetError(SkillForgeError):
    """An evaluation set is malformed or breaks a cross-partition rule."""


class UnreviewedCase(DatasetError):
    """A case harvested from agent sessions that no person has accepted is in a set."""


def _refuse_unreviewed(path: Path, data: object) -> None:
    """Staged, unreviewed cases never reach a gate: a staged file copied among the sets, or a staged
    case pasted into a set, is refused by name."""
    if not isinstance(data, dict):
        return
    cases = data.get("cases")
    if "meta" not in data and "skill" in data and isinstance(cases, list):
        raise UnreviewedCase(f"{path}: a staged file of harvested cases waiting for review, not a set; "
                             f"review them with: skillforge cases review")
    for c in cases if isinstance(cases, list) else ():
        if isinstance(c, dict) and (c.get("reviewed") is False or c.get("status") == "pending" or "provenance" in c):
            raise UnreviewedCase(f"{path}: case '{c.get('id')}' is a harvested case nobody has accepted; "
                                 f"accept it with skillforge cases review --accept {c.get('id')} (it then joins "
                                 f"the set of its partition) instead of copying it")


class HoldoutAccessError(DatasetError):
    """Holdout or final_audit data was requested through the proposer's API."""


@functools.lru_cache(maxsize=1 << 17)  # a set of 20 000 cases fits: a smaller bound refolds every query per load
def _normalise_query(q: str) -> str:
    """A query as partitions are compared in: the leak scan's normal form (textnorm.fold), so a
    Traditional, full-width or entity-encoded copy of a holdout query is that query."""
    return fold(q)


def _read_json(path: Path) -> object:
    """A set file's JSON; a DatasetError naming the file if it cannot be read or parsed."""
    try:
        return jsontext.parse(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, jsontext.BadJSON) as e:
        raise DatasetError(f"{path}: cannot read: {e}") from None


def read_set(path: Path, data: object | None = None) -> EvalSet:
    """One set file (or its already parsed JSON `data`), validated on its own (auto ids, skills
    declared, ids unique in the file)."""
    if data is None:
        data = _read_json(path)
    _refuse_unreviewed(path, data)
    try:
        eval_set = EvalSet.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        if not where:  # the file itself: a list, a string, a number
            raise DatasetError(f"{path}: a set is a JSON object with \"meta\" and \"cases\", not {type(data).__name__}") from None
        raise DatasetError(f"{path}: {where}: {err['msg']}") from None
    auto = {c.id for c in eval_set.cases if AUTO_MARK in c.id}
    declared = set(eval_set.meta.auto_case_ids)
    if auto != declared:
        raise DatasetError(f"{path}: *_auto_* case ids {sorted(auto)} do not match meta.auto_case_ids {sorted(declared)}")
    seen: set[str] = set()
    for case in eval_set.cases:
        if case.id in seen:
            raise DatasetError(f"{path}: duplicate case id '{case.id}'")
        seen.add(case.id)
        if case.skill not in eval_set.meta.skills:
            raise DatasetError(f"{path}: case '{case.id}' is for skill '{case.skill}', not in meta.skills")
        if not case.query.strip():
            raise DatasetError(f"{path}: case '{case.id}' has an empty query")
    return eval_set


def warn_cases(path: Path, eval_set: EvalSet) -> list[str]:
    """Log a warning, once per process, for each case of the set whose query, fixtures or
    expectations hold a secret shape or a prompt-injection phrase (rules/casetext.py: kinds and the
    case id, never the text), and one for the cases without an expectation; returns this call's lines. The set still loads: the person wrote it,
    and what a proposer gets of it is redacted or flagged."""
    sees = eval_set.meta.partition in VISIBLE_TO_PROPOSER
    lines = [f"{path.name}: case '{case.id}': {why}"
             for case in eval_set.cases for why in case_warnings(case, proposer_sees=sees)]
    if unchecked := [c.id for c in eval_set.cases if not c.expect.checks]:
        lines.append(f"{path.name}: {len(unchecked)} of {len(eval_set.cases)} case(s) have no expectation (must_include "
                     f"/ must_not_include), e.g. '{unchecked[0]}': the judge alone scores them, the objective pass "
                     "rate leaves them out, and a run with no checked case is REVIEW at best")
    for line in lines:
        if line not in _WARNED:
            _WARNED.add(line)
            log.warning("%s", line)
    return lines


def set_files(ws: Workspace) -> list[Path]:
    """The workspace's set files (`evaluation_sets/*.json`), sorted by name."""
    return sorted(p for p in ws.evaluation_sets_dir.glob("*.json") if p.is_file())


def check_across(sets: Sequence[tuple[Path, EvalSet]]) -> None:
    """Ids unique across the workspace; no query in two partitions, compared in the leak scan's
    normal form. When one of the two is held out (holdout, final_audit) the error names partitions,
    files and the visible case, never the held-out text."""
    ids: dict[str, Path] = {}
    queries: dict[str, tuple[Partition, Path, str]] = {}
    for path, s in sets:
        for case in s.cases:
            if case.id in ids and ids[case.id] != path:
                raise DatasetError(f"case id '{case.id}' is used in {ids[case.id].name} and {path.name}")
            ids[case.id] = path
            q = _normalise_query(case.query)
            if q in queries and (first := queries[q])[0] != s.meta.partition:
                part, where = s.meta.partition, f"{first[0].value} ({first[1].name}) and {s.meta.partition.value} ({path.name})"
                if first[0] in VISIBLE_TO_PROPOSER and part in VISIBLE_TO_PROPOSER:
                    raise DatasetError(f"query '{case.query[:60]}' appears in partitions {where}")
                shown = [cid for p, cid in ((first[0], first[2]), (part, case.id)) if p in VISIBLE_TO_PROPOSER]
                raise DatasetError(f"a held-out query appears in partitions {where}"
                                   + (f", as case '{shown[0]}'" if shown else "")
                                   + " (compared in the leak scan's normal form: Traditional or Simplified, width, "
                                     "case, spacing); a held-out query must not be in a set the proposer reads")
            queries.setdefault(q, (s.meta.partition, path, case.id))


def load_sets(ws: Workspace, known_skills: Iterable[str] | None = None, *,
              follow_splits: bool = True) -> dict[str, EvalSet]:
    """Every set of the workspace by name, checked together, its cases following the workspace's
    splits (`follow_splits` False: labelled as the files write them). For the evaluator, not the
    proposer. `known_skills`: a case for any other skill is refused (a RETIRED skill counts as
    known: a split's parent keeps the cases no child took, a skill retired by `release retire` keeps
    its cases for a revert)."""
    pairs = [(p, read_set(p)) for p in set_files(ws)]
    check_across(pairs)
    for path, s in pairs:
        warn_cases(path, s)
    links = workspace_links(ws) if follow_splits and pairs else []
    known = None if known_skills is None else set(known_skills)
    retired: set[str] | None = None  # read from the store only when a case names a skill that is not live
    out: dict[str, EvalSet] = {}
    for path, s in pairs:
        if s.meta.name in out:
            raise DatasetError(f"two sets are named '{s.meta.name}' ({path.name})")
        s = _followed(s, links)
        if known is not None and (unknown := {c.skill for c in s.cases} - known):
            retired = set(workspace_retired(ws)) if retired is None else retired
            if unknown - retired:
                raise DatasetError(f"{path.name}: cases for unknown skill(s): {', '.join(sorted(unknown - retired))}")
        out[s.meta.name] = s
    return out


def _followed(eval_set: EvalSet, links: list[SplitLink]) -> EvalSet:
    """The set with its cases relabelled by the splits (itself when no case moves)."""
    cases = follow_splits(eval_set.cases, links)
    if all(a is b for a, b in zip(cases, eval_set.cases, strict=True)):
        return eval_set
    return eval_set.model_copy(update={"cases": cases})


def route_relabels(ws: Workspace) -> dict[str, dict[str, str]]:
    """For routing's labelled queries (no ids): a parent retired by a split -> {normalised query of
    a case a child took: that child}. Empty (and no set read) when no split retires a parent."""
    links = workspace_links(ws)
    if not by_parent(links):
        return {}
    cases = [c for s in load_sets(ws, follow_splits=False).values() for c in s.cases]
    return route_labels(cases, links)


def cases_for(eval_set: EvalSet, skill: str) -> list[Case]:
    return [c for c in eval_set.cases if c.skill == skill]


@dataclass(frozen=True)
class ProposerBundle:
    """What a proposer may read: dev, repair and p0 cases. There is no holdout field to misuse."""

    dev: tuple[Case, ...]
    repair: tuple[Case, ...]
    p0: tuple[Case, ...]

    def for_skill(self, skill: str) -> ProposerBundle:
        return ProposerBundle(*(tuple(c for c in part if c.skill == skill) for part in (self.dev, self.repair, self.p0)))


def load_proposer_bundle(ws: Workspace, partitions: Iterable[Partition | str] = VISIBLE_TO_PROPOSER) -> ProposerBundle:
    """Dev, repair and p0 cases for a proposer. Asking for holdout or final_audit raises
    HoldoutAccessError; files declaring those partitions are skipped before their cases are read."""
    wanted = {Partition(p) for p in partitions}
    hidden = wanted - VISIBLE_TO_PROPOSER
    if hidden:
        raise HoldoutAccessError(f"the proposer may not see {', '.join(sorted(p.value for p in hidden))}")
    parts: dict[Partition, list[Case]] = {p: [] for p in VISIBLE_TO_PROPOSER}
    links: list[SplitLink] | None = None
    for path in set_files(ws):
        data = _read_json(path)  # read once: the partition checked is the one whose cases are used
        if _partition_of(path, data) not in VISIBLE_TO_PROPOSER:
            continue
        s = read_set(path, data)
        warn_cases(path, s)
        links = workspace_links(ws) if links is None else links
        parts[s.meta.partition] += follow_splits(s.cases, links)
    return ProposerBundle(tuple(parts[Partition.DEV]), tuple(parts[Partition.REPAIR]), tuple(parts[Partition.P0]))


def proposer_bundle(sets: Mapping[str, EvalSet]) -> ProposerBundle:
    """Dev, repair and p0 cases of sets already loaded (`load_sets`), in their order: the sets of
    every other partition are left out by the partition they declare."""
    parts: dict[Partition, list[Case]] = {p: [] for p in VISIBLE_TO_PROPOSER}
    for s in sets.values():
        if s.meta.partition in VISIBLE_TO_PROPOSER:
            parts[s.meta.partition] += s.cases
    return ProposerBundle(tuple(parts[Partition.DEV]), tuple(parts[Partition.REPAIR]), tuple(parts[Partition.P0]))


def _partition_of(path: Path, data: object) -> Partition:
    """The partition a set file's JSON declares, read without building its cases. One that cannot
    be read is a DatasetError naming the file (the reason only, never the file's content)."""
    meta = data.get("meta") if isinstance(data, dict) else None
    declared = meta.get("partition") if isinstance(meta, dict) else None
    try:
        return Partition(declared)
    except ValueError:
        known = ", ".join(p.value for p in Partition)
        shown = repr(declared)[:40] if isinstance(declared, str) else "none"
        raise DatasetError(f"{path}: meta.partition is {shown}, not one of {known}") from None
