"""Which endpoint and model each role uses, and the ChatOpenAI built from it.

For every setting of a role the first source that has it wins:
  1. env `SKILLFORGE_<ROLE>_<KEY>`     2. skillforge.toml `[llm.<role>]`
  3. env `SKILLFORGE_LLM_<KEY>`        4. skillforge.toml `[llm]`
  5. env `OPENAI_<KEY>` (model, base_url, api_key only)
If no role has an endpoint or model, the embedded local server (`skillforge llm serve`) is used
when it runs, with defaults for a slow serial CPU server (LOCAL_DEFAULTS: timeout 600 s, no
retries, its own context size). Otherwise the role is not configured and any call raises
LLMNotConfigured.
"""

from __future__ import annotations

import logging
import math
import difflib
import os
import tomllib
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlparse

from skillforge.errors import ConfigError, LLMNotConfigured
from skillforge.rules.servers import server_key
from skillforge.state.cliopts import MAX_CONCURRENCY  # noqa: F401  (the CLI's bound, without pydantic)
from skillforge.state.llm import Role

if TYPE_CHECKING:
    from skillforge.config import Workspace
    from skillforge.state.evolve import ProposerFormat

log = logging.getLogger(__name__)

CONFIG_FILE = "skillforge.toml"
DEFAULTS: dict[str, float | int] = {"timeout": 60.0, "max_retries": 2, "max_tokens": 1024, "temperature": 0.0,
                                    "price_in": 0.0, "price_out": 0.0, "context_tokens": 16384}
LOCAL_SOURCE = "local server"
LOCAL_N_CTX = 8192
"""The embedded server's context window unless its record says otherwise."""
LOCAL_DEFAULTS: dict[str, float | int] = {"timeout": 600.0, "max_retries": 0}
"""Against the embedded server: a cold 1.3k-token prompt takes 20-70 s on 2 CPU cores and requests
queue behind each other, so the remote default of 60 s times out; llama.cpp keeps computing a request
whose client gave up, so a retry only queues the same work again."""
LOCAL_PROPOSER_MAX_TOKENS = 3072
"""The embedded proposer's reply cap: three ops candidates with Chinese text measured over 1 024 tokens
(every round cut at the cap, benchmarks/evolution_local.py); 4.4k prompt + 3 072 fits n_ctx 8192."""
REMOTE_CONCURRENCY = 4
LOCAL_CONCURRENCY = 2
"""Cases in flight against the embedded server: it serialises requests, more only queue (and interleave
prompts, which costs prefix-cache hits)."""
STRING_KEYS = ("model", "base_url", "api_key")
NUMBER_KEYS = tuple(DEFAULTS)
OPENAI_KEYS = STRING_KEYS


@dataclass(frozen=True)
class RoleConfig:
    """Everything needed to call one role's model. `api_key` never appears in repr or status."""

    role: Role
    model: str | None
    base_url: str | None
    api_key: str | None
    timeout: float
    max_retries: int
    max_tokens: int
    temperature: float
    price_in: float
    """USD per million prompt tokens (0 for a local model)."""
    price_out: float
    source: str
    """Where the endpoint came from, e.g. 'env SKILLFORGE_JUDGE_*' or 'local server'."""
    context_tokens: int = int(DEFAULTS["context_tokens"])
    """The model's context window (prompt + reply); a prompt estimated beyond it is refused."""

    def __repr__(self) -> str:
        return f"RoleConfig({self.role.value}, model={self.model!r}, base_url={self.base_url!r}, source={self.source!r})"

    @property
    def configured(self) -> bool:
        return bool(self.model)

    @property
    def is_local(self) -> bool:
        host = urlparse(self.base_url or "").hostname or ""
        return host in ("127.0.0.1", "localhost", "::1")

    @property
    def identity(self) -> tuple[str | None, str | None]:
        """(endpoint, model), as shown and as the response cache keys it."""
        return (self.base_url or "https://api.openai.com/v1").rstrip("/"), self.model

    @property
    def model_key(self) -> tuple[str, str | None]:
        """(server, model): two roles with the same key are the same model (rules/servers.py:
        localhost and 127.0.0.1, a default port, a trailing slash name one server)."""
        return server_key(self.base_url), (self.model or "").strip().casefold() or None


