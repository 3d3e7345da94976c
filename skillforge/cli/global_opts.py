"""Options a user may put before the command as well as after it: `skillforge -w WS skills import`
is `skillforge skills import -w WS`, and `skillforge --json route "q"` is `skillforge route "q"
--json`. The root group moves `-w/--workspace PATH` (also `-wPATH`, `--workspace=PATH`) and
`--json`, when they come before the command's name, to just after it, so the command parses them
as its own: one definition of each option (cli/common.py), its env variable and its checks.

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
    """The root group: global options before the command move to just after its name."""

    def parse_args(self, ctx, args):
        moved: list[tuple[str, list[str]]] = []
        kept: list[str] = []
        i = 0
        while i < len(args):
            token = args[i]
            found = global_option(token)
            if found is None:
                if token == "--" or not token.startswith("-"):
                    break
                kept.append(token)  # --version, --help: the root's own
                i += 1
                continue
            name, takes_next = found
            if takes_next and i + 1 >= len(args):
                break  # `skillforge -w`: the root parser says the value is missing
            moved.append((name, args[i:i + 2] if takes_next else [token]))
            i += 2 if takes_next else 1
        landing = self._landing(ctx, args[i:]) if moved else None
        if landing is not None:
            at, cmd, path = landing
            rest = args[i:]
            if not isinstance(cmd, TyperGroup):
                for name, tokens in moved:
                    if name not in _options_of(cmd):
                        raise typer.BadParameter(f"`{ctx.info_name or 'skillforge'} {' '.join(path)}` has no {name}",
                                                 param_hint=f"{tokens[0]} (before the command)")
            args = [*kept, *rest[:at], *(t for _, tokens in moved for t in tokens), *rest[at:]]
        return super().parse_args(ctx, args)

    def _landing(self, ctx, rest: list[str]) -> tuple[int, Any, list[str]] | None:
        """(where in `rest` the command's name ends, the command, its path) for the command the
        global options go to; None leaves them with the root (no command, an unknown one, or a
        group that will only print its help or its own usage error)."""
        group: TyperGroup = self
        at, path = 0, []
        while at < len(rest) and not rest[at].startswith("-"):
            cmd = group.get_command(ctx, rest[at])
            if cmd is None:
                break
            path.append(rest[at])
            at += 1
            if not isinstance(cmd, TyperGroup):
                return at, cmd, path
            group = cmd
        # a group that rewrites its own arguments (`route "query"` runs `route query "query"`) is
        # handed them with the rest; a plain group runs no command here
        if group is not self and type(group).parse_args is not TyperGroup.parse_args \
                and at < len(rest) and rest[at] not in HELP:
            return at, group, path
        return None
