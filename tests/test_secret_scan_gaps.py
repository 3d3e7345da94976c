"""The secret scan's gaps after QA17 (rules/secrets.py, rules/skillfiles.py, rules/archives.py), each
with twins that must stay clean:

- a generically named key (`KEY`, `TOKEN`, `auth`) holding a bare high-entropy base64/hex value;
- the evolve leak scan and the skill-file scan share one secret loop (`secret_spans`);
- UTF-16 text inside an otherwise binary file (`strings -el`) is scanned.
"""

from __future__ import annotations

import random

import pytest

from skillforge.rules.leaks import LeakContext, LeakKind, scan_leaks
from skillforge.rules.secrets import GENERIC_LABEL, high_entropy, secret_spans
from skillforge.rules.skillfiles import file_text, scan_secrets, scan_text

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
