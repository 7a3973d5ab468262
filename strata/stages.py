"""The stages of an index run, shared by ``strata index`` (in a row) and the Prefect flows (one task each).

    plan -> remove -> words (offline) -> extract (per batch) -> merge -> communities -> reports -> index -> publish

Each stage is a thin function over the stage packages (``extraction``, ``communities``, ``retrieval``) and the
store. The store is written as the run goes; the query side sees nothing of it until ``publish`` writes a new
index generation and points ``CURRENT`` at it. Every stage reads what it needs from the store and from the last
*published* generation, never from what a killed run left half-way, so a run resumed after a crash (or after
the store went away) ends where an uninterrupted run does.
"""

from __future__ import annotations

import inspect
import json
import logging
import time
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence

from communities.leiden import changed_entities, detect_communities, entity_signatures
from communities.context import CommunityContext
from communities.reports import ExtractiveReportWriter, ReportWriter, write_reports
from communities.sentences import Idf
from core.records import Chunk, Community, Document, Entity, GraphSnapshot, Relation, Report, stable_hash
from core.settings import StrataSettings
from core.store import GraphStore, open_store
from core.threads import batch_collector
from extraction.canonical import attribute_changes, canonical_fields, extraction_to_json
from extraction.chunking import chunk_document
from extraction.fingerprint import ExtractorFingerprint, fingerprint_of
from extraction.ledger import ChunkFailure, FailureLedger
from extraction.loader import LoadResult
from extraction.offline import OfflineExtractor
from extraction.resolution import resolve
from extraction.titles import with_titles
from extraction.types import ExtractionResult, Extractor
from extraction.wordlike import WordModel
from retrieval.index import ChunkIndex
from strata.extractor_record import change_note, record_extractor, recorded_extractor
from strata.generations import open_index, previous_state, write_generation
from strata.jsonlog import append_jsonl
from strata.runmetrics import record_index_run, timed_stage
from strata.workspace import RunLock, Workspace

if TYPE_CHECKING:
    from communities.drift import DriftReport
    from core.llm_client import LLMClient
    from strata.folders import FolderPlan

# A progress callback: (stage name, units done now, total units or None).
Progress = Callable[[str, int, int | None], None]

REPORTS_LEDGER_ID = "(community reports)"
log = logging.getLogger("strata.index")


def no_progress(stage: str, advance: int, total: int | None) -> None:
    return None


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
    empty: list[str] = field(default_factory=list)  # files with no text (front matter only): skipped, no failure
    unsupported: dict[str, int] = field(default_factory=dict)  # files of other types left out, by extension
    failed_chunks: int = 0
    failures: list[dict[str, object]] = field(default_factory=list)
    llm_usage: dict[str, dict[str, int]] = field(default_factory=dict)
    predicted: dict[str, float | int] = field(default_factory=dict)
    report_fallbacks: int = 0
    generation: int | None = None
    published: bool = False
    recovered: bool = False
    embedder_choice: str = ""  # what ``auto`` chose for the corpus, or why it kept another (strata.stages.settle_embedder)
    seconds: float = 0.0
    started_at: str = ""
    stage_seconds: dict[str, float] = field(default_factory=dict)  # seconds per stage (a batched stage summed)
    extractor: str = ""  # the extractor's fingerprint, as told (extraction/fingerprint.py)
    extractor_change: str = ""  # the line said when it differs from the one the workspace recorded

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def open_llm(settings: StrataSettings) -> "LLMClient | None":
    """The LLM client for LLM mode (with its response cache in the workspace), or None offline."""
    if settings.llm_mode != "llm":
        return None
    from core.llm_client import LLMClient

    return LLMClient.from_settings(settings.llm, Path(settings.data_dir) / "llm_cache.sqlite")


def make_extractor(settings: StrataSettings, client: "LLMClient | None", words: WordModel | None = None) -> Extractor:
    """The LLM extractor when a client is given, else the offline one, judging names by ``words`` (the corpus's
    word model, :mod:`extraction.wordlike`)."""
    if client is not None:
        from extraction.llm_extractor import LLMExtractor

        return LLMExtractor(client, settings.extraction, settings.llm.prompts_dir)
    return OfflineExtractor(settings.extraction, words)


