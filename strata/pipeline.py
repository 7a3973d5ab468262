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

from communities.leiden import detect_communities
from communities.reports import ExtractiveReportWriter, ReportWriter, write_reports
from extraction.chunking import chunk_document
from extraction.ledger import FailureLedger
from extraction.loader import LoadResult, load_folder
from extraction.offline import OfflineExtractor
from extraction.resolution import resolve
from extraction.types import Extractor
from retrieval.answer import Answer, global_answer, local_answer
from retrieval.contract import MemoryQueryRequest, MemoryQueryResponse, MemoryResult
from retrieval.index import ChunkIndex, IndexMismatchError
from retrieval.router import EntityLexicon, KnownEntity, Route, forced, route_question
from strata.records import Chunk, Document, GraphSnapshot, LoadProblem
from strata.settings import StrataSettings
from strata.store import GraphStore, open_store

if TYPE_CHECKING:
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


def make_report_writer(settings: StrataSettings, client: "LLMClient | None", store: GraphStore) -> ReportWriter:
    if client is not None:
        from communities.llm_reports import LLMReportWriter

        chunks = {c.id: c for c in store.all_chunks()}
        return LLMReportWriter(client, settings.communities, chunks, settings.llm.prompts_dir)
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
    """The stored chunk index when it matches the store's documents, else one rebuilt from the store's chunks."""
    stored_docs = set(store.document_hashes())
    try:
        index = ChunkIndex.load(ws.index_dir, settings.retrieval)
        if {r.document_id for r in index.rows} <= stored_docs:
            return index, False
    except (FileNotFoundError, IndexMismatchError, ValueError, KeyError, OSError):
        pass
    index = ChunkIndex(settings.retrieval)
    chunks = store.all_chunks()
    if chunks:
        progress("index", 0, len(chunks))
        index.add(chunks, on_progress=lambda n: progress("index", n, len(chunks)))
    return index, True


