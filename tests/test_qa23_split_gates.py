"""QA 23 F13: the split's children pass the publish gates before anything is written: a secret is
SecretsInSkill (exit 2) unless --allow-secrets, as `release publish`; a hidden character is
SplitRefused (exit 2), as `skills new` refuses it. Findings name file, line and kind, never the value."""

from __future__ import annotations

import json
from pathlib import Path

from skillforge.library.services import Services
from tests import test_qa23_split_files as base
from tests.conftest import FIXTURES, run_cli

PLAIN = (FIXTURES / "split" / "skills" / "convert-anything" / "SKILL.md").read_text(encoding="utf-8")
AWS = "AKIA" + "IOSFODNN7" + "EXAMPLE"
OPENAI = "sk-" + "proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"
SECRET = PLAIN.replace("1. Currency: extract", f"1. Currency: fx api key {AWS} for `fx.get_rate`; extract").replace(
    "4. Units: extract", f"4. Units: call `units.convert` with header Authorization: Bearer {OPENAI}; extract")
HIDDEN = PLAIN.replace("2. Multiply the amount by", "2. Multiply\u200b the amount\u202e hidden\u202c by")


def state(ws) -> tuple[list[tuple[str, str]], str | None, list[str]]:  # noqa: ANN001
    svc = Services(ws)
    rows = [(r.skill_name, r.status.value) for n in svc.store.skill_names() for r in svc.store.releases(n)]
    return rows, svc.repo.head(), sorted(p.name for p in ws.skills_dir.iterdir())


def test_a_secret_is_refused_unless_allowed(tmp_path: Path) -> None:
    assert SECRET != PLAIN
    ws = base.workspace(tmp_path / "ws", SECRET)
    before = state(ws)
    preview = run_cli(["skills", "split", "convert-anything", "--json", "-w", str(ws.root)])
    found = json.loads(preview.stdout)["secrets"]
    assert len(found) == 2 and found[0].startswith(f"skills/{base.CURRENCY}/SKILL.md:") and "AWS access key" in found[0]
    refused = run_cli(["skills", "split", "convert-anything", "--publish", "-w", str(ws.root)], ok=2)
    flat = " ".join(refused.stderr.split())
    assert "refused: 2 secret(s)" in flat and f"skills/{base.UNITS}/SKILL.md:" in flat and "--allow-secrets" in flat
    assert AWS not in refused.stdout + refused.stderr and OPENAI not in refused.stdout + refused.stderr
    assert state(ws) == before  # nothing written: no release row, no commit, no folder

    done = run_cli(["skills", "split", "convert-anything", "--publish", "--allow-secrets", "-w", str(ws.root)])
    assert "published anyway (--allow-secrets)" in " ".join(done.stderr.split()) and AWS not in done.stderr
    assert Services(ws).store.current(base.CURRENCY) is not None


def test_hidden_characters_are_refused(tmp_path: Path) -> None:
    ws = base.workspace(tmp_path / "ws", HIDDEN)
    before = state(ws)
    preview = run_cli(["skills", "split", "convert-anything", "-w", str(ws.root)])
    assert "U+202E RIGHT-TO-LEFT OVERRIDE" in preview.stderr and "--publish refuses it" in " ".join(preview.stderr.split())
    for extra in ([], ["--allow-secrets"]):
        refused = run_cli(["skills", "split", "convert-anything", "--publish", *extra, "-w", str(ws.root)], ok=2)
        flat = " ".join(refused.stderr.split())
        assert "is not split: the children would carry hidden characters" in flat
        assert f"skills/{base.CURRENCY}/SKILL.md: line" in flat and "\u202e" not in refused.stderr
    assert state(ws) == before
