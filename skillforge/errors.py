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


class NotWritable(WorkspaceError):
    """A file or folder SkillForge must write (the .git folder, skills/, an --out path) cannot be
    written: read-only, a folder where a file belongs (or the reverse), or a full disk."""


class SourceError(SkillForgeError):
    """A folder given to read skills from (`import --from`, `publish --from`) is missing, is not a
    folder, or holds no skill."""


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


class HistoryLost(GitError):
    """The skills repository no longer has the commits the store's current releases point to
    (its .git was deleted and re-created, or its history rewritten)."""


# ---- LLM layer ------------------------------------------------------------------------------
class LLMError(SkillForgeError):
    """Base of every failure of a chat-model call. None of them is ever cached."""


class LLMNotConfigured(LLMError):
    """No endpoint for a role: no SKILLFORGE_*/OPENAI_* settings and no local server running."""


class LLMUnavailable(LLMError):
    """The endpoint could not be reached or kept failing (connection refused, HTTP 429/5xx after retries)."""


class LLMTimeout(LLMError):
    """The endpoint did not answer within the role's timeout (after retries)."""


class InvalidLLMOutput(LLMError):
    """The reply could not be used: not JSON, not the schema, outside the allowed set, or truncated.
    Callers that judge or choose turn this into an explicit INVALID / NONE verdict."""


class BudgetExceeded(LLMError):
    """The next call would pass a hard cap of the run's budget ledger; it was not made."""


class LocalModelError(SkillForgeError):
    """The embedded local model cannot be assembled, verified, served or stopped."""


class LocalModelUnavailable(LocalModelError):
    """The [local] extra (llama-cpp-python and the model packages) is not installed."""


class ModelChecksumError(LocalModelError):
    """The assembled model file does not have the expected sha256; it was refused and removed."""


class ConfigError(SkillForgeError):
    """skillforge.toml or a SKILLFORGE_* variable holds a value of the wrong type or shape."""


# ---- checkpointer ---------------------------------------------------------------------------
class CheckpointStoreError(SkillForgeError):
    """SKILLFORGE_CHECKPOINT_URL is malformed, its server cannot be reached, or the [postgres]
    extra (langgraph-checkpoint-postgres, psycopg) is not installed."""
