"""QA pass qa11 N2 and N3: disguised holdout text that still got through.

N3 (the leak scan): "16分" + line break + "钟" (a line break inside a CJK word), the case id as
HOLDOUT_TAXI_HAILING_00 (upper case, `_`), and the holdout query as HTML numeric entities. The
repros are the QA's exact lines, at the level of the pure scan and once through the evolve check;
each has a negative twin. The weaker one, a translated unit ("16 min" for 16分钟): minutes and yuan
after a number fold to 「分钟」 and 「元」 on both sides.

N2 (session harvest): the holdout query in Traditional characters was staged with no flag and
accepted into repair. The harvest's near-duplicate check, the set loader's cross-partition check
and `cases review --accept` now compare queries in the leak scan's normal form (textnorm.fold).

Speed (measured 2026-12-06 on the shared 2-core box under load 3.5-5, min of 200 runs, five runs
each): fold() of a 5 KB SKILL.md 2.23-2.42 ms before, 2.29-2.51 ms after (the line-break join 0.13
ms, the units 0.03 ms); 5 KB of HTML numeric entities 2.0-3.4 ms before (left as text), 1.55-1.63
ms after (decoded, the text is shorter). `benchmarks/leaks.py`: 57/57 caught, 0/14 clean flagged,
0 findings against the other skills' sets and 10 against their own, as before.
"""

from __future__ import annotations

import json

import pytest

from skillforge.evaluation.datasets import DatasetError, check_across, load_sets, read_set, set_files
from skillforge.evolution.check import check_candidate
from skillforge.rules.failures import near_duplicate
from skillforge.rules.leaks import EvalText, LeakContext, LeakKind, scan_leaks
from skillforge.rules.sessions import partition_for
from skillforge.rules.textnorm import fold
from skillforge.sessions import review as rv
from skillforge.sessions.harvest import harvest
from skillforge.sessions.staging import read_staged, write_staged
from skillforge.state.sessions import StagedFile
from skillforge.state.evaluate import Case, EvalSet, Expectation, Partition, SetMeta
from skillforge.state.evolve import Candidate, CandidateVerdict, PatchFormatName
from skillforge.testing.evolve_world import SKILL, new_workspace

HOLDOUT_ID = "holdout-taxi-hailing-00"
SOURCE = f"holdout/{HOLDOUT_ID}"
QUERY = "从码头打车去新天地要多少钱，车多久能到？（8号）"
TRADITIONAL = "從碼頭打車去新天地要多少錢，車多久能到？（8號）"
FIXTURES = {"ride.estimate_fare": {"fare_cny": 96, "pickup_eta": "16分钟"}}
"""holdout-taxi-hailing-00 as skillforge.testing.evolve_world writes it."""


def _ctx() -> LeakContext:
    return LeakContext(cases=(EvalText(HOLDOUT_ID, "holdout", QUERY, ("96", "16分钟"), json.dumps(FIXTURES, ensure_ascii=False)),))


def _found(text: str) -> list[tuple[LeakKind, str, str]]:
    return [(f.kind, f.evidence, f.source) for f in scan_leaks(text, _ctx())]


# ---- N3: a line break inside a CJK word ---------------------------------------------------------

QA_B6 = "- （例：司机预计 16分\n  钟 到达）"


def test_n3_a_line_break_inside_the_unit_does_not_hide_the_fact() -> None:
    assert _found(QA_B6) == [(LeakKind.EXPECTED_FACT, "16分钟", SOURCE), (LeakKind.FIXTURE_CONSTANT, "16分钟", SOURCE)]
    assert _found("司机预计16分\r\n钟到达")[0] == (LeakKind.EXPECTED_FACT, "16分钟", SOURCE)
    assert _found("司机预计16分\u2028钟到达")[0] == (LeakKind.EXPECTED_FACT, "16分钟", SOURCE)


