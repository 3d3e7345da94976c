"""`skills import --from DIR` of folders whose names are not valid skill names (`PDF&URLTool`,
`Man_of_Many`, `AI2sql`): the pure name rules (rules/names.py), the SKILL.md `name:` rewrite
(library/importer.py), and the command: refused with the proposed name, imported under it with
`--rename`, refused whole on a name clash. The source folder is never modified."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from conftest import flat, run_cli

from skillforge.errors import SkillFileError
from skillforge.library.importer import declared_name, with_name
from skillforge.rules.names import (
    SourceName,
    import_name,
    is_skill_name,
    kebab_name,
    needs_import_name,
    plan_names,
)
from skillforge.skill import file as skillfile
from skillforge.state.skill import NAME_MAX


# ---- the pure rule ----------------------------------------------------------------------------
@pytest.mark.parametrize(("raw", "expected"), [
    ("PDF&URLTool", "pdf-url-tool"), ("Man_of_Many", "man-of-many"), ("AI2sql", "ai2sql"),
    ("pdf-url-tool", "pdf-url-tool"), ("XMLHttpRequest", "xml-http-request"), ("GPT4Vision", "gpt4-vision"),
    ("web.search  tool", "web-search-tool"), ("  --a..b__c--  ", "a-b-c"), ("Tom's Tool", "toms-tool"),
    ("C++ Helper", "c-helper"), ("x\u2014y", "x-y"), ("tab\there\nnew", "tab-here-new"),
    ("Café Helper", "caf-helper"), ("日本語Tool", "tool"), ("v1.2.3", "v1-2-3"),
    ("天气", None), ("", None), ("---", None), ("&&&", None), ("é", None),
])
def test_kebab_name(raw, expected):
    assert kebab_name(raw) == expected
    if expected is not None:
        assert is_skill_name(expected) and kebab_name(expected) == expected  # a proposal is stable


def test_kebab_name_cuts_long_names_on_a_hyphen():
    words = "-".join(f"word{i}" for i in range(20))  # 5-6 characters a word: far past NAME_MAX
    cut = kebab_name(words.upper().replace("-", "_"))
    assert cut is not None and len(cut) <= NAME_MAX and words.startswith(cut) and words[len(cut)] == "-"
    assert kebab_name("a" * 70) == "a" * NAME_MAX  # one word: no hyphen to cut at
    exact = "ab-" * 21 + "a"  # 64 characters
    assert len(exact) == NAME_MAX and kebab_name(exact) == exact
    assert kebab_name(exact + "b") == "ab-" * 20 + "ab"  # 65: back to the last hyphen
    assert kebab_name("-".join(["a" * 63, "b"])) == "a" * 63


@pytest.mark.parametrize(("folder", "declared", "needs", "name"), [
    ("good", "good", False, "good"),
    ("good", "other", False, "good"),  # both valid, different: the SKILL.md rule refuses it as before
    ("Man_of_Many", "man-of-many", True, "man-of-many"),  # a valid `name:` wins over the folder's kebab
    ("Man_of_Many", "helper", True, "helper"),
    ("pdf-tool", "PDF Tool", True, "pdf-tool"),  # a valid folder name wins over a bad `name:`
    ("pdf-tool", None, True, "pdf-tool"),
    ("PDF&URLTool", "PDF & URL Tool", True, "pdf-url-tool"),
    ("天气", "Weather Now", True, "weather-now"),  # nothing left of the folder: the `name:`
    ("天气", "天气", True, None),
])
def test_import_name(folder, declared, needs, name):
    assert needs_import_name(folder, declared) is needs
    assert import_name(folder, declared) == name


def test_plan_names_collisions():
    sources = [SourceName("PDF&URLTool", "PDF&URLTool", None), SourceName("x/pdf_url_tool", "pdf_url_tool", None),
               SourceName("AI2sql", "AI2sql", "AI2sql"), SourceName("ai2sql", "ai2sql", "ai2sql"),
               SourceName("Man_of_Many", "Man_of_Many", None), SourceName("News_Digest", "News_Digest", None),
               SourceName("天气", "天气", None), SourceName("ok", "ok", "ok")]
    plan = plan_names(sources, taken={"News-Digest", "other"})
    assert plan.renames == {"PDF&URLTool": "pdf-url-tool", "x/pdf_url_tool": "pdf-url-tool", "AI2sql": "ai2sql",
                            "Man_of_Many": "man-of-many", "News_Digest": "news-digest"}
    assert plan.clashes == {"pdf-url-tool": ["PDF&URLTool", "x/pdf_url_tool"], "ai2sql": ["AI2sql", "ai2sql"]}
    assert plan.existing == {"News_Digest": "news-digest"}  # case-folded against the workspace's names
    assert plan.unnamed == ["天气"]
    clean = plan_names([SourceName("Man_of_Many", "Man_of_Many", None), SourceName("ok", "ok", "ok")], taken=set())
    assert clean.renames == {"Man_of_Many": "man-of-many"} and not clean.clashes and not clean.existing


# ---- the name field rewrite -------------------------------------------------------------------
SKILL = ("---\n# a comment stays\ndescription: \"Reads PDFs & URLs\"  # and this one\nname:   PDF&URLTool\n"
         "metadata:\n  version: 1.2.0\n---\n# PDF & URL\n\nname: not the field\n")


def test_with_name_changes_only_the_name():
    out = with_name(SKILL, "pdf-url-tool", "SKILL.md")
    assert out == SKILL.replace("name:   PDF&URLTool\n", "name:   pdf-url-tool\n")
    skill = skillfile.parse(out, "SKILL.md", "pdf-url-tool")
    assert skill.name == "pdf-url-tool" and skill.version == "1.2.0" and declared_name(SKILL) == "PDF&URLTool"
    crlf = with_name("\ufeff---\r\nname: 'X Y'\r\ndescription: d\r\n---\r\nbody\r\n", "x-y", "SKILL.md")
    assert crlf == "\ufeff---\r\nname: x-y\r\ndescription: d\r\n---\r\nbody\r\n"


def test_with_name_adds_a_missing_name_and_quotes_what_yaml_would_misread():
    assert with_name("---\ndescription: d\n---\nbody\n", "pdf-tool", "f") == "---\nname: pdf-tool\ndescription: d\n---\nbody\n"
    assert declared_name("---\ndescription: d\n---\nbody\n") is None
    with pytest.raises(SkillFileError):
        declared_name("no frontmatter\n")
    block = with_name("---\nname: |\n  Two\n  Lines\ndescription: d\n---\nbody\n", "two-lines", "f")
    assert block == "---\nname: two-lines\ndescription: d\n---\nbody\n"
    assert with_name("---\nname: TRUE\ndescription: d\n---\nb\n", "true", "f") == '---\nname: "true"\ndescription: d\n---\nb\n'
    assert with_name("---\nname: X\ndescription: d\n---\nb\n", "1e3", "f") == '---\nname: "1e3"\ndescription: d\n---\nb\n'


@pytest.mark.parametrize("text", [
    "no frontmatter\n", "---\nname: [unclosed\n---\nb\n", "---\n- a list\n---\nb\n",
    "---\ndescription: &d Same\nname: *d\n---\nb\n",  # an alias: setting it would change `description` too
])
def test_with_name_refuses_what_it_cannot_rewrite_safely(text):
    with pytest.raises(SkillFileError):
        with_name(text, "ok", "SKILL.md")


# ---- the command ------------------------------------------------------------------------------
def write_skill(folder: Path, name: str | None, description: str = "Does a thing.") -> None:
    folder.mkdir(parents=True)
    head = f"name: {name}\n" if name is not None else ""
    (folder / "SKILL.md").write_text(f"---\n{head}description: {description}\n---\n# Steps\n\nDo it.\n")
    (folder / "notes.txt").write_text(f"notes of {folder.name}\n")


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        h.update(str(p.relative_to(folder)).encode() + (p.read_bytes() if p.is_file() else b"/"))
    return h.hexdigest()


def registered(ws: Path) -> list[str]:
    return [s["name"] for s in json.loads(run_cli(["skills", "list", "--json", "-w", str(ws)]).stdout)["skills"]]


@pytest.fixture
def src_ws(tmp_path: Path) -> tuple[Path, Path]:
    src = tmp_path / "src"
    write_skill(src / "PDF&URLTool", "PDF&URLTool")
    write_skill(src / "Man_of_Many", "man-of-many")
    write_skill(src / "AI2sql", None)
    write_skill(src / "good-one", "good-one")
    ws = tmp_path / "ws"
    run_cli(["init", str(ws)])
    return src, ws


def test_import_refuses_bad_names_with_the_proposal_then_rename_imports_them(src_ws):
    src, ws = src_ws
    (src / "Broken_One").mkdir()
    (src / "Broken_One" / "SKILL.md").write_text("no frontmatter here\n")  # its own error, not its name
    before = digest(src)
    refused = run_cli(["skills", "import", "--from", str(src), "-w", str(ws)], ok=1)
    said = flat(refused.stderr)
    assert "Broken_One/SKILL.md: field 'frontmatter': no frontmatter" in said and "broken-one" not in said
    for folder, name in (("PDF&URLTool", "pdf-url-tool"), ("Man_of_Many", "man-of-many"), ("AI2sql", "ai2sql")):
        assert f"{folder}/SKILL.md: field 'name': folder name '{folder}'" in said and f"--rename imports it as {name}" in said
    assert "`name:` (missing or not text)" in said  # AI2sql has no name: field
    assert f"skillforge skills import --from {src} --rename -w {ws}" in said
    assert registered(ws) == ["good-one"] and sorted(p.name for p in (ws / "skills").iterdir()) == ["good-one"]

    done = run_cli(["skills", "import", "--from", str(src), "--rename", "-w", str(ws)], ok=1)  # Broken_One
    assert "Broken_One/SKILL.md: field 'frontmatter'" in flat(done.stderr)
    for line in ("imported PDF&URLTool as pdf-url-tool", "imported Man_of_Many as man-of-many",
                 "imported AI2sql as ai2sql", "imported 3 skill(s), 1 already registered"):
        assert line in done.stdout
    assert registered(ws) == ["ai2sql", "good-one", "man-of-many", "pdf-url-tool"]
    text = (ws / "skills" / "pdf-url-tool" / "SKILL.md").read_text()
    assert text == (src / "PDF&URLTool" / "SKILL.md").read_text().replace("name: PDF&URLTool", "name: pdf-url-tool")
    assert (ws / "skills" / "ai2sql" / "SKILL.md").read_text().startswith("---\nname: ai2sql\ndescription:")
    assert (ws / "skills" / "man-of-many" / "notes.txt").read_text() == "notes of Man_of_Many\n"
    assert digest(src) == before  # the source is never modified

    again = json.loads(run_cli(["skills", "import", "--from", str(src), "--rename", "--json", "-w", str(ws)], ok=1).stdout)
    assert again["imported"] == [] and len(again["skipped"]) == 4 and again["renamed"] == []  # again: a no-op
    assert [e.split(": field")[0].rpartition("/")[0] for e in again["errors"]] == [str(src / "Broken_One")]


def test_rename_refuses_a_clash_and_imports_nothing(src_ws):
    src, ws = src_ws
    write_skill(src / "pdf_url_tool", "pdf_url_tool")  # a second folder that would be pdf-url-tool
    proc = run_cli(["skills", "import", "--from", str(src), "--rename", "-w", str(ws)], ok=2)
    said = flat(proc.stderr)
    assert said.startswith("error: import --rename would give two skills one name, so nothing was imported")
    assert "'pdf-url-tool' <- PDF&URLTool, pdf_url_tool" in said
    assert "importing its folder alone" in said  # it does give the name to one of them
    assert registered(ws) == [] and list((ws / "skills").iterdir()) == []
    alone = run_cli(["skills", "import", "--from", str(src / "PDF&URLTool"), "--rename", "-w", str(ws)])
    assert "imported PDF&URLTool as pdf-url-tool" in alone.stdout and registered(ws) == ["pdf-url-tool"]


def test_a_clash_is_said_while_proposing_and_no_failing_command_is_suggested(src_ws):
    """QA qa12 MESSAGE-3: without --rename, two folders proposed one name (or a name a folder of the
    same source imports as is) were each told `--rename imports it as X`, and the suggested --rename
    command was certain to fail with NameClash."""
    src, ws = src_ws
    write_skill(src / "pdf_url_tool", "pdf_url_tool")  # would be pdf-url-tool too
    write_skill(src / "Good_One", "good-one")  # would be good-one, the name of the folder good-one
    proc = run_cli(["skills", "import", "--from", str(src), "-w", str(ws)], ok=1)
    said = flat(proc.stderr)
    for folder, other in (("PDF&URLTool", "pdf_url_tool"), ("pdf_url_tool", "PDF&URLTool")):
        assert (f"{folder}/SKILL.md: field 'name': folder name '{folder}'" in said
                and f"the name made from it, pdf-url-tool, is the one {other} would take too" in said)
    assert "is the name of good-one (imported under it as is): rename Good_One and its `name:` by hand" in said
    assert "--rename imports it as pdf-url-tool" not in said and "--rename imports it as good-one" not in said
    assert "skills import --from" not in said  # no command that cannot work
    assert "2 folder(s) need a valid skill name (proposed above), but --rename refuses the whole import" in said
    assert registered(ws) == ["good-one"]
    out = json.loads(run_cli(["skills", "import", "--from", str(src), "--json", "-w", str(ws)], ok=1).stdout)
    assert {p["to"] for p in out["proposed"]} == {"man-of-many", "ai2sql"}
    refused = flat(run_cli(["skills", "import", "--from", str(src), "--rename", "-w", str(ws)], ok=2).stderr)
    assert "'good-one' <- Good_One, good-one" in refused and "'pdf-url-tool' <- PDF&URLTool, pdf_url_tool" in refused
    # good-one already has the name (it was just imported): importing a folder alone no longer helps
    (src / "pdf_url_tool" / "SKILL.md").unlink()
    (src / "pdf_url_tool" / "notes.txt").unlink()
    (src / "pdf_url_tool").rmdir()
    refused = flat(run_cli(["skills", "import", "--from", str(src), "--rename", "-w", str(ws)], ok=2).stderr)
    assert "'good-one' <- Good_One, good-one" in refused and "alone" not in refused


def test_rename_refuses_the_name_of_another_skill_of_the_workspace(src_ws, tmp_path):
    src, ws = src_ws
    other = tmp_path / "other"
    write_skill(other / "man-of-many", "man-of-many", description="Another skill entirely.")
    run_cli(["skills", "import", "--from", str(other), "-w", str(ws)])
    proc = run_cli(["skills", "import", "--from", str(src), "--rename", "--json", "-w", str(ws)], ok=2)
    assert "'man-of-many' <- Man_of_Many (the workspace already has a skill 'man-of-many')" in flat(proc.stderr)
    assert "alone" not in proc.stderr  # no order of imports helps against a skill the workspace has
    assert proc.stdout == "" and registered(ws) == ["man-of-many"]
    assert "Another skill" in (ws / "skills" / "man-of-many" / "SKILL.md").read_text()


def test_rename_skips_a_folder_no_name_can_be_made_for_and_needs_from(src_ws):
    src, ws = src_ws
    write_skill(src / "天气", "天气")
    proc = run_cli(["skills", "import", "--from", str(src), "--rename", "--json", "-w", str(ws)], ok=1)
    out = json.loads(proc.stdout)
    assert sorted(r["to"] for r in out["renamed"]) == ["ai2sql", "man-of-many", "pdf-url-tool"]
    assert len(out["errors"]) == 1 and "none can be made from it" in out["errors"][0] and "天气" in out["errors"][0]
    usage = run_cli(["skills", "import", "--rename", "-w", str(ws)], ok=2)
    assert "--from" in usage.stderr


def test_an_unregistered_folder_that_differs_from_the_source_is_not_imported_as_it(tmp_path):
    """QA: skills/bulk-99 left unregistered (a killed import, then an edit) was registered as IMPORTED
    from --from although the source holds other files. Now it is refused and registered by nothing;
    the same files (a killed import's copy) import, and only the source's skills are counted."""
    src, ws = tmp_path / "src", tmp_path / "ws"
    write_skill(src / "bulk-99", "bulk-99", description="SOURCE version B.")
    write_skill(src / "other-one", "other-one")
    write_skill(tmp_path / "elsewhere" / "not-from-src", "not-from-src")
    run_cli(["init", str(ws)])
    run_cli(["skills", "import", "--from", str(tmp_path / "elsewhere"), "-w", str(ws)])
    write_skill(ws / "skills" / "bulk-99", "bulk-99", description="LOCAL version A.")
    refused = run_cli(["skills", "import", "--from", str(src), "-w", str(ws)], ok=1)
    said = flat(refused.stderr)
    assert "skills/bulk-99 is already there, not registered, and its files differ from the source's" in said
    assert "nothing imported for 'bulk-99'" in said and "imported 1 skill(s), 0 already registered" in refused.stdout
    assert registered(ws) == ["not-from-src", "other-one"]
    assert "LOCAL version A." in (ws / "skills" / "bulk-99" / "SKILL.md").read_text()  # left as it was

    (ws / "skills" / "bulk-99" / "SKILL.md").write_bytes((src / "bulk-99" / "SKILL.md").read_bytes())
    done = run_cli(["skills", "import", "--from", str(src), "-w", str(ws)])
    assert "imported 1 skill(s), 1 already registered" in done.stdout  # other-one; not-from-src is not the source's
    assert registered(ws) == ["bulk-99", "not-from-src", "other-one"]
    shown = run_cli(["skills", "show", "bulk-99", "-w", str(ws)]).stdout
    assert "SOURCE version B." in shown


def test_a_proposed_name_the_workspace_has_is_not_proposed(src_ws, tmp_path):
    """QA: `Taxi_Hailing` was proposed as `--rename imports it as taxi-hailing`, a live skill, and the
    suggested --rename command then failed with NameClash."""
    src, ws = src_ws
    other = tmp_path / "other"
    write_skill(other / "man-of-many", "man-of-many", description="Another skill entirely.")
    run_cli(["skills", "import", "--from", str(other), "-w", str(ws)])
    proc = run_cli(["skills", "import", "--from", str(src), "--json", "-w", str(ws)], ok=1)
    out = json.loads(proc.stdout)
    said = " ".join(out["errors"])
    assert "the name made from it, man-of-many, is a skill the workspace has" in said
    assert "--rename imports it as man-of-many" not in said
    assert {p["to"] for p in out["proposed"]} == {"pdf-url-tool", "ai2sql"}
    shown = flat(run_cli(["skills", "import", "--from", str(src), "-w", str(ws)], ok=1).stderr)
    assert "--rename refuses the whole import" in shown and "skills import --from" not in shown  # it would fail


def test_a_registered_skill_whose_source_differs_is_named_with_the_command_that_publishes_it(tmp_path):
    """QA 33 F6: `1 already registered`, exit 0, and nothing said about the source's other bytes."""
    src, ws = tmp_path / "src", tmp_path / "ws"
    write_skill(src / "same-one", "same-one")
    write_skill(src / "moved-on", "moved-on", description="Version A of the job.")
    run_cli(["init", str(ws)])
    run_cli(["skills", "import", "--from", str(src), "-w", str(ws)])
    again = run_cli(["skills", "import", "--from", str(src), "-w", str(ws)])
    assert "already registered and the source's files differ" not in flat(again.stderr)
    (src / "moved-on" / "SKILL.md").write_text((src / "moved-on" / "SKILL.md").read_text().replace("Version A", "Version B"))
    done = run_cli(["skills", "import", "--from", str(src), "-w", str(ws)])
    said = flat(done.stderr)
    assert "imported 0 skill(s), 2 already registered" in done.stdout
    assert "'moved-on' is already registered and the source's files differ from skills/moved-on" in said
    assert f"skillforge release publish moved-on --from {src / 'moved-on'}" in said and "same-one" not in said
