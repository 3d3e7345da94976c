"""The evolve graph: collect -> analyze -> propose -> check -> validate -> decide, then publish (L1),
review (L2: a person approves or rejects through interrupt()), suggest (L3), or back to propose
with feedback while rounds remain. A rebase in review goes back to check (the candidate re-applied
on the live release); a publish that is refused (the base moved, a name is taken, hand edits) goes
to review. A capture run (`skills new`, state.need set) goes capture -> review -> publish.

    from skillforge.graphs.evolve import build_evolve_graph
    g = build_evolve_graph(checkpointer=sqlite_saver(ws.checkpoints_dir / "graphs.sqlite"))
    g.invoke(EvolveState(run_id=rid, skill="taxi-hailing"), {"configurable": {"thread_id": rid}},
             context=evolve_context(ws), durability="sync")

`graph` (compiled without a checkpointer) is for `langgraph dev`, which brings its own.

A review answer (`Command(resume={"action": ...})`) that the run does not take is an error raised
to the caller, never dropped: RunNotPaused when the run waits for no review and was never answered
(it ended, or was cancelled), AlreadyAnswered when it already has another answer, or when another
answer was taken first while this one ran (two answers at once: one wins; also when this one then
met the winner's publish, ReleaseConflict). The same answer again
returns the run as it stands, as `skillforge review` does (rules/review.answer_verdict).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from functools import partial
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer, Command, StateSnapshot

from skillforge.context import EvolveContext
from skillforge.evolution.validate import Subgraphs
from skillforge.graphs.evaluate import build_evaluate_graph
from skillforge.graphs.route import route
from skillforge.nodes.capture import after_capture, capture
from skillforge.nodes.evolve import after_analyze, after_collect, after_decide, analyze, check, collect, decide, \
    propose, validate
from skillforge.nodes.outcome import after_publish, after_review, answer_lost, answer_refused, nothing_waits, publish, \
    review, suggest
from skillforge.errors import InvalidResume, RunNotPaused, SkillForgeError
from skillforge.state.evolve import EvolveState, ReviewAction


class EvolveGraph(CompiledStateGraph):  # type: ignore[type-arg]
    """The compiled evolve graph, refusing a review answer the run does not take (module docstring)."""

    def stream(self, input: Any, config: Any = None, **kw: Any) -> Iterator[Any]:
        asked = _asked(input)
        if _resumes(input):
            _refused(input, asked, self._state(config))
        try:
            yield from super().stream(input, config, **kw)
        except SkillForgeError:  # e.g. ReleaseConflict: the winner of two answers at once is publishing
            if asked is not None:
                answer_lost(self._state(config), asked)  # that answer won: AlreadyAnswered is the news
            raise
        if asked is not None:
            answer_lost(self._state(config), asked)

    def _state(self, config: Any) -> StateSnapshot | None:
        try:
            return self.get_state(config)
        except ValueError:  # no checkpointer: nothing to check against
            return None

    async def _astate(self, config: Any) -> StateSnapshot | None:
        try:
            return await self.aget_state(config)
        except ValueError:
            return None

    async def astream(self, input: Any, config: Any = None, **kw: Any) -> AsyncIterator[Any]:
        asked = _asked(input)
        if _resumes(input):
            _refused(input, asked, await self._astate(config))
        try:
            async for chunk in super().astream(input, config, **kw):
                yield chunk
        except SkillForgeError:
            if asked is not None:
                answer_lost(await self._astate(config), asked)
            raise
        if asked is not None:
            answer_lost(await self._astate(config), asked)


def _resumes(input: Any) -> bool:
    """Whether `input` is a Command that resumes (a resume value of any shape, or None with nothing else)."""
    return isinstance(input, Command) and (input.resume is not None or (input.update is None and not input.goto))


def _refused(input: Command, asked: ReviewAction | None, snapshot: StateSnapshot | None) -> None:
    """The resume `input` refused before it runs: no value (InvalidResume; LangGraph itself fails on
    None), a thread that never ran (RunNotPaused, not pydantic's error on the missing state), a
    review answer the run does not take, or any value a run that waits for nothing cannot take."""
    if input.resume is None:
        raise InvalidResume('Command(resume=None) carries no answer: a review is answered {"action": "approve", '
                            '"comment": "..."}, a budget pause {"max_calls": N}')
    if snapshot is not None and not snapshot.values:
        raise RunNotPaused("no run on this thread: nothing waits for an answer (start a run with its input first)")
    if asked is not None:
        answer_refused(snapshot, asked)
    else:
        nothing_waits(snapshot)


def _asked(input: Any) -> ReviewAction | None:
    """The action of a review answer given as `Command(resume={"action": ...})`, else None (a start,
    a budget answer, a resume with None; a value the review cannot read is left to its InvalidResume)."""
    resume = input.resume if isinstance(input, Command) else None
    action = resume.get("action") if isinstance(resume, dict) else getattr(resume, "action", None)
    try:
        return ReviewAction(action) if action is not None else None
    except ValueError:
        return None


def build_evolve_graph(checkpointer: Checkpointer = None,
                       context_schema: type[EvolveContext] = EvolveContext) -> CompiledStateGraph:
    g = StateGraph(EvolveState, context_schema=context_schema)
    sub = Subgraphs(evaluate=build_evaluate_graph(checkpointer=False), route=route)  # what validation runs
    for name, fn in (("collect", collect), ("analyze", analyze), ("propose", propose), ("check", check),
                     ("validate", partial(validate, subgraphs=sub)), ("decide", partial(decide, subgraphs=sub)),
                     ("review", review), ("publish", publish), ("suggest", suggest),
                     ("capture", partial(capture, subgraphs=sub))):
        g.add_node(name, fn)
    g.add_conditional_edges(START, lambda s: "capture" if s.need else "collect",
                            {"capture": "capture", "collect": "collect"})
    g.add_conditional_edges("capture", after_capture, {"review": "review", "end": END})
    g.add_conditional_edges("collect", after_collect, {"analyze": "analyze", "end": END})
    g.add_conditional_edges("analyze", after_analyze, {"propose": "propose", "end": END})
    g.add_edge("propose", "check")
    g.add_edge("check", "validate")
    g.add_edge("validate", "decide")
    g.add_conditional_edges("decide", after_decide, {"propose": "propose", "publish": "publish", "review": "review",
                                                     "suggest": "suggest", "end": END})
    g.add_conditional_edges("review", after_review, {"publish": "publish", "check": "check", "end": END})
    g.add_conditional_edges("publish", after_publish, {"review": "review", "end": END})
    g.add_edge("suggest", END)
    compiled = g.compile(checkpointer=checkpointer)
    compiled.__class__ = EvolveGraph  # StateGraph.compile has no hook for the class; copy() keeps it
    return compiled


graph = build_evolve_graph()
