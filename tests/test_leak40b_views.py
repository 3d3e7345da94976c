"""QA 43 T1: a holdout query with its fare and ETA auto-published at L1 as base85, Ascii85, uuencode,
quoted-printable, hex in 4-byte groups, and a base64 or hex stream cut into short pieces (parted by
spaces, or one a line). Each is now read by a view (rules/leakdecode.py) and named by it; the same
encodings of text no view reads (a code-point shift) are opaque (rules/opaque.py: a long run, or the
MASS of mixed tokens), so an L1 change holding them is L2. The texts are built with the transforms
of QA 43's /tmp/qa43/repro/variants.py."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import quopri

import pytest
from conftest import EXAMPLE_SKILLS, REPO

from skillforge.rules.leakdecode import base85_decoded, hex_decoded, joined_decoded, qp_decoded, uu_decoded
from skillforge.rules.leaks import EvalText, LeakContext, scan_leaks
from skillforge.rules.leakviews import view_of
from skillforge.rules.levels import Level, semantic_diff
from skillforge.rules.opaque import MIN_MASS, mixed_tokens, opaque_runs
from skillforge.skill import file as skillfile

Q = "从码头打车去新天地要多少钱，车多久能到？（8号）"
FULL = Q + " 96 16分钟"
CTX = LeakContext(cases=(
    EvalText("holdout-taxi-hailing-00", "holdout", Q, ("96", "16分钟"),
             json.dumps({"ride.estimate_fare": {"fare": 96, "eta": "16分钟"}}, ensure_ascii=False)),
))


def _encodings(p: bytes) -> dict[str, str]:
    """variants.py's QA 43 transforms of the bytes `p`."""
    b64 = base64.b64encode(p).decode()
    return {
        "b85": "- 样例：" + base64.b85encode(p).decode(),
        "a85": "- 样例：" + base64.a85encode(p).decode(),
        "uu": "- 样例：" + "".join(binascii.b2a_uu(p[i:i + 45]).decode().strip() for i in range(0, len(p), 45)),
        "qp": "- 样例：" + quopri.encodestring(p).decode().replace("=\n", ""),
        "hexsp4": "- 样例：" + p.hex(" ", 4),
        "b64chunks": "- 样例：" + " ".join(b64[i:i + 20] for i in range(0, len(b64), 20)),
        "b64lines": "\n".join(f"- 片段{k}：{b64[i:i + 20]}" for k, i in enumerate(range(0, len(b64), 20))),
        "b64short": "\n".join(f"- 片段{k}：{base64.b64encode(p[i:i + 12]).decode()}"
                              for k, i in enumerate(range(0, len(p), 12))),
        "hexshort": "\n".join(f"- 片段{k}：{p[i:i + 10].hex()}" for k, i in enumerate(range(0, len(p), 10))),
    }


T1 = _encodings(FULL.encode())
VIEWS = {"b85": "base85-decoded", "a85": "base85-decoded", "uu": "uudecoded", "qp": "quoted-printable-decoded",
         "hexsp4": "hex-decoded", "b64chunks": "pieces-joined-decoded", "b64lines": "pieces-joined-decoded",
         "b64short": "pieces-joined-decoded", "hexshort": "pieces-joined-decoded"}
SHIFTED = _encodings("".join(chr(ord(c) + 1) for c in FULL).encode())  # decodes, but to no readable text


@pytest.mark.parametrize("name", sorted(T1))
def test_qa43_encodings_are_found_in_their_view(name: str) -> None:
    found = scan_leaks(T1[name], CTX)
    assert any(f.view == VIEWS[name] and "holdout-taxi-hailing-00" in f.source for f in found), [str(f) for f in found]
    assert {"query", "fixture_constant"} <= {f.kind.value for f in found}


def _patched(lines: str) -> tuple[skillfile.SkillFile, skillfile.SkillFile]:
    live = (EXAMPLE_SKILLS / "taxi-hailing" / "SKILL.md").read_text(encoding="utf-8")
    new = live.replace("## Examples\n", f"## Examples\n{lines}\n", 1)
    return skillfile.parse(live, "SKILL.md", "taxi-hailing"), skillfile.parse(new, "SKILL.md", "taxi-hailing")


@pytest.mark.parametrize("name", sorted(SHIFTED))
def test_the_same_encodings_of_unreadable_text_make_an_l1_change_l2(name: str) -> None:
    assert opaque_runs(SHIFTED[name])
    diff = semantic_diff(*_patched(SHIFTED[name]))
    assert diff.computed_level is Level.L2
    assert any("encoded-looking text the leak scan cannot read under ## Examples" in r for r in diff.reasons), diff.reasons


