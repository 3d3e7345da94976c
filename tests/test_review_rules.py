"""The pure rules of reviews and runs on their edges: the base verdict, one answer per run, a new
skill's name, a run's status, open runs and the options `--resume` refuses."""

from __future__ import annotations

from skillforge.rules.names import NameVerdict, name_refusal, new_skill_name
from skillforge.rules.review import AnswerVerdict, BaseVerdict, answer_verdict, base_verdict
from skillforge.rules.runs import open_runs, resume_conflicts, run_status
from skillforge.state.evolve import CandidateKind, EvolveStatus
from skillforge.state.evolve import ReviewAction as A

SKILL = "taxi-hailing"


def test_the_base_and_answer_rules_on_their_edges():
    assert base_verdict("r1", "r1") is BaseVerdict.CURRENT
    assert base_verdict("r1", "r2") is BaseVerdict.MOVED
    assert base_verdict(None, "r2") is BaseVerdict.UNKNOWN and base_verdict("", "r2") is BaseVerdict.UNKNOWN
    assert base_verdict("r1", None) is BaseVerdict.GONE and base_verdict(None, None) is BaseVerdict.GONE
    assert answer_verdict(True, None, A.REJECT) is AnswerVerdict.TAKE
    assert answer_verdict(False, None, A.APPROVE) is AnswerVerdict.NOT_WAITING
    assert answer_verdict(True, A.APPROVE, A.APPROVE) is AnswerVerdict.REPEAT  # recorded, not yet taken
    assert answer_verdict(False, A.APPROVE, A.APPROVE) is AnswerVerdict.REPEAT  # taken
    assert answer_verdict(True, A.APPROVE, A.REJECT) is AnswerVerdict.CONFLICT
    assert answer_verdict(False, A.REJECT, A.REBASE) is AnswerVerdict.CONFLICT


def test_the_rule_refuses_registered_names_folders_the_parent_and_bad_names():
    taken = frozenset({"hotel-booking", "taxi-hailing"})
    folders = frozenset({"half-made"})
    assert new_skill_name(CandidateKind.CAPTURED, "taxi-eta", "taxi-hailing", taken, folders) is NameVerdict.NEW
    assert new_skill_name(CandidateKind.CAPTURED, "hotel-booking", "taxi-hailing", taken, folders) is NameVerdict.REGISTERED
    assert new_skill_name(CandidateKind.DERIVED, "half-made", "taxi-hailing", taken, folders) is NameVerdict.FOLDER
    assert new_skill_name(CandidateKind.DERIVED, "taxi-hailing", "taxi-hailing", taken, folders) is NameVerdict.REGISTERED
    assert new_skill_name(CandidateKind.DERIVED, "Hotel-Booking", "taxi-hailing", taken, folders) is NameVerdict.REGISTERED
    assert new_skill_name(CandidateKind.CAPTURED, "Half-Made ", "taxi-hailing", taken, folders) is NameVerdict.FOLDER
    assert new_skill_name(CandidateKind.DERIVED, " ", "taxi-hailing", taken, folders) is NameVerdict.INVALID
    # a FIX releases as its own skill: the name is the parent's by design
    assert new_skill_name(CandidateKind.FIX, "taxi-hailing", "taxi-hailing", taken, folders) is NameVerdict.NEW
    assert new_skill_name(CandidateKind.FIX, "hotel-booking", "taxi-hailing", taken, folders) is NameVerdict.INVALID
    assert name_refusal(NameVerdict.NEW, CandidateKind.FIX, "taxi-hailing") == ""
    assert "existing skill 'hotel-booking'" in name_refusal(NameVerdict.REGISTERED, CandidateKind.CAPTURED, "hotel-booking")


def test_status_rule_and_open_runs_on_their_edges():
    assert run_status(EvolveStatus.RUNNING, "review") is EvolveStatus.PENDING_REVIEW
    assert run_status(EvolveStatus.RUNNING, "budget") is EvolveStatus.BUDGET
    assert run_status(EvolveStatus.RUNNING, None) is EvolveStatus.RUNNING  # killed in a node: resumable
    assert run_status(EvolveStatus.PUBLISHED, None) is EvolveStatus.PUBLISHED
    runs = [("a", SKILL, EvolveStatus.PUBLISHED), ("b", SKILL, EvolveStatus.BUDGET), ("c", "other", EvolveStatus.RUNNING),
            ("d", SKILL, EvolveStatus.CANCELLED), ("e", SKILL, EvolveStatus.PENDING_REVIEW)]
    assert open_runs(runs, SKILL) == ["b", "e"]
    assert open_runs(runs, SKILL, except_run="e") == ["b"]
    assert open_runs(runs, "nothing") == []
    assert resume_conflicts(skill=None, run_skill=SKILL, mode_given=False, max_rounds_given=False, all_skills=False) == []
    assert resume_conflicts(skill=SKILL, run_skill=SKILL, mode_given=False, max_rounds_given=False, all_skills=False) == []
    assert resume_conflicts(skill="weather-query", run_skill=SKILL, mode_given=True, max_rounds_given=True,
                            all_skills=True) == ["SKILL ('weather-query'; the run evolves 'taxi-hailing')", "--mode",
                                                 "--max-rounds", "--all"]
