"""QA 27 T1 / T2: a credential name and its value across white space get the one-line assignment's
value test; a vendor token cut into runs by dots, underscores, dashes, spaces or line breaks is read
whole by one rule (redactviews.prefix_join) in redaction, the --edit check and the publish scan."""

import json

import pytest

from skillforge.rules.casetext import for_proposer
from skillforge.rules.redact import redact, residue
from skillforge.rules.redactviews import prefix_join
from skillforge.rules.skillfiles import scan_secrets

P = "Xk9Qw2Lm8Rt4Zp7"
ACROSS = {
    "colon LF": "password:\n" + P, "colon CRLF": "password:\r\n" + P, "colon CR": "password:\r" + P,
    "no colon LF": "password\n" + P, "env name LF": "DB_PASSWORD\n" + P, "env name CRLF": "DB_PASSWORD\r\n" + P,
    "blank line": "api_key:\n\n" + P, "spaces around LF": "password:  \n  " + P, "space only": "password " + P,
    "env name space": "DB_PASSWORD " + P, "symbols": "db_password\nTr0ub4dor&3x!Q", "short, after a colon": "password:\nhunter2",
    "JSON-escaped": "token = \\r\\n" + P, "pwd": "pwd\n" + P, "secret": "secret:\n\n" + P,
}
TOKENS = {
    "dots": "ghp_Xk9Qw2Lm8Rt4.Zp7Vb3Nc6Jh1.Fd5Gs0Ya2Ue8Wi", "underscores": "ghp_Xk9Qw2Lm8Rt4_Zp7Vb3Nc6Jh1_Fd5Gs0Ya2Ue8Wi",
    "line breaks": "ghp_Xk9Qw2Lm8Rt4\nZp7Vb3Nc6Jh1\nFd5Gs0Ya2Ue8Wi", "CRLF": "ghp_Xk9Qw2Lm8Rt4\r\nZp7Vb3Nc6Jh1\r\nFd5Gs0Ya2Ue8Wi",
    "sk-ant spaces": "sk-ant-api03-Xk9Qw2Lm8Rt4 Zp7Vb3Nc6Jh1 Fd5Gs0Ya2Ue8Wi",
    "sk-proj dots": "sk-proj-Xk9Qw2Lm8Rt4.Zp7Vb3Nc6Jh1", "dashes": "ghp_Xk9Qw2Lm8Rt4-Zp7Vb3Nc6Jh1-Fd5Gs0Ya2Ue8Wi",
}
CLEAN = [
    "password:\nThe user forgot it", "Reset your password\nClick the link", "password:\nMust be 8 characters",
    "the password field is required", "I reset my password yesterday and the parcel still has not arrived",
    "password = getpass.getpass()", "--- PASS: TestTrackParcel (0.01s) PASS: 12 tests", "token count 12345",
    "password: ask the user for it", "Password\nEnter your password", "curl -u $USER:$TOKEN https://x",
    "ghp_ tokens look like this", "npm_config_cache_dir1234", "hf_hub.download_v1234 is a function",
    "Bearer of bad news: my parcel is lost", "the word passport is required; pass: yes",
]


@pytest.mark.parametrize("text", ACROSS.values(), ids=ACROSS.keys())
def test_a_value_across_white_space_is_redacted_and_refused(text: str) -> None:
    query = f"Where is parcel HZ0100000001? {text}"
    shown, found = redact(query)
    assert found["credential-assignment"] == 1 and "[REDACTED:credential-assignment]" in shown, shown
    for piece in (P, "Tr0ub4dor", "hunter2"):
        assert piece not in shown and piece not in for_proposer(query)
    if "\\r" not in text:  # the --edit check reads the edit's JSON text
        assert "credential-assignment" in residue(json.dumps({"query": query}))


@pytest.mark.parametrize("text", TOKENS.values(), ids=TOKENS.keys())
def test_a_token_cut_into_runs_is_redacted_whole_everywhere(text: str) -> None:
    query = f"Where is parcel HZ0100000001? {text}"
    shown = redact(query)[0]
    for run in ("Xk9Qw2Lm8Rt4", "Zp7Vb3Nc6Jh1", "Fd5Gs0Ya2Ue8Wi"):
        assert run not in shown, shown
    assert shown.count("[REDACTED:") == 1
    assert residue(json.dumps({"query": query}))  # --edit refuses it
    assert scan_secrets({"SKILL.md": (0o100644, f"# s\n\n- example: {text}\n".encode())})  # publish refuses it


def test_the_join_stops_at_prose() -> None:
    text = "ghp_Xk9Qw2Lm8Rt4.Zp7Vb3Nc6Jh1.Fd5Gs0Ya2Ue8Wi\nPlease rotate it"
    assert redact(text)[0] == "[REDACTED:github-token]\nPlease rotate it"
    assert prefix_join("ghp_ tokens look like this") == []


@pytest.mark.parametrize("text", CLEAN)
def test_ordinary_text_is_kept(text: str) -> None:
    assert redact(f"Where is parcel HZ0100000001? {text}")[0].endswith(text)


@pytest.mark.parametrize("line", ["- db login password:\n" + P, f"- sshpass -p {P} ssh host", f"- mysql -uroot -p'{P}'",
                                  f"- DB_PASSWORD {P}"])
def test_publish_scan_names_the_qa27_shapes(line: str) -> None:
    found = scan_secrets({"SKILL.md": (0o100644, f"# s\n\n{line}\n".encode())})
    assert found and all(P not in f.shown for f in found), found


@pytest.mark.parametrize("line", ["Ask for the password:\nThe user knows it", "mysql -uroot -p db", "sshpass -p $PASS ssh h",
                                  "mysql -p'<password>'", "password:\nhunter2", "curl -u $USER:$TOKEN https://x"])
def test_publish_scan_keeps_prose_and_placeholders(line: str) -> None:
    assert not scan_secrets({"SKILL.md": (0o100644, f"# s\n\n{line}\n".encode())})
