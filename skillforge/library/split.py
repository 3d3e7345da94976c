"""`skills split NAME`: measure a skill's couplings on its evaluation cases (rules/split.py), build the
DERIVED children from its SKILL.md (skill/derive.py), route-test them, and publish them with the
parent retired in one transaction (publish_children).

The route test routes each child's own cases (the cases of exactly one intent) over the library as
it would be after the split (the live skills without the parent, plus the children), with the rule
and embed layers as the live router runs them (a calibrated or fitted router as it is, else the
auto head computed in memory: nothing is written), no LLM layer and no router log. Each child must
capture rules.split.MIN_CAPTURE of its cases, or nothing is published.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from skillforge.context import RouteContext
from skillforge.errors import BadArgument, NameTaken, SplitRefused
from skillforge.evaluation.datasets import cases_for, load_sets
from skillforge.library.canaries import Canaries
from skillforge.library.releases import Interrupted, ReleaseStateMachine, checkpoint
from skillforge.library.services import Services
from skillforge.library.orphans import SPLIT_OF
from skillforge.library.splitlinks import SPLIT_KIND, SPLIT_TRIGGER
from skillforge.routing.defaults import apply_auto
from skillforge.routing.embedding import VECTORS_FILE, Embedder, VectorCache
from skillforge.routing.index import RouteIndex
from skillforge.rules.split import capture_refusals, decide, file_owners, nearest_intent
from skillforge.rules.splitcases import split_shares
from skillforge.skill import file as skillfile
from skillforge.skill.derive import Children, derive_children
from skillforge.skill.tree import Entry, Files, Tree
from skillforge.state.evaluate import Case
from skillforge.state.release import LineageKind, Release, ReleaseStatus, Retirement
from skillforge.state.route import RouteState
from skillforge.state.skill import NAME_MAX, NAME_RE, SkillFile
from skillforge.state.split import CaptureShare, SplitCase, SplitDecision, SplitVerdict

Router = Callable[[str, RouteContext], RouteState]
"""Routes one query with the given context (graphs/route.route_plain, given by the CLI)."""
NO_SKILL = "NONE"


@dataclass
class SplitPlan:
    """What `skills split NAME` measured and proposes."""

    parent: SkillFile
    release: Release
    """The parent's live release: the split is measured on it, and published only while it is live."""
    cases: dict[str, Case]
    decision: SplitDecision
    names: dict[str, str] = field(default_factory=dict)
    """Intent -> child name (a SPLIT only)."""
    children: Children | None = None
    shares: list[CaptureShare] = field(default_factory=list)
    tree: Tree = field(default_factory=dict)
    """The parent's files beside SKILL.md, as its live release holds them."""
    files: dict[str, list[str]] = field(default_factory=dict)
    """Child name -> the parent's files beside SKILL.md it takes (rules.split.file_owners)."""
    unnamed_files: list[str] = field(default_factory=list)
    """The files no child names: given to every child, for the reviewer."""

    @property
    def own_cases(self) -> dict[str, list[str]]:
        """Intent -> the ids of the cases in that intent only (what its child's route test routes)."""
        count = Counter(cid for i in self.decision.intents for cid in i.case_ids)
        return {i.name: [cid for cid in i.case_ids if count[cid] == 1] for i in self.decision.intents}

    @property
    def refusals(self) -> list[str]:
        """Why it may not be published (empty: it may)."""
        if self.decision.verdict is SplitVerdict.REFUSE:
            return list(self.decision.reasons)
        return capture_refusals(self.shares)


def skill_cases(svc: Services, skill: str) -> list[Case]:
    """Every evaluation case of `skill` in the workspace's sets, once each, by set name."""
    out: dict[str, Case] = {}
    for _, eval_set in sorted(load_sets(svc.ws).items()):
        for c in cases_for(eval_set, skill):
            out.setdefault(c.id, c)
    return list(out.values())


def child_names(svc: Services, parent: str, intents: list[str], given: list[str] | None) -> list[str]:
    """`<parent>-<intent>` each, or the names given (one per intent, in the intents' order).
    BadArgument for a wrong count or name; NameTaken for a skill or a folder that exists."""
    names = given if given is not None else [f"{parent}-{i}" for i in intents]
    if len(names) != len(intents):
        raise BadArgument(f"--names gives {len(names)} name(s); the split has {len(intents)} intents "
                          f"({', '.join(intents)}), in this order")
    for n in names:
        if not NAME_RE.fullmatch(n) or len(n) > NAME_MAX:
            raise BadArgument(f"'{n}' is not a skill name (a-z, 0-9 and single hyphens, at most {NAME_MAX} "
                              "characters); give the children's names with --names a,b")
    if len(set(names)) != len(names) or parent in names:
        raise BadArgument(f"the children need distinct names other than '{parent}': {', '.join(names)}")
    for n in names:
        svc.machine.recover(n)  # a split killed half-way left this name PREPARING: abandoned, its folder removed
        if (svc.ws.skills_dir / n).exists() or any(r.status not in (ReleaseStatus.ABANDONED, ReleaseStatus.DECLINED)
                                                    for r in svc.store.releases(n)):
            raise NameTaken(f"'{n}' is already a skill or a folder under skills/; give other names with --names")
    return names


