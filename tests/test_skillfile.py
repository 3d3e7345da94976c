"""The SKILL.md contract: every spec-valid file loads, render round-trips, strict export is pure
spec, and the lenient/strict split (warnings on load, errors under strict) holds, in the library
and in the `skillforge skills validate` CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import BENCH_SKILLS, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillforge.skill import file as skillfile
from skillforge.errors import SkillFileError
from skillforge.skill.file import (
    LIST_EXTENSIONS,
    SPEC_KEYS,
    check_text,
    load_folder,
    parse,
    render,
    scan,
    split_frontmatter,
)
from skillforge.skill.export import export_strict
from skillforge.state.skill import Severity, SkillFile

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
EXAMPLE_SKILLS = REPO / "skills"
SPEC_SKILLS = TESTS / "fixtures" / "spec_skills"
LENIENT_SKILLS = TESTS / "fixtures" / "lenient_skills"

EXTENSION_KEYS = ("use_when", *LIST_EXTENSIONS)


def _folders(base: Path) -> list[Path]:
    return sorted(p.parent for p in base.glob("*/SKILL.md"))


def _ids(folders: list[Path]) -> list[str]:
    return [f"{f.parent.name}/{f.name}" for f in folders]


BENCH_FOLDERS = _folders(BENCH_SKILLS)
SPEC_FOLDERS = _folders(SPEC_SKILLS)
EXAMPLE_FOLDERS = _folders(EXAMPLE_SKILLS)
LENIENT_FOLDERS = _folders(LENIENT_SKILLS)
VALID_FOLDERS = BENCH_FOLDERS + SPEC_FOLDERS + EXAMPLE_FOLDERS
ALL_FOLDERS = VALID_FOLDERS + LENIENT_FOLDERS


def _raw_frontmatter(folder: Path) -> dict[str, object]:
    fm, _ = split_frontmatter((folder / "SKILL.md").read_text(encoding="utf-8"))
    data = yaml.safe_load(fm)
    assert isinstance(data, dict)
    return data


def _is_str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)


# --------------------------------------------------------------------------------------------
# The corpora are where the tests expect them
# --------------------------------------------------------------------------------------------


def test_corpora_are_present() -> None:
    assert len(BENCH_FOLDERS) == 14, BENCH_SKILLS
    assert len(SPEC_FOLDERS) == 5
    assert len(EXAMPLE_FOLDERS) == 10
    assert [f.name for f in LENIENT_FOLDERS] == ["long-description", "unknown-key"]


# --------------------------------------------------------------------------------------------
# Every agentskills.io-valid SKILL.md loads
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("base, count", [(BENCH_SKILLS, 14), (SPEC_SKILLS, 5), (EXAMPLE_SKILLS, 10)],
                         ids=["bench", "spec", "examples"])
def test_scan_loads_every_skill_with_no_errors_and_no_warnings(base: Path, count: int) -> None:
    report = scan(base)
    assert report.errors == []
    assert report.warnings == []
    assert sorted(report.skills) == sorted(f.name for f in _folders(base))
    assert len(report.skills) == count
    strict = scan(base, strict=True)
    assert strict.errors == [] and len(strict.skills) == count


@pytest.mark.parametrize("folder", VALID_FOLDERS, ids=_ids(VALID_FOLDERS))
def test_valid_skill_loads_clean_even_when_strict(folder: Path) -> None:
    loaded = load_folder(folder, folder.parent, strict=True)
    assert loaded.warnings == []
    assert loaded.path == folder
    assert loaded.skill.name == folder.name
    assert loaded.skill.description.strip()
    assert loaded.skill.body.strip()
    skill, issues = check_text((folder / "SKILL.md").read_text(encoding="utf-8"), "f", folder.name)
    assert issues == [] and skill == loaded.skill


@pytest.mark.parametrize("folder", BENCH_FOLDERS, ids=_ids(BENCH_FOLDERS))
def test_bench_skill_extensions_are_typed(folder: Path) -> None:
    skill = load_folder(folder, BENCH_SKILLS).skill
    raw = _raw_frontmatter(folder)
    assert isinstance(skill.use_when, str) and skill.use_when.strip()
    assert skill.use_when == raw["use_when"]
    assert skill.effective_use_when == skill.use_when
    for key in LIST_EXTENSIONS:
        value = getattr(skill, key)
        assert _is_str_list(value), (key, value)
        assert key in raw, f"bench skill {folder.name} is expected to declare {key}"
        assert value == raw[key]
        if key != "dependencies":  # code-review, translate-text, unit-convert need no tool
            assert value, f"bench skill {folder.name} is expected to fill {key}"
    assert isinstance(skill.metadata, dict)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in skill.metadata.items())
    assert isinstance(skill.version, str) and skill.version == skill.metadata["version"]
    assert skill.version == raw["metadata"]["version"]  # type: ignore[index]
    assert skill.extra == {}


@pytest.mark.parametrize("folder", SPEC_FOLDERS, ids=_ids(SPEC_FOLDERS))
def test_spec_only_skill_gets_defaults(folder: Path) -> None:
    assert (folder / "scripts").is_dir() and (folder / "references").is_dir()
    raw = _raw_frontmatter(folder)
    assert set(raw) <= set(SPEC_KEYS), "a spec-only fixture must use spec keys only"
    skill = load_folder(folder, SPEC_SKILLS, strict=True).skill
    assert skill.use_when is None
    assert skill.effective_use_when == skill.description
    assert skill.keywords == [] and skill.examples == [] and skill.not_for == [] and skill.dependencies == []
    assert skill.extra == {}
    assert skill.description == raw["description"]
    for key, attr in (("license", "license"), ("compatibility", "compatibility"), ("allowed-tools", "allowed_tools")):
        assert getattr(skill, attr) == raw.get(key)
    assert skill.metadata == {str(k): str(v) for k, v in (raw.get("metadata") or {}).items()}  # type: ignore[union-attr]


def test_body_is_kept_byte_for_byte() -> None:
    folder = SPEC_FOLDERS[0]
    text = (folder / "SKILL.md").read_text(encoding="utf-8")
    skill = load_folder(folder, SPEC_SKILLS).skill
    assert text.endswith(skill.body)
    assert text[: len(text) - len(skill.body)].rstrip("\n").endswith("---")


# --------------------------------------------------------------------------------------------
# Lenient load, strict validate
# --------------------------------------------------------------------------------------------

LENIENT_CASES = [("long-description", "description"), ("unknown-key", "author")]


@pytest.mark.parametrize("folder_name, field", LENIENT_CASES)
def test_lenient_fixture_loads_with_a_warning(folder_name: str, field: str) -> None:
    folder = LENIENT_SKILLS / folder_name
    loaded = load_folder(folder, LENIENT_SKILLS)
    assert loaded.skill.name == folder_name
    assert [(w.field, w.severity) for w in loaded.warnings] == [(field, Severity.WARNING)]
    assert loaded.warnings[0].file == str(folder / "SKILL.md")
    assert loaded.warnings[0].rule


@pytest.mark.parametrize("folder_name, field", LENIENT_CASES)
def test_lenient_fixture_fails_under_strict(folder_name: str, field: str) -> None:
    folder = LENIENT_SKILLS / folder_name
    with pytest.raises(SkillFileError) as info:
        load_folder(folder, LENIENT_SKILLS, strict=True)
    assert info.value.field == field
    assert info.value.file == str(folder / "SKILL.md")
    assert info.value.rule
    assert f"field '{field}'" in str(info.value) and str(folder / "SKILL.md") in str(info.value)
    text = (folder / "SKILL.md").read_text(encoding="utf-8")
    with pytest.raises(SkillFileError) as info2:
        parse(text, "x.md", folder_name, strict=True)
    assert (info2.value.file, info2.value.field) == ("x.md", field)
    assert parse(text, "x.md", folder_name).name == folder_name  # lenient parse still works


def test_long_description_fixture_is_over_the_spec_cap() -> None:
    skill = load_folder(LENIENT_SKILLS / "long-description").skill
    assert len(skill.description) == 1068


def test_unknown_key_is_kept_in_extra() -> None:
    skill = load_folder(LENIENT_SKILLS / "unknown-key").skill
    assert skill.extra == {"author": "someone"}
    assert "author: someone" in render(skill)


def test_scan_lenient_vs_strict() -> None:
    lenient = scan(LENIENT_SKILLS)
    assert sorted(lenient.skills) == ["long-description", "unknown-key"]
    assert lenient.errors == []
    assert sorted(w.field for w in lenient.warnings) == ["author", "description"]
    strict = scan(LENIENT_SKILLS, strict=True)
    assert strict.skills == {}
    assert sorted((Path(e.file).parent.name, e.field) for e in strict.errors) == sorted(LENIENT_CASES)


@pytest.mark.parametrize("text, field", [
    ("---\nname: x\ndescription: d\nmetadata: {version: 1.0}\n---\nbody\n", "metadata.version"),
    ("---\nname: x\ndescription: d\nkeywords: weather\n---\nbody\n", "keywords"),
    ("---\nname: x\ndescription: d\nallowed-tools: [Read, Write]\n---\nbody\n", "allowed-tools"),
    ("---\nname: x\ndescription: d\ncompatibility: '" + "c" * 501 + "'\n---\nbody\n", "compatibility"),
    ("---\nname: x\ndescription: '" + "d" * 1025 + "'\n---\nbody\n", "description"),
], ids=["metadata-number", "keywords-string", "allowed-tools-list", "compatibility-501", "description-1025"])
def test_tolerated_rules_warn_leniently_and_fail_strictly(text: str, field: str) -> None:
    skill, issues = check_text(text, "f.md", "x")
    assert skill is not None
    assert [(i.field, i.severity) for i in issues] == [(field, Severity.WARNING)]
    with pytest.raises(SkillFileError) as info:
        parse(text, "f.md", "x", strict=True)
    assert (info.value.file, info.value.field) == ("f.md", field)


def test_tolerated_values_are_coerced_to_their_types() -> None:
    text = ("---\nname: x\ndescription: d\nmetadata: {version: 1.0, n: 3}\nkeywords: weather\n"
            "allowed-tools: [Read, Write]\n---\nbody\n")
    skill = parse(text)
    assert skill.metadata == {"version": "1.0", "n": "3"}
    assert skill.keywords == ["weather"]
    assert skill.allowed_tools == "Read Write"


def test_spec_limits_are_inclusive() -> None:
    name = "a" * 64
    text = f"---\nname: {name}\ndescription: '{'d' * 1024}'\ncompatibility: '{'c' * 500}'\n---\nbody\n"
    skill, issues = check_text(text, "f", name)
    assert issues == [] and skill is not None and len(skill.description) == 1024


def test_a_skill_md_over_one_mib_is_an_error_at_one_byte_over(tmp_path: Path) -> None:
    """A 30 MB SKILL.md used to import, publish and be served whole; now it is refused, at exactly
    1 MiB + 1 byte (multi-byte characters counted as UTF-8), before any field is read."""
    head = "---\nname: big\ndescription: too big\n---\n"
    fill = skillfile.SKILL_MD_MAX_BYTES - len(head.encode())
    at_cap = head + "好" * (fill // 3) + "x" * (fill % 3)
    assert len(at_cap.encode()) == skillfile.SKILL_MD_MAX_BYTES
    skill, issues = check_text(at_cap, "f", "big")
    assert skill is not None and issues == []
    skill, issues = check_text(at_cap + "x", "f", "big")
    assert skill is None and [(i.field, i.severity) for i in issues] == [("size", Severity.ERROR)]
    assert f"{skillfile.SKILL_MD_MAX_BYTES + 1:,} bytes (1.0 MiB), over the 1,048,576 (1 MiB) a SKILL.md may hold" \
        in issues[0].rule  # was "1.0 MiB; ... at most 1 MiB", which read as a pass (QA 42 F4)
    (tmp_path / "big").mkdir()
    (tmp_path / "big" / "SKILL.md").write_text(at_cap + "x" * 30_000_000)
    with pytest.raises(SkillFileError, match="29.6 MiB"):
        skillfile.load_folder(tmp_path / "big")


def test_bom_and_crlf_files_load(tmp_path: Path) -> None:
    folder = tmp_path / "crlf-skill"
    folder.mkdir()
    text = "---\r\nname: crlf-skill\r\ndescription: Windows line ends\r\n---\r\n# Title\r\nstep one\r\n"
    (folder / "SKILL.md").write_bytes(("\ufeff" + text).encode("utf-8"))
    loaded = load_folder(folder, tmp_path, strict=True)
    assert loaded.skill.description == "Windows line ends"
    assert loaded.skill.body == "# Title\r\nstep one\r\n"
    assert parse(render(loaded.skill), folder="crlf-skill") == loaded.skill


# --------------------------------------------------------------------------------------------
# render round-trips
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("folder", ALL_FOLDERS, ids=_ids(ALL_FOLDERS))
def test_render_round_trips_every_real_skill(folder: Path) -> None:
    skill = load_folder(folder).skill
    text = render(skill)
    again = parse(text, "rendered", folder.name)
    assert again == skill
    assert render(again) == text
    # the rendered file carries the same frontmatter data as the original
    fm, body = split_frontmatter(text)
    assert body == skill.body
    data = yaml.safe_load(fm)
    raw = _raw_frontmatter(folder)
    def comparable(d: dict[str, object]) -> dict[str, object]:  # render leaves out empty lists
        return {k: v for k, v in d.items() if k != "metadata" and v != []}
    assert comparable(data) == comparable(raw)


EDGE_SKILLS = {
    "dashes-in-description": dict(description="a\n---\nb"),
    "trailing-dashes": dict(description="a\n---"),
    "ellipsis": dict(description="a\n...\nb", use_when="..."),
    "leading-trailing-space": dict(description="  padded  ", use_when=" x "),
    "newlines": dict(description="\nfirst\n\nsecond\n"),
    "colons-quotes": dict(description="a: b 'c' \"d\" #e", keywords=["k: v", "'q'", '"dq"', "- dash"]),
    "yaml-lookalikes": dict(description="null", license="true", compatibility="1.0",
                            allowed_tools="~", use_when="no", metadata={"version": "1.0", "on": "yes"}),
    "chinese": dict(description="查询天气：北京", use_when="用户询问天气", keywords=["天气", "气温"],
                    examples=["北京今天天气怎么样？"], metadata={"作者": "张三"}),
    "unicode-spaces": dict(description="\u3000全角\xa0空格\u200b", body="\ufeffbody"),
    "tabs": dict(description="\tindented\t", examples=["a\tb"]),
    "empty-strings": dict(use_when="", license="", metadata={"": ""}),
    "crlf-body": dict(body="\r\n# T\r\nstep\r\n"),
    "body-starts-with-dashes": dict(body="---\nnot frontmatter\n---\n"),
    "body-without-newline": dict(body="x"),
    "emoji": dict(description="🌧️ rain", not_for=["☀️"]),
    "line-separators": dict(description="a\x85b\u2028c\u2029d"),
    "extra-values": dict(extra={"author": "someone", "tags": ["a", 1, None, {"k": [True, 2.5]}]}),
}


@pytest.mark.parametrize("update", list(EDGE_SKILLS.values()), ids=list(EDGE_SKILLS))
def test_render_round_trips_edge_cases(update: dict[str, object]) -> None:
    skill = SkillFile(**{"name": "edge", "description": "d", "body": "body\n", **update})  # type: ignore[arg-type]
    assert parse(render(skill), "f", "edge") == skill


_TEXT_CHARS = st.one_of(
    st.characters(exclude_categories=("Cs", "Cc", "Cf", "Co", "Cn", "Zl", "Zp")),  # Cf: refused by --strict
    st.sampled_from(list("天气预报北京上海中文：，。？“”") + [":", "'", '"', "#", "-", " ", "\t", "\n", "{", "[", "|", ">", "&", "*", "!", "%", "@", "`"]),
)
_text = st.text(_TEXT_CHARS, max_size=60)
_nonblank = _text.filter(lambda s: bool(s.strip()))
_segment = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=12)
_names = st.lists(_segment, min_size=1, max_size=8).map("-".join).filter(lambda s: len(s) <= 64)
_bodies = st.lists(_text, min_size=1, max_size=6).map("\n".join).filter(lambda s: bool(s.strip()))
_meta_keys = _text.filter(lambda k: not k.startswith(skillfile.EXPORT_PREFIX))

skill_files = st.builds(
    SkillFile,
    name=_names,
    description=_nonblank,
    license=st.none() | _text,
    compatibility=st.none() | _text,
    allowed_tools=st.none() | _text,
    metadata=st.dictionaries(_meta_keys, _text, max_size=4),
    use_when=st.none() | _text,
    not_for=st.lists(_nonblank, max_size=3),
    keywords=st.lists(_nonblank, max_size=4),
    examples=st.lists(_nonblank, max_size=3),
    dependencies=st.lists(_nonblank, max_size=3),
    body=_bodies,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(skill_files)
def test_render_round_trip_property(skill: SkillFile) -> None:
    text = render(skill)
    again, issues = check_text(text, "gen", skill.name)
    assert [i for i in issues if i.severity is Severity.ERROR] == []
    assert again == skill
    assert render(again) == text


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(skill_files)
def test_export_strict_property(skill: SkillFile) -> None:
    text = export_strict(skill)
    spec = parse(text, "exported", skill.name, strict=True)
    _assert_pure_spec(text)
    _assert_extensions_preserved(skill, spec, text)


# --------------------------------------------------------------------------------------------
# export_strict writes a pure-spec file
# --------------------------------------------------------------------------------------------


def _assert_pure_spec(text: str) -> None:
    fm, _ = split_frontmatter(text)
    data = yaml.safe_load(fm)
    assert set(data) <= set(SPEC_KEYS), set(data) - set(SPEC_KEYS)
    for key in ("name", "description", "license", "compatibility", "allowed-tools"):
        assert key not in data or isinstance(data[key], str)
    metadata = data.get("metadata", {})
    assert isinstance(metadata, dict)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())


def _assert_extensions_preserved(skill: SkillFile, spec: SkillFile, text: str) -> None:
    """The export's text carries SkillForge's fields under `metadata` as `skillforge.<key>`, and read
    back (skill/lift.py) they are the fields again, so an exported skill imported elsewhere routes as
    before; unknown top-level keys stay in metadata as `skillforge.extra.<key>`."""
    prefix = skillfile.EXPORT_PREFIX
    written = yaml.safe_load(split_frontmatter(text)[0]).get("metadata", {})
    assert written.get(f"{prefix}use_when") == skill.use_when
    for key in LIST_EXTENSIONS:
        exported = written.get(f"{prefix}{key}")
        if getattr(skill, key):
            assert exported is not None and json.loads(exported) == getattr(skill, key)
        else:
            assert exported is None
    assert spec.use_when == skill.use_when and spec.extra == {}
    assert all(getattr(spec, k) == getattr(skill, k) for k in LIST_EXTENSIONS)
    # an empty `compatibility` breaks the spec's 1-500 rule, so a strict export drops it
    compatibility = skill.compatibility if skill.compatibility and skill.compatibility.strip() else None
    assert (spec.name, spec.description, spec.license, spec.compatibility, spec.allowed_tools, spec.body) == (
        skill.name, skill.description, skill.license, compatibility, skill.allowed_tools, skill.body)
    assert {k: v for k, v in spec.metadata.items() if not k.startswith(prefix)} == skill.metadata
    assert {k for k in spec.metadata if k.startswith(prefix)} == {f"{prefix}extra.{k}" for k in skill.extra}


@pytest.mark.parametrize("folder", VALID_FOLDERS, ids=_ids(VALID_FOLDERS))
def test_export_strict_is_pure_spec(folder: Path) -> None:
    skill = load_folder(folder).skill
    text = export_strict(skill)
    spec = parse(text, "exported", folder.name, strict=True)
    _assert_pure_spec(text)
    _assert_extensions_preserved(skill, spec, text)
    if skill.use_when is None and not any(getattr(skill, k) for k in LIST_EXTENSIONS):
        assert spec == skill  # a spec-only skill exports unchanged
        assert text == render(skill)


def test_export_strict_of_a_bench_skill_moves_every_extension(tmp_path: Path) -> None:
    skill = load_folder(BENCH_SKILLS / "weather-query").skill
    text = export_strict(skill)
    data = yaml.safe_load(split_frontmatter(text)[0])
    assert sorted(k for k in data["metadata"] if k.startswith("skillforge.")) == sorted(
        f"skillforge.{k}" for k in EXTENSION_KEYS)
    assert data["metadata"]["version"] == skill.version
    # the export is itself a valid skill file on disk
    folder = tmp_path / "weather-query"
    folder.mkdir()
    (folder / "SKILL.md").write_text(text, encoding="utf-8")
    assert load_folder(folder, tmp_path, strict=True).warnings == []


def test_export_strict_moves_unknown_keys_under_metadata() -> None:
    skill = load_folder(LENIENT_SKILLS / "unknown-key").skill
    text = export_strict(skill)
    spec = parse(text, "exported", "unknown-key", strict=True)
    _assert_pure_spec(text)
    moved = {k: v for k, v in spec.metadata.items() if k.startswith("skillforge.")}
    assert len(moved) == 1
    (key, value), = moved.items()
    assert key.endswith("author") and json.loads(value) == "someone"


def test_export_strict_refuses_a_long_description() -> None:
    skill = load_folder(LENIENT_SKILLS / "long-description").skill
    with pytest.raises(SkillFileError) as info:
        export_strict(skill, "long.md")
    assert info.value.field == "description"
    assert info.value.file == "long.md"
    generated = SkillFile(name="x", description="d" * 1025, body="b")
    with pytest.raises(SkillFileError) as info2:
        export_strict(generated)
    assert info2.value.field == "description"
    assert export_strict(generated.model_copy(update={"description": "d" * 1024}))


# --------------------------------------------------------------------------------------------
# CLI: skillforge skills validate
# --------------------------------------------------------------------------------------------


def _validate(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(["skills", "validate", *args], cwd=REPO, ok=None)


def test_cli_validate_lenient_exits_0_and_prints_warnings() -> None:
    proc = _validate("tests/fixtures/lenient_skills")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("warning") >= 2
    assert "field 'description'" in proc.stdout and "field 'author'" in proc.stdout
    assert "long-description" in proc.stdout and "unknown-key" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_cli_validate_strict_reports_errors() -> None:
    proc = _validate("tests/fixtures/lenient_skills", "--strict")
    assert "field 'description'" in proc.stdout and "field 'author'" in proc.stdout
    assert "2 failing" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_cli_validate_strict_exits_1() -> None:
    proc = _validate("tests/fixtures/lenient_skills", "--strict")
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)


def test_cli_validate_json() -> None:
    proc = _validate("tests/fixtures/lenient_skills", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"] is True
    assert report["checked"] == 2
    issues = report["issues"]
    assert sorted((Path(i["file"]).parent.name, i["field"], i["severity"]) for i in issues) == [
        ("long-description", "description", "warning"), ("unknown-key", "author", "warning")]
    assert all(i["rule"] for i in issues)


def test_cli_validate_json_strict_is_not_ok() -> None:
    report = json.loads(_validate("tests/fixtures/lenient_skills", "--json", "--strict").stdout)
    assert report["ok"] is False
    assert len(report["issues"]) == 2


def test_cli_validate_bench_skills_is_clean() -> None:
    proc = _validate(str(BENCH_SKILLS), "--json", "--strict")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report == {"checked": 14, "issues": [], "ok": True}


def test_cli_validate_malformed_exits_1(tmp_path: Path) -> None:
    folder = tmp_path / "lib" / "broken"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("# no frontmatter\n", encoding="utf-8")
    proc = _validate(str(tmp_path / "lib"), "--json")
    report = json.loads(proc.stdout)
    assert report["ok"] is False and report["issues"][0]["field"] == "frontmatter"
    assert proc.returncode == 1


def test_export_strict_refuses_to_overwrite_a_reserved_metadata_key() -> None:
    skill = parse("---\nname: a\ndescription: d\nmetadata: {skillforge.keywords: mine}\nkeywords: [x]\n---\nbody\n")
    with pytest.raises(SkillFileError) as e:
        export_strict(skill)
    assert e.value.field == "metadata.skillforge.keywords"


def test_empty_compatibility_warns_and_is_dropped_by_strict_export() -> None:
    text = "---\nname: a\ndescription: d\ncompatibility: ''\n---\nbody\n"
    skill, issues = check_text(text, "f", "a")
    assert skill is not None and [(i.field, i.severity) for i in issues] == [("compatibility", Severity.WARNING)]
    assert "compatibility" not in export_strict(skill)
