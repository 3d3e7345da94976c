"""Agent sessions: this package owns reading agent session transcripts (Claude Code, Codex CLI,
generic JSONL), read-only, into `skillforge.state.sessions` models, and harvesting evaluation cases
from them. Formats: docs/sessions.md."""

from __future__ import annotations

from skillforge.sessions.sources import read_sessions

__all__ = ["read_sessions"]
