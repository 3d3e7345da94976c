"""Golden files: `evaluation_sets/golden/<skill>.jsonl`, one GoldenLabel a line, append-only (a label
is never edited once appended), and the output pairs of a stored evaluation run a person labels into
them (`skillforge judge label`: calibration/labelpage.py in a browser, calibration/tty.py in a
terminal).

A pair is shown blind: which answer is shown first is drawn at random per pair; `a_is` records it in
the pair and the label, and is never shown. A pair already in the golden file (its `pair_id`, the
same whichever side is first) is not offered again and never appended twice.
"""

from __future__ import annotations

import json
import logging
import random
import threading
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path

from pydantic import ValidationError

from skillforge.config import Workspace
from skillforge.errors import BadArgument, SkillForgeError
from skillforge.evaluation.stored import read_case_outputs, read_meta
from skillforge.journal import append_jsonl, text_lines, utc_now
from skillforge.rules.calibration import pair_id, sha256_text
from skillforge.rules.hidden import ZWJ, is_hidden
from skillforge.rules.ids import IdKind, id_problem
from skillforge.safewrite import exclusive
from skillforge.state.calibration import HUMAN_DIMENSIONS, GoldenLabel, GoldenPair, HumanChoice
from skillforge.state.evaluate import CaseResult
from skillforge.state.ids import require_id

log = logging.getLogger(__name__)
GOLDEN_DIR = "golden"
FIXTURE_CHARS = 240
"""One tool's response in a pair's fixtures summary is clipped to this many characters."""
SUMMARY_CHARS = 1200
"""The whole fixtures summary is clipped to this many characters."""
CHOICES: dict[str, HumanChoice] = {"a": "A", "b": "B", "t": "tie", "tie": "tie"}
"""What a person may type or post for a choice (case-insensitive) -> the stored choice."""


class NothingToLabel(SkillForgeError):
    """A stored run with no output pair left to label: every case's two answers are equal or one is
    empty, or every pair is already in the golden file."""


class GoldenFileError(SkillForgeError):
    """A golden file that exists but cannot be read (a folder in its place, no permission)."""


class LabelError(SkillForgeError):
    """A label that cannot be appended: an unknown pair, a missing or unknown dimension, a bad choice."""


def golden_dir(ws: Workspace) -> Path:
    """evaluation_sets/golden/ of a workspace: one <skill>.jsonl a skill."""
    return ws.evaluation_sets_dir / GOLDEN_DIR


def golden_path(ws: Workspace, skill: str) -> Path:
    return golden_dir(ws) / f"{require_id(IdKind.SKILL, skill)}.jsonl"


def file_skill(path: Path) -> str | None:
    """The skill a golden file is for: its name's stem when it sits in a `golden/` folder
    (evaluation_sets/golden/<skill>.jsonl), else None (a file given with --golden may hold any skill's)."""
    return path.stem if path.parent.name == GOLDEN_DIR and id_problem(IdKind.SKILL, path.stem) is None else None


def read_golden(path: Path, skill: str | None = None) -> list[GoldenLabel]:
    """Every label of a golden file, oldest first. Each line skipped is logged with its line number in
    the file: a blank line, one that is not JSON (a torn write) or not a JSON object, not a golden
    label, a label whose skill is not a skill name or not the file's (`skill`, default file_skill),
    one with no choice on any dimension, one whose answers do not match their hashes, or a second
    label of a pair already seen (two labelling sessions at once): the first one stands."""
    skill = skill if skill is not None else file_skill(path)
    labels: list[GoldenLabel] = []
    seen: set[str] = set()
    try:
        if not path.exists():
            return []
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise GoldenFileError(f"the golden file {path} cannot be read ({e.strerror or e})") from None
    for n, raw in enumerate(text_lines(text), 1):  # a U+2028 in a note is not a line break; a BOM goes
        label = _label(path, n, raw, skill)
        if label is None:
            continue
        if label.pair_id in seen:
            log.warning("%s: line %d labels pair %s again; the first label stands", path, n, label.pair_id)
            continue
        seen.add(label.pair_id)
        labels.append(label)
    return labels


