"""The strict export: a skill as a pure agentskills.io SKILL.md (`skillforge skills export --strict`)."""

from __future__ import annotations

import json

from skillforge.errors import SkillFileError
from skillforge.skill.file import COMPATIBILITY_MAX, DESCRIPTION_MAX, EXPORT_PREFIX, LIST_EXTENSIONS, parse, render, \
    reserved_clashes
from skillforge.state.skill import SkillFile


def export_strict(skill: SkillFile, file: str = "<export>") -> str:
    """A pure agentskills.io file: extensions move under `metadata` as `skillforge.<key>` strings
    (lists as JSON). Raises SkillFileError when the spec cannot be met without changing meaning."""
    if len(skill.description) > DESCRIPTION_MAX:
        raise SkillFileError(file, "description",
                             f"over {DESCRIPTION_MAX} characters ({len(skill.description)}); shorten it before a strict export")
    if clashes := reserved_clashes(skill):
        raise SkillFileError(file, *clashes[0])
    metadata = dict(skill.metadata)
    if skill.use_when is not None:
        metadata[f"{EXPORT_PREFIX}use_when"] = skill.use_when
    for key in LIST_EXTENSIONS:
        if getattr(skill, key):
            metadata[f"{EXPORT_PREFIX}{key}"] = json.dumps(getattr(skill, key), ensure_ascii=False)
    for key, value in skill.extra.items():
        metadata[f"{EXPORT_PREFIX}extra.{key}"] = json.dumps(value, ensure_ascii=False)
    if skill.compatibility is not None and len(skill.compatibility) > COMPATIBILITY_MAX:
        raise SkillFileError(file, "compatibility", f"over {COMPATIBILITY_MAX} characters; shorten it before a strict export")
    compatibility = skill.compatibility if skill.compatibility and skill.compatibility.strip() else None
    spec = skill.model_copy(update={"metadata": metadata, "use_when": None, "extra": {}, "compatibility": compatibility,
                                    **{k: [] for k in LIST_EXTENSIONS}})
    text = render(spec)
    parse(text, file, strict=True)  # prove the export is pure spec
    return text
