"""Failures of the disk under the workspace, named once whatever stage meets them.

A full disk reaches Strata as ``OSError(ENOSPC)`` from a file write or as SQLite's ``SQLITE_FULL`` ("database or
disk is full") from a store or cache; a damaged SQLite file as ``SQLITE_CORRUPT`` or ``SQLITE_NOTADB``. These
helpers tell them apart from other errors, so that every stage reports a full disk with the same one line
naming the path, and a damaged file as damaged rather than as an internal error.
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

SQLITE_CORRUPT, SQLITE_FULL, SQLITE_NOTADB = 11, 13, 26


class DiskFullError(OSError):
    """No space was left on the device holding ``path``; nothing half-written is served."""

    def __init__(self, path: Path | str | None) -> None:
        self.path = str(path) if path is not None else None
        where = f" for {self.path}" if self.path else ""
        super().__init__(errno.ENOSPC, f"disk full: no space left on the device{where}; free some space and run "
                                       "the command again (nothing half-written is served)")

    def __str__(self) -> str:
        return str(self.strerror)


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised from) says the disk is full."""
    for e in _chain(exc):
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if isinstance(e, sqlite3.Error) and getattr(e, "sqlite_errorcode", None) == SQLITE_FULL:
            return True
    return False


def is_corrupt(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised from) is SQLite finding its file damaged or not a database."""
    return any(isinstance(e, sqlite3.DatabaseError) and getattr(e, "sqlite_errorcode", None) in (SQLITE_CORRUPT,
                                                                                                   SQLITE_NOTADB)
               for e in _chain(exc))


def disk_full(exc: BaseException, path: Path | str | None = None) -> DiskFullError:
    """The one error a full disk is reported as: ``path`` if given, else the file the error names."""
    if isinstance(exc, DiskFullError):
        return exc
    if path is None:
        path = next((e.filename for e in _chain(exc) if isinstance(e, OSError) and e.filename), None)
    return DiskFullError(path)


def _chain(exc: BaseException | None) -> list[BaseException]:
    seen: list[BaseException] = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen
