"""One workspace's library services (store, repository, release state machine, registry), each opened
on first use: what a command or a driver needs of the library."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from skillforge.config import Workspace
from skillforge.library.canary import CanaryDriver
from skillforge.library.gitrepo import SkillsRepo
from skillforge.library.registry import SkillRegistry, verify_history
from skillforge.library.releases import ReleaseStateMachine
from skillforge.library.store import Store


@dataclass
class Services:
    """What a command needs, opened on first use."""

    ws: Workspace

    @cached_property
    def store(self) -> Store:
        return Store(self.ws.db_path)

    @cached_property
    def repo(self) -> SkillsRepo:
        repo = SkillsRepo(self.ws.skills_dir)
        verify_history(self.store, repo)  # HistoryLost, once, for every command that reads releases
        return repo

    @cached_property
    def machine(self) -> ReleaseStateMachine:
        return ReleaseStateMachine(self.ws, self.store, self.repo)

    @cached_property
    def registry(self) -> SkillRegistry:
        return SkillRegistry.load(self.ws, self.store, self.repo)

    @cached_property
    def canary(self) -> CanaryDriver:
        return CanaryDriver(self.ws, self.store, self.repo)
