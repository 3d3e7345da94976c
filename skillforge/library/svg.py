"""Small offline drawings as inline SVG (no graphviz, no network, no JS): a layered layout of a
directed graph (the lineage DAG, a LangGraph graph) and a chart of per-dimension confidence
intervals. Every label is XML-escaped, so user text cannot inject markup."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

NODE_W, NODE_H, GAP_X, GAP_Y, PAD, LONG_PAD = 168, 44, 28, 56, 16, 90


@dataclass(frozen=True)
class Node:
    id: str
    label: str
    sub: str = ""
    css: str = ""
    """Extra class names (say, the release status) on the node's <g>."""


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    label: str = ""
    css: str = ""
    dashed: bool = False


@dataclass
class Layout:
    """Node positions (top-left corner), the layer of each node and the edges drawn backwards."""

    pos: dict[str, tuple[float, float]] = field(default_factory=dict)
    layer: dict[str, int] = field(default_factory=dict)
    back: set[tuple[str, str]] = field(default_factory=set)
    width: float = 0.0
    height: float = 0.0


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def back_edges(ids: Sequence[str], edges: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
    """The edges that close a cycle in a depth-first walk from the nodes without parents (then any
    node not reached), in the given order: removing them leaves a DAG."""
    out: dict[str, list[str]] = {i: [] for i in ids}
    indeg = {i: 0 for i in ids}
    for s, d in edges:
        out[s].append(d)
        indeg[d] += 1
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    back: set[tuple[str, str]] = set()
    for root in [i for i in ids if indeg[i] == 0] + list(ids):
        if root in state:
            continue
        stack = [(root, iter(out[root]))]
        state[root] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
            elif state.get(child) == 1:
                back.add((node, child))
            elif child not in state:
                state[child] = 1
                stack.append((child, iter(out[child])))
    return back


def layout(ids: Sequence[str], edges: Sequence[tuple[str, str]]) -> Layout:
    """Layers by depth: a node sits one layer below its deepest parent (longest path, back edges
    ignored); within a layer nodes are ordered by the mean position of their parents, then by input
    order. Pure: the same input gives the same picture."""
    ids = list(dict.fromkeys(ids))
    known = set(ids)
    edges = [(s, d) for s, d in edges if s in known and d in known and s != d]
    back = back_edges(ids, edges)
    forward = [e for e in edges if e not in back]
    parents: dict[str, list[str]] = {i: [] for i in ids}
    for s, d in forward:
        parents[d].append(s)
    layer: dict[str, int] = {}

    def depth(n: str) -> int:  # iterative longest path over a DAG
        todo = [n]
        while todo:
            cur = todo[-1]
            missing = [p for p in parents[cur] if p not in layer]
            if missing:
                todo.extend(missing)
                continue
            todo.pop()
            layer[cur] = 1 + max((layer[p] for p in parents[cur]), default=-1)
        return layer[n]

    for i in ids:
        depth(i)
    rows: dict[int, list[str]] = {}
    for i in ids:
        rows.setdefault(layer[i], []).append(i)
    index = {i: k for k, i in enumerate(ids)}
    slot: dict[str, float] = {}
    for k in sorted(rows):
        def key(n: str) -> tuple[float, int]:
            ps = [slot[p] for p in parents[n] if p in slot]
            return (sum(ps) / len(ps) if ps else float(index[n]), index[n])
        rows[k].sort(key=key)
        for j, n in enumerate(rows[k]):
            slot[n] = float(j)
    widest = max((len(r) for r in rows.values()), default=0)
    width = PAD * 2 + widest * NODE_W + max(widest - 1, 0) * GAP_X
    pos = {}
    for k, row in rows.items():
        row_w = len(row) * NODE_W + (len(row) - 1) * GAP_X
        x0 = (width - row_w) / 2
        for j, n in enumerate(row):
            pos[n] = (x0 + j * (NODE_W + GAP_X), PAD + k * (NODE_H + GAP_Y))
    height = PAD * 2 + (max(rows, default=-1) + 1) * (NODE_H + GAP_Y) - (GAP_Y if rows else 0)
    long = any(layer[d] - layer[s] > 1 for s, d in forward)
    if long:  # edges that skip layers go around the left: make room
        pos = {n: (x + LONG_PAD, y) for n, (x, y) in pos.items()}
    return Layout(pos=pos, layer=layer, back=back, height=height,
                  width=width + (NODE_W / 2 if back else 0) + (LONG_PAD if long else 0))


def _edge_svg(e: Edge, lay: Layout) -> str:
    (x1, y1), (x2, y2) = lay.pos[e.src], lay.pos[e.dst]
    if (e.src, e.dst) in lay.back:  # a loop back up: around the right of both nodes
        sx, sy, tx, ty = x1 + NODE_W, y1 + NODE_H / 2, x2 + NODE_W, y2 + NODE_H / 2
        bend = max(sx, tx) + 40 + 8 * abs(lay.layer[e.src] - lay.layer[e.dst])
        d = f"M{sx:.0f},{sy:.0f} C{bend:.0f},{sy:.0f} {bend:.0f},{ty:.0f} {tx:.0f},{ty:.0f}"
        lx, ly = bend - 10, (sy + ty) / 2
    elif lay.layer[e.dst] - lay.layer[e.src] > 1:  # skips layers: around the left of the nodes between
        span = lay.layer[e.dst] - lay.layer[e.src]
        sx, sy, tx, ty = x1, y1 + NODE_H / 2, x2, y2 + NODE_H / 2
        bend = max(min(sx, tx) - 30 - 12 * span, 4)
        d = f"M{sx:.0f},{sy:.0f} C{bend:.0f},{sy:.0f} {bend:.0f},{ty:.0f} {tx:.0f},{ty:.0f}"
        lx, ly = bend + 2, (sy + ty) / 2
    else:
        sx, sy, tx, ty = x1 + NODE_W / 2, y1 + NODE_H, x2 + NODE_W / 2, y2
        my = (sy + ty) / 2
        d = f"M{sx:.0f},{sy:.0f} C{sx:.0f},{my:.0f} {tx:.0f},{my:.0f} {tx:.0f},{ty:.0f}"
        lx, ly = (sx + tx) / 2 + 4, my
    dash = ' stroke-dasharray="5,4"' if e.dashed else ""
    label = f'<text x="{lx:.0f}" y="{ly:.0f}" class="elabel">{_e(e.label)}</text>' if e.label else ""
    return (f'<g class="edge {_e(e.css)}" data-src="{_e(e.src)}" data-dst="{_e(e.dst)}">'
            f'<path d="{d}" fill="none" stroke="#667" stroke-width="1.5" marker-end="url(#arrow)"{dash}/>{label}</g>')


def _node_svg(n: Node, lay: Layout) -> str:
    x, y = lay.pos[n.id]
    label, sub = n.label[:26], n.sub[:30]
    ty = y + (NODE_H / 2 - 3 if sub else NODE_H / 2 + 4)
    text = f'<text x="{x + NODE_W / 2:.0f}" y="{ty:.0f}" class="nlabel">{_e(label)}</text>'
    if sub:
        text += f'<text x="{x + NODE_W / 2:.0f}" y="{y + NODE_H - 9:.0f}" class="nsub">{_e(sub)}</text>'
    return (f'<g class="node {_e(n.css)}" data-id="{_e(n.id)}"><title>{_e(n.label)} {_e(n.sub)}</title>'
            f'<rect x="{x:.0f}" y="{y:.0f}" width="{NODE_W}" height="{NODE_H}" rx="8"/>{text}</g>')


_SVG_STYLE = (".node rect{fill:#eef3fb;stroke:#4a6fa5;stroke-width:1.5}.node.current rect{stroke:#1a7f37;stroke-width:3}"
              ".node.ABANDONED rect,.node.DECLINED rect,.node.external rect{fill:#f3f3f3;stroke:#999}"
              ".node.terminal rect{fill:#fff7e0}.nlabel{font:600 13px sans-serif;text-anchor:middle}"
              ".nsub{font:11px sans-serif;fill:#555;text-anchor:middle}.elabel{font:10px sans-serif;fill:#444}"
              ".edge.REVERT path{stroke:#b35}.edge.DERIVED path,.edge.CAPTURED path{stroke:#2a7}")


def dag_svg(nodes: Sequence[Node], edges: Sequence[Edge], *, css_id: str = "dag") -> str:
    """An inline <svg> of the graph, laid out by `layout`: one <g class="node"> per node and one
    <g class="edge"> per edge whose ends are both nodes."""
    lay = layout([n.id for n in nodes], [(e.src, e.dst) for e in edges])
    drawn = [e for e in edges if e.src in lay.pos and e.dst in lay.pos and e.src != e.dst]
    body = "".join(_edge_svg(e, lay) for e in drawn) + "".join(_node_svg(n, lay) for n in nodes)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" id="{_e(css_id)}" width="{lay.width:.0f}" '
            f'height="{lay.height:.0f}" viewBox="0 0 {lay.width:.0f} {lay.height:.0f}"><style>{_SVG_STYLE}</style>'
            '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
            'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#667"/></marker></defs>'
            f"{body}</svg>")


