"""QA 24 finding 4: a Studio run's refusal names the resume value, not a CLI command that cannot
act on the server's thread (rules/resume_hint)."""

from __future__ import annotations

from skillforge.rules.resume_hint import as_resume_values


def test_cli_commands_become_resume_values():
    moved = ("taxi-hailing 0.3.4 is live now. Re-validate the candidate on 0.3.4: skillforge review rebase st-r2 "
             "(or close it: skillforge review reject st-r2)")
    assert as_resume_values(moved, "st-r2") == ('taxi-hailing 0.3.4 is live now. Re-validate the candidate on 0.3.4: '
                                                'resume {"action": "rebase"} (or close it: resume {"action": "reject"})')
    assert as_resume_values('`skillforge review approve r.1 --force --comment "ok"`', "r.1") == \
        'resume {"action": "approve", "force": true}'
    assert as_resume_values("or pass --force to save them under runs/backups/ and go on", "r1") == \
        'or resume {"action": "approve", "force": true} to save them under runs/backups/ and go on'


def test_other_runs_and_other_commands_are_kept():
    text = "skillforge review reject r10; skillforge evolve taxi-hailing; skillforge review reject r1x"
    assert as_resume_values(text, "r1") == text  # r10 / r1x are other runs (a prefix is not the id)
    assert as_resume_values("skillforge review reject r1.", "r1") == 'resume {"action": "reject"}.'
