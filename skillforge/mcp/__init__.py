"""The agent-facing surface over MCP (`skillforge mcp`): skills_index, route, use_skill and
record_feedback on a workspace's live releases.

surface.py holds the work and imports no `mcp` (tests and benchmarks drive it directly);
server.py wires it into the official SDK's MCPServer (stdio, or streamable HTTP on loopback).
Only the `mcp` command imports server.py, so no other command pays for the SDK.
"""
