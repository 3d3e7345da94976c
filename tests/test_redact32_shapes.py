"""Redaction misses closed in redact32 (rules/redactviews.py): a credential word written apart
("pass word", "pass-word"), a value percent-encoded four (up to eight) times, an e-mail address
written out ("jane dot doe at example dot com", `jane[at]example[dot]com`), and an `sk-proj-` key
in even 3-letter chunks; with the prose near each that must stay."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from skillforge.rules.redact import redact, residue
from skillforge.rules.redactviews import PERCENT_ROUNDS

KEY = "sk-proj-" + "abc1def2ghi3jkl4mno5pqr6stu7"
CHUNKED = "sk-proj- " + " ".join(KEY[8:][i:i + 3] for i in range(0, 28, 3))


@pytest.mark.parametrize("text, secret", [
    ("pass word is hunter2abc", "hunter2abc"),
    ("the pass word: Xk9Qw2Lm8Rt4 works", "Xk9Qw2Lm8Rt4"),
    ("pass-word: hunter2abc", "hunter2abc"),
    ("Pass-Word = hunter2abc", "hunter2abc"),
    ("pass_word=hunter2abc", "hunter2abc"),
    ("pass phrase is correct-horse-9", "correct-horse-9"),
])
def test_a_credential_word_written_apart(text: str, secret: str) -> None:
    out, kinds = redact(text)
    assert secret not in out and kinds["credential-assignment"] == 1
    assert out.endswith(("[REDACTED:credential-assignment]", "[REDACTED:credential-assignment] works"))


@pytest.mark.parametrize("text", ["his pass word: ask the admin", "a pass word is required", "pass - word",
                                  "you pass words to it", "the bypass word list"])
def test_prose_with_pass_word_stays(text: str) -> None:
    assert redact(text) == (text, {})


@pytest.mark.parametrize("rounds", [4, 5, PERCENT_ROUNDS])
def test_a_value_percent_encoded_four_times_or_more(rounds: int) -> None:
    text = "password=Xk9Qw2Lm8Rt4"
    for _ in range(rounds):
        text = quote(text, safe="")
    out, kinds = redact(f"login {text}")
    assert "Xk9Qw2Lm8Rt4" not in out and kinds["credential-assignment"] == 1
    assert residue(f"login {text}") == ["credential-assignment"]


@pytest.mark.parametrize("text", [
    "mail jane dot doe at example dot com please",
    "jane[at]example[dot]com",
    "jane (at) example (dot) com",
    "jane {at} mail {dot} example {dot} org",
    "JANE AT EXAMPLE DOT COM",
    "jane at example dot com",
    "jane.doe at example.com",
])
def test_an_email_written_out(text: str) -> None:
    out, kinds = redact(text)
    assert "jane" not in out.lower() and kinds["email"] == 1


@pytest.mark.parametrize("text", [
    "look at example dot com", "meet me at the station dot com", "we arrive at 5 dot 30",
    "the cache is at redis dot internal", "results at a glance dot com", "see the docs at example.com",
    "the meeting is at noon. com port 3 is free",
])
def test_prose_with_at_and_dot_stays(text: str) -> None:
    assert redact(text) == (text, {})


def test_an_sk_proj_key_in_three_letter_chunks() -> None:
    for text in (CHUNKED, CHUNKED.replace("sk-proj- ", "sk-proj-"), f"my key is {CHUNKED} ok"):
        out, kinds = redact(text)
        assert kinds == {"openai-style-key": 1}, text
        assert "abc" not in out and "pqr" not in out
    assert redact(f"my key is {CHUNKED} ok")[0] == "my key is [REDACTED:openai-style-key] ok"


@pytest.mark.parametrize("text", [
    "sk-proj-abc def ghi jkl mno pqr",             # no digit: words
    "use ghp_ to mark tokens: ghp_ abc def ghi",
    "sk-proj- is the prefix of new keys and the old one was sk- only",
    "sk-proj-ab1 cdef gh ijklm no pq",            # chunks of many lengths
])
def test_prose_after_a_vendor_prefix_stays(text: str) -> None:
    assert redact(text) == (text, {})


def test_redacting_twice_changes_nothing() -> None:
    """`runs redact` may meet a line redacted on write: the marks themselves are never redacted."""
    for text in ("pass word is hunter2abc", "jane[at]example[dot]com", CHUNKED, "DB_PASSWORD=hunter2abc fails",
                 "curl -u bob:Xk9Qw2Lm8 https://x", "postgres://u:Xk9Qw2Lm8@db/x", "call +44 20 7946 0958"):
        once = redact(text)[0]
        assert redact(once) == (once, {})
