"""A synthetic skill library for measuring routing at scale (issue 26): about 200 skills over 66
domains, with near-duplicate pairs, about 20 % Chinese, and labelled train / dev / test queries.

Everything comes from a hand-written catalogue (data/synth_catalogue.txt beside this module) and a
seeded `random.Random`, so one seed always gives the same library. Each catalogue job is a
concrete task with a 1-2 sentence description, keywords, and six request *cores* (what a user
asks, as a verb phrase): three "seen" cores become the skill's 5 examples and 4 train queries,
three "held" cores become 2 dev and 4 test queries. Seen and held cores are different requests,
and they are wrapped in different phrasing frames (`SEEN_FRAMES_*` / `HELD_FRAMES_*`), so a test
query never repeats an example and a router cannot pass by memorising the examples.

Near-duplicate pairs are two jobs of one domain whose descriptions overlap but whose jobs differ
(a QR code generator and a QR code reader); each names the other's job in `not_for`. Their
queries name the job's action, so a careful human can tell them apart.

NONE queries (expected None: no skill fits) are chit-chat, trivia, requests from domains the
catalogue does not cover (data/synth_none.json), and near misses: requests inside a covered domain
that no job does.
Their base utterances are split between train, dev and test, so test NONE queries are unseen.
A few skills are themselves chat-like (jokes, a motivational quote, a mood check-in): chit-chat
NONE queries avoid what they do (no jokes, quotes, stories, quizzes or mood talk).

`write_workspace` writes the library as skills/<name>/SKILL.md plus the query sets as JSONL
({"query": ..., "expected": ...}), the format `skillforge route calibrate|fit|eval --cases` reads.
Stdlib only, besides the project's own SKILL.md model and renderer.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path

from skillforge.errors import SkillForgeError
from skillforge.skill import file as skillfile
from skillforge.state.skill import NAME_MAX, NAME_RE, SkillFile

Labelled = tuple[str, str | None]
"""(query, expected skill name, or None when no skill fits)."""

N_SKILLS = 200
NEAR_DUPLICATE_PAIRS = 40
EXAMPLES = 5
TRAIN_PER_SKILL = 4
DEV_PER_SKILL = 2
TEST_PER_SKILL = 4
NONE_SHARE = 0.25
"""Share of NONE queries in dev and test."""
TRAIN_NONE_SHARE = 0.15
NONE_SPLIT = (0.2, 0.27)
"""Shares of the NONE base utterances reserved for train and dev; test gets the rest."""

SEEN_FRAMES_EN = ("{c}", "can you {c}?", "please {c}", "could you {c}?", "{c} please", "I'd love it if you could {c}")
HELD_FRAMES_EN = ("{C}.", "is it possible to {c}?", "quick one: {c}", "I'd like you to {c}",
                  "would you {c}? thanks", "hey, {c} when you get a sec")
SEEN_FRAMES_ZH = ("{c}", "{c}。", "你好，{c}", "{c}，麻烦了", "在吗？{c}", "{c}，急")
HELD_FRAMES_ZH = ("{c}！", "那个，{c}", "{c}，拜托了", "想问下，{c}", "{c}，多谢", "嗯，{c}")
NONE_FRAMES_EN = ("hey, {u}", "{u} — any idea?", "quick question: {u}", "so, {u}")
NONE_FRAMES_ZH = ("问一下，{u}", "{u}？你知道吗", "对了，{u}")

_CJK = re.compile(r"[\u3400-\u9fff]")


class CatalogueError(SkillForgeError):
    """The synthetic catalogue, or a request of it, is inconsistent (too few jobs, a bad line)."""


@dataclass(frozen=True)
class Job:
    """One concrete task of the catalogue: what becomes one skill."""

    domain: str
    name: str
    description: str
    short: str
    """The job in a few words; a near-duplicate partner's not_for names it."""
    keywords: tuple[str, ...]
    seen: tuple[str, ...]
    """Request cores behind the examples and the train queries."""
    held: tuple[str, ...]
    """Request cores behind the dev (first) and test (the others) queries."""

    @property
    def zh(self) -> bool:
        return bool(_CJK.search(self.description))


