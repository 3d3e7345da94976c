"""Secret shapes the QA pass (qa10b F1) saw get through: every one is redacted from session text, the
distinctive ones (and `DB_PASSWORD=<credential>`) are refused by the leak scan of a patch, and each
has a negative twin that survives.

Negative twins kept on purpose, and why:
- skill prose about credentials ("password: ask the user for it", "never print the api key", "the
  secret: keep it safe", placeholders such as `<your-key>`, `${API_KEY}`, `***`, `changeme`): the
  leak scan must not block a legitimate skill improvement, and redaction leaves them readable;
- key names that describe a credential (`token_type: bearer`, `password_hint`, `max_tokens=1500`);
- tracking and order numbers, 16-digit runs that fail the Luhn check or carry no card network's
  prefix: they are what a case is about;
- references in code (`API_KEY = os.environ.get(...)`, `token = settings.token`): not a value;
- version strings, UUIDs and git SHAs: ids a skill or case legitimately quotes (a UUID or a SHA is
  not a credential shape by itself; next to a credential key it is redacted like any value).
The end-to-end check writes a small generic-JSONL session and runs the real harvest on it.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from skillforge.rules.leaks import LeakContext, LeakKind, scan_leaks
from skillforge.rules.redact import card_number, redact, redact_json, residue
from skillforge.rules.secrets import credential_matches
from skillforge.sessions.harvest import harvest
from skillforge.sessions.staging import staged_dir

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB_PAT = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTU"
DISTINCTIVE = {  # kind -> a token that is a secret wherever it appears
    "github-fine-grained-token": GITHUB_PAT,
    "stripe-key": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "npm-token": "npm_abcdefghijklmnopqrstuvwxyz0123456789",
    "gitlab-token": "glpat-Ab3dEf6hIj9kLm2nOp5q",
    "hugging-face-token": "hf_AbcdefghijklmnopqrstuvwxyzABCDEFGH",
}
STRIPE_OTHERS = ["sk_test_4eC39HqLyjWDarjtT1zdp7dc", "rk_live_51HxYzAbCdEf0123456789"]
# (text, the secret in it, the kind it is counted as)
ASSIGNMENTS = [
    ("DB_PASSWORD=Sup3rS3cretValue99", "Sup3rS3cretValue99", "credential-assignment"),
    ("PGPASSWORD=Sup3rS3cretValue99 psql -h db", "Sup3rS3cretValue99", "credential-assignment"),
    ("MYSQL_ROOT_PASSWORD=hunter22x", "hunter22x", "credential-assignment"),
    ("client_secret=Sup3rS3cretValue99", "Sup3rS3cretValue99", "credential-assignment"),
    (f"aws_secret_access_key={AWS_SECRET}", AWS_SECRET, "aws-secret-key"),
    (f"my aws secret key is {AWS_SECRET}", AWS_SECRET, "aws-secret-key"),
    ('{"password": "Sup3rS3cretValue99"}', "Sup3rS3cretValue99", "credential-assignment"),
    ("password: 'Sup3rS3cretValue99'", "Sup3rS3cretValue99", "credential-assignment"),
    ("my api_key is abcd1234efgh5678", "abcd1234efgh5678", "credential-assignment"),
    ("x-api-key: abcd1234efgh5678", "abcd1234efgh5678", "credential-assignment"),
    ("password=hunter2", "hunter2", "credential-assignment"),
    ("mysql -u root --password hunter2 -h db", "hunter2", "credential-assignment"),
    ("deploy --db-password=hunter2", "hunter2", "credential-assignment"),
    ("curl -H 'Authorization: Basic dXNlcjpwYXNzd29yZA==' https://x", "dXNlcjpwYXNzd29yZA==", "basic-auth"),
    ("postgres://admin:Sup3rS3cret@db:5432/orders", "Sup3rS3cret", "url-password"),
]
CARDS = ["4111 1111 1111 1111", "4111-1111-1111-1111", "5500005555555559", "378282246310005", "6011111111111117",
         "3530111333300000", "6200000000000005"]
KEEP = [  # survive redaction unchanged
    "password: ask the user for it", "never print the api key", "the secret: keep it safe", "the password is wrong",
    "password: <your-key>", "api_key=${API_KEY}", "password=***", "password: changeme", "token: GITHUB_TOKEN",
    "token_type: bearer", "password_hint: the pet's name", "max_tokens=1500", "secretary: Jane",
    "SF1234567890123", "1Z999AA10123456784", "tracking 1234 5678 9012 3456", "order 4111111111111112",
    "order 2026112812345", "JD0098765432101", "version 1.2.3-beta.4", "v2.14.0", "123e4567-e89b-12d3-a456-426614174000",
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8", "sk_live_", "hf_token", "npm_config_cache",
    "API_KEY = os.environ.get('API_KEY')", "token = settings.token", "password = read_password()",
]
PROSE = [  # skill prose the leak scan must not refuse (short passwords too: a patch may show one as an example)
    "password: ask the user for it", "Never print the api key.", "the secret: keep it safe",
    "api_key: <your-key>", "set token: ${GITHUB_TOKEN}", "password=***", "password: changeme",
    "token_type: bearer", "the API key is required", "password=hunter2", "api key is stored in the vault",
    "SORT_KEY=created_at", "Track 1234 5678 9012 3456 and order 4111111111111111 for the user.",
]


def ctx() -> LeakContext:
    return LeakContext(cases=())


def secrets_found(text: str) -> list[str]:
    return [f.source for f in scan_leaks(text, ctx()) if f.kind is LeakKind.SECRET]


@pytest.mark.parametrize("kind,token", [*sorted(DISTINCTIVE.items()), *(("stripe-key", t) for t in STRIPE_OTHERS)])
def test_distinctive_tokens_are_redacted_and_refused_by_the_leak_scan(kind, token):
    text, found = redact(f"use {token} now")
    assert token not in text and text == f"use [REDACTED:{kind}] now" and found == Counter({kind: 1})
    assert residue(text) == []
    assert secrets_found(f"- call the API with {token}")


@pytest.mark.parametrize("text,secret,kind", ASSIGNMENTS)
def test_assignments_lose_the_value_and_keep_the_key(text, secret, kind):
    out, found = redact(text)
    assert secret not in out and found == Counter({kind: 1}), out
    assert f"[REDACTED:{kind}]" in out and residue(out) == [] and residue(json.dumps(out)) == []
    key = text.split(secret)[0]
    assert out.startswith(key.rstrip("'\"")), out  # what the value was for stays readable


def test_the_leak_scan_refuses_a_drafted_db_password_and_the_aws_secret():
    assert secrets_found("- connect with DB_PASSWORD=Sup3rS3cretValue99") == ["credential assignment"]
    assert "AWS secret key" in secrets_found(f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}")
    assert secrets_found('config: {"client_secret": "Zq8!xWv3-Lk2"}') == ["credential assignment"]
    finding = next(f for f in scan_leaks("PGPASSWORD=Sup3rS3cretValue99", ctx()) if f.kind is LeakKind.SECRET)
    assert "Sup3r" not in str(finding)  # the refusal does not repeat the secret


@pytest.mark.parametrize("text", PROSE)
def test_the_leak_scan_lets_skill_prose_about_credentials_through(text):
    assert secrets_found(text) == []


@pytest.mark.parametrize("card", CARDS)
def test_card_numbers_are_redacted(card):
    assert card_number(card)
    out, found = redact(f"paid with {card}, thanks")
    assert out == "paid with [REDACTED:card-number], thanks" and found == Counter({"card-number": 1})


@pytest.mark.parametrize("keep", KEEP)
def test_negative_twins_survive_redaction(keep):
    assert redact(f"x {keep} y") == (f"x {keep} y", Counter())
    assert residue(keep) == []


def test_a_card_inside_a_longer_digit_run_or_failing_luhn_is_kept():
    assert not card_number("4111111111111112") and not card_number("1234567890123452")  # Luhn-valid, no network
    for text in ["94001000000000000000000", "9400 1000 0000 0000 0000 00", "ref 41111111111111110"]:
        assert redact(text) == (text, Counter())


def test_json_values_under_credential_keys_are_replaced_whole():
    value = {"password": "hunter2", "db": {"DB_PASSWORD": "Sup3rS3cretValue99", "apiKey": 12345678},
             "token_type": "bearer", "token_count": 12, "card": 4111111111111111, "order": 78912345678, "secret": True}
    out, found = redact_json(value)
    assert out == {"password": "[REDACTED:credential-assignment]",
                   "db": {"DB_PASSWORD": "[REDACTED:credential-assignment]", "apiKey": "[REDACTED:credential-assignment]"},
                   "token_type": "bearer", "token_count": 12, "card": "[REDACTED:card-number]", "order": 78912345678,
                   "secret": True}
    assert found == Counter({"credential-assignment": 3, "card-number": 1})
    assert residue(json.dumps(out)) == []
    assert residue(json.dumps(value)) == ["credential-assignment", "card-number"]  # unredacted: the fail-closed check sees both


def test_residue_flags_what_redaction_would_replace():
    for text, _secret, kind in ASSIGNMENTS:
        assert kind in residue(text), text
    assert residue("paid with 4111 1111 1111 1111") == ["card-number"]
    assert "credential-assignment" in residue(json.dumps({"note": 'PGPASSWORD="hunter2"'}))
    assert residue(json.dumps({"why": "password: ask the user for it"})) == []


def test_the_two_levels_differ_only_on_weak_values():
    assert [m.group("value") for m in credential_matches("password=hunter2", strict=False)] == ["hunter2"]
    assert list(credential_matches("password=hunter2", strict=True)) == []
    assert [m.group("value") for m in credential_matches("password=hunter22x", strict=True)] == ["hunter22x"]


SESSION = "qa-secrets-1"
LEAKED = ["Sup3rS3cretValue99", AWS_SECRET, GITHUB_PAT, "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "hunter2",
          "4111 1111 1111 1111", "4111111111111111", "dXNlcjpwYXNzd29yZA==", "abcd1234efgh5678", "glpat-Ab3dEf6hIj9kLm2nOp5q"]


def session_lines() -> list[dict]:
    def call(i: int, name: str, args: dict) -> dict:
        return {"session_id": SESSION, "role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}

    return [
        {"session_id": SESSION, "role": "user", "content": (
            "Track SF1234567890123 please; my PGPASSWORD=Sup3rS3cretValue99 and my api_key is abcd1234efgh5678, "
            f"card 4111 1111 1111 1111, token {GITHUB_PAT}")},
        call(1, "use_skill", {"name": "package-tracking", "reason": "parcel status", "session_id": SESSION}),
        {"session_id": SESSION, "role": "tool", "tool_call_id": "call_1", "name": "use_skill",
         "content": "Loaded skill package-tracking."},
        call(2, "logistics.track_package", {"tracking_number": "SF1234567890123"}),
        {"session_id": SESSION, "role": "tool", "tool_call_id": "call_2", "is_error": True, "content": json.dumps({
            "error": f"auth failed: aws_secret_access_key={AWS_SECRET} DB_PASSWORD=Sup3rS3cretValue99",
            "config": {"password": "hunter2", "stripe": "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "card": 4111111111111111},
            "curl": "curl -H 'Authorization: Basic dXNlcjpwYXNzd29yZA==' --password hunter2 glpat-Ab3dEf6hIj9kLm2nOp5q"})},
        {"session_id": SESSION, "role": "assistant", "content": "Sorry, the carrier's tracking service is failing right now."},
        {"session_id": SESSION, "role": "user", "content": 'No, it should be "in transit"; the password is hunter2'},
    ]


def test_a_harvested_session_stages_no_secret(machine, tmp_path):
    ws = machine.ws
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "s.jsonl").write_text("".join(json.dumps(line) + "\n" for line in session_lines()), encoding="utf-8")
    report = harvest(ws, "jsonl", folder)
    assert len(report.staged) == 1 and report.dropped == [], report.as_dict()
    case = report.staged[0]
    staged = "".join(p.read_text(encoding="utf-8") for p in staged_dir(ws).glob("*.json"))
    for secret in LEAKED:
        assert secret not in staged, secret
        assert secret not in json.dumps(report.as_dict()), secret
    assert "SF1234567890123" in case.query and "PGPASSWORD=[REDACTED:credential-assignment]" in case.query
    assert case.fixtures and "[REDACTED:" in json.dumps(case.fixtures)
    kinds = set(report.redactions)
    assert {"credential-assignment", "aws-secret-key", "card-number", "github-fine-grained-token", "stripe-key",
            "basic-auth", "gitlab-token"} <= kinds, kinds


@pytest.mark.parametrize("text", [
    "密码：Sup3rS3cretValue99", "数据库密码是 hunter22x", '{"passwd": "hunter22x"}', "口令：Xk29fjQm77ab",
    "我的滴滴登录密码是 Sup3rS3cretValue99", "Authorization: Token 9f8e7d6c5b4a3f2e1d", "4111.1111.1111.1111",
    "パスワードは Tr0ub4dor&3",
])
def test_qa_pass_4_shapes_are_redacted(text):
    """QA pass 4: these were staged unredacted, and three of them reached proposer prompts."""
    out, found = redact(text)
    assert found and not any(s in out for s in ("Sup3rS3cret", "hunter22x", "Xk29fjQm77ab", "9f8e7d6c5b4a",
                                                 "4111.1111", "Tr0ub4dor")), out


def test_a_chinese_password_line_in_a_patch_is_a_leak_only_when_it_holds_a_credential():
    assert scan_leaks("- 数据库密码是 Sup3rS3cretValue99", LeakContext(cases=()))
    assert not scan_leaks("- 密码：请向用户询问，不要记录在对话里", LeakContext(cases=()))
