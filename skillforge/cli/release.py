"""`skillforge releases list`, `skillforge release publish` and `release revert`: the release history,
and the two steps that change what is live, each under a held Ctrl-C (it completes or rolls back)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.table import Table

from skillforge.cli import interrupt
from skillforge.cli.common import (ForceOpt, JsonOpt, WhyOpt, WorkspaceOpt, by_user, err, fail, out, print_json,
                                   services)
from skillforge.cli.output import one_line, plain, revealed, styled
from skillforge.errors import (
    BadArgument,
    GitError,
    HiddenInSkill,
    PublishInterrupted,
    SecretsInSkill,
    SkillFileError,
    SourceError,
)
from skillforge.rules.comment import shown as stored_text
from skillforge.state.cliopts import DEFAULT_MAX_AGE_HOURS, DEFAULT_MIN_SESSIONS

if TYPE_CHECKING:  # the library and the models are imported by the commands that use them
    from skillforge.library.services import Services
    from skillforge.state.canary import CanaryPlan
    from skillforge.skill.tree import Tree
    from skillforge.state.release import Release

releases_app = typer.Typer(no_args_is_help=True, help="Release history.")
release_app = typer.Typer(no_args_is_help=True, help="Publish or revert a release.")


@releases_app.command("list")
def releases_list(name: str, workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """Every release of a skill, oldest first; * marks the current one. A publish a killed process
    left PREPARING is named, with the command that finishes it off (nothing is changed)."""
    from skillforge.cli.interrupted import interrupted_publishes
    from skillforge.library.canaries import CANARY_STATUS, Canaries
    from skillforge.rules.canary import shown_share
    from skillforge.state.canary import OPEN_STATES

    svc = services(workspace)
    svc.repo  # noqa: B018 - HistoryLost, as every command that reads releases: their commits may be gone
    history = svc.store.releases(name)
    if not history:
        svc.registry.get(name)  # raises UnknownSkill with the closest names
    current = svc.store.current(name)
    current_id = current.release_id if current else None
    retirements = svc.store.retirements(name)
    canaries = {c.release_id: c for c in Canaries(svc.store).history(name)}
    stuck = {o.release.release_id: o for o in interrupted_publishes(svc, name)}
    if as_json:  # a retirement is listed on the release that was live when it began
        print_json([{**r.model_dump(mode="json"), "current": r.release_id == current_id,
                     "interrupted": stuck[r.release_id].as_json() if r.release_id in stuck else None,
                     "canary": canaries[r.release_id].model_dump(mode="json") if r.release_id in canaries else None,
                     "lineage": [link.model_dump(mode="json") for link in svc.store.lineage(r.release_id)],
                     "retirements": [t.model_dump(mode="json") for t in retirements if t.release_id == r.release_id]}
                    for r in history])
        return
    kinds = {r.release_id: ",".join(sorted({link.kind.value for link in svc.store.lineage(r.release_id)})) for r in history}
    shown = {c.release_id: CANARY_STATUS for c in canaries.values() if c.state in OPEN_STATES}
    out.print(release_rows(history, current_id, kinds, shown))
    for c in canaries.values():
        out.print(plain(f"canary {c.release_id[:8]} ({shown_share(c.share)} of sessions, from {c.started_at[:19]}): {c.state.value}"
                        + (f" ({c.reason})" if c.reason else "")), soft_wrap=True)
    for t in retirements:
        back = f"brought back by {t.restored_by[:8]}" if t.restored_by else "RETIRED now"
        out.print(plain(f"retired {t.retired_at[:19]} (live release {t.release_id[:8]}; {stored_text(t.triggered_by)}): {back}"))
    for o in stuck.values():
        out.print(plain(o.note()), soft_wrap=True)


def left_out_note(source: Path, dropped: list[str]) -> str:
    """The one-line warning that `dropped` (tree.left_out) of `source` is not in the release, with
    the reason that applies to each kind (QA 42 F5: an empty folder was blamed on a nested .git)."""
    nested = [d for d in dropped if d.rstrip("/").rsplit("/", 1)[-1] == ".git"]
    empty = [d for d in dropped if d not in nested]
    why = ([f"{', '.join(nested)}: a nested .git folder is version-control data"] if nested else []) + \
        ([f"{', '.join(empty)}: an empty folder, and git keeps none"] if empty else [])
    return f"{source}: left out {'; '.join(why)}"


@release_app.command("publish")
def release_publish(name: str,
                    source: Annotated[Path | None, typer.Option("--from", help="Candidate skill folder (default: the working tree).")] = None,
                    version: Annotated[str | None, typer.Option(help="Semver above every published one.")] = None,
                    canary: Annotated[str | None, typer.Option("--canary", metavar="PCT", help=(
                        "Serve it to this share of sessions first (e.g. 10%); `canary tick` promotes or rolls it back."))] = None,
                    min_sessions: Annotated[int, typer.Option("--min-sessions", help="With --canary: sessions each arm "
                                                               "needs before promotion.")] = DEFAULT_MIN_SESSIONS,
                    max_age_hours: Annotated[float, typer.Option("--max-age-hours", help="With --canary: reaped when "
                                                                 "this old and still short of sessions or of evidence.")] = DEFAULT_MAX_AGE_HOURS,
                    allow_secrets: Annotated[bool, typer.Option("--allow-secrets", help=(
                        "Publish even when an added or changed file holds what the secret scan calls a "
                        "secret (say, a documented sample key)."))] = False,
                    comment: WhyOpt = "", force: ForceOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Publish the skill folder (or --from a candidate folder) as a new MANUAL release; with
    --canary, as a CANARY served to that share of sessions until it is promoted or rolled back.
    First it lists the files that differ from the live release, and refuses (nothing written) when
    an added or changed text file holds a secret, unless --allow-secrets."""
    from skillforge.rules.canary import shown_share
    from skillforge.skill import file as skillfile
    from skillforge.skill.tree import left_out, read_tree, skill_source

    plan = _canary_plan(canary, min_sessions, max_age_hours)
    svc = services(workspace)
    if not skillfile.NAME_RE.fullmatch(name):  # "", "..", "../x" would name a folder outside skills/
        raise SourceError(f"'{name}' is not a skill name (lowercase letters, digits and single hyphens)")
    dead = svc.machine.recover(name)  # a dead publish's leftovers are not listed below as this one's changes
    folder = svc.machine.folder_of(name)
    if source is None and (live := svc.store.current(name)) is not None and any(r.writes_folder for r in dead) \
            and read_tree(folder, check=False) != svc.machine.tree_of(live):  # the warning above says what to look at
        fail(f"nothing was published: {svc.repo.rel(folder)} may still hold the never-published changes of the "
             f"interrupted release {dead[-1].version} beside your edits; look at them first, then run this command "
             "again to publish the folder as it is")
    if source is not None:  # a file, a linked folder or SKILL.md: refused as by validate and evaluate
        source = skill_source(source, file_ok=False)
        svc.repo.check_writable(folder.parent)  # refuse a read-only workspace before a release begins
    files = read_tree(source.resolve()) if source is not None else None
    if source is not None and (dropped := left_out(source.resolve())):
        err.print(styled(("warning", "yellow"), " ", left_out_note(source, dropped)), soft_wrap=True)
    if files is None and not folder.is_dir():
        svc.registry.get(name)
        fail(f"no folder {folder} to publish")
    if files is None and not (folder / skillfile.SKILL_FILENAME).is_file():
        fail(f"{folder} has no {skillfile.SKILL_FILENAME} file to publish")
    label = str((source.resolve() if source is not None else folder) / skillfile.SKILL_FILENAME)
    raw = files[skillfile.SKILL_FILENAME].data if files is not None and skillfile.SKILL_FILENAME in files \
        else (folder / skillfile.SKILL_FILENAME).read_bytes() if files is None else None
    proposed = None
    if raw is not None:
        text = skillfile.decode(raw, label)
        if source is not None and (got := skillfile.parse(text, label).name) != name:  # its folder's name is not the point
            raise SkillFileError(label, "name", f"must equal the skill being published '{name}', got '{got}'")
        proposed = skillfile.parse(text, label, name).version
        for w in skillfile.check_text(text, label, name)[1]:  # e.g. a metadata.version that is not used
            err.print(styled(("warning", "yellow"), " ", w))
    shown = files if files is not None else read_tree(folder)  # what is listed and scanned is what is committed
    base = _check_files(svc, name, shown, allow_secrets)
    rel = _under_ctrl_c(svc, name, "publish", lambda: svc.machine.publish(
        name, files, version=version, proposed=proposed, force=force, triggered_by=by_user("cli publish", comment),
        interrupted=interrupt.pending, canary=plan, shown_base=base, listed=None if files is not None else shown))
    commit = rel.commit_hash[:10] if rel.commit_hash else "-"
    if plan is not None:
        out.print(plain(f"canary started: {name} {rel.version} (release {rel.release_id}, commit {commit}) serves "
                        f"{shown_share(plan.share)} of sessions; `skillforge canary status {name}` compares it with the live release"))
    else:
        out.print(plain(f"published {name} {rel.version} (release {rel.release_id}, commit {commit})"))
    _note_late_interrupt()


