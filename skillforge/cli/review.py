"""`skillforge review`: list the runs that wait for a person, show one (its candidate against the
run's base and against the live release), and answer it once: approve, reject or rebase.

Exit codes of the answers follow the run's status, as for `evolve` (0 published or waiting again,
3 rejected or nothing improved, 4 paused or unfinished, 5 failed); a refusal is 2: the base moved,
a name is taken, unpublished edits, the run is not waiting, or it was already answered otherwise.
The same answer again is not a refusal: it reports the run (with who answered, and when).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from skillforge.cli.common import WorkspaceOpt, login_name, pasteable
from skillforge.cli.evolve import EXIT, JsonOpt, err, out, print_one_json, score_line, show_summary
from skillforge.cli.output import plain, styled
from skillforge.config import Workspace
from skillforge.errors import SkillForgeError

review_app = typer.Typer(no_args_is_help=True, help="Answer L2 reviews: list, show, approve, reject, rebase.")
CommentOpt = Annotated[str, typer.Option(help="Why (kept with the answer).")]


def _release(rel: object) -> str:
    if not isinstance(rel, dict):
        return "unknown"
    return f"{rel['version']} (release {str(rel['release_id'])[:8]})"


def _lines(text: object) -> list[Text]:
    """`text` cut at newlines only (a bare CR stays inside its line, where it is shown as \\x0d)."""
    return [plain(line) for line in str(text).rstrip("\n").split("\n")] if text else []


def render_review(view: dict[str, object]) -> list[Text]:
    """The lines of `review show`: every piece of model or user text printed literally, with its
    control characters shown as escapes (a line cannot hide itself or repaint the terminal)."""
    run = view["run_id"]
    kind, target, skill = view["kind"], view["target"], view["skill"]
    step = view.get("next") if isinstance(view.get("next"), dict) else {}
    lines = [styled((f"{skill}", "bold"), f": candidate {view['candidate']} of run {run}, {kind} at L{view['level']}")]
    if kind != "FIX":
        lines.append(styled(("new skill ", "bold"), (target, "bold"), f" ({kind} of {skill}): it replaces no release"))
    elif view.get("retired") and view["live"] is None:
        lines.append(styled(f"base: {_release(view['base'])}   live: none, ", (f"{skill} is RETIRED", "bold")))
    else:
        lines.append(styled(f"base: {_release(view['base'])}   live: {_release(view['live'])}"))
    if kind == "FIX" and view.get("retired") and view["live"] is None:
        lines.append(styled((f"warning: {skill} is RETIRED", "bold red"),
                            f": it has no live release, so approving is refused and the candidate cannot be "
                            f"re-applied on one. This run can only be rejected (skillforge review reject {run}), "
                            f"or the skill brought back first (skillforge release revert {skill})."))
    elif view["base_moved"] and view["base"] is None:
        lines.append(styled(("warning: this run did not record its base", "bold red"),
                            f": approving is refused. Reject it (skillforge review reject {run}) and start a new run."))
    elif view["base_moved"] and "review rebase" not in str(step.get("then", "review rebase")):
        lines.append(styled(("warning: ", "bold red"), (str(step["warning"]), "bold red"),
                            f": {_release(view['live'])} is live, not the run's base {_release(view['base'])}. "
                            f"Next: {step['then']}."))
    elif view["base_moved"]:
        lines.append(styled(("warning: the base moved", "bold red"),
                            f": {_release(view['live'])} is live, not the run's base {_release(view['base'])}. "
                            f"Approving is refused; `skillforge review rebase {run}` re-applies the candidate on it "
                            "and validates it again."))
    lines.append(styled(("rationale: ", "bold"), str(view["rationale"])))
    for name, score in dict(view["scores"]).items():  # type: ignore[call-overload]
        lines.append(styled(f"  {score_line(name, score)}"))
    if view.get("audit_warning"):
        lines.append(styled(("warning: ", "bold red"), str(view["audit_warning"])))
    for note in view.get("notes") or []:  # type: ignore[union-attr]
        lines.append(styled("  note: ", str(note)))
    if view.get("new_file") is not None:
        lines.append(styled(("the whole new file, ", "bold"), f"{target}/SKILL.md:"))
        lines += _lines(view["new_file"])
    else:
        lines.append(styled(("diff against the base ", "bold"), _release(view["base"]), ":"))
        lines += _lines(view["diff"])
    if view.get("live_diff"):
        lines.append(styled(("diff against the live release ", "bold"), _release(view["live"]),
                            " (its lines marked - are what approving would undo):"))
        lines += _lines(view["live_diff"])
    if step.get("then"):
        lines.append(styled(("next: ", "bold"), pasteable(str(step["then"]))))
    return lines


@review_app.command("list")
def review_list(as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Runs waiting for a person."""
    from skillforge.runners.reader import RunReader

    reader = RunReader(Workspace.open(workspace))
    rows = [r for r in reader.rows() if r["status"] == "PENDING_REVIEW"]
    if as_json:
        print_one_json([{k: r[k] for k in ("run_id", "skill", "started_at")} for r in rows])
        if not rows and reader.elsewhere:
            err.print(plain(f"no run waits for a review in {reader.where}{reader.elsewhere}"), soft_wrap=True)
        return
    for r in rows:
        out.print(plain(pasteable(f"{r['run_id']}  {r['skill']}  (skillforge review show {r['run_id']})")), soft_wrap=True)
    if not rows:
        out.print(plain(f"no run waits for a review{f' in {reader.where}{reader.elsewhere}' if reader.elsewhere else ''}"),
                  soft_wrap=True)