def _label(path: Path, n: int, raw: str, skill: str | None) -> GoldenLabel | None:
    """Line `n` of a golden file as a label, or None with a warning naming the line and why it is skipped."""
    why = None
    if not raw.strip():
        why = "is blank"
    else:
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError:  # worded as journal.json_lines words it for every JSONL file
            log.warning("%s:%d: skipped a line that is not JSON (torn write?)", path, n)
            return None
        if why is None and not isinstance(obj, dict):
            why = f"is not a JSON object (a {type(obj).__name__})"
    if why is not None:
        log.warning("%s: line %d %s; skipped", path, n, why)
        return None
    try:
        label = GoldenLabel.model_validate(obj)
    except ValidationError as e:
        log.warning("%s: line %d is not a golden label (%s); skipped", path, n, str(e).splitlines()[0])
        return None
    problem = id_problem(IdKind.SKILL, label.skill)
    if problem is not None:
        log.warning("%s: line %d: its skill %r is not a skill name; skipped", path, n, label.skill[:60])
    elif skill is not None and label.skill != skill:
        log.warning("%s: line %d labels skill '%s', not this file's '%s'; skipped", path, n, label.skill, skill)
    elif not any(label.labels.get(d) for d in HUMAN_DIMENSIONS):
        log.warning("%s: line %d has no label on %s; skipped", path, n, ", ".join(HUMAN_DIMENSIONS))
    elif sha256_text(label.answer_a) != label.sha_a or sha256_text(label.answer_b) != label.sha_b:
        log.warning("%s: line %d: an answer does not match its hash (edited by hand?); skipped", path, n)
    else:
        return label
    return None


def labelled_ids(path: Path) -> set[str]:
    """The pair ids a golden file holds a label of."""
    return {label.pair_id for label in read_golden(path)}


_append_lock = threading.Lock()


def append_label(path: Path, pair: GoldenPair, labels: Mapping[str, str], *, note: str = "",
                 source: str = "web", labeller: str = "") -> GoldenLabel | None:
    """Append a person's label of `pair` (fsynced: it survives a power cut), or None when the file
    already holds a label of that pair (a double click, a reload re-sending): nothing is written.
    LabelError, nothing written, for a missing or unknown dimension or a choice not A / tie / B."""
    choices = check_labels(labels)
    label = GoldenLabel.model_validate({**pair.model_dump(), "labels": choices, "note": note, "source": source,
                                        "labeller": labeller, "labelled_at": utc_now()})
    with _append_lock, _file_lock(path):  # the check and the append as one step, across threads and processes
        if pair.pair_id in labelled_ids(path):
            return None
        append_jsonl(path, label.model_dump(mode="json"), durable=True)
    return label


def lock_path(path: Path) -> Path:
    """The golden file's lock: a hidden sibling (`.<skill>.jsonl.lock`), never read as labels."""
    return path.parent / f".{path.name}.lock"


def _file_lock(path: Path) -> AbstractContextManager[None]:
    """An exclusive flock on the golden file's lock file while a label is checked and appended: two
    `judge label` sessions on one skill (two terminals, two browsers) cannot both append a pair."""
    return exclusive(lock_path(path), "the golden file's lock ")


def check_labels(labels: object) -> dict[str, HumanChoice]:
    """{dimension: choice} with exactly the HUMAN_DIMENSIONS, each A, B or tie (a, b, t accepted)."""
    if not isinstance(labels, Mapping):
        raise LabelError("labels must be an object {dimension: choice}")
    unknown = sorted(str(k) for k in labels if k not in HUMAN_DIMENSIONS)
    if unknown:
        raise LabelError(f"unknown dimension(s) {', '.join(unknown)}: label {', '.join(HUMAN_DIMENSIONS)}")
    missing = [d for d in HUMAN_DIMENSIONS if d not in labels]
    if missing:
        raise LabelError(f"no choice for {', '.join(missing)}: choose A, tie or B for each dimension")
    out: dict[str, HumanChoice] = {}
    for d in HUMAN_DIMENSIONS:
        value = labels[d]
        choice = CHOICES.get(value.strip().lower()) if isinstance(value, str) else None
        if choice is None:
            raise LabelError(f"{d}: {str(value)[:40]!r} is not a choice: use A, tie or B")
        out[d] = choice
    return out


