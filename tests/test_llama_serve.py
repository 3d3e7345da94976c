"""skillforge.llm.llama_serve without llama-cpp-python: the lazy grammar check against a reference
chain (penalties -> grammar over the whole vocabulary -> greedy), on a C layer written in Python with
the same ctypes structures; the one-score-row state patch; install() on a machine without llama_cpp.
The real model's token-for-token comparison is tests/test_local_smoke.py (make test-local)."""

from __future__ import annotations

import ctypes
import importlib.util

import numpy as np
import pytest

from skillforge.llm import llama_serve

N_VOCAB = 64


class TokenData(ctypes.Structure):
    """llama.cpp's llama_token_data."""

    _fields_ = [("id", ctypes.c_int32), ("logit", ctypes.c_float), ("p", ctypes.c_float)]


class TokenDataArray(ctypes.Structure):
    """llama.cpp's llama_token_data_array."""

    _fields_ = [("data", ctypes.POINTER(TokenData)), ("size", ctypes.c_size_t),
                ("selected", ctypes.c_int64), ("sorted", ctypes.c_bool)]


class _C:
    """The slice of llama_cpp's C API that LazyGrammarGreedy uses."""

    llama_token_data = TokenData
    llama_token_data_p = ctypes.POINTER(TokenData)
    llama_token_data_array = TokenDataArray

    def __init__(self) -> None:
        self.logits = (ctypes.c_float * N_VOCAB)()
        self.apply_sizes: list[int] = []

    def llama_get_logits_ith(self, ctx: object, idx: int) -> object:
        return ctypes.cast(self.logits, ctypes.POINTER(ctypes.c_float))

    def llama_sampler_apply(self, sampler: _Sampler, ref: object) -> None:
        arr = ref._obj  # type: ignore[attr-defined]
        data = arr.data
        self.apply_sizes.append(arr.size)
        for i in range(arr.size):
            data[i].logit = sampler.apply(int(data[i].id), float(data[i].logit))

    def llama_sampler_accept(self, sampler: _Sampler, token: int) -> None:
        sampler.history.append(token)


class _Sampler:
    """penalties: divide a seen token's positive logit by `repeat` (multiply a negative one);
    grammar: after an even token only odd ones, after an odd one only even ones (start: any)."""

    def __init__(self, kind: str, repeat: float = 1.0) -> None:
        self.kind, self.repeat, self.history = kind, repeat, []

    def apply(self, token: int, logit: float) -> float:
        if self.kind == "penalties":
            if token in self.history[-8:]:
                return logit / self.repeat if logit > 0 else logit * self.repeat
            return logit
        if self.history and token % 2 == self.history[-1] % 2:
            return float("-inf")
        return logit


class _Internals:
    class LlamaSampler:
        def __init__(self) -> None:
            self.sampler: _Sampler | None = None

        def add_penalties(self, *, n_vocab: int, penalty_last_n: int, penalty_repeat: float,
                          penalty_freq: float, penalty_present: float) -> None:
            self.sampler = _Sampler("penalties", penalty_repeat)

        def add_grammar(self, model: object, grammar: object) -> None:
            self.sampler = _Sampler("grammar")

        def close(self) -> None:
            self.sampler = None

    class LlamaTokenDataArray:
        def __init__(self, *, n_vocab: int) -> None:
            self.candidates_data = np.recarray(
                (n_vocab,), dtype=np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True))
            self.candidates = _C.llama_token_data_array(
                data=self.candidates_data.ctypes.data_as(_C.llama_token_data_p), size=n_vocab, sorted=False)
            self.n_vocab = n_vocab

        def copy_logits(self, logits: np.ndarray) -> None:
            self.candidates_data.id[:] = np.arange(self.n_vocab, dtype=np.intc)
            self.candidates_data.logit[:] = logits
            self.candidates_data.p[:] = 0
            self.candidates.size = self.n_vocab


class _Ctx:
    ctx = None


def _reference(steps: list[np.ndarray], repeat: float) -> list[int]:
    """The stock chain: penalties, the grammar over every token, then the first arg-max."""
    pen, gram, out = _Sampler("penalties", repeat), _Sampler("grammar"), []
    for logits in steps:
        scored = [gram.apply(t, pen.apply(t, float(np.float32(x)))) for t, x in enumerate(logits)]
        token = int(np.argmax(np.array(scored, dtype=np.single)))
        pen.history.append(token)
        gram.history.append(token)
        out.append(token)
    return out


def test_lazy_grammar_gives_the_stock_chains_tokens_and_skips_the_full_pass_when_it_can():
    c = _C()

    class Lib:  # the C layer with _C's structures as module attributes, as llama_cpp has them
        llama_token_data = _C.llama_token_data
        llama_token_data_array = _C.llama_token_data_array
        llama_get_logits_ith = c.llama_get_logits_ith
        llama_sampler_apply = c.llama_sampler_apply
        llama_sampler_accept = c.llama_sampler_accept

    sampler = llama_serve.LazyGrammarGreedy(Lib, _Internals, model=None, n_vocab=N_VOCAB, grammar=None,
                                            penalties=(64, 1.3, 0.0, 0.0))
    rng = np.random.default_rng(7)
    steps = [rng.normal(size=N_VOCAB).astype(np.single) for _ in range(300)]
    got = []
    for logits in steps:
        ctypes.memmove(c.logits, logits.ctypes.data, logits.nbytes)
        got.append(sampler.sample(_Ctx(), -1))
    assert got == _reference(steps, 1.3)
    # about half of the raw arg-maxes break the parity grammar: those, and only those, took the full pass
    assert 0 < sampler.full_passes < len(steps) and sampler.tokens == len(steps)
    assert c.apply_sizes.count(N_VOCAB) == len(steps) + sampler.full_passes  # penalties always, grammar on rejection
    assert c.apply_sizes.count(1) == len(steps)  # one single-token grammar check per token
    sampler.close()


class _State:
    def __init__(self, logits_all: bool) -> None:
        self._logits_all = logits_all
        self.scores = np.zeros((512, 1000), dtype=np.single)
        self.seen: list[tuple[int, ...]] = []

    def save(self) -> tuple[int, ...]:
        self.seen.append(self.scores.shape)
        return self.scores.shape

    def boom(self) -> None:
        raise RuntimeError("boom")


def test_saved_states_carry_one_score_row_only_when_logits_all_is_off():
    save = llama_serve._one_score_row(_State.save)
    off, on = _State(False), _State(True)
    assert save(off) == (1, 1000) and off.scores.shape == (512, 1000)
    assert save(on) == (512, 1000)
    with pytest.raises(RuntimeError):
        llama_serve._one_score_row(_State.boom)(off)
    assert off.scores.shape == (512, 1000)  # restored on an error too


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is not None, reason="llama-cpp-python is installed")
def test_install_without_llama_cpp_leaves_the_server_as_shipped():
    assert llama_serve.install() is False
