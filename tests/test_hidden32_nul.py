"""Hidden characters in a NUL-padded script (rules/hidden.py, leak pass 32): a NUL byte in a file's
first 8000 bytes made it binary, so its bidi overrides were never read, though bash runs such a script
(it drops NUL bytes). A script or text file (`#!` first, or a name of SCRIPT_SUFFIXES) is now read with
its NULs taken out; a real binary (a PNG, a zip) stays unread, random bytes can spell U+202E.
Through `release publish` on a real workspace, as tests/test_hidden_files.py."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from conftest import flat, run_cli
from test_hidden_files import SKILL, candidate, state, ws  # noqa: F401 - ws: the fixture

from skillforge.config import Workspace
from skillforge.library.services import Services
from skillforge.rules.hidden import SCRIPT_SUFFIXES, file_text, script_like

RLO = "\u202e"
PADDED = b"#!/bin/bash\necho start\n" + b"\0" * 64 + f"\nrm -rf /tmp/build # {RLO}safe\n".encode()
PNG = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0" + b"\xe2\x80\xae" + b"\0\0\0\0IEND\xaeB`\x82"


def test_a_script_is_read_with_its_nul_bytes_taken_out() -> None:
    assert file_text(PADDED) == f"#!/bin/bash\necho start\n\nrm -rf /tmp/build # {RLO}safe\n"
    no_shebang = b"echo a\0\0\necho " + RLO.encode() + b"\n"
    assert file_text(no_shebang) is None  # no path: nothing says it is a script
    assert file_text(no_shebang, "scripts/run.sh") == f"echo a\necho {RLO}\n"
    assert file_text(b"a\0\xff" + RLO.encode(), "notes/A.MD") == f"a\ufffd{RLO}"  # a bad byte replaced
    assert {".sh", ".bash", ".zsh", ".py", ".ps1", ".js", ".ts", ".rb", ".pl", ".md", ".txt", ".json", ".yaml",
            ".yml", ".toml", ".cfg", ".ini"} <= SCRIPT_SUFFIXES


def test_a_real_binary_stays_unread() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("a.txt", RLO)
    for data, path in ((PNG, "assets/logo.png"), (buf.getvalue(), "assets/a.zip"), (b"\0" + RLO.encode(), "bin.dat"),
                       (PNG, "")):
        assert not script_like(data, path)
        assert file_text(data, path) is None


def test_publish_refuses_a_nul_padded_script_with_a_bidi_override(ws: Workspace, tmp_path: Path) -> None:  # noqa: F811
    cand = candidate(ws, tmp_path / "cand", {"scripts/deploy.sh": PADDED})
    before = state(ws)
    proc = run_cli(["release", "publish", SKILL, "--from", str(cand), "-w", str(ws.root)], ok=2)
    said = flat(proc.stderr)
    assert "refused: hidden characters in 1 place(s)" in said and \
        "scripts/deploy.sh:4:21: U+202E RIGHT-TO-LEFT OVERRIDE" in said, said
    assert state(ws) == before


def test_publish_keeps_a_png_holding_the_bytes_of_u202e(ws: Workspace, tmp_path: Path) -> None:  # noqa: F811
    cand = candidate(ws, tmp_path / "cand", {"assets/logo.png": PNG})
    proc = run_cli(["release", "publish", SKILL, "--from", str(cand), "-w", str(ws.root)])
    assert proc.stdout.splitlines()[-1].startswith(f"published {SKILL} ") and "hidden" not in proc.stderr
    tree = Services(ws).machine.tree_of(Services(ws).store.current(SKILL))
    assert tree["assets/logo.png"].data == PNG