def _check_files(svc: Services, name: str, tree: Tree, allow_secrets: bool) -> str | None:
    """Before anything is written: print (stdout) the files that differ from the live release (added,
    deleted, changed, mode; a file become a symlink with its target), then scan the added and changed
    ones for secrets (and archives the scan cannot read): SecretsInSkill, or with `allow_secrets` a
    warning per finding. A secret in a file the live release already holds is a warning naming that
    release: refusing now would not take it out of git. A hidden character (rules/hidden.py: a bidi
    override, a zero-width or tag character...) in an added or changed file beside SKILL.md is
    HiddenInSkill, with no override (one in an unchanged file is a warning, as for a secret); in SKILL.md,
    one on a line the live SKILL.md does not have is refused too, and so is one a frontmatter field's parsed
    value holds (a YAML escape, `"\\u202e"`) that the live value of that field did not (the others are check_text's warnings). Done here, before ReleaseStateMachine.publish,
    which is given the id returned (the live release listed against, None if none) to refuse if it moved."""
    from skillforge.rules.hidden import file_rules
    from skillforge.rules.skillfiles import ChangeKind, file_changes
    from skillforge.skill.chars import skill_md_added_field_hidden, skill_md_added_hidden, tree_hidden
    from skillforge.skill.tree import SKILL_FILENAME
    from skillforge.skill.secrets import IN_GIT, tree_secrets, why
    from skillforge.skill.tree import signature
    from skillforge.skill.version import stamped

    current = svc.store.current(name)
    live = svc.machine.tree_of(current) if current is not None and current.commit_hash else {}
    # SKILL.md's metadata.version is the release's own: a candidate that differs only there changes nothing
    changes = file_changes(signature(live), signature(stamped(tree, current.version) if current else tree), skip=())
    stamp_only = False
    if current is not None and any(c.path == SKILL_FILENAME for c in changes):
        try:  # the live SKILL.md may lack the stamp (an imported one): only this publish's stamp differs
            stamp_only = stamped(live, current.version).get(SKILL_FILENAME) == stamped(tree, current.version)[SKILL_FILENAME]
        except SkillFileError:
            pass
        changes = [c for c in changes if not (stamp_only and c.path == SKILL_FILENAME)]
    if changes or stamp_only:
        against = f"differ from the live release {current.version} ({current.release_id[:8]})" if current \
            else "to publish (no live release)"
        out.print(plain(f"{len(changes)} file(s) {against}:"), soft_wrap=True)  # stdout: stderr keeps one error line
        for c in changes:
            target = tree[c.path].data.decode("utf-8", errors="replace") if c.became_link else None
            out.print(plain(f"  {revealed(c.describe(target))}"), soft_wrap=True)
        if stamp_only:
            out.print(plain(f"  ({SKILL_FILENAME}: version stamp only, metadata.version set to the release's)"))
    new = {c.path for c in changes if c.kind in (ChangeKind.ADDED, ChangeKind.CHANGED)}
    if current is not None:  # bytes the live release already holds: a refusal now would not take them out
        for f in tree_secrets(tree, [p for p in tree if p not in new and p in live]):
            err.print(styled(("warning", "yellow"), " ", f"{one_line(f.describe())}: already in the live release "
                             f"{current.version} ({current.release_id[:8]}); {IN_GIT}"), soft_wrap=True)
    findings = tree_secrets(tree, sorted(new))
    if findings and not allow_secrets:
        raise SecretsInSkill([one_line(f.describe()) for f in findings])  # a newline in a file name stays on its line
    if current is not None and (kept := tree_hidden(tree, [p for p in tree if p not in new and p in live])):
        for line in file_rules(kept):  # as for a secret: a refusal now would not take them out of git
            err.print(styled(("warning", "yellow"), " ", f"{one_line(line)}: a hidden character already in the live "
                             f"release {current.version} ({current.release_id[:8]}); take it out"), soft_wrap=True)
    # SKILL.md: what the change adds; what the live SKILL.md already held stays check_text's warning
    added = skill_md_added_hidden(tree, live) if SKILL_FILENAME in new else []
    fields = skill_md_added_field_hidden(tree, live, {h.char for h in added}) if SKILL_FILENAME in new else []
    if (hidden := added + tree_hidden(tree, sorted(new))) or fields:
        raise HiddenInSkill([one_line(line) for line in file_rules(hidden) + fields])
    for f in findings:
        err.print(styled(("warning", "yellow"), " ", f"{one_line(f.describe())}: published anyway (--allow-secrets); "
                         f"{why(f)}"), soft_wrap=True)
    return current.release_id if current is not None else None


