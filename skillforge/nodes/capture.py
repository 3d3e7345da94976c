"""The capture node of the evolve graph: a run started by `skillforge skills new` (state.need set)
goes START -> capture -> review -> publish, never to collect. A new skill is never published
without a person: its candidate is CAPTURED at L2 at least, and the node ends either refused (status
NO_IMPROVEMENT, nothing registered, the reasons and numbers in the message and the failure report)
or waiting in review. Publishing writes its starter sets and router lines (`state.registration`)."""

from __future__ import annotations

from langgraph.runtime import Runtime

from skillforge.context import EvolveContext
from skillforge.errors import LLMError
from skillforge.evaluation.datasets import load_sets
from skillforge.evolution import archive, capture as capturing, heldout, validate as validating
from skillforge.nodes.evolve_base import _metered, _published
from skillforge.rules.fingerprint import fingerprint
from skillforge.rules.redact import redact
from skillforge.rules.levels import Level
from skillforge.state.evolve import Candidate, CandidateKind, CandidateVerdict, EvolveDecision, EvolveState, \
    EvolveStatus, PatchFormatName, SetScore
from skillforge.state.result import EvalVerdict

CANDIDATE_ID = "r1c1"


def _conflict_score(v: capturing.Vetting) -> SetScore | None:
    c = v.conflict
    if c is None:
        return None
    m = c.measures
    held = int(m.get("held_out") or 0)
    return SetScore(name="conflict", cases=int(m.get("probes") or 0) + int(m.get("router_cases") or 0),
                    verdict=EvalVerdict.DECLINED if c.refused else EvalVerdict.PASS, reasons=list(c.reasons) or [
                        f"nearest card {m.get('nearest_card')} at {m.get('nearest_cosine')} (limit {m.get('cosine_max')}); "
                        f"{m.get('captured')} of {held} held-out queries reach it; "
                        f"0 of {m.get('router_cases')} live router cases move to it"],
                    score=(int(m.get("captured") or 0) / held) if held else None,
                    baseline_score=float(m.get("served_share") or 0.0))


def capture(state: EvolveState, runtime: Runtime[EvolveContext], *,
            subgraphs: validating.Subgraphs) -> dict[str, object]:
    """Reads need, need_queries, skill (the new name). Writes round 1, the one CAPTURED candidate
    (text, level, fingerprint, leaks, the conflict measures), and either selected + decision review
    + registration, or status NO_IMPROVEMENT with why."""
    ctx = EvolveContext.of(runtime)
    sets = load_sets(ctx.ws)
    _, published = _published(ctx)
    live = [(n, s.description) for n, s in sorted(published.items())]
    held = heldout.held_out_queries(ctx.ws)  # QA 32 T1: a held-out query is never a model's need
    embed = heldout.cached_embed(ctx.ws, ctx.get_embedder()) if held else None
    copies = heldout.copied_from([state.need, *state.need_queries], held, embed)
    copies[1:] = heldout.split_copies(state.need_queries, held, copies[1:])
    if copies[0] is not None:
        return {"round": 1, "status": EvolveStatus.NO_IMPROVEMENT,
                "message": f"the need nearly copies a held-out query of {copies[0].file}: a held-out query is test "
                           "data, never a need; nothing was sent to the model. Say the need in your own words."}
    copied = {q for q, c in zip(state.need_queries, copies[1:]) if c is not None}  # each repeat of a piece too
    queries = capturing.shown_queries([q for q in state.need_queries if q not in copied])
    out = sum(c is not None for c in copies[1:])
    left = (f"{out} of the users' requests left out: they nearly copy held-out queries "
            f"({', '.join(sorted({c.file for c in copies[1:] if c is not None}))})" if out else "")
    try:
        d, ledger = _metered(state, ctx, lambda: capturing.draft(ctx.llm, state.need, state.skill, live, queries))
    except (capturing.DraftError, LLMError) as e:
        return {"round": 1, "status": EvolveStatus.NO_IMPROVEMENT,
                "message": f"no usable draft: {e}" + (f" ({left})" if left else "")}
    text = capturing.skill_text(state.skill, d)
    registration = capturing.registration(state.skill, d)
    vetting = capturing.vet(ctx.ws, subgraphs.route, ctx.get_embedder(), state.skill, text, d, published, sets)
    score = _conflict_score(vetting)
    cand = Candidate(id=CANDIDATE_ID, kind=CandidateKind.CAPTURED, target=state.skill, patch=text,
                     patch_format=PatchFormatName.FULL, rationale=f"a new skill for the need: {state.need}",
                     claimed_level=int(Level.L2), computed_level=int(Level.L2), level=int(Level.L2), text=text,
                     changed_parts=["skill.new"], fingerprint=fingerprint(text), leaks=vetting.leaks,
                     validation={"conflict": score} if score is not None else {},
                     notes=[f"{len(d.cases)} starter cases, {len(d.examples)} router examples, "
                            f"{len(d.negatives)} router negatives", *([left] if left else []),
                            *_personal(text, registration)])
    if vetting.refusals:
        cand = cand.model_copy(update={"verdict": CandidateVerdict.LEAK if vetting.rejected_by == "leak_scan"
                                       else CandidateVerdict.REFUSED, "rejected_by": vetting.rejected_by,
                                       "notes": [*cand.notes, *vetting.refusals]})
        done = state.model_copy(update={"round": 1, "candidates": [cand]})
        report = archive.write_failures(ctx.ws, done)
        near = vetting.conflict
        named = f" (nearest: {near.nearest}, score {near.score:.3f})" if near is not None and near.refused else ""
        return {"round": 1, "candidates": [cand], "budget": ledger, "status": EvolveStatus.NO_IMPROVEMENT,
                "failure_report": str(report),
                "message": f"refused by the {' and '.join(vetting.failed or [str(vetting.rejected_by)])} check{named}: {'; '.join(vetting.refusals)}. "
                           "Nothing was registered." + (f" ({left})" if left else "")}
    cand = cand.model_copy(update={"verdict": CandidateVerdict.PASSED})  # every check passed: it goes to review (was
    # left PENDING, so a published new skill's run listed its candidate as PENDING for ever)
    waiting = state.model_copy(update={"round": 1, "candidates": [cand], "selected": cand.id})
    archive.write_review(ctx.ws, waiting, cand)
    return {"round": 1, "candidates": [cand], "selected": cand.id, "budget": ledger,
            "decision": EvolveDecision.REVIEW, "registration": registration,
            "message": f"{state.skill} drafted and checked: it waits for review" + (f" ({left})" if left else "")}


def _personal(text: str, registration: dict[str, str]) -> list[str]:
    """A note naming the personal data or secret shapes (a phone, an ID number, an e-mail) the draft and
    its starter sets hold, for the person who reviews it (QA 48 F3: the same line from the evolve
    proposer was noted; a new skill's went to review unremarked)."""
    kinds = sorted({k for t in (text, *registration.values()) for k in redact(t)[1]})
    return [f"personal data or a secret in the draft or its starter cases ({', '.join(kinds)}): "
            "read the draft and its starter sets before approving"] if kinds else []


def after_capture(state: EvolveState) -> str:
    return "review" if state.decision is EvolveDecision.REVIEW and state.selected else "end"
