"""Lines in a language the level rules do not read (skillforge/rules/language.py): false flags and catches.

(a) false flags: every line of every shipped SKILL.md (skills/, tests/fixtures/, and ../shared/bench
    when present), each frontmatter item and every body line, code fences included, read as if a
    patch added it; the lines of the L1 parts (description, examples, not_for, the body's Examples
    sections) are counted apart, since only they are raised. Every flagged line is printed.
(b) catches: the French, German and Spanish lines of benchmarks/constraint_corpus.json (held out: not
    used to choose a threshold), the QA17 not_for variations, and the English/Chinese corpus lines
    (which must not be flagged).
(c) time: first call (wordfreq import and its lists) and the mean cost per line after it.
`python benchmarks/language_lines.py [--no-shared]`. Exits 0.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

t0 = time.perf_counter()
from skillforge.rules.language import unread_language
from skillforge.rules.levels import (
    FIELD_LEVELS,
    Level,
    _as_lines,
    _section_level,
    sections,
)

QA17 = [("fr", "demander l'accord de l'utilisateur avant de supprimer une sauvegarde"),
        ("de", "Rückfrage beim Nutzer vor dem Löschen eines Dumps"),
        ("es", "pedir confirmación antes de borrar un volcado"),
        ("ja", "削除前にユーザーに確認すること"),
        ("zh", "在删除备份之前询问用户"), ("zh", "刪除備份前先詢問使用者")]
_FR = re.compile(r"[àâçéèêëîïôûùœ]|\b(?:le|la|les|des|une|avant|sans|supprimer|effacer|envoyer)\b")
_DE = re.compile(r"[äöüß]|\b(?:die|der|das|den|dem|ein|eine|einen|an|und|vor|beim|sofort|nur)\b")
_ES = re.compile(r"[áíóúñ¿]|\b(?:el|los|las|de|del|antes|borrar|enviar|eliminar|hacer)\b")


from constraint_semantic import shipped  # noqa: E402 - the same shipped SKILL.md set (benchmarks/ is on sys.path)


def lines_of(skill) -> list[tuple[bool, str, str]]:
    """(in an L1 part, part, line) for every non-blank line of the skill."""
    out = []
    for name, level in FIELD_LEVELS.items():
        out.extend((level is Level.L1, name, ln) for ln in _as_lines(getattr(skill, name)) if ln.strip())
    for heading, lines in sections(skill.body).items():
        out.extend((_section_level(heading) is Level.L1, f"## {heading}", ln) for ln in lines if ln.strip())
    return out


def corpus_language(line: str) -> str:
    if re.search(r"[\u4e00-\u9fff]", line):
        return "zh"
    for lang, pattern in (("fr", _FR), ("de", _DE), ("es", _ES)):
        if pattern.search(line) and not re.search(r"\b(?:the|to|and|of|with)\b", line):
            return lang
    return "en"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-shared", action="store_true")
    args = ap.parse_args()
    t1 = time.perf_counter()
    unread_language("warm the word lists up")
    first = time.perf_counter() - t1
    skills = shipped(not args.no_shared)
    total = l1 = 0
    flags: list[tuple[str, bool, str, str, str]] = []
    t2 = time.perf_counter()
    for path, skill in skills:
        for in_l1, part, line in lines_of(skill):
            total += 1
            l1 += in_l1
            if (lang := unread_language(line)) is not None:
                flags.append((path, in_l1, part, lang, line))
    per_line = (time.perf_counter() - t2) / max(total, 1)
    print(f"(a) {len(skills)} SKILL.md, {total} lines ({l1} in L1 parts): {len(flags)} flagged "
          f"({sum(f[1] for f in flags)} in L1 parts)")
    for path, in_l1, part, lang, line in flags:
        print(f"    {'L1 ' if in_l1 else '   '}{lang:4} {path} {part}: {line[:110]!r}")
    corpus = json.loads((ROOT / "benchmarks" / "constraint_corpus.json").read_text(encoding="utf-8"))["lines"]
    by_lang: dict[str, list[int]] = {}
    for _act, _violates, line in corpus:
        lang = corpus_language(line)
        hit = unread_language(line)
        by_lang.setdefault(lang, [0, 0])
        by_lang[lang][0] += hit is not None
        by_lang[lang][1] += 1
        if (hit is None) == (lang in ("fr", "de", "es")):
            print(f"    {'MISS' if hit is None else 'FLAG'} {lang} {hit}: {line!r}")
    print("(b) corpus flagged/lines by language: "
          + ", ".join(f"{k} {v[0]}/{v[1]}" for k, v in sorted(by_lang.items())))
    for lang, line in QA17:
        print(f"    QA17 {lang}: {unread_language(line)} {line!r}")
    print(f"(c) import {t1 - t0:.2f} s (rules), first call {first:.2f} s, then {per_line * 1e6:.0f} µs per line")


if __name__ == "__main__":
    main()
