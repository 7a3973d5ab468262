"""A cache of hot queries for the HTTP API: serialized responses keyed by the normalized request and the index
generation that computed them.

The generation is part of the key, so a response computed on generation 7 can only answer a request that finds
generation 7 serving: publishing a new generation invalidates everything by construction, with no purge to get
wrong (entries of older generations are dropped as soon as a newer one is stored, to free their memory). The
cache is bounded in entries and in bytes (least recently used first out) and an entry lives ``ttl_s`` seconds.
Hits, misses and evictions are counted for ``/metrics``.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from core.settings import CacheSettings

if TYPE_CHECKING:
    from retrieval.contract import MemoryQueryRequest, MemoryQueryResponse

# The bookkeeping a cached entry costs beyond its key and body (the OrderedDict node, the tuple, the floats).
ENTRY_OVERHEAD = 160


def normalize_text(text: str) -> str:
    """Whitespace runs collapse to one space and the ends are trimmed: every tokenizer Strata uses (BM25's, the
    embedders') splits on whitespace, so this changes no result, while a trailing newline no longer misses."""
    return " ".join(text.split())


def request_key(kind: str, fields: dict[str, Any]) -> str:
    """A canonical key: the kind of request and its fields as sorted, compact JSON."""
    return kind + ":" + json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


@dataclass(frozen=True, slots=True)
class CacheStats:
    hits: dict[str, int]
    misses: dict[str, int]
    evictions: int
    expired: int
    entries: int
    bytes: int
    max_entries: int
    max_bytes: int

    @property
    def hit_ratio(self) -> float:
        """Hits over lookups so far (0 before the first lookup)."""
        h, m = sum(self.hits.values()), sum(self.misses.values())
        return h / (h + m) if h + m else 0.0


class QueryCache:
    """Responses by (generation, key); thread-safe. ``clock`` is injectable for tests of the time to live."""

    def __init__(self, settings: CacheSettings, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_entries, self.max_bytes, self.ttl = settings.max_entries, settings.max_bytes, settings.ttl_s
        self.clock = clock
        self._items: OrderedDict[tuple[int, str], tuple[bytes, float, int]] = OrderedDict()
        self._bytes = 0
        self._newest_generation = -1
        self._lock = threading.Lock()
        self._hits: dict[str, int] = {}
        self._misses: dict[str, int] = {}
        self._evictions = 0
        self._expired = 0

    @staticmethod
    def _kind(key: str) -> str:
        return key.split(":", 1)[0]

    def get(self, generation: int, key: str) -> bytes | None:
        kind = self._kind(key)
        with self._lock:
            item = self._items.get((generation, key))
            if item is not None and item[1] <= self.clock():
                self._drop((generation, key))
                self._expired += 1
                item = None
            if item is None:
                self._misses[kind] = self._misses.get(kind, 0) + 1
                return None
            self._items.move_to_end((generation, key))
            self._hits[kind] = self._hits.get(kind, 0) + 1
            return item[0]

    def put(self, generation: int, key: str, body: bytes) -> bool:
        """Store a response computed on ``generation``; False when it is larger than the whole cache may hold."""
        size = len(body) + len(key.encode("utf-8")) + ENTRY_OVERHEAD
        if size > self.max_bytes:
            return False
        with self._lock:
            if generation < self._newest_generation:
                return False  # computed on a generation already replaced: no request will look for it
            if generation > self._newest_generation:
                self._newest_generation = generation
                for old in [k for k in self._items if k[0] < generation]:
                    self._drop(old)
            if (generation, key) in self._items:
                self._drop((generation, key))
            self._items[(generation, key)] = (body, self.clock() + self.ttl, size)
            self._bytes += size
            while len(self._items) > self.max_entries or self._bytes > self.max_bytes:
                self._drop(next(iter(self._items)))
                self._evictions += 1
            return True

    def _drop(self, k: tuple[int, str]) -> None:
        _body, _expires, size = self._items.pop(k)
        self._bytes -= size

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(dict(self._hits), dict(self._misses), self._evictions, self._expired, len(self._items),
                              self._bytes, self.max_entries, self.max_bytes)


# -- the API's two cached requests ------------------------------------------------------------------------------
_QUERY_ID_HEAD = b'{"query_id":'


def memory_query_key(request: "MemoryQueryRequest") -> tuple[str, "MemoryQueryRequest"]:
    """The cache key of a memory query (everything but its ``query_id``, the search text normalized), and the
    normalized request that a miss runs, so that a cached body is exactly what that request returns."""
    normalized = request.model_copy(update={"search_text": normalize_text(request.search_text)})
    return request_key("memory", normalized.model_dump(mode="json", exclude={"query_id"})), normalized


def memory_body_tail(response: "MemoryQueryResponse") -> bytes | None:
    """The serialized response without its ``query_id``: what is cached, to be completed by
    :func:`with_query_id` for each caller (None if the serialization does not start with ``query_id``)."""
    raw = response.model_copy(update={"query_id": ""}).model_dump_json().encode("utf-8")
    head = _QUERY_ID_HEAD + b'""'
    return raw[len(head):] if raw.startswith(head) else None


def with_query_id(tail: bytes, query_id: str) -> bytes:
    from pydantic_core import to_json

    return _QUERY_ID_HEAD + to_json(query_id) + tail


def ask_key(question: str, mode: str | None, metadata_filter: dict[str, Any]) -> tuple[str, str]:
    """The cache key of a question (normalized) with its mode and filter, and the normalized question."""
    q = normalize_text(question)
    return request_key("ask", {"question": q, "mode": mode, "metadata_filter": metadata_filter}), q
