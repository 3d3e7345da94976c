"""Every LLM call of SkillForge goes through `LLM`: chat models by role, a response cache, the request
ledger with hard caps, and failures mapped to named errors (never cached, never a traceback).

    llm = build_llm(workspace)                       # or LLM(configs, models={Role.JUDGE: fake})
    answer = llm.structured(Role.JUDGE, Verdict, messages, choices={"winner": {"A", "B", "tie"}})
    answer.value, answer.cached, answer.latency_ms, llm.ledger.calls

Structured output uses `with_structured_output(schema, method="function_calling")`, the only
method that works against llama.cpp's server; its two halves (bound model, parser) are invoked
separately so the raw reply's usage and finish_reason stay visible. Retries with exponential backoff
(and Retry-After) are the openai client's, `max_retries` per role.

Budget: the chat models this class builds send through an HTTP client whose request hook admits every
request in the ledger (skillforge/llm/ledger.py) before it leaves, retries and redirects included: a
request that would pass a cap is refused there (BudgetExceeded, nothing sent). A model given to the
class (a scripted fake) is admitted once per call. A cache hit is recorded as `cached`.

Interruptions: only an `Exception` is a failure of the call. Anything else (the CLI's CtrlC,
KeyboardInterrupt, SystemExit) propagates unchanged, so a Ctrl-C during a model call stops the run
instead of becoming an "unusable answer". `stop()` (the CLI calls it on Ctrl-C) makes every later
request of this object raise `CallsStopped` before it is sent, so the worker threads of an
interrupted run end at their next call.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, convert_to_messages, messages_to_dict
from langchain_core.runnables import Runnable, RunnableSequence
from pydantic import BaseModel

from skillforge.config import Workspace
from skillforge.errors import ContextOverflow, InvalidLLMOutput, LLMError, LLMNotConfigured
from skillforge.llm.cache import CACHE_FILE, LLMCache, cache_key
from skillforge.llm.config import RoleConfig, chat_model, runs_locally, workspace_configs
from skillforge.llm.ledger import RequestLedger, RunBudget
from skillforge.llm.replies import (Shape, answer_shape, map_error, never_connected, odd_usage, one_tool_call,
                                   reply_excerpt, reported_usage)
from skillforge.rules.budget import call_cost, estimate_prompt_tokens
from skillforge.state.llm import BudgetCaps, Role

log = logging.getLogger(__name__)
NO_CACHE_ENV = "SKILLFORGE_NO_CACHE"
M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")
MessagesIn = Sequence[BaseMessage | tuple[str, str] | str]


@dataclass(frozen=True)
class LLMAnswer(Generic[T]):
    value: T
    cached: bool
    latency_ms: float
    prompt_tokens: int
    completion_tokens: int
    model: str


@functools.lru_cache(maxsize=256)
def schema_json(schema: type[BaseModel]) -> str:
    """The schema's JSON text, part of the cache key (memoised: pydantic rebuilds it each call)."""
    return json.dumps(schema.model_json_schema(), sort_keys=True)


@functools.lru_cache(maxsize=256)
def schema_tokens(schema: type[BaseModel]) -> int:
    """What the schema adds to a request, estimated on its UTF-8 text: the \\u escapes of the cache
    key's text would count a CJK character (an ops anchor of a Chinese skill) twice."""
    return estimate_prompt_tokens([json.dumps(schema.model_json_schema(), ensure_ascii=False)])


def _usage_of(hit: Mapping[str, object]) -> tuple[int, int]:
    """The tokens the cached answer cost when it was made (reported, not spent again)."""
    usage = hit.get("usage")
    return (int(usage[0]), int(usage[1])) if isinstance(usage, list) and len(usage) == 2 else (0, 0)


class CallsStopped(BaseException):
    """The run is being interrupted: the request was not sent. A BaseException, like the interruption
    itself, so that no caller takes it for a model failure (and an evaluation case for INVALID)."""


@dataclass
class _Call:
    """The call in progress on one thread: the ledger it counts in, what each of its requests
    reserves (estimated prompt + reply cap), the ledger rows of the requests sent so far, and the
    HTTP status each one was answered with."""

    ledger: RunBudget
    worst_tokens: int
    worst_cost: float
    sent: list[int] = field(default_factory=list)
    status: dict[int, int] = field(default_factory=dict)
    shape: Shape = Shape()
    """What the last answer holds that the client hides (replies.answer_shape)."""
    unreached: bool = False
    """The call failed to connect at all (refused, no route): no request reached an endpoint."""


