"""Leak pass 40 (QA 40 F1 cpshift, F2): a case query shifted by a few code points or a Caesar key
(rules/leakshift.py), and held-out Chinese terms: a line listing the held-out routes' places, a close
rewording of a held-out query (rules/leakterms.py). Clean Chinese instruction lines that share common
words or the visible template with the held-out queries are not flagged.
"""

from __future__ import annotations

import codecs
import json

import pytest

from skillforge.rules.leaks import INJECTION_PATTERNS, EvalText, LeakContext, LeakKind, path_escapes, scan_leaks
from skillforge.testing.evolve_world import _case

HOLDOUT_Q = "从码头打车去新天地要多少钱，车多久能到？（8号）"
LATIN_Q = "I need a ride to Pudong Airport tomorrow at 5:40am from Hilton Shanghai Hongqiao"


def _ctx() -> LeakContext:
    """QA 40's sets (skillforge.testing.evolve_world.write_sets): repair 0-5, p0 6-7, holdout 8-13, final_audit 14-18."""
    cases, n = [], 0
    for name, count in (("repair", 6), ("p0", 2), ("holdout", 6), ("final_audit", 5)):
        for k in range(count):
            c = _case(f"{name}-taxi-hailing-{k:02d}", n + k)
            cases.append(EvalText(str(c["id"]), name, str(c["query"]), tuple(c["expect"]["must_include"]),  # type: ignore[index]
                                  json.dumps(c["fixtures"], ensure_ascii=False)))
        n += count
    cases.append(EvalText("holdout-taxi-hailing-01", "holdout", LATIN_Q, (), "{}"))
    return LeakContext(cases=tuple(cases))


CTX = _ctx()


def _shift(text: str, by: int) -> str:
    return "".join(chr(ord(ch) + by) for ch in text)


def test_the_contexts_holdout_query_is_the_qas():
    assert any(c.query == HOLDOUT_Q and c.partition == "holdout" for c in CTX.cases)


@pytest.mark.parametrize("by", [1, -1, 3, 100])
def test_code_point_shifted_cjk_query_is_a_query_leak(by):
    found = scan_leaks("- " + _shift(HOLDOUT_Q + " 96 16分钟", by), CTX)
    hit = [f for f in found if f.kind is LeakKind.QUERY and f.source == "holdout/holdout-taxi-hailing-00"]
    assert hit, found
    assert f"shifted by {by:+d} code point" in hit[0].evidence


def test_code_point_shifted_latin_query_is_a_query_leak():
    found = scan_leaks("- example: " + _shift(LATIN_Q, 1), CTX)
    assert any(f.kind is LeakKind.QUERY and "shifted by +1 code point" in f.evidence
               and f.source == "holdout/holdout-taxi-hailing-01" for f in found), found


@pytest.mark.parametrize("key", [1, 3, 7, 25])
def test_caesar_shift_with_wraps_is_a_query_leak(key):
    caesar = "".join(chr((ord(c) - 97 + key) % 26 + 97) if c.islower() else
                     chr((ord(c) - 65 + key) % 26 + 65) if c.isupper() else c for c in LATIN_Q)
    found = scan_leaks(f"- note: {caesar}", CTX)
    assert any(f.kind is LeakKind.QUERY and f"Caesar key {key}" in f.evidence for f in found), found


def test_the_shift_rule_leaves_plain_copies_and_case_changes_to_the_others():
    plain = scan_leaks("- " + HOLDOUT_Q, CTX)
    assert plain and not any("shifted by" in f.evidence for f in plain)
    upper = scan_leaks("- " + LATIN_Q.upper(), CTX)
    assert not any("shifted by" in f.evidence for f in upper)


@pytest.mark.parametrize("text", [
    "- abcdefghijklmnop qrstuvwxyz 0123456789",
    "- aaaaaaaaaaaa bbbbbbbbbbbb ababababab",
    "- Ask for the pickup point, the destination and the time; quote the fare and the ETA.",
    "- 报价时同时告诉用户司机预计多久到达。",
])
def test_ordinary_text_has_no_shifted_copy(text):
    assert not [f for f in scan_leaks(text, CTX) if "shifted by" in f.evidence]


def test_a_shift_the_parent_already_holds_is_not_the_patchs():
    shifted = "- " + _shift(HOLDOUT_Q, 1)
    assert not [f for f in scan_leaks(shifted, CTX, parent="# skill\n" + shifted + "\n") if "shifted by" in f.evidence]


