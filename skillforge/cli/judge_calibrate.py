"""`skillforge judge calibrate`: the configured judge re-judges the golden pairs (evaluation_sets/golden/)
in both orders, K times, and is measured against the person per dimension; the record is appended to
runs/judge_calibration.jsonl under the judge's fingerprint. `skillforge judge status`: the configured
judge's fingerprint and whether a calibration applies to it (stale: what changed since).
The driver is calibration/calibrate.py; the statistics are rules/calibration.py's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from skillforge.cli.budget import EXIT_BUDGET, BudgetCallsOpt, BudgetTokensOpt, budget_caps, spend_line
from skillforge.cli.common import JsonOpt, WorkspaceOpt, err, nonempty_path, out, print_json
from skillforge.cli.output import json_safe, plain
from skillforge.config import Workspace

if TYPE_CHECKING:
    from skillforge.state.calibration import CalibrationRecord, DimensionCalibration

GoldenOpt = Annotated[list[Path] | None, typer.Option(
    "--golden", parser=nonempty_path, metavar="FILE",
    help="A golden labels file (repeatable; default: every evaluation_sets/golden/*.jsonl).")]
RepeatsOpt = Annotated[int, typer.Option("--repeats", help="Judge each pair this many times in each order.")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Ask the judge every time, the first repeat too "
                                                             "(default: the first may come from the cache).")]
RECALIBRATE = "skillforge judge calibrate"
EXIT_PROBLEMS = 1
"""docs/cli.md "Exit codes": the command ran and found problems (here: a dimension with no usable judgement)."""


def _interval(ci: tuple[float, float] | None) -> str:
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci is not None else ""


def _row(d: DimensionCalibration) -> list[str]:
    if d.judgements == 0:  # nothing was measured: 0.00 would read as measured disagreement
        return [d.dimension, str(d.pairs), "not measured", "not measured", "n/a", "n/a", "n/a",
                f"{d.invalid} of {d.invalid}", d.status.value.upper()]
    bias = "n/a" if d.position_bias is None else f"{d.position_bias:.2f} {_interval(d.position_bias_ci)}"
    return [d.dimension, str(d.pairs), f"{d.agreement:.2f} {_interval(d.agreement_ci)}",
            f"{d.kappa:.2f} {_interval(d.kappa_ci)}", bias, f"{d.flip_rate_orders:.2f}", f"{d.flip_rate_repeats:.2f}",
            str(d.invalid), d.status.value.upper()]


def unusable_lines(record: CalibrationRecord) -> list[str]:
    """A warning when the judge gave no usable judgement on a dimension (every one failed: a judge
    that answers garbage or not at all): its agreement and κ are not measured, and it stays reported."""
    dead = [d for d in record.dimensions.values() if d.judgements == 0]
    if not dead:
        return []
    counts = sorted({d.invalid for d in dead})
    n = f"{counts[0]} of {counts[0]}" if len(counts) == 1 else "all"
    where = "every dimension" if len(dead) == len(record.dimensions) else ", ".join(d.dimension for d in dead)
    return [f"warning: the judge answered nothing usable on {where}: {n} judgements invalid (an error, no "
            f"answer or not the rubric's form); agreement and kappa are not measured, so {where} stays "
            "REPORTED (never a WIN or a veto). Check the judge with `skillforge llm status`"]


def dimensions_table(record: CalibrationRecord) -> Table:
    table = Table("dimension", "pairs", "agreement [95% CI]", "kappa [95% CI]", "position bias", "flip orders",
                  "flip repeats", "invalid", "status")
    for d in record.dimensions.values():
        table.add_row(*map(plain, _row(d)))
    return table


def self_preference_lines(record: CalibrationRecord) -> list[str]:
    return [f"warning: the judge ({record.model} at {record.endpoint}) is also the {role}'s model: it may prefer "
            f"{'its own answers' if role == 'executor' else 'its own proposals'} (self-preference); "
            "set SKILLFORGE_JUDGE_MODEL to another model"
            for role, same in record.self_preference.items() if same]


def calibrate(golden: GoldenOpt = None, repeats: RepeatsOpt = 3,
              no_cache: NoCacheOpt = False,
              as_json: JsonOpt = False, budget_calls: BudgetCallsOpt = None, budget_tokens: BudgetTokensOpt = None,
              workspace: WorkspaceOpt = None) -> None:
    """Measure the configured judge against the golden labels: agreement, Cohen's kappa, position bias
    and flip rates per dimension, recorded for this judge's fingerprint. Never runs the executor."""
    from skillforge.calibration.calibrate import CalibrationStopped
    from skillforge.calibration.calibrate import calibrate as run

    ws = Workspace.open(workspace)
    caps = budget_caps(budget_calls, budget_tokens)

    def progress(done: int, total: int) -> None:
        if not as_json or err.is_terminal:
            err.print(f"pair {done} of {total} judged", highlight=False)

    try:
        record = run(ws, golden=golden or (), repeats=repeats, caps=caps, no_cache=no_cache, progress=progress,
                     say=lambda line: err.print(plain(line), soft_wrap=True))
    except CalibrationStopped as e:
        if as_json:
            typer.echo(json_safe(json.dumps({"status": "BUDGET", "reason": str(e), "budget": e.spend},
                                            ensure_ascii=False)))
        else:
            out.print(plain(f"BUDGET  {e}"), soft_wrap=True)
            out.print(plain(f"  {spend_line(e.spend, e.spend.get('caps'))}"), soft_wrap=True)  # type: ignore[arg-type]
        raise typer.Exit(EXIT_BUDGET) from None
    if as_json:
        print_json(record.model_dump(mode="json"))
        if unusable_lines(record):
            raise typer.Exit(EXIT_PROBLEMS)
        return
    out.print(plain(f"judge {record.model} at {record.endpoint}: fingerprint {record.fingerprint}"), soft_wrap=True)
    out.print(plain(f"{record.pairs} golden pairs x 2 orders x {record.repeats} repeats, {record.requests} judge "
                    f"requests; golden: {', '.join(record.golden)}"), soft_wrap=True)
    out.print(dimensions_table(record))
    for line in self_preference_lines(record):
        out.print(plain(line), soft_wrap=True)
    out.print(plain("gated: may WIN and veto; reported: measured and shown, never a WIN or a veto. "
                    "Recorded in runs/judge_calibration.jsonl"), soft_wrap=True)
    for line in unusable_lines(record):
        out.print(plain(line), soft_wrap=True)
    if unusable_lines(record):
        raise typer.Exit(EXIT_PROBLEMS)


