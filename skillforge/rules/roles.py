"""Which model roles a command needs, and whether a role's status blocks it (`llm status --for`). Pure.

- evolve calls the executor, the judge and the proposer; it never routes.
- evaluate calls the executor and the judge.
- route uses the router only when one is configured: without it the cascade ends at the embed
  layer and says so, so an unconfigured router is not a failure, a configured one that does not
  answer is (its uncertain queries would all end NONE).
- No command given: every command's needs at once (the router stays optional).
"""

from __future__ import annotations

from enum import StrEnum

from skillforge.state.cliopts import Role


class LLMCommand(StrEnum):
    EVOLVE = "evolve"
    EVALUATE = "evaluate"
    ROUTE = "route"


class Need(StrEnum):
    REQUIRED = "required"
    """The command cannot run without it: it must be configured and answer."""
    OPTIONAL = "optional"
    """Used when configured: then it must answer; unconfigured is fine."""
    UNUSED = "unused"
    """The command never calls it: never checked, never a failure."""


NEEDS: dict[LLMCommand | None, dict[Role, Need]] = {
    LLMCommand.EVOLVE: {Role.EXECUTOR: Need.REQUIRED, Role.JUDGE: Need.REQUIRED, Role.PROPOSER: Need.REQUIRED},
    LLMCommand.EVALUATE: {Role.EXECUTOR: Need.REQUIRED, Role.JUDGE: Need.REQUIRED},
    LLMCommand.ROUTE: {Role.ROUTER: Need.OPTIONAL},
    None: {Role.ROUTER: Need.OPTIONAL, Role.EXECUTOR: Need.REQUIRED, Role.JUDGE: Need.REQUIRED,
           Role.PROPOSER: Need.REQUIRED},
}


def role_need(command: LLMCommand | None, role: Role) -> Need:
    """How much `command` (None: every command) needs `role`."""
    return NEEDS[command].get(role, Need.UNUSED)


def role_blocks(need: Need, configured: bool, answers: bool | None) -> bool:
    """True when this role's status stops the command: a required role that is not configured or
    does not answer, or a configured optional one that does not answer. `answers` is None when
    the role was not checked."""
    if need is Need.UNUSED:
        return False
    if not configured:
        return need is Need.REQUIRED
    return answers is not True
