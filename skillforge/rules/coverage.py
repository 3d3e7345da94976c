"""How much of a stored run a rejudge may stand on (pure). `evaluate --rejudge` judges the case
outputs a run stored; lines can be lost (deleted, torn, overwritten with something that is not a
case). A verdict on fewer cases than the run had is said to be partial, with the count and the
missing case ids; below MIN_REJUDGE_SHARE of the run's cases it is refused: what is left is
another, smaller evaluation, not the run's."""

from __future__ import annotations

MIN_REJUDGE_SHARE = 0.5
"""A rejudge needs at least this share of the stored run's cases."""


def rejudge_coverage(run: str, usable: int, total: int | None, missing: list[str]) -> tuple[str, str]:
    """(why the rejudge is refused, the note its verdict carries); each "" when not applicable.
    `total` None: the run's case list was not recorded (a run from before it was): said, not refused."""
    if total is None:
        return "", (f"partial?: {usable} stored case(s) usable; run {run} did not record its case list, so "
                    "missing ones cannot be told")
    if usable >= total:
        return "", ""
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    said = f"{usable} of {total} stored cases usable (missing or unreadable: {shown})"
    if usable < MIN_REJUDGE_SHARE * total:
        return (f"only {said}: a rejudge needs at least {MIN_REJUDGE_SHARE:.0%} of the run's cases; "
                f"evaluate again instead"), ""
    return "", f"partial: {said}; the verdict is on those cases only"


__all__ = ["MIN_REJUDGE_SHARE", "rejudge_coverage"]
