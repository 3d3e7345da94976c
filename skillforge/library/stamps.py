"""metadata.version set in a skill folder published as it is (`release publish` without --from),
and put back when its release does not go through.

A publish of the working tree commits the folder itself, so the folder's SKILL.md gets the
release's version first (skill/version.py): the published bytes and the folder stay equal. When
the release is rolled back in this process (an error, Ctrl-C), the person's own text comes back,
unless the file was edited since. A publish killed after the stamp leaves the person's edit with
the new version line (nothing else changes).
"""

from __future__ import annotations

import logging
from contextlib import nullcontext
from pathlib import Path

from skillforge.library.gitrepo import SkillsRepo
from skillforge.safewrite import write_text_atomic
from skillforge.skill import file as skillfile
from skillforge.skill.tree import read_tree
from skillforge.skill.version import stamped

log = logging.getLogger(__name__)


def stamp_tag(release_id: str) -> str:
    """The part of the temp file name a release's stamp writes (`.SKILL.md.<tag>.tmp`): its id's first
    8 hex digits, so the recovery of a killed release removes that file and no person's."""
    return release_id.replace("-", "")[:8]


class FolderStamps:
    """The SKILL.md texts this process stamped, by release id, until the release ends."""

    def __init__(self, repo: SkillsRepo) -> None:
        self.repo = repo
        self._texts: dict[str, tuple[Path, str, str]] = {}
        """Release id -> (SKILL.md, its text before, after)."""

    def stamp(self, release_id: str, folder: Path, version: str) -> bool:
        """Set metadata.version in the folder's SKILL.md (the caller holds the repo lock). False
        when it already said `version` (or is a link)."""
        path = folder / skillfile.SKILL_FILENAME
        work = read_tree(folder)
        new = stamped(work, version, str(path))
        if new is work:
            return False
        before, after = (skillfile.decode(t[skillfile.SKILL_FILENAME].data, str(path)) for t in (work, new))
        self._texts[release_id] = (path, before, after)
        write_text_atomic(path, after, tag=stamp_tag(release_id))  # killed before its rename: recovery.py finds it
        return True

    def undo(self, release_id: str, *, locked: bool = False) -> None:
        """Give the person's SKILL.md its own text back, unless it was edited since (under the
        repo lock; `locked`: the caller holds it)."""
        path, before, after = self._texts.pop(release_id, (None, "", ""))
        if path is None:
            return
        with nullcontext() if locked else self.repo.lock():
            try:
                if path.read_bytes().decode("utf-8") == after:  # exactly: read_text would turn CRLF into LF
                    write_text_atomic(path, before)
            except (OSError, UnicodeDecodeError) as e:
                log.warning("%s: %s", path, e)

    def forget(self, release_id: str) -> None:
        """The release was published: its stamp stays."""
        self._texts.pop(release_id, None)


__all__ = ["FolderStamps"]
