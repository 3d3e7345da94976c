"""`metadata.version` written into a SKILL.md: a published release's bytes say its version.

Evolve publishes and `release publish` both set it to the release's version; only that value
changes (the line is edited in place, or a `metadata:` entry is added at the end of a frontmatter
that has none), unless that would change anything else the file says: then the frontmatter is
rendered again from the parsed skill.
"""

from __future__ import annotations

import re

from skillforge.skill import file as skillfile
from skillforge.skill.tree import Entry, FileMode, Tree

META_VERSION = re.compile(r"(\bversion\s*:\s*)(['\"]?)([^,'\"}\r\n]*)\2")


def with_version(text: str, version: str) -> str:
    """The SKILL.md with `metadata.version` set to the release's version."""
    skill = skillfile.parse(text)
    wanted = skill.model_copy(update={"metadata": {**skill.metadata, "version": version}})
    head, sep, rest = text.partition("\n---")
    edits = []
    if META_VERSION.search(head):
        edits.append(META_VERSION.sub(lambda m: f'{m.group(1)}"{version}"', head, count=1) + sep + rest)
    cr = "\r" if head.endswith("\r") else ""
    if not skill.metadata:  # no metadata yet: one added at the end of the frontmatter, with the file's line end
        edits.append(f'{head}\nmetadata:{cr}\n  version: "{version}"{cr}{sep}{rest}')
    elif block := re.search(r"^metadata:[ \t]*\r?\n([ \t]+)\S", head, re.M):  # a block without a version: one line
        at = block.start(1)  # more, at its first key's indent, before it (QA 35: render doubled every CR)
        edits.append(f'{head[:at]}{block.group(1)}version: "{version}"{cr}\n{head[at:]}{sep}{rest}')
    for edited in edits:
        try:
            if skillfile.parse(edited) == wanted:  # the edit set metadata.version and nothing else
                return edited
        except skillfile.SkillFileError:
            pass
    rendered = skillfile.render(wanted)
    if "\r\n" in text and "\n" not in text.replace("\r\n", ""):  # an all-CRLF file stays all CRLF, never \r\r\n
        return rendered.replace("\r\n", "\n").replace("\n", "\r\n")
    return rendered


def stamped(tree: Tree, version: str, label: str = skillfile.SKILL_FILENAME) -> Tree:
    """`tree` with its SKILL.md's metadata.version set to `version` (the same tree when it already
    says so, or SKILL.md is a link)."""
    entry = tree.get(skillfile.SKILL_FILENAME)
    if entry is None or entry.mode is FileMode.SYMLINK:
        return tree
    text = skillfile.decode(entry.data, label)
    if skillfile.parse(text, label).metadata.get("version") == version:
        return tree
    return {**tree, skillfile.SKILL_FILENAME: Entry(with_version(text, version).encode("utf-8"), entry.mode)}


__all__ = ["META_VERSION", "stamped", "with_version"]
