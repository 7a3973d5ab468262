"""Entity vectors: each entity of a generation embedded by the index's embedder, so that a question can be linked
to the entities it means but does not spell as the lexicon does (:meth:`retrieval.graph_walk.GraphWalk.link`).

- **text**: the entity's name, followed by the first words of its description (``DESCRIPTION_WORDS``), which
  tells apart entities whose names alone say little ("IEEE Transactions");
- **languages**: only entities whose name and description are in a language the embedder reads
  (:func:`readable`; all of them for an embedder that claims no limit). A question is linked by vector only
  when the embedder reads its language, and what an English embedder makes of a Chinese text says little of
  its meaning; on a 10,000-document corpus with 36% of its chunks in Chinese or Polish, those entities' texts
  were 68% of the entity side's tokens (bench.pipeline);
- **cache**: vectors are kept in the workspace's vector cache under a hash of the recipe and the text, so an
  incremental run embeds only new or changed entities;
- **files**: ``index/entity_vectors.npy`` (float32, one unit-length row per entity) and
  ``index/entity_vectors.json`` (the entity ids in row order, the embedder's name and the recipe), written
  beside the chunk vectors when a generation is published and read when it loads. A generation published
  before entity vectors existed has neither file; its walk links by names alone;
- **nearest entities**: up to ``retrieval.entity_hnsw_threshold`` entities a question's vector is compared with
  every entity's (one product, cache-resident up to about 16,000 x 384 floats); above it, an HNSW graph
  (hnswlib, as the chunk vectors use above ``hnsw_threshold``) finds the nearest ``ANN_CANDIDATES``, written as
  ``index/entity_hnsw.bin`` when the generation is published (built when the generation loads if it lacks
  one). On MuSiQue's 11,819 MiniLM entity vectors it finds 98.7% of the exact top 3 for the dev questions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from core.records import Entity, stable_hash
from core.text.language import detect_language, uncovered

DESCRIPTION_WORDS = 12  # words of the description after the name
RECIPE = f"name+description{DESCRIPTION_WORDS}"
SELECTION = "languages the embedder reads"
MATRIX_FILE, META_FILE, ANN_FILE = "entity_vectors.npy", "entity_vectors.json", "entity_hnsw.bin"
ANN_CANDIDATES = 64  # nearest entities an HNSW search returns (the walk keeps at most graph_vector_seeds of them)
ANN_EF = 128  # its search depth (MuSiQue's entities, the dev questions' exact top 3: 96% at 64, 98.7% at 128)


@dataclass(frozen=True)
class EntityVectors:
    """Unit-length vectors of entities (row i: ``ids[i]``) made by the embedder ``embedder``."""

    ids: tuple[str, ...]
    matrix: np.ndarray
    embedder: str
    recipe: str = RECIPE
    ann: Any = field(default=None, compare=False, repr=False)  # hnswlib.Index over the rows, when there is one


def nearest(ann: Any, query: np.ndarray, k: int = ANN_CANDIDATES) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cosine similarities) of the ``k`` rows nearest the unit vector ``query`` by the HNSW graph ``ann``
    (:attr:`EntityVectors.ann`), best first."""
    k = min(k, ann.get_current_count())
    ann.set_ef(max(ANN_EF, k))
    labels, dists = ann.knn_query(np.asarray(query, np.float32), k=k, num_threads=1)
    return labels[0].astype(np.int64), (1.0 - dists[0]).astype(np.float32)


def readable(entities: Sequence[Entity], languages: frozenset[str] | None) -> list[Entity]:
    """The entities an embedder reading ``languages`` (None: no limit claimed) gets vectors of: those whose name
    and description are in one of them, or in no language detection can tell."""
    if languages is None:
        return list(entities)
    return [e for e in entities if not uncovered([detect_language(f"{e.name} {e.description}")], languages)]


