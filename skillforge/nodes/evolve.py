"""Nodes of the evolve graph: collect -> analyze -> propose -> check -> validate -> decide ->
publish | review | suggest (or back to propose; those three are in nodes/outcome.py). Each reads
the state and the EvolveContext, calls a service in `skillforge.evolution` or a pure rule, and
returns what changed.

Budget: each node that calls a model runs under `_metered` (nodes/evolve_base.py), which points
the LLM at the run's rows of the workspace's request ledger and the caps in the state. Every
request is counted there before it is sent, so a pause, a kill or a resume never resets the count.
A hard cap pauses the run with `interrupt({"kind": "budget", ...})`; resuming it with new caps
re-runs the node, whose earlier calls are answered from the cache (counted as cached, not paid).
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from skillforge.context import EvolveContext
from skillforge.evaluation.datasets import load_sets, proposer_bundle
from skillforge.evolution import archive, harvest, memory, propose as proposing, validate as validating
from skillforge.evolution.analyze import analyze as find_cause
from skillforge.evolution.check import check_candidate, leak_context
from skillforge.evolution.vet import Vet, vet_l1
from skillforge.evolution.preflight import graph_thread, require_cases, require_new_run
from skillforge.nodes.answers import CAPS_EXAMPLE, ask
from skillforge.nodes.evolve_base import _live, _metered, _published, _recorded, _round, mode_for
from skillforge.journal import utc_now as now
from skillforge.rules import outage
from skillforge.rules.evolve_budget import estimate_round
from skillforge.rules.memory import choose_format
from skillforge.rules.names import name_refusal
from skillforge.rules.levels import semantic_diff
from skillforge.rules.selection import (ReleaseRoute, holdout_check, needs_vet, release_route, select, vetted_route,
                                       visible_pass)
from skillforge.skill.file import parse
from skillforge.state.evaluate import Case, Partition, SkillSide
from skillforge.state.evolve import Attempt, Baseline, Candidate, CandidateKind, CandidateVerdict, EvolveDecision, \
    EvolveMode, EvolveState, EvolveStatus, FormatOutcome
from skillforge.state.llm import BudgetCaps, BudgetLedger, Role
from skillforge.state.result import EvalVerdict
from skillforge.library.store import Store
from skillforge.llm.config import LOCAL_SOURCE, evolve_neighbours, evolve_settings, proposer_format


def collect(state: EvolveState, runtime: Runtime[EvolveContext]) -> dict[str, object]:
    """Reads skill. Writes base_release_id / base_version / baseline (the live release and its
    SKILL.md: what the run works on), sets (the workspace's, read once for the round), failures
    (effective failures of the live release from recent traces, then the reviewed session cases of the live release no evaluation has run since; near-duplicates removed), harvested (new `<skill>_auto_NN` repair cases) and, with no failures,
    status NO_FAILURES. Before any model call, the skill must have holdout cases (MissingCases) and
    the round's estimate must fit the budget (else a BUDGET pause); writes budget (the caps). First of
    all, RunIdTaken when another run already used the run id (preflight.require_new_run). Writes started_at when the input has none."""
    ctx = EvolveContext.of(runtime)
    require_new_run(ctx.ws, state.run_id, graph_thread())
    evolve_settings(ctx.ws)  # the settings later nodes read, before any request (QA 42 F1)
    reg, text, release_id = _live(ctx, state.skill)
    sets = load_sets(ctx.ws)
    failures = harvest.effective_failures(ctx.ws, state.skill, release_id, sets)
    failures += harvest.session_failures(ctx.ws, state.skill, release_id, sets, {f.case.id for f in failures})
    failures = failures[:harvest.MAX_FAILURES]
    if not failures:
        return {"status": EvolveStatus.NO_FAILURES,
                "message": "no effective failures of the live release in the traces or in reviewed session cases"}
    ids, sets = harvest.harvest(ctx.ws, state.skill, failures, sets)
    base = {"base_release_id": release_id, "base_version": reg.get(state.skill).release.version,
            "baseline": Baseline(release_id=release_id, text=text), "sets": sets, "started_at": state.started_at or now()}
    by_query = {" ".join(c.query.casefold().split()): c for s in sets.values() for c in s.cases}
    renamed = [f.model_copy(update={"case": by_query.get(" ".join(f.case.query.casefold().split()), f.case)})
               for f in failures]
    if state.mode is not EvolveMode.AUDIT_ONLY:
        failing = {f.case.id for f in renamed}
        p0 = sum(1 for s in sets.values() for c in s.cases if c.skill == state.skill and c.id not in failing
                 and (c.p0 or s.meta.partition is Partition.P0))
        holdout = require_cases(ctx.ws, state.skill, state.run_id, sets)
        est = estimate_round(len(renamed), p0, holdout, neighbours=validating.neighbour_limit(
            evolve_neighbours(ctx.ws), ctx.llm.configs[Role.PROPOSER].source == LOCAL_SOURCE))
        caps = state.budget.caps
        spent = ctx.llm.ledger.bind(state.run_id, caps).totals()
        fits, why = est.fits(caps, spent.calls, spent.tokens + spent.reserved_tokens)
        while not fits:  # before any model call: pause until resumed with caps the round fits in
            caps = _recorded(ctx, state, ask({"kind": "budget", "run_id": state.run_id,
                                              "reason": f"estimate above budget: {why}",
                                              "estimate": {"calls": est.calls, "tokens": est.tokens},
                                              "caps": caps.model_dump()}, BudgetCaps, CAPS_EXAMPLE))
            fits, why = est.fits(caps, spent.calls, spent.tokens + spent.reserved_tokens)
        return {**base, "failures": renamed, "harvested": ids, "budget": BudgetLedger(caps=caps)}
    return {**base, "failures": renamed, "harvested": ids}


def after_collect(state: EvolveState) -> str:
    return "end" if state.status is EvolveStatus.NO_FAILURES else "analyze"


def analyze(state: EvolveState, runtime: Runtime[EvolveContext]) -> dict[str, object]:
    """Reads failures, baseline. Writes root_cause (category + cited case ids) and budget; in
    audit_only mode also writes the findings file and status AUDITED."""
    ctx = EvolveContext.of(runtime)
    base, _, kept = _round(ctx, state)
    cause, ledger = _metered(state, ctx, lambda: find_cause(ctx.llm, base.text, state.failures))
    update: dict[str, object] = {**kept, "root_cause": cause, "budget": ledger}
    if state.mode is EvolveMode.AUDIT_ONLY:
        path = archive.write_audit(ctx.ws, state.model_copy(update={"root_cause": cause}))
        update.update(status=EvolveStatus.AUDITED, failure_report=str(path), message=f"findings written to {path}")
    return update


def after_analyze(state: EvolveState) -> str:
    return "end" if state.status is EvolveStatus.AUDITED else "propose"


def propose(state: EvolveState, runtime: Runtime[EvolveContext]) -> dict[str, object]:
    """Reads root_cause, failures, feedback, baseline, sets. Writes round + 1, candidates (applied, or
    refused with the reason) and budget. The proposer sees only the proposer bundle (no holdout, no
    final_audit) and the skill's rejected-edit buffer (runs/rejected/<skill>.jsonl, scanned against
    holdout and final_audit before it is shown). The round's format comes from the proposer.format
    setting (`rules/memory.choose_format`); how many candidates applied is recorded in
    runs/proposer_formats.jsonl for `auto`."""
    ctx = EvolveContext.of(runtime)
    base, sets, kept = _round(ctx, state)
    bundle = proposer_bundle(sets)
    assert state.root_cause is not None
    round_no = state.round + 1
    cfg = ctx.llm.configs[Role.PROPOSER]
    model = " ".join(str(x) for x in cfg.identity)
    fmt = choose_format(proposer_format(ctx.ws), cfg.source == LOCAL_SOURCE, memory.read_formats(ctx.ws), model,
                        state.run_id, round_no)
    tried = memory.tried_before(ctx.ws, state.skill, state.run_id, sets)
    (cands, note), ledger = _metered(state, ctx, lambda: proposing.propose(
        ctx.llm, round_no, base.text, state.skill, state.root_cause, state.failures, bundle, state.feedback,  # type: ignore[arg-type]
        fmt=fmt, tried=tried))
    memory.record_format(ctx.ws, FormatOutcome(model=model, run_id=state.run_id, round=round_no, format=fmt,
                                               proposed=len(cands), applied=sum(c.text is not None for c in cands)))
    notes = [*state.proposer_notes, f"round {round_no}: {note}"] if note else state.proposer_notes
    down = [*state.proposer_down, round_no] if note.startswith(proposing.PROPOSER_DOWN) else state.proposer_down
    # the run's message is overwritten by later nodes; proposer_notes keeps it (never a candidate's note)
    return {**kept, "round": round_no, "candidates": cands, "budget": ledger, "selected": None, "decision": None,
            "history": state.history + state.candidates, "message": note, "proposer_notes": notes,
            "proposer_down": down}


def check(state: EvolveState, runtime: Runtime[EvolveContext]) -> dict[str, object]:
    """Reads candidates, fingerprints, baseline, sets (after a rebase: reads and writes the new base's
    baseline and the sets) and the skill's rejected-edit buffer. Writes each candidate's computed
    level, semantic-diff parts, leak findings, fingerprint and (if stopped) verdict; a candidate an
    earlier run was refused for is DUPLICATE, rejected_by rejected_before; fingerprints += the new ones."""
    ctx = EvolveContext.of(runtime)
    base, sets, kept = _round(ctx, state)
    leaks = leak_context(ctx.ws, sets)
    unjudged = {h.fingerprint for h in state.history if h.verdict is CandidateVerdict.UNJUDGED}
    seen = [f for f in state.fingerprints if f not in unjudged]  # never measured: may be tried again
    remembered = memory.remembered(ctx.ws, state.skill, state.run_id)
    out: list[Candidate] = []
    for c in state.candidates:
        own = _rebased_from(state, c)
        checked = check_candidate(c, base.text, state.skill, leaks, [f for f in seen if f not in own], remembered)
        if checked.fingerprint:
            seen.append(checked.fingerprint)
        out.append(_name_checked(ctx, state, checked))
    return {**kept, "candidates": out, "fingerprints": seen}


def _rebased_from(state: EvolveState, c: Candidate) -> set[str]:
    """The fingerprints of the candidate `c` re-applies when it is a rebase (`r1c1-rebase1` of
    `r1c1`, and its earlier rebases): not another proposal it repeats. When the new live release
    changed only other files, the re-applied SKILL.md is the candidate's own text again, and was
    refused as a DUPLICATE of itself."""
    root, _, n = c.id.rpartition("-rebase")
    if not root or not n.isdigit():
        return set()
    return {h.fingerprint for h in [*state.history, *state.candidates]
            if h.fingerprint and h.id != c.id and (h.id == root or h.id.startswith(f"{root}-rebase"))}


def _name_checked(ctx: EvolveContext, state: EvolveState, c: Candidate) -> Candidate:
    """A DERIVED / CAPTURED candidate that would take an existing skill's name is refused here, so
    it never reaches validation or a reviewer (publish refuses it again)."""
    if c.verdict is not CandidateVerdict.PENDING or c.kind is CandidateKind.FIX:
        return c
    why = name_refusal(archive.name_verdict(ctx.ws, Store(ctx.ws.db_path), state, c), c.kind, c.target)
    if not why:
        return c
    return c.model_copy(update={"verdict": CandidateVerdict.REFUSED, "rejected_by": "name", "notes": [*c.notes, why]})


def validate(state: EvolveState, runtime: Runtime[EvolveContext], *,
             subgraphs: validating.Subgraphs) -> dict[str, object]:
    """Reads candidates, baseline, sets. Writes each surviving candidate's validation (routing for
    metadata edits; the evaluation subgraph on failures + neighbours + P0 for all), selects the best
    that passed, and runs only that one once on holdout. Writes selected and budget. `subgraphs`:
    the evaluate graph and the router, given by the graph's wiring."""
    ctx = EvolveContext.of(runtime)
    base, sets, kept = _round(ctx, state)

    def work() -> tuple[list[Candidate], str | None, list[Case]]:
        others, published = _published(ctx)
        skill_cases = [(s.meta.partition, c) for s in sets.values() for c in s.cases if c.skill == state.skill]
        p0 = [c for part, c in skill_cases if c.p0 or part is Partition.P0]
        holdout = [c for part, c in skill_cases if part is Partition.HOLDOUT]
        targeted = [f.case for f in state.failures]
        limit = validating.neighbour_limit(evolve_neighbours(ctx.ws),
                                           ctx.llm.configs[Role.PROPOSER].source == LOCAL_SOURCE)
        nbs = state.neighbours or validating.neighbours(ctx.llm, state.failures, [c.query for _, c in skill_cases],
                                                        limit=limit)
        selection_cases = list({c.id: c for c in [*targeted, *nbs, *p0]}.values())
        baseline = SkillSide(text=base.text, release_id=base.release_id, label="live")
        out: list[Candidate] = []
        for c in state.candidates:
            if c.verdict is not CandidateVerdict.PENDING or c.text is None:
                out.append(c)
                continue
            validation = dict(c.validation)
            if c.metadata_only:
                validation["routing"] = validating.routing_check(
                    subgraphs.route, ctx.ws, ctx.get_embedder(), published, state.skill,
                    parse(c.text, "SKILL.md", c.target))
            if validation.get("routing") is None or validation["routing"].verdict is EvalVerdict.PASS:
                validation["selection"] = validating.evaluate_cases(
                    subgraphs.evaluate, ctx.llm, others, f"{state.run_id}-{c.id}-selection", "selection", state.skill,
                    selection_cases, baseline, SkillSide(text=c.text, label=c.id), ws=ctx.ws, mode=mode_for(c))
            ok, why = visible_pass(validation.get("selection"), validation.get("routing"))
            if validation.get("routing") is not None and validation["routing"].verdict is not EvalVerdict.PASS:
                why = "routing: " + "; ".join(validation["routing"].reasons)
            update: dict[str, object] = {"validation": validation}
            if not ok:
                blind = outage.unjudged(validation)  # an endpoint failed: no verdict on the edit
                update.update(verdict=CandidateVerdict.UNJUDGED if blind else CandidateVerdict.FAILED_VALIDATION,
                              rejected_by="routing" if "routing" in why.split(":")[0] else "selection", notes=[*c.notes, why])
            out.append(c.model_copy(update=update))
        passing = [c for c in out if c.verdict is CandidateVerdict.PENDING]
        best = select(passing)
        if best is None:
            return out, None, nbs
        score = validating.evaluate_cases(subgraphs.evaluate, ctx.llm, others, f"{state.run_id}-{best.id}-holdout",
                                          "holdout", state.skill, holdout, baseline,
                                          SkillSide(text=best.text, label=best.id), partition=Partition.HOLDOUT,
                                          ws=ctx.ws, mode=mode_for(best))
        confirmation = holdout_check(score)  # both conditions (improves, no LOSS) go to the notes
        holds = confirmation.holds
        final: list[Candidate] = []
        for c in out:
            if c.id == best.id:
                upd: dict[str, object] = {"validation": {**c.validation, "holdout": score}}
                upd.update({"verdict": CandidateVerdict.PASSED, "notes": [*c.notes, confirmation.summary]} if holds else
                           {"verdict": CandidateVerdict.HOLDOUT_LOSS, "rejected_by": "holdout",
                            "notes": [*c.notes, confirmation.summary, confirmation.why]})
                final.append(c.model_copy(update=upd))
            elif c.verdict is CandidateVerdict.PENDING:
                final.append(c.model_copy(update={"verdict": CandidateVerdict.NOT_SELECTED}))
            else:
                final.append(c)
        return final, best.id if holds else None, nbs

    (cands, selected, nbs), ledger = _metered(state, ctx, work)
    return {**kept, "candidates": cands, "selected": selected, "budget": ledger, "neighbours": nbs}


