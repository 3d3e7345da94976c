"""Hidden characters (rules/hidden.py: controls, zero-width, bidi overrides, tag characters) in the
files beside SKILL.md: `release publish` refuses them in an added or changed file (HiddenInSkill,
exit 2, no override, nothing written), `skills split --publish` refuses a child carrying one
(SplitRefused), `skills import` warns. What is encoding stays allowed: a leading BOM, CRLF, a ZWJ
inside an emoji sequence. Real workspaces (SQLite store, git repository) through the CLI."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import flat, run_cli

from skillforge.config import Workspace
from skillforge.library.services import Services
from skillforge.rules.hidden import FileHiddenChar, file_rules, file_text, files_hidden
from skillforge.skill.chars import tree_hidden
from skillforge.skill.tree import Entry, FileMode

SKILL = "taxi-hailing"
RLO, ZWSP, TAG_A = "\u202e", "\u200b", "\U000E0041"
EMOJI = "\U0001F469\u200d\U0001F4BB"  # 👩‍💻: a ZWJ between two pictographs
ALLOWED = {"scripts/crlf.sh": b"#!/bin/sh\r\necho crlf\r\n", "references/bom.md": "\ufeff# Notes\n".encode(),
           "references/emoji.md": f"# Team {EMOJI} notes\n".encode()}


# ---- the pure rule ------------------------------------------------------------------------------
def test_each_character_is_found_with_its_file_line_and_column() -> None:
    found = files_hidden({"scripts/x.sh": f"#!/bin/sh\necho a{RLO}b\n", "references/a.md": f"ok\n{ZWSP}x",
                          "t.txt": f"tag{TAG_A}"})
    assert found == [FileHiddenChar("references/a.md", 2, 1, ZWSP), FileHiddenChar("scripts/x.sh", 2, 7, RLO),
                     FileHiddenChar("t.txt", 1, 4, TAG_A)]  # ordered by path
    assert [f.describe() for f in found] == ["references/a.md:2:1: U+200B ZERO WIDTH SPACE",
                                             "scripts/x.sh:2:7: U+202E RIGHT-TO-LEFT OVERRIDE",
                                             "t.txt:1:4: U+E0041 TAG LATIN CAPITAL LETTER A"]


def test_encoding_is_not_content_but_the_same_characters_elsewhere_are() -> None:
    texts = {p: data.decode("utf-8") for p, data in ALLOWED.items()}
    assert files_hidden(texts) == []
    assert files_hidden({"a": "x\ufeff", "b": "a\rb\n", "c": "a\u200db", "d": "\x1b[31m", "e": "\x7f", "f": "\x85"}) == [
        FileHiddenChar("a", 1, 2, "\ufeff"), FileHiddenChar("b", 1, 2, "\r"), FileHiddenChar("c", 1, 2, "\u200d"),
        FileHiddenChar("d", 1, 1, "\x1b"), FileHiddenChar("e", 1, 1, "\x7f"), FileHiddenChar("f", 1, 1, "\x85")]
    assert files_hidden({"tabs.tsv": "a\tb\n", "empty": "", "cjk.md": "全角\u3000空格\xa0é\n"}) == []


def test_a_hidden_character_in_a_file_name_is_found_too() -> None:
    (f,) = files_hidden({f"scripts/de{RLO}hs.sh": "echo\n"})
    assert (f.line, f.column, f.char) == (0, 11, RLO)
    assert f.describe() == "scripts/de\\u202ehs.sh (its name, character 11): U+202E RIGHT-TO-LEFT OVERRIDE"


def test_one_line_per_file_line_naming_the_first_character_and_the_others() -> None:
    found = files_hidden({"a.md": f"x{ZWSP}y{RLO}z{ZWSP}\nclean\n{TAG_A}\n"})
    assert file_rules(found) == ["a.md:1:2: U+200B ZERO WIDTH SPACE (also U+202E RIGHT-TO-LEFT OVERRIDE), 3 on the line",
                                 "a.md:3:1: U+E0041 TAG LATIN CAPITAL LETTER A"]
    assert file_rules([]) == []


def test_binary_files_are_out_of_scope() -> None:
    assert file_text(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR") is None  # a NUL byte
    assert file_text(b"caf\xe9\n") == "caf\ufffd\n"  # not UTF-8 (Latin-1): read, the bad byte replaced (QA 30 N2)
    assert file_text(f"x{RLO}".encode("utf-16")) == f"x{RLO}"  # UTF-16 with a BOM: decoded (QA 30 N2)
    assert file_text("\ufeffok".encode()) == "\ufeffok"  # the BOM stays first, for the rule to allow it
    tree = {"SKILL.md": Entry(f"body{RLO}".encode()), "bin.dat": Entry(b"\0" + RLO.encode()),
            "link.md": Entry(b"a.md", FileMode.SYMLINK), "a.md": Entry(f"{ZWSP}".encode(), FileMode.EXECUTABLE)}
    assert tree_hidden(tree) == [FileHiddenChar("a.md", 1, 1, ZWSP)]  # SKILL.md is check_text's, field by field
    assert tree_hidden(tree, ["bin.dat", "SKILL.md", "gone.md"]) == []


# ---- through the CLI: release publish -----------------------------------------------------------
@pytest.fixture
def ws(workspace: Workspace, machine) -> Workspace:  # noqa: ANN001 - conftest: the example skills imported
    return workspace


def state(ws: Workspace) -> tuple[list[tuple[str, str, str]], str | None]:
    """Every release row (skill, id, status) and the skills repository's HEAD, as the project reads them."""
    svc = Services(ws)
    rows = [(r.skill_name, r.release_id, r.status.value) for n in svc.store.skill_names() for r in svc.store.releases(n)]
    return rows, svc.repo.head()


