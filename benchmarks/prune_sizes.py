"""What one `evaluate` run and one `evolve` run add to a workspace, file by file, and what
`runs prune` takes back: real processes (the CLI) against the scripted evolve world behind HTTP
(tests/world_server.py), a real workspace (git, SQLite, the SqliteSaver checkpointer), the
response cache on.

    PYTHONPATH=$PWD python benchmarks/prune_sizes.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from evolve_fakes import SKILL, World, examples_patch, new_workspace
from world_server import WorldServer

from skillforge.library.registry import SkillRegistry

EXE = Path(sys.executable).parent / "skillforge"


def sizes(root: Path) -> dict[str, int]:
    """Bytes per file under checkpoints/ and runs/ (a SQLite file with its -wal and -shm; traces/,
    reviews/, failures/ ... summed per folder)."""
    out: dict[str, int] = {}
    for top in ("checkpoints", "runs"):
        for p in (root / top).rglob("*"):
            if not p.is_file() or p.name == ".gitignore" or p.name.endswith("-shm"):
                continue
            rel = p.relative_to(root)
            name = str(rel).removesuffix("-wal")
            if len(rel.parts) > 2:
                name = "/".join(rel.parts[:2]) + "/"
            out[name] = out.get(name, 0) + p.stat().st_size
    return out


def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in sorted(set(before) | set(after))
            if after.get(k, 0) != before.get(k, 0)}


def cli(args: list[str], env: dict[str, str]) -> dict[str, object]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLFORGE_", "OPENAI_"))}
    proc = subprocess.run([str(EXE), *args], check=False, capture_output=True, text=True, env={**base, **env}, timeout=600)
    if proc.returncode not in (0, 3, 4):
        raise SystemExit(f"{args}: exit {proc.returncode}\n{proc.stderr}")
    return json.loads(proc.stdout)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = os.environ.get("PRUNE_KEEP", tmp)
        ws = new_workspace(Path(tmp) / "ws")
        w = ["-w", str(ws.root)]
        with WorldServer(World(lambda r: [examples_patch()])) as srv:
            env = {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "world",
                   "SKILLFORGE_JUDGE_MODEL": "world-judge", "SKILLFORGE_LLM_MAX_RETRIES": "0"}
            live = SkillRegistry.load(ws).get(SKILL).release.release_id
            s0 = sizes(ws.root)
            ev = cli(["evaluate", SKILL, "--candidate", live, "--set", "repair", "--json", *w], env)
            s1 = sizes(ws.root)
            out = cli(["evolve", SKILL, "--json", "--max-rounds", "1", "--budget-calls", "600", *w], env)
            s2 = sizes(ws.root)
        print(f"evaluate ({ev.get('n_cases', ev.get('cases_run', '?'))} cases, {ev['verdict']}):", json.dumps(delta(s0, s1), indent=1))
        print(f"evolve ({out['status']}):", json.dumps(delta(s1, s2), indent=1))
        pruned = cli(["runs", "prune", "--older-than", "0", "--json", *w], {})
        s3 = sizes(ws.root)
        print("prune:", json.dumps({k: v for k, v in pruned.items() if k != "runs"}, indent=1))
        print("after prune, against before both runs:", json.dumps(delta(s0, s3), indent=1))


if __name__ == "__main__":
    main()
