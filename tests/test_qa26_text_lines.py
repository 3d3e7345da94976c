"""QA 26 N3/N7/N8: line-oriented files are split at "\\n" ("\\r\\n", "\\r") only, never at U+2028,
U+2029 or U+0085 (which our JSONL writer keeps raw inside a string), and a leading BOM is dropped."""

from __future__ import annotations

import json
import logging

import pytest

from conftest import REPO

from skillforge.calibration.golden import GoldenPair, append_label, labelled_ids, read_golden
from skillforge.cli.skills_new import read_queries
from skillforge.journal import append_jsonl, read_jsonl, text_lines

ROOT = REPO
SHIPPED = ROOT / "evaluation_sets" / "golden" / "hotel-booking.jsonl"
ODD = ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]


def _rows() -> list[dict]:
    return [json.loads(line) for line in SHIPPED.read_text(encoding="utf-8").split("\n") if line.strip()]


@pytest.mark.parametrize("ch", ["\u2028", "\u2029", "\u0085"])
def test_text_lines_keeps_unicode_separators_inside_a_line(ch):
    text = json.dumps({"a": f"x{ch}y"}, ensure_ascii=False) + "\n" + '{"b": 1}\n'
    assert len(text.splitlines()) == 3  # what tore the record before
    assert [json.loads(x) for x in text_lines(text)] == [{"a": f"x{ch}y"}, {"b": 1}]


@pytest.mark.parametrize("ch", ODD)
def test_text_lines_breaks_only_at_newlines(ch):
    assert text_lines(f"a{ch}b\nc") == [f"a{ch}b", "c"]


@pytest.mark.parametrize("text, want", [
    ("a\r\nb\r\n", ["a", "b"]), ("a\rb", ["a", "b"]), ("\ufeffa\nb", ["a", "b"]), ("", []),
    ("a\n\nb\n", ["a", "", "b"]), ("a", ["a"]), ("\ufeff", []), ("a\n\ufeffb", ["a", "\ufeffb"]),
])
def test_text_lines_breaks_and_bom(text, want):
    assert text_lines(text) == want


@pytest.mark.parametrize("ch", ["\u2028", "\u2029", "\u0085"])
def test_journal_round_trip_with_separator_and_bom(tmp_path, ch):
    log = tmp_path / "log.jsonl"
    append_jsonl(log, {"q": f"one{ch}two"})
    append_jsonl(log, {"q": "three"})
    assert [r["q"] for r in read_jsonl(log)] == [f"one{ch}two", "three"]
    log.write_bytes(b"\xef\xbb\xbf" + log.read_bytes().replace(b"\n", b"\r\n"))  # an editor saved it
    assert [r["q"] for r in read_jsonl(log)] == [f"one{ch}two", "three"]


def _pair(row: dict) -> GoldenPair:
    return GoldenPair.model_validate({k: v for k, v in row.items() if k in GoldenPair.model_fields})


@pytest.mark.parametrize("ch", ["\u2028", "\u2029", "\u0085"])
def test_golden_label_with_separator_reads_back(tmp_path, caplog, ch):
    out = tmp_path / "golden" / "hotel-booking.jsonl"
    rows = _rows()[:3]
    for i, row in enumerate(rows):
        note = f"checked the dates{ch}second line" if i == 0 else "ok"
        assert append_label(out, _pair(row), row["labels"], note=note, source="web", labeller="t") is not None
    with caplog.at_level(logging.WARNING):
        labels = read_golden(out, "hotel-booking")
    assert [x.pair_id for x in labels] == [r["pair_id"] for r in rows]
    assert labels[0].note == f"checked the dates{ch}second line"
    assert not [r for r in caplog.records if "torn" in r.getMessage()]
    assert rows[0]["pair_id"] in labelled_ids(out)
    assert append_label(out, _pair(rows[0]), rows[0]["labels"]) is None  # not labelled a second time


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_golden_file_with_bom_keeps_its_first_label(tmp_path, caplog, newline):
    out = tmp_path / "golden" / "hotel-booking.jsonl"
    out.parent.mkdir()
    rows = _rows()[:3]
    out.write_bytes(b"\xef\xbb\xbf" + newline.join(json.dumps(r, ensure_ascii=False) for r in rows).encode() + b"\n")
    with caplog.at_level(logging.WARNING):
        labels = read_golden(out, "hotel-booking")
    assert len(labels) == 3
    assert not caplog.records


def test_golden_warning_names_the_file_line_after_a_separator(tmp_path, caplog):
    out = tmp_path / "golden" / "hotel-booking.jsonl"
    out.parent.mkdir()
    a, b = _rows()[:2]
    a = {**a, "note": "x\u2028y"}
    out.write_text(json.dumps(a, ensure_ascii=False) + "\n" + '{"torn\n' + json.dumps(b, ensure_ascii=False) + "\n",
                   encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert len(read_golden(out, "hotel-booking")) == 2
    assert [r.getMessage().split(".jsonl")[1][:3] for r in caplog.records] == [":2:"]


def test_read_queries_bom_crlf_and_separators(tmp_path):
    f = tmp_path / "q.jsonl"
    lines = ['{"query":"flight status for CA981"}', "plain line", "",
             json.dumps({"query": "when does MU583 land\u2028IGNORE"}, ensure_ascii=False), "[1]", "x\u0085y"]
    f.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode("utf-8") + b"\r\n")
    queries, skipped = read_queries(f)
    assert queries == ["flight status for CA981", "plain line", "when does MU583 land\u2028IGNORE", "x\u0085y"]
    assert skipped == ["line 5 (not an object)"]
