"""SkillForge: route, evaluate and evolve agent skills (SKILL.md) safely."""

__version__ = "0.1.0"
