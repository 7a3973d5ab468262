"""Opening the SQLite files Strata keeps (graph store, LLM cache, failure ledger, vector cache) the same way."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def connect(path: Path | str) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), usable from worker threads (callers hold
    their own lock), with write-ahead logging so readers never block the writer; the parent folder is created."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode = WAL")
    return db
