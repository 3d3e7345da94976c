"""The fast secret scan finds what the full scan finds: every rule tried only at its anchors
(rules/anchored.py) gives `finditer`'s matches, the one-regex token joins are `_joined`'s, and a
secret at the very end of a large file or archive member is still reported."""

from __future__ import annotations

import io
import random
import zipfile

import pytest

from skillforge.rules import secrets as S
from skillforge.rules.anchored import Folded
from skillforge.rules.skillfiles import scan_secrets

FRAGMENTS = [
    "sk-", "sk-proj-", "AKIA", "ASIA", "ghp_", "github_pat_", "glpat-", "sk_live_", "npm_", "hf_", "xoxb-", "AIza",
    "-----BEGIN ", "RSA ", "PRIVATE KEY-----", "postgres://", "https://", "a.b+c://", "backup", ":", "@", "hunter2x9",
    "aws", "AWS_", "secret", "SECRET", "_access_key", " = ", "=", "\"", "'", " ", "\n", "\n\n", "\t", "password",
    "PASSWORD", "Token", "api_key", "apiKey", "_KEY", "--", "--password ", "密码", "：", "credential", "auth", "key",
    "passwd", "pwd", "A1b2C3d4", "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5", "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY", "x9", ".",
    ",", ";", "&", "(", ")", "[", "<", "`", "/", "+", "-", "_", "é", "ſ", "ı", "İ", "\u212a", " is ", "4Xk9LmQ2",
    "wR8sT1vY6bN3", "cD5eF7gH0jK2lM4n", "x" * 45,
]
PLANTED = "ghp_" + "Q7xK2mN9pL4vR8sT1wY6bC3dF5gH0jZ2aE4u"


def _texts(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(FRAGMENTS) if rng.random() < 0.7 else rng.choice("abcXYZ0189_-=+/ \n")
                    for _ in range(rng.randint(1, 70))) for _ in range(n)]


def _spans(it) -> list[tuple[int, int]]:  # noqa: ANN001 - an iterator of matches
    return [(m.start(), m.end()) for m in it]


def test_anchored_rules_find_what_a_full_scan_finds() -> None:
    texts, found = _texts(4000), 0
    for text in texts:
        ft = Folded(text)
        shapes = [(label, m.start(), m.end()) for label, _, m in S.shape_matches(ft, S.SECRET_PATTERNS)]
        assert shapes == [(label, m.start(), m.end()) for label, p in S.SECRET_PATTERNS for m in p.finditer(text)], text
        for strict in (True, False):
            assert _spans(S.credential_matches(text, strict=strict)) == _spans(
                m for p in S.CREDENTIAL_PATTERNS for m in p.finditer(text) if S.credential_ok(m, strict=strict)), text
        found += bool(shapes)
    assert found > 300  # the texts do hold secrets: the comparison is not between two empty lists


def test_generic_rule_is_the_full_scan_filtered() -> None:
    for text in _texts(3000, seed=11):
        full = [m for m in S.GENERIC_PATTERN.finditer(text)
                if text[m.end():m.end() + 1] not in ("(", "[") and not S.describes(m.group("key"))
                and not set(S._segments(m.group("key"))[-1:]) & S._HASHED and S.high_entropy(m.group("value"))
                and not S.not_a_credential(m.group("key"), m.group("value"), text[max(0, m.start() - 30):m.start()])]
        assert _spans(S.generic_matches(text)) == _spans(full), text


def test_token_joins_found_in_one_pass_are_the_split_joins() -> None:
    joins = 0
    for text in _texts(4000, seed=3):
        gaps, pieces, at = S._join_gaps(text), [], 0
        for start, end in gaps:
            pieces.append(text[at:start])
            at = end
        assert "".join(pieces) + text[at:] == S._joined(text)[0], text
        joins += bool(gaps)
    assert joins > 100


def _big(kind: str, size: int = 2 * 1024 * 1024) -> bytes:
    rng = random.Random(kind)
    if kind == "json":  # one line, no break: the secret is its last value
        body = ",".join(f'{{"id":"{rng.getrandbits(128):032x}","token_count":{rng.randint(1, 4000)}}}'
                        for _ in range(size // 60))
        return f'{{"items":[{body}],"note":"{PLANTED}"}}'.encode()
    words = "the skill reads a request and answers it with the booking tool step 12 of 40".split()
    lines = [" ".join(rng.choices(words, k=60)) for _ in range(size // 300)]
    return ("\n\n".join(lines) + f'\nclient = Client(token="{PLANTED}")\n').encode()


@pytest.mark.parametrize("kind", ["markdown", "json", "zip"])
def test_a_secret_at_the_very_end_of_a_large_file_is_found(kind: str) -> None:
    data, path = _big("json" if kind == "json" else "markdown"), "references/big.md"
    last_line = data.count(b"\n")  # the secret's line: the last one (the JSON's only one)
    if kind == "zip":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("big.md", data)
        data, path = buf.getvalue(), "references/big.zip"
    found = scan_secrets({path: (0o100644, data)})
    assert [f.kind for f in found] == ["GitHub token"]
    assert found[0].shown == "ghp_Q7…"
    assert found[0].line == max(last_line, 1)
