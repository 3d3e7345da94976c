"""What a person can do next with a run waiting for review (pure): the warning `review show` and
the run summary print, and the one command that can work, so no message advises an answer that is
known to be refused.

- **The base is live** (or the candidate is a new skill): approve (or reject).
- **The base moved** and the candidate re-applies on the live release: `review rebase`; approving
  is refused. When the re-application is refused (`rebase_refusal`: lines both changed, the merge is
  no longer a skill), neither works: reject, and start a new run on the live release.
- **The skill is RETIRED** (no live release): reject, or bring it back with `release revert` first.
- **No base recorded:** reject, and start a new run.

And the final_audit of an L2 candidate (`audit_warning`): it does not decide the release (docs/
safety.md: an L2 change waits for a person after a final_audit run); when its point estimate on the
run's primary endpoint goes down (more cases lost than won, or a lower score than the live
release), the person is told so before answering.
"""

from __future__ import annotations

from dataclasses import dataclass

from skillforge.rules.review import BaseVerdict
from skillforge.rules.selection import estimate_of
from skillforge.state.evolve import SetScore


@dataclass(frozen=True)
class ReviewNext:
    warning: str
    """"" when nothing stands in the way of approving."""
    then: str
    """The command(s) to run next, as one line."""
    rebase: bool = False
    """`then` is a rebase: the candidate can be re-applied on the live release."""


def review_next(run_id: str, skill: str, *, fix: bool, base: BaseVerdict, retired: bool,
                rebase_refusal: str | None = None) -> ReviewNext:
    """The warning and the next command of run `run_id` of `skill` waiting for review; `fix`: the
    candidate replaces `skill`'s release (not a new skill); `base`: its base against the live release."""
    reject = f"skillforge review reject {run_id}"
    if not fix or base is BaseVerdict.CURRENT:
        return ReviewNext("", f"skillforge review approve {run_id} --comment \"...\"  (or: review reject {run_id})")
    if base is BaseVerdict.GONE and retired:
        return ReviewNext(f"{skill} is RETIRED: it has no live release, so approving and rebasing are refused",
                          f"{reject}, or bring the skill back first: skillforge release revert {skill}")
    if base is BaseVerdict.GONE:
        return ReviewNext(f"{skill} has no live release: approving and rebasing are refused",
                          f"{reject}")
    if base is BaseVerdict.UNKNOWN:
        return ReviewNext("this run did not record its base: approving is refused",
                          f"{reject}, and start a new run (skillforge evolve {skill})")
    if rebase_refusal:
        return ReviewNext(f"the base moved, and the candidate cannot be re-applied on the live release "
                          f"({rebase_refusal.split(':', 1)[0]}): approving and rebasing are both refused",
                          f"{reject}, and start a new run on the live release (skillforge evolve {skill})")
    return ReviewNext("the base moved: approving is refused",
                      f"skillforge review rebase {run_id}  (re-applies the candidate on the live release and "
                      f"validates it again; or: review reject {run_id})", rebase=True)


def audit_warning(audit: SetScore | None) -> str:
    """A line saying final_audit's point estimate goes down (on the run's primary endpoint: more
    cases lost than won, or a lower score / negative mean delta than the live release), else ""."""
    if audit is None:
        return ""
    endpoint, wins, losses, ties, gain, shown = estimate_of(audit)
    if wins is None or losses is None:
        return ""
    if not (losses > wins or (gain is not None and gain < 0)):
        return ""
    tie = f" / {ties} tie(s)" if ties is not None else ""
    return (f"final_audit goes down on {endpoint}: {wins} win(s) / {losses} loss(es){tie} of {audit.cases} "
            f"case(s){', ' + shown if shown else ''}. final_audit does not decide the release: weigh it "
            "before approving")


__all__ = ["ReviewNext", "audit_warning", "review_next"]
