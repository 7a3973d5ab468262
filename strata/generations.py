"""Writing and reading index generations: the query side's whole state, published at once.

A generation holds the chunk index (with the entity vectors beside the chunk vectors), the entity lexicon, the
communities, the entity signatures the next incremental run starts from, and a snapshot of the reports. The engine answers from one generation, so an
answer never mixes reports from a graph half-way through a rewrite, and answering needs no graph store. Its
manifest lists every file's size and digest; a generation is checked against it before it is loaded, trusted as
the state the next run starts from, or taken as proof that a run changed nothing (:mod:`strata.integrity`).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from communities.leiden import entity_signatures
from core.disk import disk_full, is_disk_full
from core.records import Community, Entity, GraphSnapshot, Relation, Report, stable_hash
from core.settings import StrataSettings
from core.store.codec import report_from_row, report_row
from retrieval import entity_vectors
from retrieval.index import ChunkIndex
from retrieval.index_files import signature
from retrieval.graph_walk import (WALK_ARRAYS, WALK_FORMAT, WALK_META, GraphWalk, fit_to_index, load_walk, save_walk,
                                  walk_for_index, walk_meta, walk_params)
from retrieval.lexicon import EntityLexicon, keys_made_with, lexicon_for
from strata import integrity
from strata.workspace import GenerationPaths, Workspace


GRAPH_FILE = "graph.json"


def read_graph(root: Path) -> GraphSnapshot:
    """The entity graph a generation published (its ``graph.json``)."""
    return graph_from_json((root / GRAPH_FILE).read_text(encoding="utf-8"))


def communities_to_json(communities: Sequence[Community]) -> str:
    return json.dumps([{"id": c.id, "level": c.level, "parent_id": c.parent_id, "entity_ids": list(c.entity_ids)}
                       for c in communities], ensure_ascii=False)


def communities_from_json(text: str) -> list[Community]:
    return [Community(r["id"], r["level"], r["parent_id"], tuple(r["entity_ids"])) for r in json.loads(text)]


def reports_to_json(reports: Sequence[Report]) -> str:
    return json.dumps([report_row(r) for r in reports], ensure_ascii=False)


def reports_from_json(text: str) -> list[Report]:
    return [report_from_row(r) for r in json.loads(text)]


def graph_to_json(snapshot: GraphSnapshot) -> str:
    return json.dumps({"entities": [[e.id, e.name, e.type, e.description, list(e.chunk_ids)] for e in snapshot.entities],
                       "relations": [[r.id, r.source_id, r.target_id, r.description, list(r.chunk_ids)]
                                     for r in snapshot.relations]}, ensure_ascii=False)


def graph_from_json(text: str) -> GraphSnapshot:
    data = json.loads(text)
    return GraphSnapshot(tuple(Entity(i, n, t, d, tuple(c)) for i, n, t, d, c in data["entities"]),
                         tuple(Relation(i, a, b, d, tuple(c)) for i, a, b, d, c in data["relations"]))


def base_digest(index: ChunkIndex, snapshot: GraphSnapshot, communities: Sequence[Community]) -> str:
    """A hash of everything a generation serves but its reports."""
    rows = [(r.chunk_id, stable_hash(r.text, r.source, json.dumps(r.fields, sort_keys=True, default=str)))
            for r in index.rows]
    graph = [(e.id, e.name, e.type, e.description, e.chunk_ids) for e in snapshot.entities]
    graph += [(r.id, r.source_id, r.target_id, r.description, r.chunk_ids) for r in snapshot.relations]
    parts = [json.dumps(signature(index), sort_keys=True), json.dumps(rows), json.dumps(graph),
             communities_to_json(communities)]
    if index.embeds_entities:  # a generation without entity vectors (an older version's) is republished
        parts += [entity_vectors.RECIPE, entity_vectors.SELECTION]
    parts.append(f"walk {WALK_FORMAT}, {keys_made_with()}")  # and one without its walk built, or built otherwise
    return stable_hash(*parts, size=16)


def write_entity_vectors(index: ChunkIndex, snapshot: GraphSnapshot, folder: Path) -> int:
    """Embed the entities the index's chunks mention, in the languages its embedder reads (vectors of unchanged
    entities from the vector cache), and write them into ``folder`` (the staged index folder). Returns how many
    were written."""
    if not index.embeds_entities:
        return 0
    from core.threads import blas_limit

    entities = entity_vectors.readable([e for e in snapshot.entities if any(c in index.by_id for c in e.chunk_ids)],
                                       index.embedder_languages)
    with blas_limit():
        vectors = entity_vectors.compute(entities, index.embedder, index.vector_cache)
    vectors = entity_vectors.with_ann(vectors, index.settings.entity_hnsw_threshold)
    entity_vectors.save(vectors, folder)
    return len(vectors.ids)


def reports_digest(base: str, reports: Sequence[Report]) -> str:
    """The digest of a generation with ``base`` (see :func:`base_digest`) and these reports; equal digests mean
    a new generation would change nothing. A reports-only republish computes it without the chunk index."""
    reps = [(r.community_id, r.fingerprint, r.mode, r.title, r.summary, report_row(r)["findings"], r.stale)
            for r in reports]
    return stable_hash(base, json.dumps(reps), size=16)


@contextmanager
def _staging(ws: Workspace, number: int) -> Iterator[Path]:
    """The staging folder of generation ``number``: removed if anything fails before it is published (a failed
    publish leaves no staging folder behind), a full disk reported as one error naming the path."""
    staged = ws.staging(number)
    try:
        yield staged
    except BaseException as exc:
        shutil.rmtree(staged, ignore_errors=True)
        if isinstance(exc, OSError) and is_disk_full(exc):
            raise disk_full(exc) from exc
        raise


def next_number(ws: Workspace) -> int:
    return max(ws.numbers() + [ws.current_number() or 0]) + 1


def write_generation(ws: Workspace, index: ChunkIndex, snapshot: GraphSnapshot, communities: Sequence[Community],
                     reports: Sequence[Report], info: dict[str, Any], keep: int,
                     step: Callable[[], None] = lambda: None) -> tuple[int, bool]:
    """Publish a new generation unless it would serve exactly what the current one does; ``step`` is called
    after each of its three steps (index staged, everything staged, published).
    Returns (the serving generation's number, whether a new one was published)."""
    base = base_digest(index, snapshot, communities)
    digest = reports_digest(base, reports)
    current = ws.current()
    if current is not None and _serves_digest(current, digest):
        if not ws.current_is_pointed(current):  # CURRENT was lost or garbled: name the generation again
            ws.point(current.number)
        ws.prune(keep)  # staging folders a killed or failed run left
        return current.number, False
    number = next_number(ws)
    with _staging(ws, number) as staged:
        index.save(staged / "index")
        write_entity_vectors(index, snapshot, staged / "index")
        step()
        lexicon = lexicon_for(snapshot, index)
        lexicon.save(staged / "entities.json")
        # The walk as loading this generation would build it (over the saved, compacted rows), built once here.
        save_walk(GraphWalk.build(snapshot, index.by_id, len(index.rows), walk_params(index.settings),
                                  bases=lexicon.bases), staged / "index", lexicon)
        (staged / "entity_signatures.json").write_text(json.dumps(entity_signatures(snapshot)), encoding="utf-8")
        (staged / "communities.json").write_text(communities_to_json(communities), encoding="utf-8")
        (staged / "reports.json").write_text(reports_to_json(reports), encoding="utf-8")
        (staged / GRAPH_FILE).write_text(graph_to_json(snapshot), encoding="utf-8")
        manifest = {"digest": digest, "base_digest": base, "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    "chunks": len(index), "entities": len(snapshot.entities), "relations": len(snapshot.relations),
                    "communities": len(communities), "reports": len(reports), "retrieval": index.describe(), **info}
        step()
        ws.publish(staged, number, manifest)
    step()
    ws.prune(keep)
    return number, True


def _serves_digest(current: GenerationPaths, digest: str) -> bool:
    """Whether the published generation serves content with this digest and is intact (a damaged one is
    rebuilt and published again, even when the store says nothing changed)."""
    try:
        return integrity.check(current).get("digest") == digest
    except (OSError, ValueError):
        return False


def republish_reports(ws: Workspace, reports: Sequence[Report], keep: int, info: dict[str, Any]) -> int | None:
    """A new generation equal to the current one but for its reports (after ``strata drift --refresh``).
    Index files are hard-linked, not copied. Returns the new number, or None when nothing is published yet."""
    current = ws.current()
    if current is None:
        return None
    integrity.check(current)  # its files are linked into the new one: never carry damage forward
    number = next_number(ws)
    with _staging(ws, number) as staged:
        _link_all_but_reports(current, staged)
        (staged / "reports.json").write_text(reports_to_json(reports), encoding="utf-8")
        manifest = {**current.manifest(), **info, "reports": len(reports),
                    "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        base = manifest.get("base_digest")
        # What the next index run computes for the same content, so that it publishes nothing new.
        manifest["digest"] = (reports_digest(base, reports) if base else
                              stable_hash(str(manifest.get("digest", "")), reports_to_json(reports), size=16))
        for key in ("generation", "format", "files"):
            manifest.pop(key, None)
        ws.publish(staged, number, manifest)
    ws.prune(keep)
    return number


def _link_all_but_reports(current: GenerationPaths, staged: Path) -> None:
    for src in current.root.rglob("*"):
        rel = src.relative_to(current.root)
        if rel.name in ("reports.json", "manifest.json"):
            continue
        dst = staged / rel
        if src.is_dir():
            dst.mkdir(parents=True, exist_ok=True)
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(src, dst)
        except OSError as exc:
            if is_disk_full(exc):
                raise
            shutil.copy2(src, dst)


@dataclass
class QuerySnapshot:
    """One loaded generation: everything a question or a memory query reads. Its community reports, communities
    and graph are read on first use (a global or unsure question, the console, MCP), so a process that answers
    memory queries and local questions never holds them; the files were checked when the generation loaded,
    and are checked again (by their size and time, :func:`strata.integrity.check`) when they are read."""

    number: int
    index: ChunkIndex
    lexicon: EntityLexicon
    paths: GenerationPaths
    manifest: dict[str, Any] = field(default_factory=dict)
    _reports: list[Report] | None = field(default=None, repr=False)
    _communities: list[Community] | None = field(default=None, repr=False)
    _graph: GraphSnapshot | None = field(default=None, repr=False)
    # one lock per part: the first read of the graph (the console) does not hold up a global question's reports
    _locks: dict[str, threading.Lock] = field(
        default_factory=lambda: {a: threading.Lock() for a in ("_reports", "_communities", "_graph")}, repr=False)

    @property
    def root(self) -> Path:
        return self.paths.root

    @property
    def reports(self) -> list[Report]:
        return self._part("_reports", "reports.json", reports_from_json)

    @property
    def has_reports(self) -> bool:
        """Whether the generation holds community reports (its manifest says how many, without reading them)."""
        count = self.manifest.get("reports")
        return count > 0 if isinstance(count, int) else bool(self.reports)

    @property
    def communities(self) -> list[Community]:
        return self._part("_communities", "communities.json", communities_from_json)

    def graph(self) -> GraphSnapshot:
        """The entity graph as this generation published it (the console and MCP read it, answers do not)."""
        if not (self.root / GRAPH_FILE).exists():
            raise FileNotFoundError(f"generation {self.number} holds no {GRAPH_FILE} (published by an older version)")
        return self._part("_graph", GRAPH_FILE, graph_from_json)

    def _part(self, attr: str, name: str, parse: Callable[[str], Any]) -> Any:
        """The file ``name`` parsed, kept in ``attr`` from its first use (one reader of it at a time)."""
        with self._locks[attr]:
            value = getattr(self, attr)
            if value is None:
                value = _read_part(self.paths, name, parse)
                setattr(self, attr, value)
            return value

    def close(self) -> None:
        self.index.close()


def load_generation(paths: GenerationPaths, settings: StrataSettings) -> QuerySnapshot:
    """Load a published generation, after checking every file against its manifest. A damaged one raises
    :class:`strata.integrity.GenerationDamagedError` naming the file; so does one (published before manifests
    listed their files) whose files cannot be read or do not fit together."""
    integrity.check(paths)
    with _reading(paths, "index"):
        index = ChunkIndex.load(paths.index_dir, settings.retrieval, llm=settings.llm)
    try:
        _check_rows(paths, index)
        with _reading(paths, "entities.json"):
            lexicon = EntityLexicon.load(paths.lexicon_path)
        with _reading(paths, "manifest.json"):
            manifest = paths.manifest()
        snap = QuerySnapshot(number=paths.number, index=index, lexicon=lexicon, paths=paths, manifest=manifest)
        params = walk_params(settings.retrieval)
        with _reading(paths, "index/" + WALK_META):  # the walk as published (parsing no graph)
            meta = walk_meta(paths.index_dir, len(index.rows), params)
        if meta is not None:
            with _reading(paths, "index/" + WALK_ARRAYS):
                index.graph_walk = fit_to_index(load_walk(paths.index_dir, meta, params, lexicon), index)
        elif (paths.root / GRAPH_FILE).exists():  # an older generation's: its walk is built from its graph
            with _reading(paths, GRAPH_FILE):
                # Read for the walk and let go: only the console and MCP read the graph itself (snap.graph()
                # keeps it from their first use).
                graph = read_graph(paths.root)
                index.graph_walk = walk_for_index(graph, index, params, lexicon.bases)
                del graph
        if index.graph_walk is not None:
            with _reading(paths, "index/" + entity_vectors.META_FILE):  # absent in an older generation: names only
                vectors = entity_vectors.load(paths.index_dir, index.embedder.name if index.embedder else None)
                if vectors is not None:  # an HNSW graph of them when there are many (built if not written)
                    index.graph_walk.attach_vectors(
                        entity_vectors.with_ann(vectors, settings.retrieval.entity_hnsw_threshold))
    except BaseException:
        index.close()
        raise
    return snap


def _read_part(paths: GenerationPaths, name: str, parse: Callable[[str], Any]) -> Any:
    """A file of a loaded generation, read when first needed: checked again (a damaged one raises
    :class:`strata.integrity.GenerationDamagedError` naming it), then parsed."""
    integrity.check(paths, prefix=name)
    with _reading(paths, name):
        return parse((paths.root / name).read_text(encoding="utf-8"))


@contextmanager
def _reading(paths: GenerationPaths, name: str) -> Iterator[None]:
    """Turn a file that cannot be parsed into a refusal naming it (a missing generation stays FileNotFoundError,
    settings that differ stay IndexMismatchError)."""
    from retrieval.index_files import IndexMismatchError

    try:
        yield
    except (FileNotFoundError, IndexMismatchError, integrity.GenerationDamagedError):
        raise
    except (ValueError, KeyError, IndexError, TypeError, EOFError, OSError, zipfile.BadZipFile) as exc:
        if isinstance(exc, OSError) and not paths.root.is_dir():
            raise
        raise integrity.GenerationDamagedError(paths, name, f"cannot be read ({type(exc).__name__}: {exc})") from exc


def _check_rows(paths: GenerationPaths, index: ChunkIndex) -> None:
    """The chunk rows, BM25 postings and vectors describe the same number of chunks (a file cut at a line
    boundary parses, and would fail every query)."""
    rows = len(index.rows)
    counts = {"index/bm25.npz": len(index.bm25.doc_len)}
    if index.vectors is not None and getattr(index.vectors, "matrix", None) is not None:
        counts["index/vectors.npy"] = int(index.vectors.matrix.shape[0])
    for name, n in counts.items():
        if n != rows:
            raise integrity.GenerationDamagedError(paths, "index/chunks.jsonl",
                                                   f"holds {rows} chunks where {name} holds {n}")


def previous_state(ws: Workspace) -> tuple[list[Community] | None, dict[str, str] | None]:
    """The communities and entity signatures of the last finished run (the published generation): what an
    incremental run starts from. A run that did not finish published nothing, so it never seeds the next one.
    When these files of the published generation are damaged, those of the newest generation where they are
    intact (else none: communities are detected afresh)."""
    current = _intact(ws, ("communities.json", "entity_signatures.json"))
    if current is None or not current.communities_path.exists():
        return None, None
    communities = communities_from_json(current.communities_path.read_text(encoding="utf-8"))
    signatures = (json.loads(current.signatures_path.read_text(encoding="utf-8"))
                  if current.signatures_path.exists() else None)
    return communities, signatures


def _intact(ws: Workspace, prefixes: Sequence[str], older: bool = True) -> GenerationPaths | None:
    """The published generation if its files under ``prefixes`` are intact; else (``older``) the newest older
    generation where they are; else None."""
    current = ws.current()
    if current is None:
        return None
    candidates = [current] + ([ws.generation(n) for n in reversed(ws.numbers()) if n < current.number] if older else [])
    for paths in candidates:
        try:
            for prefix in prefixes:
                integrity.check(paths, prefix)
            return paths
        except (integrity.GenerationDamagedError, FileNotFoundError):
            continue
    return None


def open_index(ws: Workspace, settings: StrataSettings, fresh: bool = False) -> ChunkIndex:
    """The published generation's chunk index to build the next one from, or an empty index (with the
    workspace's vector cache) when ``fresh``, when there is none, or when it was built with other settings (then
    every chunk is indexed again; vectors come from the cache)."""
    from retrieval.chunk_text import CHUNK_TEXT
    from retrieval.index_files import IndexMismatchError
    from retrieval.vector_cache import VectorCache

    cache = VectorCache(ws.root / "vectors.sqlite")
    current = None if fresh else _intact(ws, ("index/",), older=False)  # a damaged index is built afresh
    folder = current.index_dir if current else None
    if folder is not None:
        try:
            index = ChunkIndex.load(folder, settings.retrieval, vector_cache=cache, llm=settings.llm)
        except (FileNotFoundError, IndexMismatchError, ValueError, KeyError, OSError):
            pass
        else:
            if index.chunk_text == CHUNK_TEXT:
                return index
            index.close()  # built before chunks were indexed with their titles: every chunk is indexed again
    return ChunkIndex(settings.retrieval, vector_cache=cache, llm=settings.llm)
