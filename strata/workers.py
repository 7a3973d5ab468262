"""What serves a question whichever the transport (the HTTP API or MCP): the engine, loaded once and hot-reloaded
(:class:`EngineHolder`), and the work limiter that admits requests and runs them on worker threads with a
timeout (:class:`WorkLimiter`). Refusals are :class:`strata.api_errors.ApiError`."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from core.settings import ServerSettings, StrataSettings
from strata.api_errors import ApiError

if TYPE_CHECKING:
    from strata.engine import Engine

T = TypeVar("T")


class WorkLimiter:
    """Admits at most ``max_concurrent_requests`` requests at once: one that finds every slot taken gets 503
    with Retry-After at once. Memory queries (CPU-bound) run on ``search_threads`` threads in arrival order (0:
    on the event loop): more threads would only take turns at the GIL, and every query in flight would finish
    late. Answers and
    drift refreshes (which wait on an LLM or the store) run on a pool with a thread per slot. A request not
    done after the timeout gets 503; if it had not started it never will, else its slot stays taken until the
    work really ends."""

    def __init__(self, server: ServerSettings, answer_timeout_s: float | None = None) -> None:
        self.slots = server.max_concurrent_requests
        self.search_threads = min(server.search_threads, self.slots)
        self.timeout = server.request_timeout_s
        self.answer_timeout = answer_timeout_s or server.request_timeout_s  # answers that call an LLM wait longer
        self.retry_after = str(server.retry_after_s)
        self.busy = 0
        self.lock = threading.Lock()
        self.pool, self.search_pool = self._new_pools()

    def _new_pools(self) -> tuple[ThreadPoolExecutor, ThreadPoolExecutor | None]:
        return (ThreadPoolExecutor(max_workers=self.slots, thread_name_prefix="strata-api"),
                ThreadPoolExecutor(max_workers=self.search_threads, thread_name_prefix="strata-search")
                if self.search_threads else None)

    def open(self) -> None:
        """Ready for work again after :meth:`close` (a server may run the app's lifespan more than once)."""
        if self.pool._shutdown:
            self.pool, self.search_pool = self._new_pools()

    def _release(self, _future: Any) -> None:
        with self.lock:
            self.busy -= 1

    async def run(self, fn: Callable[[], T], search: bool = False, answer: bool = False) -> T:
        """``fn`` on a worker thread, cut after the request timeout (``answer``: the answer timeout)."""
        timeout = self.answer_timeout if answer else self.timeout
        with self.lock:
            if self.busy >= self.slots:
                raise ApiError(503, [], f"the server is busy ({self.slots} requests running; "
                                        "server.max_concurrent_requests); retry later", "overloaded",
                               {"Retry-After": self.retry_after})
            self.busy += 1
        if search and self.search_pool is None:  # search_threads = 0: on the event loop, start to end
            try:
                return fn()
            finally:
                self._release(None)
        future = (self.search_pool if search else self.pool).submit(fn)
        future.add_done_callback(self._release)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout)
        except asyncio.TimeoutError:
            # wait_for cancelled the wrapper, which cancels ``future``: one still waiting for a thread never runs
            # (and its slot is freed now).
            setting = "server.llm_request_timeout_s" if answer and timeout != self.timeout else "server.request_timeout_s"
            raise ApiError(503, [], f"the request took longer than {timeout:g} s ({setting})",
                           "timeout", {"Retry-After": self.retry_after}) from None

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        if self.search_pool is not None:
            self.search_pool.shutdown(wait=False, cancel_futures=True)


def load_engine(settings: StrataSettings) -> "Engine":
    """The query engine over the workspace's index; the one place the API loads it."""
    from strata.engine import Engine

    # Watching: a newer published generation is loaded in the background and swapped in (hot reload).
    return Engine(settings, watch=True)


class EngineHolder:
    """The engine loaded at start-up, or why it could not be (then query routes answer 503 with the reason)."""

    def __init__(self, settings: StrataSettings) -> None:
        self.settings = settings
        self.engine: "Engine | None" = None
        self.error: str | None = None
        self._lock = threading.Lock()
        self._tried = False
        self._tried_at = 0.0

    def load(self) -> None:
        from core.store import StoreError

        with self._lock:
            if self.engine is not None or (self._tried and time.monotonic() - self._tried_at < self.settings.index.reload_poll_s):
                return
            self._tried, self._tried_at = True, time.monotonic()
            try:
                self.engine = load_engine(self.settings)
                self.error = None
            except (FileNotFoundError, ValueError, StoreError, OSError) as exc:
                self.error = str(exc)

    def get(self) -> "Engine":
        if self.engine is None:
            # Not loaded at start-up (no generation published yet, or an app run without its lifespan): try again,
            # at most once per poll interval, so the first published generation is served without a restart.
            self.load()
        if self.engine is None:
            raise ApiError(503, [], f"no index loaded: {self.error}", "no_index", {"Retry-After": "30"})
        return self.engine

    def close(self) -> None:
        with self._lock:
            if self.engine is not None:
                self.engine.close()
            self.engine, self.error, self._tried = None, None, False
