"""The metrics ``strata serve`` reads at scrape time (:class:`ServingCollector`): the serving generation, its age
and its chunks, entities, relations, communities and reports, the embedder and its state, the query cache, and the
last index run's figures; with several server processes, every live process's."""

from __future__ import annotations

import logging
import os
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from prometheus_client import generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from strata.logs import ACCESS_LOGGER, log_event
from strata.qcache import QueryCache
from strata.runmetrics import read_index_metrics
from strata.workspace import pid_alive

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

access_log = logging.getLogger(ACCESS_LOGGER)


def _age_seconds(created_at: Any) -> float | None:
    try:
        return max(0.0, time.time() - datetime.strptime(str(created_at), "%Y-%m-%dT%H:%M:%S%z").timestamp())
    except ValueError:
        return None


class ServingCollector:
    """Metrics read at scrape time: the serving generation, the embedder, the query cache, the last index run.

    With several server processes (``shared_dir`` set) each process has its own engine and cache, and a scrape
    reaches one of them. Each process therefore writes its own figures, labelled with its ``pid``, to
    ``serving-<pid>.prom`` in the shared folder every ``publish_s`` seconds, and the process answering a scrape
    adds those of the other live processes to its own: every scrape shows every process (a process still on an
    old generation included), and each series stays one process's (in queries: ``sum by (kind) (rate(...))``)."""

    def __init__(self, engine: Callable[[], Any], cache: QueryCache | None, data_dir: Path,
                 shared_dir: str | None = None, publish_s: float = 1.0) -> None:
        self.engine, self.cache, self.data_dir = engine, cache, Path(data_dir)
        self.shared = Path(shared_dir) if shared_dir else None
        self.publish_s = publish_s
        self.pid = os.getpid()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def describe(self) -> list["Metric"]:
        return []  # nothing to check at registration: these names are the collector's alone

    def collect(self) -> Iterator["Metric"]:
        if self.shared is None:
            yield from self.process_families()
        else:
            yield from _merged([*self.process_families(), *self._other_processes()])
        yield from read_index_metrics(self.data_dir)

    def open(self) -> None:
        """The app starts serving: with several processes, publish this one's figures from now on."""
        if self.shared is None or self._thread is not None:
            return
        self._stop.clear()
        self._publish_safely()
        self._thread = threading.Thread(target=self._publish_every, name="strata-metrics-publish", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """This process stops serving: its figures leave the other processes' scrapes."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)  # a publish under way ends before the file goes
            self._thread = None
        if self.shared is not None:
            self._path(self.pid).unlink(missing_ok=True)

    # -- one process's figures --------------------------------------------------------------------------------
    def process_families(self) -> Iterator["Metric"]:
        """This process's figures (with its ``pid`` when there are several processes)."""
        extra, pid = (["pid"], [str(self.pid)]) if self.shared is not None else ([], [])

        def family(kind: type, name: str, text: str, value: float) -> "Metric":
            metric = kind(name, text, labels=extra)
            metric.add_metric(pid, value)
            return metric

        engine = self.engine()
        yield family(GaugeMetricFamily, "strata_index_loaded", "1 when an index generation is loaded and served",
                     1.0 if engine is not None else 0.0)
        if engine is not None:
            snap = engine.current
            m = snap.manifest
            yield family(GaugeMetricFamily, "strata_index_generation", "the index generation being served",
                         float(snap.number))
            age = _age_seconds(m.get("created_at"))
            if age is not None:
                yield family(GaugeMetricFamily, "strata_index_generation_age_seconds",
                             "seconds since the serving generation was written", age)
            for what in ("chunks", "entities", "relations", "communities", "reports"):
                yield family(GaugeMetricFamily, f"strata_index_{what}", f"{what} in the serving generation",
                             float(m.get(what) or 0))
            yield family(GaugeMetricFamily, "strata_index_reload_failing",
                         "1 when the last attempt to load a newer generation failed", float(bool(engine.reload_error)))
            index = snap.index
            embedder = index.embedder
            state = "none" if embedder is None else ("dense" if index.default_dense_weight > 0 else "lexical_only")
            info = GaugeMetricFamily("strata_embedder_info", "the query embedder and its state (dense: fused with "
                                     "BM25 by default; lexical_only: loaded but not used by default; none)",
                                     labels=["embedder", "state", *extra])
            info.add_metric([index.dense_name, state, *pid], 1.0)
            yield info
            yield family(GaugeMetricFamily, "strata_embedder_default_dense_weight",
                         "the dense share of a default search", float(index.default_dense_weight))
        if self.cache is None:
            return
        s = self.cache.stats()
        kinds = sorted(set(s.hits) | set(s.misses) | {"memory", "ask"})
        hits = CounterMetricFamily("strata_query_cache_hits", "query cache hits by kind", labels=["kind", *extra])
        misses = CounterMetricFamily("strata_query_cache_misses", "query cache misses by kind",
                                     labels=["kind", *extra])
        for k in kinds:
            hits.add_metric([k, *pid], s.hits.get(k, 0))
            misses.add_metric([k, *pid], s.misses.get(k, 0))
        yield hits
        yield misses
        yield family(CounterMetricFamily, "strata_query_cache_evictions", "entries evicted to stay within the bounds",
                     s.evictions)
        yield family(GaugeMetricFamily, "strata_query_cache_entries", "responses in the query cache", s.entries)
        yield family(GaugeMetricFamily, "strata_query_cache_bytes", "bytes held by the query cache", s.bytes)
        yield family(GaugeMetricFamily, "strata_query_cache_max_bytes", "the cache's byte bound (cache.max_bytes)",
                     s.max_bytes)
        yield family(GaugeMetricFamily, "strata_query_cache_hit_ratio", "hits over lookups since the server started",
                     s.hit_ratio)

    # -- the other processes' ---------------------------------------------------------------------------------
    def _path(self, pid: int) -> Path:
        assert self.shared is not None
        return self.shared / f"serving-{pid}.prom"

    def _publish(self) -> None:
        tmp = self._path(self.pid).with_suffix(".tmp")
        tmp.write_bytes(generate_latest(_Families(self.process_families)))  # any collector renders, no registry
        tmp.replace(self._path(self.pid))  # whole files only: a reader never sees half of one

    def _publish_safely(self) -> None:
        try:
            self._publish()
        except Exception as exc:  # noqa: BLE001  (a figure that cannot be written now is written next time)
            log_event(access_log, f"could not publish this process's serving metrics: {exc}", logging.WARNING)

    def _publish_every(self) -> None:
        while not self._stop.wait(self.publish_s):
            self._publish_safely()

    def _other_processes(self) -> Iterator["Metric"]:
        """The figures the server's other live processes published lately. A process gone without closing
        (killed) leaves its files: they are removed, its in-flight gauge with them; a process that has not
        published for five intervals (hung) is left out until it does."""
        from prometheus_client.multiprocess import mark_process_dead
        from prometheus_client.parser import text_string_to_metric_families

        assert self.shared is not None
        now = time.time()
        for path in self.shared.glob("serving-*.prom"):
            try:
                pid = int(path.stem.removeprefix("serving-"))
                if pid == self.pid:
                    continue
                if not _sibling(pid):
                    path.unlink(missing_ok=True)
                    mark_process_dead(pid, str(self.shared))
                    continue
                if now - path.stat().st_mtime > 5 * self.publish_s:
                    continue
                text = path.read_text(encoding="utf-8")
            except (OSError, ValueError):
                continue
            try:
                yield from text_string_to_metric_families(text)
            except ValueError:
                continue


def _sibling(pid: int) -> bool:
    """Whether ``pid`` is a live process started by the same parent as this one (another worker of this
    server, not a process that reused a dead worker's id)."""
    if not pid_alive(pid):
        return False
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]) == os.getppid()
    except (OSError, ValueError, IndexError):
        return True  # no /proc to tell: alive is the best there is


class _Families:
    def __init__(self, families: Callable[[], Iterable["Metric"]]) -> None:
        self.families = families

    def collect(self) -> Iterable["Metric"]:
        return self.families()


def _merged(families: Iterable["Metric"]) -> list["Metric"]:
    """One family per name (the exposition format allows a name once), with every process's samples."""
    out: dict[str, "Metric"] = {}
    for f in families:
        if f.name in out:
            out[f.name].samples.extend(f.samples)
        else:
            out[f.name] = f
    return list(out.values())
