"""The secret scan's gaps after QA17 (rules/secrets.py, rules/skillfiles.py, rules/archives.py), each
with twins that must stay clean:

- a generically named key (`KEY`, `TOKEN`, `auth`) holding a bare high-entropy base64/hex value;
- the evolve leak scan and the skill-file scan share one secret loop (`secret_spans`);
- UTF-16 text inside an otherwise binary file (`strings -el`) is scanned;
- a compressed file's members are scanned (`archive.zip!inner/path:line`), and one that cannot be read
  fully (encrypted, over a limit, nested, corrupt) is an "unscanned archive" finding (fail closed);
- `release publish` warns about a secret the live release already holds and lists a file become a
  symlink with its target; `skills validate` shows a secret in a file name as `path (file name)`.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import random
import tarfile
import zipfile

import pytest
from conftest import flat, run_cli
from test_qa15_files import SKILL, git, live_copy, releases, write

from skillforge.rules.archives import MAX_MEMBERS, MAX_UNPACKED
from skillforge.rules.leaks import LeakContext, LeakKind, scan_leaks
from skillforge.rules.secrets import GENERIC_LABEL, high_entropy, secret_spans
from skillforge.rules.skillfiles import UNSCANNED, file_text, scan_secrets, scan_text

REG = 0o100644
B64 = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1ub3A="
HEX = "3f9a7c2e1b4d8f6a0c5e9b3d7f1a2c4e6b8d0f9a"
CREDS_LINE = 'AWS_SECRET_ACCESS_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"'


def found(files: dict[str, tuple[int, bytes]]) -> list[str]:
    return [f.describe() for f in scan_secrets(files)]


@pytest.mark.parametrize("line,key", [
    (f'KEY = "{B64}"', "KEY"), (f"export AUTH={HEX}", "AUTH"), (f"auth: {B64}", "auth"),
    (f"credentials => '{HEX}'", "credentials"), (f'"signing_key": "{HEX[:24]}"', "signing_key"),
])
def test_a_generic_key_with_a_high_entropy_value_is_a_secret(line, key):
    [f] = scan_text("scripts/env.sh", f"# setup\n{line}\n")
    assert (f.line, f.kind, f.shown) == (2, GENERIC_LABEL, f"{key}=…")
    assert B64[:10] not in f.describe() and HEX[:10] not in f.describe()
    # a name the strict assignment already knows (`TOKEN`) keeps its label
    assert [f.kind for f in scan_text("scripts/env.sh", f"export TOKEN={HEX}\n")] == ["credential assignment"]


@pytest.mark.parametrize("line", [
    'KEY = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"', "export TOKEN=<your-key-goes-here-please>", "TOKEN=${GITHUB_TOKEN}",
    'KEY = "changemechangemechangeme"', "KEY = aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "token=abcdefabcdefabcdefabcdef",
    "key: PKCS12PrivateKeyTypes", '"max_tokens_per_1_minute": max_tokens_per_1_minute', "KEY = short1234",
    f'"key_sha256": "{HEX}"', "KEY = 0123456789abcdef0123456789abcdef", f"token_type: {HEX}", f"KEY = get({HEX!r})",
    "keyboard: the key to press", "the API key is in the vault",
])
def test_a_placeholder_a_name_or_a_hash_is_not(line):
    assert scan_text("scripts/env.sh", line + "\n") == []


def test_entropy_decides_on_the_value_alone():
    assert high_entropy(B64) and high_entropy(HEX) and high_entropy(f'"{HEX}"')
    assert not high_entropy("abababababababababab12") and not high_entropy("1111111111111111111a")


@pytest.mark.parametrize("text", [
    f'KEY = "{B64}"', "use ghp_Zx8kQ2mN4pR6sT8vW0yA2cE4gI6kM8oQ0sU2 here", "PGPASSWORD=hunter2Xk9pq2Lw7RtZ4m",
    "postgres://backup:hunter2Xk9pq2Lw7RtZ4m@db/x", "ghp_4Xk9LmQ2 wR8sT1vY6bN3 cD5eF7gH0jK2lM4n",
    'AWS_SECRET_ACCESS_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"', "-----BEGIN RSA PRIVATE KEY-----",
])
def test_the_leak_scan_and_the_file_scan_name_the_same_secrets(text):
    """One loop (`secret_spans`): a shape added once is found by both scans, with the same label."""
    labels = [s.label for s in secret_spans(text)]
    assert labels
    assert [f.kind for f in scan_text("notes.md", text)] == labels
    assert [f.source for f in scan_leaks(text, LeakContext(cases=())) if f.kind is LeakKind.SECRET] == labels
    assert all(B64[:10] not in str(f) for f in scan_leaks(text, LeakContext(cases=())))


def binary(middle: bytes) -> bytes:
    """A real binary (a PNG header, seeded random bytes) with `middle` inside."""
    noise = random.Random(18).randbytes(6000)
    return b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + noise + middle + noise[::-1]


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_text_inside_a_binary_is_scanned(codec):
    """A Windows resource or a .NET string table keeps its text as UTF-16 among binary bytes."""
    got = found({"references/tool.exe": (REG, binary(f"\n{CREDS_LINE}\n".encode(codec)))})
    assert [g.split(":", 2)[2] for g in got] == [" AWS secret key in binary data (AWS_SECRET_ACCESS_KEY=…)"]
    assert found({"references/tool.exe": (REG, binary("\nNever paste a password here.\n".encode(codec)))}) == []
    assert found({"image.png": (REG, binary(b""))}) == []


def test_a_utf16_run_right_after_an_ascii_run_is_read_from_its_start():
    text = file_text(b"\x00\x01abcd" + CREDS_LINE.encode("utf-16-le") + b"\x01\x02\x03\x04" * 3000)[0]
    assert "AWS_SECRET_ACCESS_KEY = " in text


def zipped(members: dict[str, bytes], *, encrypted: str = "") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, body in members.items():
            zf.writestr(name, body)
    data = bytearray(buf.getvalue())
    if encrypted:  # zipfile writes no encryption: set the bit a password-protected member carries
        for magic, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
            data[data.index(magic) + at] |= 0x1
    return bytes(data)


def tarred(members: dict[str, bytes], mode: str = "w") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tf:
        for name, body in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tf.addfile(info, io.BytesIO(body))
    return buf.getvalue()


SECRET_MD = f"# creds\n{CREDS_LINE}\n".encode()
CLEAN_MD = b"# notes\nNever paste a password: ask the user for it.\n"
HIT = "AWS secret key (AWS_SECRET_ACCESS_KEY=…)"
BYTES_ID = lambda v: "bytes" if isinstance(v, bytes) else None  # noqa: E731 - archives hold a timestamp: ids must not


@pytest.mark.parametrize("path,data,inner", [
    ("references/a.zip", zipped({"inner/creds.md": SECRET_MD}), "inner/creds.md:2"),
    ("references/a.tar", tarred({"inner/creds.md": SECRET_MD}), "inner/creds.md:2"),
    ("references/a.tgz", tarred({"inner/creds.md": SECRET_MD}, "w:gz"), "inner/creds.md:2"),
    ("references/a.tar.bz2", tarred({"inner/creds.md": SECRET_MD}, "w:bz2"), "inner/creds.md:2"),
    ("references/a.tar.xz", tarred({"inner/creds.md": SECRET_MD}, "w:xz"), "inner/creds.md:2"),
    ("references/creds.md.gz", gzip.compress(SECRET_MD, mtime=0), "creds.md:2"),
    ("references/creds.md.bz2", bz2.compress(SECRET_MD), "creds.md:2"),
    ("references/creds.md.xz", lzma.compress(SECRET_MD), "creds.md:2"),
    ("references/renamed.bin", zipped({"creds.md": SECRET_MD}), "creds.md:2"),  # by its magic bytes
    ("references/nested.zip", zipped({"inner.tgz": tarred({"creds.md": SECRET_MD}, "w:gz")}), "inner.tgz!creds.md:2"),
    ("assets/report.docx", zipped({"word/document.xml": CLEAN_MD, "word/embeddings/sheet.xlsx":  # a sheet in a document
                                   zipped({"xl/sharedStrings.xml": SECRET_MD})}),
     "word/embeddings/sheet.xlsx!xl/sharedStrings.xml:2"),
    ("lib/app.jar", zipped({"lib/dep.jar": zipped({"conf/creds.md.gz": gzip.compress(SECRET_MD, mtime=0)})}),
     "lib/dep.jar!conf/creds.md.gz!creds.md:2"),  # three levels
], ids=BYTES_ID)
def test_a_secret_inside_an_archive_is_found_and_named_by_its_member(path, data, inner):
    assert found({path: (REG, data)}) == [f"{path}!{inner}: {HIT}"]


@pytest.mark.parametrize("data", [zipped({"a/notes.md": CLEAN_MD, "b/empty.txt": b""}), tarred({"notes.md": CLEAN_MD}, "w:gz"),
                                  gzip.compress(CLEAN_MD, mtime=0), zipped({}),
                                  zipped({"word/document.xml": CLEAN_MD, "word/embeddings/s.xlsx": zipped({"x.xml": CLEAN_MD})})],
                         ids=BYTES_ID)
def test_a_clean_archive_has_no_finding(data):
    assert found({"references/data.bin": (REG, data)}) == []


@pytest.mark.parametrize("path,data,why", [
    ("r/a.zip", zipped({"creds.md": SECRET_MD}, encrypted="creds.md"), "creds.md is encrypted"),
    ("r/big.gz", gzip.compress(b"\0" * (MAX_UNPACKED + 1), mtime=0), "it unpacks to more than 20 MB"),
    ("r/many.zip", zipped({f"f{i}.txt": b"" for i in range(MAX_MEMBERS + 1)}), f"it has {MAX_MEMBERS + 1} members"),
    ("r/deep.zip", zipped({"a.zip": zipped({"b.zip": zipped({"c.zip": zipped({"creds.md": SECRET_MD})})})}),
     "a.zip: b.zip: c.zip is an archive 4 levels deep (the scan unpacks 3)"),
    ("r/bomb.zip", zipped({f"p{i}.gz": gzip.compress(b"\0" * (MAX_UNPACKED // 2), mtime=0) for i in range(3)}),
     "with the archives inside it, to more than 20 MB"),
    ("r/inner-locked.zip", zipped({"x.zip": zipped({"creds.md": SECRET_MD}, encrypted="creds.md")}),
     "x.zip: creds.md is encrypted"),
    ("r/cut.zip", zipped({"creds.md": SECRET_MD})[:40], "corrupt or unreadable zip data"),
    ("r/cut.tgz", tarred({"creds.md": SECRET_MD}, "w:gz")[:30], "corrupt or unreadable gzip data"),
    ("r/fake.tar.gz", b"just text\n", "its name says archive"),
], ids=BYTES_ID)
def test_an_archive_that_cannot_be_read_fully_is_an_unscanned_finding(path, data, why):
    [f] = scan_secrets({path: (REG, data)})
    assert (f.path, f.line, f.kind) == (path, 0, UNSCANNED) and why in f.shown and "fail closed" in f.shown
    assert f.describe().startswith(f"{path}: unscanned archive (")


# ---- through the CLI (real processes, a real workspace: SQLite store and git repository) ----------


@pytest.fixture
def ws(workspace, machine):  # conftest fixtures: the example skills imported
    return workspace.root


def test_publish_warns_about_a_secret_already_live_and_lists_a_file_become_a_link(ws, tmp_path):
    """A secret the live release already holds is not refused again (that would not take it out of
    git) but named, with that release; a file replaced by a symlink is listed with its target."""
    cand = live_copy(ws, tmp_path / "c")
    write(cand / "scripts" / "backup.sh", "#!/bin/sh\npg_dump orders\n", 0o755)
    write(cand / "references" / "creds.md", SECRET_MD.decode())
    run_cli(["release", "publish", SKILL, "--from", str(cand), "--allow-secrets", "-w", str(ws)])
    live = releases(ws)[-1]
    (cand / "scripts" / "backup.sh").unlink()
    (cand / "scripts" / "backup.sh").symlink_to("../references/creds.md")
    proc = run_cli(["release", "publish", SKILL, "--from", str(cand), "-w", str(ws)])
    assert "  scripts/backup.sh -> symlink to ../references/creds.md (was a 100755 file)" in proc.stdout.splitlines()
    said = flat(proc.stderr)
    assert (f"references/creds.md:2: {HIT}: already in the live release {live['version']} "
            f"({live['release_id'][:8]}); publishing again does not take it out of git") in said
    assert "wJalrXUt" not in said and proc.stdout.splitlines()[-1].startswith(f"published {SKILL} ")


def test_publish_refuses_an_archive_it_cannot_read_and_validate_names_a_file_name_secret(ws, tmp_path):
    cand = live_copy(ws, tmp_path / "z")
    write(cand / "SKILL.md", (cand / "SKILL.md").read_text(encoding="utf-8"))
    (cand / "references").mkdir()
    (cand / "references" / "dump.zip").write_bytes(zipped({"creds.md": SECRET_MD}, encrypted="creds.md"))
    (cand / "references" / "we\nird-AKIAQ3EGRTZ7XK4LMN2P.txt").write_text("notes\n", encoding="utf-8")
    head = git(ws, "rev-parse", "HEAD")
    proc = run_cli(["release", "publish", SKILL, "--from", str(cand), "-w", str(ws)], ok=2)
    said = flat(proc.stderr)
    assert "references/dump.zip: unscanned archive (creds.md is encrypted" in said and "fail closed" in said
    assert "references/we\\nird-AKIAQ3….txt: AWS access key in the file name" in said
    assert git(ws, "rev-parse", "HEAD") == head
    lenient = flat(run_cli(["skills", "validate", str(cand)], ok=0).stdout)
    assert lenient.count("field 'secret'") == 2 and ":0:" not in lenient, lenient
    assert "references/we\\nird-AKIAQ3….txt (file name): field 'secret': AWS access key in the file name" in lenient
    assert "references/dump.zip: field 'secret': unscanned archive (creds.md is encrypted" in lenient
    run_cli(["skills", "validate", str(cand), "--strict"], ok=1)
