"""SkillRegistry: the index and use_skill come from the current published release in git."""

from __future__ import annotations

import pytest
from conftest import edited

from skillforge.errors import NotPublished, UnknownSkill
from skillforge.journal import read_jsonl
from skillforge.library.registry import SkillRegistry

SKILL = "taxi-hailing"


def test_index_lists_name_description_and_use_when(machine):
    reg = SkillRegistry.load(machine.ws)
    index = reg.build_index()
    assert len(reg.names()) == 10 and not reg.errors
    for name in reg.names():
        s = reg.get(name).skill
        assert f"- {name}: {s.description.strip()}" in index
        assert s.use_when.strip() in index
    assert "## Instructions" not in index  # bodies are disclosed only through use_skill


def test_use_skill_reads_git_at_the_current_release_not_the_working_tree(machine):
    m = machine
    reg = SkillRegistry.load(m.ws)
    before = reg.use_skill(SKILL, "first")
    candidate = edited(m, SKILL, "PUBLISHED LINE")
    (m.folder_of(SKILL) / "SKILL.md").write_text((m.folder_of(SKILL) / "SKILL.md").read_text() + "\nDRAFT LINE\n")
    assert reg.use_skill(SKILL, "draft in the working tree") == before
    rel = m.publish(SKILL, candidate, force=True)  # the draft would be lost: force saves it first
    [backup] = m.backups
    assert "DRAFT LINE" in (backup / "SKILL.md").read_text()
    after = reg.use_skill(SKILL, "after publish")  # no reload needed: SQLite says what is current
    assert "PUBLISHED LINE" in after and "DRAFT LINE" not in after
    assert not after.startswith("---")
    lines = read_jsonl(m.ws.router_log)
    assert [entry["reason"] for entry in lines] == ["first", "draft in the working tree", "after publish"]
    last = lines[-1]
    assert last["name"] == SKILL and last["release_id"] == rel.release_id and last["latency_ms"] >= 0


def test_unknown_skill_lists_closest_names(machine):
    reg = SkillRegistry.load(machine.ws)
    reg.use_skill(SKILL, "a known skill first")  # so the log is not empty: the check below can fail
    with pytest.raises(UnknownSkill) as e:
        reg.use_skill("taxi-haling", "typo")
    assert e.value.closest[0] == SKILL and SKILL in str(e.value)
    with pytest.raises(UnknownSkill):
        reg.get("hotel")
    assert [(e["name"], e["reason"]) for e in read_jsonl(machine.ws.router_log)] == [(SKILL, "a known skill first")]


def test_a_skill_without_published_release(machine):
    m = machine
    m.begin_release("brand-new-skill", triggered_by="capture")
    with pytest.raises(NotPublished):
        SkillRegistry.load(m.ws).use_skill("brand-new-skill", "too early")


def test_torn_router_log_line_is_skipped(machine):
    reg = SkillRegistry.load(machine.ws)
    reg.use_skill(SKILL, "one")
    with machine.ws.router_log.open("a") as fh:
        fh.write('{"event": "use_skill", "name": "tor')  # a writer killed mid-line
    reg.use_skill(SKILL, "two")
    assert [e["reason"] for e in read_jsonl(machine.ws.router_log)] == ["one", "two"]
