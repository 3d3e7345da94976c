"""QA 25 T6 (skills split): a folder named only as the start of a path (`references/fx.md`) took every
file under that folder into the child, so files no child names were never listed for review; and an
HTML block (`<details>` … `</details>`) was torn, one child getting an empty shell."""

from __future__ import annotations

from skillforge.rules.split import body_segments, file_owners, names_file


def test_a_folder_counts_as_named_only_when_it_is_named_alone():
    assert names_file("see references/fx.md for rates", "references/fx.md")
    assert not names_file("see references/fx.md for rates", "references/notes.gz")
    assert not names_file("read references/currency/fx.md", "references/units/deep/table.md")
    assert names_file("everything in references/ applies", "references/units/deep/table.md")
    assert names_file("see `references/`.", "references/notes.gz")
    taken, unnamed = file_owners(["references/fx.md", "references/notes.gz", "scripts/units.sh"],
                                 {"a-currency": "see references/fx.md", "a-units": "run scripts/units.sh"})
    assert taken == {"a-currency": ["references/fx.md", "references/notes.gz"],
                     "a-units": ["references/notes.gz", "scripts/units.sh"]}
    assert unnamed == ["references/notes.gz"]  # to both, and listed for the reviewer


def test_an_html_block_is_one_unit_across_blank_lines():
    body = ("intro\n<details><summary>units table</summary>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n</details>\n"
            "<div class=\"x\">\n<div>inner</div>\n\n</div>\n<details>\nnever closed\n\nlast line")
    units = [text for kind, text in body_segments(body) if kind == "unit"]
    assert units == ["intro", "<details><summary>units table</summary>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n</details>",
                     "<div class=\"x\">\n<div>inner</div>\n\n</div>", "<details>\nnever closed", "last line"]