def test_n3_twin_a_line_break_before_other_text_or_a_longer_number_is_clean() -> None:
    assert _found("- （例：司机预计 16分\n- Note: 钟 到达）") == []  # a Latin word parts them
    assert _found("- （例：司机预计 116分\n  钟 到达）") == []
    assert fold("16分\n钟") == "16分钟" and fold("16分 钟") == "16分 钟"  # a space alone still parts CJK


def test_a_line_break_between_two_chinese_numerals_still_parts_two_numbers() -> None:
    # the rule of tests/test_leak_fold.py: a space between two CJK numbers parts them; so does a line break
    assert fold("七万三千零一十九\n七三零一九") == fold("七万三千零一十九 七三零一九") == "73019 73019"
    assert fold("十六分\n钟") == "16分钟"


# ---- N3: a translated unit ------------------------------------------------------------------------

QA_B10 = "- （例：司机预计 16 min 到达）"


def test_n3_a_translated_unit_is_the_fact() -> None:
    assert _found(QA_B10)[0] == (LeakKind.EXPECTED_FACT, "16分钟", SOURCE)
    for text in ("ETA 16 minutes", "sixteen mins", "约 十六 min"):
        assert _found(text)[0] == (LeakKind.EXPECTED_FACT, "16分钟", SOURCE), text
    fare = LeakContext(cases=(EvalText(HOLDOUT_ID, "holdout", QUERY, ("96元",)),))
    assert [f.kind for f in scan_leaks("预估车费 96 yuan", fare)] == [LeakKind.EXPECTED_FACT]
    assert [f.kind for f in scan_leaks("预估车费 96 CNY", fare)] == [LeakKind.EXPECTED_FACT]


def test_n3_twin_other_numbers_and_words_that_start_like_a_unit_are_clean() -> None:
    for text in ("ETA 6 min", "116 minutes", "16 mint leaves", "the minimum fare", "16 yuanbao"):
        assert _found(text) == [], text
    assert fold("16 minimal") == "16 minimal" and fold("16 Minutes") == fold("16分钟") == "16分钟"


# ---- N3: the case id in capitals with `_` ------------------------------------------------------

QA_B7 = "- 参考 HOLDOUT_TAXI_HAILING_00 的问法。"


def test_n3_the_case_id_in_capitals_with_underscores_is_a_leak() -> None:
    assert _found(QA_B7) == [(LeakKind.CASE_ID, HOLDOUT_ID, SOURCE)]
    for text in ("see Holdout_Taxi-Hailing_00.", "参考holdout_taxi_hailing_00的问法", "ＨＯＬＤＯＵＴ＿ＴＡＸＩ＿ＨＡＩＬＩＮＧ＿００"):
        assert _found(text) == [(LeakKind.CASE_ID, HOLDOUT_ID, SOURCE)], text


def test_n3_twin_a_longer_id_or_a_prefix_is_not_the_case_id() -> None:
    for text in ("- 参考 HOLDOUT_TAXI_HAILING_001 的问法。", "- 参考 HOLDOUT_TAXI_HAILING 的问法。",
                 "- see my_holdout_taxi_hailing_00 notes"):
        assert _found(text) == [], text


# ---- N3: HTML character references ---------------------------------------------------------------

QA_B8 = ('- 输入："&#20174;&#30721;&#22836;&#25171;&#36710;&#21435;&#26032;&#22825;&#22320;&#35201;&#22810;'
         '&#23569;&#38065;"')


def test_n3_the_query_as_html_numeric_entities_is_a_leak() -> None:
    assert _found(QA_B8) == [(LeakKind.QUERY_NGRAM, "从码头打车去新天", SOURCE)]
    hexed = "".join(f"&#x{ord(ch):x};" for ch in QUERY[:12])
    nested = "".join(f"&amp;#{ord(ch)};" for ch in QUERY[:12])
    broken = "".join(f"&\u200b#{ord(ch)};" for ch in QUERY[:12])  # a zero-width space inside each
    for text in (hexed, nested, broken, "＆#20174;" + QUERY[1:12]):
        assert _found(text) == [(LeakKind.QUERY_NGRAM, "从码头打车去新天", SOURCE)], text
    assert _found("".join(f"&#{ord(ch)};" for ch in QUERY))[0] == (LeakKind.QUERY, QUERY, SOURCE)


