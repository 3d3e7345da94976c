"""QA 23 F2: the split assigns Markdown blocks whole (rules/split.body_segments), never torn lines."""

from __future__ import annotations

from skillforge.rules.split import BLANK, HEADING, UNIT, body_segments, body_units
from skillforge.skill.derive import derive_children
from skillforge.skill.file import parse
from skillforge.state.split import Intent


def test_every_line_lands_in_exactly_one_segment() -> None:
    body = "## A\n1. x\n   more\n\n```py\n# not a heading\n\nx = 1\n```\n| a | b |\n|---|---|\n| 1 | 2 |\n> q\n> r\n"
    segs = body_segments(body)
    assert "\n".join(t for _, t in segs) == body.rstrip("\n")
    assert [k for k, _ in segs] == [HEADING, UNIT, BLANK, UNIT, UNIT, UNIT]
    assert segs[3][1] == "```py\n# not a heading\n\nx = 1\n```"


def test_nested_and_tilde_fences() -> None:
    body = "````md\n```py\nx\n```\nstill inside\n````\nafter\n~~~\n```\n# code\n~~~\n"
    assert body_units(body) == ["````md\n```py\nx\n```\nstill inside\n````", "after", "~~~\n```\n# code\n~~~"]


def test_unclosed_fence_runs_to_the_end_and_an_empty_one_is_dropped() -> None:
    assert body_units("a\n```\nb\n\n# c") == ["a", "```\nb\n\n# c"]
    assert body_units("- b\n```\n") == ["- b"]


def test_tables_with_and_without_leading_pipes() -> None:
    assert body_units("unit | factor\n--- | :---:\nmile | 1.609\nnext") == ["unit | factor\n--- | :---:\nmile | 1.609", "next"]
    assert body_units("| a |\n|---|\n| 1 |\n\ntext | not a table") == ["| a |\n|---|\n| 1 |", "text | not a table"]


def test_list_item_keeps_continuations_nested_items_and_fences() -> None:
    body = "1. Call `fx.get_rate`:\n   ```\n   # comment\n   ```\n   - sub\n\n   second paragraph\n2. next\n\n    indented code\n"
    assert body_units(body) == ["1. Call `fx.get_rate`:\n   ```\n   # comment\n   ```\n   - sub\n\n   second paragraph",
                                "2. next\n\n    indented code"]


def test_indented_code_block_and_blockquote() -> None:
    assert body_units("text\n\n    code a\n\n    code b\nafter") == ["text", "    code a\n\n    code b", "after"]
    assert body_units("> a\n> b\nc") == ["> a\n> b", "c"]


PARENT = """---
name: conv
description: "Converts currency with fx.get_rate. Converts units with units.convert."
---
## Formulas
```python
# a comment, not a heading
def c_to_f(c):
    return c * 9 / 5 + 32
```

| unit | factor |
|------|--------|
| mile (units.convert) | 1.609 km |

- `fx.get_rate` first
  then state the rate
"""


def test_children_get_blocks_whole() -> None:
    intents = [Intent(name="currency", case_ids=["a", "b"], tools=["fx.get_rate"], terms=["currency", "fx.get_rate", "fx"]),
               Intent(name="units", case_ids=["c", "d"], tools=["units.convert"], terms=["units", "units.convert"])]
    kids = derive_children(parse(PARENT, "SKILL.md", "conv"), intents, ["conv-currency", "conv-units"])
    cur, uni = kids.files["conv-currency"].body, kids.files["conv-units"].body
    fence = "```python\n# a comment, not a heading\ndef c_to_f(c):\n    return c * 9 / 5 + 32\n```"
    assert fence in cur and fence in uni  # a block that names no intent: whole, to every child, for review
    assert any(p.startswith("```python") for p in kids.shared)
    table = "| unit | factor |\n|------|--------|\n| mile (units.convert) | 1.609 km |"
    assert table in uni and "|------|" not in cur
    assert "- `fx.get_rate` first\n  then state the rate" in cur and "then state" not in uni


def test_names_file_by_path_folder_or_file_name() -> None:
    from skillforge.rules.split import names_file
    assert names_file("See references/fx-notes.md for rules.", "references/fx-notes.md")
    assert names_file("Run `scripts/units.sh`", "scripts/units.sh")
    assert names_file("Read fx-notes.md first", "references/fx-notes.md")
    assert names_file("everything under scripts/ is a self-test", "scripts/units.sh")
    assert not names_file("see notes.md.bak", "notes.md") and names_file("see notes.md.", "notes.md")
    assert not names_file("see my-fx-notes.md", "references/fx-notes.md")
    assert not names_file("scripts are fine", "scripts/units.sh")
    assert not names_file("the README says", "docs/README")  # a bare file name without an extension: too common a word


def test_file_owners_never_drops_a_file() -> None:
    from skillforge.rules.split import file_owners
    taken, unnamed = file_owners(["scripts/units.sh", "references/fx.md", "assets/logo.png", "LICENSE"],
                                 {"a": "see references/fx.md", "b": "run scripts/units.sh; see references/fx.md"})
    assert taken == {"a": ["LICENSE", "assets/logo.png", "references/fx.md"],
                     "b": ["LICENSE", "assets/logo.png", "references/fx.md", "scripts/units.sh"]}
    assert unnamed == ["LICENSE", "assets/logo.png"]