def graph_svg(compiled: object) -> str:
    """A compiled LangGraph graph drawn offline: its nodes and edges (conditional edges dashed),
    START and END included."""
    g = compiled.get_graph()  # type: ignore[attr-defined]
    nodes = [Node(id=n, label=n.strip("_"), css="terminal" if n in ("__start__", "__end__") else "")
             for n in g.nodes]
    edges = [Edge(src=e.source, dst=e.target, dashed=bool(e.conditional),
                  label=str(e.data) if e.data and str(e.data) != e.target.strip("_") else "") for e in g.edges]
    return dag_svg(nodes, edges, css_id="graph")


def ci_chart_svg(evidence: Mapping[str, Mapping[str, object]], *, title: str = "candidate − baseline") -> str:
    """One row per dimension: the mean per-case delta (dot) with its confidence interval (bar)
    around a zero line, coloured by the outcome (WIN green, LOSS red, INCONCLUSIVE grey)."""
    rows = [(k, float(v["mean"]), *map(float, v["ci"]), str(v.get("outcome", ""))) for k, v in evidence.items()]  # type: ignore[arg-type]
    span = max([1e-9, *(abs(x) for r in rows for x in r[1:4])]) * 1.15
    left, plot_w, row_h = 110, 360, 30
    height = 40 + row_h * len(rows) + 24

    def px(v: float) -> float:
        return left + (v + span) / (2 * span) * plot_w

    colour = {"WIN": "#1a7f37", "LOSS": "#c0392b"}
    parts = [f'<text x="{left}" y="18" style="font:600 13px sans-serif">{_e(title)} (mean, CI)</text>',
             f'<line x1="{px(0):.1f}" y1="28" x2="{px(0):.1f}" y2="{height - 22}" stroke="#888" stroke-dasharray="3,3"/>']
    for i, (name, mean, lo, hi, outcome) in enumerate(rows):
        y = 40 + i * row_h + row_h / 2
        c = colour.get(outcome, "#777")
        parts.append(f'<g class="dim" data-dim="{_e(name)}"><text x="{left - 8}" y="{y + 4:.0f}" text-anchor="end" '
                     f'style="font:12px sans-serif">{_e(name)}</text>'
                     f'<line class="ci" x1="{px(lo):.1f}" y1="{y:.0f}" x2="{px(hi):.1f}" y2="{y:.0f}" stroke="{c}" stroke-width="4"/>'
                     f'<circle cx="{px(mean):.1f}" cy="{y:.0f}" r="5" fill="{c}"/>'
                     f'<text x="{left + plot_w + 8}" y="{y + 4:.0f}" style="font:11px sans-serif">'
                     f'{mean:+.3f} [{lo:+.3f}, {hi:+.3f}] {_e(outcome)}</text></g>')
    parts.append(f'<text x="{left}" y="{height - 6}" style="font:10px sans-serif">{-span:+.2f}</text>'
                 f'<text x="{left + plot_w}" y="{height - 6}" text-anchor="end" style="font:10px sans-serif">{span:+.2f}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="ci-chart" width="{left + plot_w + 230}" height="{height}">'
            + "".join(parts) + "</svg>")


