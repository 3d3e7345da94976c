"""SkillRegistry: what an agent sees (the index) and what it loads (`use_skill`).

Both come from the **current published release** of each skill, read from git at that release's
commit, never from the working tree: an edit in progress is invisible until it is published. The
one exception is a canary (canaries.py): `use_skill` with a session id whose bucket is in the
skill's open canary serves the canary's release instead; the index always shows the live one.
"""

from __future__ import annotations

import difflib
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from skillforge.skill import file as skillfile
from skillforge.config import Workspace
from skillforge.errors import EventError, GitError, NotPublished, SkillFileError, SkillRetired, UnknownSkill
from skillforge.library.canaries import Canaries
from skillforge.library.gitrepo import SkillsRepo
from skillforge.library.gitrefs import verify_history  # HistoryLost, per-skill lost commits, refs (gitrefs.py)
from skillforge.journal import append_jsonl
from skillforge.rules.redact import redact
from skillforge.state.release import Release
from skillforge.state.skill import SkillFile
from skillforge.library.store import Store

log = logging.getLogger(__name__)
def index_text(skills: Iterable[SkillFile]) -> str:
    """The skill index in an agent's prompt: `- name: description` and, when it says more, the
    use_when line. Bodies are disclosed only through use_skill."""
    lines = []
    for s in sorted(skills, key=lambda s: s.name):
        lines.append(f"- {s.name}: {s.description.strip()}")
        if s.use_when is not None and s.use_when.strip() != s.description.strip():
            lines.append(f"  use when: {s.use_when.strip()}")
    return "\n".join(lines) + ("\n" if lines else "")


@dataclass(frozen=True)
class Served:
    """What `use_skill` served one session."""

    release: Release
    body: str
    arm: str | None
    """"canary" or "live" while the skill has an open canary, else None."""
    canary_id: str | None
    """The release id of the skill's open canary, if any."""


@dataclass(frozen=True)
class PublishedSkill:
    skill: SkillFile
    release: Release


@dataclass
class SkillRegistry:
    """The published skills of one workspace."""

    workspace: Workspace
    store: Store
    repo: SkillsRepo
    skills: dict[str, PublishedSkill] = field(default_factory=dict)
    errors: list[SkillFileError] = field(default_factory=list)
    """Published releases whose file no longer loads (say, a rule got stricter)."""
    broken: dict[str, SkillFileError] = field(default_factory=dict)
    """The same errors by skill name: `get` raises a broken skill's own error, not UnknownSkill."""

    @classmethod
    def load(cls, workspace: Workspace, store: Store | None = None, repo: SkillsRepo | None = None) -> SkillRegistry:
        reg = cls(workspace, store or Store(workspace.db_path), repo or SkillsRepo(workspace.skills_dir))
        reg.reload()
        return reg

    def reload(self) -> None:
        """Read every current release from git (HistoryLost if the repository lost their commits)."""
        verify_history(self.store, self.repo)
        self.skills, self.errors, self.broken = {}, [], {}
        for rel in self.store.current_releases():
            assert rel.commit_hash is not None  # PUBLISHED rows always have one (CHECK)
            path = f"{rel.skill_path}/{skillfile.SKILL_FILENAME}"
            label = f"{path}@{rel.commit_hash[:10]}"
            try:
                text = skillfile.decode(self.repo.read(rel.commit_hash, path), label)
                skill = skillfile.parse(text, label, rel.skill_path.rsplit("/", 1)[-1])
            except SkillFileError as e:
                self.errors.append(e)
                self.broken[rel.skill_name] = e
                continue
            except GitError as e:
                self.errors.append(SkillFileError(label, "path", str(e)))
                self.broken[rel.skill_name] = self.errors[-1]
                continue
            self.skills[rel.skill_name] = PublishedSkill(skill, rel)

    def names(self) -> list[str]:
        return sorted(self.skills)

    def closest(self, name: str, n: int = 3) -> list[str]:
        known = sorted((set(self.skills) | set(self.store.skill_names())) - {name})
        close = difflib.get_close_matches(name, known, n=n, cutoff=0.5)
        return close or [k for k in known if name and (name in k or k in name)][:n]

    def get(self, name: str) -> PublishedSkill:
        """The published skill `name`; its load error if its release no longer loads, else UnknownSkill."""
        if name in self.skills:
            return self.skills[name]
        if name in self.broken:
            raise self.broken[name]
        self._refuse_retired(name)
        if name in self.store.skill_names():  # never "unknown skill 'x'. Did you mean: x?"
            raise NotPublished(f"skill '{name}' has no published release yet")
        raise UnknownSkill(name, self.closest(name))

    def _refuse_retired(self, name: str) -> None:
        if self.store.retirement(name) is not None:
            raise SkillRetired(f"skill '{name}' is RETIRED (out of the index and the router); "
                               f"`skillforge release revert {name}` brings it back")

    def build_index(self) -> str:
        """The text an agent sees: name, description and use_when of every published skill."""
        return index_text(self.skills[name].skill for name in self.names())

    def serve(self, name: str, session_id: str | None = None) -> Served:
        """The release `session_id` gets of skill `name` (the canary's for a session in its bucket,
        else the live one) and its body, read from git at its commit. UnknownSkill, NotPublished or
        SkillRetired when there is no live release."""
        rel, canary = Canaries(self.store).served(name, session_id)
        if rel is None:
            self._refuse_retired(name)
            if name in self.store.skill_names():
                raise NotPublished(f"skill '{name}' has no published release yet")
            raise UnknownSkill(name, self.closest(name))
        assert rel.commit_hash is not None
        path = f"{rel.skill_path}/{skillfile.SKILL_FILENAME}"
        label = f"{path}@{rel.commit_hash[:10]}"
        _, body = skillfile.split_frontmatter(skillfile.decode(self.repo.read(rel.commit_hash, path), label), label)
        arm = None if canary is None else "canary" if rel.release_id == canary.release_id else "live"
        return Served(rel, body, arm, canary.release_id if canary is not None else None)

    def use_skill(self, name: str, reason: str, session_id: str | None = None) -> str:
        """The body `use` serves this session (the Python API of the agents' use_skill tool)."""
        return self.use(name, reason, session_id).body

    def use(self, name: str, reason: str, session_id: str | None = None, *, source: str | None = None) -> Served:
        """Serve the skill (`serve`) and log name, reason (redacted: an agent's words), session, the
        release served and latency to runs/router.jsonl; with a session id, also a skill_used event naming that release. An empty
        or blank session id is refused (EventError, nothing served or logged), as feedback refuses it:
        a use that records no event would vanish from the use counts."""
        from skillforge.events import record_use
        from skillforge.rules.events import session_problem

        t0 = time.perf_counter()
        if session_id is not None and (problem := session_problem(session_id)):
            raise EventError(problem)
        served = self.serve(name, session_id)
        rel = served.release
        if session_id is not None:
            record_use(self.workspace, session_id, name, rel.release_id, reason)
        latency_ms = (time.perf_counter() - t0) * 1000
        append_jsonl(self.workspace.router_log, {"event": "use_skill", **({"source": source} if source else {}),
                                                 "name": name, "reason": redact(reason)[0], "session_id": session_id,
                                                 "release_id": rel.release_id, "version": rel.version,
                                                 "canary": served.canary_id, "arm": served.arm,
                                                 "latency_ms": round(latency_ms, 3)})
        return served
