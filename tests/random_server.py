"""A local OpenAI-compatible server that answers every role at random: each structured request gets
schema-valid arguments drawn from a generator seeded by (seed, the request's messages with nonces
masked), so a resumed run is answered as the uninterrupted one would have been."""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Mapping

from skillforge.testing.openai_server import FakeOpenAIServer, Reply
from skillforge.testing.schema_values import JSONDict, pick_tool

WORDS = ["ok", "taxi", "叫车", "好的", "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE", "---", "name: x", "## Instructions",
         "FIX", "full", "search_replace", "1", "2", "3", "instruction_behaviour", "answer", "use_skill", "call_tool"]
NONCE = re.compile(r"sfn-[0-9a-f]+")


def random_value(schema: object, root: Mapping[str, object], rng: random.Random, depth: int = 0) -> object:
    """A random value valid for a JSON schema (enums, objects, arrays, strings, numbers, booleans)."""
    if not isinstance(schema, Mapping) or depth > 12:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target: object = root
        for part in filter(None, ref.removeprefix("#").split("/")):
            target = target.get(part) if isinstance(target, Mapping) else None
        return random_value(target, root, rng, depth + 1)
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return rng.choice(schema["enum"])
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return random_value(rng.choice(schema[key]), root, rng, depth + 1)
    typ = schema.get("type")
    if typ == "object" or "properties" in schema:
        props = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
        return {k: random_value(v, root, rng, depth + 1) for k, v in props.items()  # type: ignore[union-attr]
                if k in (schema.get("required") or []) or rng.random() < 0.5}
    if typ == "array":
        return [random_value(schema.get("items", {}), root, rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if typ == "integer":
        lo, hi = int(schema.get("minimum", -3)), int(schema.get("maximum", 5))  # type: ignore[arg-type]
        return rng.randint(lo, hi)
    if typ == "number":
        return rng.uniform(-1, 2)
    if typ == "boolean":
        return rng.random() < 0.5
    if typ == "null":
        return None
    return "\n".join(rng.choice(WORDS) for _ in range(rng.randint(0, 6)))


class RandomOpenAIServer(FakeOpenAIServer):
    """Every chat request with tools gets a random tool call; without tools, random text."""

    def __init__(self, seed: int = 0, **kw: object) -> None:
        super().__init__(default=Reply.auto(), **kw)  # type: ignore[arg-type]
        self.seed = seed

    def _answer(self, reply: Reply, body: JSONDict):  # noqa: ANN202 - the base class's private hook
        key = NONCE.sub("sfn-x", json.dumps(body.get("messages"), ensure_ascii=False, sort_keys=True))
        rng = random.Random(hashlib.sha256(f"{self.seed}\x1f{key}".encode()).digest())
        fn = pick_tool(body)
        if fn is None:
            return super()._answer(Reply.text(rng.choice(WORDS)), body)
        params = fn.get("parameters") if isinstance(fn.get("parameters"), dict) else {}
        args = random_value(params, params, rng)  # type: ignore[arg-type]
        return super()._answer(Reply.tool_call(str(fn.get("name")), args if isinstance(args, dict) else {}), body)
