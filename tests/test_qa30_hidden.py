"""QA 30: hidden characters the publish gate did not see. N1: one written as a YAML escape in a
frontmatter value (`description: "... \\u202e ..."`, ASCII on the line, a raw U+202E in the index) is
refused like a raw one, unless the live release's value of that field already held it. N2: a stray
invalid byte or a UTF-16 byte-order mark no longer makes a script "binary" and unread. N7: an emoji
tag sequence (England's flag) is allowed, tag characters elsewhere still refused."""

from __future__ import annotations

from pathlib import Path

from conftest import flat, run_cli
from test_hidden_files import RLO, SKILL, candidate, state
from test_hidden_files import ws as ws  # noqa: F401 - the fixture: the example skills imported

from skillforge.config import Workspace
from skillforge.library.services import Services
from skillforge.rules.hidden import file_text, hidden_in
from skillforge.skill.chars import skill_md_added_field_hidden
from skillforge.skill.tree import Entry

ENGLAND = "\U0001F3F4\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F"  # 🏴󠁧󠁢󠁥󠁮󠁧󠁿
PNG = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89"


def skill_md(description: str, body: str = "Body.\n") -> bytes:
    return f'---\nname: {SKILL}\ndescription: "{description}"\n---\n{body}'.encode()


# ---- the pure rules -----------------------------------------------------------------------------
def test_a_stray_byte_or_a_utf16_bom_does_not_make_a_script_binary() -> None:
    assert hidden_in(file_text(b"echo ok # \xe2\x80\xae evil\n#\xff\n")) == [RLO]
    for codec in ("utf-16", "utf-16-le", "utf-16-be", "utf-32"):
        data = ("\ufeff" if codec != "utf-16" and codec != "utf-32" else "") + f"Write-Host ok # {RLO} evil\n"
        assert hidden_in(file_text(data.encode(codec))) == [RLO], codec
    assert file_text(PNG) is None  # a real binary: NUL bytes, no UTF-16 byte-order mark
    assert file_text(b"\xff\xfe") == ""


def test_an_emoji_tag_sequence_is_allowed_and_tag_characters_elsewhere_are_not() -> None:
    assert hidden_in(f"Team {ENGLAND} notes {ENGLAND}\n") == []
    assert hidden_in("x\U000E0067\U000E007F") == ["\U000E0067", "\U000E007F"]  # no flag before
    assert hidden_in("\U0001F3F4\U000E0067 no cancel tag") == ["\U000E0067"]
    assert hidden_in("\U0001F3F4\U000E007F") == ["\U000E007F"]  # a cancel tag alone
    assert hidden_in(f"{ENGLAND}\U000E0041") == ["\U000E0041"]  # after the sequence ended
    assert hidden_in("\U0001F3F4 \U000E0067\U000E007F") == ["\U000E0067", "\U000E007F"]  # not directly after


def test_an_escaped_field_value_is_found_unless_the_live_value_held_it() -> None:
    esc = "Check the \\u202e status"
    new = {"SKILL.md": Entry(skill_md(esc))}
    assert skill_md_added_field_hidden(new, {}) == [
        "SKILL.md: field 'description' holds U+202E RIGHT-TO-LEFT OVERRIDE in its parsed value (written as a YAML "
        "escape such as \\u202e)"]
    assert skill_md_added_field_hidden(new, {"SKILL.md": Entry(skill_md("Check the status"))}) != []
    live = {"SKILL.md": Entry(skill_md(esc, "Old body.\n"))}
    assert skill_md_added_field_hidden(new, live) == []  # already published: check_text's warning
    assert skill_md_added_field_hidden({"SKILL.md": Entry(skill_md("Check \\u200b" + esc))}, live) == [
        "SKILL.md: field 'description' holds U+200B ZERO WIDTH SPACE in its parsed value (written as a YAML "
        "escape such as \\u202e)"]
    assert skill_md_added_field_hidden(new, {}, raw={RLO}) == []  # found raw on an added line already
    assert skill_md_added_field_hidden({"SKILL.md": Entry(b"no frontmatter\n")}, {}) == []
    assert skill_md_added_field_hidden({"SKILL.md": Entry(b"---\nname: [\n---\n")}, {}) == []  # bad YAML


# ---- through the CLI ----------------------------------------------------------------------------
def test_publish_refuses_a_hidden_character_written_as_a_yaml_escape(ws: Workspace) -> None:  # noqa: F811
    md = ws.skills_dir / SKILL / "SKILL.md"
    text = md.read_text(encoding="utf-8")
    md.write_text(text.replace('description: "Hail a taxi', 'description: "Hail a \\u202e taxi', 1), encoding="utf-8")
    before = state(ws)
    proc = run_cli(["release", "publish", SKILL, "-w", str(ws.root)], ok=2)
    said = flat(proc.stderr)
    assert "error: refused: hidden characters in 1 place(s) of the files this publish adds or changes: SKILL.md: " \
           "field 'description' holds U+202E RIGHT-TO-LEFT OVERRIDE" in said, said
    assert RLO not in proc.stdout + proc.stderr
    assert state(ws) == before
    index = run_cli(["skills", "index", "-w", str(ws.root)]).stdout
    assert RLO not in index
    md.write_text(text, encoding="utf-8")


def test_publish_reads_a_script_with_a_stray_byte_and_a_utf16_script(ws: Workspace, tmp_path: Path) -> None:  # noqa: F811
    before = state(ws)
    for rel, data, where in (
            ("scripts/a.sh", b"echo ok # \xe2\x80\xae evil\n#\xff\n", "scripts/a.sh:1:11: U+202E"),
            ("scripts/b.ps1", f"Write-Host ok # {RLO} evil\n".encode("utf-16"), "scripts/b.ps1:1:17: U+202E")):
        cand = candidate(ws, tmp_path / rel.replace("/", "_"), {rel: data})
        proc = run_cli(["release", "publish", SKILL, "--from", str(cand), "-w", str(ws.root)], ok=2)
        assert where in flat(proc.stderr), proc.stderr
        assert state(ws) == before
    cand = candidate(ws, tmp_path / "png", {"assets/logo.png": PNG, "references/flag.md": f"# {ENGLAND}\n".encode()})
    done = run_cli(["release", "publish", SKILL, "--from", str(cand), "-w", str(ws.root)])
    assert done.stdout.splitlines()[-1].startswith(f"published {SKILL} ") and "hidden" not in done.stderr
    svc = Services(ws)
    assert svc.machine.tree_of(svc.store.current(SKILL))["assets/logo.png"].data == PNG
