"""QA 22 TRUST-8: a harvested case's `why` is redacted before it is cut, and the cut never leaves a
partial token (rules/redact.clip)."""

import pytest

from skillforge.rules.redact import clip

GH = "ghp_" + "Q" * 36
SECRETS = [GH, "sk-proj-" + "Z" * 40, "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
           "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAqqqqqqqqqqqqqqqqqqqqqqqqqqqq\n-----END RSA PRIVATE KEY-----",
           "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"]


@pytest.mark.parametrize("secret", SECRETS)
def test_no_partial_secret_at_any_cut(secret: str) -> None:
    for k in range(60, 240, 6):
        text = " ".join(("e" * k + " " + secret + " end").split())
        out = clip(text, 120)
        assert len(out) <= 120 + len("[REDACTED:high-entropy-key-assignment]…")
        for piece in ("QQQQ", "ZZZZ", "wJalr", "MIIE", "PRIV", "eyJ", "dozjg"):
            assert piece not in out, (k, out)


def test_short_text_is_only_redacted() -> None:
    assert clip(f"token {GH} ok", 120) == "token [REDACTED:github-token] ok"


def test_a_cut_mid_word_drops_the_word() -> None:
    assert clip("alpha bravo charlie", 9) == "alpha…"
    assert clip("alpha bravo charlie", 11) == "alpha bravo…"
    assert clip("alpha bravo charlie", 12) == "alpha bravo…"


def test_a_cut_inside_a_mark_keeps_the_mark() -> None:
    out = clip(f"error {GH} more text here", 12)
    assert out == "error [REDACTED:github-token]…"
