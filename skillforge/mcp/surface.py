"""What the MCP tools do, without the SDK: one workspace's registry, router and embedder, loaded
once, and reloaded only when the store's live releases or the routing calibration changed.

Every tool call first asks SQLite whether another connection committed since the last look
(`PRAGMA data_version`, microseconds); only then does it read which release of each skill is live
(about a millisecond at 150 skills). When that differs from what was loaded (a publish, a revert,
an import from another process), the registry and the route index are rebuilt before answering,
so an agent never gets a stale body or routes to a skill that is gone. The embedder and the
router model are kept: they do not depend on the skills, and card vectors come from the
workspace's vector cache, so a rebuild embeds only the new cards. A recalibration by another
process (`route calibrate`, `route fit`, `--undo`, `route reset`) changes the files of the routing
folder, which every call compares (a few stat calls): the router alone is rebuilt.

Not thread-safe: the server calls it from one worker thread (SQLite connections belong to the
thread that opened them).
"""

from __future__ import annotations

import logging
import time
from typing import Literal

from pydantic import BaseModel, Field

from skillforge.config import Workspace
from skillforge.context import RouteContext
from skillforge.library.registry import PublishedSkill, SkillRegistry
from skillforge.library.services import Services
from skillforge.routing.embedding import Embedder, get_embedder
from skillforge.routing.index import RouteIndex, routing_stamp
from skillforge.state.llm import Role

log = logging.getLogger(__name__)

SOURCE = "mcp"
"""The `source` of the router log lines this surface writes (the CLI's traffic is "route")."""
Outcome = Literal["good", "bad", "neutral"]
"""The values of skillforge.state.events.FeedbackOutcome, spelled out so the tool's input schema
lists them (and so this module imports before the events package does)."""


class RouteAnswer(BaseModel):
    """The route tool's result: the skill to use, or none, and the evidence."""

    skill: str | None = Field(description="the skill to load with use_skill, or null (NONE: no skill fits)")
    layer: str = Field(description="the layer that decided: rule, embed, llm or none")
    reason: str
    top_k: list[str] = Field(default_factory=list, description="the embed layer's best skills, best first")
    scores: dict[str, dict[str, float]] = Field(default_factory=dict, description="per layer, per skill")
    latency_ms: dict[str, float] = Field(default_factory=dict, description="per layer")
    server_ms: float = Field(description="the whole route inside the server: freshness check and cascade")


class SkillBody(BaseModel):
    """The use_skill tool's result: the instructions of the release this session is served."""

    name: str
    release_id: str
    version: str
    body: str


class FeedbackAnswer(BaseModel):
    """The record_feedback tool's result."""

    recorded: bool
    skill: str
    outcome: Outcome
    release_id: str


