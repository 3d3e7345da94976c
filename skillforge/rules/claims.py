"""Batch-claim rule: may a worker take this skill's run of a shared batch? Pure, no I/O.

A claim is held by a live worker exactly while that worker's database session holds the claim's
advisory lock; the database releases it when the session ends (the process died, or its machine
stopped answering TCP keepalives). A CLAIMED row whose lock is free is therefore stale."""

from __future__ import annotations

from enum import StrEnum

MAX_ATTEMPTS = 3
"""Claims of one run that ended with the worker dying; the next one gives up (the run itself, not
the worker, is then the likely cause: e.g. it runs the machine out of memory)."""


class ClaimStatus(StrEnum):
    PENDING = "PENDING"
    CLAIMED = "CLAIMED"
    DONE = "DONE"


class ClaimDecision(StrEnum):
    SKIP = "SKIP"          # done, or a live worker holds it
    CLAIM = "CLAIM"        # never claimed: start (or resume) it
    RECLAIM = "RECLAIM"    # its worker died: resume it from its checkpoint
    GIVE_UP = "GIVE_UP"    # workers died on it MAX_ATTEMPTS times: mark it done, FAILED


def claim_decision(status: ClaimStatus, lock_free: bool, attempts: int) -> ClaimDecision:
    """What a worker does with one row: `lock_free` says that no live session holds its lock,
    `attempts` how many claims it had so far."""
    if status is ClaimStatus.DONE or not lock_free:
        return ClaimDecision.SKIP
    if attempts >= MAX_ATTEMPTS:
        return ClaimDecision.GIVE_UP
    return ClaimDecision.CLAIM if status is ClaimStatus.PENDING else ClaimDecision.RECLAIM
