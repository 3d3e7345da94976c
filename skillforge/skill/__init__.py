"""The skill file: SKILL.md parsing and writing (file), its YAML 1.2 subset (yaml12), a skill folder as a tree of
files (tree), export to agent folders (export), and the characters a skill may hold (chars)."""
