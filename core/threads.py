"""BLAS threads under the process's control, for every CPU-bound stage.

OpenBLAS (and MKL) start one thread per core and split every matrix product among them. When another process
keeps a core busy, each product waits for its descheduled thread: a batch of small attention products measured
50x slower with two BLAS threads than with one. Strata therefore runs its CPU-bound code (embedding, index
builds, Leiden) inside :func:`blas_limit`, which sets the BLAS thread count for the duration of a block (one by
default, from ``compute.blas_threads``), and gets parallelism from independent batches on threads of its own
(``compute.threads``; see :func:`worker_threads`).

The BLAS thread count is a property of the whole process, not of a Python thread: blocks entered by several
threads share it (the one entered last that is still running sets it; the process's own count comes back when
the last ends). Enter :func:`blas_limit` from the thread that coordinates the work rather than from each worker
thread. Nested blocks restore the outer limit on exit.

The settings are read at the edge: a CLI, API or worker process calls :func:`configure` once with its
``compute`` section, which also sets that BLAS limit for the whole process (a server's searches run their
products on threads of their own, outside any block); code that runs without it gets the defaults inside the
blocks (one BLAS thread, one worker thread per core).
"""

from __future__ import annotations

import gc
import os
import sys
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import threadpoolctl
from threadpoolctl import ThreadpoolController

from core.settings import ComputeSettings

_settings = ComputeSettings()
_controller: ThreadpoolController | None = None
_modules_seen: tuple[int, str | None] = (0, None)  # (how many modules, the last imported)
_process_limit: int | None = None  # set by configure(); applied to BLAS libraries loaded later too


def configure(settings: ComputeSettings) -> None:
    """Make ``settings`` the process's compute settings (BLAS threads and worker threads), and limit BLAS to
    ``blas_threads`` for the rest of the process, outside :func:`blas_limit` blocks too (a BLAS library loaded
    later gets the limit at the next block): a server's searches run
    matrix products on its own threads, and each unlimited product would leave an OpenBLAS thread spinning on
    the other core (measured: a whole core, while the server answered 50 clients)."""
    global _settings, _process_limit, _base
    with _blocks_lock, _any_thread_sets():
        _settings, _process_limit = settings, settings.blas_threads
        # a fresh look at the loaded libraries: a module is in sys.modules before its library is loaded, so the
        # import-count check below can miss a library an import in another thread was still loading
        controller = _blas_controller(force=True)
        if _blocks:  # a block in force keeps its limit; what the process had before the blocks is stale now
            _base = None
        else:
            controller.limit(limits=_process_limit, user_api="blas")  # never restored: the process's own


def settings() -> ComputeSettings:
    """The process's compute settings."""
    return _settings


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity, which containers and task pinning narrow)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def worker_threads(requested: int | None = None) -> int:
    """Threads for data-parallel work: ``requested``, else ``compute.threads``, where 0 means one per core."""
    n = _settings.threads if requested is None else requested
    if n < 0:
        raise ValueError(f"thread count must be 0 (one per core) or more, got {n}")
    return n or available_cores()


def _modules_now() -> tuple[int, str | None]:
    return len(sys.modules), next(reversed(sys.modules), None)


# threadpoolctl's release of its claim on OpenBLAS's count (3.8 and later; earlier versions make no claim)
_release = getattr(getattr(threadpoolctl, "OpenBLASController", None), "clear_controlling_thread", None)


@contextmanager
def _any_thread_sets() -> Iterator[None]:
    """Let the calling thread change OpenBLAS's thread count. threadpoolctl (from 3.8) lets only the first thread
    that changed it change it again while that thread lives, and silently ignores the others: a server's first
    search thread, or a thread that configured the process, would leave every later limit without effect (a
    test suite's leftover threads did, at random). The count here is the process's, shared on purpose, and its
    changes are ordered by this module's lock, so each is made by the thread that asks for it."""
    if _release is not None:
        _release(force=True)
    try:
        yield
    finally:
        if _release is not None:
            _release(force=True)


