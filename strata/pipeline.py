"""Application services: index a folder, answer a question, run a memory query.

These functions are what the CLI, the HTTP API and the Prefect flows call. Each stage they run is a plain
function from ``extraction``, ``communities`` or ``retrieval``; this module only wires stages to the store,
the chunk index folder and progress reporting.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from communities.leiden import changed_entities, detect_communities, entity_signatures
from communities.reports import ExtractiveReportWriter, ReportWriter, write_reports
from extraction.chunking import chunk_document
from extraction.ledger import FailureLedger
from extraction.loader import LoadResult, load_folder
from extraction.offline import OfflineExtractor
from extraction.resolution import resolve
from extraction.types import Extractor
from retrieval.index import ChunkIndex, IndexMismatchError
from retrieval.vector_cache import VectorCache
from retrieval.router import EntityLexicon, KnownEntity
from core.records import Chunk, Community, Document, GraphSnapshot, LoadProblem, Report
from core.settings import StrataSettings
from core.store import GraphStore, open_store

if TYPE_CHECKING:
    from communities.drift import DriftReport
    from extraction.llm_client import LLMClient

# A progress callback: (stage name, units done now, total units or None).
Progress = Callable[[str, int, int | None], None]


def _no_progress(stage: str, advance: int, total: int | None) -> None:
    return None


@dataclass(frozen=True)
class Workspace:
    """Where an index lives: the embedded store, the chunk index folder, the run log."""

    root: Path

    @property
    def index_dir(self) -> Path:
        return self.root / "index"

    @property
    def lexicon_path(self) -> Path:
        return self.root / "index" / "entities.json"

    @property
    def runs_path(self) -> Path:
        return self.root / "runs.jsonl"

    @property
    def communities_path(self) -> Path:
        """The communities as the last finished run left them: the starting point of the next detection."""
        return self.root / "communities.json"

    @property
    def signatures_path(self) -> Path:
        """Entity signatures as the last finished run left them: what changed since is what gets re-clustered."""
        return self.root / "entity_signatures.json"

    @property
    def pending_path(self) -> Path:
        """Present while a run is changing the store; a leftover one means the last run died mid-way."""
        return self.root / "run.pending"


@dataclass
class IndexRun:
    """What one indexing run did; stored in ``runs.jsonl`` and printed by the CLI."""

    source: str
    mode: str
    store: str
    embedder: str
    documents: int = 0
    new: int = 0
    changed: int = 0
    deleted: int = 0
    unchanged: int = 0
    chunks_extracted: int = 0
    chunks_total: int = 0
    entities: int = 0
    relations: int = 0
    communities: int = 0
    levels: int = 0
    reports_written: int = 0
    reports_kept: int = 0
    problems: list[dict[str, str]] = field(default_factory=list)
    failed_chunks: int = 0
    failures: list[dict[str, object]] = field(default_factory=list)
    llm_usage: dict[str, dict[str, int]] = field(default_factory=dict)
    predicted: dict[str, float | int] = field(default_factory=dict)
    report_fallbacks: int = 0
    seconds: float = 0.0
    started_at: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def open_llm(settings: StrataSettings) -> "LLMClient | None":
    """The LLM client for LLM mode (with its response cache in the workspace), or None offline."""
    if settings.llm_mode != "llm":
        return None
    from extraction.llm_client import LLMClient

    return LLMClient.from_settings(settings.llm, Path(settings.data_dir) / "llm_cache.sqlite")


def make_extractor(settings: StrataSettings, client: "LLMClient | None") -> Extractor:
    if client is not None:
        from extraction.llm_extractor import LLMExtractor

        return LLMExtractor(client, settings.extraction, settings.llm.prompts_dir)
    return OfflineExtractor(settings.extraction)


def make_report_writer(settings: StrataSettings, client: "LLMClient | None", chunks: Sequence[Chunk]) -> ReportWriter:
    """The LLM writer when a client is given (it reads source passages from ``chunks``), else the extractive one."""
    if client is not None:
        from communities.llm_reports import LLMReportWriter

        return LLMReportWriter(client, settings.communities, {c.id: c for c in chunks}, settings.llm.prompts_dir)
    return ExtractiveReportWriter(settings.communities)


@dataclass(frozen=True, slots=True)
class ChangeSet:
    new: tuple[Document, ...]
    changed: tuple[Document, ...]
    deleted: tuple[str, ...]
    unchanged: tuple[str, ...]


def diff_documents(loaded: LoadResult, stored: dict[str, str], prune: bool) -> ChangeSet:
    """Compare loaded documents with the store's content hashes. Files that failed to load are never deleted."""
    new, changed, unchanged = [], [], []
    for d in loaded.documents:
        if d.id not in stored:
            new.append(d)
        elif stored[d.id] != d.content_hash:
            changed.append(d)
        else:
            unchanged.append(d.id)
    failed = {p.path.split(":")[0] for p in loaded.problems}
    present = {d.id for d in loaded.documents}
    deleted = [i for i in stored if i not in present and i not in failed] if prune else []
    return ChangeSet(tuple(new), tuple(changed), tuple(sorted(deleted)), tuple(unchanged))