def pairs_from_run(ws: Workspace, run: str, skill: str | None = None, n: int = 30,
                   seed: int | None = None) -> list[GoldenPair]:
    """At most `n` output pairs of stored run `run` to label: cases whose two answers differ and are
    both non-empty, not yet in the skill's golden file, in a random order, each with the side shown
    first drawn at random. UnknownRun / StoredRunError for a run that cannot be read; NothingToLabel
    when no pair is left."""
    if n < 1:
        raise BadArgument(f"--n {n}: give at least 1 pair")
    meta = read_meta(ws, run, purpose="label")
    if skill is not None and skill != meta["skill"]:
        raise BadArgument(f"run '{run}' evaluated '{meta['skill']}', not '{skill}': drop --skill or give that run's id")
    skill = meta["skill"]
    path = golden_path(ws, skill)
    done = labelled_ids(path)
    rng = random.Random(seed)
    results = list(read_case_outputs(ws, run, purpose="label").values())
    rng.shuffle(results)
    pairs, differing = [], 0
    for r in results:
        pair = _pair(skill, run, r, first=rng.choice(("baseline", "candidate")))
        if pair is None:
            continue
        differing += 1
        if pair.pair_id not in done and len(pairs) < n:
            pairs.append(pair)
    if not pairs:
        why = (f"all {differing} of its output pairs are already labelled in {path}" if differing else
               f"none of its {len(results)} cases has two different, non-empty answers")
        raise NothingToLabel(f"nothing to label in run '{run}': {why}")
    return pairs


def _pair(skill: str, run: str, r: CaseResult, first: str) -> GoldenPair | None:
    """The case's pair with the `first` side shown as A, or None when the answers are equal or one is empty."""
    answers = {"baseline": r.baseline.answer, "candidate": r.candidate.answer}
    if not all(a.strip() for a in answers.values()) or answers["baseline"].strip() == answers["candidate"].strip():
        return None
    second = "candidate" if first == "baseline" else "baseline"
    a, b = answers[first], answers[second]
    sha_a, sha_b = sha256_text(a), sha256_text(b)
    return GoldenPair(pair_id=pair_id(skill, r.case.id, sha_a, sha_b), skill=skill, run=run, case_id=r.case.id,
                      query=r.case.query, must_include=list(r.case.expect.must_include),
                      must_not_include=list(r.case.expect.must_not_include),
                      fixtures_summary=fixtures_summary(r.case.fixtures), answer_a=a, answer_b=b,
                      sha_a=sha_a, sha_b=sha_b, a_is=first)  # type: ignore[arg-type]


def fixtures_summary(fixtures: Mapping[str, object]) -> str:
    """A short readable summary of a case's tool fixtures: one line a tool, `name: <its response as
    compact JSON, clipped>`; "" when the case has none."""
    lines = []
    for name, response in fixtures.items():
        text = response if isinstance(response, str) else json.dumps(response, ensure_ascii=False,
                                                                      separators=(", ", ": "))
        text = " ".join(text.split())
        lines.append(f"{name}: {text[:FIXTURE_CHARS] + ' …' if len(text) > FIXTURE_CHARS else text}")
    summary = "\n".join(lines)
    return summary if len(summary) <= SUMMARY_CHARS else summary[:SUMMARY_CHARS] + " …"


def visible(text: str) -> str:
    """`text` with every control character but tab and newline, and every invisible format character
    (bidi overrides, zero-width spaces), shown as an escape such as `\\x1b` or `\\u202e`: what a
    person is shown of an untrusted answer is what it holds, and a terminal is not repainted."""
    return "".join(_escape(c) if is_hidden(c) and c != ZWJ else c for c in text.replace("\r\n", "\n"))


def _escape(c: str) -> str:
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def dimension_questions() -> dict[str, str]:
    """Each human dimension's question, worded as the judge's rubric words it (evaluation/judge.py),
    so the person and the judge answer the same question."""
    from skillforge.evaluation.judge import Judgement
    return {d: Judgement.model_fields[d].description or d for d in HUMAN_DIMENSIONS}


__all__ = ["CHOICES", "GoldenFileError", "LabelError", "NothingToLabel", "append_label", "check_labels",
           "dimension_questions", "file_skill", "fixtures_summary", "golden_dir", "golden_path", "labelled_ids", "pairs_from_run", "read_golden",
           "visible"]