def bar_chart_svg(values: Mapping[str, float], *, title: str = "") -> str:
    """Horizontal bars, one per key (say, a query's embedding score for each skill), largest first."""
    rows = sorted(values.items(), key=lambda kv: -kv[1])
    top = max([1e-9, *(abs(v) for _, v in rows)])
    left, plot_w, row_h = 170, 300, 22
    height = 30 + row_h * len(rows)
    parts = [f'<text x="4" y="16" style="font:600 13px sans-serif">{_e(title)}</text>']
    for i, (name, v) in enumerate(rows):
        y = 26 + i * row_h
        w = max(abs(v) / top * plot_w, 1)
        parts.append(f'<g class="bar" data-key="{_e(name)}"><text x="{left - 6}" y="{y + 14}" text-anchor="end" '
                     f'style="font:12px sans-serif">{_e(name)}</text><rect x="{left}" y="{y + 3}" width="{w:.1f}" '
                     f'height="{row_h - 6}" fill="{"#4a6fa5" if i == 0 else "#9db3d6"}"/><text x="{left + w + 6:.1f}" '
                     f'y="{y + 14}" style="font:11px sans-serif">{v:.3f}</text></g>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="bar-chart" width="{left + plot_w + 80}" height="{height}">'
            + "".join(parts) + "</svg>")