class LLM:
    """The chat models of one run, with their cache and its budget (a run's view of the request
    ledger: an in-memory one unless given). Thread-safe."""

    def __init__(self, configs: Mapping[Role, RoleConfig], models: Mapping[Role, BaseChatModel] | None = None, *,
                 cache: LLMCache | None = None, ledger: RunBudget | None = None, refresh_cache: bool = False) -> None:
        self.configs = dict(configs)
        self._models: dict[Role, BaseChatModel] = dict(models or {})
        self._metered_http: set[Role] = set()
        """Roles whose model this object built: their HTTP requests are admitted one by one."""
        self.cache = cache
        self.refresh_cache = refresh_cache
        """Read nothing from the cache, store every fresh answer over the old one (--no-cache)."""
        self.ledger = ledger if ledger is not None else RunBudget.adhoc()
        self._lock = threading.Lock()
        self._local = threading.local()
        self._stopped = False
        self._runnables: dict[tuple[Role, type[BaseModel]], tuple[Runnable, Runnable]] = {}
        self._one_case = threading.RLock() if runs_locally(self.configs) else None

    @contextmanager
    def one_case(self) -> Iterator[None]:
        """Held around one case's executions and judgements when the executor or the judge is the
        embedded server. That server answers one request at a time from one prompt state, so two
        interleaved cases make it restore the other case's cached state before every request; held
        per case, each request extends the previous prompt. Cases still run in a pool of >= 2, so
        a finished case's checkpoint write never waits behind a running case. A no-op elsewhere."""
        if self._one_case is None:
            yield
            return
        with self._one_case:
            yield

    def model(self, role: Role) -> BaseChatModel:
        with self._lock:
            if role not in self._models:
                self._models[role] = chat_model(self.configs[role], on_request=functools.partial(self._sending, role),
                                                on_response=self._answered)
                self._metered_http.add(role)
            return self._models[role]

    def stop(self) -> None:
        """Send no request from now on (called from a signal handler: it only sets a flag)."""
        self._stopped = True

    def _check_stopped(self) -> None:
        if self._stopped:
            raise CallsStopped("the run is being interrupted: no new request is sent")

    def _sending(self, role: Role, request: object) -> None:
        """The HTTP client's request hook, run before every request leaves (each retry too): admit it
        in the ledger, or refuse it (BudgetExceeded propagates through the openai client unretried).
        A request outside `structured`/`text` reserves the role's whole context window."""
        self._check_stopped()
        call: _Call | None = getattr(self._local, "call", None)
        if call is None:
            cfg = self.configs[role]
            call = _Call(self.ledger, cfg.context_tokens, call_cost(cfg.context_tokens, cfg.max_tokens,
                                                                    cfg.price_in, cfg.price_out))
        call.sent.append(call.ledger.admit(role, call.worst_tokens, call.worst_cost))

    def _answered(self, response: object) -> None:
        """The HTTP client's response hook: the status the last request sent was answered with."""
        call: _Call | None = getattr(self._local, "call", None)
        if call is not None and call.sent:
            call.status[call.sent[-1]] = int(getattr(response, "status_code", 0))
            call.shape = answer_shape(response)

    # ---- public calls ---------------------------------------------------------------------
    def structured(self, role: Role, schema: type[M], messages: MessagesIn, *,
                   choices: Mapping[str, Collection[object]] | None = None, use_cache: bool = True,
                   alone: bool = False) -> LLMAnswer[M]:
        """A `schema` instance. InvalidLLMOutput if the reply is not JSON, not the schema, holds more
        than one tool call or choice (or a key twice), names a value outside `choices` (field ->
        allowed values), was cut at the token cap, or (`alone`) holds text beside the call."""
        msgs = convert_to_messages(messages)
        cfg = self.configs[role]
        use_cache = use_cache and self.cache is not None
        key = self._key(cfg, "structured", msgs, schema=schema_json(schema),
                        choices={k: sorted(map(repr, v)) for k, v in (choices or {}).items()}) if use_cache else ""
        hit = self._cached(role, key, use_cache)
        if hit is not None:
            return LLMAnswer(schema.model_validate(hit["value"]), True, 0.0, *_usage_of(hit), cfg.model or "")
        bound, parser = self._structured_runnable(role, schema)

        def parse(out: object) -> tuple[M, AIMessage | None]:
            raw = out if isinstance(out, AIMessage) else None
            self._check_finish(raw, cfg)
            one_tool_call(raw, role.value, call.shape if (call := getattr(self._local, "call", None)) else None)
            if alone and raw is not None and str(raw.content).strip():  # the L1 vet: text beside its verdict
                raise InvalidLLMOutput(f"role '{role.value}': text beside the {schema.__name__} call "
                                       f"({str(raw.content)[:120]!r}): an answer that says two things is no answer")
            parsed = parser.invoke(raw)  # OutputParserException (a ValueError) if not the schema
            if not isinstance(parsed, schema):
                raise InvalidLLMOutput(f"role '{role.value}': no valid {schema.__name__} tool call in the reply"
                                       f"{reply_excerpt(raw)}"[:500])
            for name, allowed in (choices or {}).items():
                value = getattr(parsed, name)
                for v in value if isinstance(value, list) else [value]:
                    if v not in allowed:
                        raise InvalidLLMOutput(f"role '{role.value}': {name}={v!r} is not one of "
                                               f"{sorted(map(str, allowed))}"[:500])
            return parsed, raw

        answer = self._call(role, bound, msgs, parse, extra_tokens=schema_tokens(schema))
        if use_cache:
            self.cache.put(key, role.value, cfg.model or "", {"value": answer.value.model_dump(mode="json"),  # type: ignore[union-attr]
                                                               "usage": [answer.prompt_tokens, answer.completion_tokens]})
        return answer

    def text(self, role: Role, messages: MessagesIn, *, use_cache: bool = True) -> LLMAnswer[str]:
        """The reply's text content."""
        msgs = convert_to_messages(messages)
        cfg = self.configs[role]
        use_cache = use_cache and self.cache is not None
        key = self._key(cfg, "text", msgs) if use_cache else ""
        hit = self._cached(role, key, use_cache)
        if hit is not None:
            return LLMAnswer(str(hit["value"]), True, 0.0, *_usage_of(hit), cfg.model or "")

        def parse(out: object) -> tuple[str, AIMessage | None]:
            if not isinstance(out, AIMessage) or not isinstance(out.content, str):
                raise InvalidLLMOutput(f"role '{role.value}': the reply has no text content")
            self._check_finish(out, cfg)
            return out.content, out

        answer = self._call(role, self.model(role), msgs, parse)
        if use_cache:
            self.cache.put(key, role.value, cfg.model or "", {"value": answer.value,  # type: ignore[union-attr]
                                                               "usage": [answer.prompt_tokens, answer.completion_tokens]})
        return answer

    # ---- internals ----------------------------------------------------------------------
    def _structured_runnable(self, role: Role, schema: type[BaseModel]) -> tuple[Runnable, Runnable]:
        """(model bound to the schema's tool, its parser), from with_structured_output(method=
        "function_calling"), built once per (role, schema). Invoking the two halves ourselves keeps
        the raw AIMessage (usage, finish_reason) without include_raw's per-call thread pool."""
        with self._lock:
            pair = self._runnables.get((role, schema))
        if pair is None:
            chain = self.model(role).with_structured_output(schema, method="function_calling")
            if not isinstance(chain, RunnableSequence):  # pragma: no cover - langchain changed shape
                raise LLMError(f"unexpected structured-output runnable {type(chain).__name__}")
            pair = (chain.first, chain.last)
            with self._lock:
                self._runnables[(role, schema)] = pair
        return pair

    def _key(self, cfg: RoleConfig, kind: str, msgs: list[BaseMessage], **extra: object) -> str:
        return cache_key(kind=kind, role=cfg.role.value, endpoint=cfg.identity[0], model=cfg.model,
                         messages=messages_to_dict(msgs), params={"temperature": cfg.temperature,
                                                                  "max_tokens": cfg.max_tokens}, **extra)

    def _cached(self, role: Role, key: str, use_cache: bool) -> dict[str, object] | None:
        if not use_cache or self.cache is None or self.refresh_cache:
            return None
        hit = self.cache.get(key)
        if hit is not None:
            self.ledger.record_cached(role)
        return hit

    @staticmethod
    def _check_finish(raw: AIMessage | None, cfg: RoleConfig) -> None:
        finish = (getattr(raw, "response_metadata", None) or {}).get("finish_reason")
        _, completion = reported_usage(raw, cfg) or (0, 0)
        # >=: llama-cpp-python reports a forced tool call as finish_reason "tool_calls" even when it
        # ran out of tokens (a 1.5B model looping inside an answer string), so using every allowed
        # token counts as cut; a complete reply of exactly the cap is failed closed with it
        if finish == "length" or completion >= cfg.max_tokens:
            raise InvalidLLMOutput(f"role '{cfg.role.value}': reply cut at the token cap "
                                   f"(max_tokens={cfg.max_tokens}, completion={completion})")

    def _call(self, role: Role, runnable: object, msgs: list[BaseMessage],
              parse: Callable[[object], tuple[T, AIMessage | None]], extra_tokens: int = 0) -> LLMAnswer[T]:
        """The context check, the call (each request admitted in the ledger before it is sent), the
        parse, and the settling of its ledger rows (made even when the call fails). `extra_tokens`:
        what the request adds besides the messages (a tool schema)."""
        cfg = self.configs[role]
        est = estimate_prompt_tokens([m.text if isinstance(m.text, str) else str(m.content) for m in msgs]) + extra_tokens
        if est + cfg.max_tokens > cfg.context_tokens:
            raise ContextOverflow(f"role '{role.value}': prompt ~{est} tokens (estimated) + reply cap {cfg.max_tokens} "
                                  f"> context {cfg.context_tokens}")
        call = _Call(self.ledger, est + cfg.max_tokens, call_cost(est, cfg.max_tokens, cfg.price_in, cfg.price_out))
        self._check_stopped()
        if role not in self._metered_http:  # a model given to us: one call is one request
            call.sent.append(call.ledger.admit(role, call.worst_tokens, call.worst_cost))
        t0 = time.perf_counter()
        raw: AIMessage | None = None
        usage: tuple[int, int] | None = None
        self._local.call = call
        try:
            out = runnable.invoke(msgs)  # type: ignore[attr-defined]
            raw = out.get("raw") if isinstance(out, dict) else out if isinstance(out, AIMessage) else None
            usage = reported_usage(raw, cfg)
            value, raw = parse(out)
        except Exception as e:  # noqa: BLE001 - a BaseException (Ctrl-C, exit) is no model failure: it propagates
            odd_usage(call.shape, cfg)
            call.unreached = never_connected(e)
            raise map_error(e, cfg) from None
        finally:
            self._local.call = None
            latency = (time.perf_counter() - t0) * 1000
            self._settle(call, usage, cfg)
        prompt, completion = usage or (0, 0)
        return LLMAnswer(value, False, latency, prompt, completion, cfg.model or "")

    @staticmethod
    def _settle(call: _Call, usage: tuple[int, int] | None, cfg: RoleConfig) -> None:
        """Replace the reservations of the call's requests by what is known: the reported usage for the
        last one, nothing for one answered with an error status (4xx/5xx: no tokens were generated).
        A request with no answer (a timeout, a Ctrl-C) or an answer without usable usage keeps its
        worst case: the token cap fails closed, unless the call never connected at all (refused, no
        route: no endpoint got a request, so none generated a token)."""
        for seq in call.sent[:-1]:  # requests the openai client retried
            if call.status.get(seq, 0) >= 400 or (call.unreached and seq not in call.status):
                call.ledger.settle(seq, 0, 0, 0.0)
        if not call.sent:
            return
        last = call.sent[-1]
        if usage is not None:
            call.ledger.settle(last, usage[0], usage[1], call_cost(usage[0], usage[1], cfg.price_in, cfg.price_out))
        elif call.status.get(last, 0) >= 400 or (call.unreached and last not in call.status):
            call.ledger.settle(last, 0, 0, 0.0)


