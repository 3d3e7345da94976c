"""QA20's secret-scan findings (rules/archives.py, rules/skillfiles.py, rules/secrets.py), each with a
twin that must stay clean:

- TRUST-3: an archive's own bytes are scanned as well as its members: a zip's comment, a member's
  comment or extra field, a tar's pax header, a gzip's stored name or comment, bytes after the end
  record or the end blocks, and a zip behind other bytes (a PNG with a zip appended, a shell
  self-extractor) is opened by its end record;
- TRUST-4: a compressed format the scan cannot unpack (7z, rar, lz4, Unix compress, brotli) is an
  unscanned archive (fail closed); zstd is unpacked (the `zstandard` package);
- MESSAGE-2: a cache/idempotency/partition/primary key, a UUID, a path, a bare SHA-1/SHA-256 hex
  digest, a git commit, a GPG fingerprint and a snake-case name are not credentials, while the real
  secrets next to them still are.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile

import pytest

from skillforge.rules import archives
from skillforge.rules.archives import archive_kind, embedded_zip, unpack
from skillforge.rules.skillfiles import UNSCANNED, scan_secrets

REG = 0o100644
SECRET = b"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzqa20KEYab"
TOKEN = b"ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
CLEAN = b"# notes\nrotate the backups daily\n"
BYTES_ID = lambda v: "bytes" if isinstance(v, bytes) else None


def kinds(path: str, data: bytes) -> list[str]:
    return [f.describe() for f in scan_secrets({path: (REG, data)})]


def a_zip(members: dict[str, bytes], *, comment: bytes = b"", member_comment: bytes = b"", extra: bytes = b"",
          method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as zf:
        for name, body in members.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = method
            info.comment = member_comment
            info.extra = extra
            zf.writestr(info, body)
        zf.comment = comment
    return buf.getvalue()


def a_tar(members: dict[str, bytes], *, pax: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, body in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            info.pax_headers = dict(pax or {})
            tf.addfile(info, io.BytesIO(body))
    return buf.getvalue()


def a_gzip(body: bytes, *, name: bytes = b"", comment: bytes = b"") -> bytes:
    """A gzip stream with FNAME and FCOMMENT set (the gzip module writes FNAME only)."""
    flags = (0x08 if name else 0) | (0x10 if comment else 0)
    head = b"\x1f\x8b\x08" + bytes([flags]) + b"\0\0\0\0\0\xff"
    head += (name + b"\0" if name else b"") + (comment + b"\0" if comment else b"")
    full = gzip.compress(body, mtime=0)
    return head + full[10:]


PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 2


@pytest.mark.parametrize("path,data", [
    ("r/comment.zip", a_zip({"a.md": CLEAN}, comment=SECRET)),
    ("r/mcomment.zip", a_zip({"a.md": CLEAN}, member_comment=SECRET)),
    ("r/extra.zip", a_zip({"a.md": CLEAN}, extra=b"\xfe\xca" + len(SECRET).to_bytes(2, "little") + SECRET)),
    ("r/trail.zip", a_zip({"a.md": CLEAN}) + b"\n" + SECRET + b"\n"),
    ("r/trail.tar", a_tar({"a.md": CLEAN}) + SECRET + b"\n"),
    ("r/pax.tar", a_tar({"a.md": CLEAN}, pax={"comment": SECRET.decode()})),
    ("r/comment.gz", a_gzip(CLEAN, comment=SECRET)),
    ("r/fname.gz", a_gzip(CLEAN, name=TOKEN + b".txt")),
    ("r/poly.png", PNG + a_zip({"creds.md": SECRET})),  # a PNG by its magic, a deflated zip after it
    ("r/sfx.zip", b"#!/bin/sh\nexec unzip \"$0\"\n" + a_zip({"creds.md": SECRET})),  # a self-extractor
], ids=BYTES_ID)
def test_a_secret_in_an_archives_own_bytes_is_found(path, data):
    said = kinds(path, data)
    assert said and all(UNSCANNED not in s for s in said), said
    assert any("AWS secret key" in s or "GitHub token" in s for s in said), said


@pytest.mark.parametrize("path,data", [
    ("r/comment.zip", a_zip({"a.md": CLEAN}, comment=b"built by make dist")),
    ("r/stored.zip", a_zip({"a.md": CLEAN}, method=zipfile.ZIP_STORED)),
    ("r/pax.tar", a_tar({"a.md": CLEAN}, pax={"comment": "release notes"})),
    ("r/comment.gz", a_gzip(CLEAN, name=b"notes.md", comment=b"daily backup notes")),
    ("r/poly.png", PNG + a_zip({"a.md": CLEAN})),
    ("r/img.png", PNG),
], ids=BYTES_ID)
def test_an_archive_with_clean_own_bytes_has_no_finding(path, data):
    assert kinds(path, data) == []


def test_a_secret_in_a_stored_member_is_named_once_by_its_member():
    said = kinds("r/stored.zip", a_zip({"creds.md": SECRET}, method=zipfile.ZIP_STORED))
    assert said == ["r/stored.zip!creds.md:1: AWS secret key (AWS_SECRET_ACCESS_KEY=…)"]


def test_a_zip_after_other_bytes_is_known_by_a_sound_end_record_only():
    zipped = a_zip({"a.md": CLEAN})
    assert archive_kind("x.png", PNG + zipped) == "zip" and embedded_zip(PNG + zipped)
    assert not embedded_zip(PNG + b"PK\x05\x06" + b"\0" * 18)  # a stray signature: no central directory before it
    assert archive_kind("x.png", PNG + b"PK\x05\x06" + b"\1" * 30) is None


@pytest.mark.parametrize("path,data,kind", [
    ("r/x.7z", b"7z\xbc\xaf\x27\x1c\x00\x04" + bytes(range(200)), "7z"),
    ("r/x.rar", b"Rar!\x1a\x07\x01\x00" + bytes(range(200)), "rar"),
    ("r/x.lz4", b"\x04\x22\x4d\x18\x64\x40\xa7" + bytes(range(200)), "lz4"),
    ("r/x.Z", b"\x1f\x9d\x90" + bytes(range(200)), "compress"),
    ("r/notes.md.br", bytes(range(200)), "brotli"),
    ("r/renamed.bin", b"7z\xbc\xaf\x27\x1c\x00\x04" + bytes(range(200)), "7z"),  # by its magic, whatever its name
], ids=BYTES_ID)
def test_a_compressed_format_the_scan_cannot_unpack_is_an_unscanned_archive(path, data, kind):
    [f] = scan_secrets({path: (REG, data)})
    assert f.kind == UNSCANNED and f"a {kind} file, which the scan cannot unpack" in f.shown and "fail closed" in f.shown


zstandard = pytest.importorskip("zstandard")


def test_a_secret_deep_in_a_zstd_stream_is_found_and_a_clean_one_is_not():
    words = b"backup restore table retention daily weekly snapshot verify\n" * 5000
    body = words[:len(words) // 2] + SECRET + b"\n" + words[len(words) // 2:]
    packed = zstandard.ZstdCompressor(level=19).compress(body)
    assert SECRET not in packed  # compressed away: only unpacking shows it
    [f] = scan_secrets({"r/notes.txt.zst": (REG, packed)})
    assert f.path == "r/notes.txt.zst!notes.txt" and f.line == 2501
    assert kinds("r/notes.txt.zst", zstandard.ZstdCompressor().compress(words)) == []


def test_zstd_without_the_package_is_an_unscanned_archive(monkeypatch):
    monkeypatch.setattr(archives, "zstandard", None)
    got = unpack("r/x.zst", zstandard.ZstdCompressor().compress(CLEAN))
    assert got is not None and got.problem == "a zstd file, which the scan cannot unpack"


# ---- MESSAGE-2: key assignments that are not credentials, beside the real ones ----------------------

SHA1_EMPTY = "da39a3ee5e6b4b0d3255bfef95601890afd80709"
HEX40 = "3f9a7c2e1b4d8f6a0c5e9b3d7f1a2c4e6b8d0f9a"
B64_SECRET = "q8Vt3+Zk1mR9xW2pL7nB4cY6sD0fH5jG/aE8uI3oK1w="


@pytest.mark.parametrize("path,line", [
    ("r/cache_key.py", 'CACHE_KEY = "dbbackup_v2_daily_retention_rotation"'),
    ("r/uuid_idemp.py", 'IDEMPOTENCY_KEY = "7c9e6679-7425-40de-944b-e07fc1f90ae7"'),
    ("r/partition_key.md", "partition_key = 'backups/2026/12/07/dbbackup-0fd3a1c2'"),
    ("r/primary_key.sql", "PRIMARY KEY = id_7f3a9c2e1b4d8f6a0c5e"),
    ("r/key_sha1_hex.md", f'KEY = "{SHA1_EMPTY}"  # sha1 of the empty file'),
    ("r/key_hex_commit.md", "key: 49d6455c3b1f0e2a7d9a8b6c5e4f3a2b1c0d9e8f  # git commit of the fixture"),
    ("r/gpg_fpr.md", 'KEY = "4AEE18F83AFDEB23A4F2B6E7C1D2E3F4A5B6C7D8"  # GPG key fingerprint (public)'),
    ("r/sha256.md", "KEY = " + "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    ("r/sort_key.py", 'sortKey = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2Rl"'),
    ("r/public_key.md", f"PUBLIC_KEY = {B64_SECRET}"),
    ("r/secret_path.env", "SECRET_KEY_FILE_PATH=/run/secrets/db_key"),
    ("r/token_path.env", "TOKEN=/run/secrets/api-token"),
], ids=lambda v: v if "/" in v[:2] or v.startswith("r/") else None)
def test_a_key_that_is_no_credential_is_not_a_finding(path, line):
    assert kinds(path, line.encode() + b"\n") == []


@pytest.mark.parametrize("path,line,hit", [
    ("r/api_key.py", f'API_KEY = "{HEX40}"', "API_KEY=…"),
    ("r/api_key_sha1.py", f'API_KEY = "{SHA1_EMPTY}"', "API_KEY=…"),  # the name says secret: a digest's shape is no excuse
    ("r/aws.env", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzqa20KEYab", "AWS_SECRET_ACCESS_KEY=…"),
    ("r/settings.py", f'SECRET_KEY = "{B64_SECRET}"', "SECRET_KEY=…"),
    ("r/settings2.py", 'SECRET_KEY = "/9j4AAQSkZJRgABAQEAYABgAAD/2wBDAAgG"', "SECRET_KEY=…"),  # base64 may begin with /
    ("r/auth.env", f"export AUTH={HEX40}", "AUTH=…"),
    ("r/token.env", "HEROKU_API_TOKEN=7c9e6679-7425-40de-944b-e07fc1f90ae7", "HEROKU_API_TOKEN=…"),  # a UUID token
    ("r/cache_secret.env", "CACHE_SECRET_KEY=Tr0ub4dor-3xQ9zLm", "CACHE_SECRET_KEY=…"),
    ("r/db.env", "DB_PASSWORD=correct_horse_battery_staple9", "DB_PASSWORD=…"),  # snake-case, but a password
], ids=lambda v: v if v.startswith("r/") else None)
def test_the_real_secret_beside_each_clean_twin_is_still_found(path, line, hit):
    said = kinds(path, line.encode() + b"\n")
    assert len(said) == 1 and said[0].startswith(f"{path}:1: ") and said[0].endswith(f"({hit})"), said
