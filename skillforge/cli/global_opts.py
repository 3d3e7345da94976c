"""Options a user may put before the command as well as after it: `skillforge -w WS skills import`
is `skillforge skills import -w WS`, and `skillforge --json route "q"` is `skillforge route "q"
--json`. The root group moves `-w/--workspace PATH` (also `-wPATH`, `--workspace=PATH`) and
`--json`, when they come before the command's name, to just after it, so the command parses them
as its own: one definition of each option (cli/common.py), its env variable and its checks.

The same holds between a group's name and its command's: `skillforge skills -w WS list`.
Because they land before everything typed after the command, the same option given after the
command wins (`skillforge -w A skills list -w B` lists B); before the command beats
$SKILLFORGE_WORKSPACE, as any -w does. A command that does not take the option (`init`, `skills
export` has no --json) is a usage error naming it, never a silently dropped option.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

HELP = ("-h", "--help")


def global_option(token: str) -> tuple[str, bool] | None:
    """(the option's long name, whether its value is the next token) when `token` is a global
    option, else None."""
    if token in ("-w", "--workspace"):
        return "--workspace", True
    if token.startswith("--workspace=") or (token.startswith("-w") and not token.startswith("--")):
        return "--workspace", False
    if token == "--json":
        return "--json", False
    return None


def _options_of(cmd: Any) -> set[str]:
    return {o for p in cmd.params for o in (*p.opts, *getattr(p, "secondary_opts", ()))}


class GlobalOptionsGroup(TyperGroup):
    """The root group: global options before the command, or between a group's name and its
    command's (`skillforge skills -w WS list`), move to just after the command's name."""

    def parse_args(self, ctx, args):
        moved: list[tuple[str, list[str]]] = []
        kept: list[str] = []
        names: list[str] = []
        group: TyperGroup = self
        leaf = None
        i = 0
        while i < len(args):
            token = args[i]
            found = global_option(token)
            if found is not None:
                name, takes_next = found
                if takes_next and i + 1 >= len(args):
                    return super().parse_args(ctx, args)  # `skillforge -w`: the parser says the value is missing
                moved.append((name, args[i:i + 2] if takes_next else [token]))
                i += 2 if takes_next else 1
                continue
            if token == "--":
                break
            if token.startswith("-"):
                if group is not self:
                    break  # a group's own option (--help): it handles it
                kept.append(token)  # --version, --help: the root's own
                i += 1
                continue
            cmd = group.get_command(ctx, token)
            if cmd is None:
                break
            names.append(token)
            i += 1
            if not isinstance(cmd, TyperGroup):
                leaf = cmd
                break
            group = cmd
        if not moved:
            return super().parse_args(ctx, args)
        rest = args[i:]
        # a group that rewrites its own arguments (`route "query"` runs `route query "query"`) is
        # handed them with the rest; a plain group runs no command here, an unknown one is an error
        rewrites = group is not self and type(group).parse_args is not TyperGroup.parse_args \
            and bool(rest) and rest[0] not in HELP
        if leaf is None and not rewrites:  # with the root, which takes them: a group's help, an unknown command
            return super().parse_args(ctx, [*kept, *(t for _, tokens in moved for t in tokens), *names, *rest])
        if leaf is not None:
            for name, tokens in moved:
                if name not in _options_of(leaf):
                    raise typer.BadParameter(f"`{ctx.info_name or 'skillforge'} {' '.join(names)}` has no {name}",
                                             param_hint=f"{tokens[0]} (before the command)")
        return super().parse_args(ctx, [*kept, *names, *(t for _, tokens in moved for t in tokens), *rest])
