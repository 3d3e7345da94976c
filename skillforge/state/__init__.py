"""Typed state: pydantic models shared by services, nodes and graphs; every field has a concrete type."""
