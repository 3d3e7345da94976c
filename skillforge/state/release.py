"""Release records: the rows of the SQLite store, typed."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, JsonValue


class ReleaseStatus(StrEnum):
    PREPARING = "PREPARING"
    PUBLISHED = "PUBLISHED"
    ABANDONED = "ABANDONED"
    DECLINED = "DECLINED"


class ReleaseLevel(StrEnum):
    """Risk level of a change: L1 auto-publish, L2 human review, L3 suggestion only, MANUAL by a person."""

    L1 = "L1"
    L2 = "L2"
    L3 = "L3"
    MANUAL = "MANUAL"


class LineageKind(StrEnum):
    FIX = "FIX"
    DERIVED = "DERIVED"
    CAPTURED = "CAPTURED"
    IMPORTED = "IMPORTED"
    REVERT = "REVERT"


class Release(BaseModel):
    """One row of `releases`."""

    model_config = ConfigDict(frozen=True)

    release_id: str
    skill_name: str
    version: str
    skill_path: str
    """Repository-relative folder of the skill at `commit_hash`."""
    commit_hash: str | None
    status: ReleaseStatus
    level: ReleaseLevel
    triggered_by: str
    eval_summary: dict[str, JsonValue] | None
    created_at: str
    published_at: str | None
    owner: str | None = None
    """While PREPARING: the lock file (under runs/locks/) its process holds; None on old rows."""
    writes_folder: bool = False
    """It replaced the folder's files (candidate or revert): abandoning it may put the published ones back."""


class Retirement(BaseModel):
    """One row of `retirements`: while `restored_by` is None the skill is RETIRED (no current
    release: out of the index and the router); `release_id` is the release that was live."""

    model_config = ConfigDict(frozen=True)

    skill_name: str
    release_id: str
    triggered_by: str
    retired_at: str
    restored_by: str | None = None
    """The release that brought the skill back (a revert or a publish); None while RETIRED."""


class LineageLink(BaseModel):
    model_config = ConfigDict(frozen=True)

    child: str
    parent: str | None
    kind: LineageKind
