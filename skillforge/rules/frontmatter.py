"""Frontmatter rules for hostile input: how much a frontmatter may expand to, which characters a
text field may hold, and which `metadata.version` values are usable. Pure functions, no I/O."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from skillforge.rules.versions import FIRST_VERSION, is_semver, shown_version

# The largest frontmatter of the real corpora is ~1.2 KB; these bounds are 50x to 1000x that, and
# small enough that a file at every bound still loads in milliseconds.
MAX_FRONTMATTER_CHARS = 64 * 1024
"""Characters between the two `---` lines."""
MAX_ALIASES = 64
"""`*alias` uses. Real skills use none; a billion-laughs bomb needs many."""
MAX_EXPANDED_NODES = 10_000
"""Scalars plus collections once every alias is expanded (what a consumer walks)."""
MAX_EXPANDED_CHARS = 256 * 1024
"""Scalar characters once every alias is expanded."""
MAX_DEPTH = 32
"""Nesting of mappings and sequences, aliases expanded (the constructors recurse)."""

# C0 controls but \t and \n, DEL, and C1 controls: a terminal acts on them (ESC starts colour,
# cursor and title sequences; \r rewrites the line; U+009B is an 8-bit CSI).
CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Expansion:
    """What a frontmatter amounts to once its aliases are expanded, measured from its events."""

    chars: int = 0
    aliases: int = 0
    nodes: int = 0
    expanded_chars: int = 0
    depth: int = 0
    recursive_alias: str | None = None
    """An alias used inside the collection it names (a cycle), if any."""


def expansion_violation(e: Expansion) -> str | None:
    """The first bound the frontmatter breaks, as a rule sentence, or None if it is within all."""
    if e.chars > MAX_FRONTMATTER_CHARS:
        return f"frontmatter is {e.chars} characters; the limit is {MAX_FRONTMATTER_CHARS}"
    if e.recursive_alias is not None:
        return f"alias '*{e.recursive_alias}' refers to the collection that contains it (a cycle)"
    if e.aliases > MAX_ALIASES:
        return f"more than {MAX_ALIASES} aliases ({e.aliases} seen); refused as a possible alias bomb"
    if e.depth > MAX_DEPTH:
        return f"nested deeper than {MAX_DEPTH} levels (aliases expanded)"
    if e.nodes > MAX_EXPANDED_NODES:
        return f"expands to more than {MAX_EXPANDED_NODES} values (aliases expanded); refused as a possible alias bomb"
    if e.expanded_chars > MAX_EXPANDED_CHARS:
        return (f"expands to more than {MAX_EXPANDED_CHARS} characters of text (aliases expanded); "
                "refused as a possible alias bomb")
    return None


def control_characters(text: str) -> list[str]:
    """The distinct control characters in `text` (see CONTROL_RE), in order of first use."""
    return list(dict.fromkeys(CONTROL_RE.findall(text)))


def control_fields(data: dict[object, object],
                   find: Callable[[str], list[str]] = control_characters) -> dict[str, list[str]]:
    """Field -> the distinct characters `find` reports in its text (control characters unless
    told otherwise), keys included, at any depth. A top-level key is reported as 'frontmatter', a
    metadata entry as `metadata.<key>`, anything deeper under its top-level key. Fields without
    such characters are left out."""
    todo: list[tuple[str, object]] = [("frontmatter", data)]
    found: dict[str, list[str]] = {}
    while todo:
        path, value = todo.pop(0)
        texts: list[str] = []
        if isinstance(value, str):
            texts = [value]
        elif isinstance(value, dict):
            texts = [k for k in value if isinstance(k, str)]
            for k, v in value.items():
                todo.append((str(k) if value is data else f"metadata.{k}" if path == "metadata" else path, v))
        elif isinstance(value, list):
            todo += [(path, v) for v in value]
        for t in texts:
            if chars := find(t):
                found[path] = list(dict.fromkeys([*found.get(path, []), *chars]))
    return found


def describe_controls(chars: list[str]) -> str:
    """`U+001B, U+000D`: how a rule names control characters without printing them."""
    return ", ".join(f"U+{ord(ch):04X}" for ch in chars)


def version_problem(value: str) -> str | None:
    """Why a `metadata.version` value cannot be a release's version, or None if it is semver."""
    if is_semver(value):
        return None
    return (f"'{shown_version(value)}' is not semver (MAJOR.MINOR.PATCH, e.g. 1.2.0); it is ignored and the release gets "
            f"the next free version ({FIRST_VERSION} for a new skill)")
