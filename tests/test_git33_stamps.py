"""QA 33 F3/F4: the version stamp keeps a CRLF SKILL.md's line ends, and publish does not list
SKILL.md as changed when only its own stamp changes it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import SKILLFORGE_EXE, cli_env

from skillforge.config import init_workspace
from skillforge.library.releases import ReleaseStateMachine
from skillforge.skill import file as skillfile
from skillforge.skill.version import with_version

CRLF = "---\r\nname: crlf-skill\r\ndescription: a Windows-edited skill\r\n---\r\n# crlf\r\n\r\n- step one\r\n"


@pytest.mark.parametrize("text", [
    CRLF,
    CRLF.replace("---\r\n# crlf", "metadata:\r\n  version: 0.1.0\r\n---\r\n# crlf"),
    CRLF.replace("---\r\n# crlf", "metadata:\r\n  version: \"0.1.0\"\r\n  owner: me\r\n---\r\n# crlf"),
])
def test_the_stamp_of_a_crlf_file_uses_crlf(text):
    out = with_version(text, "0.2.0")
    assert 'version: "0.2.0"\r\n' in out
    assert "\n" not in out.replace("\r\n", "")
    assert out.replace('"0.2.0"', "").replace("\r\n", "") == with_version(text.replace("\r\n", "\n"), "0.2.0").replace(
        '"0.2.0"', "").replace("\n", "")


def test_an_lf_file_is_stamped_as_before():
    text = CRLF.replace("\r\n", "\n")
    assert with_version(text, "0.2.0") == text.replace("---\n# crlf", 'metadata:\n  version: "0.2.0"\n---\n# crlf')


def test_publishing_a_crlf_folder_keeps_crlf_in_the_folder_and_the_release(tmp_path):
    ws = init_workspace(tmp_path / "ws")
    folder = ws.skills_dir / "crlf-skill"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_bytes(CRLF.encode())
    m = ReleaseStateMachine.open(ws)
    m.import_skills(skillfile.scan(ws.skills_dir, ws.root))
    (folder / "SKILL.md").write_bytes(CRLF.encode() + b"- step two\r\n")
    rel = m.publish("crlf-skill")
    for data in ((folder / "SKILL.md").read_bytes(), m.repo.read(rel.commit_hash, "skills/crlf-skill/SKILL.md")):
        assert b'  version: "0.1.1"\r\n' in data and b"\n" not in data.replace(b"\r\n", b"")


def test_publish_lists_skill_md_as_a_version_stamp_only_when_the_stamp_is_all_that_changes(tmp_path: Path):
    ws = init_workspace(tmp_path / "ws")
    folder = ws.skills_dir / "a4"
    (folder / "assets").mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: a4\ndescription: a4 skill\n---\nbody\n")
    (folder / "assets" / "x.txt").write_text("one\n")
    ReleaseStateMachine.open(ws).import_skills(skillfile.scan(ws.skills_dir, ws.root))  # no metadata.version
    (folder / "assets" / "x.txt").write_text("two\n")
    run = subprocess.run([str(SKILLFORGE_EXE), "release", "publish", "a4"], capture_output=True, text=True,
                         env=cli_env({"SKILLFORGE_WORKSPACE": str(ws.root)}))
    assert run.returncode == 0, run.stderr
    assert "1 file(s) differ" in run.stdout and "assets/x.txt changed" in run.stdout
    assert "SKILL.md changed" not in run.stdout and "SKILL.md: version stamp only" in run.stdout


@pytest.mark.parametrize("text", [
    "---\r\nname: c2\r\ndescription: a skill\r\nmetadata:\r\n  owner: me\r\n---\r\n# c2\r\nbody\r\n",   # a block, no version
    "---\r\nname: c2\r\ndescription: a skill\r\nmetadata: {owner: me}\r\n---\r\n# c2\r\nbody\r\n",   # rendered again
])
def test_a_crlf_metadata_without_a_version_keeps_one_cr_a_line(text: str) -> None:
    """QA 35 T3: the rendered fallback turned every body line end into \\r\\r\\n."""
    from skillforge.skill import file as skillfile
    from skillforge.skill.version import with_version

    out = with_version(text, "0.2.0")
    assert "\r\r" not in out and "\n" not in out.replace("\r\n", "") and out.endswith("# c2\r\nbody\r\n")
    assert skillfile.parse(out).metadata == {"owner": "me", "version": "0.2.0"}