@dataclass(frozen=True)
class Domain:
    name: str
    jobs: tuple[Job, ...]
    pairs: tuple[tuple[str, str], ...]
    near_misses: tuple[str, ...]
    """Requests of this domain that no job of the catalogue does (NONE)."""


@dataclass
class SynthLibrary:
    """Skills and labelled queries of one seed."""

    skills: list[SkillFile]
    train: list[Labelled]
    dev: list[Labelled]
    test: list[Labelled]
    pairs: list[tuple[str, str]]
    """The near-duplicate pairs, both members in `skills`."""
    domains: dict[str, str] = field(default_factory=dict)
    """skill name -> domain."""
    seed: int = 0

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.skills]

    @property
    def pair_skills(self) -> set[str]:
        return {n for p in self.pairs for n in p}


# ---- the catalogue ---------------------------------------------------------------------------
def _split(line: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in line.split(";") if p.strip())


def parse_catalogue(text: str) -> list[Domain]:
    """The domains of a catalogue text. Lines: `@ domain`, a job `name | description | short |
    kw, kw`, its cores `> a ; b ; c` (seen) and `< d ; e ; f` (held), `= a ~ b` (a near-duplicate
    pair) and `? x ; y` (near misses)."""
    domains: list[Domain] = []
    name, jobs, pairs, misses = "", [], [], []
    head: list[str] | None = None
    seen: tuple[str, ...] = ()

    def close() -> None:
        if name:
            domains.append(Domain(name, tuple(jobs), tuple(pairs), tuple(misses)))

    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        tag, rest = line[0], line[1:].strip()
        if tag == "@":
            close()
            name, jobs, pairs, misses = rest, [], [], []
        elif tag == ">":
            seen = _split(rest)
        elif tag == "<":
            if head is None:
                raise CatalogueError(f"catalogue line {n}: held cores without a job")
            held = _split(rest)
            if len(seen) != 3 or len(held) != 3:
                raise CatalogueError(f"catalogue line {n}: job {head[0]} needs 3 seen and 3 held cores")
            jobs.append(Job(name, head[0], head[1], head[2], tuple(k.strip() for k in head[3].split(",")), seen, held))
            head, seen = None, ()
        elif tag == "=":
            a, b = (x.strip() for x in rest.split("~"))
            pairs.append((a, b))
        elif tag == "?":
            misses += _split(rest)
        else:
            parts = [p.strip() for p in line.split("|")]
            if len(parts) != 4:
                raise CatalogueError(f"catalogue line {n}: a job line has 4 fields: {line[:60]}")
            head = parts
    close()
    merged: dict[str, Domain] = {}
    for d in domains:  # a domain may be opened again further down the catalogue
        m = merged.get(d.name)
        merged[d.name] = d if m is None else Domain(d.name, m.jobs + d.jobs, m.pairs + d.pairs,
                                                     m.near_misses + d.near_misses)
    _check(list(merged.values()))
    return list(merged.values())


def _check(domains: Sequence[Domain]) -> None:
    names = [j.name for d in domains for j in d.jobs]
    dupes = sorted({x for x in names if names.count(x) > 1})
    if dupes:
        raise CatalogueError(f"catalogue: job names used twice: {dupes}")
    bad = [x for x in names if len(x) > NAME_MAX or not NAME_RE.fullmatch(x)]
    if bad:
        raise CatalogueError(f"catalogue: invalid skill names: {bad}")
    for d in domains:
        own = {j.name for j in d.jobs}
        for a, b in d.pairs:
            if a not in own or b not in own:
                raise CatalogueError(f"catalogue: pair {a} ~ {b} is not two jobs of domain {d.name}")


def catalogue() -> list[Domain]:
    return parse_catalogue(_data("synth_catalogue.txt"))