class AgentSurface:
    """The four tools' work on one workspace."""

    def __init__(self, ws: Workspace, *, embedder: Embedder | None = None, use_llm: bool = True,
                 llm_off: str | None = None) -> None:
        from skillforge.llm.client import build_llm

        self.ws = ws
        self.services = Services(ws)
        self.embedder = embedder or get_embedder()
        llm = build_llm(ws, grading=False) if use_llm else None
        self.llm = llm if llm is not None and llm.configs[Role.ROUTER].configured else None
        self.llm_off = llm_off or ("the LLM layer off (--no-llm)" if not use_llm else "no LLM configured")
        self.reloads = 0
        self._seen = self._data_version()  # before the live releases are read: a commit after it is noticed
        self._live = self._live_now()
        self.registry: SkillRegistry = self.services.registry
        self._routing = routing_stamp(ws, self.embedder.name)  # before the router reads its files
        self.router: RouteContext = self._router()

    # ---- freshness --------------------------------------------------------------------------
    def _data_version(self) -> int:
        """SQLite's counter of commits by other connections to the store (this one only reads)."""
        return int(self.services.store.conn.execute("PRAGMA data_version").fetchone()[0])

    def _live_now(self) -> tuple[tuple[str, str], ...]:
        return tuple((r.skill_name, r.release_id) for r in self.services.store.current_releases())

    def _router(self) -> RouteContext:
        skills = [p.skill for p in self.registry.skills.values()]
        index = RouteIndex.for_workspace(self.ws, skills, self.embedder)
        return RouteContext(index=index, llm=self.llm, router_log=self.ws.router_log, source=SOURCE,
                            llm_off=self.llm_off)

    def refresh(self) -> bool:
        """Reload the registry and the route index if the live releases changed, or only the router
        if its calibration changed (`route calibrate`, `fit`, `--undo`, `reset`); True if it did."""
        routing = routing_stamp(self.ws, self.embedder.name)
        recalibrated = routing != self._routing
        if recalibrated:
            self._routing = routing
        seen = self._data_version()
        live = self._live_now() if seen != self._seen else self._live
        self._seen = seen
        if live == self._live:
            if recalibrated:
                self.router = self._router()
                self.reloads += 1
                log.info("routing calibration changed: router rebuilt")
            return recalibrated
        t0 = time.perf_counter()
        self.registry.reload()
        self.router = self._router()
        self._live = live
        self.reloads += 1
        log.info("live releases changed: reloaded %d skills in %.0f ms", len(self.registry.skills),
                 (time.perf_counter() - t0) * 1000)
        return True

    # ---- the tools --------------------------------------------------------------------------
    def index(self) -> str:
        """The skill index an agent sees (the registry's, as `skills index` prints it)."""
        self.refresh()
        for e in self.registry.errors:
            log.warning("not in the index: %s", e)
        return self.registry.build_index() or "(no published skills)\n"

    def route(self, query: str) -> RouteAnswer:
        """The route cascade on the loaded router (graphs/route.router_for, as the CLI picks it),
        logged to runs/router.jsonl like the CLI's."""
        from skillforge.graphs.route import router_for

        t0 = time.perf_counter()
        self.refresh()
        state = router_for(self.router)(query, self.router)
        server_ms = round((time.perf_counter() - t0) * 1000, 3)
        return RouteAnswer(skill=state.chosen, layer=(state.hit_layer.value if state.hit_layer else "none"),
                           reason=state.reason, top_k=state.top_k, scores=state.scores,
                           latency_ms=state.latency_ms, server_ms=server_ms)

    def live(self, name: str) -> PublishedSkill:
        """The live release of `name` (UnknownSkill, NotPublished or its load error otherwise)."""
        self.refresh()
        return self.registry.get(name)

    def use_skill(self, name: str, reason: str, session_id: str) -> SkillBody:
        """The body of the release this session is served: the skill's canary for a session in its
        bucket, else the live release. Records a skill_used event naming that release and a
        use_skill router log line; an empty or blank session id is refused (EventError), as
        record_feedback refuses it."""
        self.live(name)  # fresh, and the skill's own error when it has no live release
        got = self.registry.use(name, reason, session_id, source=SOURCE)
        rel = got.release
        return SkillBody(name=name, release_id=rel.release_id, version=rel.version, body=got.body)

    def feedback(self, session_id: str, skill: str, outcome: Outcome, comment: str | None = None,
                 private: bool = False, tokens: int | None = None) -> FeedbackAnswer:
        """Records the agent's feedback on a live skill, tied to the release use_skill served this
        session (EventError when it never loaded the skill with use_skill in this session: its
        verdict would count against a release it never saw). `tokens`: what the session spent with
        the skill, when the agent knows."""
        from skillforge.events import record_feedback

        self.live(skill)
        event = record_feedback(self.ws, session_id, skill, outcome, comment, private=private, tokens=tokens)
        return FeedbackAnswer(recorded=True, skill=skill, outcome=outcome, release_id=event.release_id or "")

    def close(self) -> None:
        """Close the store's connection (the git reader ends with the process)."""
        self.services.store.close()
