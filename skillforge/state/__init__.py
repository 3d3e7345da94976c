"""Typed state: pydantic models shared by services, nodes and graphs (no `Any`)."""