def candidate(ws: Workspace, dest: Path, files: dict[str, bytes]) -> Path:
    """The live folder of SKILL copied (with its modes) and `files` written into it."""
    folder = dest / SKILL
    shutil.copytree(ws.skills_dir / SKILL, folder)
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    return folder


@pytest.mark.parametrize(("rel", "text", "where"), [
    ("scripts/x.sh", f"#!/bin/sh\necho deploy{RLO}hsr- mr\n", "scripts/x.sh:2:12: U+202E RIGHT-TO-LEFT OVERRIDE"),
    ("references/a.md", f"# Notes\n\nAlways{ZWSP}confirm.\n", "references/a.md:3:7: U+200B ZERO WIDTH SPACE"),
    ("scripts/tag.py", f"print('hi'){TAG_A}\n", "scripts/tag.py:1:12: U+E0041 TAG LATIN CAPITAL LETTER A"),
    (f"scripts/de{RLO}hs.sh", "echo\n", "scripts/de\\u202ehs.sh (its name, character 11): U+202E RIGHT-TO-LEFT OVERRIDE")])
def test_publish_from_a_folder_refuses_a_hidden_character_with_nothing_written(ws: Workspace, tmp_path: Path,
                                                                                 rel: str, text: str, where: str) -> None:
    cand = candidate(ws, tmp_path / "cand", {rel: text.encode()})
    before = state(ws)
    for extra in ([], ["--allow-secrets"], ["--canary", "10%"]):
        proc = run_cli(["release", "publish", SKILL, "--from", str(cand), "-w", str(ws.root), *extra], ok=2)
        said = flat(proc.stderr)
        assert rel.replace(RLO, "\\u202e") + " added" in proc.stdout  # the list a reviewer reads, escaped
        assert said.startswith("error: refused: hidden characters in 1 place(s) of the files this publish adds or "
                               f"changes: {where}. Nothing was published."), said
        assert not any(ch in proc.stdout + proc.stderr for ch in (RLO, ZWSP, TAG_A))
        assert state(ws) == before  # no release row, no commit
        assert not (ws.skills_dir / SKILL / rel).exists()  # nor a file in the skill folder


def test_publish_of_the_working_tree_refuses_then_publishes_once_taken_out(ws: Workspace) -> None:
    script = ws.skills_dir / SKILL / "scripts" / "deploy.sh"
    script.parent.mkdir()
    script.write_text(f"#!/bin/sh\nrm -rf /tmp/build # {RLO}safe{ZWSP}\n", encoding="utf-8")
    before = state(ws)
    proc = run_cli(["release", "publish", SKILL, "-w", str(ws.root)], ok=2)
    assert "scripts/deploy.sh:2:21: U+202E RIGHT-TO-LEFT OVERRIDE (also U+200B ZERO WIDTH SPACE), 2 on the line" \
        in flat(proc.stderr)
    assert state(ws) == before
    script.write_text("#!/bin/sh\nrm -rf /tmp/build\n", encoding="utf-8")
    done = run_cli(["release", "publish", SKILL, "-w", str(ws.root)])
    assert done.stdout.splitlines()[-1].startswith(f"published {SKILL} ")
    tree = Services(ws).machine.tree_of(Services(ws).store.current(SKILL))
    assert tree["scripts/deploy.sh"].data == b"#!/bin/sh\nrm -rf /tmp/build\n"


