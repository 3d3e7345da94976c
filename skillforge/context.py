"""The runtime context graphs receive (`graph.invoke(input, context=...)`): every dependency a node
needs, built once from settings by the CLI or Studio, or from fakes by tests. Never a global.

A context passed with some fields set must have the ones it cannot run without (EvalContext: llm;
EvolveContext: ws and llm; RouteContext: index): else ContextIncomplete, when it is constructed, so
before any run is recorded. It is never completed from the environment (that could be another
workspace than the one its other fields name).

With no context, or one with every field at its default (`langgraph dev`: its server constructs
the dataclass from the run's `context` payload, `{}` when none is given), a node's `XContext.of(runtime)`
builds one from the settings of the workspace $SKILLFORGE_WORKSPACE and fills the run's empty
context with it, so the later nodes of that run reuse it. What it builds is the run's context
class's `from_settings`: a graph compiled with a subclass as its context schema builds its own
(the Studio test's graphs, skillforge.testing.studio_graphs, build scripted models that way).

The LLM client (openai, langchain) and the executor are imported only where a context gets models:
routing without a router model (`skillforge route` with none configured, or --no-llm) stays cold.
"""

from __future__ import annotations

import threading
from dataclasses import MISSING, Field, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

from skillforge.config import Workspace
from skillforge.errors import InvalidContext, SkillForgeError, given
from skillforge.evaluation.datasets import load_sets
from skillforge.routing.embedding import Embedder, get_embedder
from skillforge.library.registry import SkillRegistry
from skillforge.llm.config import workspace_configs
from skillforge.routing.index import RouteIndex
from skillforge.state.evaluate import EvalSet
from skillforge.state.llm import Role
from skillforge.state.result import JudgeCalibration

if TYPE_CHECKING:  # slow imports (openai, langchain), done where a context gets its models
    from skillforge.evaluation.executor import SkillUnderTest
    from skillforge.llm.client import LLM

R_co = TypeVar("R_co", covariant=True)


class RunWithContext(Protocol[R_co]):
    """What `XContext.of` reads of LangGraph's `Runtime`: its context. Structural, so that this
    module (imported by the CLI and the services) does not depend on langgraph."""

    @property
    def context(self) -> R_co: ...


class _KnownFields:
    """A context class that refuses a field it does not have by name (InvalidContext, listing its
    fields) before its dataclass __init__ would raise a bare TypeError: LangGraph builds the context
    from a dict (`context={...}`, the HTTP API's `context` payload) as `Context(**payload)`."""

    def __new__(cls, *args: object, **kwargs: object) -> _KnownFields:
        known = [f.name for f in fields(cls)]  # type: ignore[arg-type]
        unknown = [k for k in kwargs if k not in known]
        if unknown:
            raise InvalidContext(f"{cls.__name__} has no field {', '.join(repr(k[:40]) for k in unknown[:5])}: "
                                 f"its fields are {', '.join(known)}")
        return super().__new__(cls)


@dataclass
class RouteContext(_KnownFields):
    """What the route graph's nodes read."""

    index: RouteIndex = None  # type: ignore[assignment]
    """None only in the empty context a server constructs; `RouteContext.of` fills it."""
    llm: LLM | None = None
    """None: no router model configured, the cascade ends after the embed layer."""
    router_log: Path | None = None
    """runs/router.jsonl; None writes no log (benchmarks)."""
    source: str = "route"
    """Logged with each decision: "route" for traffic, "route eval" for an evaluation run."""
    llm_off: str = "no LLM configured"
    """Why `llm` is None, for the reason of an uncertain query ("... --no-llm" when the caller turned it off)."""

    REQUIRED = (("index", "index=RouteIndex.for_workspace(ws, skills, embedder) or route_context(ws)"),)

    def __post_init__(self) -> None:
        _check(self)

    @property
    def empty(self) -> bool:
        """True for the context a server constructs from an empty payload (every field its default)."""
        return _all_default(self)

    @classmethod
    def of(cls, runtime: RunWithContext[RouteContext | None]) -> RouteContext:
        """The run's context, or one built from the workspace settings (see the module docstring)."""
        return _resolved(runtime.context, cls)

    @classmethod
    def from_settings(cls, ws: Workspace) -> RouteContext:
        """The context a run without one gets: the workspace's skills and router model."""
        return route_context(ws, embedder=shared_embedder())