def status(as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """The configured judge's fingerprint and whether a calibration record applies to it."""
    from skillforge.calibration.records import judge_status

    st = judge_status(Workspace.open(workspace))
    since = st.previous.created_at if st.previous is not None else None
    if as_json:
        print_json({"state": st.state, "configured": st.configured, "model": st.model, "endpoint": st.endpoint,
                    "fingerprint": st.fingerprint, "prompt_sha": st.prompt_sha, "rubric_sha": st.rubric_sha,
                    "since": since, "changes": st.changes,
                    "statuses": {d: s.value for d, s in st.statuses.items()},
                    "record": st.record.model_dump(mode="json") if st.record is not None else None})
        return
    judge = (f"judge {st.model} at {st.endpoint}" if st.configured
             else "judge: not configured (set SKILLFORGE_JUDGE_MODEL and SKILLFORGE_JUDGE_BASE_URL)")
    out.print(plain(f"{judge}: fingerprint {st.fingerprint}"), soft_wrap=True)
    if st.record is not None:
        out.print(plain(f"calibrated on {st.record.created_at}: {st.record.pairs} golden pairs x "
                        f"{st.record.repeats} repeats"), soft_wrap=True)
        out.print(dimensions_table(st.record))
        for line in (*self_preference_lines(st.record), *unusable_lines(st.record)):
            out.print(plain(line), soft_wrap=True)
        return
    if st.state == "stale":
        out.print(plain(f"stale: the judge changed since {since} ({'; '.join(st.changes)}); the judged dimensions "
                        f"are uncalibrated until `{RECALIBRATE}` runs again"), soft_wrap=True)
    else:
        out.print(plain(f"uncalibrated: no calibration record; label pairs with `skillforge judge label RUN`, "
                        f"then run `{RECALIBRATE}`"), soft_wrap=True)


__all__ = ["calibrate", "status"]