def write_documents(store: GraphStore, docs: Sequence[Document], extractor: Extractor, settings: StrataSettings,
                    progress: Progress, ledger: FailureLedger, client: "LLMClient | None" = None,
                    batch_chunks: int = 256) -> tuple[list[Chunk], int]:
    """Chunk, extract and store documents; returns the chunks and how many failed extraction.

    Chunks of several documents are extracted together (concurrently in LLM mode). A document's hash is written
    last, and left empty when any of its chunks failed, so a crash mid-way or a failed chunk leaves it marked as
    changed and the next run redoes it (calls that succeeded come from the response cache).
    """
    all_chunks: list[Chunk] = []
    failed = 0
    batch: list[tuple[Document, list[Chunk]]] = []

    def flush() -> None:
        nonlocal failed
        if not batch:
            return
        for doc, chunks in batch:
            store.upsert_documents([Document(doc.id, doc.source, doc.text, "", doc.metadata)])
            store.upsert_chunks(chunks)
        result = extractor.extract([c for _, chunks in batch for c in chunks])
        by_chunk = {x.chunk_id: x for x in result.extractions}
        failures_by_chunk = {f.chunk_id: f for f in result.failures}
        for doc, chunks in batch:
            entities, relations = resolve([by_chunk[c.id] for c in chunks if c.id in by_chunk],
                                          settings.extraction.description_max_chars)
            if client is not None:
                from extraction.descriptions import merge_entity_descriptions

                entities = merge_entity_descriptions(entities, client, settings)
            store.upsert_entities(entities)
            store.upsert_relations(relations)
            doc_failures = [failures_by_chunk[c.id] for c in chunks if c.id in failures_by_chunk]
            if doc_failures:
                ledger.record(doc.id, "extract", doc_failures)
                failed += len(doc_failures)
            else:
                ledger.clear_document(doc.id)
                store.upsert_documents([doc])
            all_chunks.extend(chunks)
            progress("extract", len(chunks), None)
        batch.clear()

    pending = 0
    for doc in docs:
        chunks = chunk_document(doc, settings.chunking)
        batch.append((doc, chunks))
        pending += len(chunks)
        if pending >= batch_chunks:
            flush()
            pending = 0
    flush()
    return all_chunks, failed


def lexicon_from(snapshot: GraphSnapshot, total_chunks: int) -> EntityLexicon:
    return EntityLexicon([KnownEntity(e.name, e.type, len(e.chunk_ids)) for e in snapshot.entities], total_chunks)


def load_or_rebuild_index(ws: Workspace, store: GraphStore, settings: StrataSettings, progress: Progress) -> tuple[ChunkIndex, bool]:
    """The stored chunk index, or one rebuilt from the store's chunks when the last run did not finish (its
    marker file is still there), the index is missing, or it was built with other settings."""
    cache = VectorCache(ws.root / "vectors.sqlite")
    try:
        if not ws.pending_path.exists():
            return ChunkIndex.load(ws.index_dir, settings.retrieval, vector_cache=cache, llm=settings.llm), False
    except (FileNotFoundError, IndexMismatchError, ValueError, KeyError, OSError):
        pass
    index = ChunkIndex(settings.retrieval, vector_cache=cache, llm=settings.llm)
    chunks = store.all_chunks()
    if chunks:
        progress("index", 0, len(chunks))
        index.add(chunks, on_progress=lambda n: progress("index", n, len(chunks)))
    return index, True


