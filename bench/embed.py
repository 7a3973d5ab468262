"""Embedding throughput of MiniLM on SciFact documents, quiet and beside a CPU-bound competitor.

    python -m bench.embed [--docs 256] [--repeats 3]

A fixed sample of --docs SciFact documents (title + text, seed 0) is embedded by Strata's embedder as shipped
(``retrieval.minilm``, default compute settings) and by a plain numpy forward pass written here as the peer:
padded batches of 8 texts of similar length, each projection one 2-D GEMM, attention as 4-D batched products
with a mask, scipy's erf, run under one BLAS thread as Strata's is (threadpoolctl; with the library's default
threads a busy core stalls every small product). Each is timed on a quiet machine and while a competitor process
that this bench starts (a pure-Python loop, one core busy) runs beside it, on the same documents and the same
number of runs. Figures are documents per second, median of --repeats runs. The two embedders' vectors are
compared (minimum cosine).
Last line: one JSON object with docs_per_s, docs_per_s_busy, reference_docs_per_s and the rest.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np
from scipy.special import erf

from retrieval.minilm import MiniLMEmbedder, model_dir

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact" / "corpus.jsonl"


def sample_texts(corpus: Path, n: int, seed: int = 0) -> list[str]:
    rows = [json.loads(line) for line in open(corpus, encoding="utf-8")]
    picked = random.Random(seed).sample(rows, min(n, len(rows)))
    return [(r.get("title", "") + "\n" + r["text"]).strip() for r in picked]


class PlainMiniLM:
    """The straightforward numpy forward pass: padded batches, 2-D GEMM projections, 4-D attention."""

    def __init__(self, max_tokens: int = 256, batch_size: int = 8) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = model_dir()
        self.w = load_file(str(folder / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer.no_padding()
        self.batch_size, self.heads, self.dim = batch_size, 12, 384

    @staticmethod
    def _ln(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + np.float32(1e-12)) * w + b

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w, (batch, seq), hd = self.w, ids.shape, self.dim // self.heads
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:seq][None]
             + w["embeddings.token_type_embeddings.weight"][0][None, None]).reshape(batch * seq, self.dim)
        x = self._ln(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        bias = ((1.0 - mask[:, None, None, :].astype(np.float32)) * np.float32(-1e9)).astype(np.float32)
        for i in range(6):
            p = f"encoder.layer.{i}."

            def lin(t: np.ndarray, name: str) -> np.ndarray:
                return t @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            q = lin(x, "attention.self.query").reshape(batch, seq, self.heads, hd).transpose(0, 2, 1, 3)
            k = lin(x, "attention.self.key").reshape(batch, seq, self.heads, hd).transpose(0, 2, 3, 1)
            v = lin(x, "attention.self.value").reshape(batch, seq, self.heads, hd).transpose(0, 2, 1, 3)
            att = (q @ k) / np.float32(np.sqrt(hd)) + bias
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(batch * seq, self.dim)
            x = self._ln(lin(ctx, "attention.output.dense") + x, w[p + "attention.output.LayerNorm.weight"],
                         w[p + "attention.output.LayerNorm.bias"])
            h = lin(x, "intermediate.dense")
            h = np.float32(0.5) * h * (np.float32(1) + erf(h / np.float32(np.sqrt(2))))
            x = self._ln(lin(h, "output.dense") + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
        x = x.reshape(batch, seq, self.dim)
        m = mask[..., None].astype(np.float32)
        pooled = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        enc = [e.ids for e in self.tokenizer.encode_batch(list(texts))]
        order = sorted(range(len(texts)), key=lambda i: len(enc[i]))
        out = np.zeros((len(texts), self.dim), np.float32)
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            seq = max(len(enc[i]) for i in idx)
            ids = np.zeros((len(idx), seq), np.int64)
            mask = np.zeros((len(idx), seq), np.int64)
            for row, i in enumerate(idx):
                ids[row, :len(enc[i])] = enc[i]
                mask[row, :len(enc[i])] = 1
            out[idx] = self._forward(ids, mask)
        return out


@contextlib.contextmanager
def competitor() -> Iterator[None]:
    """A CPU-bound process (pure-Python loop) running for the duration of the block."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def rate(embed: Callable[[Sequence[str]], np.ndarray], texts: Sequence[str], repeats: int) -> tuple[float, np.ndarray]:
    runs, vectors = [], np.zeros(0)
    for _ in range(repeats):
        t0 = time.perf_counter()
        vectors = embed(texts)
        runs.append(len(texts) / (time.perf_counter() - t0))
    return statistics.median(runs), vectors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DATA)
    ap.add_argument("--docs", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    from threadpoolctl import threadpool_limits

    from core.settings import StrataSettings
    from core.threads import configure

    configure(StrataSettings().compute)  # as every Strata command: one BLAS thread for the process
    if not args.corpus.exists():
        sys.exit(f"no corpus at {args.corpus} (give --corpus)")
    texts = sample_texts(args.corpus, args.docs)
    shipped, plain_model = MiniLMEmbedder(), PlainMiniLM()

    def plain(batch: Sequence[str]) -> np.ndarray:
        with threadpool_limits(limits=1, user_api="blas"):
            return plain_model.embed(batch)

    shipped.embed(texts[:16])  # warm-up: page in weights, start BLAS
    plain(texts[:16])
    tokens = [len(e.ids) for e in shipped.tokenizer.encode_batch(texts)]
    print(f"{len(texts)} SciFact documents, {statistics.mean(tokens):.0f} tokens on average (at most 256)")

    docs_per_s, v_shipped = rate(shipped.embed, texts, args.repeats)
    ref_per_s, v_plain = rate(plain, texts, args.repeats)
    with competitor():
        busy_per_s, _ = rate(shipped.embed, texts, args.repeats)
        ref_busy, _ = rate(plain, texts, args.repeats)
    cos = float((v_shipped * v_plain).sum(1).min())

    print(f"{'embedder':<44}{'quiet docs/s':>14}{'busy docs/s':>14}{'busy/quiet':>12}")
    print(f"{'Strata MiniLM (retrieval.minilm)':<44}{docs_per_s:>14.1f}{busy_per_s:>14.1f}{busy_per_s / docs_per_s:>12.2f}")
    print(f"{'plain numpy pass, one BLAS thread (peer)':<44}{ref_per_s:>14.1f}{ref_busy:>14.1f}"
          f"{ref_busy / ref_per_s:>12.2f}")
    print(f"minimum cosine between the two embedders' vectors: {cos:.6f}")
    print(json.dumps({"docs_per_s": round(docs_per_s, 2), "docs_per_s_busy": round(busy_per_s, 2),
                      "reference_docs_per_s": round(ref_per_s, 2),
                      "reference_docs_per_s_busy": round(ref_busy, 2), "reference_blas_threads": 1,
                      "busy_ratio": round(busy_per_s / docs_per_s, 3), "min_cosine": round(cos, 6),
                      "docs": len(texts)}))


if __name__ == "__main__":
    main()
