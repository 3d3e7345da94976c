"""Workspace layout: where skills, evaluation sets, checkpoints and run logs live.

Every CLI command imports this module (WORKSPACE_ENV), so it stays cheap to import: gitpython and
the id rules (pydantic state) are imported where they are used."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import ClassVar

from skillforge.errors import WorkspaceError

WORKSPACE_ENV = "SKILLFORGE_WORKSPACE"
WORKSPACE_DIRS = ("skills", "evaluation_sets", "checkpoints", "runs")
WORKSPACE_ID_FILE = "workspace-id"
_GITIGNORE = "runs/\ncheckpoints/*\n!checkpoints/.gitkeep\n.langgraph_api/\n.sf-swap/\n"


@dataclass(frozen=True)
class Workspace:
    """A folder laid out like the repo root: skills/ (inside git), evaluation_sets/, checkpoints/, runs/."""

    root: Path

    @property
    def skills_dir(self) -> Path:
        return self.root / "skills"

    @property
    def evaluation_sets_dir(self) -> Path:
        return self.root / "evaluation_sets"

    @property
    def checkpoints_dir(self) -> Path:
        return self.root / "checkpoints"

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    @property
    def db_path(self) -> Path:
        return self.runs_dir / "skillforge.db"

    @property
    def router_log(self) -> Path:
        return self.runs_dir / "router.jsonl"

    @property
    def evaluations_log(self) -> Path:
        return self.runs_dir / "evaluations.jsonl"

    @property
    def traces_dir(self) -> Path:
        return self.runs_dir / "traces"

    @cached_property
    def workspace_id(self) -> str:
        """This workspace's stable id, kept in `runs/workspace-id` (made on first use: the folder's
        name and 12 random hex digits). It scopes the runs and batch claims of a checkpoint database
        that several workspaces share (SKILLFORGE_CHECKPOINT_URL)."""
        from skillforge.rules.ids import IdKind, id_problem, new_workspace_id

        path = self.runs_dir / WORKSPACE_ID_FILE
        try:
            if not path.exists():
                _create_once(path, new_workspace_id(self.root.name, uuid.uuid4().hex[:12]))
            text = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as e:
            raise WorkspaceError(f"cannot read or create {path}: {getattr(e, 'strerror', None) or e}") from None
        problem = id_problem(IdKind.WORKSPACE, text)
        if problem is not None:
            raise WorkspaceError(f"{path} does not hold a workspace id ({problem}); delete it to get a new one "
                                 "(runs of a shared checkpoint database made under the old id are then not shown)")
        return text

    opened: ClassVar[Path | None] = None
    """The root the latest `open` found in this process (the CLI's commands print their next steps
    for it: cli/common.py `pasteable`)."""

    @classmethod
    def open(cls, root: Path | str | None = None) -> Workspace:
        """The workspace at `root` ($SKILLFORGE_WORKSPACE, else the current directory)."""
        base = Path(root if root is not None else os.environ.get(WORKSPACE_ENV, ".")).expanduser().resolve()
        if not base.is_dir():
            raise WorkspaceError(f"{base} is not a folder: name an existing workspace with -w DIR (or {WORKSPACE_ENV}), "
                                 f"or create one with `skillforge init {base}`")
        if not (base / "skills").is_dir():
            raise WorkspaceError(f"{base} is not a SkillForge workspace (no skills/ folder): name an existing one with "
                                 f"-w DIR (or {WORKSPACE_ENV}), or create one with `skillforge init DIR`")
        if (base / "skills").is_symlink():  # git would hold the link, not the skills, and paths escape the root
            raise WorkspaceError(f"{base / 'skills'} is a symlink (to {os.path.realpath(base / 'skills')}); skills/ must be "
                                 "a real folder of the workspace: move the folder itself there")
        ws = cls(base)
        if ws.runs_dir.exists() and not ws.runs_dir.is_dir():
            raise WorkspaceError(f"{ws.runs_dir} is not a folder; move it aside so runs/ can hold the store and logs")
        try:
            ws.runs_dir.mkdir(exist_ok=True)
        except OSError as e:
            raise WorkspaceError(f"cannot create {ws.runs_dir}: {e.strerror or e}") from None
        Workspace.opened = base
        return ws


def init_workspace(root: Path | str) -> Workspace:
    """Create the workspace folders; `git init` the root unless skills/ is already inside a repo."""
    return create_workspace(root)[0]


def create_workspace(root: Path | str) -> tuple[Workspace, str | None]:
    """`init_workspace`, and the root of the git repository skills/ was already inside, when it was
    another folder than the workspace (releases are committed to that repository's branch)."""
    base = Path(root).expanduser().resolve()
    if base.exists() and not base.is_dir():
        raise WorkspaceError(f"{base} exists and is not a folder")
    try:
        for name in WORKSPACE_DIRS:
            (base / name).mkdir(parents=True, exist_ok=True)
        keep = base / "checkpoints" / ".gitkeep"
        keep.touch(exist_ok=True)
    except OSError as e:
        raise WorkspaceError(f"cannot create a workspace at {base}: {e.strerror or e}: {e.filename or base}") from None
    import git

    try:
        outer = git.Repo(base / "skills", search_parent_directories=True).working_tree_dir
    except git.InvalidGitRepositoryError:
        outer = None
        git.Repo.init(base)
        ignore = base / ".gitignore"
        if not ignore.exists():
            ignore.write_text(_GITIGNORE, encoding="utf-8")
    return Workspace(base), (str(outer) if outer is not None and Path(outer).resolve() != base else None)


def _create_once(path: Path, text: str) -> None:
    """Write `text` to `path` unless it exists, atomically: the first of several processes wins
    (a hard link of a complete temp file), the others keep its content."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
