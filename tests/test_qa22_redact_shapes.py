"""QA 22 TRUST-4: secret shapes that got past session redaction, the proposer-prompt redaction and the
`cases review --edit` check (rules/redactviews.py through rules/redact.py), and the texts that must
stay as they are."""

import pytest

from skillforge.rules.casetext import case_warnings, for_proposer
from skillforge.rules.redact import redact, residue
from skillforge.state.evaluate import Case

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

LEAKED = [
    # (text, what must not survive, kind)
    (f"AWS_SECRET_ACCESS_KEY {AWS_SECRET}", "wJalrXUtnFEMI", "aws-secret-key"),
    (f"aws secret access key   {AWS_SECRET} ok", "wJalrXUtnFEMI", "aws-secret-key"),
    (f"secret {AWS_SECRET}", "wJalrXUtnFEMI", "high-entropy-key-assignment"),
    ("AWS key AKIA IOSF ODNN 7EXA MPLE", "IOSF ODNN", "aws-access-key"),
    ("id AKIA-IOSF-ODNN-7EXA-MPLE.", "IOSF-ODNN", "aws-access-key"),
    ("curl -u admin:Passw0rdXyz https://api.x", "Passw0rdXyz", "cli-password"),
    ("curl --user 'admin:Passw0rdXyz' https://api.x", "Passw0rdXyz", "cli-password"),
    ("mysql -pRootPassw0rd -u root", "RootPassw0rd", "cli-password"),
    ("mysql --password=RootPassw0rd -u root", "RootPassw0rd", "credential-assignment"),
    ("ＰＧＰＡＳＳＷＯＲＤ＝fullwidthSecret9", "fullwidthSecret9", "credential-assignment"),
    ("password%3DurlEncodedSecret7", "urlEncodedSecret7", "credential-assignment"),
    ("base64 of creds: QUtJQUlPU0ZPRE5ON0VYQU1QTEU6d0phbHJYVXRuRkVNSQ==", "QUtJQUlPU0ZPRE5ON0VYQU1QTEU6", "base64-credential"),
    ("echo cGFzc3dvcmQ9aHVudGVyMg== | base64 -d", "cGFzc3dvcmQ9aHVudGVyMg", "base64-credential"),
    ("Authorization: Basic YWRtaW46UGFzc3cwcmQ=", "YWRtaW46UGFzc3cwcmQ", "basic-auth"),
]


@pytest.mark.parametrize(("text", "needle", "kind"), LEAKED)
def test_redacted_everywhere(text: str, needle: str, kind: str) -> None:
    out, found = redact(text)
    assert needle not in out and found[kind] == 1
    assert needle not in for_proposer(text)
    assert residue(text), "the --edit check refuses it"
    assert not residue(out), "nothing left once redacted"


KEPT = [
    "commit 3f9a2b7c1d4e5f60718293a4b5c6d7e8f9012345 fixed it",
    "cache key 9f8e7d6c5b4a39281706f5e4d3c2b1a098765432",
    "the key AuthenticationMiddlewareClassName is used",
    "ASIA PACIFIC REGION TEAM OFFICE SUPPORT",
    "AKIA IOSF ODNN SEXA MPLE",  # no digit: upper-case words
    "docker run -u 1000:1000 img",
    "docker exec -u www-data:www-data x",
    "mysql -u root -p mydb",
    "see https://x.com/search?q=a%20b%3Dc",
    "ＳＦ１２３４５６７８９０ 快递单号：１２３，谢谢",
    "aGVsbG8gd29ybGQgdGhpcyBpcyBmaW5l",  # "hello world this is fine"
    "VXNlcjoxMjM0",  # "User:1234", a GraphQL id
    "the token count is 12345678901234567890",
    "secret santa list for the office party",
]


@pytest.mark.parametrize("text", KEPT)
def test_not_redacted(text: str) -> None:
    assert redact(text) == (text, {})
    assert residue(text) == []


def test_a_set_case_with_a_spaced_aws_secret_warns() -> None:
    case = Case(id="c1", skill="package-tracking", query=f"Where is parcel SF1? AWS_SECRET_ACCESS_KEY {AWS_SECRET}")
    lines = case_warnings(case)
    assert lines and "aws-secret-key" in lines[0]


def test_full_width_key_keeps_its_name_for_the_reviewer() -> None:
    assert redact("ＰＧＰＡＳＳＷＯＲＤ＝fullwidthSecret9 psql")[0] == "ＰＧＰＡＳＳＷＯＲＤ＝[REDACTED:credential-assignment] psql"


def test_the_edit_check_reads_json_text() -> None:
    """`cases review --edit` checks the JSON text of the edit: a value at the end of a string counts."""
    import json
    for text, _, _ in LEAKED:
        assert residue(json.dumps({"query": f"where is parcel SF1? {text}"}, ensure_ascii=False)), text
