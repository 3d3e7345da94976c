"""Provenance: live values must come from this run's fixtures or the query; foreign nonces fail."""

from __future__ import annotations

import json

import pytest

from skillforge.rules.provenance import NONCE_RE, check_provenance, live_values, new_nonce

NONCE = new_nonce(bytes.fromhex("3fa9c01b22de"))
OTHER = "sfn-0123456789ab"


def fixture(payload: object, nonce: str = NONCE) -> str:
    """A fixture response as this run's tool returns it: JSON text carrying the nonce."""
    return json.dumps({"result": payload, "_nonce": nonce}, ensure_ascii=False)


WEATHER = fixture({"city": "北京", "forecast": [{"date": "2026-11-29", "high": 26, "low": 18, "pop": 40}]})
QUERY = "北京明天天气怎么样"


# ---- nonces ------------------------------------------------------------------------------------
def test_new_nonce_is_pure_and_well_formed():
    assert NONCE == "sfn-3fa9c01b22de"
    assert new_nonce(bytes(range(16))) == "sfn-000102030405"
    assert new_nonce(b"\xff" * 6) == new_nonce(b"\xff" * 6) == "sfn-ffffffffffff"
    assert NONCE_RE.fullmatch(new_nonce(bytes(range(8))))
    with pytest.raises(ValueError):
        new_nonce(b"\x01\x02")


def test_this_runs_nonce_in_the_answer_is_fine():
    result = check_provenance(f"最高26°C（{NONCE}）", [WEATHER, QUERY], NONCE)
    assert result.ok and result.stale_nonces == () and result.reason == ""


def test_a_nonce_from_another_run_fails():
    result = check_provenance(f"最高26°C（{OTHER}）", [WEATHER, QUERY], NONCE)
    assert not result.ok
    assert result.stale_nonces == (OTHER,)
    assert result.unsupported == ()
    assert OTHER in result.reason


def test_a_stale_nonce_fails_even_in_capitals_and_is_reported_once():
    result = check_provenance(f"{OTHER.upper()} and {OTHER}", [WEATHER], NONCE)
    assert result.stale_nonces == (OTHER,) and not result.ok


def test_digits_inside_a_nonce_are_not_values():
    assert live_values("sfn-123456789012") == []
    assert live_values(f"{OTHER} 12") == ["12"]


def test_a_malformed_run_nonce_is_a_caller_bug():
    with pytest.raises(ValueError):
        check_provenance("ok", [WEATHER], "sfn-XYZ")


# ---- the forged weather case -------------------------------------------------------------------
def test_forged_weather_numbers_fail():
    result = check_provenance("明天最高气温31°C，降水概率80%", [WEATHER, QUERY], NONCE)
    assert not result.ok
    assert result.unsupported == ("31°C", "80%")
    assert "31°C" in result.reason and "80%" in result.reason
    assert result.stale_nonces == ()


def test_the_same_numbers_from_the_fixture_pass():
    real = fixture({"forecast": [{"date": "2026-11-29", "high": 31, "pop": 80}]})
    result = check_provenance("明天最高气温31°C，降水概率80%", [real, QUERY], NONCE)
    assert result.ok and result.unsupported == () and result.reason == ""


def test_supported_weather_answer_in_full():
    answer = "明天（11月29日）北京最高26℃，最低18度，降水概率40%。"
    assert check_provenance(answer, [WEATHER, QUERY], NONCE).ok


def test_reason_lists_only_the_first_few():
    answer = " ".join(f"{n}°C" for n in range(50, 58))
    result = check_provenance(answer, [WEATHER], NONCE)
    assert len(result.unsupported) == 8
    assert "50°C, 51°C, 52°C, 53°C, 54°C" in result.reason and "55°C" not in result.reason
    assert "(+3 more)" in result.reason


