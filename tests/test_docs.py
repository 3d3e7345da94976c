"""The documentation holds together: the README stays one page that opens with the two set-up
commands, and every relative link in the README, docs/ and benchmarks/README.md names a file of
this repository. Pure text checks: no network, nothing written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
MAX_README_LINES = 200
DOCS = sorted([README, *(REPO / "docs").glob("*.md"), REPO / "benchmarks" / "README.md"])

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.S | re.M)
"""A fenced code block (its text is code, not markdown: `a[i](x)` there is no link)."""
INLINE_CODE = re.compile(r"(`+).+?\1", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
"""`[text](target)` or `![alt](target)`, with an optional title; group 1 is the target."""
EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.I)
"""http:, https:, mailto: and any other scheme (or a protocol-relative URL): not a repository file."""


def prose(text: str) -> str:
    """The markdown outside code: fenced blocks and inline code spans blanked out."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def relative_links(text: str) -> list[str]:
    """The link targets of `text` that point into the repository (anchors and queries dropped);
    a bare `#anchor` points into the same file and is left out."""
    out = []
    for target in LINK.findall(prose(text)):
        if EXTERNAL.match(target):
            continue
        path = target.split("#", 1)[0].split("?", 1)[0]
        if path:
            out.append(path)
    return out


def broken_links(doc: Path, text: str | None = None) -> list[str]:
    """The relative links of `doc` that do not name an existing file or folder inside the repo."""
    text = doc.read_text(encoding="utf-8") if text is None else text
    bad = []
    for target in relative_links(text):
        resolved = (REPO / target.lstrip("/")) if target.startswith("/") else (doc.parent / target)
        resolved = resolved.resolve()
        if not resolved.is_relative_to(REPO) or not resolved.exists():
            bad.append(target)
    return bad


def first_code_block(text: str) -> tuple[int, list[str]]:
    """The line number (0-based) where the first fenced block opens, and its lines."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("```"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
    return start, lines[start + 1:end]


def test_readme_is_one_page() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; move reference text to docs/"


def test_readme_opens_with_exactly_the_two_setup_commands() -> None:
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0].startswith("# "), "README.md starts with its title"
    start, block = first_code_block(text)
    assert [line for line in lines[1:start] if line.strip()] == [], "the set-up commands come right after the title"
    commands = [line.split("#", 1)[0].strip() for line in block]
    assert [c for c in commands if c] == ["make demo", "make test"]


def test_readme_has_no_layout_section() -> None:
    """docs/ARCHITECTURE.md owns the layout of the source tree."""
    assert not re.search(r"^#+\s*Layout\b", README.read_text(encoding="utf-8"), re.M)


def test_readme_points_to_every_reference_doc() -> None:
    targets = set(relative_links(README.read_text(encoding="utf-8")))
    wanted = {"docs/ARCHITECTURE.md", "docs/cli.md", "docs/configuration.md", "docs/safety.md",
              "docs/studio.md", "benchmarks/README.md"}
    assert wanted <= targets, f"README.md does not link {sorted(wanted - targets)}"


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(REPO)) for d in DOCS])
def test_relative_links_resolve(doc: Path) -> None:
    assert broken_links(doc) == [], f"{doc.relative_to(REPO)} links to files that do not exist"


def test_link_check_catches_a_broken_link() -> None:
    """The checker itself: a missing file, a path out of the repository and a link that only a
    bad anchor strip would miss are caught; external links, anchors and code are not links."""
    text = ("See [cli](docs/cli.md#exit-codes), [site](https://example.com/x.md), [mail](mailto:a@b.c),\n"
            "[here](#top), ![pic](docs/nowhere.png), [gone](docs/no-such-file.md#x),\n"
            "[out](../../etc/passwd), `[code](not/a/link.md)` and\n```\n[fenced](not/either.md)\n```\n")
    assert broken_links(README, text) == ["docs/nowhere.png", "docs/no-such-file.md", "../../etc/passwd"]
    assert relative_links("[a](docs/cli.md \"title\") [b](<docs/safety.md>)") == ["docs/cli.md", "docs/safety.md"]
