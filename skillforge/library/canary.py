"""Canary rollouts, acted on: read the online signals of an open canary, ask the rules
(rules/canary.py), and promote or roll back through the canaries table (canaries.py).

**Signals.** The window is the canary's life: events of its skill at or after `started_at`. A
session belongs to the arm whose release its first `skill_used` event in the window served (the
canary's or the live one; the bucket is stable, so a session stays in its arm). Its feedback, its
corrections, its tool errors and the tokens it reports count for that arm, whatever release the
feedback itself names. Only public events are read (private ones are never read, only counted).
`use_skill` loads without a session id (router.jsonl) are counted apart: they always got the live
release. A **re-run** is an evaluation line whose candidate is the canary and whose baseline is the
live release; its per-case traces tell which P0 or holdout case passed on live and fails on it.

**Transitions.** Every promote or rollback (by `canary tick`, by hand, or a reaping) is: (1) the
decision, OPEN -> PROMOTING / ROLLING_BACK with its reason and evidence, in SQLite; (2) one
`kind: canary` line in runs/evaluations.jsonl (written once: a resumed transition finds it);
(3) a rollback puts the live bytes back in the skill folder when it holds exactly what the canary
wrote (recovery.restore_after_abandon, idempotent); (4) the close, one transaction that publishes
or declines the release. A process killed anywhere leaves a decided canary that the next
`finish` (every `tick` starts there) completes; a canary killed before (1) is still OPEN and is
judged again.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from skillforge.config import Workspace
from skillforge.errors import NoCanary, ReleaseStateError, UnknownSkill
from skillforge.journal import append_jsonl, read_jsonl
from skillforge.library.canaries import Canaries
from skillforge.library.gitrepo import SkillsRepo
from skillforge.library.recovery import restore_after_abandon
from skillforge.library.store import Store
from skillforge.rules.canary import compare, decide, offline_problem, regressions
from skillforge.rules.events import project
from skillforge.safewrite import exclusive
from skillforge.state.canary import ArmCounts, Canary, CanaryAction, CanaryState, CanaryVerdict, Comparison
from skillforge.state.events import Event, EventKind, FeedbackOutcome

log = logging.getLogger(__name__)
LOCK_FILE = "canary.lock"
"""Under runs/: held while a decided transition is finished."""
TRANSITION_KIND = "canary"
"""The `kind` of the evaluations.jsonl line every transition writes."""


def _when(text: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text))
    except ValueError:
        return None


def _passed(check: object) -> bool | None:
    """A side's objective checks as a trace stores them (SideCheck: expect_pass and provenance_ok)."""
    if not isinstance(check, dict):
        return None
    if "passed" in check:
        return bool(check["passed"])
    if "expect_pass" in check and "provenance_ok" in check:
        return bool(check["expect_pass"]) and bool(check["provenance_ok"])
    return None


@dataclass
class TickResult:
    """What one `tick` did with one canary."""

    canary: Canary
    verdict: CanaryVerdict | None
    """The rules' verdict (None when the tick only finished an earlier decision)."""
    done: str
    """"held", "promoted", "rolled back" or "reaped"."""
    already: bool = False
    """Another tick (or a person) decided and closed this canary while this tick looked: this tick
    changed nothing, and `done` says how it ended."""


