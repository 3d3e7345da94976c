"""Where a SKILL.md holds control or format characters, as (field, rule) warnings for check_text;
and where the other text files of a skill folder hold them (`tree_hidden`, which publishes refuse).

Two sources: characters written raw in the file (reported per line, with the line, the field the
line belongs to and each code point; see rules/hidden.py for what is allowed as encoding), and
characters a YAML escape put into a frontmatter value (`"\\e[31m"`, `"\\u200b"`), reported per field.
"""

from __future__ import annotations

from collections.abc import Iterable

import yaml

from skillforge.errors import SkillFileError
from skillforge.rules.frontmatter import control_fields, describe_controls
from skillforge.rules.hidden import (
    FileHiddenChar,
    added_hidden,
    char_label,
    file_rules,
    file_text,
    files_hidden,
    hidden_characters,
    hidden_in,
    line_rules,
)
from skillforge.skill import yaml12
from skillforge.skill.tree import SKILL_FILENAME, FileMode, Tree


def _field_of_line(node: yaml.Node | None, index: int) -> str:
    """The top-level key whose entry spans frontmatter line `index` (0-based), else 'frontmatter'
    (delimiters, comments before the first key). A comment between two keys counts to the first."""
    if isinstance(node, yaml.MappingNode):
        for key, value in reversed(node.value):
            if key.start_mark.line <= index:
                end = value.end_mark
                return str(key.value) if index < end.line or (index == end.line and end.column > 0) else "frontmatter"
    return "frontmatter"


def hidden_issues(text: str, fm_lines: int, node: yaml.Node | None = None,
                  data: object = None) -> list[tuple[str, str]]:
    """(field, rule) per line of `text` holding a hidden character (lines up to `fm_lines` are
    frontmatter, which starts on the file's line 2), then per frontmatter field of `data` holding
    one that no raw line of that field already showed."""
    hidden = hidden_characters(text)
    issues: list[tuple[str, str]] = []
    raw: dict[str, set[str]] = {}
    for line, rule in line_rules(hidden):
        fld = "body" if line > fm_lines else _field_of_line(node, line - 2)
        issues.append((fld, rule))
        raw.setdefault(fld, set()).update(h.char for h in hidden if h.line == line)
    if isinstance(data, dict):
        for path, chars in fields_hidden(data).items():
            if chars := [ch for ch in chars if ch not in raw.get(path.split(".")[0], ())]:
                issues.append((path, f"holds control or format character(s) {describe_controls(chars)}; a terminal "
                                     "would act on them or a reader cannot see them (they are shown escaped when printed)"))
    return issues


def fields_hidden(data: object) -> dict[str, list[str]]:
    """Field -> the distinct hidden characters (rules/hidden.hidden_in) in its parsed frontmatter
    value, keys and nested values included (rules/frontmatter.control_fields' paths): what a YAML
    escape such as `"\\u202e"` puts into the value an agent is served. {} for no mapping."""
    return control_fields(data, hidden_in) if isinstance(data, dict) else {}


def frontmatter_data(text: str) -> object:
    """The parsed frontmatter of a SKILL.md text, or None when it has none or it is not valid YAML
    (check_text reports those)."""
    from skillforge.skill.file import split_frontmatter  # lazy: skill/file imports this module

    try:
        return yaml12.load_bounded(split_frontmatter(text)[0], line_offset=1)[1]
    except (SkillFileError, yaml.YAMLError, RecursionError):
        return None


def skill_md_added_field_hidden(tree: Tree, live: Tree, raw: Iterable[str] = ()) -> list[str]:
    """One line per frontmatter field of the new SKILL.md whose parsed value holds hidden characters
    the live release's value of that field did not (written as a YAML escape, they are plain ASCII
    on the line, so skill_md_added_hidden does not see them; QA 30 N1); characters in `raw` (found
    raw on an added line) are left out. The ones the live value already held stay check_text's warnings."""
    entry = tree.get(SKILL_FILENAME)
    new = file_text(entry.data) if entry is not None else None
    if new is None:
        return []
    old_entry = live.get(SKILL_FILENAME)
    old = file_text(old_entry.data) if old_entry is not None else None
    before = fields_hidden(frontmatter_data(old)) if old is not None else {}
    seen = set(raw)
    lines = []
    for path, chars in fields_hidden(frontmatter_data(new)).items():
        if added := [ch for ch in chars if ch not in before.get(path, ()) and ch not in seen]:
            lines.append(f"{SKILL_FILENAME}: field '{path}' holds {', '.join(char_label(ch) for ch in added)} in its "
                         "parsed value (written as a YAML escape such as \\u202e)")
    return lines


def tree_hidden(tree: Tree, paths: Iterable[str] | None = None) -> list[FileHiddenChar]:
    """The hidden characters in the files beside SKILL.md of `tree` (only `paths` of it when given),
    with file, line and column (rules/hidden.files_hidden). SKILL.md is check_text's (field by field);
    symlinks (their target is a path) and binary files (rules/hidden.file_text: a NUL byte in the
    first 8000 bytes, not UTF-16, and neither `#!` first nor a script or text suffix) are not read."""
    chosen = tree.keys() if paths is None else [p for p in paths if p in tree]
    texts = {p: text for p in chosen if p != SKILL_FILENAME and tree[p].mode is not FileMode.SYMLINK
             and (text := file_text(tree[p].data, p)) is not None}  # the path: a NUL-padded .sh is read too
    return files_hidden(texts)


def skill_md_added_hidden(tree: Tree, live: Tree) -> list[FileHiddenChar]:
    """The hidden characters a new SKILL.md adds: on lines the live release's SKILL.md does not have
    word for word (rules/hidden.added_hidden; all of them when there is no live SKILL.md). The ones
    already published stay check_text's warnings."""
    entry = tree.get(SKILL_FILENAME)
    new = file_text(entry.data) if entry is not None else None
    if new is None:
        return []
    old_entry = live.get(SKILL_FILENAME)
    old = (file_text(old_entry.data) if old_entry is not None else None) or ""
    return [FileHiddenChar(SKILL_FILENAME, h.line, h.column, h.char) for h in added_hidden(old, new)]


def imported_hidden(machine, imported) -> list[str]:  # noqa: ANN001 - a ReleaseStateMachine, its Releases
    """One warning per file line beside SKILL.md holding hidden characters, in each release just
    imported (the import stands, as SKILL.md's own are warnings; `release publish` refuses them in a
    file it adds or changes)."""
    return [f"{r.skill_path}/{line}: a hidden character (control or format); take it out and publish the folder again"
            for r in imported if r.commit_hash for line in file_rules(tree_hidden(machine.tree_of(r)))]