CLEAN_L1 = [
    "- 航班 CA1234 明早 10:30pm 起飞，订单号 ORD-2026-000123，帮我叫车",
    "- flight MU5137 at 10:30pm, order 1Z84X7W90391772610 -> book a taxi",
    "- order AB12CD34EF, flight CZ3101, pickup 07:45am",
    "- 输入：\"查一下订单 3f2b8c1e-9a4d-4e7b-8c2a-1d5e6f7a8b9c 的状态\" → 调用工具查询并报告结果。",
    "- 参考实现见提交 9fceb02d0ae598e95dc970b74767f19372d61af8（仅供维护者）。",
    "- 校验值 sha256: " + hashlib.sha256(b"x").hexdigest(),
    "- 工具调用示例：`ride.estimate_fare(pickup=\"码头\", dropoff=\"新天地\", vehicle_type=\"express\", depart_at=\"now\")`",
    "- name files `{date:%Y-%m-%d}_{n:03}{ext}` and call `search(radius_km=3, limit=10)`; `a != b && c <= d`",
    "- 令牌示例格式：`<header>.<payload>.<signature>`，`--split \"repair=60,holdout=30,final_audit=10\"`",
    "- **Bold** | `SKILLFORGE_<ROLE>_<KEY>` | 2026-12-06: 顺丰 SF1456908823417 什么时候能到？",
]


@pytest.mark.parametrize("line", CLEAN_L1)
def test_ordinary_example_lines_hold_no_opaque_run(line: str) -> None:
    """(Some of these are L2 for what they say: a directive, a tool call; never for an encoded run.)"""
    assert opaque_runs(line) == []
    assert not any("encoded run" in r for r in semantic_diff(*_patched(line)).reasons)
    assert not any(f.view for f in scan_leaks(line, CTX))


def test_an_example_with_a_flight_a_time_and_order_ids_stays_l1() -> None:
    line = '- 输入："航班 CA1234 明早 10:30pm 到浦东，订单号 ORD-2026-000123，运单 1Z84X7W90391772610" → 报出车费范围。'
    assert semantic_diff(*_patched(line)).computed_level is Level.L1


def test_what_counts_to_the_mass() -> None:
    assert mixed_tokens(CLEAN_L1[0]) == []  # CA1234: one switch; 10:30pm and ORD-2026-000123: no piece mixes
    assert mixed_tokens(CLEAN_L1[1]) == ["1Z84X7W90391772610"]  # 18 characters, under MIN_MASS
    assert sum(map(len, mixed_tokens(CLEAN_L1[1]))) < MIN_MASS
    three = "- order AB12CD34EF, ref 8f3k2Lq9, file fl_b10r77"  # three random-looking ids: 24, a person looks
    assert opaque_runs(three) == ["AB12CD34EF 8f3k2Lq9 b10r77"]


def test_decoders() -> None:
    assert qp_decoded("=E4=BB=8E=E7=A0=81=E5=A4=B4=E6=89=93=\n=E8=BD=A6 ok") == "从码头打车 ok"
    assert qp_decoded("a=1, b=2") == "a=1, b=2"
    assert hex_decoded("e4bb:8ee7a081:e5a4b4e6:8993e8bd:a6e5:8ebb") == "从码头打车去"
    assert hex_decoded("2026 1207 3030") == ""  # no printable text
    assert base85_decoded("released 2026-12-06: notes") == ""  # a date is no base85 token
    assert base85_decoded(base64.b85encode("bikes near Marigold".encode()).decode()) == "bikes near Marigold"
    assert base85_decoded("<~" + base64.a85encode(b"bikes near Marigold").decode() + "~>") == "bikes near Marigold"
    uu = "\n".join(binascii.b2a_uu("bikes near Marigold Crescent"[i:i + 10].encode()).decode().strip()
                   for i in range(0, 28, 10))
    assert uu_decoded(uu) == "bikes near Marigold Crescent"
    pieces = base64.b64encode("bikes near Marigold Crescent".encode()).decode()
    assert joined_decoded(" ".join(pieces[i:i + 10] for i in range(0, len(pieces), 10))) == "bikes near Marigold Crescent"


def _skill_files() -> list:
    return sorted([*(REPO / "skills").rglob("SKILL.md"), *(REPO / "tests" / "fixtures").rglob("SKILL.md")])


@pytest.mark.parametrize("key", ["qp", "base85", "uu", "joined", "hex"])
def test_the_new_views_read_nothing_in_shipped_skills(key: str) -> None:
    files = _skill_files()
    assert len(files) >= 10
    assert {str(f): v for f in files if (v := view_of(key, f.read_text(encoding="utf-8")))} == {}
