"""`skillforge canary status|tick|promote|rollback`: how a canary compares with the live release,
the cron job that acts on the rules, and the same transitions by hand. The work is in
library/canary.py (signals, transitions) and rules/canary.py (the decisions)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from skillforge.cli import interrupt
from skillforge.cli.common import JsonOpt, WorkspaceOpt, err, out, print_json, services
from skillforge.cli.output import plain

if TYPE_CHECKING:  # the statistics (numpy) and the models are imported by the commands that use them
    from skillforge.state.canary import Canary, CanaryVerdict, Comparison

canary_app = typer.Typer(no_args_is_help=True, help="Canary rollouts: status, tick (cron), promote, rollback.")
ReasonOpt = Annotated[str | None, typer.Option("--reason", help="Why (kept with the transition).")]


def _canary_json(c: Canary) -> dict[str, object]:
    return c.model_dump(mode="json", exclude={"decision"})


@canary_app.command("status")
def status(name: str, workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """Canary against live: sessions, each rate with its difference, CI and test, the MDE and the
    sessions still needed, and what `canary tick` would do now."""
    from skillforge.rules.canary import age_text, shown_share
    from skillforge.rules.paired import ALPHA

    svc = services(workspace)
    driver = svc.canary
    canary = driver.open_canary(name)
    comparison = driver.comparison(canary)
    verdict = driver.verdict(canary, comparison)
    age = driver.canaries.age_hours(canary)
    if as_json:
        print_json({"canary": _canary_json(canary), "age_hours": round(age, 3), "alpha": ALPHA,
                    "comparison": comparison.model_dump(mode="json"), "verdict": verdict.model_dump(mode="json")})
        return
    rel = svc.store.release(canary.release_id)
    live = svc.store.release(canary.live_release_id)
    out.print(plain(f"{name}: canary {rel.version} ({canary.release_id[:8]}, {shown_share(canary.share)} of sessions, "
                    f"{canary.state.value}, {age_text(age, canary.max_age_hours)} old) against live {live.version} ({live.release_id[:8]})"))
    _show(comparison, verdict, canary)


def _show(comparison: Comparison, verdict: CanaryVerdict, canary: Canary) -> None:
    from skillforge.rules.canary import mean_tokens, shown_p
    from skillforge.rules.paired import ALPHA

    out.print(plain(f"sessions: canary {comparison.canary.sessions}, live {comparison.live.sessions} "
                    f"(minimum {canary.min_sessions} each); loads without a session id: {comparison.no_session_loads}"))
    table = Table("signal", "canary", "live", "diff", f"{1 - 2 * ALPHA:.0%} CI (any time)", "threshold", "p (Holm)", "MDE",
                  "more for MDE 2x")
    for r in comparison.rates:
        tokens = r.name == "tokens"  # shown in integer arithmetic: a float mean rounds big counts

        def shown(rate: float | None, events: int, n: int, tokens: bool = tokens) -> str:
            return "-" if rate is None or not n else f"{mean_tokens(events, n)} (n={n})" if tokens \
                else f"{rate:.3f} ({events}/{n})"
        diff = "-" if r.diff is None else f"{mean_tokens(r.canary_events, r.canary_n) - mean_tokens(r.live_events, r.live_n):+d}" \
            if tokens else f"{r.diff:+.3f}"
        table.add_row(*map(plain, (
            r.name, shown(r.canary_rate, r.canary_events, r.canary_n), shown(r.live_rate, r.live_events, r.live_n),
            diff, "-" if r.ci is None else f"[{r.ci[0]:+.3f}, {r.ci[1]:+.3f}]",
            f"{r.threshold:.0%}" if r.name == "tokens" else f"+{r.threshold:.3f}",
            "-" if r.p_value is None else f"{shown_p(r.p_value)} ({shown_p(r.p_adjusted)})",
            "-" if r.mde is None else f"{r.mde:.3f}", str(r.needed))))
    out.print(table)
    out.print(plain(f"tick would: {verdict.action.value}: " + "; ".join(verdict.reasons)), soft_wrap=True)


@canary_app.command("tick")
def tick(workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """Apply the rules to every canary: finish interrupted transitions, roll back, reap or promote.
    Idempotent; meant for cron (e.g. every 10 minutes)."""
    svc = services(workspace)
    with interrupt.deferred():
        results = svc.canary.tick()
    if as_json:
        print_json([{"canary": _canary_json(r.canary), "done": r.done, "already": r.already,
                     "verdict": r.verdict.model_dump(mode="json") if r.verdict else None} for r in results])
        return
    if not results:
        out.print(plain("no open canary"))
    for r in results:
        head = f"{r.canary.skill_name} {r.canary.release_id[:8]}"
        if r.already:  # another tick (or a person) decided and closed it: this one did nothing
            out.print(plain(f"{head}: already {r.done} by another tick or by hand; nothing left to do "
                            f"({r.canary.reason})"), soft_wrap=True)
            continue
        if r.verdict:
            why = "; ".join(r.verdict.reasons)
            line = why if r.done == "reaped" and why.startswith("reaped:") else f"{r.done}: {why}"  # said once
        else:
            line = (f"{r.done}: finished a transition decided earlier (by a process that was interrupted or "
                    f"another tick still at work): {r.canary.reason}")
        out.print(plain(f"{head}: {line}"), soft_wrap=True)
        if r.done in ("rolled back", "reaped"):
            _folder_after_rollback(r.canary.skill_name, workspace, r.canary)  # cron's log says it too


def _by_hand(name: str, workspace: WorkspaceOpt, promote: bool, reason: str | None, force: bool = False) -> Canary:
    from skillforge.errors import PublishRefused, ReleaseStateError
    from skillforge.state.canary import CanaryAction, CanaryState

    svc = services(workspace)
    driver = svc.canary
    canary = driver.open_canary(name)
    other = CanaryState.ROLLING_BACK if promote else CanaryState.PROMOTING
    if canary.state is other:  # decided the other way: only `canary tick` finishing it is left (QA 26 N14)
        doing = "rolled back" if other is CanaryState.ROLLING_BACK else "promoted"
        raise ReleaseStateError(f"the canary of '{name}' is being {doing} ({canary.reason}); nothing was changed; "
                                f"`skillforge canary tick` finishes that")
    comparison = driver.comparison(canary)
    verdict = driver.verdict(canary, comparison)
    # already PROMOTING: promoting by hand only finishes that decision, whatever the rules say now
    against = promote and canary.state is CanaryState.OPEN and verdict.action is CanaryAction.ROLLBACK
    if against and not force:
        raise PublishRefused(f"the rules say roll back the canary of '{name}' ({'; '.join(verdict.reasons)}); "
                             f"nothing was changed. `skillforge canary promote {name} --force` promotes it anyway "
                             "(recorded with this evidence)")
    if against:
        err.print(plain(f"warning: promoting {name} against the rules, which say roll back: "
                        + "; ".join(verdict.reasons)), soft_wrap=True)
    elif promote and canary.state is CanaryState.OPEN and verdict.action is not CanaryAction.PROMOTE:  # QA 34 F8
        err.print(plain(f"note: the rules would still hold the canary of {name} ({'; '.join(verdict.reasons)}); "
                        "promoted by hand on this evidence (recorded)"), soft_wrap=True)
    evidence = {"by": "hand", "verdict": verdict.model_dump(mode="json"), "comparison": comparison.model_dump(mode="json"),
                "against_the_rules": against}
    why = f"{'promoted' if promote else 'rolled back'} by hand" + (" with --force against a rollback verdict"
                                                                   if against else "") + (f": {reason}" if reason else "")
    with interrupt.deferred():
        return (driver.promote if promote else driver.rollback)(name, why, evidence)


def _answer(name: str, workspace: WorkspaceOpt, promote: bool, reason: str | None, as_json: bool,
            force: bool = False) -> None:
    done = _by_hand(name, workspace, promote, reason, force)
    if as_json:
        print_json(_canary_json(done))
    elif promote:
        out.print(plain(f"promoted: {name} now serves release {done.release_id} to every session"))
    else:
        out.print(plain(f"rolled back: {name} serves its live release {done.live_release_id} to every session"))
        _folder_after_rollback(name, workspace, done)


def _folder_after_rollback(name: str, workspace: WorkspaceOpt, done: Canary) -> None:
    """Say what the skill folder holds now: the live bytes again, or edits made since the canary
    (left alone; the declined bytes stay at its commit either way)."""
    from skillforge.errors import SkillForgeError
    from skillforge.skill.tree import read_tree

    svc = services(workspace)
    live, declined = svc.store.current(name), svc.store.release(done.release_id)
    if live is None or live.commit_hash is None:
        return
    try:
        same = read_tree(svc.repo.workdir / live.skill_path, check=False) == svc.repo.tree_at(live.commit_hash,
                                                                                              live.skill_path)
    except SkillForgeError:
        same = False
    kept = f"the declined bytes stay at commit {(declined.commit_hash or '')[:10]}"
    head = svc.repo.head()
    if same:
        out.print(plain(f"{live.skill_path} holds release {live.version} again ({kept})"))
        try:  # QA 49 F4: the user put the live bytes back by hand: the folder matches, git HEAD may not
            head_live = head is not None and svc.repo.tree_at(head, live.skill_path, missing_ok=True) == \
                svc.repo.tree_at(live.commit_hash, live.skill_path)
        except SkillForgeError:
            head_live = False
        if not head_live:
            err.print(plain(f"warning: git HEAD ({(head or '')[:10]}) does not hold release {live.version} of "
                            f"{live.skill_path} (the folder does): commit the folder, or a `git checkout -- .` or "
                            f"`git reset --hard` brings other bytes back"), soft_wrap=True)
        return
    back = shlex.join(["git", "-C", str(svc.repo.workdir), "checkout", live.commit_hash[:10], "--", live.skill_path])
    folder = svc.repo.workdir / live.skill_path
    if not folder.exists() and not folder.is_symlink():
        err.print(plain(f"warning: {live.skill_path} was deleted after the canary began; `skillforge release revert "
                        f"{name}` puts release {live.version} back in it (no new release; or {back})"), soft_wrap=True)
        return
    err.print(plain(f"warning: {live.skill_path} was edited after the canary began and is left as it is; it is not "
                    f"release {live.version} ({kept}{', which git HEAD is' if head == declined.commit_hash else ''}): publish the edits, put the live bytes back "
                    f"with `skillforge release revert {name} --force` (the edits saved under runs/backups/ first; no "
                    f"new release), or discard them by putting the live bytes back: {back} (a plain `git checkout` "
                    "gives the declined bytes)"),
              soft_wrap=True)


@canary_app.command("promote")
def promote(name: str, reason: ReasonOpt = None,
            force: Annotated[bool, typer.Option("--force", help="Promote even when the rules say roll back.")] = False,
            workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """Make the canary the live release now (recorded with the evidence). When the rules say roll
    back, it is refused unless --force (and then warned)."""
    _answer(name, workspace, True, reason, as_json, force)


@canary_app.command("rollback")
def rollback(name: str, reason: ReasonOpt = None, workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """End the canary now: every session gets the live release; the canary's release is DECLINED."""
    _answer(name, workspace, False, reason, as_json)
