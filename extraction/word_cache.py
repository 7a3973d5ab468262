"""The corpus's word model (:class:`extraction.wordlike.WordModel`) without reading every text on every run.

The model is a sum over the corpus's texts of what each adds (:class:`extraction.wordlike.TextCounts`). An index
run reads all of a workspace's documents, but a reindex changes few of them, and reading a text again costs the
Chinese tagger's pass over it. So each text's counts are kept in ``<data-dir>/words.sqlite``, keyed by a digest of
the text, under a key of the code and packages they come from (:func:`extraction.fingerprint.code_key`): counts
made by other code are never read, and are deleted when this code first opens the file. A run that read the whole
corpus deletes the counts of texts it no longer holds, so the file stays the size of the corpus.

Only a cache: a damaged file is set aside and the counts are computed again (:class:`core.sqlite_cache.CacheDB`),
and the model is the same as one computed from the texts (a test checks it).
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from core.records import stable_hash
from core.sqlite_cache import CacheDB
from extraction.wordlike import TextCounts, WordModel

SCHEMA = ("CREATE TABLE IF NOT EXISTS counts (hash TEXT PRIMARY KEY, counts BLOB NOT NULL);"
          "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);")
BATCH = 500  # texts looked up (and counted) at a time


def cache_version() -> str:
    """What the counts come from: the extractor's code and packages (:func:`extraction.fingerprint.code_key`),
    and the interpreter's Unicode data, which says what a letter, a capital and a lower-case form are."""
    import sys
    import unicodedata

    from extraction.fingerprint import code_key

    return f"{code_key()} python {sys.version_info[0]}.{sys.version_info[1]} unicode {unicodedata.unidata_version}"


def _key(text: str) -> str:
    return stable_hash(text, size=16)


def _encode(counts: TextCounts) -> bytes:
    return zlib.compress(json.dumps(counts.to_json(), ensure_ascii=False, separators=(",", ":")).encode(), 6)


def _decode(blob: bytes) -> TextCounts | None:
    """The counts a row holds, or None for a row that does not hold them (counted again)."""
    try:
        return TextCounts.from_json(json.loads(zlib.decompress(blob)))
    except (zlib.error, ValueError, KeyError, TypeError, AttributeError):
        return None


class WordCountCache:
    """Per-text counts of the word model, on disk."""

    def __init__(self, path: Path, version: str | None = None) -> None:
        self.version = version or cache_version()
        self._cache = CacheDB(path, SCHEMA, "the word counts cache")
        self._cache.run(self._check_version)

    def _check_version(self, db: sqlite3.Connection) -> None:
        row = db.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
        if row is not None and row[0] == self.version:
            return
        db.execute("BEGIN")
        db.execute("DELETE FROM counts")
        db.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (self.version,))
        db.execute("COMMIT")

    def counts(self, texts: Sequence[str], on_progress: Callable[[int], None] | None = None) -> Iterator[TextCounts]:
        """The counts of each text, in order: read from the file, or computed (and stored). One batch at a time
        is held, so a large corpus is summed without holding every text's counts. ``on_progress`` is told of
        each batch's texts."""
        for i in range(0, len(texts), BATCH):
            part = texts[i:i + BATCH]
            keys = [_key(t) for t in part]
            known = self._cache.run(lambda db: dict(db.execute(
                f"SELECT hash, counts FROM counts WHERE hash IN ({','.join('?' * len(keys))})", keys).fetchall()))
            fresh: dict[str, bytes] = {}
            for key, text in zip(keys, part):
                counts = _decode(known[key]) if key in known else None
                if counts is None:
                    counts = TextCounts.of(text)
                    fresh[key] = _encode(counts)
                yield counts
            if fresh:
                self._cache.run(lambda db: self._put(db, fresh))
            if on_progress is not None:
                on_progress(len(part))

    @staticmethod
    def _put(db: sqlite3.Connection, rows: dict[str, bytes]) -> None:
        db.execute("BEGIN")
        db.executemany("INSERT OR REPLACE INTO counts VALUES (?, ?)", list(rows.items()))
        db.execute("COMMIT")

    def keep_only(self, texts: Iterable[str]) -> int:
        """Delete the counts of every text but ``texts`` (the whole corpus); returns how many were deleted."""
        keys = [(_key(t),) for t in texts]

        def prune(db: sqlite3.Connection) -> int:
            db.execute("BEGIN")
            db.execute("CREATE TEMP TABLE IF NOT EXISTS keep (hash TEXT PRIMARY KEY)")
            db.execute("DELETE FROM keep")
            db.executemany("INSERT OR IGNORE INTO keep VALUES (?)", keys)
            gone = db.execute("DELETE FROM counts WHERE hash NOT IN (SELECT hash FROM keep)").rowcount
            db.execute("DELETE FROM keep")
            db.execute("COMMIT")
            return gone

        return self._cache.run(prune)

    def close(self) -> None:
        self._cache.close()


def cached_word_model(texts: Sequence[str], path: Path,
                      on_progress: Callable[[int], None] | None = None) -> WordModel:
    """The word model of ``texts`` (a whole corpus), each text's counts read from the cache at ``path`` when it
    holds them; the cache then holds the counts of these texts only. ``on_progress``: told of the texts done."""
    cache = WordCountCache(path)
    try:
        model = WordModel.of_counts(cache.counts(texts, on_progress))
        cache.keep_only(texts)
        return model
    finally:
        cache.close()
