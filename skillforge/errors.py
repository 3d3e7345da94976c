"""Named errors. Every failure that can reach a user is one of these, never a bare traceback."""

from __future__ import annotations


class SkillForgeError(Exception):
    """Base class of every error SkillForge raises on purpose."""


class SkillFileError(SkillForgeError):
    """A SKILL.md breaks a rule. Names the file, the field and the rule."""

    def __init__(self, file: str, field: str, rule: str) -> None:
        self.file = str(file)
        self.field = field
        self.rule = rule
        super().__init__(f"{self.file}: field '{field}': {rule}")


class WorkspaceError(SkillForgeError):
    """The workspace is missing, incomplete or not where a command expects it."""


class UnknownSkill(SkillForgeError):
    """No skill of that name; carries the closest names."""

    def __init__(self, name: str, closest: list[str]) -> None:
        self.name = name
        self.closest = closest
        hint = f" Did you mean: {', '.join(closest)}?" if closest else ""
        super().__init__(f"unknown skill '{name}'.{hint}")


class NotPublished(SkillForgeError):
    """The skill exists but has no PUBLISHED release yet."""


class UnknownRelease(SkillForgeError):
    """No release with that id (or prefix) for that skill."""


class ReleaseConflict(SkillForgeError):
    """Another release of the same skill is already PREPARING."""


class ReleaseStateError(SkillForgeError):
    """A release step was called on a release in the wrong status."""


class StoreError(SkillForgeError):
    """The SQLite store refused an operation (invariant, schema version, corruption)."""


class GitError(SkillForgeError):
    """The skills git repository could not do what was asked."""