@cache
def _data(name: str) -> str:
    """A data file of this module (skillforge/testing/data/, shipped in the wheel)."""
    return resources.files("skillforge.testing").joinpath("data", name).read_text(encoding="utf-8")


def _none_data() -> dict[str, list]:
    """The NONE utterances: {"chitchat": [...], "other_domains": [...], "trivia": [[template, [x, ...]], ...]}."""
    return json.loads(_data("synth_none.json"))


# ---- selection and queries -------------------------------------------------------------------
def _select(domains: Sequence[Domain], n_skills: int, n_pairs: int,
            rng: random.Random) -> tuple[list[Job], list[tuple[str, str]]]:
    """n_pairs whole pairs, then singles up to n_skills. Of a pair not chosen only its first
    member may be picked, so that no unlabelled near duplicate enters the library."""
    jobs = [j for d in domains for j in d.jobs]
    pairs = [p for d in domains for p in d.pairs]
    if not 0 <= n_pairs <= len(pairs):
        raise CatalogueError(f"near_duplicate_pairs must be 0..{len(pairs)}, not {n_pairs}")
    chosen = sorted(rng.sample(pairs, n_pairs))
    in_pair = {x for p in chosen for x in p}
    left_out = {b for a, b in pairs if (a, b) not in chosen}
    pool = [j.name for j in jobs if j.name not in in_pair and j.name not in left_out]
    need = n_skills - 2 * n_pairs
    if need < 0 or need > len(pool):
        raise CatalogueError(f"cannot make {n_skills} skills with {n_pairs} near-duplicate pairs: the catalogue "
                             f"has {len(pool)} other jobs")
    keep = in_pair | set(rng.sample(pool, need))
    return [j for j in jobs if j.name in keep], chosen


def _fill(frame: str, core: str) -> str:
    return frame.format(c=core, C=core[:1].upper() + core[1:])


def _round_robin(cores: Sequence[str], frames: Sequence[str], rounds: int, rng: random.Random) -> list[str]:
    """Round r takes each core in turn with a frame it has not had yet."""
    orders = [rng.sample(list(frames), len(frames)) for _ in cores]
    return [_fill(orders[i][r], c) for r in range(rounds) for i, c in enumerate(cores)]


