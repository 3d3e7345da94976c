"""QA 25 T1/T4: secret shapes that survived harvest redaction, the --edit check and the publish scan."""

import base64
import json
import urllib.parse

import pytest

from skillforge.rules.casetext import for_proposer
from skillforge.rules.redact import redact, residue
from skillforge.rules.secrets import secret_spans
from skillforge.rules.skillfiles import scan_secrets

P = "Xk9Qw2Lm8Rt4Zp7"
AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SHAPES = {
    "aws secret on the next line": ("aws_secret_access_key\n" + AWS, "wJalr"),
    "aws secret after a colon and a blank line": ("AWS_SECRET_ACCESS_KEY:\n\n  " + AWS, "wJalr"),
    "secret name, value on the next line": ("client_secret\nZp7Vb3Nc6Jh1Fd5Gs0Ya2Ue8Wi", "Zp7Vb3Nc6"),
    "curl -u glued": ("curl -uadmin:" + P + " https://x", P),
    "mysql -p single-quoted": ("mysql -u root -p'" + P + "'", P),
    "mysql -p double-quoted": ('mysql -uroot -p"' + P + '" db', P),
    "sshpass -p": ("sshpass -p " + P + " ssh host", P),
    "sshpass -p quoted": ("sshpass -p'" + P + "' ssh host", P),
    "twice url-encoded": ("password%253D" + P, P),
    "base64url": ("creds " + base64.urlsafe_b64encode(("password=" + P + "??>").encode()).decode(), "cGFzc3dvcmQ9"),
    "hex": ("hex creds: " + b"password=hexSecret123".hex(), "70617373776f72643d"),
    "DB_PASS=": ("DB_PASS=" + P, P),
    "PASS:": ("PASS: " + P, P),
    "zero-width inside AKIA": ("AKIA\u200bQ7XK2LM9RT4ZP7VB", "Q7XK2LM9"),
    "zero-width inside AKIA example": ("AKIA\u200bIOSFODNN7EXAMPLE", "IOSFODNN7"),
    "ghp_ then a space": ("ghp_ Xk9Qw2Lm8Rt4Zp7Vb3Nc6Jh1Fd5Gs0Ya2Ue8W", "Xk9Qw2Lm8Rt4"),
    "ghp_ dash-chunked": ("ghp_Xk9Qw2Lm8Rt4-Zp7Vb3Nc6Jh1-Fd5Gs0Ya2Ue8Wi", "Zp7Vb3Nc6Jh1"),
    "ghp_ chunks low entropy": ("ghp_abcdefghijkl mnopqrstuvwx yz0123456789", "mnopqrstuvwx"),
    "ghp_ space chunks": ("ghp_ abcdefghij klmnopqrst uvwxyz0123 456789", "klmnopqrst"),
    "AKIA dotted": ("AKIA.IOSF.ODNN.7EXA.MPLE", "IOSF.ODNN"),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_redacted_refused_and_hidden_from_the_proposer(name: str) -> None:
    text, needle = SHAPES[name]
    query = f"Where is parcel HE0000001? {text}"
    assert needle not in redact(query)[0]
    assert residue(query)
    assert residue(json.dumps({"query": query}, ensure_ascii=False))  # the --edit check reads JSON text
    assert needle not in for_proposer(query)


@pytest.mark.parametrize("text", [
    "PASS: 12 tests", "--- PASS: TestParseV2Header (0.00s)", "PASS: tests/test_x.py::test_y", "bypass=Xk9Qw2Lm8Rt4",
    "passenger=John", "PASS_THROUGH=abc12345x", "pass: true", "ghp_ tokens look like this in the settings page always",
    "curl -u www-data:www-data https://x", "secret\nThe quick brown fox jumps over it", "aGVsbG8gd29ybGQgaGVsbG8=",
    "deadbeefcafebabe0123456789abcdef", "ASIA.PACIFIC.REGION.OFFICE", "mysql -u root -p'password'", "a 50%2525 discount", "sha256\n" + "ab" * 32,
])
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text)[0] == text
    assert not residue(text)


def test_a_short_password_key_needs_a_credential_value() -> None:
    assert redact("DB_PASS=hunter2")[0] == "DB_PASS=hunter2"  # lenient elsewhere, strict under a bare `pass` name
    assert "[REDACTED" in redact("DB_PASSWORD=hunter2")[0]
    assert urllib.parse.unquote(urllib.parse.unquote("password%253Dx")) == "password=x"


def test_publish_scan_finds_db_pass_and_curl_u() -> None:
    assert [s.label for s in secret_spans("DB_PASS=" + P)] == ["credential assignment"]
    text = f"# s\n\nRun `curl -uadmin:{P} https://x` and export DB_PASS={P}\n".encode()
    found = scan_secrets({"SKILL.md": (0o100644, text)})
    assert {f.kind for f in found} >= {"credential assignment", "command-line password"}, found
    assert all(P not in f.shown for f in found)
    assert not scan_secrets({"SKILL.md": (0o100644, b"curl -u $USER:$TOKEN https://x\ncurl -u user:password\n")})


def test_publish_scan_finds_a_token_cut_after_its_prefix() -> None:
    for line in (b"token: ghp_abcdefghijkl mnopqrstuvwx yz0123456789", b"ghp_Xk9Qw2Lm8Rt4-Zp7Vb3Nc6Jh1-Fd5Gs0Ya2Ue8Wi"):
        found = scan_secrets({"SKILL.md": (0o100644, b"# s\n\n" + line + b"\n")})
        assert [f.kind for f in found] == ["GitHub token (split)"], found
        assert all("mnop" not in f.shown and "Zp7V" not in f.shown for f in found)
    assert not scan_secrets({"SKILL.md": (0o100644, b"ghp_ tokens look like this in the settings page always\n")})
