"""Which release `release revert SKILL RELEASE` restores, or why none can be: a version that only
DECLINED canaries (or ABANDONED publishes) carry was never published, so it is refused as such,
listing the versions that can be restored, not as an ambiguous id."""

from __future__ import annotations

from skillforge.errors import ReleaseStateError
from skillforge.library.store import Store
from skillforge.state.release import Release, ReleaseStatus

_WHY = {ReleaseStatus.DECLINED: "DECLINED (a canary rolled back: never published)",
        ReleaseStatus.ABANDONED: "ABANDONED (a publish that did not finish: never published)",
        ReleaseStatus.PREPARING: "PREPARING (not published yet)"}


def restorable(store: Store, skill: str) -> list[Release]:
    """The PUBLISHED releases of `skill` that `release revert` could make current, oldest first
    (not the live one: it already serves its bytes)."""
    current = store.current(skill)
    return [r for r in store.releases(skill) if r.status is ReleaseStatus.PUBLISHED and r.commit_hash
            and (current is None or r.release_id != current.release_id)]


def not_restorable(store: Store, skill: str, asked: str, named: list[Release]) -> ReleaseStateError:
    """The refusal for `asked`, which names only the unpublished releases `named`: their status,
    and the versions that can be restored instead."""
    ids = ", ".join(r.release_id[:8] for r in named[:10]) + (f" and {len(named) - 10} more" if len(named) > 10 else "")
    statuses = sorted({r.status for r in named})
    what = " / ".join(_WHY.get(s, s.value) for s in statuses)
    given = f"version {asked}" if all(r.version == asked for r in named) else f"release {asked}"
    options = restorable(store, skill)
    if options:
        way = "restorable: " + ", ".join(f"{r.version} (release {r.release_id[:8]})" for r in options[-10:])
    else:
        current = store.current(skill)
        way = (f"no other release of '{skill}' was ever published"
               + (f" ({current.version}, release {current.release_id[:8]}, is live)" if current else ""))
    its = ("it is" if given.startswith("release") else f"its release {ids} is") if len(named) == 1 else \
        f"its {len(named)} releases ({ids}) are"  # a release named by its id is not named again
    return ReleaseStateError(f"{given} of '{skill}' cannot be restored: {its} {what}, and only PUBLISHED releases "
                             f"can be restored; {way}")


def revert_target(store: Store, skill: str, asked: str) -> Release:
    """The PUBLISHED release `asked` (id, version or id prefix) names, as Store.find_release finds
    it; ReleaseStateError (`not_restorable`) when it names only releases that were never published,
    however many share that version."""
    exact = [r for r in store.releases(skill) if asked in (r.version, r.release_id)]
    if exact and not any(r.status is ReleaseStatus.PUBLISHED for r in exact):
        raise not_restorable(store, skill, asked, exact)
    target = store.find_release(skill, asked)  # UnknownRelease, AmbiguousRelease for a short or shared prefix
    if target.status is not ReleaseStatus.PUBLISHED or target.commit_hash is None:
        raise not_restorable(store, skill, asked, [target])
    return target


__all__ = ["not_restorable", "restorable", "revert_target"]