class CanaryDriver:
    """The canaries of one workspace, judged and acted on."""

    def __init__(self, ws: Workspace, store: Store, repo: SkillsRepo) -> None:
        self.ws = ws
        self.store = store
        self.repo = repo
        self.canaries = Canaries(store)

    # ---- signals -------------------------------------------------------------------------
    def window(self, canary: Canary) -> list[Event]:
        """The public events of the canary's skill since it started."""
        from skillforge.events import EventLog

        start = _when(canary.started_at)
        return [e for e in EventLog(self.ws).read_public().events
                if e.skill == canary.skill_name and (w := _when(e.at)) is not None and start is not None and w >= start]

    def comparison(self, canary: Canary) -> Comparison:
        """Both arms' counts and every signal (rules/canary.compare)."""
        events = self.window(canary)
        arm_of: dict[str, str] = {}
        for e in events:
            if e.kind is EventKind.SKILL_USED and e.release_id in (canary.release_id, canary.live_release_id):
                arm_of.setdefault(e.session_id, "canary" if e.release_id == canary.release_id else "live")
        arms = {"canary": ArmCounts(), "live": ArmCounts()}
        for arm in arm_of.values():
            arms[arm].sessions += 1
        errored = {e.session_id for e in events if e.kind is EventKind.TOOL_ERROR}
        for session in errored & set(arm_of):
            arms[arm_of[session]].tool_error_sessions += 1
        latest = {}
        for v in project(events).verdicts:  # one verdict per session: its latest, whatever release it names
            if v.session_id in arm_of and (v.session_id not in latest or v.seq > latest[v.session_id].seq):
                latest[v.session_id] = v
        for session, v in latest.items():
            counts = arms[arm_of[session]]
            counts.with_verdict += 1
            counts.bad += v.outcome is FeedbackOutcome.BAD
            counts.corrected += v.corrections > 0
        tokens: dict[str, int] = {}
        for e in events:
            if e.kind is EventKind.FEEDBACK and e.tokens is not None and e.session_id in arm_of:
                tokens[e.session_id] = e.tokens
        for session, n in tokens.items():
            arms[arm_of[session]].tokens.append(n)
        return compare(arms["canary"], arms["live"], canary.share, self._no_session_loads(canary))

    def _no_session_loads(self, canary: Canary) -> int:
        start = _when(canary.started_at)
        return sum(1 for line in read_jsonl(self.ws.router_log)
                   if line.get("event") == "use_skill" and line.get("name") == canary.skill_name
                   and not line.get("session_id") and (w := _when(line.get("ts"))) is not None
                   and start is not None and w >= start)

    def reruns(self, canary: Canary) -> list[dict[str, object]]:
        """Per-case pass/fail of every re-run of the canary against its live release."""
        cases: list[dict[str, object]] = []
        for line in read_jsonl(self.ws.evaluations_log):
            if line.get("release_id") != canary.release_id or line.get("baseline_release_id") != canary.live_release_id \
                    or line.get("kind") == TRANSITION_KIND or not isinstance(line.get("run_id"), str):
                continue
            run_id = str(line["run_id"])
            for row in read_jsonl(self.ws.traces_dir / f"{Path(run_id).name}.jsonl"):
                case, checks = row.get("case"), row.get("checks")
                if not isinstance(case, dict) or not isinstance(checks, dict):
                    continue
                side = {k: _passed(v) for k, v in checks.items()}
                cases.append({"run_id": run_id, "case_id": case.get("id"), "p0": bool(case.get("p0")),
                              "eval_set": line.get("eval_set"), "baseline_passed": side.get("baseline"),
                              "candidate_passed": side.get("candidate")})
        return cases

    def verdict(self, canary: Canary, comparison: Comparison | None = None) -> CanaryVerdict:
        """The rules' verdict on an open canary now."""
        comparison = comparison or self.comparison(canary)
        release = self.store.release(canary.release_id)
        offline = offline_problem(release.eval_summary)
        if offline is None and (rerun := self.latest_evaluation(canary)) is not None \
                and (again := offline_problem(rerun)) is not None:
            offline = f"{again.replace('its offline', 'its latest offline')} (run {rerun['run_id']} on {rerun.get('eval_set')})"
        return decide(comparison, regressions(self.reruns(canary)), age_hours=self.canaries.age_hours(canary),
                      min_sessions=canary.min_sessions, max_age_hours=canary.max_age_hours, offline=offline)

    def latest_evaluation(self, canary: Canary) -> dict[str, object] | None:
        """The failing `evaluate` of the canary's release against its live release (its own baseline)
        since the canary started that no later PASS on the same set superseded, or None: a DECLINED
        or INVALID re-evaluation rolls the canary back, as the release's own offline evaluation does
        (QA 34 F3). Another baseline (the canary itself, none, an older release) says nothing about
        the canary against live, so it neither fails nor clears it; a REVIEW does not clear (QA 35 T1)."""
        start = _when(canary.started_at)
        failing: dict[object, dict[str, object]] = {}
        for line in read_jsonl(self.ws.evaluations_log):
            if line.get("release_id") != canary.release_id or line.get("baseline_release_id") != canary.live_release_id \
                    or line.get("kind") != "ab" or not isinstance(line.get("run_id"), str) \
                    or start is None or (at := _when(line.get("ts"))) is None or at < start:
                continue
            if line.get("verdict") == "PASS":
                failing.pop(line.get("eval_set"), None)
            elif offline_problem(line) is not None:
                failing[line.get("eval_set")] = line
        return max(failing.values(), key=lambda x: str(x.get("ts")), default=None)

    # ---- transitions ---------------------------------------------------------------------
    def open_canary(self, skill: str) -> Canary:
        canary = self.canaries.open_of(skill)
        if canary is None:
            if skill not in (known := self.store.skill_names()):  # QA 34 F9: a typo is not "no open canary"
                raise UnknownSkill(skill, difflib.get_close_matches(skill, sorted(known), n=3, cutoff=0.5))
            raise NoCanary(f"skill '{skill}' has no open canary")
        return canary

    def promote(self, skill: str, reason: str, evidence: dict[str, object]) -> Canary:
        """Decide PROMOTING (unless it already is) and finish: the canary becomes the live release."""
        return self._decide(skill, CanaryState.PROMOTING, reason, evidence)

    def rollback(self, skill: str, reason: str, evidence: dict[str, object]) -> Canary:
        """Decide ROLLING_BACK (unless it already is) and finish: everyone gets the live release."""
        return self._decide(skill, CanaryState.ROLLING_BACK, reason, evidence)

    def _decide(self, skill: str, to: CanaryState, reason: str, evidence: dict[str, object]) -> Canary:
        """ReleaseStateError when the canary is already decided the other way (tick finishes that)."""
        canary = self.open_canary(skill)
        other = CanaryState.ROLLING_BACK if to is CanaryState.PROMOTING else CanaryState.PROMOTING
        if canary.state is other:
            doing = "rolled back" if other is CanaryState.ROLLING_BACK else "promoted"
            raise ReleaseStateError(f"the canary of '{skill}' is being {doing} ({canary.reason}); "
                                    "`skillforge canary tick` finishes that")
        return self._claim(canary, to, reason, evidence)[0]

    def _claim(self, canary: Canary, to: CanaryState, reason: str,
               evidence: dict[str, object]) -> tuple[Canary, bool, bool]:
        """Decide and finish: (the canary, whether this process made the decision, whether it closed it)."""
        _, won = self.canaries.claim(canary.release_id, to, reason, evidence)
        done, closed = self.finish_report(canary.release_id)
        return done, won, closed

    def finish(self, release_id: str) -> Canary:
        """Complete a decided transition (steps 2-4 of the module docstring); safe to repeat."""
        return self.finish_report(release_id)[0]

    def finish_report(self, release_id: str) -> tuple[Canary, bool]:
        """`finish`, and whether this call closed the canary (False: it was open, or another
        process closed it first; read again under the lock, so of two ticks only one says True)."""
        canary = self.canaries.get(release_id)
        if canary is None:
            raise NoCanary(f"release {release_id} is not a canary")
        if canary.state in (CanaryState.OPEN, CanaryState.PROMOTED, CanaryState.ROLLED_BACK):
            return canary, False
        with self._locked():  # two ticks finishing one canary write its line once
            canary = self.canaries.get(release_id)
            assert canary is not None
            if canary.state is not CanaryState.PROMOTING and canary.state is not CanaryState.ROLLING_BACK:
                return canary, False  # another process closed it while this one waited for the lock
            promoting = canary.state is CanaryState.PROMOTING
            self._log_once(canary, "promote" if promoting else "rollback")
            if not promoting:
                restore_after_abandon(self.store, self.repo, self.store.release(release_id), declined=True)
            return self.canaries.close(release_id), True

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """An exclusive flock on runs/canary.lock (the kernel drops it when a holder dies)."""
        with exclusive(self.ws.runs_dir / LOCK_FILE, "the canary lock "):
            yield

    def _log_once(self, canary: Canary, transition: str) -> None:
        for line in read_jsonl(self.ws.evaluations_log):
            if line.get("kind") == TRANSITION_KIND and line.get("release_id") == canary.release_id \
                    and line.get("transition") == transition:
                return
        release = self.store.release(canary.release_id)
        append_jsonl(self.ws.evaluations_log, {
            "kind": TRANSITION_KIND, "transition": transition, "release_id": canary.release_id,
            "skill": canary.skill_name, "version": release.version, "live_release_id": canary.live_release_id,
            "share": canary.share, "reason": canary.reason, "evidence": canary.decision}, durable=True)

    # ---- the cron job --------------------------------------------------------------------
    def tick(self) -> list[TickResult]:
        """Finish every decided canary, then judge every open one and act on its verdict.
        Idempotent: a second tick with no new events changes nothing."""
        results = []
        for canary in self.canaries.unfinished():
            if canary.state is not CanaryState.OPEN:
                done, closed = self.finish_report(canary.release_id)
                results.append(TickResult(done, None, "promoted" if done.state is CanaryState.PROMOTED
                                          else "rolled back", already=not closed))
                continue
            comparison = self.comparison(canary)
            verdict = self.verdict(canary, comparison)
            evidence = {"verdict": verdict.model_dump(mode="json"), "comparison": comparison.model_dump(mode="json"),
                        "by": "canary tick"}
            reason = "; ".join(verdict.reasons)
            if verdict.action is CanaryAction.HOLD:
                results.append(TickResult(canary, verdict, "held"))
                continue
            to = CanaryState.PROMOTING if verdict.action is CanaryAction.PROMOTE else CanaryState.ROLLING_BACK
            try:
                done, ours, closed = self._claim(canary, to, reason, evidence)
            except (ReleaseStateError, NoCanary):  # another tick (or a person) came first: finish what it decided
                (done, closed), ours = self.finish_report(canary.release_id), False
            if not ours:  # another's decision: its reason is the canary's, not this verdict's
                verdict = None
            what = "promoted" if done.state is CanaryState.PROMOTED else \
                "reaped" if verdict is not None and verdict.reaped else "rolled back"
            results.append(TickResult(done, verdict, what, already=not ours and not closed))
        return results


__all__ = ["TRANSITION_KIND", "CanaryDriver", "TickResult"]
