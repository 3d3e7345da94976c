"""QA pass qa10a F2 and F3: holdout text that got past the leak scan and was published.

F2: the holdout query written in Traditional characters. F3: an expected fact with a space between
the number and its CJK unit ("16 分钟"), a fare with its unit ("96 元"), and the same numbers as
Roman numerals ("XVI 分钟"). The repros are the QA's exact texts, at the level of the pure scan
(rules/leaks.py) and once through the evolve check; each has a negative twin.

Speed (measured 2026-12-06 on the shared 2-core box under load ~3, min of 100 runs): fold() of a
5 KB SKILL.md 1.82 ms before, 2.45 ms after (Traditional -> Simplified alone 0.18 ms; OpenCC's
three tables load once, ~35 ms, on the first fold); `benchmarks/leaks.py --repeats 50`: a 300-case
context built in min 114 ms before, 148 ms after, a 2.3 KB SKILL.md scanned in min 8.0 ms before,
9.2 ms after. Catch rate and false positives of the benchmark unchanged (57/57, 0/14 clean, 0
findings against the other skills' sets, 10 against their own).
"""

from __future__ import annotations

import json

import pytest

from skillforge.evolution.check import check_candidate
from skillforge.rules.leaks import EvalText, LeakContext, LeakKind, scan_leaks
from skillforge.rules.textnorm import fold, simplified
from skillforge.state.evolve import Candidate, CandidateVerdict, PatchFormatName

HOLDOUT_ID = "holdout-taxi-hailing-00"
SOURCE = f"holdout/{HOLDOUT_ID}"
QUERY = "从码头打车去新天地要多少钱，车多久能到？（8号）"
FIXTURES = {"ride.estimate_fare": {"fare_cny": 96, "pickup_eta": "16分钟"}}
"""holdout-taxi-hailing-00 as skillforge.testing.evolve_world writes it (case 8: fare 96, ETA 16分钟)."""


def _ctx(*, facts: tuple[str, ...] = ("96", "16分钟"), fixtures: object = FIXTURES) -> LeakContext:
    return LeakContext(cases=(EvalText(HOLDOUT_ID, "holdout", QUERY, facts, json.dumps(fixtures, ensure_ascii=False)),))


def _found(text: str, ctx: LeakContext | None = None) -> list[tuple[LeakKind, str, str]]:
    return [(f.kind, f.evidence, f.source) for f in scan_leaks(text, ctx or _ctx())]


# ---- F2: Traditional characters ----------------------------------------------------------------

QA_TRADITIONAL = '- 输入："從碼頭打車去新天地要多少錢，車多久能到？" → QUOTE-ETA：报价时同时告诉用户司机预计多久到达。'


def test_f2_the_holdout_query_in_traditional_characters_is_a_leak() -> None:
    assert _found(QA_TRADITIONAL) == [(LeakKind.QUERY_NGRAM, "从码头打车去新天", SOURCE)]
    simplified_twin = QA_TRADITIONAL.replace("從碼頭打車去新天地要多少錢，車多久能到？", QUERY[:-5])
    assert _found(simplified_twin) == _found(QA_TRADITIONAL)


def test_f2_the_whole_query_in_traditional_is_the_query_itself() -> None:
    assert _found("從碼頭打車去新天地要多少錢，車多久能到？（8號）")[0] == (LeakKind.QUERY, QUERY, SOURCE)


def test_f2_an_instruction_in_traditional_that_copies_nothing_is_clean() -> None:
    assert _found("- 報價時同時告訴用戶司機預計多久到達，並請用戶確認上車地點。") == []


def test_f2_the_evolve_check_calls_the_traditional_copy_a_leak() -> None:
    parent = "---\nname: taxi-hailing\ndescription: d\n---\n## Examples\n"
    cand = Candidate(id="r1c1", target="taxi-hailing", patch="x", patch_format=PatchFormatName.FULL,
                     text=parent + QA_TRADITIONAL + "\n", claimed_level=1)
    checked = check_candidate(cand, parent, "taxi-hailing", _ctx(), [])
    assert (checked.verdict, checked.rejected_by) == (CandidateVerdict.LEAK, "leak_scan")


PAIRS = [("車", "车"), ("錢", "钱"), ("頭", "头"), ("碼", "码"), ("門", "门"), ("們", "们"), ("時", "时"),
         ("間", "间"), ("說", "说"), ("話", "话"), ("國", "国"), ("際", "际"), ("書", "书"), ("學", "学"),
         ("東", "东"), ("長", "长"), ("開", "开"), ("關", "关"), ("電", "电"), ("腦", "脑")]