def corpus_words(loaded: LoadResult, cache: Path, progress: Progress = no_progress) -> WordModel:
    """The word model of the whole loaded corpus (every run loads all of the workspace's folders, so it is the
    same for the same documents, whichever of them a run extracts), each unchanged document's counts read from
    ``cache`` (the workspace's ``words.sqlite``, :mod:`extraction.word_cache`) instead of from its text;
    ``progress`` shows the documents read (stage ``words``)."""
    from extraction.word_cache import cached_word_model

    texts = [d.text for d in loaded.documents]

    progress("words", 0, len(texts))
    return cached_word_model(texts, cache, lambda n: progress("words", n, len(texts)))


def make_report_writer(settings: StrataSettings, client: "LLMClient | None", chunks: Sequence[Chunk],
                       idf: Idf | None = None) -> ReportWriter:
    """The LLM writer when a client is given (it reads source passages from ``chunks``), else the extractive one.
    ``idf``: the whole corpus's document frequencies when ``chunks`` is only part of it."""
    if client is not None:
        from communities.llm_reports import LLMReportWriter

        return LLMReportWriter(client, settings.communities, {c.id: c for c in chunks}, settings.llm.prompts_dir, idf)
    return ExtractiveReportWriter(settings.communities, {c.id: c for c in chunks}, idf)


def revision(doc: Document, extractor: str) -> str:
    """What a stored document was made from: its text, its source, its metadata and the extractor (the digest of
    its fingerprint, extraction/fingerprint.py). A document whose rows moved in a .jsonl (its line changed),
    whose front matter changed, or that another extractor extracted is indexed again; unchanged chunks cost no
    embedding (vector cache) and no LLM call for an unchanged prompt (response cache)."""
    return stable_hash(doc.content_hash, doc.source, json.dumps(doc.metadata, sort_keys=True, default=str), extractor,
                       size=16)


@dataclass(frozen=True, slots=True)
class ChangeSet:
    new: tuple[Document, ...]
    changed: tuple[Document, ...]
    deleted: tuple[str, ...]
    unchanged: tuple[str, ...]


def diff_documents(loaded: LoadResult, stored: dict[str, str], prune: bool, full: bool = False,
                   sources: dict[str, str] | None = None, *, extractor: str) -> ChangeSet:
    """Compare loaded documents with the store's revisions (made with the ``extractor`` digest). Documents that
    failed to load, and every stored document from a file that failed to load (by the stored ``sources``), are
    kept as they are (never deleted); with ``full`` every loaded document counts as changed."""
    new, changed, unchanged = [], [], []
    for d in loaded.documents:
        if d.id not in stored:
            new.append(d)
        elif full or stored[d.id] != revision(d, extractor):
            changed.append(d)
        else:
            unchanged.append(d.id)
    failed_paths = {_problem_file(p.path) for p in loaded.problems}
    present = {d.id for d in loaded.documents}
    sources = sources or {}

    def from_failed_file(doc_id: str) -> bool:
        source = sources.get(doc_id, doc_id)
        return _document_file(doc_id) in failed_paths or source in failed_paths or _document_file(source) in failed_paths

    deleted = [i for i in stored if i not in present and i not in loaded.failed_ids and not from_failed_file(i)
               ] if prune else []
    return ChangeSet(tuple(new), tuple(changed), tuple(sorted(deleted)), tuple(unchanged))


def _problem_file(where: str) -> str:
    """The file a load problem names (``notes.jsonl:12`` names notes.jsonl; a path may itself hold a colon)."""
    head, sep, tail = where.rpartition(":")
    return head if sep and tail.isdigit() else where


def _document_file(doc_id: str) -> str:
    """The file a document id comes from (.jsonl rows are ``file#id``-style or their own ids; files are paths)."""
    return doc_id.split("#", 1)[0]


