"""The secret scan of a skill folder's files (rules/skillfiles.py `scan_secrets`, the leak scan's
secret rules, and the members of a compressed file): `release publish` refuses what a publish adds or
changes unless `--allow-secrets` and warns about what the live release already holds (`IN_GIT`),
`skills validate` reports every file (an error under --strict) and `skills import` warns."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from skillforge.rules.skillfiles import UNSCANNED, SecretFinding, scan_secrets
from skillforge.skill.tree import Tree, read_tree

WHY = "a secret in a skill reaches every agent that loads it, and git keeps it for good"
WHY_UNSCANNED = "what the scan cannot read it cannot call clean; unpack it into the folder or leave it out"
IN_GIT = ("publishing again does not take it out of git: only rewriting the repository's history does "
          "(git filter-repo), and a key that was ever published should be revoked")


def why(finding: SecretFinding) -> str:
    """The reason a finding matters: a secret's, or an archive the scan could not read fully."""
    return WHY_UNSCANNED if finding.kind == UNSCANNED else WHY


def tree_secrets(tree: Tree, paths: Iterable[str] | None = None) -> list[SecretFinding]:
    """The secrets in the text files of `tree` (only `paths` of it when given)."""
    chosen = tree.keys() if paths is None else [p for p in paths if p in tree]
    return scan_secrets({p: (int(tree[p].mode), tree[p].data) for p in chosen})


def folder_secrets(folder: Path) -> list[SecretFinding]:
    """The secrets in every text file of a skill folder, read as a publish reads it."""
    return tree_secrets(read_tree(folder))


def imported_secrets(machine, imported) -> list[str]:  # noqa: ANN001 - a ReleaseStateMachine, its Releases
    """One warning per secret in the files of each release just imported (the import stands: a
    lenient load warns; `skills validate --strict` fails on them, `release publish` refuses them)."""
    return [f"{r.skill_path}/{f.describe()}: {why(f)}; take it out and publish the folder again"
            for r in imported if r.commit_hash for f in tree_secrets(machine.tree_of(r))]


__all__ = ["IN_GIT", "WHY", "WHY_UNSCANNED", "folder_secrets", "imported_secrets", "tree_secrets", "why"]
