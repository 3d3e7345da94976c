"""QA 40 F1: a holdout query with its fare and ETA, disguised as percent-encoded UTF-8, reversed
Chinese (plain `[::-1]`, digits too; also in the frontmatter examples list), base32, and base64 of
the reversed text, passed the leak scan and auto-published. Each is now read (rules/leakviews.py:
percent runs as UTF-8, CJK lines reversed whole, a base32 view that chains); and an encoded run no
view reads (rules/opaque.py) makes an L1 part L2 (rules/levels.py). The texts are built with the
transforms of QA 40's /tmp/qa40/repro/variants.py."""

from __future__ import annotations

import base64
import hashlib
import codecs
import json
import random
import urllib.parse

import pytest
from conftest import EXAMPLE_SKILLS

from skillforge.rules.leaks import EvalText, LeakContext, added_text, scan_leaks
from skillforge.rules.leakviews import base32_decoded, percent_decoded, view_of
from skillforge.rules.levels import Level, semantic_diff
from skillforge.rules.opaque import opaque_runs
from skillforge.skill import file as skillfile

Q = "从码头打车去新天地要多少钱，车多久能到？（8号）"
FULL = Q + " 96 16分钟"
CTX = LeakContext(cases=(
    EvalText("holdout-taxi-hailing-00", "holdout", Q, ("96", "16分钟"),
             json.dumps({"ride.estimate_fare": {"fare": 96, "eta": "16分钟"}}, ensure_ascii=False)),
))
EX = 'examples: ["帮我叫辆车去虹桥火车站", "get me a ride from the office to Pudong airport at 6am", "从公司打车回家大概多少钱", "取消刚才叫的车"]'
DISGUISES = {  # variants.py's transforms
    "pct": ("- " + urllib.parse.quote(FULL), "percent-decoded"),
    "rev": ("- " + FULL[::-1], "reversed"),
    "rev_fm": (EX[:-1] + ", " + json.dumps(Q[::-1], ensure_ascii=False) + "]", "reversed"),
    "b32": ("- 样例：" + base64.b32encode(FULL.encode()).decode(), "base32-decoded"),
    "b64rev": ("- 样例：" + base64.b64encode(FULL[::-1].encode()).decode(), "reversed base64-decoded"),
    "b32_lower_unpadded": ("- 样例：" + base64.b32encode(FULL.encode()).decode().lower().rstrip("="), "base32-decoded"),
    "b32_cut_short": ("- 样例：" + base64.b32encode(FULL.encode()).decode().rstrip("=")[:-3], "base32-decoded"),
    "b32_reversed": ("- 样例：" + base64.b32encode(FULL.encode()).decode()[::-1], "base32-decoded reversed"),
    "b32_rot13": ("- 样例：" + codecs.encode(base64.b32encode(FULL.encode()).decode(), "rot13"), "base32-decoded rot13-decoded"),
    "b32_of_pct": ("- 样例：" + base64.b32encode(urllib.parse.quote(FULL).encode()).decode(), "percent-decoded base32-decoded"),
    "pct_in_url": ("- https://example.org/s?q=" + urllib.parse.quote(Q), "percent-decoded"),
}


@pytest.mark.parametrize("name", DISGUISES)
def test_qa40_disguises_are_found_in_their_view(name: str) -> None:
    text, view = DISGUISES[name]
    found = scan_leaks(text, CTX)
    assert any(f.view == view and "holdout-taxi-hailing-00" in f.source for f in found), [str(f) for f in found]


@pytest.mark.parametrize("name", ["pct", "rev", "b32", "b64rev"])
def test_the_fare_and_eta_are_read_too(name: str) -> None:
    """Digits reversed with the text are read back (`钟分61 69` -> `96 16分钟`)."""
    kinds = {f.kind.value for f in scan_leaks(DISGUISES[name][0], CTX)}
    assert {"query", "fixture_constant"} <= kinds, kinds


def test_a_reversed_frontmatter_example_is_found_in_a_whole_patch() -> None:
    live = (EXAMPLE_SKILLS / "taxi-hailing" / "SKILL.md").read_text(encoding="utf-8")
    new = live.replace(EX, DISGUISES["rev_fm"][0], 1)
    assert new != live
    assert any(f.view == "reversed" for f in scan_leaks(added_text(live, new), CTX, parent=live))