# ---- what counts as a live value ---------------------------------------------------------------
@pytest.mark.parametrize("text,expected", [
    ("14:20出发", ["14:20"]),
    ("at 9:05 sharp", ["9:05"]),
    ("下午3点见", ["下午3点"]),
    ("3点20分和3点半", ["3点20分", "3点半"]),
    ("lands 2:20 PM or 3pm", ["2:20 PM", "3pm"]),
    ("¥368", ["¥368"]),
    ("$42.50", ["$42.50"]),
    ("368元", ["368元"]),
    ("€12", ["€12"]),
    ("USD 30", ["USD 30"]),
    ("$3 tip", ["$3"]),
    ("12%", ["12%"]),
    ("百分之12", ["百分之12"]),
    ("23.5", ["23.5"]),
    ("368", ["368"]),
    ("2,450", ["2,450"]),
    ("25°C", ["25°C"]),
    ("12km", ["12km"]),
    ("3.5kg", ["3.5kg"]),
    ("30 mph", ["30 mph"]),
    ("风力3级，约2小时", ["3级", "2小时"]),
    ("3.5万", ["3.5万"]),
    ("2026", ["2026"]),
    ("2026-11-29", ["2026-11-29"]),
    ("11月29日", ["11月29日"]),
    ("Nov 29, 2026", ["Nov 29, 2026"]),
    ("气温20-25°C", ["20", "25°C"]),
    ("11/29/2026 or 29.11.2026 or 2026/11/29", ["11/29/2026", "29.11.2026", "2026/11/29"]),
    ("29 November 2026", ["29 November 2026"]),
    ("11月出发，29号返回", ["11月", "29号"]),
    ("12 percent, 30 dollars, 12k users", ["12 percent", "30 dollars", "12k"]),
    ("15点到", ["15点"]),
])
def test_live_values(text, expected):
    assert live_values(text) == expected


@pytest.mark.parametrize("text", [
    "3 options", "step 2", "共3件", "有3点建议", "1. first\n2. second\n10. tenth\n11、eleventh", "第12天",
    "version 1.2.3", "5号线", "3个月", "", "no numbers here", "一二三",
])
def test_not_live_values(text):
    assert live_values(text) == []


def test_chinese_embedded_numbers_are_found_without_word_boundaries():
    assert live_values("价格为368元，共3件，折后价格为331.2元") == ["368元", "331.2元"]
    assert live_values("北京明天最高气温31度降水概率80%") == ["31度", "80%"]
    assert live_values("航班CA1234于14:20起飞") == ["1234", "14:20"]


def test_full_width_forms_are_read():
    assert live_values("３６８元 ３１℃ ８０％ １４：２０") == ["368元", "31°C", "80%", "14:20"]


def test_a_cjk_comma_separates_numbers():
    assert live_values("26，400") == ["26", "400"]


# ---- support by value --------------------------------------------------------------------------
def ok(answer: str, *sources: str) -> bool:
    return check_provenance(answer, list(sources), NONCE).ok


def test_thousands_separators():
    src = fixture({"total": 2450})
    assert ok("总价2,450元", src)
    assert ok("总价2450元", fixture({"total": "2,450"}))
    assert not ok("总价2,460元", src)
    assert ok("1,234,567 visitors", fixture({"visitors": 1234567}))


def test_prices_with_currency_signs_and_words():
    src = fixture({"price": 368, "usd": 42.5, "eur": "12.00"})
    assert ok("票价¥368，约$42.50，或€12", src)
    assert ok("票价368元", src)
    assert ok("USD 42.5", src)
    assert not ok("票价¥369", src)
    assert not ok("约$42.60", src)


def test_trailing_zeros_and_rounding():
    src = fixture({"temp": 23.46, "fee": 42.50})
    assert ok("42.5", src) and ok("42.500", src)
    assert ok("23.5°C", src)          # 23.46 rounded to the answer's precision
    assert ok("23°C", src)
    assert not ok("23.4°C", src)
    assert not ok("24°C", src)


def test_percentages_match_the_number_or_the_fraction():
    assert ok("降水概率40%", fixture({"pop": 40}))
    assert ok("降水概率40%", fixture({"pop": 0.4}))
    assert ok("0.4", "概率40%")
    assert not ok("降水概率45%", fixture({"pop": 0.4}))


