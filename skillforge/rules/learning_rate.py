"""The textual learning rate: how much one candidate may change a skill in one round (pure).

SkillOpt caps each optimisation step's edits; here each FIX candidate of a round may change at most
MAX_CHANGED_LINES lines and MAX_CHANGED_CHARS characters of the file it patches, whatever its format
(ops, search_replace or full). A larger change is refused with its numbers ("changes 19 lines,
budget 12") and fed back to the proposer, who is asked for a smaller one. Sizes come from a line
diff: a replaced block counts its longer side (lines, characters), an inserted or deleted block its
own. A new skill (DERIVED, CAPTURED) patches no file and has no budget.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

MAX_CHANGED_LINES = 12
MAX_CHANGED_CHARS = 1200


@dataclass(frozen=True)
class ChangeSize:
    lines: int
    chars: int


def change_size(old: str, new: str) -> ChangeSize:
    """Lines and characters changed from `old` to `new` (see the module docstring)."""
    a, b = old.splitlines(), new.splitlines()
    lines = chars = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        lines += max(i2 - i1, j2 - j1)
        chars += max(sum(len(x) for x in a[i1:i2]), sum(len(x) for x in b[j1:j2]))
    return ChangeSize(lines, chars)


def over_budget(size: ChangeSize, max_lines: int = MAX_CHANGED_LINES, max_chars: int = MAX_CHANGED_CHARS) -> str | None:
    """Why the change is over the round's budget, with the numbers, or None when it fits."""
    why = []
    if size.lines > max_lines:
        why.append(f"changes {size.lines} lines, budget {max_lines}")
    if size.chars > max_chars:
        why.append(f"changes {size.chars} characters, budget {max_chars}")
    return "; ".join(why) or None
