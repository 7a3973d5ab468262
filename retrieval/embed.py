"""Embedders: one Protocol, and the deterministic hashing embedder used offline and in tests.

The hashing embedder maps character n-grams (3 to 5, within word boundaries) to ``dim`` buckets with CRC32
(stable across processes and machines), with a hashed sign to cancel collisions on average, sublinear term
weights, and L2 normalization. It captures spelling overlap, not meaning.
"""

from __future__ import annotations

import math
import re
import zlib
from typing import Protocol, Sequence

import numpy as np

_WORD = re.compile(r"\w+", re.UNICODE)


class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array of shape (len(texts), dim), rows L2-normalized."""
        ...


class HashingEmbedder:
    def __init__(self, dim: int = 512, ngram_min: int = 3, ngram_max: int = 5) -> None:
        self.dim, self.ngram_min, self.ngram_max = dim, ngram_min, ngram_max
        self.name = f"hashing-{dim}"

    def _vector(self, text: str) -> np.ndarray:
        counts: dict[int, float] = {}
        for word in _WORD.findall(text.casefold()):
            w = f"<{word}>"
            for n in range(self.ngram_min, self.ngram_max + 1):
                for i in range(max(1, len(w) - n + 1)):
                    h = zlib.crc32(w[i:i + n].encode("utf-8"))
                    bucket = h % self.dim
                    sign = 1.0 if (h >> 31) & 1 else -1.0
                    counts[bucket] = counts.get(bucket, 0.0) + sign
        v = np.zeros(self.dim, np.float32)
        for bucket, c in counts.items():
            v[bucket] = math.copysign(1.0 + math.log(abs(c)), c) if c else 0.0
        norm = float(np.linalg.norm(v))
        return v / norm if norm > 0 else v

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self._vector(t) for t in texts]).astype(np.float32)


def make_embedder(name: str, dim: int) -> Embedder | None:
    if name == "none":
        return None
    if name == "hashing":
        return HashingEmbedder(dim)
    raise ValueError(f"unknown embedder {name!r} (expected 'hashing' or 'none')")