def route_context(ws: Workspace, *, embedder: Embedder | None = None, use_llm: bool = True,
                  use_head: bool = True, no_cache: bool = False, auto_head: bool = True) -> RouteContext:
    """The context for routing over the workspace's published skills (`auto_head`: uncalibrated, by
    the head trained on the skills' examples, routing.defaults)."""
    registry = SkillRegistry.load(ws)
    emb = embedder or get_embedder()
    index = RouteIndex.for_workspace(ws, [p.skill for p in registry.skills.values()], emb, use_head=use_head,
                                     auto_head=auto_head)
    return RouteContext(index=index, llm=router_llm(ws, use_llm=use_llm, no_cache=no_cache), router_log=ws.router_log)


def router_llm(ws: Workspace, *, use_llm: bool = True, no_cache: bool = False) -> LLM | None:
    """The LLM for the route graph's llm_choose, or None when the router role is not configured (or
    `use_llm` is False); the LLM client is imported only in the first case."""
    if not use_llm:
        return None
    configs = workspace_configs(ws, grading=False)
    if not configs[Role.ROUTER].configured:
        return None
    from skillforge.llm.client import build_llm

    return build_llm(ws, no_cache=no_cache, grading=False, configs=configs)


@dataclass
class EvalContext(_KnownFields):
    """What the evaluate graph's nodes read."""

    llm: LLM = None  # type: ignore[assignment]
    """Executor and judge models (scripted fakes in tests). None only in a server's empty context."""
    sets: dict[str, EvalSet] = field(default_factory=dict)
    others: dict[str, SkillUnderTest] = field(default_factory=dict)
    """The other published skills, visible in the executor's index on both sides."""
    evaluations_log: Path | None = None
    traces_dir: Path | None = None
    judge_calibration: JudgeCalibration | None = None
    """The judge's calibration status per judged dimension (calibration.records.statuses_for); None:
    not looked up (no workspace), every judged dimension uncalibrated."""

    REQUIRED = (("llm", "llm=build_llm(ws) (skillforge.llm.client), or the whole context: eval_context(ws, llm)"),)

    def __post_init__(self) -> None:
        _check(self)

    @property
    def empty(self) -> bool:
        """True for the context a server constructs from an empty payload (every field its default)."""
        return _all_default(self)

    @classmethod
    def of(cls, runtime: RunWithContext[EvalContext | None]) -> EvalContext:
        """The run's context, or one built from the workspace settings (see the module docstring)."""
        return _resolved(runtime.context, cls)

    @classmethod
    def from_settings(cls, ws: Workspace) -> EvalContext:
        """The context a run without one gets: the workspace's sets, skills and models."""
        from skillforge.llm.client import build_llm

        return eval_context(ws, build_llm(ws))


def eval_context(ws: Workspace, llm: LLM) -> EvalContext:
    """The evaluation context of a workspace: its sets, its published skills and the calibration of
    its judge."""
    from skillforge.calibration.records import statuses_for
    from skillforge.evaluation.executor import SkillUnderTest

    registry = SkillRegistry.load(ws)
    others = {name: SkillUnderTest(p.skill, p.skill.body, p.release.release_id) for name, p in registry.skills.items()}
    return EvalContext(llm=llm, sets=load_sets(ws, registry.names()), others=others,
                       evaluations_log=ws.evaluations_log, traces_dir=ws.traces_dir,
                       judge_calibration=statuses_for(ws, llm.configs.get(Role.JUDGE)))


@dataclass
class EvolveContext(_KnownFields):
    """What the evolve graph's nodes read: the workspace (store, git, sets, runs/), the models, and
    the embedder for the routing gate (None: the default, built on first use)."""

    ws: Workspace = None  # type: ignore[assignment]
    """None only in the empty context a server constructs; `EvolveContext.of` fills it."""
    llm: LLM = None  # type: ignore[assignment]
    embedder: Embedder | None = None

    REQUIRED = (("ws", "ws=Workspace.open(path), or the whole context: evolve_context(ws)"),
                ("llm", "llm=build_llm(ws) (skillforge.llm.client), or the whole context: evolve_context(ws)"))

    def __post_init__(self) -> None:
        _check(self)

    @property
    def empty(self) -> bool:
        """True for the context a server constructs from an empty payload (every field its default)."""
        return _all_default(self)

    @classmethod
    def of(cls, runtime: RunWithContext[EvolveContext | None]) -> EvolveContext:
        """The run's context, or one built from the workspace settings (see the module docstring)."""
        return _resolved(runtime.context, cls)

    @classmethod
    def from_settings(cls, ws: Workspace) -> EvolveContext:
        """The context a run without one gets: the workspace and its models."""
        from skillforge.llm.client import build_llm

        return EvolveContext(ws=ws, llm=build_llm(ws), embedder=shared_embedder())

    def get_embedder(self) -> Embedder:
        if self.embedder is None:
            self.embedder = get_embedder()
        return self.embedder