@release_app.command("retire")
def release_retire(name: str, comment: WhyOpt = "", workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """Move the skill's live release to RETIRED: out of the index and the router, history kept
    (`release revert NAME` brings the same bytes back)."""
    svc = services(workspace)
    if name not in svc.store.skill_names():
        svc.registry.get(name)  # raises UnknownSkill with the closest names
    with interrupt.deferred():
        retired = svc.machine.retire(name, triggered_by=by_user("cli retire", comment))
    if as_json:
        print_json(retired.model_dump(mode="json"))
        return
    out.print(plain(f"retired {name} (release {retired.release_id[:8]} kept; "
                    f"`skillforge release revert {name}` brings it back)"))


@release_app.command("revert")
def release_revert(name: str,
                   release: Annotated[str | None, typer.Argument(
                       help="Release id, prefix or version to restore (a RETIRED skill: default, its last live release).")] = None,
                   comment: WhyOpt = "", force: ForceOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Make an older PUBLISHED release current again (recorded as a new REVERT release); a RETIRED
    skill comes back with the bytes it had when it was retired."""
    svc = services(workspace)
    if name not in svc.store.skill_names():
        svc.registry.get(name)  # raises UnknownSkill with the closest names
    svc.repo.check_writable(svc.machine.folder_of(name).parent)  # refuse a read-only workspace before a release begins
    live = svc.store.current(name)
    rel = _under_ctrl_c(svc, name, "revert",
                        lambda: svc.machine.revert(name, release, force=force, interrupted=interrupt.pending,
                                                          by=by_user("cli", comment)))
    if live is not None and rel.release_id == live.release_id:  # the folder lacked the live bytes: put back
        out.print(plain(f"{rel.skill_path} holds live release {rel.version} again (release {rel.release_id}, commit "
                        f"{(rel.commit_hash or '-')[:10]}); no new release: what is served did not change"))
        return
    out.print(plain(f"{name} now serves {rel.version} (release {rel.release_id}, commit {rel.commit_hash[:10] if rel.commit_hash else '-'})"))
    from skillforge.library.splitlinks import live_split_children

    if children := live_split_children(svc.store, name):  # a split undone: its children still route (QA 23 F10)
        out.print(plain(f"note: {name}'s split children {', '.join(children)} are still live and take its queries; "
                        + "; ".join(f"`skillforge release retire {c}`" for c in children) + " to undo the split"),
                  soft_wrap=True)
    _note_late_interrupt()


def _canary_plan(share: str | None, min_sessions: int, max_age_hours: float) -> CanaryPlan | None:
    if share is None:
        return None
    from skillforge.rules.canary import parse_share, share_range, valid_limits
    from skillforge.state.canary import CanaryPlan

    parsed = parse_share(share)
    if parsed is None:
        raise BadArgument(f"--canary {share!r}: give a share of sessions {share_range()}, e.g. 10% (nothing was "
                          "published)")
    problem = valid_limits(min_sessions, max_age_hours)
    if problem:
        raise BadArgument(problem)
    return CanaryPlan(share=parsed, min_sessions=min_sessions, max_age_hours=max_age_hours)


def _under_ctrl_c(svc: Services, name: str, what: str, step: Callable[[], Release]) -> Release:
    """Run a release step with Ctrl-C held: before the commit it rolls back (and says what is live),
    after it the release stands. Prints where unpublished edits were saved."""
    with interrupt.deferred():
        try:
            rel = step()
        except Exception as e:
            if interrupt.pending():
                _rolled_back(svc, name, what, e)
            raise
    _print_backups(svc)
    return rel


def _print_backups(svc: Services) -> None:
    for backup in svc.machine.backups:
        err.print(plain(f"saved the unpublished edits to {backup}"), soft_wrap=True)


def _rolled_back(svc: Services, name: str, what: str, error: BaseException) -> NoReturn:
    """Ctrl-C arrived before the release was committed: it was abandoned; say what is live."""
    current = svc.store.current(name)
    live = f"{current.version} (release {current.release_id[:8]}) is still live" if current else "nothing was published"
    # a GitError here is git killed by the same Ctrl-C: its command line would only bury the answer
    why = "" if isinstance(error, PublishInterrupted) else " (git was interrupted too)" if isinstance(error, GitError) \
        else f" ({error})"
    fail(f"interrupted: the {what} of {name} was rolled back; {live}{why}", interrupt.EXIT_INTERRUPTED)


def _note_late_interrupt() -> None:
    if interrupt.pending():
        err.print("note: Ctrl-C arrived after the release was committed, so it stands", highlight=False)
        interrupt.reset()


def release_rows(releases: list[Release], current: str | None, kinds: dict[str, str],
                 shown_status: dict[str, str] | None = None) -> Table:
    """The release table; `shown_status` overrides a row's status (CANARY for an open canary)."""
    table = Table("release", "version", "status", "kind", "level", "commit", "triggered by", "created", "published")
    for r in releases:  # a comment stored before -m refused bidi shows it escaped (rules/comment.shown)
        mark = " *" if r.release_id == current else ""
        status = (shown_status or {}).get(r.release_id, r.status.value)
        table.add_row(*map(plain, (r.release_id[:8] + mark, r.version, status, kinds.get(r.release_id, "-"),
                                   r.level.value, (r.commit_hash or "-")[:10], stored_text(r.triggered_by), r.created_at[:19],
                                   (r.published_at or "-")[:19])))
    return table
