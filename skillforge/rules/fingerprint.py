"""Fingerprints of candidate skill files, and the rule that stops a round repeating itself (pure).

A fingerprint is the SHA-256 of the SKILL.md text normalised so that edits that change nothing an
agent reads do not count: line endings, trailing spaces, blank lines (an agent reads no meaning into them), Unicode form (NFC),
and the `version` entry of `metadata` (a bumped version alone is a no-op).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Collection
from enum import StrEnum

_VERSION_LINE = re.compile(r"^(\s*)version:\s*['\"]?[^'\"\n]*['\"]?\s*$", re.M)
_INLINE_VERSION = re.compile(r"(\bversion\s*:\s*)(['\"]?)[^,'\"}\n]*\2")


class FingerprintVerdict(StrEnum):
    NEW = "new"
    NOOP = "noop"
    """Equal to the baseline: the candidate changes nothing."""
    DUPLICATE = "duplicate"
    """Equal to an earlier candidate of this run."""


def normalise(text: str) -> str:
    """The text as the fingerprint sees it."""
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            front, rest = text[:end], text[end:]
            front = _INLINE_VERSION.sub(r"\1", _VERSION_LINE.sub(r"\1version:", front))
            text = front + rest
    return "\n".join(ln.rstrip() for ln in text.split("\n") if ln.strip()) + "\n"


def fingerprint(text: str) -> str:
    """sha256 hex of the normalised text."""
    return hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()


def check_fingerprint(candidate: str, baseline: str, seen: Collection[str]) -> FingerprintVerdict:
    """NOOP if the candidate's fingerprint equals the baseline's, DUPLICATE if it was seen, else NEW."""
    if candidate == baseline:
        return FingerprintVerdict.NOOP
    if candidate in seen:
        return FingerprintVerdict.DUPLICATE
    return FingerprintVerdict.NEW