@dataclass
class IndexSession:
    """The live resources of one indexing run, shared by its stages."""

    settings: StrataSettings
    ws: Workspace
    store: GraphStore
    client: "LLMClient | None"
    ledger: FailureLedger
    loaded: LoadResult  # the folder's documents as this run loaded them
    run: IndexRun
    progress: Progress
    own_store: bool
    started: float
    lock: RunLock
    fingerprint: ExtractorFingerprint  # the extractor of this run
    recorded: ExtractorFingerprint | None  # the one the workspace recorded before this run (None: none)
    recovering: bool = False
    full: bool = False
    index: ChunkIndex | None = None
    # What the drift report of the generation this run publishes reads, kept from the stages that computed it
    # (every community's current inputs, by the report stage; the chunks' hashes), so it is not computed again
    # from the generation's files (:meth:`drift_of`).
    report_inputs: dict[str, str | None] | None = None
    chunk_hashes: dict[str, str] | None = None
    published: tuple[int, list[Report], list[Community], GraphSnapshot] | None = None  # (generation, what it holds)
    restore_gc: Callable[[], None] | None = None  # puts the collector's thresholds back (core.threads.batch_collector)

    @cached_property
    def words(self) -> WordModel | None:
        """The corpus's word model (offline extraction), read from every loaded document the first time a run has
        something to extract: a reindex that changed nothing does not pay a pass over the whole corpus."""
        return stage_words(self) if self.client is None else None

    @cached_property
    def extractor(self) -> Extractor:
        return make_extractor(self.settings, self.client, self.words)

    def drift_of(self, generation: int) -> "DriftReport | None":
        """The drift report of ``generation`` when it is the one this run published, from what the run holds in
        memory (the same as :func:`strata.drift_files.generation_drift` reads from its files); else None."""
        if self.published is None or self.published[0] != generation or self.chunk_hashes is None:
            return None
        from communities.drift import compute_drift

        _, reports, communities, snapshot = self.published
        llm = self.settings.llm if self.settings.llm_mode == "llm" else None
        return compute_drift(reports, communities, snapshot, self.chunk_hashes, self.settings.communities, llm,
                             current_inputs=self.report_inputs)

    def close(self) -> None:
        try:
            if self.index is not None:
                self.index.close()
                if self.index.vector_cache is not None:
                    self.index.vector_cache.close()
            self.ledger.close()
            if self.client is not None:
                self.client.close()
            if self.own_store:
                self.store.close()
        finally:
            if self.restore_gc is not None:
                self.restore_gc()
            self.lock.__exit__()


@timed_stage("words")
def stage_words(session: IndexSession) -> WordModel:
    """The corpus's word model for the offline extractor, each unchanged document's counts from the workspace's
    cache (:func:`corpus_words`)."""
    return corpus_words(session.loaded, session.ws.root / "words.sqlite", session.progress)