def evolve_context(ws: Workspace, llm: LLM | None = None) -> EvolveContext:
    """The evolve context of a workspace, with the models from its settings unless given."""
    if llm is None:
        from skillforge.llm.client import build_llm

        llm = build_llm(ws)
    return EvolveContext(ws=ws, llm=llm)


class _Context(Protocol):
    @property
    def empty(self) -> bool: ...

    @classmethod
    def from_settings(cls, ws: Workspace) -> _Context: ...


C = TypeVar("C", bound=_Context)
_fill_lock = threading.Lock()
_embedder: list[Embedder] = []


def shared_embedder() -> Embedder:
    """One embedder per process for the contexts built from settings (loading it is the slow part)."""
    if not _embedder:
        _embedder.append(get_embedder())
    return _embedder[0]


class ContextIncomplete(SkillForgeError, TypeError):
    """A context passed with some fields set but without one it cannot run without (a model, the
    workspace, the index). Never filled from $SKILLFORGE_WORKSPACE: that could be another workspace."""


def _set_fields(ctx: object) -> list[str]:
    """The fields of the dataclass `ctx` that do not hold their default."""
    def default(f: Field[object]) -> object:
        return f.default_factory() if f.default_factory is not MISSING else f.default

    return [f.name for f in fields(ctx) if getattr(ctx, f.name) != default(f)]  # type: ignore[arg-type]


def _all_default(ctx: object) -> bool:
    """Every field of `ctx` holds its default: the context a server builds from an empty payload."""
    return not _set_fields(ctx)


def _check(ctx: object) -> None:
    """ContextIncomplete when `ctx` has fields set but a required one (its class's REQUIRED) is None."""
    given = _set_fields(ctx)
    if not given:
        return
    for name, how in type(ctx).REQUIRED:  # type: ignore[attr-defined]
        if getattr(ctx, name) is None:
            raise ContextIncomplete(f"{type(ctx).__name__} has {', '.join(given)} but no {name}: pass {how}; "
                                    f"only a context with no field set is built from $SKILLFORGE_WORKSPACE")


def _complete(ctx: object) -> bool:
    """Every required field of `ctx` (its class's REQUIRED) is set."""
    return all(getattr(ctx, name) is not None for name, _ in type(ctx).REQUIRED)  # type: ignore[attr-defined]


def _resolved(ctx: C | None, kind: type[C]) -> C:
    """`ctx` if it is a real context (ContextIncomplete if it is a partial one, never filled in); else
    one built from $SKILLFORGE_WORKSPACE's settings by the `from_settings` of the run's context class
    (`kind` when the run has none), copied into `ctx` (the run's empty context, every field its
    default) when there is one, so that the run builds it once."""
    if ctx is not None and not isinstance(ctx, kind):  # LangGraph passes any non-dict value as it is
        article = "an" if kind.__name__[:1] in "AEIOU" else "a"
        raise InvalidContext(f"context must be {article} {kind.__name__} (or a dict of its fields), got {given(ctx)}")
    if ctx is not None and _complete(ctx):
        return ctx
    with _fill_lock:  # the fanned-out nodes of one run (evaluate's run_case) fill it once
        if ctx is not None and not ctx.empty:
            _check(ctx)  # a required field set to None after construction
            return ctx
        built = (kind if ctx is None else type(ctx)).from_settings(Workspace.open())
        if ctx is None:
            return cast(C, built)
        # the required fields last: a node that does not wait for the lock sees them set only once the rest is
        required = [name for name, _ in type(ctx).REQUIRED]  # type: ignore[attr-defined]
        for name in sorted((f.name for f in fields(built)), key=required.__contains__):  # type: ignore[arg-type]
            setattr(ctx, name, getattr(built, name))
        return ctx
