"""Chunk vectors cached on disk by embedder and chunk content hash, so reindexing never embeds an unchanged
chunk twice (and a rebuilt index re-embeds nothing). Only a cache: a damaged file is set aside and the vectors are
computed again (:class:`core.sqlite_cache.CacheDB`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from core.records import Chunk
from core.sqlite_cache import CacheDB
from retrieval.chunk_text import indexed_text, vector_key
from retrieval.embed import Embedder, embed_with_progress

SCHEMA = ("CREATE TABLE IF NOT EXISTS vectors (embedder TEXT NOT NULL, hash TEXT NOT NULL, "
          "vector BLOB NOT NULL, PRIMARY KEY (embedder, hash))")


class VectorCache:
    def __init__(self, path: Path) -> None:
        self._cache = CacheDB(path, SCHEMA, "the vector cache")

    def get_many(self, embedder: str, hashes: Sequence[str], dim: int) -> dict[str, np.ndarray]:
        def read(db: sqlite3.Connection) -> dict[str, np.ndarray]:
            out: dict[str, np.ndarray] = {}
            for i in range(0, len(hashes), 500):
                part = list(hashes[i:i + 500])
                rows = db.execute(f"SELECT hash, vector FROM vectors WHERE embedder = ? AND hash IN "
                                  f"({','.join('?' * len(part))})", [embedder, *part])
                for h, blob in rows:
                    vec = np.frombuffer(blob, np.float32)
                    if vec.shape == (dim,):
                        out[h] = vec
            return out

        return self._cache.run(read)

    def put_many(self, embedder: str, items: dict[str, np.ndarray]) -> None:
        rows = [(embedder, h, v.astype(np.float32).tobytes()) for h, v in items.items()]

        def write(db: sqlite3.Connection) -> None:
            db.execute("BEGIN")
            db.executemany("INSERT OR REPLACE INTO vectors VALUES (?,?,?)", rows)
            db.execute("COMMIT")

        self._cache.run(write)

    def close(self) -> None:
        self._cache.close()


def chunk_vectors(embedder: Embedder, cache: VectorCache | None, chunks: Sequence[Chunk],
                  on_progress: Callable[[int], None] | None = None) -> np.ndarray:
    """Vectors of what the index reads of ``chunks`` (:func:`retrieval.chunk_text.indexed_text`), from ``cache``
    when it has them (new ones are put there); ``on_progress`` is told of every chunk."""
    if cache is None:
        return embed_with_progress(embedder, [indexed_text(c) for c in chunks], on_progress)
    keys = [vector_key(c) for c in chunks]
    cached = cache.get_many(embedder.name, keys, embedder.dim)
    missing = [(c, k) for c, k in zip(chunks, keys) if k not in cached]
    if on_progress and len(chunks) > len(missing):
        on_progress(len(chunks) - len(missing))
    if missing:
        fresh = embed_with_progress(embedder, [indexed_text(c) for c, _ in missing], on_progress)
        new = {k: v for (_, k), v in zip(missing, fresh)}
        cache.put_many(embedder.name, new)
        cached.update(new)
    return np.stack([cached[k] for k in keys]) if chunks else np.zeros((0, embedder.dim), np.float32)
