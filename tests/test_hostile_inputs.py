"""The catalogue of hostile inputs (issue 8): each test names the numbered item it guards.

Item 2, alias bombs and other frontmatters that expand past a bound; item 3, markup and control
characters in what the CLI prints; item 9, YAML read as agents read it (1.2 core, duplicate keys);
item 10, unusable metadata.version values; item 16, validate --strict vs export --strict.
The CLI is always the real `skillforge` process (conftest.run_cli)."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import pty
import select
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import flat, run_cli
from rich.console import Console

from skillforge.skill import file as skillfile
from skillforge.skill.export import export_strict
from skillforge.cli.output import json_safe, plain, safe, styled
from skillforge.errors import SkillFileError
from skillforge.rules import frontmatter as fm_rules
from skillforge.rules.frontmatter import Expansion, expansion_violation
from skillforge.state.skill import Severity, SkillFile

GOOD = {
    "good-one": "---\nname: good-one\ndescription: The first good skill.\n---\n# Body\n\nDo one.\n",
    "good-two": ("---\nname: good-two\ndescription: The second good skill.\nmetadata: {version: \"1.2.0\"}\n"
                 "keywords: [two]\n---\n# Body\n\nDo two.\n"),
}


def _skill(folder: Path, text: str | bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8") if isinstance(text, str) else text
    (folder / "SKILL.md").write_bytes(data)
    return folder


def _text(name: str, *lines: str, body: str = "# Body\n\nDo it.\n") -> str:
    return "---\n" + "".join(f"{line}\n" for line in [f"name: {name}", *lines]) + "---\n" + body


def _issues(text: str, folder: str = "x") -> list[tuple[str, Severity, str]]:
    return [(i.field, i.severity, i.rule) for i in skillfile.check_text(text, "f.md", folder)[1]]


def billion_laughs(name: str, levels: int = 9, width: int = 9) -> str:
    """The classic alias bomb: `width ** levels` strings (387 million here) from 73 lines."""
    lines = ["description: A bomb.", "x0: &a0 [" + ",".join(['"lol"'] * width) + "]"]
    lines += [f"x{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    return _text(name, *lines, body="# Body\n\nboom\n")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    run_cli(["init", str(root)])
    return root


# ---- item 2: bounded frontmatter ---------------------------------------------------------------
def test_item2_alias_bomb_among_good_skills_is_named_and_the_good_ones_import(tmp_path: Path, ws: Path) -> None:
    src = tmp_path / "src"
    for name, text in GOOD.items():
        _skill(src / name, text)
    _skill(src / "bomb", billion_laughs("bomb"))
    # before the bound this never returned (1.6 GB in 20 s); run_cli's timeout turns a hang into a failure
    proc = run_cli(["skills", "import", "--from", str(src), "-w", str(ws)], ok=1)
    assert "imported 2 skill(s)" in proc.stdout
    assert f"skipped {src / 'bomb' / 'SKILL.md'}: field 'frontmatter'" in flat(proc.stderr), proc.stderr
    assert "alias bomb" in flat(proc.stderr) and "good-one" not in proc.stderr and "good-two" not in proc.stderr
    listed = json.loads(run_cli(["skills", "list", "--json", "-w", str(ws)]).stdout)
    assert sorted(s["name"] for s in listed["skills"]) == ["good-one", "good-two"]
    checked = run_cli(["skills", "validate", str(src), "--json"], ok=1)
    errors = [i for i in json.loads(checked.stdout)["issues"] if i["severity"] == "error"]
    assert [(Path(i["file"]).parent.name, i["field"]) for i in errors] == [("bomb", "frontmatter")]


def _flow(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("lines, words", [
    (["z: &a [*a]"], "cycle"),
    ([f"z: {_flow(fm_rules.MAX_DEPTH)}"], "nested deeper"),  # + the root mapping = one level too deep
    (["s: &s x", "z: [" + ", ".join(["*s"] * (fm_rules.MAX_ALIASES + 1)) + "]"], "aliases"),
    ([f"s: &s {'y' * 20_000}", "z: [" + ", ".join(["*s"] * 20) + "]"], "characters of text"),
    ([f"z: &z {_flow(20)}", "w: " + "[" * 12 + "*z" + "]" * 12], "nested deeper"),  # too deep only via the alias
    (["k: '" + "k" * (fm_rules.MAX_FRONTMATTER_CHARS + 1) + "'"], "characters; the limit"),
], ids=["recursive-alias", "too-deep", "too-many-aliases", "expanded-text", "deep-through-alias", "too-large"])
def test_item2_every_bound_is_a_named_frontmatter_error(lines: list[str], words: str) -> None:
    text = _text("x", "description: d", *lines)
    issues = _issues(text)
    assert [(f, s) for f, s, _ in issues] == [("frontmatter", Severity.ERROR)], issues
    assert words in issues[0][2]
    with pytest.raises(SkillFileError) as info:
        skillfile.parse(text, "f.md", "x")
    assert info.value.field == "frontmatter" and info.value.file == "f.md"


def test_item2_a_frontmatter_at_every_bound_still_loads() -> None:
    aliases = "z: [" + ", ".join(["*s"] * fm_rules.MAX_ALIASES) + "]"
    text = _text("x", "description: d", "s: &s x", aliases, f"deep: {_flow(fm_rules.MAX_DEPTH - 1)}")
    skill = skillfile.parse(text, "f.md", "x")
    assert skill.extra["z"] == ["x"] * fm_rules.MAX_ALIASES


@pytest.mark.parametrize("field, limit", [("chars", fm_rules.MAX_FRONTMATTER_CHARS), ("aliases", fm_rules.MAX_ALIASES),
                                          ("nodes", fm_rules.MAX_EXPANDED_NODES),
                                          ("expanded_chars", fm_rules.MAX_EXPANDED_CHARS), ("depth", fm_rules.MAX_DEPTH)])
def test_item2_expansion_rule_edges(field: str, limit: int) -> None:
    assert expansion_violation(Expansion(**{field: limit})) is None
    assert expansion_violation(Expansion(**{field: limit + 1})) is not None
    assert expansion_violation(Expansion(recursive_alias="a")) is not None


# ---- item 3: printing user data literally, control characters neutralised ------------------------
def test_item3_markup_in_paths_and_keys_is_printed_literally(tmp_path: Path) -> None:
    missing = tmp_path / "[/x]"
    proc = run_cli(["skills", "validate", str(missing)], ok=None)  # run_cli fails on any traceback
    assert proc.returncode != 0 and f"{missing} does not exist" in flat(proc.stderr)
    red = tmp_path / "a" / "[red]"
    proc = run_cli(["skills", "list", "-w", str(red)], ok=2)
    assert str(red) in flat(proc.stderr), proc.stderr
    lib = tmp_path / "lib"
    _skill(lib / "keyed", _text("keyed", "description: d", "'[/x]': 1", "'[red]k': 2"))
    proc = run_cli(["skills", "validate", str(lib)])
    assert "field '[/x]'" in proc.stdout and "field '[red]k'" in proc.stdout


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is not None, reason="llama-cpp-python is installed here")
def test_item3_install_hint_keeps_its_brackets(ws: Path) -> None:
    proc = run_cli(["llm", "serve", "-w", str(ws)], ok=2)
    assert "pip install 'skillforge[local]'" in flat(proc.stderr), proc.stderr


ESC_DESCRIPTION = 'description: "Hi \\e]0;pwned\\a there \\e[31mred\\r \\x9b2J"'


def test_item3_control_characters_warn_fail_strict_and_are_neutralised_by_index(tmp_path: Path, ws: Path) -> None:
    src = tmp_path / "src"
    _skill(src / "esc-skill", _text("esc-skill", ESC_DESCRIPTION))
    lenient = run_cli(["skills", "validate", str(src)])
    assert "warning" in lenient.stdout and "U+001B" in lenient.stdout and "\x1b" not in lenient.stdout
    strict = run_cli(["skills", "validate", str(src), "--strict", "--json"], ok=1)
    (issue,) = json.loads(strict.stdout)["issues"]
    assert issue["field"] == "description" and "U+001B, U+0007, U+000D, U+009B" in issue["rule"]
    run_cli(["skills", "import", "--from", str(src), "-w", str(ws)])
    index = run_cli(["skills", "index", "-w", str(ws)]).stdout
    assert "\\x1b]0;pwned\\x07 there \\x1b[31mred\\x0d \\x9b2J" in index, index
    assert not any(ch in index for ch in "\x1b\x07\r\x9b")
    listed = run_cli(["skills", "list", "--json", "-w", str(ws)]).stdout
    assert json.loads(listed)["skills"][0]["name"] == "esc-skill"


def test_item3_control_character_rule_edges() -> None:
    assert fm_rules.control_characters("tab\tnew\nline \xa0 \u200b é") == []
    assert fm_rules.control_characters("\x00\x1b\r\x7f\x80\x9f\x1b") == ["\x00", "\x1b", "\r", "\x7f", "\x80", "\x9f"]
    data = {"description": "a\x1b", "metadata": {"k\r": "v", "ok": "\x9b"}, "extra": [{"deep": ["\x07"]}], "fine": "x",
            "\x1bkey": 1}
    assert fm_rules.control_fields(data) == {"frontmatter": ["\x1b"], "description": ["\x1b"], "metadata": ["\r"],
                                             "metadata.ok": ["\x9b"], "extra": ["\x07"]}


def _read_pty(args: list[str]) -> str:
    """stdout of the CLI when it is a terminal (a pseudo-terminal we read)."""
    master, slave = pty.openpty()
    exe = str(Path(sys.executable).parent / "skillforge")
    proc = subprocess.Popen([exe, *args], stdout=slave, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(master)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr.read(), proc.returncode
    return b"".join(chunks).decode("utf-8", "replace")


def test_item3_show_and_use_neutralise_a_body_on_a_terminal_and_stay_exact_when_piped(tmp_path: Path, ws: Path) -> None:
    body = "# Body\n\nraw \x1b]0;owned title\x1b\\ here\n"
    _skill(tmp_path / "src" / "raw-body", _text("raw-body", "description: d", body=body))
    run_cli(["skills", "import", "--from", str(tmp_path / "src"), "-w", str(ws)])
    for args in (["skills", "show", "raw-body"], ["skills", "use", "raw-body"]):
        shown = _read_pty([*args, "-w", str(ws)])
        assert "\\x1b]0;owned title\\x1b\\ here" in shown and "\x1b]0;" not in shown, repr(shown)
    assert run_cli(["skills", "use", "raw-body", "-w", str(ws)]).stdout == body  # an agent gets the exact bytes


def test_item3_output_helpers_never_parse_markup() -> None:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(styled(("error:", "red"), " ", "[/x] [red]a[/red] \x1b[2J"))
    console.print(plain("pip install 'skillforge[local]'"))
    assert console.file.getvalue() == "error: [/x] [red]a[/red] \\x1b[2J\npip install 'skillforge[local]'\n"
    assert safe("a\r\nb\rc\td\x85") == "a\r\nb\\x0dc\td\\x85"
    assert json.loads(json_safe(json.dumps({"k": "\x9b\x7f"}, ensure_ascii=False))) == {"k": "\x9b\x7f"}
    assert "\x9b" not in json_safe(json.dumps("\x9b", ensure_ascii=False))


# ---- item 9: YAML 1.2 core, duplicate keys --------------------------------------------------------
@pytest.mark.parametrize("word", ["no", "yes", "on", "off", "y", "n"])
def test_item9_yaml11_booleans_are_strings(word: str) -> None:
    skill = skillfile.parse(_text(word, f"description: {word}", f"use_when: {word}", f"keywords: [{word}]"), "f", word)
    assert (skill.name, skill.description, skill.use_when, skill.keywords) == (word, word, word, [word])


def test_item9_agents_values_not_pyyaml11_values() -> None:
    text = _text("x", "description: d", "metadata: {version: 1.10, build: 017, beta: true}", "when: 2024-01-01",
                 "count: 1_000", "exp: 1e3", "oct: 0o17")
    skill = skillfile.parse(text, "f", "x")
    assert skill.metadata == {"version": "1.10", "build": "017", "beta": "true"}
    assert skill.extra == {"when": "2024-01-01", "count": "1_000", "exp": 1000.0, "oct": 15}
    assert skillfile.parse(skillfile.render(skill), "f", "x") == skill


def test_item9_unquoted_number_where_a_string_is_expected_keeps_its_text() -> None:
    skill, issues = skillfile.check_text(_text("x", "description: d", "license: 2.10", "compatibility: 3.10"), "f", "x")
    assert skill is not None and (skill.license, skill.compatibility) == ("2.10", "3.10")
    assert sorted((i.field, i.severity) for i in issues) == [("compatibility", Severity.WARNING),
                                                              ("license", Severity.WARNING)]
    assert _issues(_text("123", "description: d"), "123")[0][:2] == ("name", Severity.ERROR)  # a name stays strict


@pytest.mark.parametrize("lines, field, where", [
    (["description: d", "name: y"], "name", "lines 2 and 4"),
    (["description: d", "description: e"], "description", "lines 3 and 4"),
    (["description: d", "metadata:", "  version: 1.0.0", "  version: 2.0.0"], "metadata.version", "lines 5 and 6"),
    (["description: d", "metadata: {owner: a, 'owner': b}"], "metadata.owner", "lines 4 and 4"),
], ids=["name", "description", "nested", "quoted-same"])
def test_item9_duplicate_keys_are_a_named_error(lines: list[str], field: str, where: str) -> None:
    text = _text("x", *lines)
    with pytest.raises(SkillFileError) as info:
        skillfile.parse(text, "f.md", "x")
    assert (info.value.file, info.value.field) == ("f.md", field)
    assert "duplicate key" in info.value.rule and where in info.value.rule


def test_item9_cli_validate_accepts_no_and_names_a_duplicate(tmp_path: Path) -> None:
    _skill(tmp_path / "ok" / "no", _text("no", "description: no"))
    assert "0 failing" in run_cli(["skills", "validate", str(tmp_path / "ok"), "--strict"]).stdout
    _skill(tmp_path / "dup" / "twice", _text("twice", "description: first", "description: second"))
    proc = run_cli(["skills", "validate", str(tmp_path / "dup")], ok=1)
    assert "field 'description': duplicate key (lines 3 and 4)" in flat(proc.stdout)


@pytest.mark.parametrize("line", ["n: " + "1" * 5000, "b: !!bool maybe", "d: !!timestamp nope", "s: !!set [a]",
                                  "m: !!map [a]", "k: {[a]: 1}", "f: !!float abc"],
                         ids=["5000-digit-int", "bool-tag", "timestamp-tag", "set-tag", "map-tag", "list-key", "float-tag"])
def test_item9_hostile_scalars_and_tags_are_named_errors_not_crashes(line: str) -> None:
    issues = _issues(_text("x", "description: d", line))
    assert [(f, s) for f, s, _ in issues] == [("frontmatter", Severity.ERROR)], issues


@pytest.mark.parametrize("text", ["1e5", "0o17", "0x1F", "+1", ".5", "1.", "TRUE", "Null", "~", "no", "017", "-.inf",
                                  "2024-01-01", "1_0", "1:30"])
def test_item9_render_quotes_what_either_yaml_version_would_misread(text: str) -> None:
    skill = SkillFile(name="x", description=text, use_when=text, metadata={text: text}, keywords=[text], body="b\n")
    again = skillfile.parse(skillfile.render(skill), "f", "x")
    assert again == skill


# ---- item 10: metadata.version must be semver to be used ------------------------------------------
@pytest.mark.parametrize("value", ['"1.0"', "v1.2.3", "1.2.3.4", "banana", "1.0"])
def test_item10_bad_version_warns_naming_the_value_and_fails_strict(value: str) -> None:
    text = _text("x", "description: d", f"metadata: {{version: {value}}}")
    issues = _issues(text)
    shown = value.strip('"')
    assert [(f, s) for f, s, _ in issues] == [("metadata.version", Severity.WARNING)]
    assert f"'{shown}' is not semver" in issues[0][2]
    with pytest.raises(SkillFileError) as info:
        skillfile.parse(text, "f.md", "x", strict=True)
    assert info.value.field == "metadata.version" and f"'{shown}'" in info.value.rule


def test_item10_import_says_why_the_version_is_not_used(tmp_path: Path, ws: Path) -> None:
    _skill(tmp_path / "src" / "old-style", _text("old-style", "description: d", 'metadata: {version: "v1.2.3"}'))
    proc = run_cli(["skills", "import", "--from", str(tmp_path / "src"), "-w", str(ws)])
    assert "field 'metadata.version'" in flat(proc.stderr) and "'v1.2.3' is not semver" in flat(proc.stderr)
    history = json.loads(run_cli(["releases", "list", "old-style", "--json", "-w", str(ws)]).stdout)
    assert [h["version"] for h in history] == ["0.1.0"]
    strict = run_cli(["skills", "validate", str(tmp_path / "src"), "--strict"], ok=1)
    assert "'v1.2.3' is not semver" in flat(strict.stdout)
    skill_md = ws / "skills" / "old-style" / "SKILL.md"
    skill_md.write_text(skill_md.read_text().replace("v1.2.3", "banana"), encoding="utf-8")
    published = run_cli(["release", "publish", "old-style", "-w", str(ws)])
    assert "published old-style 0.1.1" in published.stdout and "'banana' is not semver" in flat(published.stderr)


@pytest.mark.parametrize("value, ok", [("1.2.3", True), ("0.1.0-rc.1", True), ("1.0.0+build.5", True), ("1.0", False),
                                       ("v1.2.3", False), ("1.2.3.4", False), ("01.2.3", False), ("", False)])
def test_item10_version_rule_edges(value: str, ok: bool) -> None:
    assert (fm_rules.version_problem(value) is None) == ok


# ---- item 16: validate --strict refuses what export --strict refuses -------------------------------
STRICT_VARIANTS = {
    "long-description": _text("x", "description: '" + "d" * 1025 + "'"),
    "long-compatibility": _text("x", "description: d", "compatibility: '" + "c" * 501 + "'"),
    "reserved-key-overwritten": _text("x", "description: d", "metadata: {skillforge.keywords: mine}", "keywords: [k]"),
    "reserved-use-when": _text("x", "description: d", "metadata: {skillforge.use_when: mine}", "use_when: u"),
    "reserved-extra": _text("x", "description: d", "metadata: {skillforge.extra.author: me}", "author: someone"),
    "own-reserved-key": _text("x", "description: d", "metadata: {skillforge.owner: me}", "keywords: [k]"),
    "control-characters": _text("x", ESC_DESCRIPTION),
    "bad-version": _text("x", "description: d", "metadata: {version: '1.0'}"),
    "unknown-key": _text("x", "description: d", "author: someone"),
    "clean": _text("x", "description: d", "keywords: [k]"),
}


def _refuses(action: Callable[[], object]) -> bool:
    try:
        action()
    except SkillFileError:
        return True
    return False


@pytest.mark.parametrize("name", list(STRICT_VARIANTS))
def test_item16_export_strict_refuses_only_what_validate_strict_refuses(name: str) -> None:
    text = STRICT_VARIANTS[name]
    skill = skillfile.parse(text, "f", "x")
    if _refuses(lambda: export_strict(skill)):
        assert _refuses(lambda: skillfile.parse(text, "f", "x", strict=True)), name
    exported_ok = {"unknown-key", "clean", "own-reserved-key"}
    assert _refuses(lambda: export_strict(skill)) == (name not in exported_ok)


def test_item16_cli_validate_strict_refuses_a_key_export_would_overwrite(tmp_path: Path, ws: Path) -> None:
    src = tmp_path / "src"
    _skill(src / "clash", _text("clash", "description: d", "metadata: {skillforge.keywords: mine}", "keywords: [k]"))
    proc = run_cli(["skills", "validate", str(src), "--strict"], ok=1)
    assert "field 'metadata.skillforge.keywords'" in proc.stdout
    run_cli(["skills", "import", "--from", str(src), "-w", str(ws)])
    refused = run_cli(["skills", "export", "clash", "--strict", "-w", str(ws)], ok=2)
    assert "metadata.skillforge.keywords" in flat(refused.stderr)
