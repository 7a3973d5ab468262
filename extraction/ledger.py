"""The failure ledger: chunks whose extraction failed, with the reason, kept until a later run succeeds.

A document with a failed chunk is stored with an empty content hash, so the next run treats it as changed and
extracts it again (calls that succeeded before come from the response cache, so nothing is paid twice). A damaged
ledger file is set aside and started afresh (:class:`core.sqlite_cache.CacheDB`): the failures it named are found
again, because their documents are still stored as changed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from core.sqlite_cache import CacheDB


@dataclass(frozen=True, slots=True)
class ChunkFailure:
    chunk_id: str
    reason: str


class FailureLedger:
    def __init__(self, path: Path) -> None:
        self._db = CacheDB(path, "CREATE TABLE IF NOT EXISTS failures (chunk_id TEXT PRIMARY KEY, document_id TEXT "
                                 "NOT NULL, stage TEXT NOT NULL, reason TEXT NOT NULL, attempts INTEGER NOT NULL, "
                                 "last_at REAL NOT NULL)", "the failure ledger")

    def record(self, document_id: str, stage: str, failures: Sequence[ChunkFailure]) -> None:
        rows = [(f.chunk_id, document_id, stage, f.reason[:2000], time.time()) for f in failures]
        self._db.run(lambda db: db.executemany(
            "INSERT INTO failures VALUES (?,?,?,?,1,?) ON CONFLICT(chunk_id) DO UPDATE SET reason = excluded.reason, "
            "stage = excluded.stage, attempts = attempts + 1, last_at = excluded.last_at", rows))

    def clear_document(self, document_id: str) -> None:
        self._db.run(lambda db: db.execute("DELETE FROM failures WHERE document_id = ?", (document_id,)))

    def entries(self) -> list[dict[str, object]]:
        rows = self._db.run(lambda db: db.execute(
            "SELECT chunk_id, document_id, stage, reason, attempts FROM failures ORDER BY chunk_id").fetchall())
        return [dict(zip(("chunk_id", "document_id", "stage", "reason", "attempts"), r)) for r in rows]

    def close(self) -> None:
        self._db.close()
