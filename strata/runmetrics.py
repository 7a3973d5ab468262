"""An index run's figures where a scrape, a log reader or the Prefect UI can see them.

* Each stage of a run is timed (:func:`timed_stage`, the seconds accumulate in ``IndexRun.stage_seconds``) and
  logged as one structured line (``strata.index`` logger: stage, seconds, outcome).
* At the end of a run :func:`record_index_run` writes ``<data-dir>/metrics/index.prom`` in the Prometheus text
  format, atomically (a temporary file renamed over the old one), in the style of node_exporter's textfile
  collector: documents new/changed/deleted/unchanged, chunks extracted, failed chunks, failures in the ledger,
  LLM calls, tokens and cost, seconds per stage, the generation served and when the run finished. ``strata
  serve`` exposes the file's metrics on ``/metrics`` too; the flows publish the same figures as an artifact.
"""

from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, TypeVar

from core.settings import LLMSettings
from strata.logs import log_event

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

log = logging.getLogger("strata.index")
F = TypeVar("F", bound=Callable[..., Any])
METRICS_DIR = "metrics"
INDEX_PROM = "index.prom"
LLM_STAGES = ("extract", "report")
STAGES = ("plan", "remove", "words", "extract", "merge", "communities", "reports", "index", "publish")  # ("words": offline)


def index_metrics_path(data_dir: Path) -> Path:
    return Path(data_dir) / METRICS_DIR / INDEX_PROM


def timed_stage(name: str) -> Callable[[F], F]:
    """Time a stage function whose first argument is the run's session: its seconds are added to
    ``session.run.stage_seconds[name]`` (a stage run once per batch accumulates) and one line is logged."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def timed(session: Any, *args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            outcome = "error"
            try:
                result = fn(session, *args, **kwargs)
                outcome = "ok"
                return result
            finally:
                seconds = time.perf_counter() - start
                run = session.run
                run.stage_seconds[name] = round(run.stage_seconds.get(name, 0.0) + seconds, 3)
                log_event(log, f"stage {name} {outcome}", logging.INFO if outcome == "ok" else logging.ERROR,
                          event="index_stage", stage=name, outcome=outcome, seconds=round(seconds, 3),
                          source=run.source)

        return timed  # type: ignore[return-value]

    return wrap


@dataclass(frozen=True, slots=True)
class RunFigures:
    """The figures of one run that monitoring looks at."""

    documents: dict[str, int]          # new, changed, deleted, unchanged
    chunks_extracted: int
    failed_chunks: int
    ledger_failures: int
    report_fallbacks: int
    reports_written: int
    llm_calls: dict[str, int]          # by LLM stage (extract, reports, ...)
    llm_tokens: dict[tuple[str, str], int]  # (stage, input|output)
    llm_cost_usd: float
    stage_seconds: dict[str, float]
    seconds: float
    generation: int | None
    published: bool
    mode: str
    # (stage, path) -> structured answers by the path they took: schema_valid, repaired, unusable
    llm_answers: dict[tuple[str, str], int] = field(default_factory=dict)

    @classmethod
    def of(cls, run: dict[str, Any], llm: LLMSettings) -> "RunFigures":
        """From an ``IndexRun.to_dict()``; cost priced with ``llm``'s prices per 1,000 tokens."""
        # The two LLM stages of every run are always shown (at 0 offline), so a dashboard never finds no series.
        usage: dict[str, dict[str, int]] = {**{s: {} for s in LLM_STAGES}, **(run.get("llm_usage") or {})}
        tokens = {(stage, d): int(u.get(f"{d}_tokens", 0)) for stage, u in usage.items() for d in ("input", "output")}
        cost = sum(n * (llm.price_input_per_1k if d == "input" else llm.price_output_per_1k) / 1000
                   for (_, d), n in tokens.items())
        return cls({k: int(run.get(k, 0)) for k in ("new", "changed", "deleted", "unchanged")},
                   int(run.get("chunks_extracted", 0)), int(run.get("failed_chunks", 0)), len(run.get("failures") or ()),
                   int(run.get("report_fallbacks", 0)), int(run.get("reports_written", 0)),
                   {stage: int(u.get("calls", 0)) for stage, u in usage.items()}, tokens, round(cost, 6),
                   dict(run.get("stage_seconds") or {}), float(run.get("seconds", 0.0)), run.get("generation"),
                   bool(run.get("published")), str(run.get("mode", "")),
                   {(stage, p): int(u[p]) for stage, u in usage.items()
                    for p in ("schema_valid", "repaired", "unusable") if u.get(p)})

    def rows(self) -> list[tuple[str, str]]:
        """(what, value) rows for a summary table (the Prefect artifact)."""
        out = [(f"documents {k}", str(v)) for k, v in self.documents.items()]
        out += [("chunks extracted", str(self.chunks_extracted)), ("failed chunks", str(self.failed_chunks)),
                ("failures in the ledger", str(self.ledger_failures)),
                ("report fallbacks", str(self.report_fallbacks)), ("reports written", str(self.reports_written)),
                ("LLM calls", str(sum(self.llm_calls.values()))),
                ("LLM tokens in / out", f"{sum(n for (_, d), n in self.llm_tokens.items() if d == 'input')} / "
                                        f"{sum(n for (_, d), n in self.llm_tokens.items() if d == 'output')}"),
                ("LLM cost (USD)", f"{self.llm_cost_usd:.4f}")]
        out += [(f"seconds: {stage}", f"{s:.3f}") for stage, s in self.stage_seconds.items()]
        out += [("seconds in all", f"{self.seconds:.3f}"), ("generation", str(self.generation)),
                ("published", str(self.published))]
        return out