class LocalEndpoint(NamedTuple):
    """The embedded server as the roles see it (a tuple: (url, model) still unpacks)."""

    url: str
    model: str
    n_ctx: int = LOCAL_N_CTX


def read_toml(root: Path | None) -> dict[str, object]:
    """The `[llm]` table of `root/skillforge.toml` ({} if there is no file)."""
    if root is None or not (root / CONFIG_FILE).is_file():
        return {}
    path = root / CONFIG_FILE
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: {e}") from None
    llm = data.get("llm", {})
    if not isinstance(llm, dict):
        raise ConfigError(f"{path}: [llm] must be a table")
    return llm


def _number(value: object, key: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ConfigError(f"{where}: {key} must be a number, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(f"{where}: {key} must be a number, got {value!r}") from None
    if not math.isfinite(number):  # nan passes `< 0` and then int() raised (an internal error)
        raise ConfigError(f"{where}: {key} must be a finite number, got {value!r}")
    if number < 0:
        raise ConfigError(f"{where}: {key} must not be negative, got {value!r}")
    return number


def _check_url(url: str, where: str) -> None:
    """An OpenAI-compatible endpoint is an http(s) URL with a host (and a numeric port if any):
    `http://[::1` or `http://x:abc/` was an internal error (InvalidURL) in the HTTP client."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
    except ValueError as e:
        raise ConfigError(f"{where}: base_url {url!r} is not a URL ({e})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{where}: base_url must be an http:// or https:// URL with a host, got {url!r}")


def resolve(role: Role, *, env: Mapping[str, str] | None = None, toml: Mapping[str, object] | None = None,
            local: tuple[str, str] | LocalEndpoint | None = None) -> RoleConfig:
    """The settings of one role. `local` is (url, model[, n_ctx]) of a running embedded server, if any.
    A role that falls back to it gets LOCAL_DEFAULTS and its context size for every number it does not set."""
    env = os.environ if env is None else env
    toml = toml or {}
    role_table = toml.get(role.value, {})
    if not isinstance(role_table, dict):
        raise ConfigError(f"{CONFIG_FILE}: [llm.{role.value}] must be a table")
    sources: list[tuple[str, Mapping[str, object]]] = [
        (f"env SKILLFORGE_{role.name}_*", {k: env[f"SKILLFORGE_{role.name}_{k.upper()}"]
                                          for k in (*STRING_KEYS, *NUMBER_KEYS)
                                          if f"SKILLFORGE_{role.name}_{k.upper()}" in env}),
        (f"{CONFIG_FILE} [llm.{role.value}]", role_table),
        ("env SKILLFORGE_LLM_*", {k: env[f"SKILLFORGE_LLM_{k.upper()}"] for k in (*STRING_KEYS, *NUMBER_KEYS)
                                  if f"SKILLFORGE_LLM_{k.upper()}" in env}),
        (f"{CONFIG_FILE} [llm]", {k: v for k, v in toml.items() if not isinstance(v, dict)}),
        ("env OPENAI_*", {k: env[f"OPENAI_{k.upper()}"] for k in OPENAI_KEYS if f"OPENAI_{k.upper()}" in env}),
    ]
    found: dict[str, object] = {}
    origin: dict[str, str] = {}
    for where, table in sources:
        for key, value in table.items():
            if key not in (*STRING_KEYS, *NUMBER_KEYS):
                if not where.startswith("env") and (where, key) not in _WARNED:  # once a process (QA 42 F6)
                    _WARNED.add((where, key))
                    log.warning("%s: unknown key '%s' ignored", where, key)
                continue
            if key not in found and value not in (None, ""):
                found[key], origin[key] = value, where
    source = origin.get("base_url") or origin.get("model") or "not configured"
    if "base_url" in origin and "model" in origin and origin["model"] != origin["base_url"]:
        source = f"{origin['model']} (model), {origin['base_url']} (endpoint)"  # a judge model on the shared endpoint
    defaults = DEFAULTS
    if "model" not in found and "base_url" not in found and local is not None:
        found.update(base_url=local[0], model=local[1])
        found.setdefault("api_key", "local")
        source = LOCAL_SOURCE
        defaults = {**DEFAULTS, **LOCAL_DEFAULTS, "context_tokens": local[2] if len(local) > 2 else LOCAL_N_CTX,
                    **({"max_tokens": LOCAL_PROPOSER_MAX_TOKENS} if role is Role.PROPOSER else {})}
    numbers = {k: _number(found.get(k, defaults[k]), k, origin.get(k, "default")) for k in NUMBER_KEYS}
    for key in STRING_KEYS:
        if key in found and not isinstance(found[key], str):
            raise ConfigError(f"{origin[key]}: {key} must be a string")
    if "base_url" in found:
        _check_url(str(found["base_url"]), origin.get("base_url", "default"))
    return RoleConfig(role=role, model=found.get("model"), base_url=found.get("base_url"),  # type: ignore[arg-type]
                      api_key=found.get("api_key"), timeout=numbers["timeout"],  # type: ignore[arg-type]
                      max_retries=int(numbers["max_retries"]), max_tokens=int(numbers["max_tokens"]),
                      temperature=numbers["temperature"], price_in=numbers["price_in"],
                      price_out=numbers["price_out"], source=source, context_tokens=int(numbers["context_tokens"]))


def resolve_all(*, env: Mapping[str, str] | None = None, toml: Mapping[str, object] | None = None,
                local: tuple[str, str] | LocalEndpoint | None = None, grading: bool = True) -> dict[Role, RoleConfig]:
    """Every role's settings; warns when the judge is the proposer's own model, unless `grading` is
    False (routing, which uses only the router role, has nothing to say about judges)."""
    configs = {role: resolve(role, env=env, toml=toml, local=local) for role in Role}
    judge, proposer = configs[Role.JUDGE], configs[Role.PROPOSER]
    if grading and judge.configured and judge.model_key == proposer.model_key:
        log.warning("judge and proposer resolve to the same model (%s at %s): a model grading its own "
                    "proposals is biased; set SKILLFORGE_JUDGE_MODEL to another model", judge.model, judge.identity[0])
    return configs


PROPOSER_FORMAT_ENV = "SKILLFORGE_PROPOSER_FORMAT"
PROPOSER_FORMATS = ("ops", "search_replace", "full", "auto")
DEFAULT_PROPOSER_FORMAT = "auto"


def _setting(ws: Workspace | None, env: Mapping[str, str] | None, env_key: str, table: str,
             key: str) -> tuple[object, str]:
    """(value, where it came from) of one evolve-loop setting: env `env_key`, else skillforge.toml
    `[table] key`, else (None, ""). ConfigError for an unreadable skillforge.toml."""
    env = os.environ if env is None else env
    value: object = env.get(env_key) or None
    if value is not None:
        return value, f"env {env_key}"
    section = _table(ws, table)
    return (section.get(key), f"{CONFIG_FILE} [{table}] {key}") if section else (None, "")


def _whole(ws: Workspace | None) -> dict[str, object]:
    """skillforge.toml whole ({} without a file). ConfigError for an unreadable file."""
    if ws is None or not (ws.root / CONFIG_FILE).is_file():
        return {}
    path = ws.root / CONFIG_FILE
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: {e}") from None


def _table(ws: Workspace | None, table: str) -> dict[str, object]:
    """skillforge.toml's `[table]` ({} without a file or the table). ConfigError for an unreadable
    file, or a `table` that is not a table."""
    section = _whole(ws).get(table, {})
    if not isinstance(section, dict):
        raise ConfigError(f"{ws.root / CONFIG_FILE}: [{table}] must be a table")  # type: ignore[union-attr]
    return section


def proposer_format(ws: Workspace | None, env: Mapping[str, str] | None = None) -> ProposerFormat:
    """The `proposer.format` setting: env SKILLFORGE_PROPOSER_FORMAT, else skillforge.toml
    `[proposer] format`, else auto. ConfigError for a value that is not a format."""
    from skillforge.state.evolve import ProposerFormat

    value, where = _setting(ws, env, PROPOSER_FORMAT_ENV, "proposer", "format")
    if value is None:
        return ProposerFormat(DEFAULT_PROPOSER_FORMAT)
    if not isinstance(value, str) or value.strip().lower() not in PROPOSER_FORMATS:
        raise ConfigError(f"{where}: must be one of {', '.join(PROPOSER_FORMATS)}, got {value!r}")
    return ProposerFormat(value.strip().lower())


NEIGHBOURS_ENV = "SKILLFORGE_EVOLVE_NEIGHBOURS"


def evolve_neighbours(ws: Workspace | None, env: Mapping[str, str] | None = None) -> int | None:
    """The `evolve.neighbours` setting: how many reworded failures join each candidate's selection
    cases. Env SKILLFORGE_EVOLVE_NEIGHBOURS, else skillforge.toml `[evolve] neighbours`, else None
    (auto: evolution/validate.py picks by model). ConfigError for anything but 0..64 or "auto"."""
    value, where = _setting(ws, env, NEIGHBOURS_ENV, "evolve", "neighbours")
    if value is None or (isinstance(value, str) and value.strip().lower() == "auto"):
        return None
    try:
        n = int(value) if not isinstance(value, bool) and isinstance(value, (int, str)) else -1
    except ValueError:
        n = -1
    if not 0 <= n <= 64:
        raise ConfigError(f"{where}: must be a whole number from 0 to 64, or auto; got {value!r}")
    return n


CANARY_ENV = "SKILLFORGE_EVOLVE_CANARY"


def evolve_canary(ws: Workspace | None, env: Mapping[str, str] | None = None) -> float | None:
    """The `evolve.canary` setting: the share of sessions an L1 result is served as a canary before
    it goes live (e.g. "10%"). Env SKILLFORGE_EVOLVE_CANARY, else skillforge.toml `[evolve] canary`,
    else None (L1 results are published at once). ConfigError for anything but a share or "off"."""
    from skillforge.rules.canary import parse_share, share_range

    value, where = _setting(ws, env, CANARY_ENV, "evolve", "canary")
    if value is None or (isinstance(value, str) and value.strip().lower() in ("off", "none", "0", "0%")):
        return None
    share = parse_share(str(value)) if isinstance(value, str | int | float) and not isinstance(value, bool) else None
    if share is None:
        raise ConfigError(f"{where}: must be a share of sessions {share_range()} (e.g. \"10%\"), or off; got {value!r}")
    return share


EVOLVE_TABLES = {"proposer": ("format",), "evolve": ("neighbours", "canary")}
"""The evolve loop's skillforge.toml tables and their keys (evolve_settings refuses any other key)."""
TOP_LEVEL = frozenset({"llm", "proposer", "evolve", "sessions"})
"""skillforge.toml's tables (a top-level key near an evolve table's name, or an evolve key at the top, is refused)."""
_WARNED: set[tuple[str, str]] = set()
"""The unknown skillforge.toml keys this process has warned about (each role's settings read them again)."""


def evolve_settings(ws: Workspace | None, env: Mapping[str, str] | None = None) -> None:
    """ConfigError when a setting an evolve run reads mid-way (proposer.format, evolve.neighbours,
    evolve.canary) is not valid: checked before a run starts or resumes, so a typo costs no request
    and leaves no open run (QA 42 F1: it surfaced after analyze or propose had paid). A key of
    [proposer] or [evolve] that is none of these is an error too: `canery = "10%"` left out would
    publish an L1 fix live at once, `neighbors = 0` spend the neighbours' requests."""
    proposer_format(ws, env)
    evolve_neighbours(ws, env)
    evolve_canary(ws, env)
    for key in sorted(_whole(ws)):  # a misspelt table, or an evolve key outside its table (QA 48 F2)
        meant = next((t for t, keys in EVOLVE_TABLES.items() if key in keys or key == "neighbors"), None)
        near = meant or next(iter(difflib.get_close_matches(key.casefold(), list(EVOLVE_TABLES), n=1)), None)
        if key not in TOP_LEVEL and near is not None:
            where = f"[{near}] {key}" if meant else f"[{near}]"
            raise ConfigError(f"{CONFIG_FILE}: unknown table or key '{key}' (did you mean {where}?); the evolve "
                              f"settings are {', '.join(f'[{t}] {k}' for t, ks in EVOLVE_TABLES.items() for k in ks)}")
    for table, known in EVOLVE_TABLES.items():
        for key in sorted(_table(ws, table)):
            if key not in known:
                near = difflib.get_close_matches(key, known, n=1)
                hint = f" (did you mean '{near[0]}'?)" if near else ""
                raise ConfigError(f"{CONFIG_FILE} [{table}]: unknown key '{key}'{hint}; the keys are "
                                  f"{', '.join(known)}")


def local_endpoint(ws: Workspace | None) -> LocalEndpoint | None:
    """(url, model, n_ctx) of the embedded server of this workspace, if it runs."""
    if ws is None:
        return None
    try:
        from skillforge.llm.local_server import find_server
    except ImportError:  # pragma: no cover
        return None
    info = find_server(ws)
    return LocalEndpoint(info.url, info.model, info.n_ctx) if info is not None else None


def workspace_configs(ws: Workspace | None, *, grading: bool = True) -> dict[Role, RoleConfig]:
    """Every role's settings for a workspace: env, its skillforge.toml, its embedded server. Cheap
    (no openai, no langchain): `route_context` asks it whether a router model is set at all."""
    return resolve_all(toml=read_toml(ws.root if ws else None), local=local_endpoint(ws), grading=grading)


def runs_locally(configs: Mapping[Role, RoleConfig]) -> bool:
    """Whether the executor or the judge is the embedded server (one request at a time)."""
    roles = (configs.get(Role.EXECUTOR), configs.get(Role.JUDGE))
    return any(c is not None and c.source == LOCAL_SOURCE for c in roles)


def default_concurrency(configs: Mapping[Role, RoleConfig]) -> int:
    """Cases run at once when the user does not say: LOCAL_CONCURRENCY if the executor or the judge
    is the embedded server, else REMOTE_CONCURRENCY."""
    return LOCAL_CONCURRENCY if runs_locally(configs) else REMOTE_CONCURRENCY


def chat_model(cfg: RoleConfig, *, on_request: Callable[[Any], None] | None = None,  # noqa: ANN201 - ChatOpenAI,
               on_response: Callable[[Any], None] | None = None):  # imported lazily (slow import)
    """A ChatOpenAI for the role. `max_tokens` goes in `extra_body`: langchain-openai sends
    `max_completion_tokens`, which llama.cpp's server ignores (generation would run to n_ctx).
    `on_request` / `on_response` are hooks of its HTTP client, run for every request it sends
    (each retry of the openai client too) and every answer: an exception from `on_request` stops
    the request before it is sent and propagates, not retried (the openai client retries only
    transport errors)."""
    if not cfg.configured:
        raise LLMNotConfigured(f"no model for role '{cfg.role.value}': set SKILLFORGE_LLM_MODEL and "
                               f"SKILLFORGE_LLM_BASE_URL (or SKILLFORGE_{cfg.role.name}_*), or run `skillforge llm serve`")
    import openai
    from langchain_openai import ChatOpenAI

    hooks = {"request": [on_request] if on_request else [], "response": [on_response] if on_response else []}
    http = openai.DefaultHttpxClient(event_hooks=hooks) if on_request or on_response else None
    return ChatOpenAI(model=cfg.model, base_url=cfg.base_url, api_key=cfg.api_key or "unused",
                      timeout=cfg.timeout, max_retries=cfg.max_retries, temperature=cfg.temperature,
                      extra_body={"max_tokens": cfg.max_tokens}, http_client=http)