def test_percent_runs_decode_as_utf8_and_invalid_bytes_keep_the_ascii_rule() -> None:
    assert percent_decoded("%E4%BB%8E%E7%A0%81 a%20b") == "从码 a b"
    assert percent_decoded("%FF%FE%41") == "%FF%FEA"  # no UTF-8: only printable ASCII decoded
    assert percent_decoded("%25E4%25BB%258E") == "从"  # encoded twice


def test_base32_view_reads_only_printable_utf8() -> None:
    assert base32_decoded(base64.b32encode("bikes near Marigold".encode()).decode()) == "bikes near Marigold"
    assert base32_decoded(base64.b32encode(bytes(range(200, 230))).decode()) == ""
    assert base32_decoded("ABCDEFGHIJKLMNOPQRSTUVWXYZ") == ""  # letters alone: no printable text


def test_ordinary_chinese_lines_are_not_read_reversed() -> None:
    """A Chinese line reads better forwards: no reversed view (read so, `011` backwards was a held-out number)."""
    text = (EXAMPLE_SKILLS / "taxi-hailing" / "SKILL.md").read_text(encoding="utf-8")
    assert view_of("reversed", text) == ""


OPAQUE_RNG = random.Random(40)


def _patched(line: str) -> tuple[skillfile.SkillFile, skillfile.SkillFile]:
    live = (EXAMPLE_SKILLS / "taxi-hailing" / "SKILL.md").read_text(encoding="utf-8")
    new = live.replace("## Examples\n", f"## Examples\n- 样例：{line}\n", 1)
    return skillfile.parse(live, "SKILL.md", "taxi-hailing"), skillfile.parse(new, "SKILL.md", "taxi-hailing")


@pytest.mark.parametrize("encode", [base64.b64encode, base64.b32encode, base64.urlsafe_b64encode,
                                    lambda b: b.hex().encode(),
                                    lambda b: "".join(f"%{x:02X}" for x in b).encode()],
                         ids=["b64", "b32", "b64url", "hex", "pct"])
def test_a_random_encoded_run_raises_l1_to_l2_with_a_short_prefix(encode) -> None:
    run = encode(OPAQUE_RNG.randbytes(36)).decode()
    old, new = _patched(run)
    diff = semantic_diff(old, new)
    assert diff.computed_level is Level.L2
    (reason,) = diff.reasons
    assert reason.startswith("L2: encoded-looking text the leak scan cannot read under ## Examples (ids or an encoding; a person looks): ")
    assert run not in reason and run[:16] in reason


def test_a_cipher_the_scan_cannot_read_inside_base64_is_opaque() -> None:
    """A code-point shift inside base64 (QA 40's cpshift): base64 decodes it, but not to readable text."""
    shifted = "".join(chr(ord(c) + 1) for c in FULL)
    assert opaque_runs("- " + base64.b64encode(shifted.encode()).decode())
    deep = FULL.encode()
    for _ in range(4):  # four times: beyond CHAIN_DEPTH
        deep = base64.b64encode(deep)
    assert opaque_runs("- " + deep.decode())


@pytest.mark.parametrize("text", [
    base64.b64encode(FULL.encode()).decode(),                       # read by the base64 view (a leak, not opaque)
    base64.b32encode(b"bikes near Marigold Crescent please").decode(),
    urllib.parse.quote(FULL),
    codecs.encode(base64.b64encode(FULL.encode()).decode(), "rot13"),
    "019abc03-9e8f-7d61-a2b3-c4d5e6f7a8b9",                          # a UUID
    hashlib.sha1(b"a").hexdigest(), hashlib.sha256(b"b").hexdigest(), hashlib.md5(b"c").hexdigest(),  # digests
    # (fixed, not random: xdist's workers must collect the same parameters)
    "scripts/build_index_v2_final.py --out data/run_2026_12_07",    # a path
    "https://example.org/a/b?utm_source=newsletter_2026&id=42",
    "supercalifragilisticexpialidocious internationalization",
])
def test_readable_or_ordinary_runs_are_not_opaque(text: str) -> None:
    assert opaque_runs("- " + text) == []


def test_english_and_chinese_examples_stay_l1() -> None:
    old, new = _patched('"打车去机场多少钱" → 报出车费范围。订单号 ORD-2026-000123')
    assert semantic_diff(old, new).computed_level is Level.L1


def test_every_shipped_and_fixture_skill_has_no_opaque_run() -> None:
    from conftest import REPO

    files = sorted([*(REPO / "skills").rglob("SKILL.md"), *(REPO / "tests" / "fixtures").rglob("SKILL.md")])
    assert len(files) >= 10
    assert {str(f): runs for f in files if (runs := opaque_runs(f.read_text(encoding="utf-8")))} == {}