def test_n3_twin_entities_of_other_text_and_plain_ampersands_are_clean() -> None:
    other = "".join(f"&#{ord(ch)};" for ch in "报价时同时告诉用户司机预计多久到达")
    assert _found(other) == []
    assert _found("- AT&T &amp; R&D &copy; 2026 &lt;b&gt; 报价 & 预计") == []
    assert fold("AT&T R&D") == "at t r d" and fold("&lt;b&gt;") == "<b>"


@pytest.mark.parametrize("text", [QA_B6, QA_B7, QA_B8, "&amp;amp;amp;amp;#20174;", "&*#20174;", "&#x202e;abc",
                                  "ꝸ#20174;", "a &\n b", "七\n八十", "16分\n\u3000钟", "16 min", "sixteen minutes", "96 RMB", "&#10;中&#10;文"])
def test_the_fold_is_still_idempotent(text: str) -> None:
    once = fold(text)
    assert fold(once) == once and "&" not in once


def test_the_evolve_check_refuses_each_qa_line() -> None:
    parent = "---\nname: taxi-hailing\ndescription: d\n---\n## Examples\n"
    for line in (QA_B6, QA_B7, QA_B8):
        cand = Candidate(id="r1c1", target="taxi-hailing", patch="x", patch_format=PatchFormatName.FULL,
                         text=parent + line + "\n", claimed_level=1)
        checked = check_candidate(cand, parent, "taxi-hailing", _ctx(), [])
        assert (checked.verdict, checked.rejected_by) == (CandidateVerdict.LEAK, "leak_scan"), line


# ---- N2: a Traditional copy of a holdout query through harvest and review -----------------------

def test_n2_near_duplicate_compares_in_the_leak_scans_normal_form() -> None:
    assert near_duplicate(TRADITIONAL, QUERY)
    assert near_duplicate("從碼頭打車去新天地要多少錢，車多久能到？", QUERY)
    assert not near_duplicate("從機場打車去外灘要多少錢？（3號）", QUERY)  # another trip in Traditional


def _set(name: str, partition: Partition, cid: str, query: str) -> EvalSet:
    return EvalSet(meta=SetMeta(name=name, partition=partition, skills=[SKILL]),
                   cases=[Case(id=cid, skill=SKILL, query=query, expect=Expectation())])


def test_n2_the_set_loader_refuses_a_traditional_copy_across_partitions_without_quoting_it(tmp_path) -> None:
    holdout = (tmp_path / "holdout.json", _set("holdout", Partition.HOLDOUT, HOLDOUT_ID, QUERY))
    repair = (tmp_path / "repair.json", _set("repair", Partition.REPAIR, "repair-x-01", TRADITIONAL))
    for order in ([holdout, repair], [repair, holdout]):
        with pytest.raises(DatasetError) as e:
            check_across(order)
        msg = str(e.value)
        assert "held-out query appears in partitions" in msg and "holdout (holdout.json)" in msg
        assert "repair-x-01" in msg and "新天地" not in msg and "新天地" not in msg and HOLDOUT_ID not in msg
    twin = (tmp_path / "repair.json", _set("repair", Partition.REPAIR, "repair-x-01", "從機場打車去外灘要多少錢？（3號）"))
    check_across([holdout, twin])  # another query in Traditional loads
    dev = (tmp_path / "dev.json", _set("dev", Partition.DEV, "dev-x-01", QUERY))
    with pytest.raises(DatasetError, match="query '从码头打车去新天地.*appears in partitions repair"):
        check_across([repair, dev])  # two visible partitions: the text may be shown