@dataclass
class IndexSession:
    """The live resources of one indexing run, shared by its stages (the CLI runs them in a row, the Prefect
    flow as tasks)."""

    settings: StrataSettings
    ws: Workspace
    store: GraphStore
    client: "LLMClient | None"
    ledger: FailureLedger
    extractor: Extractor
    index: ChunkIndex
    run: IndexRun
    progress: Progress
    own_store: bool
    started: float
    recovering: bool = False

    def close(self) -> None:
        self.index.close()
        if self.index.vector_cache is not None:
            self.index.vector_cache.close()
        self.ledger.close()
        if self.client is not None:
            self.client.close()
        if self.own_store:
            self.store.close()


def open_session(folder: Path | str, settings: StrataSettings, loaded: LoadResult, progress: Progress = _no_progress,
                 store: GraphStore | None = None) -> IndexSession:
    ws = Workspace(Path(settings.data_dir))
    ws.root.mkdir(parents=True, exist_ok=True)
    own_store = store is None
    store = store or open_store(settings)
    client = open_llm(settings)
    ledger = FailureLedger(ws.root / "ledger.sqlite")
    extractor = make_extractor(settings, client)
    recovering = ws.pending_path.exists()
    index, _ = load_or_rebuild_index(ws, store, settings, progress)
    # From here until the index is saved, a crash leaves the marker behind and the next run rebuilds the index.
    ws.pending_path.write_text(time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    run = IndexRun(source=str(folder), mode=extractor.mode, store=store.backend, embedder=index.describe(),
                   documents=len(loaded.documents), problems=[{"path": p.path, "reason": p.reason} for p in loaded.problems],
                   started_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    return IndexSession(settings, ws, store, client, ledger, extractor, index, run, progress, own_store,
                        time.perf_counter(), recovering)


def stage_plan(session: IndexSession, loaded: LoadResult, prune: bool) -> ChangeSet:
    """Compare the folder with the store: new, changed, deleted and unchanged documents."""
    changes = diff_documents(loaded, session.store.document_hashes(), prune)
    r = session.run
    r.new, r.changed, r.deleted, r.unchanged = len(changes.new), len(changes.changed), len(changes.deleted), len(changes.unchanged)
    if session.client is not None:
        from extraction.estimate import estimate_documents

        r.predicted = estimate_documents(list(changes.new) + list(changes.changed), session.settings).to_dict()
    return changes


def stage_remove(session: IndexSession, document_ids: Sequence[str]) -> None:
    """Delete what deleted and changed documents contributed, from the store and the chunk index."""
    for doc_id in document_ids:
        session.store.delete_document(doc_id)
    if document_ids:
        session.index.remove_documents(document_ids)


def stage_extract(session: IndexSession, docs: Sequence[Document]) -> int:
    """Chunk, extract and store a batch of documents and add their chunks to the index; returns chunks done."""
    chunks, failed = write_documents(session.store, docs, session.extractor, session.settings, session.progress,
                                     session.ledger, session.client)
    session.run.failed_chunks += failed
    session.run.chunks_extracted += len(chunks)
    if chunks:
        session.progress("embed", 0, len(chunks))
        session.index.add(chunks, on_progress=lambda n: session.progress("embed", n, len(chunks)))
    return len(chunks)


def _last_communities(ws: Workspace) -> list[Community] | None:
    if not ws.communities_path.exists():
        return None
    rows = json.loads(ws.communities_path.read_text())
    return [Community(r["id"], r["level"], r["parent_id"], tuple(r["entity_ids"])) for r in rows]


def stage_communities(session: IndexSession, graph_changed: bool = True) -> tuple[GraphSnapshot, list[Community]]:
    """Hierarchical Leiden on the whole graph, starting from the last finished run's communities (ids carried
    over by overlap). When no document changed and the last run finished, the stored communities stand."""
    session.progress("communities", 0, None)
    snapshot = session.store.read_graph()
    stored = session.store.communities()
    if not graph_changed and not session.recovering and stored:
        communities = stored
    else:
        previous = _last_communities(session.ws)
        # What changed is read against the last finished run, so a run resumed after a crash decides the same.
        signatures = session.ws.signatures_path
        touched = (changed_entities(json.loads(signatures.read_text()), entity_signatures(snapshot))
                   if signatures.exists() and previous is not None else None)
        communities = detect_communities(snapshot, session.settings.communities, stored if previous is None else previous,
                                         touched)
        session.store.replace_communities(communities)
    session.run.entities, session.run.relations = len(snapshot.entities), len(snapshot.relations)
    session.run.communities, session.run.levels = len(communities), len({c.level for c in communities})
    return snapshot, communities


def stage_reports(session: IndexSession, snapshot: GraphSnapshot, communities: Sequence[Community],
                  policy: str = "changed", force: Sequence[str] = ()) -> None:
    """Write the reports the policy asks for (see :func:`write_reports`); with policy ``changed`` the reports
    of communities that no longer exist are deleted, with ``missing`` they are kept for the drift report."""
    store, progress = session.store, session.progress
    chunks = store.all_chunks()
    chunk_hashes = {c.id: c.content_hash for c in chunks}
    writer = make_report_writer(session.settings, session.client, chunks)
    existing = store.reports()
    progress("reports", 0, len(communities))
    reports, written = write_reports(communities, snapshot, writer, session.settings.communities, existing,
                                     on_progress=lambda n: progress("reports", n, len(communities)),
                                     chunk_hashes=chunk_hashes, policy=policy, force=force,
                                     min_drift=session.settings.communities.resummarize_min_drift)
    kept = {r.community_id: r for r in existing}
    store.save_reports([r for r in reports if kept.get(r.community_id) is not r])
    if policy == "changed":
        alive = {c.id for c in communities}
        store.delete_reports([r.community_id for r in existing if r.community_id not in alive])
    session.run.reports_written += written
    session.run.reports_kept = len(reports) - written
    session.run.report_fallbacks += getattr(writer, "fallbacks", 0)


def stage_finish(session: IndexSession, snapshot: GraphSnapshot) -> IndexRun:
    """Save the chunk index and the entity lexicon, clear the crash marker, and log the run."""
    ws, run = session.ws, session.run
    session.index.save(ws.index_dir)
    run.chunks_total = len(session.index)
    lexicon_from(snapshot, len(session.index)).save(ws.lexicon_path)
    ws.signatures_path.write_text(json.dumps(entity_signatures(snapshot)))
    ws.communities_path.write_text(json.dumps([
        {"id": c.id, "level": c.level, "parent_id": c.parent_id, "entity_ids": list(c.entity_ids)}
        for c in session.store.communities()]))
    ws.pending_path.unlink(missing_ok=True)
    run.failures = session.ledger.entries()
    if session.client is not None:
        run.llm_usage = session.client.usage.to_dict()
    run.seconds = round(time.perf_counter() - session.started, 3)
    with open(ws.runs_path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(run.to_dict()) + "\n")
    return run


def index_folder(folder: Path | str, settings: StrataSettings, progress: Progress = _no_progress,
                 prune: bool = True, store: GraphStore | None = None, report_policy: str = "changed") -> IndexRun:
    """Index (or incrementally re-index) a folder into the workspace: only new and changed documents are
    chunked and extracted; deleted ones are removed; communities are recomputed and reports refreshed where
    their inputs changed (``report_policy="missing"`` defers that to ``strata drift --refresh``)."""
    loaded = load_folder(folder)
    session = open_session(folder, settings, loaded, progress, store)
    try:
        changes = stage_plan(session, loaded, prune)
        stage_remove(session, list(changes.deleted) + [d.id for d in changes.changed])
        todo = list(changes.new) + list(changes.changed)
        progress("extract", 0, sum(len(chunk_document(d, settings.chunking)) for d in todo) or None)
        stage_extract(session, todo)
        snapshot, communities = stage_communities(session, bool(todo or changes.deleted))
        stage_reports(session, snapshot, communities, report_policy)
        return stage_finish(session, snapshot)
    finally:
        session.close()


def iter_runs(settings: StrataSettings) -> Iterator[dict[str, Any]]:
    path = Workspace(Path(settings.data_dir)).runs_path
    if path.exists():
        for line in path.read_text().splitlines():
            yield json.loads(line)


__all__ = ["index_folder", "IndexRun", "Workspace", "LoadProblem"]


@dataclass(frozen=True, slots=True)
class ReportInputs:
    """What reports are judged against: the store's chunks, graph, communities and reports, read once."""

    chunks: list[Chunk]
    snapshot: GraphSnapshot
    communities: list[Community]
    reports: list[Report]

    @property
    def chunk_hashes(self) -> dict[str, str]:
        return {c.id: c.content_hash for c in self.chunks}

    @classmethod
    def read(cls, store: GraphStore) -> "ReportInputs":
        return cls(store.all_chunks(), store.read_graph(), store.communities(), store.reports())


def _drift(settings: StrataSettings, inputs: ReportInputs) -> "DriftReport":
    from communities.drift import compute_drift

    llm = settings.llm if settings.llm_mode == "llm" else None
    return compute_drift(inputs.reports, inputs.communities, inputs.snapshot, inputs.chunk_hashes,
                         settings.communities, llm)


def drift_report(settings: StrataSettings, store: GraphStore | None = None) -> "DriftReport":
    """The drift report of the workspace's current reports against its current graph and communities."""
    own = store is None
    store = store or open_store(settings)
    try:
        return _drift(settings, ReportInputs.read(store))
    finally:
        if own:
            store.close()


def write_drift_files(report: "DriftReport", settings: StrataSettings, out_dir: Path | None = None) -> dict[str, Path]:
    """Write drift.md, drift.json and drift.html, and append the totals to the workspace's drift history."""
    from communities.drift_render import to_html, to_json, to_markdown

    ws = Workspace(Path(settings.data_dir))
    out = Path(out_dir or ws.root / "drift")
    out.mkdir(parents=True, exist_ok=True)
    history_path = ws.root / "drift_history.jsonl"
    with open(history_path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"generated_at": report.generated_at, "totals": report.totals}) + "\n")
    history = [json.loads(l) for l in history_path.read_text().splitlines() if l.strip()]
    paths = {"markdown": out / "drift.md", "json": out / "drift.json", "html": out / "drift.html"}
    paths["markdown"].write_text(to_markdown(report), encoding="utf-8")
    paths["json"].write_text(to_json(report), encoding="utf-8")
    paths["html"].write_text(to_html(report, history), encoding="utf-8")
    return paths


