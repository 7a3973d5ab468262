"""Chunk vectors cached on disk by embedder and chunk content hash, so reindexing never embeds an unchanged
chunk twice (and a rebuilt index re-embeds nothing)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from core.sqlite_db import connect


class VectorCache:
    def __init__(self, path: Path) -> None:
        self._db = connect(path)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (embedder TEXT NOT NULL, hash TEXT NOT NULL, "
                         "vector BLOB NOT NULL, PRIMARY KEY (embedder, hash))")
        self._lock = threading.Lock()

    def get_many(self, embedder: str, hashes: Sequence[str], dim: int) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        with self._lock:
            for i in range(0, len(hashes), 500):
                part = list(hashes[i:i + 500])
                rows = self._db.execute(f"SELECT hash, vector FROM vectors WHERE embedder = ? AND hash IN "
                                        f"({','.join('?' * len(part))})", [embedder, *part])
                for h, blob in rows:
                    vec = np.frombuffer(blob, np.float32)
                    if vec.shape == (dim,):
                        out[h] = vec
        return out

    def put_many(self, embedder: str, items: dict[str, np.ndarray]) -> None:
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?,?,?)",
                                 [(embedder, h, v.astype(np.float32).tobytes()) for h, v in items.items()])
            self._db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()
