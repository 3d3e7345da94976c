"""Prompt-injection phrases and paths out of a skill folder (pure, no I/O): the leak scan's patterns
for an unsafe patch, apart from what it copies (rules/leaks.py re-exports them: `from
skillforge.rules.leaks import INJECTION_PATTERNS, path_escapes` is the usual import)."""

from __future__ import annotations

import re

INJECTION_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?i)\b(?:ignore|disregard|forget|override)\b.{0,30}\b(?:previous|prior|above|earlier|all|"
               r"system|other)\b.{0,20}\b(?:instructions?|prompts?|rules?|messages?)\b"),
    re.compile(r"(?i)\byou are now\b|\bact as (?:an? )?(?:unrestricted|jailbroken|dan)\b|\bdeveloper mode\b|"
               r"\bjailbreak|\bdo anything now\b"),
    re.compile(r"(?i)\b(?:reveal|print|show|output|leak)\b.{0,25}\b(?:system prompt|hidden instructions|"
               r"your instructions|api key|secrets?)\b"),
    re.compile(r"(?i)\b(?:always|must)\b.{0,20}\b(?:choose|select|route to|pick)\b.{0,15}\bthis skill\b"),
    re.compile(r"(?:忽略|无视|忘记|忘掉)(?:掉)?(?:之前|以上|上面|前面|先前|所有|其他)?的?(?:所有)?(?:指令|指示|规则|提示|要求|设定)"),
    re.compile(r"系统提示词|系统提示|越狱|你现在是一个?(?:不受限制|没有限制)|开发者模式"),
)
PATH_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?:^|[\s'\"`(=:])\.\.(?:/|\\)"),
    re.compile(r"(?:^|[\s'\"`(=:])~[/\\]"),
    re.compile(r"(?:^|[\s'\"`(=:])/(?:etc|usr|var|home|root|tmp|proc|sys|dev|bin|sbin|opt|mnt|srv|boot|lib)(?:/|\b)"),
    re.compile(r"(?:^|[\s'\"`(=:])[A-Za-z]:\\"),
    re.compile(r"(?i)\bfile://"),
)


def path_escapes(relative: str) -> bool:
    """True when a patch's target path leaves its skill folder (absolute, `..`, or a drive)."""
    p = relative.replace("\\", "/")
    if not p or p.startswith("/") or p.startswith("~") or re.match(r"^[A-Za-z]:/", p):
        return True
    depth = 0
    for part in p.split("/"):
        if part in ("", "."):
            continue
        depth += -1 if part == ".." else 1
        if depth < 0:
            return True
    return False