def refresh_reports(settings: StrataSettings, threshold: float, progress: Progress = _no_progress,
                    store: GraphStore | None = None) -> dict[str, int]:
    """Re-summarize every report whose drift is at or above ``threshold``; delete reports of dissolved
    communities. Returns how many were refreshed and removed."""
    own = store is None
    store = store or open_store(settings)
    client = open_llm(settings)
    try:
        inputs = ReportInputs.read(store)
        report = _drift(settings, inputs)
        communities = inputs.communities
        alive = {c.id for c in communities}
        reported = {e.community_id for e in report.entries}
        force = [e.community_id for e in report.entries if e.score >= threshold and e.community_id in alive]
        gone = [e.community_id for e in report.entries if e.community_id not in alive and e.score >= threshold]
        missing = [c.id for c in communities if c.id not in reported]
        writer = make_report_writer(settings, client, inputs.chunks)
        reports, written = write_reports(communities, inputs.snapshot, writer, settings.communities, inputs.reports,
                                         chunk_hashes=inputs.chunk_hashes,
                                         policy="missing", force=force,
                                         on_progress=lambda n: progress("reports", n, len(communities)))
        refreshed = set(force) | set(missing)
        store.save_reports([r for r in reports if r.community_id in refreshed])
        store.delete_reports(gone)
        return {"refreshed": written, "removed": len(gone)}
    finally:
        if client is not None:
            client.close()
        if own:
            store.close()
