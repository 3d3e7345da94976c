"""`python -m skillforge.llm.llama_serve ARGS`: llama-cpp-python's server with grammar checked lazily.

Why: every executor step and judgement is a forced tool call, which llama-cpp-python turns into a
JSON-schema grammar, and its sampler chain (penalties -> grammar -> greedy) runs the grammar over
all 151 936 candidate tokens before every generated token. A py-spy profile of a 2-case embedded
evaluation put 14 % of the server's time in `llama_grammar_reject_candidates_for_stack`.

What: for greedy decoding (temperature 0, no logits processor) this sampler does what llama.cpp's
own `common_sampler_sample` does (rejection sampling): apply the penalties, take the arg-max, ask
the grammar about that one token, and only when the grammar rejects it apply the grammar to the
whole vocabulary and take the arg-max of what is left. The first allowed arg-max is the arg-max of
the allowed set, so the output is token for token what the stock chain gives (the `local` tests
compare both). Any other sampling setting keeps the stock chain.

It also keeps the prompt cache's saved states small. With `logits_all` off llama-cpp-python never
writes its (n_batch x vocab) score array (sampling reads the context's logits), yet `save_state`
copies all of it into every cached state: 311 MB per state for Qwen2.5's 151 936-token vocabulary,
on top of the ~28 KB per token of KV cells that the cache's byte budget counts. A 10-case run held
~7 GB this way. Saved states here carry one row of it, and `load_state` restores one row.

The patches are applied to the exact llama-cpp-python version the `[local]` extra pins; on any other
version, or if the internals it needs are missing, the server runs unpatched and says so on stderr.
"""

from __future__ import annotations

import ctypes
import math
import sys
from typing import Any

import numpy as np

PINNED_VERSION = "0.3.36"


class LazyGrammarGreedy:
    """A stand-in for `llama_cpp._internals.LlamaSampler` (its `sample(ctx, idx)`), for greedy +
    grammar: penalties, arg-max, grammar check of that token, full grammar pass only on rejection."""

    def __init__(self, llama_cpp: Any, internals: Any, model: Any, n_vocab: int, grammar: Any,
                 penalties: tuple[int, float, float, float]) -> None:
        self._c = llama_cpp
        self._n_vocab = n_vocab
        self._penalties = internals.LlamaSampler()
        last_n, repeat, freq, present = penalties
        self._penalties.add_penalties(n_vocab=n_vocab, penalty_last_n=last_n, penalty_repeat=repeat,
                                      penalty_freq=freq, penalty_present=present)
        self._grammar = internals.LlamaSampler()
        self._grammar.add_grammar(model, grammar)
        self._cands = internals.LlamaTokenDataArray(n_vocab=n_vocab)
        self._one = (llama_cpp.llama_token_data * 1)()
        self._one_arr = llama_cpp.llama_token_data_array(data=self._one, size=1, selected=-1, sorted=False)
        self.full_passes = 0
        self.tokens = 0

    def sample(self, ctx: Any, idx: int) -> int:
        c = self._c
        logits = np.ctypeslib.as_array(c.llama_get_logits_ith(ctx.ctx, idx), shape=(self._n_vocab,))
        self._cands.copy_logits(logits)
        cands = ctypes.byref(self._cands.candidates)
        c.llama_sampler_apply(self._penalties.sampler, cands)
        data = self._cands.candidates_data
        token = int(np.argmax(data.logit))
        self._one[0].id = token
        self._one[0].logit = float(data.logit[token])
        c.llama_sampler_apply(self._grammar.sampler, ctypes.byref(self._one_arr))
        if math.isinf(self._one[0].logit) and self._one[0].logit < 0:
            self.full_passes += 1
            c.llama_sampler_apply(self._grammar.sampler, cands)
            token = int(data.id[int(np.argmax(data.logit))])
        self.tokens += 1
        c.llama_sampler_accept(self._penalties.sampler, token)
        c.llama_sampler_accept(self._grammar.sampler, token)
        return token

    def close(self) -> None:
        self._penalties.close()
        self._grammar.close()


def install() -> bool:
    """Patch `Llama._init_sampler` so greedy + grammar uses `LazyGrammarGreedy`; True when patched."""
    try:
        import llama_cpp
        from llama_cpp import _internals as internals
        from llama_cpp.llama import Llama
    except ImportError:
        return False
    needed = ("llama_get_logits_ith", "llama_sampler_apply", "llama_sampler_accept", "llama_token_data",
              "llama_token_data_array")
    if (getattr(llama_cpp, "__version__", None) != PINNED_VERSION or not hasattr(Llama, "_init_sampler")
            or not all(hasattr(llama_cpp, name) for name in needed)
            or not hasattr(internals, "LlamaTokenDataArray")):
        print(f"skillforge.llm.llama_serve: llama-cpp-python {getattr(llama_cpp, '__version__', '?')} is not "
              f"{PINNED_VERSION}; grammar sampling left as shipped", file=sys.stderr)
        return False
    stock = Llama._init_sampler

    def init_sampler(self: Any, *args: Any, **kwargs: Any) -> Any:
        grammar = kwargs.get("grammar")
        if (args or grammar is None or kwargs.get("temp", 0.80) != 0.0
                or kwargs.get("logits_processor") is not None):
            return stock(self, *args, **kwargs)
        penalties = (self.last_n_tokens_size, kwargs.get("repeat_penalty", 1.0),
                     kwargs.get("frequency_penalty", 0.0), kwargs.get("presence_penalty", 0.0))
        return LazyGrammarGreedy(llama_cpp, internals, self._model, self._n_vocab, grammar, penalties)

    Llama._init_sampler = init_sampler
    Llama.save_state = _one_score_row(Llama.save_state)
    Llama.load_state = _one_score_row(Llama.load_state)
    return True


def _one_score_row(method: Any) -> Any:
    """`method` run with `self.scores` seen as its first row, when `logits_all` is off (the rows are
    never written then); as shipped otherwise."""

    def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(self, "_logits_all", True):
            return method(self, *args, **kwargs)
        full = self.scores
        self.scores = full[:1]
        try:
            return method(self, *args, **kwargs)
        finally:
            self.scores = full

    return wrapped


def main() -> None:
    install()
    from llama_cpp.server.__main__ import main as serve

    serve()


if __name__ == "__main__":
    main()