def open_session(folder: Path | str, settings: StrataSettings, loaded: LoadResult, progress: Progress = no_progress,
                 store: GraphStore | None = None, full: bool = False,
                 folders: "FolderPlan | None" = None) -> IndexSession:
    """Take the workspace's run lock, record the run's folders (``folders``: checked again under the lock, see
    :mod:`strata.folders`) and open the store, the LLM client and the failure ledger. In LLM mode chunks are
    sized to fit the model's context window (extraction/llm_context.py)."""
    from extraction.llm_context import fit_to_context

    settings = fit_to_context(settings)
    ws = Workspace(Path(settings.data_dir))
    ws.root.mkdir(parents=True, exist_ok=True)
    lock = ws.lock().__enter__()
    try:
        # (a run that indexes a folder in place of all the workspace's embeds every chunk again, as --full does)
        replaced = folders is not None and bool(folders.before) and not (
            {f.path for f in folders.before} & {f.path for f in folders.folders})
        settings, embedder_note = settle_embedder(settings, ws, loaded.documents, full or replaced)
        if folders is not None:
            from strata.folders import commit_plan

            commit_plan(ws, folders)
        own_store = store is None
        store = store or open_store(settings)
    except BaseException:
        lock.__exit__()
        raise
    client = open_llm(settings)
    ledger = FailureLedger(ws.root / "ledger.sqlite")
    recovering = ws.pending_path.exists()
    # From here until a generation is published, a crash leaves the marker behind.
    ws.pending_path.write_text(time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    fingerprint = fingerprint_of(settings)
    run = IndexRun(source=str(folder), mode="offline" if client is None else "llm", store=store.backend, embedder=settings.retrieval.embedder,
                   documents=len(loaded.documents), problems=[{"path": p.path, "reason": p.reason} for p in loaded.problems],
                   empty=list(loaded.empty), unsupported=dict(loaded.unsupported), recovered=recovering,
                   started_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"), extractor=fingerprint.label())
    run.embedder_choice = embedder_note
    return IndexSession(settings, ws, store, client, ledger, loaded, run, progress, own_store, time.perf_counter(),
                        lock, fingerprint, recorded_extractor(ws), recovering, full, restore_gc=batch_collector())


def settle_embedder(settings: StrataSettings, ws: Workspace, documents: Sequence[Document],
                    fresh: bool = False) -> tuple[StrataSettings, str]:
    """``settings`` with ``retrieval.embedder`` ``auto`` settled for this run, and a line to say about it (empty
    when it was not ``auto``, or kept the index's embedder, which the corpus still calls for). The embedder that built
    the published index, when it holds chunks and that embedder (MiniLM or e5) is installed: its vectors stay
    valid. Else, or when the run is ``fresh`` (``--full``, or a folder that replaces the workspace's: every chunk
    is embedded again), the one the corpus's languages call for (:func:`retrieval.embed.auto_embedder`: e5 for a
    corpus mostly in Chinese or Polish), judged by each document's detected language, weighed by its length. An
    index built with none (BM25 alone, MiniLM not installed then) is no choice to keep."""
    from collections import Counter

    from core.text.language import detect_language
    from retrieval.e5 import e5_available
    from retrieval.embed import auto_embedder, minilm_available
    from retrieval.index_files import built_with, stored_meta

    if settings.retrieval.embedder != "auto":
        return settings, ""
    installed = {"minilm": minilm_available, "e5": e5_available}
    current = ws.current()
    meta = None if fresh or current is None else stored_meta(current.index_dir)
    built = built_with(meta)
    kept = built if meta and meta.get("rows") else None
    counts: Counter[str] = Counter()
    for d in documents:
        counts[detect_language(d.text)] += len(d.text)
    would = auto_embedder(counts)
    if kept in installed and installed[kept]():
        choice, note = kept, ""
        if would != kept:
            note = (f"embedder: auto keeps {kept}, which built this workspace's index, though the corpus's "
                    f"languages ({_shares(counts)}) call for {would}; `strata reindex --full` switches")
    else:
        choice = would
        note = ("" if choice == built else  # (said when it chose it)
                f"embedder: auto chose {choice} for the corpus's languages ({_shares(counts) or 'no text'})")
    retrieval = settings.retrieval.model_copy(update={"embedder": choice})
    return settings.model_copy(update={"retrieval": retrieval}), note


def _shares(counts: Mapping[str, int]) -> str:
    """The three largest languages of ``counts`` with their shares: "Chinese (zh) 92%, English (en) 8%"."""
    from core.text.language import describe_language

    total = sum(counts.values()) or 1
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:3]
    return ", ".join(f"{describe_language(lang)} {n / total:.0%}" for lang, n in top)



@timed_stage("plan")
def stage_plan(session: IndexSession, loaded: LoadResult, prune: bool) -> ChangeSet:
    """Compare the folder with the store: new, changed, deleted and unchanged documents. A document extracted by
    another extractor than this run's counts as changed; when the workspace recorded another one, one line says
    so (and how many documents that sends back to extraction)."""
    store = session.store
    changes = diff_documents(loaded, store.document_hashes(), prune, session.full, store.document_sources(),
                             extractor=session.fingerprint.digest)
    r = session.run
    r.new, r.changed, r.deleted, r.unchanged = len(changes.new), len(changes.changed), len(changes.deleted), len(changes.unchanged)
    note = change_note(session.recorded, session.fingerprint, len(changes.changed), len(changes.unchanged))
    if note is not None:
        r.extractor_change = note
        log.warning("%s", note)
    if session.client is not None:
        from extraction.estimate import estimate_documents

        r.predicted = estimate_documents(list(changes.new) + list(changes.changed), session.settings).to_dict()
    return changes


@timed_stage("remove")
def stage_remove(session: IndexSession, document_ids: Sequence[str]) -> None:
    """Delete what deleted and changed documents contributed to the store."""
    for doc_id in document_ids:
        session.store.delete_document(doc_id)
        session.progress("remove", 1, len(document_ids))


Batch = list[tuple[Document, list[Chunk]]]


def plan_batches(docs: Sequence[Document], settings: StrataSettings, batch_chunks: int = 256) -> list[Batch]:
    """Documents chunked and grouped into batches of about ``batch_chunks`` chunks (whole documents each): the
    units extraction runs on, here or on Dask workers. The grouping depends only on the documents."""
    batches: list[Batch] = []
    current: Batch = []
    pending = 0
    for doc in docs:
        chunks = chunk_document(doc, settings.chunking)
        current.append((doc, chunks))
        pending += len(chunks)
        if pending >= batch_chunks:
            batches.append(current)
            current, pending = [], 0
    if current:
        batches.append(current)
    return batches


def batch_chunks(batch: Batch) -> list[Chunk]:
    return [c for _, chunks in batch for c in chunks]


def extract_unit(chunks: Sequence[Chunk], settings: StrataSettings, words: WordModel | None = None) -> ExtractionResult:
    """One batch's extraction with its own extractor (and LLM client, sharing the workspace's response cache):
    what a Dask worker runs. It reads and writes no store. ``words``: the corpus's word model."""
    client = open_llm(settings)
    try:
        return make_extractor(settings, client, words).extract(chunks)
    finally:
        if client is not None:
            client.close()


def store_placeholders(session: IndexSession, batch: Batch) -> None:
    """A batch's documents (with no revision yet) and chunks, written before their extraction is stored."""
    for doc, chunks in batch:
        session.store.upsert_documents([Document(doc.id, doc.source, doc.text, "", doc.metadata)])
        session.store.upsert_chunks(chunks)


def store_batch(session: IndexSession, batch: Batch, result: ExtractionResult,
                counted: bool = False) -> tuple[int, int]:
    """Store a batch's extraction: each chunk's raw extraction beside it, entities and relations (their merged
    fields are provisional until the merge stage), failures in the ledger, and last each document's revision,
    left empty when any of its chunks failed, so a crash mid-way or a failed chunk leaves it marked as changed
    and the next run redoes it (calls that succeeded come from the response cache). Returns (done, failed)."""
    store, settings, ledger = session.store, session.settings, session.ledger
    result = with_titles(batch, result)  # a document's title is an entity its passages mention
    by_chunk = {x.chunk_id: x for x in result.extractions}
    failures_by_chunk = {f.chunk_id: f for f in result.failures}
    store.save_extractions([(cid, extraction_to_json(x)) for cid, x in sorted(by_chunk.items())])
    done = failed = 0
    for doc, chunks in batch:
        entities, relations = resolve([by_chunk[c.id] for c in chunks if c.id in by_chunk],
                                      settings.extraction.description_max_chars)
        store.upsert_entities(entities)
        store.upsert_relations(relations)
        doc_failures = [failures_by_chunk[c.id] for c in chunks if c.id in failures_by_chunk]
        if doc_failures:
            ledger.record(doc.id, "extract", doc_failures)
            failed += len(doc_failures)
        else:
            ledger.clear_document(doc.id)
            store.upsert_documents([replace(doc, content_hash=revision(doc, session.fingerprint.digest))])
        done += len(chunks)
        # Each document stored is told (with no advance when the extraction has counted its chunks already).
        session.progress("extract", 0 if counted else len(chunks), None)
    return done, failed


def _store_extracted(session: IndexSession, batch: Batch, result: ExtractionResult, counted: bool = False) -> int:
    store_placeholders(session, batch)
    done, failed = store_batch(session, batch, result, counted)
    session.run.failed_chunks += failed
    session.run.chunks_extracted += done
    return done


@timed_stage("extract")
def stage_extract(session: IndexSession, docs: Sequence[Document]) -> int:
    """Chunk, extract and store documents in this process, batch by batch (a batch's chunks are extracted
    together, concurrently in LLM mode); returns chunks done. Progress is told often, so the bar shows a rate
    and an ETA: an extractor that reports each chunk as it finishes (the LLM's) does; another (the offline one,
    which judges each document from all of its chunks and nothing else) is given a batch's documents a few at a
    time, which extracts the same."""
    if not docs:
        return 0  # (and no extractor: the offline one's word model is a pass over the whole corpus)
    extract = session.extractor.extract
    per_chunk = "on_progress" in inspect.signature(extract).parameters
    tick = lambda n: session.progress("extract", n, None)  # noqa: E731

    def extracted(batch: Batch) -> ExtractionResult:
        if per_chunk:
            return extract(batch_chunks(batch), on_progress=tick)  # type: ignore[call-arg]
        parts = []
        for group in document_groups(batch):
            parts.append(extract(batch_chunks(group)))
            tick(len(batch_chunks(group)))
        return ExtractionResult(tuple(x for r in parts for x in r.extractions),
                                tuple(f for r in parts for f in r.failures))

    return sum(_store_extracted(session, batch, extracted(batch), True)
               for batch in plan_batches(docs, session.settings))


def document_groups(batch: Batch, chunks: int = 16) -> list[Batch]:
    """A batch cut into runs of whole documents of about ``chunks`` chunks each."""
    groups: list[Batch] = [[]]
    for doc, cs in batch:
        if groups[-1] and sum(len(c) for _, c in groups[-1]) >= chunks:
            groups.append([])
        groups[-1].append((doc, cs))
    return [g for g in groups if g]


@timed_stage("extract")
def stage_extracted(session: IndexSession, batch: Batch, result: ExtractionResult) -> int:
    """Store one batch extracted elsewhere (a Dask worker); returns chunks done."""
    return _store_extracted(session, batch, result)


_EMBEDDERS: dict[str, Any] = {}


def cached_embedder(settings: StrataSettings) -> Any:
    """The configured embedder (None without one), loaded once per process: by a Dask worker for the units it
    embeds, and by the flow's own process for the embedder's name and dimension."""
    from retrieval.embed import make_embedder

    r = settings.retrieval
    key = json.dumps([r.embedder, r.hashing_dim, r.embedding_model, r.embedding_dim, str(r.model_cache)])
    if key not in _EMBEDDERS:
        _EMBEDDERS[key] = make_embedder(r.embedder, r.hashing_dim, settings.llm, r.embedding_model, r.embedding_dim,
                                        r.model_cache)
    return _EMBEDDERS[key]


def embed_unit(texts: Sequence[str], settings: StrataSettings) -> Any:
    """Vectors of one unit of chunk texts (BLAS threads as ``compute`` says): what a Dask worker runs."""
    from core.threads import configure

    configure(settings.compute)
    return cached_embedder(settings).embed(list(texts))


def chunks_to_embed(session: IndexSession, chunks: Sequence[Chunk] | None = None,
                    unit: int = 256) -> tuple[str | None, list[list[Chunk]]]:
    """``chunks`` (default: all the store's chunks) with no cached vector for the configured embedder, one per
    content, in chunk-id order, cut into units of ``unit`` (the same units whatever the number of workers, so
    the vectors are too). Returns the embedder's name (None without an embedder) and the units."""
    from retrieval.vector_cache import VectorCache

    embedder = cached_embedder(session.settings)
    if embedder is None:
        return None, []
    ordered = sorted(session.store.all_chunks() if chunks is None else chunks, key=lambda c: c.id)
    cache = VectorCache(session.ws.root / "vectors.sqlite")
    try:
        cached = cache.get_many(embedder.name, [c.content_hash for c in ordered], embedder.dim)
    finally:
        cache.close()
    todo = [c for c in ordered if c.content_hash not in cached]
    todo = list({c.content_hash: c for c in todo}.values())
    return embedder.name, [todo[i:i + unit] for i in range(0, len(todo), unit)]


def save_vectors(session: IndexSession, embedder_name: str, chunks: Sequence[Chunk], vectors: Any) -> None:
    """Put vectors computed elsewhere into the workspace's vector cache (the index stage then finds them)."""
    from retrieval.vector_cache import VectorCache

    cache = VectorCache(session.ws.root / "vectors.sqlite")
    try:
        cache.put_many(embedder_name, {c.content_hash: v for c, v in zip(chunks, vectors)})
    finally:
        cache.close()
    session.progress("embed", len(chunks), None)


class MergeDispatch(Protocol):
    """Merges entities' descriptions elsewhere (Dask workers): returns them in the given order."""

    def __call__(self, entities: list[Entity]) -> list[Entity]: ...


def merge_unit(entities: Sequence[Entity], settings: StrataSettings) -> list[Entity]:
    """LLM description merges of one unit of entities, with an LLM client of its own (sharing the workspace's
    response cache): what a Dask worker runs."""
    from extraction.descriptions import merge_entity_descriptions

    client = open_llm(settings)
    if client is None:
        raise RuntimeError("description merges need an LLM endpoint (llm.base_url), and none is configured")
    try:
        return merge_entity_descriptions(entities, client, settings)
    finally:
        client.close()


def with_attributes(snapshot: GraphSnapshot, entities: Sequence[Entity], relations: Sequence[Relation]) -> GraphSnapshot:
    """``snapshot`` with the names, types and descriptions of ``entities`` and the descriptions of ``relations``
    set as :meth:`GraphStore.set_attributes` sets them in the store (nothing else changes)."""
    es = {e.id: e for e in entities}
    rs = {r.id: r for r in relations}
    return GraphSnapshot(
        tuple(replace(e, name=es[e.id].name, type=es[e.id].type, description=es[e.id].description) if e.id in es else e
              for e in snapshot.entities),
        tuple(replace(r, description=rs[r.id].description) if r.id in rs else r for r in snapshot.relations))


@timed_stage("merge")
def stage_merge(session: IndexSession, dispatch: MergeDispatch | None = None) -> GraphSnapshot:
    """Set every entity's and relation's merged fields from all stored extractions in chunk-id order (the
    result depends on the set of inputs, not on the order documents arrived in); returns the graph. With an
    LLM, descriptions of many parts are merged by it: here, or by ``dispatch`` (on Dask workers), which is given
    only the entities that need a merge."""
    session.progress("merge", 0, None)
    store, settings = session.store, session.settings
    snapshot = store.read_graph()
    entities, relations = canonical_fields(store.extractions(), settings.extraction.description_max_chars)
    merge = None
    if session.client is not None:
        from extraction.descriptions import merge_entity_descriptions, needs_merge

        client = session.client
        if dispatch is None:
            merge = lambda es: merge_entity_descriptions(es, client, settings)  # noqa: E731
        else:
            def merge(es: list[Entity]) -> list[Entity]:
                todo = [i for i, e in enumerate(es) if needs_merge(e, settings)]
                out = list(es)
                merged = dispatch([es[i] for i in todo]) if todo else []
                if len(merged) != len(todo):
                    raise RuntimeError(f"{len(todo)} descriptions to merge, {len(merged)} returned")
                for i, e in zip(todo, merged):
                    out[i] = e
                return out
    changed_e, changed_r = attribute_changes(snapshot, entities, relations, merge)
    if changed_e or changed_r:
        store.set_attributes(changed_e, changed_r)
        snapshot = with_attributes(snapshot, changed_e, changed_r)  # what reading the graph again gives
    session.run.entities, session.run.relations = len(snapshot.entities), len(snapshot.relations)
    return snapshot


@timed_stage("communities")
def stage_communities(session: IndexSession, snapshot: GraphSnapshot, graph_changed: bool = True) -> list[Community]:
    """Hierarchical Leiden, starting from the communities of the last published generation (ids carried over by
    overlap; only what changed since is re-clustered). When nothing changed, that generation's communities
    stand."""
    session.progress("communities", 0, None)
    previous, signatures = (None, None) if session.full else previous_state(session.ws)
    touched = changed_entities(signatures, entity_signatures(snapshot)) if signatures is not None else None
    # (touched: the state may come from an older generation, when the published one's files are damaged)
    if previous is not None and not graph_changed and not session.recovering and not touched:
        communities = previous
    else:
        communities = detect_communities(snapshot, session.settings.communities, previous or (), touched)
    communities = sorted(communities, key=lambda c: (c.level, c.id))
    stored = session.store.communities()
    if stored != communities:
        session.store.replace_communities(communities)
    session.run.communities, session.run.levels = len(communities), len({c.level for c in communities})
    return communities


ReportItems = Sequence[tuple[CommunityContext, Sequence[Report]]]
Failures = list[tuple[str, str]]  # (community id, reason) of reports the LLM writer's fallback wrote


class ReportDispatch(Protocol):
    """Writes one level's reports elsewhere (Dask workers): given the items, the corpus's chunks by id and its
    document frequencies, returns the reports in the items' order and the fallback failures."""

    def __call__(self, items: ReportItems, chunks: Mapping[str, Chunk], idf: Idf) -> tuple[list[Report], Failures]: ...


def report_passages(items: ReportItems, chunks: Mapping[str, Chunk]) -> list[Chunk]:
    """The chunks that the items' communities quote from (what a worker needs to write their reports)."""
    ids = dict.fromkeys(cid for ctx, _ in items for cid in ctx.passages)
    return [chunks[cid] for cid in ids if cid in chunks]


def write_report_unit(items: ReportItems, chunks: Sequence[Chunk], idf: Idf,
                      settings: StrataSettings) -> tuple[list[Report], Failures]:
    """Reports of one unit of a level's communities, with a writer of its own (and LLM client, sharing the
    workspace's response cache): what a Dask worker runs. It reads and writes no store."""
    client = open_llm(settings)
    try:
        writer = make_report_writer(settings, client, chunks, idf)
        reports = [writer.write(ctx, children) for ctx, children in items]
        return reports, list(getattr(writer, "failures", ()))
    finally:
        if client is not None:
            client.close()


@timed_stage("reports")
def stage_reports(session: IndexSession, snapshot: GraphSnapshot, communities: Sequence[Community],
                  policy: str = "changed", force: Sequence[str] = (), dispatch: ReportDispatch | None = None) -> None:
    """Write the reports the policy asks for (see :func:`write_reports`); with policy ``changed`` the reports
    of communities that no longer exist are deleted, with ``missing`` they are kept for the drift report. A
    report whose LLM call failed is written by the extractive fallback, marked ``fallback``, recorded in the
    ledger, and written again by the next LLM run. ``dispatch``: each level's reports are written by it (on Dask
    workers) instead of in this process; the reports are the same."""
    store, progress = session.store, session.progress
    chunks = store.all_chunks()
    chunk_hashes = {c.id: c.content_hash for c in chunks}
    writer = make_report_writer(session.settings, session.client, chunks)
    existing = store.reports()
    if session.full:
        force = [c.id for c in communities]
    failures: Failures = []
    write_many = None
    if dispatch is not None:
        by_id = {c.id: c for c in chunks}

        def write_many(items: ReportItems) -> list[Report]:
            if not items:
                return []
            idf = getattr(writer, "fallback", writer).idf  # built once, when a first report is to be written
            reports, failed = dispatch(items, by_id, idf)
            failures.extend(failed)
            return reports

    progress("reports", 0, len(communities))
    inputs: dict[str, str | None] = {}
    reports, written = write_reports(communities, snapshot, writer, session.settings.communities, existing,
                                     on_progress=lambda n: progress("reports", n, len(communities)),
                                     chunk_hashes=chunk_hashes, policy=policy, force=force,
                                     min_drift=session.settings.communities.resummarize_min_drift,
                                     write_many=write_many, inputs_out=inputs)
    session.report_inputs, session.chunk_hashes = inputs, chunk_hashes
    kept = {r.community_id: r for r in existing}
    store.save_reports([r for r in reports if kept.get(r.community_id) is not r])
    if policy == "changed":
        alive = {c.id for c in communities}
        store.delete_reports([r.community_id for r in existing if r.community_id not in alive])
    failures += list(getattr(writer, "failures", ()))
    session.ledger.clear_document(REPORTS_LEDGER_ID)
    if failures:
        session.ledger.record(REPORTS_LEDGER_ID, "report",
                              [ChunkFailure(f"report:{cid}", reason) for cid, reason in failures])
    session.run.reports_written += written
    session.run.reports_kept = len(reports) - written
    session.run.report_fallbacks += len(failures)


@timed_stage("index")
def stage_index(session: IndexSession) -> ChunkIndex:
    """The chunk index of the next generation: the published one brought in line with the store's chunks
    (changed and new chunks embedded, vectors of known text from the cache), rows in chunk-id order."""
    index = open_index(session.ws, session.settings, fresh=session.full)
    session.index = index
    session.run.embedder = index.describe()
    chunks = session.store.all_chunks()
    todo = index.to_add(chunks)  # new chunks and changed ones: the embed stage's total, so it has an ETA
    session.progress("embed", 0, todo or None)
    index.sync(chunks, on_progress=lambda n: session.progress("embed", n, todo))
    session.run.chunks_total = len(index)
    return index


def stage_publish(session: IndexSession, snapshot: GraphSnapshot, communities: Sequence[Community]) -> IndexRun:
    """Publish the next generation (unless it would serve what the current one does), clear the crash marker,
    and log the run."""
    ws, run = session.ws, session.run
    assert session.index is not None, "stage_index runs before stage_publish"
    session.progress("publish", 0, None)
    publish_started = time.perf_counter()
    run.failures = session.ledger.entries()
    if session.client is not None:
        run.llm_usage = session.client.usage.to_dict()
    info = {"mode": run.mode, "store": run.store, "source": run.source}
    reports = session.store.reports()
    run.generation, run.published = write_generation(ws, session.index, snapshot, communities, reports, info,
                                                     session.settings.index.keep_generations,
                                                     step=lambda: session.progress("publish", 1, 3))
    if run.published and run.generation is not None:
        session.published = (run.generation, reports, list(communities), snapshot)
    record_extractor(ws, session.fingerprint)  # every document this run kept is extracted by it (or marked changed)
    ws.pending_path.unlink(missing_ok=True)
    run.stage_seconds["publish"] = round(time.perf_counter() - publish_started, 3)
    run.seconds = round(time.perf_counter() - session.started, 3)
    append_jsonl(ws.runs_path, run.to_dict())  # one whole line, after any line a torn write left
    record_index_run(ws.root, run.to_dict(), session.settings.llm)  # <data-dir>/metrics/index.prom and a log line
    return run