def test_multipliers_match_the_plain_or_the_multiplied_value():
    assert ok("约3.5万人", fixture({"visitors": 35000}))
    assert ok("约3.5万人", "3.5万")
    assert ok("35,000 visitors", "3.5万")
    assert not ok("约4万人", fixture({"visitors": 35000}))


def test_times():
    assert ok("15点到", fixture({"arrival": "15:00"}))

    assert ok("14:20出发", fixture({"departure": "14:20"}))
    assert ok("14:20出发", fixture({"departure": "14:20:00"}))
    assert ok("14:20出发", fixture({"departure": "2026-11-29T14:20:00+08:00"}))
    assert ok("下午2:20出发", fixture({"departure": "14:20"}))
    assert ok("下午2点20分出发", fixture({"departure": "14:20"}))
    assert ok("2:20 PM", fixture({"departure": "14:20"}))
    assert ok("14:20出发", fixture({"departure": "2:20 PM"}))
    assert ok("9:05", fixture({"t": "09:05"}))
    assert not ok("14:25出发", fixture({"departure": "14:20"}))
    assert not ok("凌晨2:20出发", fixture({"departure": "14:20"}))
    assert not ok("14:20出发", fixture({"hour": 14, "minute": 21}))


def test_dates_and_years():
    src = fixture({"date": "2026-11-29"})
    assert ok("11月29日", src) and ok("2026年11月29日", src) and ok("2026-11-29", src)
    assert ok("Nov 29", src) and ok("29号", src) and ok("2026年", src)
    assert not ok("11月30日", src)
    assert not ok("2025年11月29日", src)
    assert not ok("2027年", src)
    assert ok("2026年11月29日", "11月29日北京天气")     # a date from the query; the year is not contradicted


def test_small_integers_never_need_a_source():
    assert ok("有3个选择，第2步最简单", fixture({}))
    assert ok("1. 带伞\n2. 穿外套", fixture({}))


def test_numbers_from_the_query_are_allowed():
    query = "帮我把368美元换成人民币，汇率7.12"
    src = fixture({"cny": 2620.16})
    assert ok("368美元按7.12的汇率约合2,620.16元", src, query)
    assert not ok("368美元约合2,620.16元", src)          # 368 is only in the query


def test_a_json_fixture_with_nested_lists():
    src = fixture({"flights": [{"no": "CA1234", "legs": [["PEK", "14:20", 1280], ["SHA", "16:45", [12.5, 99]]]}]})
    assert ok("CA1234 14:20起飞，票价1,280元；16:45到达，里程12.5km，99%准点", src)
    assert not ok("票价1,380元", src)
    assert not ok("16:50到达", src)


def test_json_punctuation_never_glues_numbers():
    src = fixture({"values": [1, 234]})
    assert ok("234", src)
    assert not ok("1,234", src)


def test_non_json_sources_are_read_as_text():
    assert ok("明天最高26°C", "high 26, low 18 (not json")


def test_empty_answer_is_fine():
    result = check_provenance("", [WEATHER, QUERY], NONCE)
    assert result.ok and result.unsupported == () and result.stale_nonces == () and result.reason == ""
    assert check_provenance("", [], NONCE).ok


def test_no_sources_fails_every_live_value():
    result = check_provenance("最高26°C", [], NONCE)
    assert not result.ok and result.unsupported == ("26°C",)


def test_repeated_unsupported_values_are_listed_once():
    result = check_provenance("31°C，还是31°C", [WEATHER], NONCE)
    assert result.unsupported == ("31°C",)


def test_time_after_a_full_width_colon_is_a_time() -> None:
    """Chinese answers write 时间：14:20 (NFKC turns the full-width colon into ':')."""
    assert check_provenance("可选时段：17:45", ['{"slot": "17:45"}'], "sfn-0123456789ab").ok
    assert not check_provenance("可选时段：17:50", ['{"slot": "17:45"}'], "sfn-0123456789ab").ok
