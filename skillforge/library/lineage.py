"""`skillforge report SKILL --html FILE`: one static page with a skill's release history, its lineage
DAG as inline SVG, the evaluations behind each release (scores, evidence, flip rate, selection vs
holdout), links to evaluation reports found on disk, and each release's diff against its parent.
No network, no external JS or CSS; every stored or user-provided string is HTML-escaped."""

from __future__ import annotations

import difflib
import html
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from skillforge.config import Workspace
from skillforge.errors import GitError, NotWritable, UnknownSkill
from skillforge.library.gitrepo import SkillsRepo, probe_writable
from skillforge.journal import read_jsonl
from skillforge.rules.comment import shown
from skillforge.safewrite import check_target, write_text_atomic
from skillforge.state.release import LineageKind, LineageLink, Release, ReleaseStatus, Retirement
from skillforge.state.result import aa_outcome
from skillforge.library.store import Store
from skillforge.library.svg import Edge, Node, dag_svg
from skillforge.library.judged import badge as _badge, decided as _decided, num as _num, pair as _pair, reported_marks

MAX_DIFF_LINES = 400
"""Lines of unified diff shown per release (the rest is cut, with a note)."""
SET_NAMES = ("selection", "holdout", "final_audit", "routing")
_TITLE = re.compile(r"<title>SkillForge evaluation (.+?)</title>")


@dataclass
class ReleaseView:
    release: Release
    links: list[LineageLink]
    evaluations: list[dict[str, object]] = field(default_factory=list)
    diffs: list[tuple[str, str]] = field(default_factory=list)
    """(what it is compared with, unified diff text)."""


@dataclass
class ReportData:
    skill: str
    current: str | None
    views: list[ReleaseView]
    external: dict[str, Release]
    """Releases of other skills that are parents or children of this skill's releases."""
    children: list[LineageLink]
    runs: dict[str, dict[str, object]]
    """evaluations.jsonl lines by run id (for the evidence behind an evolve release's set scores)."""
    reports: dict[str, Path]
    """Evaluation HTML reports found on disk, by run id."""
    retirements: list[Retirement] = field(default_factory=list)
    """Every retirement of the skill, oldest first (open: it is RETIRED now)."""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _shown(text: object) -> str:
    """A release's stored 'triggered by' with controls, bidi and invisible characters escaped (rules/comment.shown)."""
    return shown(str(text))


def check_output(path: Path, what: str = "the report") -> Path:
    """The resolved --html (or `skills export --out`) path, or NotWritable if it is not a regular
    file or a new name (a folder, a device, a FIFO, a socket, or a link to one) or its folder is
    missing or cannot take a file (said as "cannot write `what` to PATH: ...")."""
    path = check_target(path)
    if path.exists() and not os.access(path, os.W_OK):
        raise NotWritable(f"cannot write {path}: permission denied")
    try:
        probe_writable(path.parent)
    except NotWritable as e:  # "cannot write in /proc: No such file or directory" did not name the file
        why = str(e).split(": ", 1)[-1]
        raise NotWritable(f"cannot write {what} to {path}: no new file can be made in {path.parent} ({why})") from None
    return path


def find_reports(folders: list[Path]) -> dict[str, Path]:
    """Evaluation reports (written by `skillforge evaluate --report`) in `folders`, by the run id in
    their title."""
    found: dict[str, Path] = {}
    for folder in folders:
        if not folder.is_dir():
            continue
        for p in sorted(folder.rglob("*.html")):
            try:
                with p.open("r", encoding="utf-8", errors="replace") as fh:
                    head = fh.read(600)
            except OSError:
                continue
            m = _TITLE.search(head)
            if m:
                found.setdefault(html.unescape(m.group(1)), p)
    return found