@review_app.command("show")
def review_show(run_id: Annotated[str, typer.Argument(help="The run id.")], as_json: JsonOpt = False,
                workspace: WorkspaceOpt = None) -> None:
    """The pending candidate: target, level, rationale, scores, its diff against the run's base and,
    when another release went live since, against that one too (a new skill: its whole file)."""
    from skillforge.runners.reader import RunReader, interrupt_kind
    from skillforge.evolution.review import review_view
    from skillforge.runners.review_step import audit_line, review_step

    ws = Workspace.open(workspace)
    state, pending = RunReader(ws).read(run_id)
    if interrupt_kind(pending) != "review":
        raise SkillForgeError(f"run {run_id} is not waiting for a review "
                              f"(status {RunReader(ws).summary(run_id)['status']})")
    view = review_view(ws, state, str(dict(pending or {}).get("report", "")))
    step = review_step(ws, state)
    view |= {"next": {"warning": step.warning, "then": step.then}, "audit_warning": audit_line(state)}
    if as_json:
        print_one_json(view)
        return
    for line in render_review(view):
        out.print(line, soft_wrap=True)


def _answer(run_id: str, action: str, comment: str, as_json: bool, workspace: Path | None,
            force: bool = False) -> None:
    from skillforge.cli.evolve import progress_of, require_models
    from skillforge.runners.interrupt import stopping
    from skillforge.runners.evolve import Runner

    ws = Workspace.open(workspace)
    if action == "rebase":
        require_models(ws)  # the rebased candidate is validated again
    progress, advance = progress_of(f"{action} {run_id}")
    with progress, stopping(lambda: None, f"skillforge review show {run_id}"):  # Ctrl-C says where it stands
        summary = Runner(ws).answer_review(run_id, action, comment=comment, reviewer=login_name(), force=force,
                                           on_update=advance)
    if summary.get("already_answered"):
        err.print(plain(str(summary["already_answered"])), soft_wrap=True)
    show_summary(summary, as_json)
    raise typer.Exit(EXIT.get(str(summary["status"]), 5))


@review_app.command("approve")
def review_approve(run_id: Annotated[str, typer.Argument(help="The run id.")], comment: CommentOpt = "",
                   force: Annotated[bool, typer.Option("--force", help="Save unpublished edits in the skill folder "
                                                       "under runs/backups/, then publish.")] = False,
                   as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Publish the pending candidate (through the release state machine); refused when its base is
    no longer the live release (see `review rebase`)."""
    _answer(run_id, "approve", comment, as_json, workspace, force)


@review_app.command("reject")
def review_reject(run_id: Annotated[str, typer.Argument(help="The run id.")], comment: CommentOpt = "",
                  as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Publish nothing; archive the candidate with the comment in runs/failures/<run>.md (exit 3: REJECTED)."""
    _answer(run_id, "reject", comment, as_json, workspace)


@review_app.command("rebase")
def review_rebase(run_id: Annotated[str, typer.Argument(help="The run id.")], comment: CommentOpt = "",
                  as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Re-apply the candidate on the release live now (a three-way merge), then check and validate
    it again against that release; it waits for review again (or ends NO_IMPROVEMENT)."""
    _answer(run_id, "rebase", comment, as_json, workspace)


__all__ = ["render_review", "review_app"]
