"""What a run served by a LangGraph server (Studio) tells its user to do (pure). Messages written
for the CLI name `skillforge review <action> <run>` commands, which cannot act on a thread in the
server's own checkpointer: there, the same step is a resume value of the review interrupt."""

from __future__ import annotations

import re

_COMMAND = r"`?skillforge review (approve|reject|rebase) {run}(?![\w-]|\.[\w.-])((?: --force| --comment \"[^\"]*\")*)`?"
"""A review command for the run: its id is followed by no id character (a sentence's period is not one)."""


def as_resume_values(text: str, run_id: str) -> str:
    """`text` with each `skillforge review ACTION <run_id> [--force] [--comment "..."]` replaced by
    the resume value that does it (`resume {"action": "ACTION"}`, with `"force": true` for --force);
    `--force` alone (UnpublishedChanges' advice) becomes `"force": true`. Other text is kept."""
    def value(m: re.Match[str]) -> str:
        force = ', "force": true' if "--force" in m.group(2) else ""
        return f'resume {{"action": "{m.group(1)}"{force}}}'

    text = re.sub(_COMMAND.format(run=re.escape(run_id)), value, text)
    return text.replace("pass --force to save", 'resume {"action": "approve", "force": true} to save')