def unified(old: dict[str, bytes], new: dict[str, bytes], old_name: str, new_name: str) -> str:
    """The unified diff of two skill folders, file by file ('' when they are the same)."""
    out: list[str] = []
    for rel in sorted(set(old) | set(new)):
        a, b = old.get(rel), new.get(rel)
        if a == b:
            continue
        a_lines = (a or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
        b_lines = (b or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
        out.extend(difflib.unified_diff(a_lines, b_lines, f"{old_name}/{rel}" if a is not None else "/dev/null",
                                        f"{new_name}/{rel}" if b is not None else "/dev/null"))
    return "".join(x if x.endswith("\n") else x + "\n" for x in out)


def _files(repo: SkillsRepo, rel: Release) -> dict[str, bytes] | None:
    if rel.commit_hash is None:
        return None
    try:
        return repo.folder_at(rel.commit_hash, rel.skill_path)
    except GitError:
        return None


def collect(ws: Workspace, skill: str, *, report_dirs: list[Path] | None = None) -> ReportData:
    """Everything the page shows, read from the store, the git repository and runs/evaluations.jsonl.
    UnknownSkill (with the closest names) if the skill has no release at all."""
    store = Store(ws.db_path)
    try:
        history = store.releases(skill)
        if not history:
            raise UnknownSkill(skill, difflib.get_close_matches(skill, store.skill_names(), n=3))
        repo = SkillsRepo(ws.skills_dir)
        current = store.current(skill)
        lines = read_jsonl(ws.evaluations_log) if ws.evaluations_log.exists() else []
        by_release: dict[str, list[dict[str, object]]] = {}
        runs: dict[str, dict[str, object]] = {}
        for line in lines:
            by_release.setdefault(str(line.get("release_id")), []).append(line)
            if line.get("run_id") and line.get("kind") in ("ab", "aa"):
                runs[str(line["run_id"])] = line
        ours = {r.release_id for r in history}
        external: dict[str, Release] = {}
        views = []
        for n, rel in enumerate(history):
            links = store.lineage(rel.release_id)
            view = ReleaseView(rel, links, by_release.get(rel.release_id, []))
            new = _files(repo, rel)
            for link in links:
                if link.parent is None:
                    continue
                parent = store.release(link.parent)
                if parent.release_id not in ours:
                    external[parent.release_id] = parent
                old = _files(repo, parent)
                if new is not None and old is not None:
                    view.diffs.append((f"parent {parent.skill_name} {parent.version} ({link.kind.value})",
                                       unified(old, new, parent.version, rel.version)))
                if link.kind is LineageKind.REVERT and new is not None:
                    before = [r for r in history[:n] if r.status is ReleaseStatus.PUBLISHED]  # live until the revert
                    prev = _files(repo, before[-1]) if before else None
                    if prev is not None:
                        view.diffs.append((f"what it undoes: {before[-1].version} → {rel.version}",
                                           unified(prev, new, before[-1].version, rel.version)))
            views.append(view)
        marks = ",".join("?" * len(ours))
        children = [LineageLink(child=c, parent=p, kind=LineageKind(k)) for c, p, k in store.conn.execute(
            f"SELECT child, parent, kind FROM lineage WHERE parent IN ({marks}) AND child NOT IN ({marks})",
            (*ours, *ours))]
        for link in children:
            external[link.child] = store.release(link.child)
        retirements = store.retirements(skill)
    finally:
        store.close()
    folders = report_dirs if report_dirs is not None else [ws.runs_dir / "reports"]
    return ReportData(skill, current.release_id if current else None, views, external, children, runs,
                      find_reports(folders), retirements)


def lineage_svg(data: ReportData) -> str:
    """The lineage DAG: one node per release (and per release of another skill it links to), one
    edge per lineage link, labelled with its kind."""
    nodes = []
    for v in data.views:
        r = v.release
        css = f"{r.status.value}{' current' if r.release_id == data.current else ''}"
        nodes.append(Node(r.release_id, f"{r.version} {r.level.value}", f"{r.status.value} · {_shown(r.triggered_by)}", css))
    for r in data.external.values():
        nodes.append(Node(r.release_id, f"{r.skill_name} {r.version}", "another skill", "external"))
    edges = [Edge(lk.parent, lk.child, lk.kind.value, lk.kind.value) for v in data.views for lk in v.links
             if lk.parent is not None]
    edges += [Edge(lk.parent, lk.child, lk.kind.value, lk.kind.value) for lk in data.children if lk.parent]
    return dag_svg(nodes, edges, css_id="lineage")


def _evidence_table(ev: object, marks: dict[str, str] | None = None) -> str:
    if not isinstance(ev, dict) or not ev:
        return ""
    marks = marks or {}
    rows = "".join(
        f"<tr class='ev{' reported' if k in marks else ''}'><td>{_e(k)}{_badge(str(k), marks)}</td>"
        f"<td class='{_e(v.get('outcome', ''))}'>{_e(v.get('outcome', ''))}</td>"
        f"<td>{_num(v.get('mean'), '+.3f')}</td><td>[{', '.join(_num(x, '+.3f') for x in v.get('ci', []))}]</td>"
        f"<td>{_e(v.get('wins'))}/{_e(v.get('losses'))}/{_e(v.get('ties'))}</td><td>{_num(v.get('p_adjusted'))}</td></tr>"
        for k, v in ev.items() if isinstance(v, dict))
    return ("<table class='evidence'><tr><th>dimension</th><th>outcome</th><th>mean Δ</th><th>CI</th>"
            f"<th>W/L/T</th><th>p adj.</th></tr>{rows}</table>")


def _report_link(data: ReportData, run_id: object, out: Path) -> str:
    path = data.reports.get(str(run_id))
    if path is None:
        return f"<span class='norep'>run {_e(run_id)} (no report file)</span>"
    href = os.path.relpath(path, out.parent)
    return f"<a class='evalreport' href='{_e(href)}'>report of {_e(run_id)}</a>"


def _evaluation_html(data: ReportData, line: dict[str, object], out: Path) -> str:
    kind = line.get("kind")
    if kind == "aa" and isinstance(line.get("false_alarm"), bool):  # its ratchet verdict decides no release
        ev = line.get("evidence")
        alarms = [f"{k} {v.get('outcome')}" for k, v in ev.items() if isinstance(v, dict)
                  and v.get("outcome") not in (None, "INCONCLUSIVE")] if isinstance(ev, dict) else []
        return (f"<div class='eval'><b>A/A self-check on {_e(line.get('eval_set'))}</b>: "
                f"{_e(aa_outcome(bool(line['false_alarm']), alarms).removeprefix('A/A: '))}, flip rate "
                f"<span class='flip'>{_num(line.get('flip_rate'), '.1%')}</span> "
                f"· {_report_link(data, line.get('run_id'), out)}{_decided(line)}"
                f"{_evidence_table(line.get('evidence'), reported_marks(line))}</div>")
    if kind in ("ab", "aa"):
        return (f"<div class='eval'><b>{_e(kind)} on {_e(line.get('eval_set'))}</b>: {_e(line.get('verdict'))}, "
                f"improvement {_e(line.get('improvement') or '-')}, {_scores(line)}, flip rate "
                f"<span class='flip'>{_num(line.get('flip_rate'), '.1%')}</span> "
                f"· {_report_link(data, line.get('run_id'), out)}{_decided(line)}"
                f"{_evidence_table(line.get('evidence'), reported_marks(line))}</div>")
    if kind == "evolve":
        parts = [f"<div class='eval'><b>evolve run {_e(line.get('run_id'))}</b>, candidate {_e(line.get('candidate'))}"
                 "<table class='sets'><tr><th>set</th><th>verdict</th><th>improvement (primary)</th><th>effect</th>"
                 "<th>baseline effect</th><th>flip rate</th><th>evaluation</th></tr>"]
        details = ""
        for name in SET_NAMES:
            s = line.get(name)
            if not isinstance(s, dict):
                continue
            run = data.runs.get(str(s.get("run_id")), {})
            parts.append(f"<tr class='set {_e(name)}'><td>{_e(name)}</td><td>{_e(s.get('verdict'))}</td>"
                         f"<td>{_e(s.get('improvement'))} ({_e(s.get('primary') or 'effect')})</td><td>{_num(s.get('score'))}</td>"
                         f"<td>{_num(s.get('baseline_score'))}</td><td>{_num(run.get('flip_rate'), '.1%')}</td>"
                         f"<td>{_report_link(data, s.get('run_id'), out) if s.get('run_id') else '-'}</td></tr>")
            details += _decided({**run, **{k: s[k] for k in ("primary", "primary_reason") if s.get(k)}}, f"{name}: ")
            if run.get("evidence"):
                details += (f"<p>{_e(name)} evidence:</p>"
                            f"{_evidence_table(run.get('evidence'), reported_marks(run) or reported_marks(s))}")
        review = line.get("review")
        if isinstance(review, dict):
            details += f"<p>review: {_e(review.get('action'))} — {_e(review.get('comment', ''))}</p>"
        return "".join(parts) + "</table>" + details + "</div>"
    if kind == "canary":  # library/canary.py: a promote or rollback, its reason (the evidence stays in the log)
        return (f"<div class='eval'><b>canary {_e(line.get('transition'))}</b> ({_num(line.get('share'), '.0%')} of "
                f"sessions, against {_e(str(line.get('live_release_id'))[:8])}): {_e(line.get('reason'))}</div>")
    extra = ", ".join(f"{_e(k)}: {_e(v)}" for k, v in line.items() if k not in ("release_id", "skill", "version", "kind", "at"))
    return f"<div class='eval'><b>{_e(kind)}</b> {extra}</div>"


_STYLE = """body{font:14px system-ui,sans-serif;margin:2em;color:#222;max-width:1200px}
table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}
pre.diff{background:#f7f7f7;padding:8px;overflow-x:auto;font:12px monospace}.add{color:#080}.del{color:#b00}.hunk{color:#06c}
.WIN{color:#1a7f37}.LOSS{color:#c0392b}tr.reported td{color:#888}.badge.reported{background:#eee;color:#555;padding:0 4px;border-radius:3px;font-size:12px}.retired{color:#b00}section.release{border-top:1px solid #ddd;margin-top:1.5em}.norep{color:#888}"""


def _flip(data: ReportData, line: dict[str, object]) -> object:
    """The flip rate of an evaluation line; for an evolve release, that of its selection run."""
    if line.get("flip_rate") is not None:
        return line["flip_rate"]
    sel = line.get("selection")
    return data.runs.get(str(sel.get("run_id")), {}).get("flip_rate") if isinstance(sel, dict) else None


def _scores(line: dict[str, object], data: ReportData | None = None) -> str:
    """One short line of scores: effect old → new, or selection and holdout of an evolve release; the
    primary endpoint's headline instead when the objective checks decided."""
    if line.get("kind") in ("ab", "aa"):
        return _pair(line, f"{line.get('eval_set')}:", line.get("effect_score"), line.get("baseline_effect_score"),
                     line.get("evidence"))
    sets = [(n, line[n]) for n in SET_NAMES if isinstance(line.get(n), dict) and line[n].get("score") is not None]  # type: ignore[union-attr]
    runs = data.runs if data is not None else {}
    return ", ".join(_pair(s, n, s.get("score"), s.get("baseline_score"),  # type: ignore[union-attr]
                           runs.get(str(s.get("run_id")), {}).get("evidence")) for n, s in sets)  # type: ignore[union-attr]


def _diff_html(text: str) -> str:
    lines = text.splitlines()
    cut = len(lines) > MAX_DIFF_LINES
    out = []
    for ln in lines[:MAX_DIFF_LINES]:
        css = "hunk" if ln.startswith("@@") else "add" if ln.startswith("+") else "del" if ln.startswith("-") else ""
        out.append(f"<span class='{css}'>{_e(ln)}</span>" if css else _e(ln))
    note = f"\n… {len(lines) - MAX_DIFF_LINES} more lines" if cut else ""
    return "<pre class='diff'>" + "\n".join(out) + _e(note) + "</pre>"


def render(data: ReportData, out: Path) -> str:
    """The page, as one HTML string (links to evaluation reports are relative to `out`)."""
    rows: list[tuple[str, str]] = []  # (when, row): releases and retirements in the order they happened
    sections = []
    versions = {v.release.release_id: v.release.version for v in data.views}
    for t in data.retirements:
        back = (f"brought back by {versions.get(t.restored_by, t.restored_by[:8])}" if t.restored_by
                else "no live release now")
        row = (f"<tr class='hist retired'><td>-</td><td>RETIRED</td><td>-</td><td>-</td>"
               f"<td>{_e(_shown(t.triggered_by))}</td><td>{_e(t.retired_at[:19])}</td><td>-</td><td>-</td>"
               f"<td>retired while {_e(versions.get(t.release_id, t.release_id[:8]))} was live; {_e(back)}</td></tr>")
        rows.append((t.retired_at, row))
    for v in data.views:
        r = v.release
        kinds = ",".join(sorted({lk.kind.value for lk in v.links}))
        mark = " (current)" if r.release_id == data.current else ""
        flips = [f for f in (_flip(data, ln) for ln in v.evaluations) if f is not None]
        row = (f"<tr class='hist' id='row-{_e(r.release_id)}'><td><a href='#rel-{_e(r.release_id)}'>{_e(r.version)}</a>{mark}</td>"
                    f"<td>{_e(r.status.value)}</td><td>{_e(r.level.value)}</td><td>{_e(kinds)}</td><td>{_e(_shown(r.triggered_by))}</td>"
                    f"<td>{_e((r.published_at or r.created_at)[:19])}</td><td>{_e((r.commit_hash or '-')[:10])}</td>"
                    f"<td>{_num(flips[-1], '.1%') if flips else '-'}</td>"
                    f"<td class='scores'>{'<br>'.join(_scores(ln, data) for ln in v.evaluations if _scores(ln)) or '-'}</td></tr>")
        rows.append((r.published_at or r.created_at, row))
        evals = "".join(_evaluation_html(data, ln, out) for ln in v.evaluations) or "<p>no evaluation recorded</p>"
        diffs = "".join(f"<h4>diff against {_e(what)}</h4>" + (_diff_html(text) if text else "<p>identical bytes</p>")
                        for what, text in v.diffs) or "<p>no parent (first release)</p>"
        sections.append(f"<section class='release' id='rel-{_e(r.release_id)}'><h3>{_e(r.version)} · {_e(r.status.value)} · "
                        f"{_e(r.level.value)} · {_e(kinds)}</h3><p>release {_e(r.release_id)}, triggered by "
                        f"{_e(_shown(r.triggered_by))}</p>{evals}{diffs}</section>")
    now = next((t for t in data.retirements if t.restored_by is None), None)
    banner = (f"<p class='retired'><b>{_e(data.skill)} is RETIRED</b> since {_e(now.retired_at[:19])} "
              f"({_e(_shown(now.triggered_by))}): it has no live release and is out of the index and the router; "
              f"<code>skillforge release revert {_e(data.skill)}</code> brings it back.</p>") if now else ""
    rows.sort(key=lambda row: row[0])
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>SkillForge lineage: {_e(data.skill)}</title>"
            f"<style>{_STYLE}</style></head><body><h1>{_e(data.skill)}: releases and lineage</h1>{banner}"
            f"<h2>Lineage</h2>{lineage_svg(data)}"
            "<h2>History</h2><table id='history'><tr><th>version</th><th>status</th><th>level</th><th>lineage</th>"
            f"<th>triggered by</th><th>when</th><th>commit</th><th>flip rate</th><th>scores (candidate vs baseline)</th></tr>{''.join(row for _, row in rows)}</table>"
            f"<h2>Releases</h2>{''.join(sections)}</body></html>")


def write_report(ws: Workspace, skill: str, out: Path, *, report_dirs: list[Path] | None = None) -> Path:
    """Check `out` can be written, then collect and write the page there (through a temp file)."""
    target = check_output(out)
    dirs = report_dirs if report_dirs is not None else [ws.runs_dir / "reports", target.parent]
    data = collect(ws, skill, report_dirs=dirs)
    return write_text_atomic(target, render(data, target))
