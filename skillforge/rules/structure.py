"""The static structure score of a skill: schema, trigger, prompt, deps. Reported, never blocks."""

from __future__ import annotations

from collections.abc import Sequence

from skillforge.state.skill import Severity, SkillFile, SkillIssue

MIN_EXAMPLES = 2
MIN_KEYWORDS = 2
PROMPT_SECTIONS = ("## instructions", "## constraints")


def structure_parts(skill: SkillFile, issues: Sequence[SkillIssue]) -> dict[str, float]:
    """Each part in [0, 1]:
    schema: 1 without warnings (0.5 with), trigger: use_when, examples and keywords present,
    prompt: Instructions and Constraints sections, deps: dependencies declared and named in the body."""
    warnings = [i for i in issues if i.severity is Severity.WARNING]
    body = skill.body.casefold()
    trigger = (float(skill.use_when is not None) + float(len(skill.examples) >= MIN_EXAMPLES)
               + float(len(skill.keywords) >= MIN_KEYWORDS)) / 3
    prompt = sum(s in body for s in PROMPT_SECTIONS) / len(PROMPT_SECTIONS)
    deps = (sum(d.casefold() in body for d in skill.dependencies) / len(skill.dependencies)
            if skill.dependencies else 0.0)
    return {"schema": 0.5 if warnings else 1.0, "trigger": round(trigger, 4), "prompt": prompt, "deps": round(deps, 4)}


def structure_score(skill: SkillFile, issues: Sequence[SkillIssue]) -> float:
    parts = structure_parts(skill, issues)
    return round(sum(parts.values()) / len(parts), 4)