ROUTES = "- 常见线路：码头→新天地、球馆→中山公园、剧院→南京东路、图书馆→世纪公园、宾馆→七宝老街、体育场→田子坊"
REWORDED = '- 输入："从码头叫辆车去新天地大概要多少钱，车要多久到？（8号）" → 估价并报接驾时间。'


def test_a_line_of_every_held_out_route_is_a_leak():
    found = scan_leaks(ROUTES, CTX)
    assert any(f.kind is LeakKind.HELD_OUT_NAME and f.evidence.startswith("held-out terms") for f in found), found


def test_a_close_rewording_of_a_held_out_query_is_a_near_copy():
    found = scan_leaks(REWORDED, CTX)
    assert [f for f in found if f.kind is LeakKind.NEAR_COPY and f.source == "holdout/holdout-taxi-hailing-00"], found


def test_the_f2_lines_are_caught_inside_a_patch_too():
    patch = "## Examples\n- 输入：\"车多久到\" → QUOTE-ETA 报价时同时告诉用户司机预计多久到达\n" + ROUTES + "\n" + REWORDED + "\n"
    kinds = {f.kind for f in scan_leaks(patch, CTX)}
    assert {LeakKind.HELD_OUT_NAME, LeakKind.NEAR_COPY} <= kinds


@pytest.mark.parametrize("text", [
    "- 报价时同时告诉用户司机预计多久到达。",
    "- 如果用户从码头或体育场出发，先确认上车点。",
    "- 体育场、图书馆、剧院、码头等场馆门口常有临时停车限制，提醒用户步行到路边。",
    "- 用户问多少钱时，先估价，再说车多久能到。",
    "- 去南京东路、中山公园一带高峰期很堵，提醒用户预留时间。",
    "- 输入：\"从公司打车去机场要多少钱，车多久能到？\" → 报价并告诉接驾时间。",
    "- 常见线路：公司→虹桥机场、酒店→外滩、家→浦东机场、学校→人民广场。",  # the visible cases' routes
])
def test_clean_chinese_lines_sharing_common_words_are_not_term_leaks(text):
    found = scan_leaks(text, CTX)
    assert not [f for f in found if f.kind in (LeakKind.HELD_OUT_NAME, LeakKind.NEAR_COPY)], found


def test_held_out_terms_the_parent_holds_are_not_the_patchs():
    parent = "# taxi\n" + ROUTES + "\n"
    assert not [f for f in scan_leaks(ROUTES.replace("常见线路", "热门线路"), CTX, parent=parent)
                if f.kind is LeakKind.HELD_OUT_NAME]


def test_rot13_of_a_cjk_text_does_not_repeat_the_density_finding():
    found = scan_leaks(ROUTES + "\n- " + codecs.encode("Xintiandi is popular", "rot13"), CTX)
    assert len([f for f in found if f.evidence.startswith("held-out terms")]) == 1


def test_patterns_moved_to_leakpatterns_are_still_exported_from_leaks():
    assert INJECTION_PATTERNS and path_escapes("../x") and not path_escapes("a/b.md")


def test_a_query_cut_into_quoted_inputs_between_ordinary_lines_is_a_near_copy():
    """QA 44 F4: 7-character quoted pieces of a held-out query, an ordinary example line between
    each two, published (no piece is an 8-gram, and near_copy read one line or two side by side)."""
    filler = '- 输入："明天早上叫车去公司" → 先估价，再请用户确认后下单。'
    pieces = ["从码头打车去新", "天地要多少钱，", "车多久能到？（", "8号）", "分钟"]
    text = "\n".join(f'- 输入："{p}" → 先估价\n{filler}' for p in pieces)
    found = scan_leaks(text, CTX)
    assert any(f.source == "holdout/holdout-taxi-hailing-00" and "quoted inputs joined" in f.evidence
               for f in found), [str(f) for f in found]
    ordinary = "\n".join(f'- 输入："{q}" → 先估价，再请用户确认。' for q in
                         ("明天早上叫车去公司", "帮我叫辆车回家", "从公司打车去虹桥机场要多久", "取消刚才叫的车"))
    assert not [f for f in scan_leaks(ordinary, CTX) if "quoted inputs joined" in f.evidence]
