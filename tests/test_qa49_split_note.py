"""QA 49 F2: the recovery advice for a split killed mid-publish."""

from __future__ import annotations


def test_an_interrupted_split_child_names_the_split_to_run_again() -> None:
    """QA 49 F2: `skills list` told the user to `release publish CHILD` after a killed split, which
    refuses (the child has no release yet); running the split again finishes it."""
    from skillforge.library.orphans import SPLIT_OF, Orphan
    from skillforge.state.release import Release

    rel = Release.model_validate({
        "release_id": "abcdef0123456789", "skill_name": "convert-anything-currency", "version": "0.1.0",
        "skill_path": "skills/convert-anything-currency", "commit_hash": None, "status": "PREPARING", "level": "MANUAL",
        "triggered_by": f"{SPLIT_OF}convert-anything", "eval_summary": None, "created_at": "2026-12-08T00:00:00Z",
        "published_at": None})
    note = Orphan(rel, None).note()
    assert "`skillforge skills split convert-anything --publish` again finishes the split" in note, note
    assert "release publish" not in note and "`skillforge watchdog --hours 0` gives it up" in note
