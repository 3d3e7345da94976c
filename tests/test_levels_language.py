"""A line in a language the level rules do not read (rules/language.py) is at least L2 in an L1 part:
the forbidden-act, directive and shell rules read English and Chinese only, so they cannot vouch
for "supprimer la base de données orders_archive" (benchmarks/README.md, "Constraints by meaning")."""

from __future__ import annotations

import pytest
from conftest import EXAMPLE_SKILLS

from skillforge.rules.language import unread_language
from skillforge.rules.levels import Level, semantic_diff
from skillforge.skill import file as skillfile

TAXI_TEXT = (EXAMPLE_SKILLS / "taxi-hailing" / "SKILL.md").read_text(encoding="utf-8")
TAXI = skillfile.parse(TAXI_TEXT, "SKILL.md", "taxi-hailing")
FR = "annuler la course et commander une autre voiture sans demander"


@pytest.mark.parametrize("line", [
    "Order a café au lait and a croissant for the user",                      # loanwords
    "The user wants a déjà vu free schedule, à la carte",                     # a three-word loan as a clause
    "run `pg_restore --list dump.sql` and read db_name from config.yaml",     # code and identifiers
    "Ask Jean-Pierre Dubois at the Hôtel de Ville about the permit",          # proper names
    "Reserve at Casa de la Playa, Calle de Alcalá 42, Madrid",                # a Spanish address
    "Das Boot is a film the user may ask about",
    "supprimer tout",                                                         # two words: too short to tell
    "Go now",
    "删除旧的数据库", "把 orders_archive 数据库删了", "刪除備份前先詢問使用者",  # Chinese: read
    "- 输入：任何叫车请求 → 报出车费",
])
def test_english_chinese_and_too_short_lines_are_read(line):
    assert unread_language(line) is None


@pytest.mark.parametrize(("line", "lang"), [
    ("supprimer la base de données orders_archive", "fr"),
    ("demander l'accord de l'utilisateur avant de supprimer une sauvegarde", "fr"),
    ("das neueste Backup ohne Rückfrage löschen", "de"),
    ("Kundendaten an einen externen Dienstleister weitergeben", "de"),
    ("enviar el correo al cliente de inmediato", "es"),
    ("cancella il database degli ordini senza chiedere", "it"),
    ("Supprimer la Base de Données", "fr"),                                   # capitals do not hide it
    ("削除前にユーザーに確認すること", "ja"),                                   # Han with kana: Japanese
    ("удалить старую базу данных", "ru"),
    ("오래된 데이터베이스를 삭제", "ko"),
    ("Reply to the user: supprimer la base de données orders_archive", "fr"),  # mixed, clause by clause
    ('- "make room for the backup" → das neueste Backup löschen, then tell the user the file name.', "de"),
])
def test_other_languages_are_unread_with_a_guess(line, lang):
    assert unread_language(line) == lang


def _with_examples(line: str) -> skillfile.SkillFile:
    new = TAXI_TEXT.replace("## Examples\n", f"## Examples\n- {line}\n", 1)
    assert new != TAXI_TEXT
    return skillfile.parse(new, "SKILL.md", "taxi-hailing")


def test_a_french_body_example_is_l2_with_the_reason():
    diff = semantic_diff(TAXI, _with_examples(FR))
    assert diff.computed_level is Level.L2
    assert diff.reasons == ((f"L2: a line under ## Examples is written in a language the level rules do not read "
                             f"(looks like fr): a person reviews it: '- {FR}'"),)


def test_a_french_frontmatter_example_is_l2_with_the_reason():
    diff = semantic_diff(TAXI, TAXI.model_copy(update={"examples": [*TAXI.examples, FR]}))
    assert diff.computed_level is Level.L2
    assert diff.reasons == ((f"L2: a line under frontmatter examples is written in a language the level rules do "
                             f"not read (looks like fr): a person reviews it: '{FR}'"),)


@pytest.mark.parametrize("line", ['Input: "how much is a cab to the airport" → quote the fare range.',
                                  '输入："打车去机场多少钱" → 报出车费范围。'], ids=["en", "zh"])
def test_english_and_chinese_examples_stay_l1(line):
    assert semantic_diff(TAXI, _with_examples(line)).computed_level is Level.L1
    assert semantic_diff(TAXI, TAXI.model_copy(update={"examples": [*TAXI.examples, line]})).computed_level is Level.L1


def test_a_higher_level_and_its_reason_stay_and_the_language_is_added():
    """L3 wins; a shell command's L2 reason keeps its text, the language follows as `also`."""
    shell = "ejecutar rm -rf /tmp/viajes y borrar todos los pedidos antiguos"
    diff = semantic_diff(TAXI, _with_examples(shell))
    assert diff.computed_level is Level.L2
    (reason,) = diff.reasons
    assert reason.startswith("L2: a shell command or remote action under ## Examples")
    assert "; also a line under ## Examples is written in a language the level rules do not read (looks like es)" \
        in reason


def test_an_l2_part_is_not_touched_by_the_language_rule():
    """Instructions are L2 already: a French instruction gets no language reason."""
    new = TAXI_TEXT.replace("## Constraints\n", f"## Notes\n{FR}\n\n## Constraints\n", 1)
    assert new != TAXI_TEXT
    diff = semantic_diff(TAXI, skillfile.parse(new, "SKILL.md", "taxi-hailing"))
    assert diff.computed_level is Level.L2 and diff.reasons == ()
