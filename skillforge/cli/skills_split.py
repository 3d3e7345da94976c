"""`skillforge skills split NAME`: measure whether a skill that does two jobs should become two
DERIVED skills; show the proposed children and their route test; with --publish (the person running
it is the reviewer) publish them and retire NAME in one transaction. A refusal exits 2."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from skillforge.cli import interrupt
from skillforge.cli.common import (
    JsonOpt,
    WorkspaceOpt,
    err,
    fail,
    out,
    print_json,
    services,
)
from skillforge.cli.output import one_line, plain, styled
from skillforge.errors import PublishInterrupted

if TYPE_CHECKING:  # the split (numpy, the router) is imported by the command that runs it
    from skillforge.library.split import SplitPlan


def split(name: str,
          names: Annotated[str | None, typer.Option("--names", metavar="A,B",
                                                    help="The children's names, comma-separated, in the order of "
                                                         "the intents shown (default: NAME-<intent>).")] = None,
          publish: Annotated[bool, typer.Option("--publish", help="Publish the children and retire NAME, all or "
                                                "nothing (you are the reviewer). Without it: report only.")] = False,
          allow_secrets: Annotated[bool, typer.Option("--allow-secrets", help=(
              "Publish even when a child's file holds what the secret scan calls a secret (say, a documented "
              "sample key), as `release publish --allow-secrets`."))] = False,
          workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """Split a skill that does two jobs into DERIVED children, if its couplings allow (shared tools and
    fixtures, entangled instructions, overlapping cases), each child capturing its own cases."""
    from skillforge.graphs.route import route_plain
    from skillforge.library.split import (
        cases_after,
        child_findings,
        plan_split,
        publish_split,
        route_test,
    )
    from skillforge.routing.embedding import get_embedder
    from skillforge.state.split import SplitVerdict

    svc = services(workspace)
    given = [n.strip() for n in names.split(",")] if names is not None else None
    embedder = get_embedder()
    with err.status("measuring the split…"):
        plan = plan_split(svc, name, embedder, given)
    if plan.decision.verdict is SplitVerdict.SPLIT:
        with err.status("routing the children's cases…"):
            route_test(svc, plan, embedder, route_plain)
    refusals = plan.refusals
    secrets, hidden = child_findings(plan) if plan.children is not None else ([], [])
    secrets, hidden = [one_line(s) for s in secrets], [one_line(h) for h in hidden]  # a newline in a file name
    published: dict[str, object] | None = None
    if publish and not refusals:
        _gate(name, secrets, hidden, allow_secrets)  # the publish gates, before anything is written
        svc.repo.check_writable(svc.ws.skills_dir)  # refuse a read-only workspace before a release begins
        with interrupt.deferred():
            try:
                releases, retired = publish_split(svc, plan, interrupted=interrupt.pending)
            except PublishInterrupted:
                fail(f"interrupted: the split of {name} was rolled back; {name} is still live", interrupt.EXIT_INTERRUPTED)
        taken, kept = cases_after(svc, plan)
        published = {"children": [r.model_dump(mode="json") for r in releases], "retired": retired.model_dump(mode="json"),
                     "cases": {"children": {child: {"count": len(ids), "ids": ids} for child, ids in taken.items()},
                               "kept_by_parent": kept}}
    if as_json:
        print_json({**_report(plan), "secrets": secrets, "hidden_characters": hidden, "published": published})
    else:
        _print(plan, show_files=not publish)
        if published is not None:
            for r in releases:
                out.print(plain(f"published {r.skill_name} {r.version} (release {r.release_id[:8]}, DERIVED from "
                                f"{plan.release.version} of {name}) with {1 + len(plan.files.get(r.skill_name, []))} "
                                "file(s)"))
            out.print(plain(f"retired {name}: {retired.triggered_by} (to undo the split: `skillforge release revert {name}`, "
                            "then " + "; ".join(f"`skillforge release retire {r.skill_name}`" for r in releases)
                            + ": the children stay live, and take its queries, until retired)"), soft_wrap=True)
            for child, ids in taken.items():
                out.print(plain(f"cases: {len(ids)} of {name}'s evaluation cases now count for {child}"))
            out.print(plain(f"cases: {len(kept)} stay with the retired {name} (in several intents or none)"
                            + (f": {', '.join(kept)}" if kept else "")), soft_wrap=True)
    if not publish:
        for line in hidden:
            err.print(styled(("warning", "yellow"), " ", f"{one_line(line)}; --publish refuses it"), soft_wrap=True)
        for line in secrets:
            err.print(styled(("warning", "yellow"), " ", f"{one_line(line)}; --publish refuses it unless "
                             "--allow-secrets"), soft_wrap=True)
    if refusals:
        fail(f"{name} is not split: {'; '.join(refusals)}")
    if not publish:
        err.print(plain(f"nothing written; to publish the children and retire {name}: skillforge skills split {name} "
                        f"--publish" + (f" --names {names}" if names else "")), soft_wrap=True)


def _gate(name: str, secrets: list[str], hidden: list[str], allow_secrets: bool) -> None:
    """Refuse (nothing written) children holding hidden characters (SplitRefused: `skills new` and
    `validate --strict` refuse them too) or secrets (SecretsInSkill, as `release publish`), unless
    --allow-secrets for the secrets, which are then a warning each."""
    from skillforge.errors import SecretsInSkill, SplitRefused
    from skillforge.skill.secrets import WHY

    if hidden:
        raise SplitRefused(f"{name} is not split: the children would carry hidden characters: {'; '.join(hidden)}. "
                           f"Nothing was published; take them out of {name} (edit it, `skillforge release publish "
                           f"{name}`), then split again")
    if secrets and not allow_secrets:
        raise SecretsInSkill(secrets)
    for line in secrets:
        err.print(styled(("warning", "yellow"), " ", f"{one_line(line)}: published anyway (--allow-secrets); {WHY}"),
                  soft_wrap=True)


def _report(plan: SplitPlan) -> dict[str, object]:
    from skillforge.rules.split import MIN_BENEFIT, MIN_CAPTURE
    from skillforge.skill import file as skillfile

    d = plan.decision
    return {"skill": plan.parent.name, "release": plan.release.release_id, "version": plan.release.version,
            "verdict": d.verdict.value, "intent_source": d.source.value,
            "intents": [{**i.model_dump(), "child": plan.names.get(i.name)} for i in d.intents],
            "couplings": d.couplings.model_dump() if d.couplings else None, "benefit": d.benefit,
            "min_benefit": MIN_BENEFIT, "reasons": d.reasons,
            "route_test": [{**s.model_dump(), "share": round(s.share, 3)} for s in plan.shares], "min_capture": MIN_CAPTURE,
            "children": {n: skillfile.render(f) for n, f in plan.children.files.items()} if plan.children else {},
            "shared": plan.children.shared if plan.children else [],
            "dropped_examples": plan.children.dropped if plan.children else [],
            "files": {n: [skillfile.SKILL_FILENAME, *plan.files.get(n, [])] for n in plan.names.values()} if plan.children else {},
            "files_for_review": plan.unnamed_files,
            "refusals": plan.refusals}


def _print(plan: SplitPlan, *, show_files: bool) -> None:
    from skillforge.rules.split import MIN_BENEFIT, MIN_CAPTURE
    from skillforge.skill import file as skillfile

    d = plan.decision
    out.print(styled((plan.parent.name, "bold"), f" {plan.release.version}: {len(plan.cases)} case(s), "
                     f"intents from {d.source.value}"))
    table = Table("intent", "child", "cases", "tools")
    for i in d.intents:
        table.add_row(*map(plain, (i.name, plan.names.get(i.name, "-"), str(len(i.case_ids)), ", ".join(i.tools) or "-")))
    out.print(table)
    if d.couplings is not None:
        c = d.couplings
        out.print(plain(f"couplings: tool overlap {c.tool_overlap:.2f}, instruction entanglement "
                        f"{c.instruction_entanglement:.2f}, case overlap {c.case_overlap:.2f}; "
                        f"benefit {d.benefit:.2f} (a split needs ≥ {MIN_BENEFIT})"))
    out.print(styled(("verdict:", "bold"), f" {d.verdict.value}"))
    for s in plan.shares:
        where = ", ".join(f"{k} {v}" for k, v in sorted(s.elsewhere.items()))
        out.print(plain(f"route test: {s.child} captures {s.captured} of {s.cases} of its cases ({s.share:.0%}, "
                        f"needs ≥ {MIN_CAPTURE:.0%})" + (f"; the others went to {where}" if where else "")))
    if plan.children is None:
        return
    for piece in plan.children.shared:
        lines = piece.split("\n")
        if len(lines) > 1:
            out.print(plain(f"review: a block of {len(lines)} lines given whole to every child it names (it names "
                            f"several jobs, or none): {lines[0].strip()} …"), soft_wrap=True)
        else:
            out.print(plain(f"review: given to every child it names (it names several jobs): {piece}"))
    for ex in plan.children.dropped:
        out.print(plain(f"review: example no child took: {ex}"))
    for path in plan.unnamed_files:
        out.print(plain(f"review: file no child's SKILL.md names, given to every child: {path}"), soft_wrap=True)
    for child in plan.children.files:
        out.print(plain(f"files: {child} gets {', '.join([skillfile.SKILL_FILENAME, *plan.files.get(child, [])])}"),
                  soft_wrap=True)
    if show_files:
        for child, f in plan.children.files.items():
            out.print(styled((f"--- skills/{child}/SKILL.md (proposed)", "bold")))
            out.print(plain(skillfile.render(f)), soft_wrap=True)


__all__ = ["split"]
