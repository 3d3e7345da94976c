"""What a fake endpoint answers for a tool call: minimal JSON values valid for a JSON schema."""

from __future__ import annotations

from collections.abc import Mapping

JSONDict = dict[str, object]
"""A decoded JSON object."""


def minimal_value(schema: object, root: Mapping[str, object], depth: int = 0) -> object:
    """The smallest value valid for a JSON `schema`: first enum value, "x", 0, False, [], or an
    object holding a minimal value for each required property. `$ref`s are resolved in `root`."""
    if not isinstance(schema, Mapping) or depth > 16:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str):  # a local pointer such as "#/$defs/Color"
        target: object = root
        for part in filter(None, ref.removeprefix("#").split("/")):
            target = target.get(part) if isinstance(target, Mapping) else None
        return minimal_value(target, root, depth + 1)
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            usable = [o for o in options if not (isinstance(o, Mapping) and o.get("type") == "null")]
            return minimal_value((usable or options)[0], root, depth + 1)
    typ = schema.get("type")
    if isinstance(typ, list):
        typ = next((t for t in typ if t != "null"), "null")
    if typ == "object" or (typ is None and "properties" in schema):
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        required = schema.get("required")
        names = [n for n in required if isinstance(n, str)] if isinstance(required, list) else []
        return {n: minimal_value(props.get(n, {}), root, depth + 1) for n in names}
    simple: dict[str, object] = {"string": "x", "integer": 0, "number": 0, "boolean": False, "array": []}
    return simple.get(typ, None) if isinstance(typ, str) else None


def pick_tool(body: JSONDict) -> JSONDict | None:
    """The function spec the request asks for: the one named by `tool_choice`, else the first tool."""
    tools, choice = body.get("tools"), body.get("tool_choice")
    functions: list[JSONDict] = [t["function"] for t in (tools if isinstance(tools, list) else [])
                                 if isinstance(t, dict) and isinstance(t.get("function"), dict)]
    named = choice.get("function") if isinstance(choice, dict) else None
    wanted = named.get("name") if isinstance(named, dict) else None
    return next((f for f in functions if f.get("name") == wanted), functions[0] if functions else None)