def _transcript(sid: str, query: str, t: int) -> list[dict]:
    ts = f"2026-12-0{t}T08:10:05Z"
    return [
        {"session_id": sid, "role": "user", "content": query, "timestamp": ts},
        {"session_id": sid, "role": "assistant", "content": "", "timestamp": ts, "tool_calls": [
            {"id": f"c{sid}1", "type": "function",
             "function": {"name": "use_skill", "arguments": json.dumps({"name": SKILL, "session_id": sid})}}]},
        {"session_id": sid, "role": "tool", "tool_call_id": f"c{sid}1", "name": "use_skill",
         "content": f"---\nname: {SKILL}\n...", "timestamp": ts},
        {"session_id": sid, "role": "assistant", "content": "", "timestamp": ts, "tool_calls": [
            {"id": f"c{sid}2", "type": "function",
             "function": {"name": "ride.estimate_fare", "arguments": "{\"from\": \"a\", \"to\": \"b\"}"}}]},
        {"session_id": sid, "role": "tool", "tool_call_id": f"c{sid}2", "name": "ride.estimate_fare",
         "content": "{\"fare_cny\": 96, \"pickup_eta\": \"16分钟\"}", "timestamp": ts},
        {"session_id": sid, "role": "assistant", "content": "预估车费 96 元。", "timestamp": ts},
        {"session_id": sid, "role": "user", "content": "你没告诉我司机多久到", "timestamp": ts},
        {"session_id": sid, "role": "assistant", "content": "抱歉，我再查一下。", "timestamp": ts},
    ]


def test_n2_harvest_does_not_stage_the_traditional_copy_and_review_refuses_it_in_repair(tmp_path) -> None:
    ws = new_workspace(tmp_path / "ws")
    held = next(c for s in load_sets(ws).values() if s.meta.partition is Partition.HOLDOUT for c in s.cases
                if c.id == HOLDOUT_ID)
    assert held.query == QUERY
    sess = tmp_path / "sess"
    sess.mkdir()
    lines = _transcript("trad-hold", TRADITIONAL, 2) + _transcript("trad-other", "從機場打車去外灘要多少錢？（3號）", 3)
    (sess / "s.jsonl").write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    report = harvest(ws, "jsonl", sess, embed=None)
    staged = {c.provenance.session_id: c for c in report.staged}
    assert set(staged) == {"trad-other"} and report.duplicates == 1  # the copy is not staged; its twin is

    # a case staged before this check (or edited into the copy) is refused from a visible partition
    other = staged["trad-other"]
    assert partition_for(other.id) is Partition.REPAIR, "the fixture's id must hash to repair"
    with pytest.raises(rv.ReviewError, match="copy of a holdout case's query"):  # the edit is refused (QA 22 TRUST-2)
        rv.edit(ws, other.id, json.dumps({"query": TRADITIONAL}, ensure_ascii=False))
    staged_now = read_staged(ws, SKILL)  # a case staged or edited before the check: refused at accept
    write_staged(ws, StagedFile(skill=SKILL, cases=[c.model_copy(update={"query": TRADITIONAL}) if c.id == other.id
                                                    else c for c in staged_now.cases]))
    before = {p.name: p.read_bytes() for p in set_files(ws)}
    with pytest.raises(rv.ReviewError) as e:
        rv.accept(ws, other.id)
    msg = str(e.value)
    assert "into repair" in msg and "copy of a holdout case's query" in msg and "新天地" not in msg
    assert {p.name: p.read_bytes() for p in set_files(ws)} == before
    assert read_staged(ws, SKILL).case(other.id).status == "pending"

    rv.edit(ws, other.id, json.dumps({"query": "從機場打車去外灘要多少錢？（3號）"}, ensure_ascii=False))
    done, path = rv.accept(ws, other.id)  # the twin: another trip in Traditional is accepted
    assert done.partition is Partition.REPAIR and any(c.id == other.id for c in read_set(path).cases)
