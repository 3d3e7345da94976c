"""Semantic versions of releases: pure parsing, ordering and the next-version rule."""

from __future__ import annotations

import re

SEMVER_RE = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")
FIRST_VERSION = "0.1.0"
MAX_VERSION_CHARS = 128
"""Longer is not taken for semver: `int()` of a 5 000-digit part raised (an internal error, and one
such metadata.version aborted a whole import)."""


def shown_version(text: str) -> str:
    """`text` for a message: its first 40 characters and its length when it is longer."""
    return text if len(text) <= 40 else f"{text[:40]}… ({len(text)} characters)"


def parse_semver(text: str) -> tuple[int, int, int, tuple[tuple[int, int | str], ...]] | None:
    """A sortable key, or None if `text` is not semver. A pre-release sorts before its release."""
    m = SEMVER_RE.match(text.strip()) if isinstance(text, str) and len(text) <= MAX_VERSION_CHARS else None
    if m is None:
        return None
    pre = m.group(4)
    # (1,) sorts after any (0, ...) tuple: a release outranks its pre-releases.
    pre_key: tuple[tuple[int, int | str], ...] = (
        tuple((0, int(p)) if p.isdigit() else (1, p) for p in pre.split(".")) if pre else ((2, 0),)
    )
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), pre_key


def is_semver(text: str) -> bool:
    return parse_semver(text) is not None


def bump_patch(version: str) -> str:
    key = parse_semver(version)
    if key is None:
        return FIRST_VERSION
    major, minor, patch, pre = key
    if pre != ((2, 0),):  # 1.2.0-rc.1 -> 1.2.0
        return f"{major}.{minor}.{patch}"
    return f"{major}.{minor}.{patch + 1}"


def highest(versions: list[str]) -> str | None:
    """The highest semver of `versions` by semver order (1.10.0 above 1.9.0, 1.3.0 above
    1.3.0-rc1), or None if none is semver."""
    keyed = [(k, v) for v, k in ((v, parse_semver(v)) for v in versions) if k is not None]
    return max(keyed, key=lambda kv: kv[0])[1] if keyed else None


def next_version(taken: list[str], proposed: str | None) -> str:
    """The version of a new release: `proposed` if it is semver and above every taken version,
    else one patch above the highest taken version (FIRST_VERSION for a new skill)."""
    top = highest(taken)
    top_key = parse_semver(top) if top is not None else None
    prop = parse_semver(proposed) if proposed else None
    if prop is not None and (top_key is None or prop > top_key):
        return proposed.strip()  # type: ignore[union-attr]
    return FIRST_VERSION if top is None else bump_patch(top)
