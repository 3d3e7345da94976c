"""SKILLFORGE_CHECKPOINT_URL against a real PostgreSQL server (Debian's `postgresql`, installed with
apt-get when absent, initdb'd into a temp folder and started on a free loopback port as the
`postgres` user): the Postgres checkpointer, and a batch of 6 skills shared by two worker processes,
one SIGKILLed mid-run."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import cli_env
from evolve_fakes import World, _case, examples_patch, seed_failures
from skillforge.rules.claims import MAX_ATTEMPTS, ClaimDecision, ClaimStatus, claim_decision

CHILD = Path(__file__).with_name("evolve_worker_child.py")
REPO = Path(__file__).resolve().parents[1]
SKILLS = ["taxi-hailing", *(f"ride-{c}" for c in "bcdef")]  # no name a prefix of another


# ---- the rule, at its edges --------------------------------------------------------------------
@pytest.mark.parametrize("status,free,attempts,want", [
    (ClaimStatus.PENDING, True, 0, ClaimDecision.CLAIM),
    (ClaimStatus.PENDING, False, 0, ClaimDecision.SKIP),  # another session holds it (a stale holder)
    (ClaimStatus.CLAIMED, False, 1, ClaimDecision.SKIP),  # a live worker runs it
    (ClaimStatus.CLAIMED, True, 1, ClaimDecision.RECLAIM),  # its worker died
    (ClaimStatus.CLAIMED, True, MAX_ATTEMPTS - 1, ClaimDecision.RECLAIM),
    (ClaimStatus.CLAIMED, True, MAX_ATTEMPTS, ClaimDecision.GIVE_UP),  # workers keep dying on this run
    (ClaimStatus.CLAIMED, False, MAX_ATTEMPTS, ClaimDecision.SKIP),  # ...but never while one is alive
    (ClaimStatus.DONE, True, 1, ClaimDecision.SKIP),
    (ClaimStatus.DONE, False, MAX_ATTEMPTS, ClaimDecision.SKIP),
])
def test_claim_decision(status, free, attempts, want):
    assert claim_decision(status, free, attempts) is want


def test_checkpoint_url_is_validated_and_redacted(monkeypatch):
    from skillforge.errors import CheckpointStoreError
    from skillforge.runners.checkpoint import checkpoint_url, redact, schema_for

    assert checkpoint_url({}) is None and checkpoint_url({"SKILLFORGE_CHECKPOINT_URL": " "}) is None
    with pytest.raises(CheckpointStoreError, match=r"postgresql://.*'mysql://u:\*\*\*@h/db'"):
        checkpoint_url({"SKILLFORGE_CHECKPOINT_URL": "mysql://u:secret@h/db"})
    assert redact("postgresql://me:pw@host:5/db") == "postgresql://me:***@host:5/db"
    assert schema_for("graphs.sqlite") == "skillforge_graphs" and schema_for("evaluate.sqlite") == "skillforge_evaluate"


def test_unreachable_server_is_a_named_error(tmp_path, monkeypatch):
    from skillforge.config import init_workspace
    from skillforge.errors import CheckpointStoreError
    from skillforge.runners.checkpoint import checkpointer_for

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    monkeypatch.setenv("SKILLFORGE_CHECKPOINT_URL", f"postgresql://u:secret@127.0.0.1:{port}/x")
    with pytest.raises(CheckpointStoreError, match="cannot reach the checkpoint database") as e:
        checkpointer_for(init_workspace(tmp_path / "ws"), "graphs.sqlite")
    assert "secret" not in str(e.value)


# ---- a real server ---------------------------------------------------------------------------
def _bindir() -> Path | None:
    for cand in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (cand / "initdb").exists() and (cand / "postgres").exists():
            return cand
    found = shutil.which("initdb")
    return Path(found).resolve().parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def pg_url() -> str:
    """A PostgreSQL server of its own on 127.0.0.1 for this session (as the `postgres` user when
    run as root: the server refuses root); stopped at the end."""
    bindir = _bindir()
    if bindir is None and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "-q", "postgresql"], capture_output=True, timeout=600,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        bindir = _bindir()
    if bindir is None:
        pytest.skip("PostgreSQL binaries (initdb, postgres) are absent and `apt-get install postgresql` "
                    "was not possible here (needs root and a package mirror)")
    as_user: dict[str, object] = {}
    data = Path(tempfile.mkdtemp(prefix="skillforge-pg-"))  # not under pytest's 0700 root: the server user reads it
    if os.geteuid() == 0:  # postgres refuses to run as root
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no `postgres` user to run the server as")
        os.chown(data, user.pw_uid, user.pw_gid)
        as_user = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": [], "cwd": str(data)}
    pgdata = data / "data"
    init = subprocess.run([str(bindir / "initdb"), "-D", str(pgdata), "-U", "postgres", "--auth=trust",
                           "-E", "UTF8", "--locale=C"], capture_output=True, text=True, timeout=120,
                          **as_user)  # type: ignore[call-overload]
    if init.returncode != 0:
        pytest.skip(f"initdb failed: {init.stderr.strip()[-300:]}")
    port = _free_port()
    server = subprocess.Popen([str(bindir / "postgres"), "-D", str(pgdata), "-p", str(port),
                               "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={data}",
                               "-c", "fsync=off", "-c", "max_connections=40"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, **as_user)  # type: ignore[call-overload]
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    import psycopg

    for _ in range(200):
        try:
            psycopg.connect(url, connect_timeout=2).close()
            break
        except psycopg.OperationalError:
            if server.poll() is not None:
                pytest.fail(f"postgres exited with {server.returncode}")
            time.sleep(0.1)
    else:
        server.kill()
        pytest.fail("postgres did not accept connections within 20 s")
    yield url
    server.send_signal(signal.SIGINT)  # fast shutdown of our own server, by its PID
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    shutil.rmtree(data, ignore_errors=True)


def six_skill_workspace(root: Path):
    """A workspace of 6 taxi skills (copies under their own names), each with planted failures in
    its own cases of the shared sets."""
    from skillforge.skill import file as skillfile
    from skillforge.config import init_workspace
    from skillforge.library.releases import ReleaseStateMachine

    ws = init_workspace(root)
    source = (REPO / "skills" / "taxi-hailing" / "SKILL.md").read_text(encoding="utf-8")
    for name in SKILLS:
        (ws.skills_dir / name).mkdir(parents=True, exist_ok=True)
        (ws.skills_dir / name / "SKILL.md").write_text(source.replace("name: taxi-hailing", f"name: {name}", 1),
                                                      encoding="utf-8")
    ReleaseStateMachine.open(ws).import_skills(skillfile.scan(ws.skills_dir, ws.root))
    d = ws.evaluation_sets_dir
    d.mkdir(parents=True, exist_ok=True)
    n = 0
    for set_name, count, kw in (("repair", 6, {"tags": ("planted", "missing-eta")}), ("p0", 2, {"p0": True}),
                                ("holdout", 6, {}), ("final_audit", 5, {})):
        cases = []
        for skill in SKILLS:  # every case its own query: the same query twice would be one failure
            for k in range(count):
                case = _case(f"{set_name}-{skill}-{k:02d}", n, **kw)  # type: ignore[arg-type]
                cases.append({**case, "skill": skill, "query": f"[{skill}] {case['query']}"})
                n += 1
        (d / f"{set_name}.json").write_text(json.dumps({"meta": {"name": set_name, "partition": set_name,
                                                                 "skills": SKILLS, "auto_case_ids": []},
                                                        "cases": cases}, ensure_ascii=False, indent=1), encoding="utf-8")
    return ws


def test_postgres_checkpointer_round_trips_our_state_types(pg_url, tmp_path, monkeypatch):
    from skillforge.runners.evolve import Runner

    monkeypatch.setenv("SKILLFORGE_CHECKPOINT_URL", pg_url)
    ws = six_skill_workspace(tmp_path / "ws")
    world = World(lambda r: [examples_patch()])
    seed_failures(ws, world.llm(), skill=SKILLS[0])
    runner = Runner(ws, llm_factory=world.llm)
    out = runner.start(SKILLS[0], run_id="evolve-pg-one", max_rounds=1)
    assert out["status"] == "PUBLISHED", json.dumps(out, default=str, ensure_ascii=False)[:3000]
    assert not (ws.checkpoints_dir / "graphs.sqlite").exists()  # nothing went to SQLite
    again = Runner(ws, llm_factory=world.llm)  # a new connection: state comes back typed
    assert "evolve-pg-one" in again.run_ids()
    assert again.state("evolve-pg-one").root_cause is not None
    assert again.summary("evolve-pg-one")["release_id"] == out["release_id"]


def test_runs_prune_on_postgres_keeps_the_last_checkpoint_and_never_touches_another_workspace(pg_url, tmp_path,
                                                                                          monkeypatch):
    """`runs prune` through PostgresSaver's own prune: the ended run keeps one checkpoint and its
    summary; the same run id of another workspace sharing the database keeps every row."""
    import psycopg

    from skillforge.rules.ids import thread_id
    from skillforge.runners.evolve import Runner
    from skillforge.runners.prune import prune_runs

    monkeypatch.setenv("SKILLFORGE_CHECKPOINT_URL", pg_url)
    world = World(lambda r: [examples_patch()])
    spaces = []
    for name in ("a", "b"):
        ws = six_skill_workspace(tmp_path / name)
        seed_failures(ws, world.llm(), skill=SKILLS[0])
        out = Runner(ws, llm_factory=world.llm).start(SKILLS[0], run_id="evolve-pg-prune", max_rounds=1)
        assert out["status"] == "PUBLISHED"
        spaces.append(ws)
    a, b = spaces

    def checkpoints(ws) -> int:  # noqa: ANN001
        with psycopg.connect(pg_url) as conn:
            return int(conn.execute("SELECT count(*) FROM skillforge_graphs.checkpoints WHERE thread_id = %s",
                                    (thread_id(ws.workspace_id, "evolve-pg-prune"),)).fetchone()[0])

    before_a, before_b = checkpoints(a), checkpoints(b)
    summary = Runner(a, llm_factory=world.llm).summary("evolve-pg-prune")
    assert before_a > 1 and before_b > 1
    dry = prune_runs(a, 0, dry_run=True)
    assert dry.evolve_runs == ["evolve-pg-prune"] and checkpoints(a) == before_a
    report = prune_runs(a, 0)
    assert report.evolve_runs == ["evolve-pg-prune"] and not report.busy
    assert checkpoints(a) == 1 and checkpoints(b) == before_b
    assert Runner(a, llm_factory=world.llm).summary("evolve-pg-prune") == summary
    prune_runs(a, 0)
    assert checkpoints(a) == 1 and checkpoints(b) == before_b  # again: nothing more goes


def test_two_workers_share_a_batch_and_one_is_killed(pg_url, tmp_path):
    from skillforge.runners.batch import batch_rows, register
    from skillforge.runners.evolve import Runner
    from skillforge.library.store import Store

    ws = six_skill_workspace(tmp_path / "ws")
    world = World(lambda r: [examples_patch()])
    for skill in SKILLS:
        seed_failures(ws, world.llm(), skill=skill)
    batch = "batch-pg-test"
    runs = {skill: f"evolve-pg-{skill}" for skill in SKILLS}
    register(pg_url, batch, runs, ws.workspace_id)
    register(pg_url, batch, runs, ws.workspace_id)  # registering again changes nothing
    env = {**os.environ, "SKILLFORGE_CHECKPOINT_URL": pg_url, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    # A dies right after the publish node's work (release written, checkpoint not) in its 2nd run
    killed = subprocess.Popen([sys.executable, str(CHILD), str(ws.root), batch], env={**env, "KILL_AT": "publish",
                              "KILL_ON_RUN": "2"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)  # let A claim first (the test holds either way; this only spreads the work)
    other = subprocess.Popen([sys.executable, str(CHILD), str(ws.root), batch], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    a_out, a_err = killed.communicate(timeout=240)
    b_out, b_err = other.communicate(timeout=240)
    assert killed.returncode == -9, a_err[-2000:]
    assert other.returncode == 0, b_err[-2000:]
    a_done = [json.loads(line) for line in a_out.splitlines()]
    b_done = [json.loads(line) for line in b_out.splitlines()]
    assert len(a_done) == 1, json.dumps(a_done + b_done) + a_err[-3000:] + b_err[-3000:]  # A finished one run, then died in its second
    rows = {r["skill"]: r for r in batch_rows(pg_url, batch, ws.workspace_id)}
    assert set(rows) == set(SKILLS)
    assert all(r["status"] == "DONE" and r["result"] == "PUBLISHED" for r in rows.values()), \
        json.dumps([(s, r["status"], r["result"], r["message"]) for s, r in rows.items()]) + a_err[-3000:] + b_err[-3000:]
    reclaimed = [s for s, r in rows.items() if r["attempts"] == 2]
    assert len(reclaimed) == 1 and all(r["attempts"] == 1 for s, r in rows.items() if s not in reclaimed), rows
    # every skill was finished by exactly one worker, the killed run by the survivor
    finished = [d["skill"] for d in a_done + b_done]
    assert sorted(finished) == sorted(SKILLS)
    assert reclaimed[0] in {d["skill"] for d in b_done} and rows[reclaimed[0]]["worker"] == b_done[0]["worker"]
    runner = Runner(ws, llm_factory=world.llm)  # SQLite: the runs are not there
    assert runner.run_ids() == []
    os.environ["SKILLFORGE_CHECKPOINT_URL"] = pg_url
    try:
        runner = Runner(ws, llm_factory=world.llm)
        for skill, run_id in runs.items():
            s = runner.summary(run_id)
            assert s["status"] == "PUBLISHED" and s["release_id"], s
            evolved = [r for r in Store(ws.db_path).releases(skill) if r.triggered_by == f"evolve:{run_id}"]
            assert len(evolved) == 1, (skill, evolved)  # the re-run publish did not publish twice
    finally:
        del os.environ["SKILLFORGE_CHECKPOINT_URL"]


def test_evaluate_cli_uses_the_same_setting(pg_url, tmp_path, monkeypatch):
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    from skillforge.runners.evaluate import _saver
    from skillforge.config import init_workspace

    ws = init_workspace(tmp_path / "ws")
    assert isinstance(_saver(ws), SqliteSaver)
    monkeypatch.setenv("SKILLFORGE_CHECKPOINT_URL", pg_url)
    saver = _saver(ws)
    assert isinstance(saver, PostgresSaver)
    assert saver.conn.execute("SHOW search_path").fetchone()["search_path"] == "skillforge_evaluate"


def test_worker_cli_needs_the_url_and_a_known_batch(pg_url, tmp_path):
    from skillforge.config import init_workspace

    ws = init_workspace(tmp_path / "ws")
    exe = str(Path(sys.executable).parent / "skillforge")
    env = cli_env()
    env.update({"SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_LLM_BASE_URL": "http://127.0.0.1:9/v1",
                "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])})
    no_url = subprocess.run([exe, "evolve", "--all", "--worker", "-w", str(ws.root)], capture_output=True, text=True,
                            env=env, timeout=120)
    assert no_url.returncode == 2 and "SKILLFORGE_CHECKPOINT_URL" in no_url.stderr, no_url.stderr
    assert "Traceback" not in no_url.stderr
    unknown = subprocess.run([exe, "evolve", "--resume", "batch-nope", "--worker", "-w", str(ws.root)],
                             capture_output=True, text=True, env={**env, "SKILLFORGE_CHECKPOINT_URL": pg_url}, timeout=120)
    assert unknown.returncode == 2 and "no batch 'batch-nope'" in unknown.stderr, unknown.stderr


# ---- workspaces that share one database ----------------------------------------------------------
def test_two_workspaces_sharing_a_database_never_see_or_answer_each_others_runs(pg_url, tmp_path, monkeypatch):
    """Issue 21: workspace B approved A's run, and A's `runs show` then named a release that did not
    exist in A. Threads are scoped by workspace id; a foreign run id is refused by name."""
    from conftest import run_cli
    from evolve_fakes import SKILL, eta_patch, new_workspace

    from skillforge.runners.evolve import Runner
    from skillforge.runners.checkpoint import ForeignRun, pg_connect, schema_for
    from skillforge.library.registry import SkillRegistry
    from skillforge.state.evolve import ReviewAction

    monkeypatch.setenv("SKILLFORGE_CHECKPOINT_URL", pg_url)
    a, b = new_workspace(tmp_path / "a"), new_workspace(tmp_path / "b")
    assert a.workspace_id.startswith("a-") and b.workspace_id.startswith("b-") and a.workspace_id != b.workspace_id
    assert Runner(a).scope == a.workspace_id == a.workspace_id  # stable: read back from runs/workspace-id
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(a, world.llm())
    ra, rb = Runner(a, llm_factory=world.llm), Runner(b, llm_factory=world.llm)
    assert ra.start(SKILL, run_id="evolve-shared")["status"] == "PENDING_REVIEW"
    with pg_connect(pg_url, schema_for("graphs.sqlite")) as conn:
        threads = {r["thread_id"] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")}
    assert f"{a.workspace_id}/evolve-shared" in threads and "evolve-shared" not in threads
    assert "evolve-shared" in ra.run_ids() and "evolve-shared" not in rb.run_ids()
    live = {ws: SkillRegistry.load(ws).get(SKILL).release.release_id for ws in (a, b)}
    for call in (lambda: rb.summary("evolve-shared"), lambda: rb.resume("evolve-shared"),
                 lambda: rb.answer_review("evolve-shared", ReviewAction.APPROVE)):
        with pytest.raises(ForeignRun, match=f"belongs to workspace '{a.workspace_id}', not to this one "
                                             f"\\('{b.workspace_id}'"):
            call()
    refused = run_cli(["review", "approve", "evolve-shared", "-w", str(b.root)],  # as the QA pass did
                      {"SKILLFORGE_CHECKPOINT_URL": pg_url}, ok=2)
    assert f"belongs to workspace '{a.workspace_id}'" in " ".join(refused.stderr.split()), refused.stderr
    assert not (b.runs_dir / "reviews").exists()  # B kept no answer for a run it does not have
    assert {ws: SkillRegistry.load(ws).get(SKILL).release.release_id for ws in (a, b)} == live
    assert ra.summary("evolve-shared")["status"] == "PENDING_REVIEW"
    done = ra.answer_review("evolve-shared", ReviewAction.APPROVE, comment="mine")
    assert done["status"] == "PUBLISHED" and SkillRegistry.load(a).get(SKILL).release.release_id == done["release_id"]
    assert SkillRegistry.load(b).get(SKILL).release.release_id == live[b]
    with pg_connect(pg_url, schema_for("graphs.sqlite")) as conn:  # a thread from before runs were scoped
        conn.execute("INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, checkpoint, metadata) "
                     "VALUES ('evolve-legacy', '', 'c1', '{}'::jsonb, '{}'::jsonb)")
    with pytest.raises(ForeignRun, match="written before runs were scoped"):
        ra.summary("evolve-legacy")


def test_a_batch_is_claimed_listed_and_joined_only_by_its_own_workspace(pg_url, tmp_path, monkeypatch):
    from skillforge.runners.batch import ForeignBatch, batch_rows, claim_next, connect, open_rows, register, \
        work_batch
    from skillforge.runners.evolve import Runner
    from skillforge.config import init_workspace
    from skillforge.errors import InvalidId

    monkeypatch.setenv("SKILLFORGE_CHECKPOINT_URL", pg_url)
    a, b = init_workspace(tmp_path / "a"), init_workspace(tmp_path / "b")
    register(pg_url, "batch-owned-by-a", {"s1": "evolve-s1", "s2": "evolve-s2"}, a.workspace_id)
    for call in (lambda: batch_rows(pg_url, "batch-owned-by-a", b.workspace_id),
                 lambda: register(pg_url, "batch-owned-by-a", {"s3": "evolve-s3"}, b.workspace_id),
                 lambda: work_batch(Runner(b), pg_url, "batch-owned-by-a")):  # refused before any worker starts
        with pytest.raises(ForeignBatch, match=f"belongs to workspace '{a.workspace_id}', not to this one"):
            call()
    with connect(pg_url) as conn:
        assert claim_next(conn, b.workspace_id, "batch-owned-by-a", "w-b") is None
        assert open_rows(conn, b.workspace_id, "batch-owned-by-a") == 0
        conn.commit()
    rows = batch_rows(pg_url, "batch-owned-by-a", a.workspace_id)
    assert [(r["skill"], r["status"], r["workspace_id"]) for r in rows] == [("s1", "PENDING", a.workspace_id),
                                                                            ("s2", "PENDING", a.workspace_id)]
    with connect(pg_url) as conn, conn.transaction():  # a row from before claims were scoped
        conn.execute("INSERT INTO skillforge_batches.claims (batch_id, skill, run_id) VALUES ('batch-old', 's', 'r')")
    with pytest.raises(ForeignBatch, match="no workspace"):
        batch_rows(pg_url, "batch-old", a.workspace_id)
    with pytest.raises(InvalidId):
        register(pg_url, "batch-../../x", {"s": "r"}, a.workspace_id)


def test_workers_hold_the_batch_s_cap_together_and_go_on_when_it_is_raised(pg_url, tmp_path, monkeypatch):
    """`evolve --all --worker --batch-budget-calls N`: two worker threads count in one batch total in
    the workspace's request ledger; at the cap the rows left are NOT_STARTED or BUDGET, and the batch
    joined again after the cap is raised finishes them."""
    from skillforge.runners.batch import batch_rows, register, work_batch
    from skillforge.runners.evolve import Runner
    from skillforge.runners.evolve_batch import NOT_STARTED
    from skillforge.state.llm import BudgetCaps

    monkeypatch.setenv("SKILLFORGE_CHECKPOINT_URL", pg_url)
    ws = six_skill_workspace(tmp_path / "ws")
    world = World(lambda r: [examples_patch()])
    for skill in SKILLS:
        seed_failures(ws, world.llm(), skill=skill)
    batch = "batch-pg-caps"
    register(pg_url, batch, {skill: f"evolve-pgcap-{skill}" for skill in SKILLS}, ws.workspace_id)
    runner = Runner(ws, llm_factory=world.llm)
    runner.ledger.set_caps(batch, BudgetCaps(max_calls=60))  # a run needs ~170: one run at most gets far
    first = work_batch(runner, pg_url, batch, concurrency=2)
    assert runner.ledger.spend(batch).calls == 60
    statuses = sorted(str(r["status"]) for r in first)
    assert set(statuses) <= {"BUDGET", NOT_STARTED} and NOT_STARTED in statuses and "BUDGET" in statuses, statuses
    runner.ledger.set_caps(batch, BudgetCaps(max_calls=5000))
    work_batch(runner, pg_url, batch, concurrency=2)  # joined again: the stopped rows are claimable
    rows = batch_rows(pg_url, batch, ws.workspace_id)
    assert [r["result"] for r in rows] == ["PUBLISHED"] * len(SKILLS), [(r["skill"], r["result"], r["message"]) for r in rows]
    assert runner.ledger.spend(batch).calls == sum(runner.ledger.spend(f"evolve-pgcap-{s}").calls for s in SKILLS) <= 5000