def build_llm(ws: Workspace | None, *, no_cache: bool = False, ledger: RunBudget | None = None,
              caps: BudgetCaps | None = None, models: Mapping[Role, BaseChatModel] | None = None,
              grading: bool = True, configs: Mapping[Role, RoleConfig] | None = None, store: bool = True) -> LLM:
    """The run's LLM from settings (env, skillforge.toml, local server), with the workspace cache.
    `no_cache` (the commands' --no-cache) or SKILLFORGE_NO_CACHE=1: nothing is read from it, and
    every fresh answer replaces the stored one (so a re-run forgets a bad endpoint's answers);
    with `store=False` too (evaluate --aa) the cache is not touched at all. `ledger`: the run it
    counts for; else an ad-hoc run in the workspace's request ledger (in memory without a workspace)
    with `caps`. `grading=False` (routing) skips the judge-is-the-proposer warning. `configs`: the
    roles' settings when the caller already resolved them (`workspace_configs`)."""
    if configs is None:
        configs = workspace_configs(ws, grading=grading)
    no_cache = no_cache or os.environ.get(NO_CACHE_ENV, "") not in ("", "0")
    if ledger is None:
        ledger = RunBudget.adhoc(RequestLedger.of_workspace(ws.runs_dir) if ws else None, caps)
    cache = None if ws is None or (no_cache and not store) else LLMCache(ws.runs_dir / CACHE_FILE)
    return LLM(configs, models, cache=cache, ledger=ledger, refresh_cache=no_cache)


__all__ = ["LLM", "CallsStopped", "LLMAnswer", "LLMNotConfigured", "Role", "build_llm", "map_error"]
