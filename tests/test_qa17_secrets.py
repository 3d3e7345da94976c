"""QA17 TRUST-5 and MESSAGE-1: secrets the skill-file scan (rules/skillfiles.py `scan_secrets`) did not
see, each with a twin that must stay clean.

- a UTF-16/32 file (with a byte-order mark, or UTF-16 LE/BE without one) is decoded and scanned;
- a file with a NUL (binary by git's rule) is still scanned for secret shapes in its printable runs;
- a password in a URL (`postgres://backup:…@db`) is a secret, a placeholder in docs is not;
- a key built from adjacent string literals in code (`"AKIA" +` / `"IOSF…"`) is read joined;
- a symlink's target and a path are scanned;
- the refusal of `release publish` escapes a newline in a file name, as its file list does.
"""

from __future__ import annotations

import random

import pytest
from conftest import flat, run_cli
from test_qa15_files import SKILL, git, live_copy, write

from skillforge.rules.leaks import EvalText, LeakContext, scan_leaks
from skillforge.rules.secrets import SECRET_PATTERNS, URL_LABEL
from skillforge.rules.skillfiles import file_text, joined_literals, scan_secrets, scan_text

REG, LINK = 0o100644, 0o120000
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
CREDS = f'# creds\nAWS_SECRET_ACCESS_KEY = "{AWS_SECRET}"\n'
CLEAN = "# creds\nNever paste a password: ask the user for it.\nSee https://user@host/x and postgres://host/db.\n"


def found(files: dict[str, tuple[int, bytes]]) -> list[str]:
    return [f.describe() for f in scan_secrets(files)]


def png() -> bytes:
    """A real binary: a PNG header and seeded random bytes (checked to hold no secret shape)."""
    data = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + random.Random(17).randbytes(20000)
    assert not any(p.search(data.decode("latin-1")) for _, p in SECRET_PATTERNS)
    return data


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-8-sig"])
def test_utf16_and_utf32_files_are_decoded_and_scanned(codec):
    assert found({"references/creds.md": (REG, CREDS.encode(codec))}) == [
        "references/creds.md:2: AWS secret key (AWS_SECRET_ACCESS_KEY=…)"]
    assert found({"references/creds.md": (REG, CLEAN.encode(codec))}) == []
    assert file_text(CLEAN.encode(codec)) == (CLEAN, False)


def test_a_nul_does_not_hide_a_key_and_a_real_binary_stays_clean():
    files = {"references/creds.md": (REG, b"\x00\n" + CREDS.encode()),                 # QA17 nulfirst
             "a.bin": (REG, b"\x00AKIAQ3EGRTZ7XK4LMN2P\x00"),                          # behind a leading NUL
             "b.dat": (REG, png()[:100] + b"\x00\nPGPASSWORD=hunter2Xk9pq2Lw7RtZ4m\n" + png()[100:])}
    assert found(files) == ["a.bin:1: AWS access key in binary data (AKIAQ3…)",
                            "b.dat:4: credential assignment in binary data (PGPASSWORD=…)",
                            "references/creds.md:3: AWS secret key (AWS_SECRET_ACCESS_KEY=…)"]  # a text file by its
    # name: read with its NULs taken out (rules/hidden.script_like), so its line is the text's own
    assert found({"image.png": (REG, png()), "notes.bin": (REG, b"\x00" + CLEAN.encode())}) == []
    # an assignment glued from a binary's strings (a .pyc's names) does not count, a whole text line does
    assert found({"x.pyc": (REG, b"\x00\x01token=Zx8kQ2mN4pR6\x00\x02")}) == []


URLS = ["postgres://backup:hunter2Xk9pq2Lw7RtZ4m@db.internal:5432/orders", "mysql://root:S3cr3tPw9@localhost/db",
        "mongodb+srv://app:Zq8vLm2Rt@cluster0.example.net/", "redis://:hunter2@redis:6379/0",
        "amqp://svc:Rb9tXq2w@mq.internal/", "https://alice:Tr0ub4dor3@example.com/x"]
DOC_URLS = ["postgres://user:password@host/db", "postgres://USER:PASS@host/db", "postgres://<user>:<password>@host",
            "postgres://user:${PASSWORD}@host", "postgres://user:$PGPASSWORD@host", "mysql://u:****@host",
            "mysql://u:xxxx@host", "amqp://guest:guest@localhost", "postgres://postgres:mysecretpassword@localhost",
            "postgres://app:YOUR_PASSWORD@db", "redis://:pass123@h", "https://user@host/x", "postgres://host/db",
            "https://host:8080/x@y", "http://a:b@h", "postgres://u:{{ db_password }}@h", "ftp://u:...@h"]


