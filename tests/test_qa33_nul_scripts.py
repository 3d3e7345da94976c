"""leak32's leftovers: `release publish` reads a NUL-padded script for hidden characters by its
name too (a `.sh` without `#!`, run as `bash x.sh`), and the secret scan reads a script with its
NUL bytes taken out, so a key a NUL cuts in two is whole again, as bash reads it."""

from __future__ import annotations

from pathlib import Path

from conftest import flat, run_cli
from test_hidden_files import SKILL, candidate, state, ws  # noqa: F401 - ws: the fixture

from skillforge.config import Workspace
from skillforge.rules.skillfiles import scan_secrets

KEY = b"ghp_" + b"A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
NO_SHEBANG = b"echo start\n" + b"\0" * 4 + b"\necho \xe2\x80\xae done\n"


def test_publish_refuses_a_nul_padded_sh_without_a_shebang(ws: Workspace, tmp_path: Path) -> None:  # noqa: F811
    cand = candidate(ws, tmp_path / "cand", {"scripts/run.sh": NO_SHEBANG})
    before = state(ws)
    proc = run_cli(["release", "publish", SKILL, "--from", str(cand), "-w", str(ws.root)], ok=2)
    assert "scripts/run.sh:3:6: U+202E RIGHT-TO-LEFT OVERRIDE" in flat(proc.stderr), proc.stderr
    assert state(ws) == before


def test_a_key_a_nul_cuts_in_two_is_found_in_a_script_and_not_claimed_in_a_binary() -> None:
    script = b"#!/bin/bash\n" + b"\0" * 3 + b"export GH_TOKEN=" + KEY[:8] + b"\0" + KEY[8:] + b"\n"
    found = scan_secrets({"scripts/run.sh": (0o100755, script), "tools/env.py": (0o100644, script[12:])})
    assert sorted((f.path, f.kind) for f in found) == [("scripts/run.sh", "GitHub token"), ("tools/env.py", "GitHub token")]
    assert scan_secrets({"assets/x.png": (0o100644, b"\x89PNG\0\0" + KEY[:8] + b"\0" + KEY[8:])}) == []


def test_an_image_without_a_nul_byte_is_binary_by_its_name_but_utf8_text_named_so_is_read() -> None:
    """QA 33 F6: a small image with no NUL in its first 8000 bytes was text, its U+202E bytes a refusal."""
    from skillforge.rules.hidden import file_text

    gif = b"GIF89a\x01\x01\xf0\xff\xfe" + "\u202e".encode() + b"\x80\x81;"
    assert file_text(gif, "assets/dot.gif") is None and file_text(gif, "assets/dot.txt") is not None
    text = "looks like an image, is text \u202e".encode()
    assert file_text(text, "assets/fake.png") == text.decode()
    assert file_text(b"#!/bin/sh\necho \xe2\x80\xae\xff", "run.png") is not None  # a script, whatever its name