class NearestIntent:
    """The intent whose cases' queries are nearest to a text (mean cosine), by rules.split.nearest_intent."""

    def __init__(self, embedder: Embedder, cache: VectorCache, queries: dict[str, list[str]]) -> None:
        self.embedder, self.cache = embedder, cache
        self.vectors = {name: cache.embed(embedder, qs) for name, qs in queries.items() if qs}

    def __call__(self, text: str) -> str | None:
        vec = self.cache.embed(self.embedder, [text])[0]
        return nearest_intent({name: float(np.mean(v @ vec)) for name, v in self.vectors.items()})


def plan_split(svc: Services, name: str, embedder: Embedder, names: list[str] | None = None) -> SplitPlan:
    """Measure the split of the live skill `name` and, if the rule proposes it, build the children."""
    published = svc.registry.get(name)  # UnknownSkill, SkillRetired, a broken file's error
    cases = skill_cases(svc, name)
    decision = decide([SplitCase(id=c.id, query=c.query, tools=sorted(c.fixtures), tags=list(c.tags)) for c in cases],
                      published.skill.keywords, published.skill.body)
    plan = SplitPlan(parent=published.skill, release=published.release, cases={c.id: c for c in cases},
                     decision=decision)
    if decision.verdict is SplitVerdict.REFUSE:
        return plan
    intents = [i.name for i in decision.intents]
    plan.names = dict(zip(intents, child_names(svc, name, intents, names), strict=True))
    nearest = NearestIntent(embedder, VectorCache(svc.ws.runs_dir / VECTORS_FILE),
                            {i: [plan.cases[c].query for c in ids] for i, ids in plan.own_cases.items()})
    plan.children = derive_children(published.skill, decision.intents, list(plan.names.values()), nearest)
    texts = {}
    for child_name, child in plan.children.files.items():  # each child must load as a skill of its own
        label = f"skills/{child_name}/{skillfile.SKILL_FILENAME}"
        texts[child_name] = skillfile.render(child)
        skillfile.parse(texts[child_name], label, child_name)
    if published.release.commit_hash:  # the files beside SKILL.md follow the children that name them (F1)
        plan.tree = {p: e for p, e in svc.machine.tree_of(published.release).items() if p != skillfile.SKILL_FILENAME}
    plan.files, plan.unnamed_files = file_owners(plan.tree, texts)
    return plan


def child_trees(plan: SplitPlan) -> dict[str, Tree]:
    """Each child's whole folder: its SKILL.md and the parent's files it takes."""
    assert plan.children is not None
    return {n: {skillfile.SKILL_FILENAME: Entry(skillfile.render(f).encode("utf-8")),
                **{p: plan.tree[p] for p in plan.files.get(n, [])}} for n, f in plan.children.files.items()}


def child_findings(plan: SplitPlan) -> tuple[list[str], list[str]]:
    """What the publish gates find in the children's files, before anything is written (QA 23 F13):
    the secret scan `release publish` runs on added files (skill/secrets.tree_secrets), and hidden
    characters (rules/hidden.py, which `skills new` refuses) in each SKILL.md, raw on a line or in a
    field's value, and in the files beside it the child takes (file:line:column and the character's
    name, skill/chars.tree_hidden). One line each: file, line and kind, never the value."""
    from skillforge.rules.hidden import file_rules, hidden_characters, hidden_in, line_rules
    from skillforge.skill.chars import tree_hidden
    from skillforge.skill.secrets import tree_secrets

    secrets: list[str] = []
    hidden: list[str] = []
    assert plan.children is not None
    for child, tree in child_trees(plan).items():
        secrets += [f"skills/{child}/{f.describe()}" for f in tree_secrets(tree)]
        text = tree[skillfile.SKILL_FILENAME].data.decode("utf-8", errors="replace")
        found = hidden_characters(text)
        hidden += [f"skills/{child}/{skillfile.SKILL_FILENAME}: {rule}" for _, rule in line_rules(found)]
        seen = {h.char for h in found}
        data = plan.children.files[child].model_dump(include={"description", "use_when", "keywords", "examples", "not_for"})
        for fld, value in data.items():
            chars = [ch for v in (value if isinstance(value, list) else [value or ""]) for ch in hidden_in(v) if ch not in seen]
            if chars:
                hidden.append(f"skills/{child}/{skillfile.SKILL_FILENAME}: {fld} holds invisible or control character(s) "
                              f"{', '.join(dict.fromkeys(f'U+{ord(c):04X}' for c in chars))}")
        hidden += [f"skills/{child}/{line}" for line in file_rules(tree_hidden(tree))]
    return secrets, hidden