def test_publish_keeps_the_allowed_cases(ws: Workspace, tmp_path: Path) -> None:
    cand = candidate(ws, tmp_path / "cand", ALLOWED)
    proc = run_cli(["release", "publish", SKILL, "--from", str(cand), "-w", str(ws.root)])
    assert proc.stdout.splitlines()[-1].startswith(f"published {SKILL} ") and "hidden" not in proc.stderr
    tree = Services(ws).machine.tree_of(Services(ws).store.current(SKILL))
    assert {p: tree[p].data for p in ALLOWED} == ALLOWED  # byte for byte


def test_a_file_the_live_release_already_holds_is_a_warning_not_a_refusal(tmp_path: Path, workspace: Workspace) -> None:
    src = tmp_path / "src" / "db-backup"
    (src / "scripts").mkdir(parents=True)
    (src / "SKILL.md").write_text("---\nname: db-backup\ndescription: Back up a PostgreSQL database with pg_dump."
                                  "\n---\n\n# DB backup\n\nRun scripts/rotate.sh after each dump.\n", encoding="utf-8")
    (src / "scripts" / "rotate.sh").write_text(f"#!/bin/sh\necho {RLO}\n", encoding="utf-8")
    (src / "references").mkdir()
    (src / "references" / "logo.bin").write_bytes(b"\0\x01" + RLO.encode())  # binary: not read
    root = str(workspace.root)
    imported = run_cli(["skills", "import", "--from", str(src.parent), "-w", root, "--json"])
    assert json.loads(imported.stdout)["hidden_characters"] == [
        "skills/db-backup/scripts/rotate.sh:2:6: U+202E RIGHT-TO-LEFT OVERRIDE: a hidden character (control or "
        "format); take it out and publish the folder again"]
    assert Services(workspace).store.current("db-backup") is not None  # the import stands, as for SKILL.md's own
    text = run_cli(["skills", "import", "--from", str(src.parent), "-w", root])  # already registered: no warning
    assert "hidden" not in text.stderr
    skill_md = workspace.skills_dir / "db-backup" / "SKILL.md"
    skill_md.write_text(skill_md.read_text(encoding="utf-8") + "- Keep seven dumps.\n", encoding="utf-8")
    proc = run_cli(["release", "publish", "db-backup", "-w", root])
    assert proc.stdout.splitlines()[-1].startswith("published db-backup ")
    assert "scripts/rotate.sh:2:6: U+202E RIGHT-TO-LEFT OVERRIDE: a hidden character already in the live release" \
        in flat(proc.stderr)
    script = workspace.skills_dir / "db-backup" / "scripts" / "rotate.sh"
    os.chmod(script, 0o755)  # the same bytes under another mode: still a warning
    assert "already in the live release" in flat(run_cli(["release", "publish", "db-backup", "-w", root]).stderr)
    script.write_text(f"#!/bin/sh\necho {RLO}\necho done\n", encoding="utf-8")  # a changed file is read whole
    before = state(workspace)
    refused = run_cli(["release", "publish", "db-backup", "-w", root], ok=2)
    assert "scripts/rotate.sh:2:6: U+202E" in flat(refused.stderr) and state(workspace) == before