@pytest.mark.parametrize("url", URLS)
def test_a_password_in_a_url_is_a_secret_shown_without_it(url):
    got = found({"references/conn.md": (REG, f"Connect with {url} first.\n".encode())})
    user = url.split("//")[1].split(":")[0]
    assert got == [f"references/conn.md:1: {URL_LABEL} ({url.split('//')[0]}//{user}:…@)"]
    assert url.split(":")[2].split("@")[0][:4] not in got[0]


@pytest.mark.parametrize("url", DOC_URLS)
def test_a_placeholder_or_no_password_in_a_url_is_not(url):
    assert found({"docs.md": (REG, f"Connect with {url} first.\n".encode())}) == []


def test_the_evolve_leak_scan_refuses_a_url_password_too():
    ctx = LeakContext(cases=(EvalText("h1", "holdout", "back up the orders database"),))
    assert any(f.source == URL_LABEL for f in scan_leaks(f"- Use {URLS[0]}.\n", ctx))
    assert not any(f.source == URL_LABEL for f in scan_leaks(f"- Use {DOC_URLS[0]}.\n", ctx))


def test_a_key_split_over_adjacent_literals_in_code_is_read_joined():
    js = 'const id = "AKIA" +\n  "IOSFODNN7EXAMPLE";\nconst other = 1;\n'
    py = f'import os\nAWS_SECRET_ACCESS_KEY = ("{AWS_SECRET[:21]}"\n                         "{AWS_SECRET[21:]}")\n'
    black = f'AWS_SECRET_ACCESS_KEY = (\n    "{AWS_SECRET[:21]}"\n    "{AWS_SECRET[21:]}"\n)\nx = "AKIAQ3EGRTZ7XK4LMN2P"\n'
    assert found({"scripts/id.js": (REG, js.encode()), "scripts/key.py": (REG, py.encode()),
                  "scripts/black.py": (REG, black.encode())}) == [
        "scripts/black.py:1: AWS secret key (joined literals) (AWS_SECRET_ACCESS_KEY=…)",
        "scripts/black.py:5: AWS access key (AKIAQ3…)",                       # later lines keep their numbers
        "scripts/id.js:1: AWS access key (joined literals) (AKIAIO…)",
        "scripts/key.py:2: AWS secret key (joined literals) (AWS_SECRET_ACCESS_KEY=…)"]
    assert joined_literals(js).count("\n") == js.count("\n")
    # twins: ordinary concatenation, a list of strings, and prose (not code) stay as they are
    code = 'msg = "password: " + \\\n    "ask the user"\nparts = ["AKIA", "IOSFODNN7EXAMPLE"]\n'
    assert found({"scripts/msg.py": (REG, code.encode()), "notes.md": (REG, js.encode())}) == []
    assert scan_text("scripts/id.js", js, code=False) == []


def test_a_symlink_target_and_a_path_are_scanned_and_the_path_is_shown_cut():
    files = {"references/AKIAQ3EGRTZ7XK4LMN2P.txt": (REG, b"notes\n"), "references/key": (LINK, b"AKIAQ3EGRTZ7XK4LMN2P"),
             "references/ok": (LINK, b"../scripts/backup.sh"), "references/password-policy.md": (REG, CLEAN.encode())}
    got = found(files)
    assert got == ["references/AKIAQ3….txt: AWS access key in the file name (AKIAQ3…)",
                   "references/key:1: AWS access key in the link target (AKIAQ3…)"]
    assert "LMN2P" not in "".join(got)


def test_publish_refusal_escapes_a_newline_in_a_file_name(workspace, machine, tmp_path):
    ws = workspace.root
    cand = live_copy(ws, tmp_path / "weird")
    write(cand / "references" / "we\nird.txt", "# notes\nPGPASSWORD=hunter2Xk9pq2Lw7RtZ4m\n")
    head = git(ws, "rev-parse", "HEAD")
    proc = run_cli(["release", "publish", SKILL, "--from", str(cand), "-w", str(ws)], ok=2)
    assert "references/we\\nird.txt added" in proc.stdout
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "references/we\\nird.txt:2: credential assignment (PGPASSWORD=…)" in flat(proc.stderr)
    assert "hunter2" not in proc.stderr and git(ws, "rev-parse", "HEAD") == head


def test_the_patch_scan_never_shows_a_url_password() -> None:
    """The evolve leak scan showed a finding's first 12 characters: `redis://:hun…`."""
    from skillforge.rules.leaks import LeakContext, scan_leaks

    [found] = scan_leaks("cache: redis://:hunter2pass@cache:6379/0", LeakContext(cases=[]))
    assert "hun" not in str(found) and "URL password" in str(found)
