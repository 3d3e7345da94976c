"""SKILL.md: parse, validate, render and strict export.

Lenient load, strict validate: rules a real agent tolerates (an over-long description, an unknown
top-level key, a non-string metadata value) are warnings on load and errors under `strict=True`.
Rules that make a file unusable (no frontmatter, bad YAML, a bad or mismatched name, no
description, a list where a string belongs, non-UTF-8 bytes, an empty body, more than 1 MiB) are
always errors.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from skillforge.skill import tree as skilltree

from skillforge.skill import yaml12
from skillforge.errors import NestedSkill, SkillFileError
from skillforge.rules.frontmatter import version_problem
from skillforge.skill.chars import hidden_issues
from skillforge.skill.lift import lift_exported
from skillforge.state.skill import NAME_MAX, NAME_RE, Severity, SkillFile, SkillIssue

SKILL_FILENAME = "SKILL.md"
DESCRIPTION_MAX = 1024
COMPATIBILITY_MAX = 500
SKILL_MD_MAX_BYTES = 1 << 20
"""A SKILL.md above 1 MiB (~250 000 tokens, more than a model's whole context) is refused: the spec
recommends a body under 500 lines, with long material in references/."""
SPEC_KEYS = ("name", "description", "license", "compatibility", "allowed-tools", "metadata")
STRING_EXTENSIONS = ("use_when",)
LIST_EXTENSIONS = ("not_for", "keywords", "examples", "dependencies")
EXPORT_PREFIX = "skillforge."
_CLOSING = re.compile(r"^---[ \t]*\r?$", re.MULTILINE)


@dataclass
class _Checker:
    """Collects the issues of one file while its fields are read."""

    file: str
    issues: list[SkillIssue] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    """Source text of each top-level plain scalar that YAML read as a non-string (see _string)."""

    def error(self, fld: str, rule: str) -> None:
        self.issues.append(SkillIssue(file=self.file, field=fld, rule=rule, severity=Severity.ERROR))

    def warn(self, fld: str, rule: str) -> None:
        self.issues.append(SkillIssue(file=self.file, field=fld, rule=rule, severity=Severity.WARNING))

    @property
    def failed(self) -> bool:
        return any(i.severity is Severity.ERROR for i in self.issues)


def split_frontmatter(text: str, file: str = "<text>") -> tuple[str, str]:
    """Return (frontmatter YAML, body). Raises SkillFileError if the delimiters are wrong."""
    if text.startswith("\ufeff"):
        text = text[1:]
    first, sep, rest = text.partition("\n")
    if first.rstrip("\r \t") != "---" or not sep:
        raise SkillFileError(file, "frontmatter", "no frontmatter: the file must start with a '---' line")
    m = _CLOSING.search(rest)
    if m is None:
        raise SkillFileError(file, "frontmatter", "unclosed frontmatter: no closing '---' line")
    body_start = m.end() + 1 if m.end() < len(rest) else m.end()
    return rest[: m.start()], rest[body_start:]


def _string(c: _Checker, data: dict[str, object], key: str, *, required: bool = False) -> str | None:
    value = data.get(key)
    if value is None:
        if required:
            c.error(key, "required field is missing")
        return None
    if not isinstance(value, str) and key != "name" and key in c.sources:
        value = c.sources[key]  # `license: 2.0` is "2.0", as a YAML 1.2 agent reading a string field sees it
        c.warn(key, f"must be a string; the unquoted {value} was read as '{value}' (quote it)")
    if not isinstance(value, str):
        c.error(key, f"must be a string, got {type(value).__name__}")
        return None
    if required and not value.strip():
        c.error(key, "must not be empty")
        return None
    return value


def _string_list(c: _Checker, data: dict[str, object], key: str) -> list[str]:
    value = data.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        c.warn(key, "should be a list of strings; a single string was read as a one-item list")
        value = [value]
    if not isinstance(value, list):
        c.error(key, f"must be a list of strings, got {type(value).__name__}")
        return []
    out: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            c.error(key, f"item {i} must be a non-empty string, got {item!r}")
        else:
            out.append(item)
    return out


def _check_name(c: _Checker, name: str | None, folder: str | None) -> None:
    if name is None:
        return
    if len(name) > NAME_MAX:
        c.error("name", f"must be at most {NAME_MAX} characters, got {len(name)}")
    if not NAME_RE.fullmatch(name):
        c.error("name", "must be lowercase a-z, 0-9 and single hyphens, not starting or ending with '-'")
    if folder is not None and name != folder:
        c.error("name", f"must equal its folder name '{folder}', got '{name}'")


def _metadata(c: _Checker, data: dict[str, object], sources: list[tuple[str | None, str | None]]) -> dict[str, str]:
    """metadata as string to string. An unquoted number or boolean keeps its source text (`1.10`
    is "1.10", not "1.1") with a warning; `version` must be semver to be used (warning otherwise)."""
    value = data.get("metadata")
    if value is None:
        return {}
    if not isinstance(value, dict):
        c.error("metadata", f"must be a mapping of string to string, got {type(value).__name__}")
        return {}
    out: dict[str, str] = {}
    if len(sources) != len(value):  # a !!merge or tagged mapping: no per-pair source text
        sources = [(None, None)] * len(value)
    for (k, v), (k_src, v_src) in zip(value.items(), sources):
        key = k_src if k_src is not None else str(k)
        if isinstance(v, (dict, list)) or v is None:
            c.error(f"metadata.{key}", f"must be a string, got {type(v).__name__}")
            continue
        text = v if isinstance(v, str) else (v_src if v_src is not None else str(v))
        notes = []
        if not isinstance(k, str):
            notes.append(f"keys must be strings; the unquoted {k_src or repr(k)} was read as '{key}'")
        if not isinstance(v, str):
            notes.append(f"values must be strings; the unquoted {v_src or repr(v)} was read as '{text}'")
        if key == "version" and (problem := version_problem(text)) is not None:
            notes.append(f"version {problem}")
        if notes:
            c.warn(f"metadata.{key}", "; ".join(notes))
        out[key] = text
    return out


def _allowed_tools(c: _Checker, data: dict[str, object]) -> str | None:
    value = data.get("allowed-tools")
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        c.warn("allowed-tools", "should be a space-delimited string; a list was joined")
        return " ".join(value)
    return _string(c, data, "allowed-tools")


def check_text(text: str, file: str = "<text>", folder: str | None = None) -> tuple[SkillFile | None, list[SkillIssue]]:
    """Read every field and return (skill or None, all issues). Never raises."""
    c = _Checker(file)
    size = len(text.encode("utf-8", "surrogatepass")) if len(text) > SKILL_MD_MAX_BYTES // 4 else 0
    if size > SKILL_MD_MAX_BYTES:
        c.error("size", f"{size:,} bytes ({size / (1 << 20):.1f} MiB), over the {SKILL_MD_MAX_BYTES:,} (1 MiB) a "
                        "SKILL.md may hold, more than a model's "
                        "context (the spec recommends a body under 500 lines): move long material to references/")
        return None, c.issues
    try:
        fm_text, body = split_frontmatter(text, file)
    except SkillFileError as e:
        c.error(e.field, e.rule)
        return None, c.issues
    loaded = _load_yaml(c, fm_text)
    for fld, rule in hidden_issues(text, fm_text.count("\n") + 2, *(loaded or ())):
        c.warn(fld, rule)  # raw or escaped control and format characters: refused by --strict
    if loaded is None:
        return None, c.issues
    node, data = loaded
    c.sources = yaml12.top_level_sources(node)
    if not isinstance(data, dict):
        c.error("frontmatter", f"must be a YAML mapping, got {type(data).__name__}")
        return None, c.issues
    name = _string(c, data, "name", required=True)
    _check_name(c, name, folder)
    description = _string(c, data, "description", required=True)
    if description is not None and len(description) > DESCRIPTION_MAX:
        c.warn("description", f"spec allows at most {DESCRIPTION_MAX} characters, got {len(description)}")
    compatibility = _string(c, data, "compatibility")
    if compatibility is not None and not compatibility.strip():
        c.warn("compatibility", "spec asks for 1-500 characters when the field is present; it is empty")
    if compatibility is not None and len(compatibility) > COMPATIBILITY_MAX:
        c.warn("compatibility", f"spec allows at most {COMPATIBILITY_MAX} characters, got {len(compatibility)}")
    fields = {
        "license": _string(c, data, "license"),
        "compatibility": compatibility,
        "allowed_tools": _allowed_tools(c, data),
        "metadata": _metadata(c, data, yaml12.mapping_sources(node, "metadata")),
        "use_when": _string(c, data, "use_when"),
        **{k: _string_list(c, data, k) for k in LIST_EXTENSIONS},
    }
    fields = lift_exported(fields, EXPORT_PREFIX, STRING_EXTENSIONS, LIST_EXTENSIONS)  # a strict export's
    known = set(SPEC_KEYS) | set(STRING_EXTENSIONS) | set(LIST_EXTENSIONS)
    extra = {str(k): v for k, v in data.items() if k not in known}
    for k in extra:
        c.warn(k, "unknown top-level key (kept, but not part of the spec or the SkillForge contract)")
    if not body.strip():
        c.error("body", "the instructions after the frontmatter must not be empty")
    if c.failed or name is None or description is None:
        return None, c.issues
    try:
        skill = SkillFile(name=name, description=description, extra=extra, body=body, **fields)
    except ValueError as e:  # e.g. an unknown key holding a non-JSON value such as a date
        c.error("frontmatter", f"unsupported value: {e.errors()[0]['msg'] if hasattr(e, 'errors') else e}")
        return None, c.issues
    for fld, rule in reserved_clashes(skill):  # what export_strict refuses fails validate --strict too
        c.warn(fld, rule)
    return skill, c.issues


def _load_yaml(c: _Checker, fm_text: str) -> tuple[yaml.Node | None, object] | None:
    """(node, data) of the frontmatter read as YAML 1.2 core, or None with an error recorded:
    bad YAML, a duplicate key, or a document past a bound of rules.frontmatter."""
    try:
        return yaml12.load_bounded(fm_text, line_offset=1)
    except yaml12.ExpansionError as e:
        c.error("frontmatter", e.rule)
    except yaml12.DuplicateKeyError as e:
        c.error(e.path, f"duplicate key (lines {e.first_line} and {e.second_line}); "
                        "YAML readers disagree on which value wins")
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        c.error("frontmatter", f"invalid YAML{where}: {getattr(e, 'problem', None) or e}")
    return None


def parse(text: str, file: str = "<text>", folder: str | None = None, *, strict: bool = False) -> SkillFile:
    """Parse a SKILL.md text. Raises SkillFileError on the first error (on warnings too if strict)."""
    skill, issues = check_text(text, file, folder)
    for issue in issues:
        if issue.severity is Severity.ERROR or strict:
            raise SkillFileError(issue.file, issue.field, issue.rule)
    assert skill is not None  # no error means a skill was built
    return skill


def decode(raw: bytes, file: str) -> str:
    """UTF-8 bytes to text, or SkillFileError naming the byte offset."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SkillFileError(file, "encoding", f"not valid UTF-8 (byte {e.start})") from None


def _frontmatter_dict(skill: SkillFile) -> dict[str, object]:
    data: dict[str, object] = {"name": skill.name, "description": skill.description}
    for key, value in (("license", skill.license), ("compatibility", skill.compatibility),
                       ("allowed-tools", skill.allowed_tools)):
        if value is not None:
            data[key] = value
    if skill.metadata:
        data["metadata"] = dict(skill.metadata)
    if skill.use_when is not None:
        data["use_when"] = skill.use_when
    for key in LIST_EXTENSIONS:
        if getattr(skill, key):
            data[key] = list(getattr(skill, key))
    data.update(skill.extra)
    return data


def render(skill: SkillFile) -> str:
    """The SKILL.md text of a skill. parse(render(x)) == x."""
    return f"---\n{yaml12.dump(_frontmatter_dict(skill))}---\n{skill.body}"


def _exported_keys(skill: SkillFile) -> list[str]:
    """The metadata keys a strict export writes for this skill's extensions and unknown keys."""
    keys = [f"{EXPORT_PREFIX}use_when"] if skill.use_when is not None else []
    keys += [f"{EXPORT_PREFIX}{k}" for k in LIST_EXTENSIONS if getattr(skill, k)]
    return keys + [f"{EXPORT_PREFIX}extra.{k}" for k in skill.extra]


def reserved_clashes(skill: SkillFile) -> list[tuple[str, str]]:
    """(field, rule) for each `skillforge.*` metadata key of the skill's own that a strict export
    would overwrite. check_text warns of them, so `validate --strict` refuses what export refuses."""
    own = set(skill.metadata)
    return [(f"metadata.{k}", f"the '{EXPORT_PREFIX}' prefix is reserved for exported extensions, and a "
                              "strict export would overwrite this key")
            for k in _exported_keys(skill) if k in own]


@dataclass
class LoadedSkill:
    """A skill read from a folder of the working tree."""

    skill: SkillFile
    path: Path
    warnings: list[SkillIssue]


def load_folder(folder: Path, root: Path | None = None, *, strict: bool = False) -> LoadedSkill:
    """Load `folder/SKILL.md`. `root` bounds where the file may really live (symlinks included)."""
    file = folder / SKILL_FILENAME
    label = str(file)
    if root is not None:
        real_root = root.resolve()
        real = file.resolve()
        if not real.is_relative_to(real_root):
            raise SkillFileError(label, "path", f"resolves outside the workspace ({real}); symlinks may not escape it")
    try:
        raw = file.read_bytes()
    except OSError as e:
        raise SkillFileError(label, "path", f"cannot read: {e.strerror or e}") from None
    skill, issues = check_text(decode(raw, label), label, folder.name)
    for issue in issues:
        if issue.severity is Severity.ERROR or strict:
            raise SkillFileError(issue.file, issue.field, issue.rule)
    assert skill is not None
    return LoadedSkill(skill=skill, path=folder, warnings=issues)


@dataclass
class ScanReport:
    """Every skill found under a folder, and every file that could not load."""

    skills: dict[str, LoadedSkill] = field(default_factory=dict)
    errors: list[SkillFileError] = field(default_factory=list)

    @property
    def warnings(self) -> list[SkillIssue]:
        return [w for s in self.skills.values() for w in s.warnings]


def find_skill_folders(base: Path) -> list[Path]:
    """Folders under `base` holding a SKILL.md, sorted, skipping hidden folders. A symlinked
    folder is listed (so load_folder can judge where it really points) but never descended."""
    found = []
    for top, dirs, files in os.walk(base, followlinks=False):
        here = Path(top)
        if SKILL_FILENAME in files or (here / SKILL_FILENAME).is_symlink():
            found.append(here)
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for d in list(dirs):
            if (here / d).is_symlink():
                dirs.remove(d)
                if (here / d / SKILL_FILENAME).exists() or (here / d / SKILL_FILENAME).is_symlink():
                    found.append(here / d)
    return sorted(found)


def _nested_errors(folders: list[Path]) -> dict[Path, SkillFileError]:
    """Skill folders inside other skill folders: both sides are refused (nested skills are not
    supported, so that a release of one never rewrites the other)."""
    out: dict[Path, SkillFileError] = {}
    known = set(folders)
    for inner in folders:
        for outer in inner.parents:
            if outer in known:
                out[inner] = NestedSkill(str(inner / SKILL_FILENAME), "path",
                                         f"lies inside skill folder {outer}; nested skills are refused: move it out")
                out.setdefault(outer, NestedSkill(str(outer / SKILL_FILENAME), "path",
                                                  f"holds another skill folder ({inner}); nested skills are refused"))
    return out


def scan(base: Path, root: Path | None = None, *, strict: bool = False) -> ScanReport:
    """Load every skill under `base`. Bad files become errors; the good ones still load.
    Two folders declaring the same name are both refused: which one is meant is unknowable."""
    report = ScanReport()
    by_name: dict[str, list[LoadedSkill]] = {}
    folders = find_skill_folders(base)
    nested = _nested_errors(folders)
    report.errors += nested.values()
    for folder in folders:
        if folder in nested:
            continue
        try:
            loaded = load_folder(folder, root if root is not None else base, strict=strict)
            skilltree.read_tree(folder, contents=False)  # symlinks leaving the folder, FIFOs, ...
        except SkillFileError as e:
            report.errors.append(e)
            continue
        by_name.setdefault(loaded.skill.name, []).append(loaded)
    for name, group in sorted(by_name.items()):
        if len(group) == 1:
            report.skills[name] = group[0]
            continue
        places = ", ".join(str(g.path) for g in group)
        for g in group:
            report.errors.append(SkillFileError(str(g.path / SKILL_FILENAME), "name",
                                                f"'{name}' is declared by more than one folder ({places})"))
    return report
