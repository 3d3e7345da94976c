"""`route calibrate` / `route fit`: compare the new router with the one in use before replacing it
(routing.compare); a clearly worse one is refused unless `--force`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

ForceOpt = Annotated[bool, typer.Option(
    "--force", help="Replace the router in use even when the new one is clearly worse on your labelled queries, or they name under half the skills.")]


def measure_current(workspace: Path | None, ctx, labelled: Sequence) -> object:  # noqa: ANN001 - a RouteContext; a Current
    """The router in use and its right decisions on `labelled` (None when it saw labelled queries).
    `ctx`: the calibration's context (built without the auto head)."""
    from skillforge.cli.route import _context
    from skillforge.routing.compare import Current, current_rate, describe, unfair_reason

    reason = unfair_reason(ctx.index)
    if reason is not None:
        return Current(describe(ctx.index), None, reason)
    _, now = _context(workspace, use_llm=False)  # what `route` reads now: the auto head, if any
    return Current(describe(now.index), current_rate(now.index, labelled))


def guard(current, th, force: bool, *, refuse: bool = True) -> None:  # noqa: ANN001 - a Current and RouteThresholds
    """Print the comparison; WorseThanCurrent (nothing written) when the new router is clearly worse.
    `refuse` False (`route fit`): a warning only. A fit's out-of-fold figure comes from heads trained
    on 4/5 of the labelled queries and is pessimistic: on QA28's 190 skills it was 0.833 in-scope
    against the auto head's 0.876 on the same cases, yet the head fitted on all of them answered 0.977
    of 2 850 other queries right against the auto head's 0.923."""
    from skillforge.routing.compare import WorseThanCurrent, judge

    line, rep = judge(current, th)
    typer.echo(line, err=True)
    if rep is None or not rep.worse:
        return
    if not refuse:
        typer.echo(f"warning: on these figures the new head looks worse than {current.name}, but a fit's out-of-fold "
                   "figure understates the head fitted on all of them: it is saved; check it with `skillforge route eval` on "
                   "queries it was not fitted on, and `skillforge route reset --yes` returns to the auto head", err=True)
        return
    if force:
        typer.echo(f"--force: replacing {current.name} with the clearly worse new router", err=True)
        return
    raise WorseThanCurrent(
        f"the new {th.scorer.value} router is clearly worse than {current.name} on your labelled queries "
        f"(held out {rep.new.hits}/{rep.new.n} right against {rep.current.hits}/{rep.current.n}): kept {current.name}, "
        "nothing written. More labelled queries may make a better one; `--force` replaces it anyway")


def check_coverage(current, labelled: Sequence, skills: Sequence[str], force: bool) -> None:  # noqa: ANN001 - a Current
    """FewSkillsNamed (nothing written) when the router in use is an auto router and the labelled
    in-scope cases name fewer than half the skills (routing.compare.coverage_gap); `--force` goes on."""
    from skillforge.routing.compare import FewSkillsNamed, coverage_gap

    if current.rate is None:  # a calibrated router in use: nothing is compared anyway
        return
    named = len({c.expected for c in labelled if c.expected is not None} & set(skills))
    gap = coverage_gap(current.name, named, len(skills))
    if gap is None:
        return
    if not force:
        raise FewSkillsNamed(gap)
    typer.echo(f"--force: replacing {current.name} though your cases name {named} of {len(skills)} skills", err=True)


def share_option(value: str) -> float:
    """`--min-reject`'s parser: a finite share from 0 to 1, each wrong value told what is wrong with
    it (nan was refused as "should be less than or equal to 1")."""
    import math

    try:
        share = float(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a number: give a share from 0 to 1, e.g. 0.8") from None
    if math.isnan(share):
        raise typer.BadParameter(f"{value!r} is not a number: give a share from 0 to 1, e.g. 0.8")
    if not 0.0 <= share <= 1.0:
        raise typer.BadParameter(f"{value} must be between 0 and 1 (the share of NONE queries to leave unanswered, "
                                 "e.g. 0.8)")
    return share