def route_test(svc: Services, plan: SplitPlan, embedder: Embedder, route: Router) -> list[CaptureShare]:
    """Route each child's own cases over the library after the split; their capture shares."""
    assert plan.children is not None
    after = [p.skill for n, p in svc.registry.skills.items() if n != plan.parent.name]
    index = RouteIndex.build([*after, *plan.children.files.values()], embedder,
                             cache=VectorCache(svc.ws.runs_dir / VECTORS_FILE), ws=svc.ws, use_head=True)
    apply_auto(None, index, use_head=True)  # computed in memory, never kept: this library is not live yet
    ctx = RouteContext(index=index, llm=None, router_log=None, source="skills split",
                       llm_off="the split's route test runs the rule and embed layers only")
    shares = []
    for intent, ids in plan.own_cases.items():
        child = plan.names[intent]
        went = Counter((route(plan.cases[cid].query, ctx).chosen or NO_SKILL) for cid in ids)
        shares.append(CaptureShare(child=child, cases=len(ids), captured=went.pop(child, 0), elsewhere=dict(went)))
    plan.shares = shares
    return shares


def evaluation(plan: SplitPlan, intent: str) -> dict[str, object]:
    """What each child's release records (runs/evaluations.jsonl and its row): the measured split."""
    share = next(s for s in plan.shares if s.child == plan.names[intent])
    d = plan.decision
    return {"kind": SPLIT_KIND, "parent": plan.parent.name, "parent_release": plan.release.release_id,
            "intent": intent, "intent_source": d.source.value, "cases": plan.own_cases[intent],
            "couplings": d.couplings.model_dump() if d.couplings else None, "benefit": d.benefit,
            "route_test": {**share.model_dump(), "share": round(share.share, 3)}}


def publish_split(svc: Services, plan: SplitPlan, interrupted: Interrupted | None = None) -> tuple[list[Release], Retirement]:
    """Publish the children and retire the parent in one transaction; SplitRefused (nothing
    written) if the rule refused the split or a child failed its route test."""
    if plan.refusals or plan.children is None or not plan.shares:
        raise SplitRefused(f"'{plan.parent.name}' is not split: " + "; ".join(plan.refusals or ["no route test ran"]))
    files = child_trees(plan)
    evaluations = {child: evaluation(plan, intent) for intent, child in plan.names.items()}
    return publish_children(svc.machine, plan.parent.name, plan.release.release_id, files, evaluations,
                            triggered_by=SPLIT_TRIGGER + ", ".join(plan.names.values()), interrupted=interrupted)


def cases_after(svc: Services, plan: SplitPlan) -> tuple[dict[str, list[str]], list[str]]:
    """After the split is published, as the workspace's loader reads the sets now (the cases follow
    the children: rules/splitcases.py): each child's case ids, and those that stay with the parent."""
    cases = [c for _, s in sorted(load_sets(svc.ws).items()) for c in s.cases]
    return split_shares(cases, plan.parent.name, plan.names.values())


def publish_children(machine: ReleaseStateMachine, parent: str, parent_release: str, children: Mapping[str, Files],
                     evaluations: Mapping[str, Mapping[str, object]], triggered_by: str,
                     interrupted: Interrupted | None = None) -> tuple[list[Release], Retirement]:
    """Publish each child (a new skill, skills/<name>) as a DERIVED release of `parent_release`
    and retire `parent`, all or nothing: PREPARING rows and a commit per child first, then one
    SQLite transaction (Store.publish_split). On any error every child is abandoned (its folder
    removed when it holds exactly what the child wrote); a crash leaves PREPARING rows that the
    next begin_release or the watchdog abandons. The parent stays live until that transaction.
    CanaryOpen (nothing written) while the parent has an open canary, as for publish and retire."""
    Canaries(machine.store).refuse_open(parent, "split")
    machine.recover(parent)
    rels: list[Release] = []
    try:
        for name, files in children.items():
            rels.append(machine.begin_release(name, kind=LineageKind.DERIVED, parents=[parent_release],
                                              triggered_by=f"{SPLIT_OF}{parent}", folder=machine.ws.skills_dir / name))
            checkpoint(interrupted, rels[-1])
            machine.write_commit(rels[-1].release_id, files)
            machine.append_evaluation(rels[-1].release_id, evaluations[name])
        if rels:
            checkpoint(interrupted, rels[-1])
        retired = machine.store.publish_split([r.release_id for r in rels], parent, parent_release, triggered_by)
    except BaseException:
        for r in rels:
            machine.abandon(r.release_id)
        raise
    machine.release_owner_if_idle()
    return [machine.store.release(r.release_id) for r in rels], retired


__all__ = ["SplitPlan", "cases_after", "child_findings", "child_names", "child_trees", "plan_split", "publish_children", "publish_split", "route_test", "skill_cases"]
