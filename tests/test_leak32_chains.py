"""Leak views chained (rules/leakviews.py, leak pass 32): a held-out query under two encodings (base64
of its percent-encoding, base64 of its hex, base64 in a percent-encoded URL, ROT13 or reversal of its
base64, base64 of base64 ...) is read by applying the decoding views to each other's output, up to
CHAIN_DEPTH steps within CHAIN_BUDGET characters; a finding names its chain, outermost step first
("found in the percent-decoded base64-decoded text"). Ordinary text with URLs, ids and blobs stays clean.
"""

from __future__ import annotations

import base64
import codecs
import json
from urllib.parse import quote

import pytest

from skillforge.rules.leaks import EvalText, LeakContext, scan_leaks
from skillforge.rules.leakviews import CHAIN_BUDGET, chain_view, leak_views, view_name

QUERY = "bikes near Marigold Crescent please"  # no number in it: a view finds it whole, not as a number
CTX = LeakContext(cases=(
    EvalText("holdout-bike-03", "holdout", QUERY, (), json.dumps({"bikes.find_station": {"station": "Marigold Crescent"}})),
    EvalText("holdout-bike-04", "holdout", "any docks at Zephyrine Plaza?", (), "{}"),
))


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


CHAINED = {  # name -> (added text, the view named in the finding)
    "base64_of_percent": ("- token " + b64(quote(QUERY)), "percent-decoded base64-decoded"),
    "base64_of_hex": ("- token " + b64(QUERY.encode().hex()), "hex-decoded base64-decoded"),
    "hex_of_base64": ("- id " + b64(QUERY).encode().hex(), "base64-decoded hex-decoded"),
    "base64_of_base64": ("- token " + b64(b64(QUERY)), "base64-decoded base64-decoded"),
    "rot13_of_base64": ("- token " + codecs.encode(b64(QUERY), "rot13"), "base64-decoded rot13-decoded"),
    "reversed_base64": ("- token " + b64(QUERY)[::-1], "base64-decoded reversed"),
    "base64_of_rot13": ("- token " + b64(codecs.encode(QUERY, "rot13")), "rot13-decoded base64-decoded"),
    "rot13_of_percent": ("- https://x.org/?q=" + codecs.encode(quote(QUERY), "rot13"), "rot13-decoded percent-decoded"),
    "hex_of_percent": ("- id " + quote(QUERY).encode().hex(), "percent-decoded hex-decoded"),
    "three_deep": ("- token " + b64(b64(QUERY).encode().hex()), "base64-decoded hex-decoded base64-decoded"),
}


@pytest.mark.parametrize("name", CHAINED)
def test_two_encodings_chained_are_read_and_the_finding_names_its_chain(name: str) -> None:
    text, view = CHAINED[name]
    found = scan_leaks(text, CTX)
    assert any(f.view == view and "holdout-bike-03" in f.source for f in found), [str(f) for f in found]
    assert f"found in the {view} text" in " ".join(map(str, found))


def test_base64_after_an_equals_sign_in_a_percent_encoded_url() -> None:
    """`?d=` + base64 with its padding percent-encoded: `=` before the blob is no longer a bar to it."""
    text = "- https://x.org/?d=" + quote(b64(QUERY), safe="")
    assert any("holdout-bike-03" in f.source for f in scan_leaks(text, CTX))
    assert any("holdout-bike-03" in f.source for f in scan_leaks("- https://x.org/?d=" + b64(QUERY), CTX))


def test_a_chain_key_is_its_steps_and_its_name_reads_outermost_first() -> None:
    assert view_name("percent") == "percent-decoded"
    assert view_name("base64>percent") == "percent-decoded base64-decoded"
    assert QUERY in chain_view("base64>percent", b64(quote(QUERY)))
    assert QUERY in chain_view("rot13>base64", codecs.encode(b64(QUERY), "rot13"))  # ROT13 of the whole text first


CLEAN = [
    "- Send ids as base64: `aGVsbG8gd29ybGQsIHRoaXMgaXMgZmluZQ==` is fine.",
    "- See https://example.org/search?q=bike%20rental%20near%20me&lang=en&d=aGVsbG8gd29ybGQsIHRoaXMgaXMgZmluZQ%3D%3D",
    "- token " + b64(quote("the nearest dock with free bikes")),
    "- token " + b64(b64("any station will do, thanks")),
    "- paths like skillforge/rules/leakviews_and_more or evaluation_sets/holdout-bike are ids",
    "- sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 of the empty file",
]


@pytest.mark.parametrize("text", CLEAN)
def test_ordinary_text_with_urls_and_blobs_is_not_flagged(text: str) -> None:
    assert scan_leaks(text, CTX) == []


def test_the_chained_views_stop_at_their_budget() -> None:
    """Many blobs that each decode to another blob: the chains read at most CHAIN_BUDGET characters."""
    line = "- token " + b64(b64("x" * 200))
    text = "\n".join([line.replace("token", f"token{i}") for i in range(40)])
    views = leak_views(text)
    chained = sum(len(v) for k, v in views if ">" in k)
    assert chained <= CHAIN_BUDGET + 2 * len(text)