def leak_kinds(leaks: list[str]) -> list[str]:
    """What the next round may hear of a leak: its kind only. A finding's evidence and source name
    the eval text it matched (a holdout query, a case id), which the proposer must never be shown."""
    kinds = sorted({f.split(":", 1)[0] for f in leaks})
    return [f"leak: {', '.join(kinds)} (the copied eval text is not repeated here)"] if kinds else []


def decide(state: EvolveState, runtime: Runtime[EvolveContext], *,
           subgraphs: validating.Subgraphs) -> dict[str, object]:
    """Reads candidates, selected, mode, round (baseline, sets for a review). Writes decision:
    publish (L1), review (L2, after a final_audit run on `subgraphs.evaluate`), suggest (L3 /
    fix_only), retry (back to propose with feedback) or stop (NO_IMPROVEMENT); failed candidates
    are archived to runs/failures/<run>.md."""
    ctx = EvolveContext.of(runtime)
    chosen = next((c for c in state.candidates if c.id == state.selected), None)
    failed = [c for c in state.candidates if c.id != state.selected]
    update: dict[str, object] = {}
    if failed or chosen is None:
        update["failure_report"] = str(archive.write_failures(ctx.ws, state))
    if chosen is None:
        feedback = state.feedback + [Attempt(round=state.round, candidate_id=c.id, rationale=c.rationale,
                                             rejected_by=c.rejected_by or "unknown",
                                             why="; ".join([*c.notes[-2:], *leak_kinds(c.leaks)])[:400])
                               for c in state.candidates]
        if state.round < state.max_rounds:
            return {**update, "decision": EvolveDecision.RETRY, "feedback": feedback}
        return {**update, "decision": EvolveDecision.STOP, "feedback": feedback, "status": EvolveStatus.NO_IMPROVEMENT,
                "message": outage.no_improvement(state.round, [*state.history, *state.candidates],
                                                 state.proposer_notes, state.proposer_down)}
    configs = ctx.llm.configs
    self_graded = configs[Role.JUDGE].model_key == configs[Role.PROPOSER].model_key
    route = release_route(chosen.level, chosen.kind, state.mode, self_graded=self_graded)
    if self_graded and route is ReleaseRoute.REVIEW and chosen.level == 1:
        update["message"] = "the judge is the proposer's own model: an L1 change waits for a person"
    cands = state.candidates
    if needs_vet(route, chosen.level, chosen.kind):
        vet, update["budget"] = _metered(state, ctx, lambda: _vet(ctx, state, chosen))
        route = vetted_route(route, vet.safe)
        chosen = chosen.model_copy(update={"notes": [*chosen.notes, vet.note]})
        cands = [chosen if c.id == chosen.id else c for c in cands]
        update["candidates"] = cands
        if not vet.safe:
            update["message"] = vet.note
    if route is ReleaseRoute.REVIEW:
        base, sets, kept = _round(ctx, state)
        others, _ = _published(ctx)
        live = SkillSide(text=base.text, release_id=base.release_id, label="live")
        audit = [c for s in sets.values() if s.meta.partition is Partition.FINAL_AUDIT
                 for c in s.cases if c.skill == state.skill]

        def run_audit() -> object:
            return validating.evaluate_cases(subgraphs.evaluate, ctx.llm, others,
                                             f"{state.run_id}-{chosen.id}-final_audit", "final_audit", state.skill,
                                             audit, live, SkillSide(text=chosen.text, label=chosen.id),
                                             partition=Partition.FINAL_AUDIT, ws=ctx.ws, mode=mode_for(chosen))
        score, ledger = _metered(state, ctx, run_audit)
        cands = [c.model_copy(update={"validation": {**c.validation, "final_audit": score}}) if c.id == chosen.id else c
                 for c in cands]
        audited = next(c for c in cands if c.id == chosen.id)
        archive.write_review(ctx.ws, state, audited)
        return {**update, **kept, "decision": EvolveDecision(route), "candidates": cands, "budget": ledger}
    return {**update, "decision": EvolveDecision(route)}


def _vet(ctx: EvolveContext, state: EvolveState, chosen: Candidate) -> Vet:
    """The L1 vet of the chosen candidate against the run's base (evolution/vet.py)."""
    base, _, _ = _round(ctx, state)
    parent = parse(base.text, "SKILL.md", state.skill)
    return vet_l1(ctx.llm, parent, semantic_diff(parent, parse(chosen.text or "", "SKILL.md", chosen.target)))


def after_decide(state: EvolveState) -> str:
    return {EvolveDecision.RETRY: "propose", EvolveDecision.PUBLISH: "publish", EvolveDecision.REVIEW: "review",
            EvolveDecision.SUGGEST: "suggest"}.get(state.decision, "end")  # type: ignore[arg-type]