def _job_queries(job: Job, rng: random.Random) -> tuple[list[str], list[str], list[str], list[str]]:
    """(examples, train, dev, test) of one job."""
    seen_f, held_f = (SEEN_FRAMES_ZH, HELD_FRAMES_ZH) if job.zh else (SEEN_FRAMES_EN, HELD_FRAMES_EN)
    seen = _round_robin(job.seen, seen_f, 3, rng)
    dev = _round_robin(job.held[:1], held_f, DEV_PER_SKILL, rng)
    test = _round_robin(job.held[1:], held_f, TEST_PER_SKILL // 2, rng)
    return seen[:EXAMPLES], seen[EXAMPLES:EXAMPLES + TRAIN_PER_SKILL], dev, test


def _skill(job: Job, examples: list[str], partner: Job | None) -> SkillFile:
    not_for = [f"{partner.short} ({partner.name})"] if partner is not None else []
    if job.zh:
        body = (f"## Overview\n{job.description}\n\n## Instructions\n1. 先确认用户的具体需求和必要信息。\n"
                f"2. 完成任务：{job.short}。\n3. 用中文给出清晰的结果。\n")
    else:
        body = (f"## Overview\n{job.description}\n\n## Instructions\n1. Confirm what the user needs and ask for "
                f"missing details.\n2. Do the job: {job.short}.\n3. Answer concisely.\n")
    if partner is not None:
        body += f"\n## Constraints\nNot for {partner.short}: that is {partner.name}.\n"
    return SkillFile(name=job.name, description=job.description, keywords=list(job.keywords),
                     examples=examples, not_for=not_for, metadata={"version": "1.0.0", "domain": job.domain},
                     body=body)


def _none_pools(domains: Sequence[Domain], rng: random.Random) -> tuple[list[str], list[str], list[str]]:
    """NONE base utterances split between train, dev and test (no utterance in two splits)."""
    none = _none_data()
    base = list(dict.fromkeys([*(m for d in domains for m in d.near_misses), *none["chitchat"],
                               *none["other_domains"], *_trivia(none["trivia"])]))
    rng.shuffle(base)
    a = round(len(base) * NONE_SPLIT[0])
    b = a + round(len(base) * NONE_SPLIT[1])
    return base[:a], base[a:b], base[b:]


def _none_queries(pool: list[str], count: int, rng: random.Random) -> list[str]:
    """`count` NONE queries from `pool`: each utterance once, then framed variants when short."""
    out = rng.sample(pool, min(count, len(pool)))
    while len(out) < count:
        u = rng.choice(pool)
        frames = NONE_FRAMES_ZH if _CJK.search(u) else NONE_FRAMES_EN
        v = rng.choice(frames).format(u=u)
        if v not in out:
            out.append(v)
    return out


def _trivia(templates: list[list]) -> list[str]:
    return [template.format(x=x) for template, fillers in templates for x in fillers]


def _with_none(rng: random.Random, labelled: list[Labelled], pool: list[str], share: float) -> list[Labelled]:
    count = round(len(labelled) * share / (1 - share))
    out = labelled + [(q, None) for q in _none_queries(pool, count, rng)]
    rng.shuffle(out)
    return out


def synth_library(n_skills: int = N_SKILLS, seed: int = 0,
                  near_duplicate_pairs: int = NEAR_DUPLICATE_PAIRS) -> SynthLibrary:
    """The library of `seed`: `n_skills` skills of which `near_duplicate_pairs` pairs are near
    duplicates, and labelled train / dev / test queries (about 25 % NONE in dev and test)."""
    rng = random.Random(seed)
    domains = catalogue()
    jobs, pairs = _select(domains, n_skills, near_duplicate_pairs, rng)
    by_name = {j.name: j for j in jobs}
    partner = {a: by_name[b] for a, b in pairs} | {b: by_name[a] for a, b in pairs}
    skills, train, dev, test = [], [], [], []
    for job in jobs:
        ex, tr, dv, ts = _job_queries(job, rng)
        skills.append(_skill(job, ex, partner.get(job.name)))
        train += [(q, job.name) for q in tr]
        dev += [(q, job.name) for q in dv]
        test += [(q, job.name) for q in ts]
    none_train, none_dev, none_test = _none_pools(domains, rng)
    return SynthLibrary(skills=skills, train=_with_none(rng, train, none_train, TRAIN_NONE_SHARE),
                        dev=_with_none(rng, dev, none_dev, NONE_SHARE),
                        test=_with_none(rng, test, none_test, NONE_SHARE),
                        pairs=pairs, domains={j.name: j.domain for j in jobs}, seed=seed)


# ---- on disk ---------------------------------------------------------------------------------
def write_jsonl(path: Path, labelled: Sequence[Labelled]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"query": q, "expected": e}, ensure_ascii=False) + "\n"
                            for q, e in labelled), encoding="utf-8")
    return path


def write_workspace(lib: SynthLibrary, root: Path) -> dict[str, Path]:
    """Write root/skills/<name>/SKILL.md for every skill and root/evaluation_sets/synth_<split>.jsonl
    for train, dev, test and train_dev (train + dev: what calibrate / fit learn from). Returns the
    paths by split (and "skills"). `skillforge init` is not run: the caller makes it a workspace
    (git repository, runs/) if it wants the CLI."""
    skills_dir = root / "skills"
    for skill in lib.skills:
        folder = skills_dir / skill.name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / skillfile.SKILL_FILENAME).write_text(skillfile.render(skill), encoding="utf-8")
    sets = root / "evaluation_sets"
    out = {"skills": skills_dir}
    for split, labelled in (("train", lib.train), ("dev", lib.dev), ("test", lib.test),
                            ("train_dev", lib.train + lib.dev)):
        out[split] = write_jsonl(sets / f"synth_{split}.jsonl", labelled)
    return out