def entity_text(entity: Entity, words: int = DESCRIPTION_WORDS) -> str:
    """What an entity's vector embeds: its name, and the first ``words`` words of its description when it says
    more than the name."""
    desc = " ".join(entity.description.split()[:words]) if words > 0 else ""
    return f"{entity.name}: {desc}" if desc and desc != entity.name else entity.name


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def compute(entities: Sequence[Entity], embedder: Any, cache: Any = None, batch: int = 256) -> EntityVectors:
    """The vectors of ``entities`` by ``embedder`` (texts already in ``cache``, a
    :class:`~retrieval.vector_cache.VectorCache`, are not embedded again)."""
    texts = [entity_text(e) for e in entities]
    keys = [stable_hash("entity", RECIPE, t, size=12) for t in texts]
    found: dict[str, np.ndarray] = cache.get_many(embedder.name, keys, embedder.dim) if cache is not None else {}
    todo = list(dict.fromkeys(k for k in keys if k not in found))
    text_of = dict(zip(keys, texts))
    fresh: dict[str, np.ndarray] = {}
    for start in range(0, len(todo), batch):
        part = todo[start:start + batch]
        for k, v in zip(part, embedder.embed([text_of[k] for k in part])):
            fresh[k] = np.asarray(v, np.float32)
    if fresh and cache is not None:
        cache.put_many(embedder.name, fresh)
    found.update(fresh)
    matrix = (np.stack([found[k] for k in keys]) if keys else np.zeros((0, embedder.dim), np.float32))
    return EntityVectors(tuple(e.id for e in entities), _unit(matrix), embedder.name)


def with_ann(vectors: EntityVectors, threshold: int, threads: int | None = None) -> EntityVectors:
    """``vectors`` with an HNSW graph over its rows when they number at least ``threshold`` (kept when it
    already has one of all its rows), without one below it. ``threads``: default ``compute.threads``."""
    n = len(vectors.ids)
    if n < threshold or n == 0:
        return replace(vectors, ann=None) if vectors.ann is not None else vectors
    if vectors.ann is not None and vectors.ann.get_current_count() == n:
        return vectors
    import hnswlib

    from core.threads import worker_threads

    ann = hnswlib.Index(space="ip", dim=vectors.matrix.shape[1])
    ann.init_index(max_elements=n, ef_construction=200, M=16, random_seed=7)
    ann.add_items(vectors.matrix, np.arange(n), num_threads=worker_threads(threads))
    return replace(vectors, ann=ann)


def save(vectors: EntityVectors, folder: Path) -> None:
    """Write ``vectors`` into ``folder`` (a generation's index folder), with their HNSW graph if they have one."""
    np.save(folder / MATRIX_FILE, vectors.matrix.astype(np.float32), allow_pickle=False)
    (folder / META_FILE).write_text(json.dumps({"embedder": vectors.embedder, "recipe": vectors.recipe,
                                                "ids": list(vectors.ids)}), encoding="utf-8")
    if vectors.ann is not None:
        vectors.ann.save_index(str(folder / ANN_FILE))


def load(folder: Path, embedder: str | None) -> EntityVectors | None:
    """The entity vectors in ``folder``, or None when it has none (published by an older version) or they were
    made by another embedder than ``embedder`` (the question's vector would not compare with them). Files that
    do not fit together raise ValueError."""
    meta_path, matrix_path = folder / META_FILE, folder / MATRIX_FILE
    if not meta_path.exists() or not matrix_path.exists() or embedder is None:
        return None
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    if meta.get("embedder") != embedder:
        return None
    # Memory-mapped: with an HNSW graph the rows are searched there and not read again from this file but for the
    # background's sample (the walk copies all of them when it compares with all, GraphWalk.attach_vectors).
    matrix = np.load(matrix_path, allow_pickle=False, mmap_mode="r")
    ids = tuple(meta["ids"])
    if matrix.ndim != 2 or matrix.shape[0] != len(ids):
        raise ValueError(f"{matrix_path.name} holds {matrix.shape[0] if matrix.ndim else 0} rows for {len(ids)} "
                         "entity ids")
    ann = None
    if (folder / ANN_FILE).exists():
        import hnswlib

        ann = hnswlib.Index(space="ip", dim=matrix.shape[1])
        ann.load_index(str(folder / ANN_FILE), max_elements=len(ids))
        if ann.get_current_count() != len(ids):
            raise ValueError(f"{ANN_FILE} holds {ann.get_current_count()} entities for {len(ids)} entity ids")
    return EntityVectors(ids, matrix.astype(np.float32, copy=False), meta["embedder"], meta.get("recipe", ""), ann)
