"""The staged cases of a workspace: evaluation_sets/staged/<skill>.json, one file per skill, read
and written whole (atomically). Nothing here is a set: no set loader reads this folder.

`review_lock` (an exclusive flock on evaluation_sets/staged/.lock, the same way as the events lock
runs/events/.lock) is held by every read-decide-write of a review action and by the harvest's
write of a staged file: two reviewers, a script accepting in parallel and a harvest never overwrite
each other's set or staged file. The kernel drops the lock when a holder dies."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import ValidationError

from skillforge import jsontext
from skillforge.config import Workspace
from skillforge.errors import SourceError
from skillforge.evaluation.datasets import DatasetError
from skillforge.rules.sessions import case_flags
from skillforge.state.sessions import StagedCase, StagedFile


def staged_dir(ws: Workspace) -> Path:
    return ws.evaluation_sets_dir / "staged"


LOCK_NAME = ".lock"
"""evaluation_sets/staged/.lock: not a `*.json`, so neither a set nor a staged file."""


@contextmanager
def review_lock(ws: Workspace) -> Iterator[None]:
    """Hold the workspace's review lock for the block: one accept, reject, edit or harvest write at a
    time across processes (closing the descriptor releases it; the kernel does if the holder dies)."""
    from skillforge.safewrite import exclusive

    with exclusive(staged_dir(ws) / LOCK_NAME, "the review lock "):
        yield


SALT_NAME = "identifier-salt"
"""runs/identifier-salt: the key of the staged cases' identifier hashes (Provenance.identifier_hashes);
in runs/, never in evaluation_sets/, so a shared or published set folder does not carry it."""


def identifier_salt(ws: Workspace, create: bool) -> bytes:
    """The workspace's identifier-hash key (32 random bytes, hex, mode 0600), made on first use when
    `create`; without it (a dry run) a key for this run only: requests are still told apart within
    the run, and nothing is written."""
    import os

    path = ws.runs_dir / SALT_NAME
    for _ in range(2):
        try:
            return bytes.fromhex(path.read_text(encoding="utf-8").strip())
        except FileNotFoundError:
            if not create:
                return os.urandom(32)
        except (ValueError, UnicodeDecodeError):
            raise SourceError(f"{path}: not a hex key; delete it (requests harvested before may then be "
                              "staged once more)") from None
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue  # another harvest made it: read theirs
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(os.urandom(32).hex() + "\n")
    return bytes.fromhex(path.read_text(encoding="utf-8").strip())


def staged_path(ws: Workspace, skill: str) -> Path:
    from skillforge.rules.ids import IdKind, id_problem

    problem = id_problem(IdKind.SKILL, skill)
    if problem:
        raise SourceError(problem)
    return staged_dir(ws) / f"{skill}.json"


def read_staged(ws: Workspace, skill: str) -> StagedFile:
    path = staged_path(ws, skill)
    if not path.exists():
        return StagedFile(skill=skill)
    try:
        staged = StagedFile.model_validate(jsontext.parse(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, jsontext.BadJSON, ValidationError) as e:
        raise DatasetError(f"{path}: not a staged-cases file ({str(e).splitlines()[0][:200]}); "
                               f"fix or move it, nothing was changed") from None
    if staged.skill != skill:
        raise DatasetError(f"{path}: holds cases of skill '{staged.skill}', not '{skill}'")
    return staged


def staged_skills(ws: Workspace) -> list[str]:
    return sorted(p.stem for p in staged_dir(ws).glob("*.json") if p.is_file())


def write_staged(ws: Workspace, staged: StagedFile) -> Path:
    from skillforge.safewrite import write_text_atomic

    path = staged_path(ws, staged.skill)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(staged.model_dump(mode="json"), ensure_ascii=False, indent=1) + "\n")
    return path


def flags_of(case: StagedCase) -> list[str]:
    """rules/sessions.case_flags over what leaves the machine once accepted (query, why, fixtures,
    expectation) and the session id the reviewer is shown."""
    return case_flags([("query", case.query), ("why", case.why),
                       ("fixtures", json.dumps(case.fixtures, ensure_ascii=False)),
                       ("expect", " | ".join([*case.expect.must_include, *case.expect.must_not_include])),
                       ("session id", case.provenance.session_id)])


def pending(ws: Workspace, skills: Iterable[str] | None = None) -> list[StagedCase]:
    """Staged cases nobody has accepted or rejected yet."""
    names = list(skills) if skills is not None else staged_skills(ws)
    return [c for n in names for c in read_staged(ws, n).cases if c.status == "pending"]