@pytest.mark.parametrize("traditional,simple", PAIRS)
def test_twenty_common_traditional_characters_fold_to_simplified(traditional: str, simple: str) -> None:
    assert fold(traditional) == simple and fold(simple) == simple


def test_folding_to_simplified_is_character_by_character_and_keeps_the_length() -> None:
    # OpenCC's phrase tables would make 軟體 软件 and 計程車 出租车: the fold converts characters only
    words = "軟體 計程車 記憶體 滑鼠 乾杯 乾隆 頭髮 麵包 後來 著名"
    assert simplified(words) == "软体 计程车 记忆体 滑鼠 干杯 干隆 头发 面包 后来 着名"
    assert len(simplified(words)) == len(words)
    assert fold(fold(words)) == fold(words)  # a chained mapping (薴 -> 苧 -> 苎) is followed to its end
    assert simplified("薴") == simplified("苧") == simplified(simplified("薴"))


def test_latin_kana_hangul_and_simplified_text_are_not_changed_by_the_fold_to_simplified() -> None:
    text = "Quote the ETA. ひらがな カタカナ 한국어 从码头打车去新天地"
    assert simplified(text) == text


# ---- F3: a space, a unit, a Roman numeral --------------------------------------------------------

def test_f3_a_space_between_the_number_and_its_unit_does_not_hide_the_fact() -> None:
    assert _found("（例：司机预计 16 分钟 到达）")[0] == (LeakKind.EXPECTED_FACT, "16分钟", SOURCE)
    for text in ("（例：司机预计 ⑯分钟 到达）", "（例：司机预计16分钟到达）", "司机预计\n16\n分钟", "约 十六 分钟"):
        assert _found(text)[0] == (LeakKind.EXPECTED_FACT, "16分钟", SOURCE), text


def test_a_number_joins_the_cjk_character_on_either_side_but_not_a_latin_word() -> None:
    assert fold("约 16 分钟") == fold("约16分钟") == "约16分钟"
    assert fold("ETA 16 apples, 16 mint") == "eta 16 apples, 16 mint"
    assert fold("QUOTE-ETA 报价 16") == "quote-eta 报价16"
    assert fold("七万三千零一十九 七三零一九") == "73019 73019"  # a space between two CJK numbers still parts them


def test_a_longer_number_does_not_contain_the_fact() -> None:
    assert _found("司机预计 116 分钟 到达") == []
    assert _found("司机预计 16.5 分钟 到达") == []


def test_f3_a_fare_with_its_unit_is_a_leak_only_where_the_holdout_text_has_the_unit() -> None:
    # the QA world's holdout case has the bare fact "96" and fare_cny 96: two digits alone are not
    # distinctive (its 22 cases' fares cover 40-187), so the QA's line stays clean there, by rule
    assert _found("预估车费 96 元") == []
    for fact in ("96元", "96 元"):
        ctx = _ctx(facts=(fact,), fixtures={})
        for text in ("预估车费 96 元", "预估车费96元", "预估车费 XCVI 元", "预估车费 九十六 元"):
            assert _found(text, ctx) == [(LeakKind.EXPECTED_FACT, fact, SOURCE)], (fact, text)
        assert _found("预估车费 196 元，起步价 14 元", ctx) == []
    fixture = _ctx(facts=(), fixtures={"ride.estimate_fare": {"fare": "96元"}})
    assert _found("预估车费 96 元", fixture) == [(LeakKind.FIXTURE_CONSTANT, "96元", SOURCE)]


def test_a_one_digit_number_with_a_unit_is_not_distinctive() -> None:
    ctx = _ctx(facts=("8号",), fixtures={"x": "3元"})
    assert _found("请选择8号线，车费3元起", ctx) == []


def test_f3_roman_numerals_before_a_cjk_unit_are_read() -> None:
    assert _found("XVI 分钟")[0] == (LeakKind.EXPECTED_FACT, "16分钟", SOURCE)
    assert fold("XVI分钟") == fold("约 XVI 分钟")[1:] == "16分钟"


@pytest.mark.parametrize("text", ["MIX 套餐", "CIVIL 工程", "mix 套餐", "Chapter XVI of the guide", "xvi 分钟",
                                  "DIV 标签", "MCP 服务器", "I 想要", "V 字形"])
def test_latin_words_and_lone_or_lower_case_numerals_are_not_read_as_numbers(text: str) -> None:
    assert not any(ch.isdigit() for ch in fold(text)), fold(text)
