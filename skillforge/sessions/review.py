"""A person's review of staged cases: accept (the case joins the set of the partition its id hashes
to), reject, or edit before accepting.

Every action reads, decides and writes under the workspace's review lock (staging.review_lock), so
accepts, rejects and edits run from several processes at once are serialised: none overwrites
another's set file or staged file. Each file is written atomically (safewrite).

Accepting writes the set file (the case and its `meta.auto_case_ids` manifest) in one atomic
write, checks that the workspace's sets still load (else the file is put back), and only then marks
the staged case accepted. A case whose query is a near-copy of a case in another partition, when
one of the two is held out (a repair copy of a holdout query, or a holdout copy of a repair query),
is refused, at accept and after an edit; "near-copy" is harvest's near-duplicate judgement (the text
rule in the leak scan's normal form, or the embedder's cosine >= harvest.DEDUPE_COSINE), with
identifiers ignored (`cross_twin`). A query already in another partition in the leak scan's normal
form (two held-out partitions included) is refused naming the case's own partition. A rejected case is not accepted; accepting an accepted one writes nothing and says so. A crash between the two leaves the case in its set and still pending in the staged file
(never "accepted" in the staged file with the case in no set); accepting it again finds it there
and only marks it, and rejecting or editing it is refused until then (the set copy would stay).
Nothing unreviewed is ever written to a set.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from pydantic import ValidationError

from skillforge import jsontext
from skillforge.config import Workspace
from skillforge.errors import BadArgument
from skillforge.evaluation.datasets import DatasetError, check_across, load_sets, read_set, set_files
from skillforge.evolution.harvest import write_set_atomic
from skillforge.rules.failures import near_duplicate
from skillforge.rules.redact import residue
from skillforge.rules.sessions import DEFAULT_SHARES, edited_hashes, held_within, leak_copy, partition_for
from skillforge.safewrite import write_text_atomic
from skillforge.sessions.staging import flags_of, identifier_salt, read_staged, review_lock, staged_skills, write_staged
from skillforge.state.evaluate import VISIBLE_TO_PROPOSER, EvalSet, Partition, SetMeta
from skillforge.state.sessions import StagedCase, StagedFile, as_case

EDITABLE = ("query", "fixtures", "expect", "note")
"""What `--edit` may change; the id, provenance and signals stay as harvested."""


class ReviewError(BadArgument):
    """A review action that cannot be carried out (unknown id, already decided, a bad edit)."""


def shares_setting(ws: Workspace) -> tuple[tuple[Partition, int], ...]:
    """`[sessions] shares = "repair=60,holdout=30,final_audit=10"` in the workspace's skillforge.toml,
    else the default. A bad value is a ConfigError naming the file."""
    import tomllib

    from skillforge.errors import ConfigError
    from skillforge.rules.sessions import parse_shares

    path = ws.root / "skillforge.toml"
    if not path.exists():
        return DEFAULT_SHARES
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: {e}") from None
    value = (data.get("sessions") or {}).get("shares") if isinstance(data.get("sessions"), dict) else None
    if value is None:
        return DEFAULT_SHARES
    try:
        return parse_shares(str(value))
    except ValueError as e:
        raise ConfigError(f"{path}: [sessions] shares: {e}") from None


def find(ws: Workspace, case_id: str) -> tuple[StagedFile, StagedCase]:
    for skill in staged_skills(ws):
        staged = read_staged(ws, skill)
        case = staged.case(case_id)
        if case is not None:
            return staged, case
    raise ReviewError(f"no staged case '{case_id}' in {ws.evaluation_sets_dir / 'staged'}; "
                      f"list them with: skillforge cases review")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _replace(staged: StagedFile, case: StagedCase) -> StagedFile:
    return StagedFile(skill=staged.skill, cases=[case if c.id == case.id else c for c in staged.cases])


def _target(ws: Workspace, skill: str, partition: Partition) -> tuple[Path, EvalSet]:
    """The set file an accepted case of `partition` joins: one that declares the skill, else the
    first of the partition, else a new `<partition>.json` (`sessions-<partition>.json` if taken)."""
    files = [(p, read_set(p)) for p in set_files(ws)]
    same = [(p, s) for p, s in files if s.meta.partition is partition]
    for p, s in same:
        if skill in s.meta.skills:
            return p, s
    if same:
        return same[0]
    names = {s.meta.name for _, s in files}
    name = partition.value if partition.value not in names and not (ws.evaluation_sets_dir / f"{partition.value}.json").exists() \
        else f"sessions-{partition.value}"
    return ws.evaluation_sets_dir / f"{name}.json", EvalSet(meta=SetMeta(name=name, partition=partition, skills=[skill]), cases=[])


Embed = Callable[[list[str]], object]


def _embedder(embed: Embed | None | bool, ws: Workspace) -> Embed | None:
    if embed is True:
        from skillforge.sessions.harvest import _embedder as workspace_embedder

        return workspace_embedder(ws)  # through runs/vectors.db: a set's queries are embedded once
    return embed or None


def cross_twin(existing: dict[Path, EvalSet], query: str, partition: Partition,
               embed: Embed | None = None) -> tuple[Partition, Path] | None:
    """The partition and file of a set case in another partition whose query `query` nearly copies,
    when exactly one of the two partitions is held out (holdout, final_audit): a visible case near a
    held-out one, or a held-out case near a visible one, would show the proposer what the holdout
    measures. "Nearly copies" is the harvest's near-duplicate judgement (rules/sessions.leak_copy):
    the text rule (near_duplicate, in the leak scan's normal form) or, with `embed` (texts -> unit
    vectors), a cosine at or above harvest's DEDUPE_COSINE, so a greeting added round a held-out
    query or its clauses reordered is a copy too; and the visible side holding the held-out query, or
    most of its words in order, with more text added (rules/sessions.held_within: a long suffix takes
    the cosine below the threshold). Identifiers count as text here (a copy with another tracking
    number is still one). None when there is none."""
    import numpy as np

    from skillforge.sessions.harvest import DEDUPE_COSINE

    pairs = [(s.meta.partition, path, c.query) for path, s in existing.items() for c in s.cases
             if (s.meta.partition in VISIBLE_TO_PROPOSER) != (partition in VISIBLE_TO_PROPOSER)]
    visible = partition in VISIBLE_TO_PROPOSER
    for other, path, q in pairs:  # the text rules first: no model needed
        if near_duplicate(query, q) or (held_within(q, query) if visible else held_within(query, q)):
            return other, path
    if embed is None or not pairs:
        return None
    vecs = np.asarray(embed([query, *(q for _, _, q in pairs)]), dtype=np.float32)
    for k, (other, path, q) in enumerate(pairs, start=1):
        if leak_copy(query, q, float(vecs[0] @ vecs[k]), DEDUPE_COSINE):
            return other, path
    return None


def _same_elsewhere(existing: dict[Path, EvalSet], query: str, partition: Partition) -> tuple[Partition, Path] | None:
    """A set case of another partition whose query is this one in the leak scan's normal form (what
    datasets.check_across refuses), as (its partition, its file); None when there is none."""
    from skillforge.rules.textnorm import fold

    norm = fold(query)
    return next(((s.meta.partition, p) for p, s in existing.items() if s.meta.partition is not partition
                 for c in s.cases if fold(c.query) == norm), None)


def _twin_problem(case_id: str, partition: Partition, twin: tuple[Partition, Path]) -> str:
    seen = partition if partition in VISIBLE_TO_PROPOSER else twin[0]
    return (f"its query is a copy of a {twin[0].value} case's query ({twin[1].name}; compared as harvest "
            f"compares requests: the leak scan's normal form, a few characters, or the embedder's cosine, so a "
            f"re-spaced, greeted or reordered copy is one; or it holds the held-out query, or most of its words in "
            f"order, with more text added), this case goes to {partition.value}, and "
            f"the proposer reads {seen.value}: the holdout would measure text the proposer saw")


def _holder(ws: Workspace, case_id: str) -> Path | None:
    """The set file that holds case `case_id`, or None."""
    return next((p for p in set_files(ws) if any(c.id == case_id for c in read_set(p).cases)), None)


def _interrupted(ws: Workspace, case: StagedCase, doing: str) -> None:
    """A pending case already in a set (an accept stopped between the set and the staged file) is
    not rejected or edited: the set copy would stay. Say how to finish."""
    where = _holder(ws, case.id) if case.status == "pending" else None
    if where is not None:
        raise ReviewError(f"{case.id} is already in {where.name} (an accept stopped before the staged file was "
                          f"updated); finish it with: skillforge cases review --accept {case.id}; to {doing} it, "
                          f"take it out of {where.name} (and its meta.auto_case_ids) first")


def disagreements(ws: Workspace, cases: list[StagedCase]) -> list[str]:
    """One line per staged case whose status and the set files disagree (an accept stopped half-way,
    or a workspace written by a version without the review lock), each saying how to settle it."""
    where: dict[str, str] = {}
    for p in set_files(ws):
        for c in read_set(p).cases:
            where.setdefault(c.id, p.name)
    lines = []
    for c in cases:
        held = where.get(c.id)
        if c.status == "pending" and held:
            lines.append(f"{c.id} is pending but already in {held} (an accept stopped half-way): finish it with "
                         f"skillforge cases review --accept {c.id}")
        elif c.status == "accepted" and not held:
            lines.append(f"{c.id} is marked accepted but is in no set file: put it back with "
                         f"skillforge cases review --accept {c.id}")
        elif c.status == "rejected" and held:
            lines.append(f"{c.id} was rejected but is still in {held}: take it out of {held} and its "
                         f"meta.auto_case_ids (a rejected case must not vote in a gate)")
    return lines


def check_note(note: str | None) -> None:
    """A reviewer's note is refused as an edited one is (`--edit`'s rule: every shape the harvest
    redacts, phone and resident ID numbers included): ReviewError, nothing written (QA 45 F2)."""
    left = residue(note, personal=True) if note else []
    if left:
        raise ReviewError(f"the note holds a secret shape ({', '.join(left)}); nothing was changed")


def accept(ws: Workspace, case_id: str, *, note: str | None = None,
           shares: tuple[tuple[Partition, int], ...] = DEFAULT_SHARES,
           confirm_flagged: bool = False, embed: Embed | None | bool = True) -> tuple[StagedCase, Path]:
    """Accept a staged case: it joins the set of the partition its id hashes to. Returns the staged
    case as accepted and the set file it is in. A flagged case (prompt injection, hidden characters;
    flagged at harvest or now, for files staged before flags existed) needs `confirm_flagged`.
    Read, decided and written under the review lock."""
    case, where, _ = accept_case(ws, case_id, note=note, shares=shares, confirm_flagged=confirm_flagged, embed=embed)
    return case, where


def accept_case(ws: Workspace, case_id: str, *, note: str | None = None,
                shares: tuple[tuple[Partition, int], ...] = DEFAULT_SHARES,
                confirm_flagged: bool = False, embed: Embed | None | bool = True) -> tuple[StagedCase, Path, bool]:
    """`accept`, plus whether the case was already accepted (nothing written then). `embed`: True
    for the workspace's embedder (harvest's; None when it cannot load: the text rule alone), a
    callable texts -> unit vectors, or None/False."""
    with review_lock(ws):
        return _accept(ws, case_id, note=note, shares=shares, confirm_flagged=confirm_flagged, embed=embed)


def _accept(ws: Workspace, case_id: str, *, note: str | None,
            shares: tuple[tuple[Partition, int], ...], confirm_flagged: bool,
            embed: Embed | None | bool = True) -> tuple[StagedCase, Path, bool]:
    check_note(note)
    staged, case = find(ws, case_id)
    if case.status == "rejected":
        raise ReviewError(f"{case_id} was rejected" + (f" (note: {case.note})" if case.note else "")
                          + "; a decided case is not accepted, nothing was written")
    if case.status == "accepted":
        where = _holder(ws, case_id)
        if where is not None:
            return case, where, True  # already accepted: nothing to write
    flags = list(dict.fromkeys([*case.flags, *flags_of(case)]))
    if flags and not confirm_flagged:
        raise ReviewError(f"{case.id} is flagged: {'; '.join(flags)}. Read it (skillforge cases review), edit or "
                          f"reject it; to accept it as it is, add --confirm-flagged")
    partition = partition_for(case.id, shares)
    existing = {p: read_set(p) for p in set_files(ws)}
    holder = next((p for p, s in existing.items() if any(c.id == case.id for c in s.cases)), None)
    if holder is None:
        if (twin := cross_twin(existing, case.query, partition, _embedder(embed, ws))) is not None:
            raise ReviewError(f"cannot accept {case.id} into {partition.value}: {_twin_problem(case.id, partition, twin)}; "
                              f"edit its query or reject it (skillforge cases review --reject {case.id})")
        if (same := _same_elsewhere(existing, case.query, partition)) is not None:
            raise ReviewError(f"cannot accept {case.id} into {partition.value}: its query appears in partitions "
                              f"{partition.value} (this case) and {same[0].value} ({same[1].name}), compared in the "
                              f"leak scan's normal form; a query is scored in one "
                              f"partition only (the same query in {partition.value} and {same[0].value} would be "
                              f"counted twice); edit its query or reject it (skillforge cases review --reject {case.id})")
        path, current = _target(ws, case.skill, partition)
        meta = current.meta.model_copy(update={"skills": sorted({*current.meta.skills, case.skill}),
                                               "auto_case_ids": [*current.meta.auto_case_ids, case.id]})
        updated = EvalSet(meta=meta, cases=[*current.cases, as_case(case)])
        others = [(p, s) for p, s in existing.items() if p != path]
        try:
            check_across([*others, (path, updated)])
        except DatasetError as e:
            raise ReviewError(f"cannot accept {case.id}: {e}; edit its query (skillforge cases review --edit "
                              f"{case.id}) or reject it") from None
        before = path.read_text(encoding="utf-8") if path.exists() else None
        path.parent.mkdir(parents=True, exist_ok=True)
        write_set_atomic(path, updated)
        try:
            load_sets(ws)
        except DatasetError:
            if before is None:
                path.unlink()
            else:
                write_text_atomic(path, before)
            raise
        holder = path
    else:
        partition = read_set(holder).meta.partition
    done = case.model_copy(update={"status": "accepted", "reviewed": True, "partition": partition,
                                   "reviewed_at": _now(), "note": note if note is not None else case.note})
    write_staged(ws, _replace(staged, done))
    return done, holder, False


def reject(ws: Workspace, case_id: str, *, note: str | None = None) -> StagedCase:
    """Reject a pending staged case: it stays in the staged file (so no harvest stages it again).
    Under the review lock."""
    with review_lock(ws):
        return _reject(ws, case_id, note=note)


def _reject(ws: Workspace, case_id: str, *, note: str | None) -> StagedCase:
    check_note(note)
    staged, case = find(ws, case_id)
    _interrupted(ws, case, "reject")
    if case.status == "accepted":
        raise ReviewError(f"{case_id} was accepted into partition {case.partition}: remove it from its set "
                          f"file (and meta.auto_case_ids) to drop it")
    done = case.model_copy(update={"status": "rejected", "reviewed": True, "reviewed_at": _now(),
                                   "note": note if note is not None else case.note})
    write_staged(ws, _replace(staged, done))
    return done


def editable_json(case: StagedCase) -> str:
    """The part of a staged case a person may edit, as JSON text."""
    return json.dumps({k: case.model_dump(mode="json")[k] for k in EDITABLE}, ensure_ascii=False, indent=2) + "\n"


def edit(ws: Workspace, case_id: str, text: str,
         shares: tuple[tuple[Partition, int], ...] | None = None, embed: Embed | None | bool = True) -> StagedCase:
    """Replace a pending case's query, fixtures, expect or note with the JSON `text`. A secret
    shape, a key that may not be edited, a value that does not validate, or a query that nearly
    copies a case of another partition when one of the two is held out (`cross_twin`, the check
    accept makes) is a ReviewError and nothing changes. A changed query's identifier hashes are taken
    again (rules/sessions.edited_hashes), never dropped. Under the review lock."""
    with review_lock(ws):
        return _edit(ws, case_id, text, shares_setting(ws) if shares is None else shares, embed)


def _edit(ws: Workspace, case_id: str, text: str, shares: tuple[tuple[Partition, int], ...],
          embed: Embed | None | bool = True) -> StagedCase:
    staged, case = find(ws, case_id)
    _interrupted(ws, case, "edit")
    if case.status != "pending":
        raise ReviewError(f"{case_id} is {case.status}; only a pending case can be edited")
    try:
        data = jsontext.parse(text)
    except jsontext.BadJSON as e:
        raise ReviewError(f"the edit is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise ReviewError("the edit is a JSON object with some of: " + ", ".join(EDITABLE))
    extra = sorted(set(data) - set(EDITABLE))
    if extra:
        raise ReviewError(f"only {', '.join(EDITABLE)} can be edited, not {', '.join(extra)}")
    left = residue(json.dumps(data, ensure_ascii=False), personal=True)  # every shape the harvest redacts (QA 45 F2)
    if left:
        raise ReviewError(f"the edit holds a secret shape ({', '.join(left)}); nothing was changed")
    try:
        done = StagedCase.model_validate({**case.model_dump(mode="json"), **data})
    except ValidationError as e:
        err = e.errors()[0]
        raise ReviewError(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}") from None
    if not done.query.strip():
        raise ReviewError("the query cannot be empty")
    partition = partition_for(case.id, shares)
    twin = (cross_twin({p: read_set(p) for p in set_files(ws)}, done.query, partition, _embedder(embed, ws))
            if done.query != case.query else None)
    if twin is not None:
        raise ReviewError(f"the edited query of {case.id}: {_twin_problem(case.id, partition, twin)}; nothing was changed")
    if done.query != case.query:  # the harvest's hashes were of the old query: those of the edited one
        hashes = edited_hashes(case.query, case.provenance.identifier_hashes, done.query,
                               identifier_salt(ws, create=True), case.id)
        done = done.model_copy(update={"provenance": done.provenance.model_copy(update={"identifier_hashes": hashes})})
    done = done.model_copy(update={"flags": flags_of(done)})  # what the edited text still carries
    write_staged(ws, _replace(staged, done))
    return done
