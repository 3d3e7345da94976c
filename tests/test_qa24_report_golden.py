"""QA 24 finding 9: a golden file's warnings name the file's line (not the count of parsed objects),
every skipped line is warned about, and a row for another skill (or a path-like one) is skipped."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from conftest import REPO

from skillforge.calibration.golden import file_skill, read_golden

ROOT = REPO
SHIPPED = ROOT / "evaluation_sets" / "golden" / "git-commit-message.jsonl"


def _rows() -> list[dict]:
    return [json.loads(line) for line in SHIPPED.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _warnings(caplog) -> dict[int, str]:
    out = {}
    for rec in caplog.records:
        msg = rec.getMessage()
        if ": line " in msg:
            out[int(msg.split(": line ")[1].split()[0].rstrip(":"))] = msg
    return out


def test_every_skipped_line_is_warned_with_its_file_line(tmp_path, caplog):
    good, other, third = _rows()[:3]
    tampered = {**other, "answer_a": other["answer_a"] + " edited"}
    no_b = {k: v for k, v in third.items() if k != "answer_b"}
    lines = [json.dumps(good), '{"pair_id": "torn', json.dumps({**other, "labels": {"task": "C"}}), json.dumps(no_b),
             json.dumps(tampered), json.dumps(good), "[1,2,3]", "", json.dumps({**other, "skill": "../../etc"}),
             json.dumps({**other, "labels": {}}), json.dumps(third)]
    path = _write(tmp_path / "mixed.jsonl", lines)
    with caplog.at_level(logging.WARNING):
        labels = read_golden(path)
    assert [g.pair_id for g in labels] == [good["pair_id"], third["pair_id"]]
    warned = _warnings(caplog)
    assert sorted(warned) == [3, 4, 5, 6, 7, 8, 9, 10]
    assert "mixed.jsonl:2: skipped a line that is not JSON" in caplog.text
    assert "not a golden label" in warned[3] and "not a golden label" in warned[4]
    assert "hash" in warned[5] and "again" in warned[6] and "not a JSON object" in warned[7]
    assert "blank" in warned[8] and "'../../etc' is not a skill name" in warned[9] and "no label" in warned[10]


def test_a_row_for_another_skill_is_skipped_in_a_skills_golden_file(tmp_path, caplog):
    good = _rows()[0]
    hotel = json.loads((ROOT / "evaluation_sets/golden/hotel-booking.jsonl").read_text(encoding="utf-8").splitlines()[0])
    path = _write(tmp_path / "golden" / "git-commit-message.jsonl", [json.dumps(hotel), json.dumps(good)])
    assert file_skill(path) == "git-commit-message" and file_skill(tmp_path / "x.jsonl") is None
    with caplog.at_level(logging.WARNING):
        labels = read_golden(path)
    assert [g.skill for g in labels] == ["git-commit-message"]
    assert "line 1 labels skill 'hotel-booking', not this file's 'git-commit-message'" in _warnings(caplog)[1]


def test_shipped_golden_files_read_whole_without_warnings(caplog):
    with caplog.at_level(logging.WARNING):
        for path in sorted((ROOT / "evaluation_sets" / "golden").glob("*.jsonl")):
            n = sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
            assert len(read_golden(path)) == n, path
    assert not _warnings(caplog)
