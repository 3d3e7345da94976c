"""Named errors. Every failure that can reach a user is one of these, never a bare traceback."""

from __future__ import annotations


class SkillForgeError(RuntimeError):
    """Base class of every error SkillForge raises on purpose. A RuntimeError so that a server that
    shows only some exception classes' text (langgraph-api's serde shows ValueError, TypeError,
    RuntimeError, ... and "An internal error occurred" for any other) shows its one line."""


class SkillFileError(SkillForgeError):
    """A SKILL.md breaks a rule. Names the file, the field and the rule."""

    def __init__(self, file: str, field: str, rule: str) -> None:
        self.file = str(file)
        self.field = field
        self.rule = rule
        super().__init__(f"{self.file}: field '{field}': {rule}")


class UnsafeSymlink(SkillFileError):
    """A symlink in a skill folder points outside it (or SKILL.md / the folder itself is a link)."""


class NestedSkill(SkillFileError):
    """A skill folder holds another skill folder (a SKILL.md below its top); nested skills are refused."""


class WorkspaceError(SkillForgeError):
    """The workspace is missing, incomplete or not where a command expects it."""


class NotWritable(WorkspaceError):
    """A file or folder SkillForge must write (the .git folder, skills/, an --out path) cannot be
    written: read-only, a folder where a file belongs (or the reverse), or a full disk."""


class SourceError(SkillForgeError):
    """A folder given to read skills from (`import --from`, `publish --from`) is missing, is not a
    folder, or holds no skill."""


class NameClash(SourceError):
    """`skills import --from DIR --rename` would give two skills one name (two folders, or a folder
    and a skill the workspace has); lists them. Nothing is imported."""


class UnknownSkill(SkillForgeError):
    """No skill of that name; carries the closest names."""

    def __init__(self, name: str, closest: list[str]) -> None:
        self.name = name
        self.closest = closest
        hint = f" Did you mean: {', '.join(closest)}?" if closest else ""
        super().__init__(f"unknown skill '{name}'.{hint}")


class NotPublished(SkillForgeError):
    """The skill exists but has no PUBLISHED release yet."""


class SkillRetired(NotPublished):
    """The skill is RETIRED (out of the index and the router, its history kept): it cannot be
    loaded, routed to or retired again; `skillforge release revert NAME` brings it back."""


class UnknownRelease(SkillForgeError):
    """No release with that id (or prefix) for that skill."""


class AmbiguousRelease(UnknownRelease):
    """A release prefix matches several releases (or is too short to trust); the message lists them."""


class ReleaseConflict(SkillForgeError):
    """Another release of the same skill is already PREPARING."""


class CanaryOpen(ReleaseConflict):
    """The skill has an open canary: no other canary, publish, revert or retirement of it until the
    canary is promoted or rolled back (`skillforge canary promote|rollback NAME`)."""


class NoCanary(SkillForgeError):
    """`canary status|promote|rollback NAME` on a skill that has no open canary."""


class ReleaseStateError(SkillForgeError):
    """A release step was called on a release in the wrong status."""


class NoChanges(ReleaseStateError):
    """A publish whose files are exactly those of the current release: no empty release is made."""


class UnpublishedChanges(SkillForgeError):
    """Writing a skill folder would discard edits that are in no commit; lists the files.
    Pass force (`--force`) to save them under runs/backups/ first."""

    def __init__(self, folder: str, files: list[str]) -> None:
        self.folder = folder
        self.files = files
        shown = ", ".join(files[:10]) + (f" and {len(files) - 10} more" if len(files) > 10 else "")
        super().__init__(f"{folder} has unpublished changes that would be lost: {shown}; publish them first, "
                         "or pass --force to save them under runs/backups/ and go on")


class NotAFolder(SkillForgeError):
    """Something other than a folder (a file, a symlink) sits at a skill folder's path; a revert
    replaces it only with `--force`, which saves it under runs/backups/ first (a symlink as a
    symlink: its target is never touched)."""


class SecretsInSkill(SkillForgeError):
    """A publish would add or change skill files that hold secrets (the leak scan's secret rules);
    lists file, line and kind, never the value. Nothing was published; `--allow-secrets` overrides."""

    def __init__(self, findings: list[str]) -> None:
        self.findings = findings
        shown = "; ".join(findings[:10]) + (f"; and {len(findings) - 10} more" if len(findings) > 10 else "")
        super().__init__(f"refused: {len(findings)} secret(s) in the files this publish adds or changes: {shown}. "
                         "Nothing was published. Take them out (a published skill reaches every agent, and git keeps "
                         "it for good), or pass --allow-secrets if they are not secrets")


class HiddenInSkill(SkillForgeError):
    """A publish would add or change files beside SKILL.md that hold control or format characters
    (rules/hidden.py: a bidi override, a zero-width or tag character...), which show a reviewer other
    text than what runs; lists file:line:column (a file name: its character), a SKILL.md field whose
    parsed value holds one, and each character's name. Nothing was published;
    there is no override (as `skills new`, `skills split` and evolve refuse them)."""

    def __init__(self, findings: list[str]) -> None:
        self.findings = findings
        shown = "; ".join(findings[:10]) + (f"; and {len(findings) - 10} more" if len(findings) > 10 else "")
        super().__init__(f"refused: hidden characters in {len(findings)} place(s) of the files this publish adds or "
                         f"changes: {shown}. Nothing was published. Skills have no use for control or format "
                         "characters and they can show a reader other text than what runs: take them out")


