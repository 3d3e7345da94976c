"""Frontmatter YAML read the way agents read it: YAML 1.2 core schema, duplicate keys refused,
and bounded before anything is built (an alias bomb is refused from its event stream, so it
never expands in memory).

YAML 1.2 core differs from PyYAML's YAML 1.1 in what a plain scalar means: only true/false are
booleans (`no`, `yes`, `on`, `off` are strings), only `null`/`~`/empty are null, `017` is the
int 17, `0o17` is octal, `1e5` is a float, and dates, `1_000` and `1:30` are strings.
The dumper quotes every string that YAML 1.1 *or* 1.2 would read as something else, so what it
writes means the same to both (and `parse(render(x)) == x`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode

from skillforge.rules.frontmatter import (
    MAX_ALIASES,
    MAX_DEPTH,
    MAX_EXPANDED_CHARS,
    MAX_EXPANDED_NODES,
    Expansion,
    expansion_violation,
)

try:  # the C parser and emitter are ~10x faster; registry load time depends on them
    from yaml import CSafeDumper as _BaseDumper
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - PyYAML without libyaml
    from yaml import SafeDumper as _BaseDumper  # type: ignore[assignment]
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

_STR = "tag:yaml.org,2002:str"
_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_NULL = "tag:yaml.org,2002:null"

# (tag, regexp, first characters): the YAML 1.2.2 core schema, section 10.3.2.
CORE_RESOLVERS: list[tuple[str, re.Pattern[str], list[str]]] = [
    (_NULL, re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]),
    (_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")),
    (_INT, re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), list("-+0123456789")),
    (_FLOAT, re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"), list("-+.0123456789")),
]


class DuplicateKeyError(yaml.YAMLError):
    """A mapping holds the same key twice. Parsers disagree on which value wins, so it is refused."""

    def __init__(self, path: str, first_line: int, second_line: int) -> None:
        self.path = path
        self.first_line = first_line
        self.second_line = second_line
        super().__init__(f"duplicate key '{path}' (lines {first_line} and {second_line})")


class ExpansionError(yaml.YAMLError):
    """The document passes a bound of rules.frontmatter (size, aliases, values, text, depth, a cycle)."""

    def __init__(self, rule: str) -> None:
        self.rule = rule
        super().__init__(rule)


class CoreLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    """A safe loader with YAML 1.2 core resolvers and a duplicate-key check. `line_offset` is
    added to reported line numbers (the frontmatter starts after the opening `---`)."""

    yaml_implicit_resolvers: dict[str | None, list[tuple[str, re.Pattern[str]]]] = {}
    line_offset = 0
    paths: dict[int, str] = {}
    """Key path of each mapping node (by id), so a duplicate key is named in full."""

    def construct_yaml_int(self, node: ScalarNode) -> int:
        """1.2 ints: decimal (a leading 0 is still decimal), 0o octal, 0x hex."""
        value = str(self.construct_scalar(node))
        if value.startswith("0o"):
            return int(value[2:], 8)
        if value.startswith("0x"):
            return int(value[2:], 16)
        return int(value, 10)

    def construct_yaml_float(self, node: ScalarNode) -> float:
        """1.2 floats, including .inf and .nan (an explicit !!float of another shape is refused)."""
        value = str(self.construct_scalar(node)).lower()
        if value.lstrip("+-") == ".inf":
            return -math.inf if value.startswith("-") else math.inf
        if value == ".nan":
            return math.nan
        try:
            return float(value)
        except ValueError:
            raise ConstructorError(None, None, f"'{value}' is not a YAML 1.2 float", node.start_mark) from None

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[object, object]:
        """A mapping whose keys are all distinct; the same key twice is a DuplicateKeyError."""
        seen: dict[object, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:
                raise ConstructorError("while constructing a mapping", node.start_mark,
                                       "found an unhashable key", key_node.start_mark) from None
            line = key_node.start_mark.line + 1 + self.line_offset
            if first is not None:
                parent = self.paths.get(id(node), "")
                raise DuplicateKeyError(f"{parent}.{key}" if parent else str(key), first, line)
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


for _tag, _regexp, _first in CORE_RESOLVERS:
    CoreLoader.add_implicit_resolver(_tag, _regexp, _first)
CoreLoader.add_constructor(_INT, CoreLoader.construct_yaml_int)
CoreLoader.add_constructor(_FLOAT, CoreLoader.construct_yaml_float)


class CoreDumper(_BaseDumper):  # type: ignore[misc,valid-type]
    """The safe dumper, also quoting strings that YAML 1.2 core reads as non-strings (`1e5`, `0o7`)."""


for _tag, _regexp, _first in CORE_RESOLVERS:
    CoreDumper.add_implicit_resolver(_tag, _regexp, _first)


@dataclass
class _Open:
    """A collection being walked: its anchor and what it holds so far, aliases expanded."""

    anchor: str | None
    nodes: int = 1
    chars: int = 0
    height: int = 1


def measure(text: str) -> Expansion:
    """Walk the event stream (no nodes are built) and measure the document with every alias
    expanded: alias uses, values, text, depth, and any alias used inside its own anchor.
    Stops as soon as a bound is passed, so a bomb costs no more than the bound."""
    loader = CoreLoader(text)
    stack: list[_Open] = []
    anchors: dict[str, tuple[int, int, int]] = {}  # closed anchor -> (nodes, chars, height)
    aliases = nodes = chars = depth = 0
    try:
        while loader.check_event():
            ev = loader.get_event()
            if isinstance(ev, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                stack.append(_Open(ev.anchor))
                nodes += 1
                depth = max(depth, len(stack))
            elif isinstance(ev, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                done = stack.pop()
                size = (done.nodes, done.chars, done.height)
                if done.anchor:
                    anchors[done.anchor] = size
                _add(stack, size)
            elif isinstance(ev, yaml.ScalarEvent):
                size = (1, len(ev.value), 0)
                if ev.anchor:
                    anchors[ev.anchor] = size
                nodes, chars = nodes + 1, chars + len(ev.value)
                _add(stack, size)
            elif isinstance(ev, yaml.AliasEvent):
                aliases += 1
                if any(o.anchor == ev.anchor for o in stack):
                    return Expansion(chars=len(text), aliases=aliases, recursive_alias=ev.anchor)
                size = anchors.get(ev.anchor, (1, 0, 0))  # an undefined alias fails when composed
                nodes, chars = nodes + size[0], chars + size[1]
                depth = max(depth, len(stack) + size[2])
                _add(stack, size)
            if aliases > MAX_ALIASES or nodes > MAX_EXPANDED_NODES or chars > MAX_EXPANDED_CHARS or depth > MAX_DEPTH:
                break  # over a bound already: stop walking a bomb
    finally:
        loader.dispose()
    return Expansion(chars=len(text), aliases=aliases, nodes=nodes, expanded_chars=chars, depth=depth)


def _add(stack: list[_Open], size: tuple[int, int, int]) -> None:
    """Count a finished value (nodes, chars, height) into the collection that holds it."""
    if stack:
        top = stack[-1]
        top.nodes += size[0]
        top.chars += size[1]
        top.height = max(top.height, size[2] + 1)


def load_bounded(text: str, line_offset: int = 0) -> tuple[Node | None, object]:
    """(root node, data) of one YAML document read as YAML 1.2 core, after its size and then its
    event stream are measured: past a bound it is an ExpansionError and nothing is built."""
    rule = expansion_violation(Expansion(chars=len(text)))
    if rule is None:
        rule = expansion_violation(measure(text))
    if rule is not None:
        raise ExpansionError(rule)
    return compose(text, line_offset)


def compose(text: str, line_offset: int = 0) -> tuple[Node | None, object]:
    """(root node, data) of one YAML document read with CoreLoader, unbounded: see load_bounded."""
    loader = CoreLoader(text)
    loader.line_offset = line_offset
    try:
        node = loader.get_single_node()
        loader.paths = _mapping_paths(node)
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError:
        raise
    except Exception as e:  # noqa: BLE001 - PyYAML's constructors fail in many ways on hostile input
        # (`!!bool maybe` a KeyError, `!!timestamp nope` an AttributeError, a 5000-digit int a ValueError)
        raise ConstructorError(None, None, f"cannot build a value: {type(e).__name__}: {e}", None) from None
    finally:
        loader.dispose()
    return node, data


def _mapping_paths(root: Node | None) -> dict[int, str]:
    """The dotted key path of every mapping node below the root (e.g. `metadata`), by node id."""
    paths: dict[int, str] = {}
    todo: list[tuple[Node | None, str]] = [(root, "")]
    while todo:
        node, path = todo.pop()
        if node is None or id(node) in paths:
            continue
        if isinstance(node, MappingNode):
            paths[id(node)] = path
            todo += [(v, f"{path}.{k.value}" if path else str(k.value)) for k, v in node.value if isinstance(k, ScalarNode)]
        elif isinstance(node, yaml.SequenceNode):
            todo += [(v, path) for v in node.value]
    return paths


def mapping_sources(node: Node | None, key: str) -> list[tuple[str | None, str | None]]:
    """For the mapping under top-level `key`, pair by pair in order: the source text of the key
    and of the value when it is a plain (unquoted) scalar read as a non-string, else None.
    So `1.10` can stay "1.10" where a string is expected, instead of str(1.1)."""
    if not isinstance(node, MappingNode):
        return []
    for k, v in node.value:
        if isinstance(k, ScalarNode) and k.value == key and isinstance(v, MappingNode):
            return [(_source(kk), _source(vv)) for kk, vv in v.value]
    return []


def top_level_sources(node: Node | None) -> dict[str, str]:
    """Top-level key -> source text of its value, for plain scalar values read as non-strings."""
    if not isinstance(node, MappingNode):
        return {}
    return {str(k.value): src for k, v in node.value
            if isinstance(k, ScalarNode) and k.tag == _STR and (src := _source(v)) is not None}


def _source(node: Node) -> str | None:
    if isinstance(node, ScalarNode) and not node.style and node.tag != _STR:  # plain: '' (C parser) or None
        return str(node.value)
    return None


def dump(data: dict[str, object]) -> str:
    """Block-style YAML, unicode kept, keys in order, strings quoted when 1.1 or 1.2 would misread them."""
    return yaml.dump(data, Dumper=CoreDumper, allow_unicode=True, sort_keys=False, width=1 << 20,
                     default_flow_style=False)