def test_publish_refuses_a_hidden_character_a_new_skill_md_adds_but_keeps_one_it_already_had(
        tmp_path: Path, ws: Workspace) -> None:
    """SKILL.md at `release publish` was only warned about (check_text) while a file beside it was
    refused: now a hidden character on a line the live SKILL.md does not have is refused as well;
    one the live SKILL.md already held stays a warning (a refusal would not take it out of git)."""
    root = str(ws.root)
    skill_md = ws.skills_dir / SKILL / "SKILL.md"
    live = skill_md.read_text(encoding="utf-8")
    skill_md.write_text(live + f"\n- Confirm the pickup address{RLO} before booking.\n", encoding="utf-8")
    before = state(ws)
    refused = run_cli(["release", "publish", SKILL, "-w", root], ok=2)
    assert "SKILL.md:" in flat(refused.stderr) and "U+202E RIGHT-TO-LEFT OVERRIDE" in flat(refused.stderr)
    assert RLO not in refused.stdout + refused.stderr and state(ws) == before
    fresh = tmp_path / "src" / "fresh-skill"  # a first release: every line is new
    fresh.mkdir(parents=True)
    (fresh / "SKILL.md").write_text(f"---\nname: fresh-skill\ndescription: Plan a picnic.\n---\n\n# Picnic{ZWSP}\n",
                                    encoding="utf-8")
    run_cli(["skills", "import", "--from", str(fresh.parent), "-w", root])  # import warns and stands
    assert Services(ws).store.current("fresh-skill") is not None
    kept = ws.skills_dir / "fresh-skill" / "SKILL.md"
    kept.write_text(kept.read_text(encoding="utf-8") + "\n- Bring water.\n", encoding="utf-8")
    proc = run_cli(["release", "publish", "fresh-skill", "-w", root])  # the ZWSP line is the live release's
    assert proc.stdout.splitlines()[-1].startswith("published fresh-skill ")


# ---- through the CLI: skills split --publish ----------------------------------------------------
def split_ws(tmp_path: Path, files: dict[str, bytes]) -> Workspace:
    from test_qa23_split_files import RICH
    from test_qa23_split_files import workspace as split_workspace

    return split_workspace(tmp_path / "ws", RICH, files)


def split_state(ws: Workspace) -> tuple[list[tuple[str, str, str]], str | None, list[str]]:
    return (*state(ws), sorted(p.name for p in ws.skills_dir.iterdir()))


def test_split_refuses_a_child_whose_files_hold_hidden_characters(tmp_path: Path) -> None:
    from test_qa23_split_files import CURRENCY, UNITS

    ws = split_ws(tmp_path, {"references/fx-notes.md": f"# FX notes{ZWSP}\n".encode(),
                             "scripts/units.sh": f"#!/bin/sh\necho units{RLO}\n".encode(),
                             "assets/logo.txt": f"logo{TAG_A}\n".encode()})
    before = split_state(ws)
    preview = json.loads(run_cli(["skills", "split", "convert-anything", "--json", "-w", str(ws.root)]).stdout)
    assert f"skills/{CURRENCY}/references/fx-notes.md:1:11: U+200B ZERO WIDTH SPACE" in preview["hidden_characters"]
    assert f"skills/{UNITS}/scripts/units.sh:2:11: U+202E RIGHT-TO-LEFT OVERRIDE" in preview["hidden_characters"]
    assert f"skills/{UNITS}/assets/logo.txt:1:5: U+E0041 TAG LATIN CAPITAL LETTER A" in preview["hidden_characters"]
    for extra in ([], ["--allow-secrets"]):
        refused = run_cli(["skills", "split", "convert-anything", "--publish", *extra, "-w", str(ws.root)], ok=2)
        said = flat(refused.stderr)
        assert "is not split: the children would carry hidden characters" in said
        assert f"skills/{UNITS}/scripts/units.sh:2:11: U+202E RIGHT-TO-LEFT OVERRIDE" in said
        assert not any(ch in refused.stdout + refused.stderr for ch in (RLO, ZWSP, TAG_A))
        assert split_state(ws) == before  # no release row, no commit, no child folder


def test_split_keeps_the_allowed_cases(tmp_path: Path) -> None:
    from test_qa23_split_files import CURRENCY, UNITS

    files = {"references/fx-notes.md": "\ufeff# FX notes\r\n".encode(), "scripts/units.sh": b"#!/bin/sh\r\necho units\r\n",
             "assets/logo.txt": f"logo {EMOJI}\n".encode()}
    ws = split_ws(tmp_path, files)
    done = run_cli(["skills", "split", "convert-anything", "--publish", "-w", str(ws.root)])
    assert f"published {CURRENCY} 0.1.0" in done.stdout and "hidden" not in done.stderr
    svc = Services(ws)
    assert svc.machine.tree_of(svc.store.current(UNITS))["scripts/units.sh"].data == files["scripts/units.sh"]
