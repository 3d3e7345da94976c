"""One workspace's library services (store, repository, release state machine, registry), each opened
on first use: what a command or a driver needs of the library. Each is also imported on first use:
the CLI imports this module for every command, and `skills list` needs no canary statistics (numpy)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from skillforge.config import Workspace

if TYPE_CHECKING:
    from skillforge.library.canary import CanaryDriver
    from skillforge.library.gitrepo import SkillsRepo
    from skillforge.library.registry import SkillRegistry
    from skillforge.library.releases import ReleaseStateMachine
    from skillforge.library.store import Store


@dataclass
class Services:
    """What a command needs, opened on first use."""

    ws: Workspace

    @cached_property
    def store(self) -> Store:
        from skillforge.library.store import Store

        return Store(self.ws.db_path)

    @cached_property
    def repo(self) -> SkillsRepo:
        from skillforge.library.gitrepo import SkillsRepo
        from skillforge.library.registry import verify_history

        repo = SkillsRepo(self.ws.skills_dir)
        verify_history(self.store, repo)  # HistoryLost, once, for every command that reads releases
        return repo

    @cached_property
    def machine(self) -> ReleaseStateMachine:
        from skillforge.library.releases import ReleaseStateMachine

        return ReleaseStateMachine(self.ws, self.store, self.repo)

    @cached_property
    def registry(self) -> SkillRegistry:
        from skillforge.library.registry import SkillRegistry

        return SkillRegistry.load(self.ws, self.store, self.repo)

    @cached_property
    def canary(self) -> CanaryDriver:
        from skillforge.library.canary import CanaryDriver

        return CanaryDriver(self.ws, self.store, self.repo)
