"""SQLite files that are only caches (chunk vectors, LLM responses, the failure ledger): a damaged one is set
aside and started afresh, never a reason an index run fails.

``CacheDB`` opens the file with :func:`core.sqlite_db.connect` and runs every operation through :meth:`run`.
When SQLite reports the file damaged (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``), when it is opened or at any later
operation (a file damaged while a run holds it open), the file and its WAL are renamed to
``<name>.damaged-<time>`` (kept for inspection, never deleted), a warning names both, and the operation runs again
on an empty cache: what was cached is recomputed (embedded again, asked again). A connection that meets damage
after another one (of this or another process) has already set the file aside opens the new file instead of
setting that one aside too. A full disk is reported as :class:`core.disk.DiskFullError` naming the file.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Callable, TypeVar

from core.disk import disk_full, is_corrupt, is_disk_full
from core.sqlite_db import connect

T = TypeVar("T")
log = logging.getLogger("strata.cache")


def set_aside(path: Path) -> Path:
    """Rename a damaged SQLite file (and its -wal and -shm files) out of the way; returns its new name."""
    aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
    for suffix in ("", "-wal", "-shm"):
        src = path.with_name(path.name + suffix)
        if src.exists():
            os.replace(src, aside.with_name(aside.name + suffix))
    return aside


class CacheDB:
    """One cache file; ``schema`` (SQL statements) is run on every fresh connection."""

    def __init__(self, path: Path | str, schema: str, what: str) -> None:
        self.path = Path(path)
        self.schema = schema
        self.what = what
        self.lock = threading.RLock()
        self.db = self._open()

    def _open(self) -> sqlite3.Connection:
        db = None
        try:
            db = connect(self.path)
            db.executescript(self.schema)
        except sqlite3.DatabaseError as exc:
            if db is not None:
                db.close()
            if is_disk_full(exc):
                raise disk_full(exc, self.path) from exc
            if not is_corrupt(exc):
                raise
            self._set_aside(exc)
            db = connect(self.path)
            db.executescript(self.schema)
        self._opened = self._identity()  # the file this connection reads: see run()
        return db

    def _set_aside(self, exc: BaseException) -> None:
        aside = set_aside(self.path)
        msg = (f"{self.path} ({self.what}) is damaged ({exc}); set aside as {aside.name} and started afresh: "
               "what it held is computed again")
        log.warning(msg)

    def run(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """``op`` on the connection; on a damaged file, again on a fresh one (the damaged file set aside, unless
        another connection already replaced it: then on the file now in its place)."""
        with self.lock:
            for attempt in range(3):
                try:
                    return op(self.db)
                except sqlite3.DatabaseError as exc:
                    if is_disk_full(exc):
                        self._rollback()
                        raise disk_full(exc, self.path) from exc
                    if not is_corrupt(exc) or attempt == 2:
                        raise
                    self.db.close()
                    if self._identity() == self._opened:
                        self._set_aside(exc)
                    self.db = self._open()
            raise AssertionError("unreachable")

    def _identity(self) -> tuple[int, int] | None:
        """The file now at ``path`` (device and inode), None when there is none."""
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def _rollback(self) -> None:
        try:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
        except sqlite3.Error:
            pass

    def close(self) -> None:
        with self.lock:
            self.db.close()