def index_folder(folder: Path | str, settings: StrataSettings, progress: Progress = _no_progress,
                 prune: bool = True, store: GraphStore | None = None) -> IndexRun:
    """Index (or incrementally re-index) a folder into the workspace: only new and changed documents are
    chunked and extracted; deleted ones are removed; communities and reports are refreshed where inputs changed."""
    started = time.perf_counter()
    ws = Workspace(Path(settings.data_dir))
    ws.root.mkdir(parents=True, exist_ok=True)
    loaded = load_folder(folder)
    own_store = store is None
    store = store or open_store(settings)
    client = open_llm(settings)
    ledger = FailureLedger(ws.root / "ledger.sqlite")
    try:
        extractor = make_extractor(settings, client)
        run = IndexRun(source=str(folder), mode=extractor.mode, store=store.backend,
                       embedder=settings.retrieval.embedder, documents=len(loaded.documents),
                       problems=[{"path": p.path, "reason": p.reason} for p in loaded.problems],
                       started_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        changes = diff_documents(loaded, store.document_hashes(), prune)
        run.new, run.changed, run.deleted, run.unchanged = (len(changes.new), len(changes.changed),
                                                            len(changes.deleted), len(changes.unchanged))
        index, rebuilt = load_or_rebuild_index(ws, store, settings, progress)
        gone = list(changes.deleted) + [d.id for d in changes.changed]
        for doc_id in gone:
            store.delete_document(doc_id)
        if gone and not rebuilt:
            index.remove_documents(gone)
        todo = list(changes.new) + list(changes.changed)
        if client is not None:
            from extraction.estimate import estimate_documents

            run.predicted = estimate_documents(todo, settings).to_dict()
        progress("extract", 0, sum(len(chunk_document(d, settings.chunking)) for d in todo) or None)
        chunks, run.failed_chunks = write_documents(store, todo, extractor, settings, progress, ledger, client)
        run.failures = ledger.entries()
        run.chunks_extracted = len(chunks)
        if chunks:
            progress("index", 0, len(chunks))
            index.add(chunks, on_progress=lambda n: progress("index", n, len(chunks)))
        snapshot = store.read_graph()
        run.entities, run.relations = len(snapshot.entities), len(snapshot.relations)
        progress("communities", 0, None)
        communities = detect_communities(snapshot, settings.communities, store.communities())
        store.replace_communities(communities)
        run.communities = len(communities)
        run.levels = len({c.level for c in communities})
        writer = make_report_writer(settings, client, store)
        progress("reports", 0, len(communities))
        reports, written = write_reports(communities, snapshot, writer, store.reports(),
                                         on_progress=lambda n: progress("reports", n, len(communities)))
        store.save_reports(reports)
        run.reports_written, run.reports_kept = written, len(reports) - written
        run.report_fallbacks = getattr(writer, "fallbacks", 0)
        if client is not None:
            run.llm_usage = client.usage.to_dict()
        index.save(ws.index_dir)
        run.chunks_total = len(index)
        lexicon_from(snapshot, len(index)).save(ws.lexicon_path)
        index.close()
        run.seconds = round(time.perf_counter() - started, 3)
        with open(ws.runs_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(run.to_dict()) + "\n")
        return run
    finally:
        ledger.close()
        if client is not None:
            client.close()
        if own_store:
            store.close()


class Engine:
    """The query side: a loaded chunk index, the entity lexicon and the store's reports."""

    def __init__(self, settings: StrataSettings) -> None:
        self.settings = settings
        self.ws = Workspace(Path(settings.data_dir))
        self.index = ChunkIndex.load(self.ws.index_dir, settings.retrieval)
        self.lexicon = EntityLexicon.load(self.ws.lexicon_path)
        self._reports = None
        self._client: "LLMClient | None" = None
        self.mode = settings.llm_mode

    def reports(self):  # type: ignore[no-untyped-def]
        if self._reports is None:
            store = open_store(self.settings)
            try:
                self._reports = store.reports()
            finally:
                store.close()
        return self._reports

    def route(self, question: str, mode: Route | None = None):  # type: ignore[no-untyped-def]
        if mode:
            return forced(mode)
        return route_question(question, self.lexicon, has_reports=True)

    def ask(self, question: str, mode: Route | None = None, metadata_filter: dict[str, Any] | None = None) -> Answer:
        if not question.strip():
            raise ValueError("the question is empty")
        s = self.settings.retrieval
        decision = self.route(question, mode)
        if decision.route == "global" and self.mode == "llm":
            from retrieval.global_llm import llm_global_answer

            if self._client is None:
                self._client = open_llm(self.settings)
            return llm_global_answer(question, decision, self.reports(), self.index, self._client,  # type: ignore[arg-type]
                                     s.global_level, s.global_reports, prompts_dir=self.settings.llm.prompts_dir)
        if decision.route == "global":
            return global_answer(question, decision, self.reports(), self.index, s.global_level, s.global_reports,
                                 max_points=s.answer_sentences + 2)
        return local_answer(question, decision, self.index, s.top_k, s.answer_sentences, metadata_filter)

    def query(self, request: MemoryQueryRequest) -> MemoryQueryResponse:
        hp = request.hybrid_params
        hits = self.index.search(request.search_text, request.top_k, hp.dense_weight, hp.sparse_weight,
                                 hp.rrf_k_constant, request.metadata_filter)
        results = [MemoryResult(chunk_id=h.chunk_id, rrf_score=h.rrf_score, text=h.text, source=h.source) for h in hits]
        return MemoryQueryResponse(query_id=request.query_id, total_retrieved=len(results), results=results)

    def close(self) -> None:
        self.index.close()
        if self._client is not None:
            self._client.close()


def iter_runs(settings: StrataSettings) -> Iterator[dict[str, Any]]:
    path = Workspace(Path(settings.data_dir)).runs_path
    if path.exists():
        for line in path.read_text().splitlines():
            yield json.loads(line)


__all__ = ["index_folder", "Engine", "IndexRun", "Workspace", "LoadProblem"]
