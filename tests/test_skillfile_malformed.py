"""Malformed SKILL.md files, each written as a real file in a real skill library.

Every variant must fail with a SkillFileError naming the file and the field, and must not stop the
rest of the library from loading: two good skills sit next to each bad one and `scan` must return
exactly those two, with the bad one in `.errors`."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from skillforge.errors import SkillFileError
from skillforge.skill.file import SKILL_FILENAME, check_text, decode, load_folder, parse, scan
from skillforge.state.skill import Severity

GOOD = {
    "good-one": "---\nname: good-one\ndescription: A plain spec skill that checks things.\nlicense: MIT\n---\n# Good one\n\n1. Check.\n",
    "good-two": ("---\nname: good-two\ndescription: An extended skill.\nmetadata: {version: \"1.2.0\"}\n"
                 "use_when: 用户想要第二个技能\nnot_for: [the first skill]\nkeywords: [two, 二]\n"
                 "examples: [\"do the second thing\"]\ndependencies: [tool.second]\n---\n# Good two\n\nSteps.\n"),
}

VALID_SKILL = "---\nname: {name}\ndescription: Looks fine on its own.\n---\n# Body\n\nDo it.\n"


def _fm(name: str, *lines: str, body: str = "# Body\n\nDo it.\n") -> str:
    """A SKILL.md text with `name` and the given frontmatter lines."""
    head = [f"name: {name}"] if name else []
    return "---\n" + "".join(f"{line}\n" for line in [*head, *lines]) + "---\n" + body


def _desc(name: str, *lines: str, body: str = "# Body\n\nDo it.\n") -> str:
    return _fm(name, "description: A skill.", *lines, body=body)


@dataclass(frozen=True)
class Layout:
    ws: Path
    lib: Path
    outside: Path


@dataclass(frozen=True)
class Variant:
    id: str
    field: str
    build: Callable[[Layout], list[Path]]
    """Writes the bad skill(s) into the library; returns the SKILL.md path(s) that must be refused."""
    text: str | None = None
    """The file text, when the variant is a single plain file (checked with check_text too)."""
    folder: str | None = None


def _write(folder: Path, content: str | bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    file = folder / SKILL_FILENAME
    if isinstance(content, bytes):
        file.write_bytes(content)
    else:
        file.write_bytes(content.encode("utf-8"))
    return file


def file_variant(vid: str, folder: str, field: str, content: str | bytes) -> Variant:
    return Variant(vid, field, lambda lay: [_write(lay.lib / folder, content)],
                   content if isinstance(content, str) else None, folder)


def _duplicate(lay: Layout) -> list[Path]:
    return [_write(lay.lib / "a" / "dup", VALID_SKILL.format(name="dup")),
            _write(lay.lib / "b" / "dup", VALID_SKILL.format(name="dup"))]


def _symlinked_file(lay: Layout) -> list[Path]:
    target = _write(lay.outside / "escape", VALID_SKILL.format(name="escape"))
    folder = lay.lib / "escape"
    folder.mkdir()
    (folder / SKILL_FILENAME).symlink_to(target)
    return [folder / SKILL_FILENAME]


def _symlinked_folder(lay: Layout) -> list[Path]:
    _write(lay.outside / "linked", VALID_SKILL.format(name="linked"))
    (lay.lib / "linked").symlink_to(lay.outside / "linked", target_is_directory=True)
    return [lay.lib / "linked" / SKILL_FILENAME]


LONG = "a" * 65
NEWLINE_NAME = "trailing-newline\n"

FILE_VARIANTS = [
    file_variant("no-frontmatter", "no-frontmatter", "frontmatter", "# Just markdown\n\nname: no-frontmatter\n"),
    file_variant("frontmatter-not-first-line", "late-frontmatter", "frontmatter",
                 "\n" + _desc("late-frontmatter")),
    file_variant("bad-yaml", "bad-yaml", "frontmatter", _fm("bad-yaml", "description: [unclosed, list")),
    file_variant("bad-yaml-tab-indent", "tab-indent", "frontmatter",
                 _fm("tab-indent", "description: d", "metadata:", "\tversion: '1'")),
    file_variant("unclosed-frontmatter", "unclosed", "frontmatter",
                 "---\nname: unclosed\ndescription: never closed\n# Body\n\nDo it.\n"),
    file_variant("frontmatter-is-list", "list-frontmatter", "frontmatter",
                 "---\n- name: list-frontmatter\n- description: d\n---\n# Body\n"),
    file_variant("frontmatter-is-scalar", "scalar-frontmatter", "frontmatter", "---\njust a sentence\n---\n# Body\n"),
    file_variant("frontmatter-empty", "empty-frontmatter", "frontmatter", "---\n---\n# Body\n"),
    file_variant("name-not-folder", "folder-name", "name", _desc("other-name")),
    file_variant("name-capitals", "Capital-Name", "name", _desc("Capital-Name")),
    file_variant("name-double-hyphen", "double--hyphen", "name", _desc("double--hyphen")),
    file_variant("name-leading-hyphen", "-leading-hyphen", "name", _desc('"-leading-hyphen"')),
    file_variant("name-trailing-hyphen", "trailing-hyphen-", "name", _desc("trailing-hyphen-")),
    file_variant("name-underscore", "under_score", "name", _desc("under_score")),
    file_variant("name-over-64", LONG, "name", _desc(LONG)),
    file_variant("name-missing", "name-missing", "name", _desc("")),
    file_variant("name-empty", "name-empty", "name", _fm("", 'name: ""', "description: d")),
    file_variant("name-not-string", "123", "name", _desc("123")),
    file_variant("description-missing", "no-description", "description", _fm("no-description", "license: MIT")),
    file_variant("description-empty", "empty-description", "description", _fm("empty-description", 'description: ""')),
    file_variant("description-whitespace", "blank-description", "description",
                 _fm("blank-description", 'description: "   \\t  "')),
    file_variant("description-null", "null-description", "description", _fm("null-description", "description:")),
    file_variant("description-list", "list-description", "description",
                 _fm("list-description", "description: [one, two]")),
    file_variant("license-list", "list-license", "license", _desc("list-license", "license: [MIT, Apache-2.0]")),
    file_variant("use-when-list", "list-use-when", "use_when", _desc("list-use-when", "use_when: [a, b]")),
    file_variant("compatibility-list", "list-compat", "compatibility",
                 _desc("list-compat", "compatibility: [python, git]")),
    file_variant("allowed-tools-mapping", "map-tools", "allowed-tools",
                 _desc("map-tools", "allowed-tools: {Bash: yes}")),
    file_variant("keywords-mapping", "map-keywords", "keywords", _desc("map-keywords", "keywords: {a: b}")),
    file_variant("examples-non-string-items", "bad-examples", "examples",
                 _desc("bad-examples", "examples: [1, {a: b}]")),
    file_variant("not-for-null-item", "null-not-for", "not_for", _desc("null-not-for", "not_for: [ok, null]")),
    file_variant("keywords-blank-item", "blank-keyword", "keywords", _desc("blank-keyword", 'keywords: [ok, "  "]')),
    file_variant("dependencies-number", "number-deps", "dependencies", _desc("number-deps", "dependencies: 5")),
    file_variant("metadata-not-mapping", "list-metadata", "metadata", _desc("list-metadata", "metadata: [a, b]")),
    file_variant("metadata-string", "string-metadata", "metadata", _desc("string-metadata", "metadata: v1")),
    file_variant("metadata-value-list", "list-meta-value", "metadata.version",
                 _desc("list-meta-value", "metadata: {version: [1, 2]}")),
    file_variant("metadata-value-null", "null-meta-value", "metadata.owner",
                 _desc("null-meta-value", "metadata: {owner: null}")),
    file_variant("non-utf8", "latin1", "encoding",
                 b"---\nname: latin1\ndescription: caf\xe9 cr\xe8me\n---\n# Body\n"),
    file_variant("utf16", "utf16", "encoding", _desc("utf16").encode("utf-16")),
    file_variant("empty-body", "empty-body", "body", _desc("empty-body", body="")),
    file_variant("whitespace-body", "blank-body", "body", _desc("blank-body", body="  \n\t\n\n   ")),
    file_variant("empty-file", "empty-file", "frontmatter", ""),
    file_variant("name-trailing-newline", NEWLINE_NAME, "name", _desc('"trailing-newline\\n"')),
]

SPECIAL_VARIANTS = [
    Variant("duplicate-name", "name", _duplicate),
    Variant("symlinked-file-escapes", "path", _symlinked_file),
    Variant("symlinked-folder-escapes", "path", _symlinked_folder),
]

KNOWN_BUGS: dict[str, pytest.MarkDecorator] = {}
SCAN_BUGS: dict[str, pytest.MarkDecorator] = {}


def _params(variants: list[Variant], bugs: dict[str, pytest.MarkDecorator]) -> list[object]:
    return [pytest.param(v, id=v.id, marks=[bugs[v.id]] if v.id in bugs else []) for v in variants]


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    lay = Layout(ws=tmp_path / "ws", lib=tmp_path / "ws" / "skills", outside=tmp_path / "outside")
    lay.lib.mkdir(parents=True)
    lay.outside.mkdir()
    for name, text in GOOD.items():
        _write(lay.lib / name, text)
    return lay


def test_there_are_enough_variants() -> None:
    assert len(FILE_VARIANTS) + len(SPECIAL_VARIANTS) >= 20
    ids = [v.id for v in FILE_VARIANTS + SPECIAL_VARIANTS]
    assert len(ids) == len(set(ids))


def test_good_library_alone_loads(layout: Layout) -> None:
    report = scan(layout.lib, layout.ws, strict=True)
    assert report.errors == []
    assert sorted(report.skills) == sorted(GOOD)


@pytest.mark.parametrize("variant", _params([*FILE_VARIANTS, *SPECIAL_VARIANTS[1:]], KNOWN_BUGS))
def test_load_folder_names_file_and_field(layout: Layout, variant: Variant) -> None:
    (bad,) = variant.build(layout)
    for strict in (False, True):
        with pytest.raises(SkillFileError) as info:
            load_folder(bad.parent, layout.ws, strict=strict)
        err = info.value
        assert err.file == str(bad), err
        assert err.field == variant.field, err
        assert err.rule
        assert str(bad) in str(err) and f"field '{variant.field}'" in str(err)


@pytest.mark.parametrize("variant", _params(SPECIAL_VARIANTS[1:], {}))
def test_symlinked_skill_loads_when_no_root_bounds_it(layout: Layout, variant: Variant) -> None:
    """The escape is what is refused: without a bound (root=None) the same folder loads."""
    (bad,) = variant.build(layout)
    assert load_folder(bad.parent).skill.name == bad.parent.name


@pytest.mark.parametrize("variant", _params([*FILE_VARIANTS, *SPECIAL_VARIANTS], SCAN_BUGS))
def test_scan_isolates_the_bad_skill(layout: Layout, variant: Variant) -> None:
    bad_files = variant.build(layout)
    report = scan(layout.lib, layout.ws)
    assert sorted(report.skills) == sorted(GOOD)
    for name, loaded in report.skills.items():
        assert loaded.warnings == []
        assert loaded.path == layout.lib / name
    assert sorted(e.file for e in report.errors) == sorted(str(f) for f in bad_files)
    assert all(isinstance(e, SkillFileError) and e.field == variant.field for e in report.errors), report.errors


@pytest.mark.parametrize("variant", _params([v for v in FILE_VARIANTS if v.text is not None], KNOWN_BUGS))
def test_check_text_reports_the_field_as_an_error(variant: Variant) -> None:
    assert variant.text is not None
    skill, issues = check_text(variant.text, "mem.md", variant.folder)
    assert skill is None
    errors = [i for i in issues if i.severity is Severity.ERROR]
    assert errors, issues
    assert all(i.file == "mem.md" for i in issues)
    assert variant.field in {i.field for i in errors}


@pytest.mark.parametrize("raw", [b"\xff\xfe", b"---\nname: x\x80\n", b"\xc3\x28"], ids=["bom16", "stray-cont", "bad-pair"])
def test_decode_names_file_and_encoding(raw: bytes) -> None:
    with pytest.raises(SkillFileError) as info:
        decode(raw, "some/SKILL.md")
    assert (info.value.file, info.value.field) == ("some/SKILL.md", "encoding")
    assert "byte" in info.value.rule


def test_duplicate_names_both_refused_and_each_loads_alone(layout: Layout) -> None:
    files = _duplicate(layout)
    report = scan(layout.lib, layout.ws)
    assert "dup" not in report.skills
    assert sorted(e.file for e in report.errors) == sorted(str(f) for f in files)
    for e in report.errors:
        assert e.field == "name" and "a/dup" in e.rule and "b/dup" in e.rule
    for f in files:  # each alone is a good skill: the conflict is what is refused
        assert load_folder(f.parent, layout.ws).skill.name == "dup"


def test_name_with_trailing_newline_is_refused_without_a_folder() -> None:
    text = _desc('"trailing-newline\\n"')
    with pytest.raises(SkillFileError) as info:
        parse(text, "mem.md")
    assert (info.value.file, info.value.field) == ("mem.md", "name")


def test_whole_library_of_bad_skills_still_loads_the_good_ones(layout: Layout) -> None:
    """All variants at once (except the known bugs): exactly the 2 good skills load."""
    expected: dict[str, str] = {}
    for v in [*FILE_VARIANTS, *SPECIAL_VARIANTS]:
        if v.id in SCAN_BUGS:
            continue
        for f in v.build(layout):
            expected[str(f)] = v.field
    report = scan(layout.lib, layout.ws)
    assert sorted(report.skills) == sorted(GOOD)
    assert {e.file: e.field for e in report.errors} == expected
    assert len(report.errors) == len(expected)


def test_hidden_folders_are_not_scanned(layout: Layout) -> None:
    _write(layout.lib / ".trash" / "broken", "not a skill")
    report = scan(layout.lib, layout.ws)
    assert sorted(report.skills) == sorted(GOOD) and report.errors == []


def test_skill_file_error_str_is_one_line_with_file_field_rule(layout: Layout) -> None:
    bad = _write(layout.lib / "folder-name", _desc("other-name"))
    with pytest.raises(SkillFileError) as info:
        load_folder(bad.parent, layout.ws)
    assert str(info.value) == f"{bad}: field 'name': {info.value.rule}"
    assert "folder-name" in info.value.rule and "other-name" in info.value.rule
    assert os.linesep not in str(info.value)