def _families(f: RunFigures, finished_at: float, runs_recorded: int) -> Iterator["Metric"]:
    from prometheus_client.core import GaugeMetricFamily

    def gauge(name: str, doc: str, value: float | None = None, labels: list[str] | None = None,
              samples: dict[tuple[str, ...], float] | None = None) -> GaugeMetricFamily:
        g = GaugeMetricFamily(name, doc, value=value, labels=labels)
        for key, v in (samples or {}).items():
            g.add_metric(list(key), v)
        return g

    yield gauge("strata_index_run_finished_timestamp_seconds", "when the last index run finished (Unix time)",
                finished_at)
    yield gauge("strata_index_run_seconds", "wall time of the last index run", f.seconds)
    yield gauge("strata_index_run_stage_seconds", "seconds of each stage of the last index run", labels=["stage"],
                samples={(s,): v for s, v in f.stage_seconds.items()})
    yield gauge("strata_index_run_documents", "documents of the last index run by change", labels=["change"],
                samples={(k,): v for k, v in f.documents.items()})
    yield gauge("strata_index_run_chunks_extracted", "chunks extracted by the last index run", f.chunks_extracted)
    yield gauge("strata_index_run_failed_chunks", "chunks whose extraction failed in the last index run",
                f.failed_chunks)
    yield gauge("strata_index_run_ledger_failures", "entries in the failure ledger after the last index run "
                                                   "(retried by the next run)", f.ledger_failures)
    yield gauge("strata_index_run_report_fallbacks", "community reports written by the extractive fallback",
                f.report_fallbacks)
    yield gauge("strata_index_run_reports_written", "community reports written by the last index run",
                f.reports_written)
    yield gauge("strata_index_run_llm_calls", "LLM calls of the last index run by stage", labels=["stage"],
                samples={(s,): v for s, v in f.llm_calls.items()})
    yield gauge("strata_index_run_llm_tokens", "LLM tokens of the last index run", labels=["stage", "direction"],
                samples=dict(f.llm_tokens))
    yield gauge("strata_index_run_llm_answers", "structured LLM answers of the last index run by stage and by the "
                "path they took (schema_valid: valid as they came; repaired; unusable)", labels=["stage", "path"],
                samples=dict(f.llm_answers))
    yield gauge("strata_index_run_llm_cost_usd", "estimated LLM cost of the last index run (llm.price_*_per_1k)",
                f.llm_cost_usd)
    yield gauge("strata_index_run_generation", "the generation serving after the last index run",
                float(f.generation or 0))
    yield gauge("strata_index_run_published", "1 when the last index run published a new generation",
                1.0 if f.published else 0.0)
    yield gauge("strata_index_runs_recorded", "index runs in the workspace's run log", runs_recorded)


def render(f: RunFigures, finished_at: float, runs_recorded: int) -> bytes:
    from prometheus_client import generate_latest
    from prometheus_client.registry import Collector, CollectorRegistry

    class _Once(Collector):
        def collect(self) -> Iterator["Metric"]:
            return _families(f, finished_at, runs_recorded)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Once())
    return generate_latest(registry)


def record_index_run(data_dir: Path, run: dict[str, Any], llm: LLMSettings) -> Path:
    """Write the run's figures to ``<data-dir>/metrics/index.prom`` atomically and log them as one line."""
    from strata.workspace import Workspace

    figures = RunFigures.of(run, llm)
    try:
        with open(Workspace(Path(data_dir)).runs_path, "rb") as fh:
            runs_recorded = sum(1 for line in fh if line.strip())
    except OSError:
        runs_recorded = 0
    path = index_metrics_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{INDEX_PROM}.{time.time_ns()}.tmp")
    tmp.write_bytes(render(figures, time.time(), runs_recorded))
    tmp.replace(path)
    if "publish" in figures.stage_seconds:
        log_event(log, "stage publish ok", event="index_stage", stage="publish", outcome="ok",
                  seconds=figures.stage_seconds["publish"], source=run.get("source"))
    log_event(log, "index run done", event="index_run", source=run.get("source"), mode=figures.mode,
              generation=figures.generation, published=figures.published, documents=figures.documents,
              chunks_extracted=figures.chunks_extracted, failed_chunks=figures.failed_chunks,
              ledger_failures=figures.ledger_failures, llm_calls=sum(figures.llm_calls.values()),
              llm_cost_usd=figures.llm_cost_usd, stage_seconds=figures.stage_seconds, seconds=figures.seconds)
    return path


def read_index_metrics(data_dir: Path) -> list["Metric"]:
    """The metric families of ``index.prom`` (none when no run has written it, or it cannot be parsed)."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        text = index_metrics_path(data_dir).read_text(encoding="utf-8")
        return list(text_string_to_metric_families(text))
    except (OSError, ValueError):
        return []
