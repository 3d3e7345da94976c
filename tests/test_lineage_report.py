"""`skillforge report SKILL --html FILE` on a real workspace with a real history (an import, a manual
publish, a revert, an evolve L1 publish through the scripted World), rendered by headless Chromium."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import edited, run_cli

from evolve_fakes import SKILL, World, examples_patch, new_workspace, seed_failures
from skillforge.runners.evolve import Runner
from skillforge.library.lineage import check_output, unified
from skillforge.library.releases import ReleaseStateMachine
from skillforge.library.svg import back_edges, layout


def browse(exe: str, page: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           f"--user-data-dir={page.parent / 'chromium-profile'}", *extra, page.as_uri()],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """import -> manual publish -> revert to the import -> evolve L1 (parent: the revert)."""
    ws = new_workspace(tmp_path_factory.mktemp("report") / "ws")
    m = ReleaseStateMachine.open(ws)
    imported = m.store.current(SKILL)
    manual = m.publish(SKILL, edited(m, SKILL, "<script>alert('x')</script> 总是确认上车地点"), triggered_by="cli publish")
    reverted = m.revert(SKILL, imported.release_id)
    world = World(lambda r: [examples_patch()])
    seed = seed_failures(ws, world.llm())
    out = Runner(ws, llm_factory=world.llm).start(SKILL)
    assert out["status"] == "PUBLISHED", out
    # an evaluation report on disk for the seed run, as `evaluate --report` writes it
    reports = ws.runs_dir / "reports"
    reports.mkdir()
    (reports / "seed.html").write_text(f"<!doctype html><html><head><title>SkillForge evaluation {seed}</title>",
                                       encoding="utf-8")
    return ws, {"imported": imported, "manual": manual, "reverted": reverted, "evolved": out["release_id"], "seed": seed}


def test_layout_layers_by_depth_and_breaks_cycles():
    lay = layout(["a", "b", "c", "d"], [("a", "b"), ("a", "c"), ("c", "b"), ("b", "d"), ("d", "a")])
    assert lay.back == {("d", "a")}  # a node one layer below its deepest parent: b under c
    assert (lay.layer["a"], lay.layer["c"], lay.layer["b"], lay.layer["d"]) == (0, 1, 2, 3)
    assert lay.pos["a"][1] < lay.pos["c"][1] < lay.pos["b"][1] < lay.pos["d"][1]
    assert back_edges(["x", "y"], [("x", "y")]) == set()
    two = layout(["r", "p", "q"], [("r", "p"), ("r", "q")])
    assert two.pos["p"][1] == two.pos["q"][1] and two.pos["p"][0] != two.pos["q"][0]


def test_unified_diff_of_two_folders():
    assert unified({"SKILL.md": b"a\n"}, {"SKILL.md": b"a\n"}, "1", "2") == ""
    text = unified({"SKILL.md": b"a\nb\n"}, {"SKILL.md": b"a\nc\n", "x.txt": b"new"}, "1.0.0", "1.0.1")
    assert "-b\n+c\n" in text and "+++ 1.0.1/x.txt" in text and "--- /dev/null" in text


def test_report_renders_in_headless_chromium(history, tmp_path, chromium):
    ws, rel = history
    page = tmp_path / "out" / "taxi.html"
    page.parent.mkdir()
    done = run_cli(["report", SKILL, "--html", str(page), "--workspace", str(ws.root)])
    assert str(page) in done.stdout.replace("\n", "")
    raw = page.read_text(encoding="utf-8")
    assert "<script>alert" not in raw and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in raw  # escaped
    assert "http://" not in raw.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in raw
    proc = browse(chromium, page, "--dump-dom")
    dom = proc.stdout
    assert "<svg" in dom, proc.stderr[-2000:]
    lineage = dom.split('id="lineage"', 1)[1].split("</svg>", 1)[0]
    nodes = re.findall(r'<g class="node ([^"]*)" data-id="([^"]+)"', lineage)
    edges = re.findall(r'<g class="edge ([^"]*)" data-src="([^"]+)" data-dst="([^"]+)"', lineage)
    ids = {i for _, i in nodes}
    assert {rel["imported"].release_id, rel["manual"].release_id, rel["reverted"].release_id, rel["evolved"]} <= ids
    assert ("FIX", rel["imported"].release_id, rel["manual"].release_id) in edges
    assert ("REVERT", rel["imported"].release_id, rel["reverted"].release_id) in edges
    assert ("FIX", rel["reverted"].release_id, rel["evolved"]) in edges
    assert any("current" in css for css, i in nodes if i == rel["evolved"])
    rows = re.findall(r"<tr class=\"hist\" id=\"row-([^\"]+)\">", dom)
    assert rows == [rel["imported"].release_id, rel["manual"].release_id, rel["reverted"].release_id, rel["evolved"]]
    row = dom.split(f'id="row-{rel["evolved"]}"', 1)[1].split("</tr>", 1)[0]
    assert re.search(r"selection \d\.\d{3} vs \d\.\d{3}, holdout \d\.\d{3} vs \d\.\d{3}", row), row
    assert re.search(r"<td>\d+\.\d%</td>", row), row  # the selection run's flip rate
    evolved = dom.split(f'id="rel-{rel["evolved"]}"', 1)[1]
    assert 'class="set selection"' in evolved and 'class="set holdout"' in evolved  # selection vs holdout scores
    assert "class=\"evidence\"" in evolved and "flip rate" in evolved
    assert "QUOTE-ETA" in evolved.split('class="diff"', 1)[1]  # the evolve patch, against its parent
    manual = dom.split(f'id="rel-{rel["manual"].release_id}"', 1)[1].split("</section>", 1)[0]
    assert '<span class="add">+- &lt;script&gt;' in manual
    reverted = dom.split(f'id="rel-{rel["reverted"].release_id}"', 1)[1].split("</section>", 1)[0]
    assert "identical bytes" in reverted and "what it undoes" in reverted and 'class="del">-- &lt;script' in reverted
    link = re.search(r'<a class="evalreport" href="([^"]+)">report of ' + re.escape(rel["seed"]), dom)
    assert link and (page.parent / link.group(1)).resolve() == (ws.runs_dir / "reports" / "seed.html").resolve()
    shot = tmp_path / "report.png"
    proc = browse(chromium, page, f"--screenshot={shot}", "--window-size=1280,1600", "--hide-scrollbars")
    assert shot.is_file() and shot.stat().st_size > 10_000, proc.stderr[-2000:]
    if os.environ.get("SKILLFORGE_KEEP_SCREENSHOT"):  # to look at it yourself
        shutil.copyfile(shot, os.environ["SKILLFORGE_KEEP_SCREENSHOT"])


def test_unknown_skill_and_unwritable_path_are_named_errors(history, tmp_path):
    ws, _ = history
    out = run_cli(["report", "taxi-hailin", "--html", str(tmp_path / "x.html"), "--workspace", str(ws.root)], ok=2)
    assert "unknown skill 'taxi-hailin'" in out.stderr and "taxi-hailing" in out.stderr
    assert not (tmp_path / "x.html").exists()
    missing = run_cli(["report", SKILL, "--html", str(tmp_path / "no" / "x.html"), "--workspace", str(ws.root)], ok=2)
    assert "cannot write" in missing.stderr and "no folder" in missing.stderr
    folder = run_cli(["report", SKILL, "--html", str(tmp_path), "--workspace", str(ws.root)], ok=2)
    assert "it is a folder" in folder.stderr
    with pytest.raises(Exception, match="cannot write"):
        check_output(Path("/proc/version"))
    odd = tmp_path / "a\nb"  # a newline in the path is shown escaped, so "wrote" stays one line
    odd.mkdir()
    wrote = run_cli(["report", SKILL, "--html", str(odd / "r.html"), "--workspace", str(ws.root)])
    assert "a\\nb/r.html" in wrote.stdout.replace("\n", "") and (odd / "r.html").is_file()  # (long lines wrap)


def test_an_empty_path_or_a_missing_reports_folder_is_a_usage_error(history, tmp_path):
    """QA qa12 MESSAGE-1: `--html ""` said "cannot write .: it is a folder", and `--reports ""` or
    `--reports /nonexistent` were accepted silently (every evaluation link left out)."""
    ws, _ = history
    page = tmp_path / "x.html"
    for args, option, says in [(["--html", ""], "--html", "an empty path"),
                               (["--html", str(page), "--reports", ""], "--reports", "an empty path"),
                               (["--html", str(page), "--reports", str(tmp_path / "nope")], "--reports", "no such folder"),
                               (["--html", str(page), "--reports", str(Path(__file__))], "--reports", "not a folder")]:
        proc = run_cli(["report", SKILL, *args, "--workspace", str(ws.root)], ok=2)
        said = " ".join(proc.stderr.replace("│", " ").split())  # the usage box wraps long paths
        assert f"Invalid value for '{option}'" in said and says in said, proc.stderr
        assert not page.exists()
    run_cli(["report", SKILL, "--html", str(page), "--reports", str(tmp_path), "--workspace", str(ws.root)])
    assert page.is_file()


def test_graph_svg_draws_every_node_and_edge_of_the_evolve_graph():
    from skillforge.graphs.evolve import build_evolve_graph
    from skillforge.library.svg import graph_svg

    g = build_evolve_graph()
    svg = graph_svg(g)
    drawn = set(re.findall(r'<g class="node [^"]*" data-id="([^"]+)"', svg))
    assert drawn == set(g.get_graph().nodes) and {"__start__", "__end__", "review", "publish"} <= drawn
    assert len(re.findall(r'<g class="edge', svg)) == len(g.get_graph().edges)
    assert 'data-src="decide" data-dst="propose"' in svg  # the feedback loop, drawn as a back edge


def test_a_derived_skill_links_to_its_parent_skill_in_both_reports(tmp_path):
    from skillforge.library.lineage import collect, lineage_svg
    from skillforge.state.release import LineageKind

    ws = new_workspace(tmp_path / "ws")
    m = ReleaseStateMachine.open(ws)
    parent = m.store.current(SKILL)
    text = (ws.skills_dir / SKILL / "SKILL.md").read_text(encoding="utf-8").replace("name: taxi-hailing", "name: taxi-eta")
    child = m.publish("taxi-eta", {"SKILL.md": text.encode("utf-8")}, kind=LineageKind.DERIVED,
                      parents=[parent.release_id], folder=ws.skills_dir / "taxi-eta", triggered_by="test")
    for skill in (SKILL, "taxi-eta"):
        svg = lineage_svg(collect(ws, skill))
        assert f'<g class="edge DERIVED" data-src="{parent.release_id}" data-dst="{child.release_id}"' in svg
        other = child if skill == SKILL else parent
        assert re.search(rf'<g class="node external" data-id="{other.release_id}"', svg), skill
    derived = collect(ws, "taxi-eta").views[0]
    assert derived.diffs and "+name: taxi-eta" in derived.diffs[0][1]  # diffed against the parent skill's bytes


def test_the_history_shows_retirements_and_a_retired_skill_says_so(tmp_path):
    """QA qa10a F15: a skill retired now, or retired then brought back, had no trace of it on its page."""
    ws = new_workspace(tmp_path / "ws")
    m = ReleaseStateMachine.open(ws)
    imported = m.store.current(SKILL)
    m.retire(SKILL, triggered_by="cli retire")
    page = tmp_path / "retired.html"
    run_cli(["report", SKILL, "--html", str(page), "-w", str(ws.root)])
    text = page.read_text(encoding="utf-8")
    assert f"{SKILL} is RETIRED</b>" in text and f"skillforge release revert {SKILL}" in text
    row = re.search(r"<tr class='hist retired'>.*?</tr>", text)
    assert row and "cli retire" in row.group(0) and f"retired while {imported.version} was live" in row.group(0)
    assert "no live release now" in row.group(0)
    back = m.revert(SKILL, imported.release_id)
    run_cli(["report", SKILL, "--html", str(page), "-w", str(ws.root)])
    text = page.read_text(encoding="utf-8")
    assert "is RETIRED</b>" not in text and f"brought back by {back.version}" in text
    order = [text.index(f"id='row-{imported.release_id}'"), text.index("class='hist retired'"),
             text.index(f"id='row-{back.release_id}'")]
    assert order == sorted(order)  # in the order it happened