def _blas_controller(force: bool = False) -> ThreadpoolController:
    # Called under _blocks_lock, inside _any_thread_sets (it may set the count of a library loaded since).
    # Inspecting the loaded libraries costs about 0.5 ms, a limit through a kept controller about 10
    # microseconds (the query path embeds one text at a time). BLAS libraries arrive with imports (scipy brings
    # its own OpenBLAS beside numpy's), so the controller is rebuilt whenever modules were imported since: when
    # their count or the last one imported changed (a module removed and another imported keep the count).
    global _controller, _modules_seen
    if force or _controller is None or _modules_now() != _modules_seen:
        import numpy  # noqa: F401  (load numpy's BLAS before looking for it)

        known = {lib.filepath for lib in _controller.lib_controllers} if _controller is not None else set()
        _modules_seen = _modules_now()
        _controller = ThreadpoolController()
        if _process_limit is not None:  # only libraries loaded since: the others keep the count they have now
            for lib in _controller.lib_controllers:
                if lib.user_api == "blas" and lib.filepath not in known:
                    lib.set_num_threads(_process_limit)
    return _controller


_blocks: list[list[int]] = []  # the blocks in force, oldest first: [limit] each (a list, so each block is its own)
_base: Any = None  # the limiter that restores what the process had before the first block in force (None:
# configure() ran while blocks were in force, and the last to end leaves the configured count)
_blocks_lock = threading.Lock()


@contextmanager
def blas_limit(threads: int | None = None) -> Iterator[int]:
    """Run the block with at most ``threads`` BLAS threads (default ``compute.blas_threads``); yields the limit.

    The count is the whole process's, so blocks entered by several threads share it: the block entered last that is
    still running sets it, and when the last block ends the count the process had before the first is restored,
    or the configured one when :func:`configure` ran meanwhile (a thread's block that ends while another's runs
    leaves the other's limit in force, not the process's)."""
    global _base
    n = _settings.blas_threads if threads is None else threads
    if n < 1:
        raise ValueError(f"BLAS threads must be at least 1, got {n}")
    block = [n]
    with _blocks_lock, _any_thread_sets():
        controller = _blas_controller()
        if not _blocks:
            _base = controller.limit(limits=n, user_api="blas")
        else:
            controller.limit(limits=n, user_api="blas")
        _blocks.append(block)
    try:
        yield n
    finally:
        with _blocks_lock, _any_thread_sets():
            del _blocks[next(i for i, b in enumerate(_blocks) if b is block)]  # this block, not an equal one
            if _blocks:
                _blas_controller().limit(limits=_blocks[-1][0], user_api="blas")
            elif _base is not None:
                _base.restore_original_limits()
                _base = None
            else:  # configure() ran while blocks were in force
                _blas_controller().limit(limits=_process_limit, user_api="blas")


# Python's cyclic garbage collector looks at the young generation every 700 net allocations, at the middle one
# every 10 young collections, and at the old one every 10 of those (when enough new objects reached it). An
# indexing run holds millions of long-lived objects (the graph, every extraction, the chunk rows), so it pays for
# collections that find nothing: resolving 108,337 stored extractions took 57.0 s with the default threshold and
# 46.6 s with a young generation of 100,000 (`python -m bench.merge`; the graph read from the store 12.1 s and
# 10.9 s), the same result either way.
BATCH_GC_YOUNG = 100_000


_gc_lock = threading.Lock()
_gc_runs = 0  # batch runs open in this process
_gc_before: tuple[int, int, int] | None = None  # the thresholds before the first of them


def batch_collector() -> Callable[[], None]:
    """Make the collector's young generation ``BATCH_GC_YOUNG`` allocations for a batch run (an index run);
    returns what ends it (call it once). Runs that overlap in one process share the raise: the first saves the
    thresholds, the last to end puts them back. Reference counting still frees almost everything at once; only
    cycles wait longer."""
    global _gc_runs, _gc_before
    with _gc_lock:
        if _gc_runs == 0:
            _gc_before = gc.get_threshold()
            gc.set_threshold(max(_gc_before[0], BATCH_GC_YOUNG), *_gc_before[1:])
        _gc_runs += 1
    ended = threading.Event()

    def end() -> None:
        global _gc_runs
        with _gc_lock:
            if ended.is_set():
                return
            ended.set()
            _gc_runs -= 1
            if _gc_runs == 0 and _gc_before is not None:
                gc.set_threshold(*_gc_before)

    return end
