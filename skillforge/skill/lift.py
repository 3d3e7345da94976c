"""A strict export read back: `skills export --strict` moves SkillForge's fields (use_when, keywords,
examples, not_for, dependencies) under `metadata` as `skillforge.<key>` strings, lists as JSON. A
file holding them, and not the fields themselves, gets them back as the fields when it is read, so
an exported skill imported elsewhere routes as it did (its bytes are kept as they are)."""

from __future__ import annotations

import json
from collections.abc import Iterable


def lift_exported(fields: dict[str, object], prefix: str, string_keys: Iterable[str],
                  list_keys: Iterable[str]) -> dict[str, object]:
    """`fields` (check_text's, `metadata` among them) with each `<prefix><key>` metadata entry moved
    to its field when the field is empty; an entry that is not what the export writes (a list of
    strings as JSON) stays in metadata, as does one whose field the file sets itself."""
    metadata = dict(fields.get("metadata") or {})  # type: ignore[call-overload]
    out = dict(fields)
    for key in string_keys:
        value = metadata.get(prefix + key)
        if out.get(key) is None and isinstance(value, str):
            out[key] = metadata.pop(prefix + key)
    for key in list_keys:
        raw = metadata.get(prefix + key)
        if out.get(key) or not isinstance(raw, str):
            continue
        try:
            value = json.loads(raw)
        except ValueError:
            continue
        if isinstance(value, list) and all(isinstance(x, str) for x in value):
            out[key] = value
            del metadata[prefix + key]
    out["metadata"] = metadata
    return out