class PublishInterrupted(SkillForgeError):
    """Ctrl-C arrived before the release was committed; the release was rolled back (abandoned)."""


class OutputLost(SkillForgeError):
    """Standard output or error could not be written (a full disk, an I/O error): what was to be
    printed is lost, so the command does not exit 0."""


class BadArgument(SkillForgeError):
    """A command-line value outside its allowed range (say, a negative or NaN number of hours)."""


class InvalidId(SkillForgeError, TypeError):
    """A run id, skill name, set name or batch id that cannot name a file or folder (`../x`, a
    separator, a control character, too long). Raised where the id enters (graph state, CLI),
    before anything is written. A TypeError, not a ValueError: pydantic passes it through a state
    validator unwrapped (a ValueError becomes its ValidationError), and LangGraph's server shows a
    builtin error's message to Studio (it masks the others as "An internal error occurred")."""


class InvalidInput(SkillForgeError, TypeError):
    """A graph's input (RouteState, EvalState, EvolveState, from `graph.invoke`, Studio or the HTTP
    API) holds a field of the wrong type or misses one: names the field, what was given (its repr
    and type) and what it should be. A TypeError for the reasons InvalidId gives."""


class InvalidContext(SkillForgeError, TypeError):
    """A graph's context is not its context class (nor a dict of that class's fields), or names a
    field the class does not have; lists the fields it has."""


def given(value: object, limit: int = 60) -> str:
    """`value` as an error message shows what the caller gave: its repr (cut to `limit` characters)
    and its type, so that the string "12" does not read as the number 12: `'12' (str)`."""
    shown = repr(value)
    return f"{shown[:limit]}{'...' if len(shown) > limit else ''} ({type(value).__name__})"


class InvalidResume(SkillForgeError, ValueError):
    """A paused run (review, budget) was resumed with a value its pause does not accept. Nothing
    was stored: the pause stays open and can be answered again. A ValueError, so that LangGraph's
    server shows its message to Studio."""


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



class ContextOverflow(LLMError):
    """A prompt (estimated) plus the reply's token cap would not fit the model's context window; the
    call was not made. The evaluation case it belongs to is INVALID with this reason."""


class LocalModelError(SkillForgeError):
    """The embedded local model cannot be assembled, verified, served or stopped."""


class LocalModelUnavailable(LocalModelError):
    """The [local] extra (llama-cpp-python and the model packages) is not installed."""


class ModelChecksumError(LocalModelError):
    """The assembled model file does not have the expected sha256; it was refused and removed."""


class ConfigError(SkillForgeError):
    """skillforge.toml or a SKILLFORGE_* variable holds a value of the wrong type or shape."""


class UnknownRun(SkillForgeError):
    """No run with that id in this workspace: an evaluation run in the checkpoints (--resume) or the
    traces (--rejudge), an evolve run in the checkpoints (runs, review, resume), or an evolve batch."""


class ReportPathError(SkillForgeError):
    """The --report path cannot be written (a folder, a missing or non-folder parent, read-only)."""


# ---- evolve runs and their reviews ----------------------------------------------------------
class FolderChanged(SkillForgeError):
    """A skill folder changed while a release was being written into it (an editor, another
    person): nothing was committed and the edit is left in the folder."""


class PublishRefused(SkillForgeError):
    """An evolve candidate may not be published as it stands; nothing was released."""


class SplitRefused(SkillForgeError):
    """`skills split`: the split rule refused it, or a child failed its route test; nothing was written."""


class BaseMoved(PublishRefused):
    """The skill's live release is no longer the one the run's candidate was made and validated on."""


class NeedServed(PublishRefused):
    """A new skill waiting for review now conflicts with the library: a skill published since its
    draft serves the same need (the conflict rule, run again at approval)."""


class NameTaken(PublishRefused):
    """A DERIVED or CAPTURED candidate names a skill (or a folder under skills/) that already exists."""


class AlreadyAnswered(SkillForgeError):
    """The review of a run was already answered (by another process, or earlier); says by whom and when."""


class RunBusy(SkillForgeError):
    """Another process is driving a run of the same skill right now (a lock under runs/locks/)."""


class RunOpen(SkillForgeError):
    """The skill already has an open evolve run (running, paused at its budget, or waiting for review)."""


class RunNotPaused(SkillForgeError):
    """The run is not waiting for what was asked (a review answer, or a budget)."""


class RunIdTaken(SkillForgeError):
    """A new evolve run was given an id another run of the workspace already used (its release,
    review, suggestion or failure report): publish and its records are keyed by the run id."""


class RebaseConflict(SkillForgeError):
    """The candidate and the new live release change the same lines: it cannot be re-applied safely."""


# ---- checkpointer ---------------------------------------------------------------------------
class CheckpointStoreError(SkillForgeError):
    """SKILLFORGE_CHECKPOINT_URL is malformed, its server cannot be reached, or the [postgres]
    extra (langgraph-checkpoint-postgres, psycopg) is not installed."""


# ---- feedback and usage events --------------------------------------------------------------
class EventError(SkillForgeError):
    """A feedback or usage event that may not be recorded (unknown outcome, a session id with control
    characters or too long, a correction of a seq that does not exist or is not feedback). Nothing
    was written."""


class RouterLogError(SkillForgeError):
    """runs/router.jsonl cannot be read, or holds no router record at all (`skills suggest`)."""
