"""Linking a question to entities by its vector (retrieval/entity_vectors.py, GraphWalk.link_vectors): a question
that names an entity only in other words still seeds the walk and reaches the passage beyond it; the entity
vectors are written into the generation, reused from the cache for unchanged entities, and a generation
without them (an older version's) loads and links by names alone, as `strata route` says."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from core.records import Entity
from core.settings import StrataSettings
from retrieval import entity_vectors
from retrieval.embed import minilm_available
from retrieval.graph_fusion import default_weight
from retrieval.graph_walk import Link, Seed
from retrieval.vector_cache import VectorCache
from tests.test_graph_walk import CORPUS, FIRST_HOP, SECOND_HOP, ids, write_corpus
from tests.test_graph_walk import engine  # noqa: F401  (the same engine, over this module's settings and corpus)

# Names the journal only by what it is about: no span of it is an entity's name.
PARAPHRASE = "which city is home to the society that publishes the quantum gardening periodical"

needs_minilm = pytest.mark.skipif(not minilm_available(), reason="MiniLM weights are part of the CI image")

# A similarity is read against the question's similarities to the corpus's other entities, which must be enough
# to tell a spread (graph_walk.MIN_BACKGROUND): the walk's corpus, beside notes on places it does not ask about.
_PARTS = ["Karvel", "Ostrin", "Dunmere", "Halvik", "Pellow", "Quarrin", "Sabeth", "Tolvane", "Ulmark", "Verrin",
          "Wexley", "Brannock", "Corvath"]
_KINDS = ["River", "Pass", "Ridge", "Glacier", "Moor"]
VECTOR_CORPUS = CORPUS | {
    f"place{i:02d}.md": f"---\nteam: maps\n---\nThe {_PARTS[i % 13]} {_KINDS[i % 5]} lies north of the "
                        f"{_PARTS[(i + 5) % 13]} {_KINDS[(i + 2) % 5]}.\n" for i in range(26)}


@pytest.fixture
def settings(tmp_path: Path) -> StrataSettings:
    """MiniLM (the suite's default hashing embedder reads spelling, not meaning: it gets no entity vectors)."""
    return StrataSettings(data_dir=tmp_path / "ws", extraction={"mode": "offline"}, retrieval={"embedder": "minilm"})


@pytest.fixture
def corpus() -> dict[str, str]:
    return VECTOR_CORPUS


@needs_minilm
def test_a_paraphrased_entity_seeds_the_walk_by_vector(engine) -> None:  # type: ignore[no-untyped-def]
    index = engine.index
    walk = index.graph_walk
    assert len(walk.background) >= 40
    assert walk.entity_vectors is not None and walk.vector_embedder == index.embedder.name
    assert not walk.link(PARAPHRASE).seeds  # by names alone, nothing
    link = index.graph_link(PARAPHRASE)
    assert link.seeds and link.by_vector[0] == "Journal of Quantum Gardening" and not link.by_name
    seed = next(s for s in link.seeds if s.name == "Journal of Quantum Gardening")
    assert seed.by == "vector" and seed.similarity is not None and seed.score is not None
    # The walk from the vector seed reaches the society's passage, which shares no word with the question's
    # entity: the graph list ranks both hops first.
    alone = index.search_detailed(PARAPHRASE, 3, dense_weight=0.0, sparse_weight=0.0, graph_weight=1.0,
                                  fusion="rrf")
    assert ids(alone.hits)[:2] == [FIRST_HOP, SECOND_HOP]
    assert "Journal of Quantum Gardening" in alone.graph_vector_seeds
    # The route names the seed and says it was linked by vector (strata route --json, ask --json).
    decision = engine.route(PARAPHRASE).to_dict()
    assert "Journal of Quantum Gardening" in decision["graph_vector_seeds"]
    assert any("linked by vector" in r and "Journal of Quantum Gardening (similarity" in r and "standard score" in r
               for r in decision["reasons"])


@needs_minilm
def test_the_walk_made_beside_the_dense_list_ranks_as_one_made_after_it(engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A search links and walks while the dense list ranks (graph_fusion.walk_ahead); the hits, their scores
    and the seeds are those of a walk made afterwards, and each search walks once."""
    import retrieval.index as index_module
    from retrieval.graph_fusion import WalkAhead

    index = engine.index
    questions = [PARAPHRASE, "Which city hosts the publisher of the Journal of Quantum Gardening?",
                 "tram lines of the harbour"]
    filters = [None, {"team": "science"}]
    ahead = {(q, json.dumps(f)): index.search_detailed(q, 5, metadata_filter=f) for q in questions for f in filters}
    walks: list[str] = []
    inner = index.graph_walk.rank

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        walks.append("rank")
        return inner(*args, **kwargs)

    monkeypatch.setattr(index.graph_walk, "rank", counting)
    index.search_detailed(questions[1], 5)
    assert walks == ["rank"]
    # Without the walk ahead (its vector is not the search's), the walk is made after the dense list.
    monkeypatch.setattr(index_module, "walk_ahead", lambda *a, **k: WalkAhead(np.zeros(1), None, None))
    for (q, f), before in ahead.items():
        after = index.search_detailed(q, 5, metadata_filter=json.loads(f))
        assert [(h.chunk_id, h.rrf_score, h.graph_rank) for h in after.hits] == \
            [(h.chunk_id, h.rrf_score, h.graph_rank) for h in before.hits], q
        assert (after.graph_seeds, after.graph_vector_seeds, after.graph_weight) == \
            (before.graph_seeds, before.graph_vector_seeds, before.graph_weight)
    assert any(o.graph_weight for o in ahead.values())


@needs_minilm
def test_the_question_is_embedded_once(engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    index = engine.index
    calls: list[str] = []
    inner = index.dense.query_vector

    def counting(text: str) -> np.ndarray:
        calls.append(text)
        return inner(text)

    monkeypatch.setattr(index.dense, "query_vector", counting)
    index.search_detailed(PARAPHRASE, 3, graph_weight=1.0)
    assert calls == [PARAPHRASE]
    calls.clear()
    index.search_detailed(PARAPHRASE, 3, dense_weight=0.0, sparse_weight=1.0, graph_weight=1.0, fusion="rrf")
    assert calls == [PARAPHRASE]  # the dense list did not run: embedded for the walk alone
    calls.clear()
    index.search_detailed(PARAPHRASE, 3, dense_weight=0.0, sparse_weight=1.0, graph_weight=0.0, fusion="rrf")
    assert calls == []  # no walk, no vector


def test_vector_links_alone_give_the_graph_weight_only_when_strong() -> None:
    """Strength is the seed's standard score, not its cosine (whose scale is the embedder's)."""
    named = Link((Seed("a", "A", "A", 1.0),))
    weak = Link((Seed("b", "B", "B", 1.0, "vector", 0.9, 3.0),))
    strong = Link((Seed("b", "B", "B", 1.0, "vector", 0.6, 9.0),))
    assert default_weight(named, 1.0, 8.0) == 1.0
    assert default_weight(weak, 1.0, 8.0) == 0.0
    assert default_weight(strong, 1.0, 8.0) == 1.0
    assert default_weight(Link(()), 1.0, 8.0) == 0.0


def _walk_with_vectors(matrix: np.ndarray, hnsw: bool = False):  # type: ignore[no-untyped-def]
    """A walk over one entity per row of ``matrix`` ("Entity i"), linked by those vectors: compared with all of
    them by one product, or (``hnsw``) through an HNSW graph over them."""
    from core.records import GraphSnapshot
    from retrieval.graph_walk import GraphWalk

    n = len(matrix)
    entities = tuple(Entity(f"e{i:02d}", f"Entity {i}", "name", "", (f"c{i}",)) for i in range(n))
    walk = GraphWalk.build(GraphSnapshot(entities, ()), {f"c{i}": i for i in range(n)}, n)
    vectors = entity_vectors.EntityVectors(tuple(e.id for e in entities), matrix, "test")
    walk.attach_vectors(entity_vectors.with_ann(vectors, 1, threads=1) if hnsw else vectors)
    return walk


def _unit(m: np.ndarray) -> np.ndarray:
    return (m / np.linalg.norm(m, axis=-1, keepdims=True)).astype(np.float32)


def test_a_vector_link_is_read_on_the_embedders_own_scale() -> None:
    """Two embedders with the same geometry on different scales: one whose unrelated texts sit near cosine 0
    (MiniLM's), one where every text shares a common direction and unrelated ones sit near 0.85 (as
    multilingual-e5's sit at 0.73-0.81). A cosine threshold that suits the first links every question in the second; the
    standard score links the same entity in both, and nothing for a question near no entity."""
    rng = np.random.default_rng(7)
    base = _unit(rng.normal(size=(60, 64)))
    near = _unit(base[5] + 0.3 * _unit(rng.normal(size=64)))  # means entity 5 in other words
    nowhere = _unit(rng.normal(size=64))
    common = _unit(rng.normal(size=64)) * 2.5

    def linked(matrix: np.ndarray, q: np.ndarray) -> list[str]:
        return list(_walk_with_vectors(matrix).link("zzz", q).by_vector)

    for shift in (0.0, 1.0):
        m, q_near, q_nowhere = (_unit(x + shift * common) for x in (base, near, nowhere))
        assert linked(m, q_near) == ["Entity 5"], shift
        assert linked(m, q_nowhere) == [], shift
        if shift:
            assert float(np.min(m @ q_nowhere)) > 0.5  # every entity passes a cosine of 0.5 on this scale


def test_above_the_background_size_a_sample_is_read_and_the_hnsw_graph_links_as_the_product() -> None:
    from retrieval.graph_walk import BACKGROUND_ROWS

    rng = np.random.default_rng(11)
    base = _unit(rng.normal(size=(BACKGROUND_ROWS + 700, 64)))
    questions = [_unit(base[j] + 0.3 * _unit(rng.normal(size=64))) for j in (5, 1234, 2700)]
    questions.append(_unit(rng.normal(size=64)))  # near no entity
    exact = _walk_with_vectors(base)
    assert exact._ann is None and exact.background.shape == (BACKGROUND_ROWS, 64)
    # evenly spaced over all the rows, the last included (not the first 2,048)
    assert np.array_equal(exact.background[[0, -1]], base[[0, -1]])
    assert np.array_equal(exact.background[1024], base[int(1024 * (len(base) - 1) / (BACKGROUND_ROWS - 1))])
    want = [["Entity 5"], ["Entity 1234"], ["Entity 2700"], []]
    assert [list(exact.link("zzz", q).by_vector) for q in questions] == want
    ann = _walk_with_vectors(base, hnsw=True)
    assert ann._ann is not None
    assert [list(ann.link("zzz", q).by_vector) for q in questions] == want


def test_too_few_entities_to_tell_a_spread_link_none_by_vector() -> None:
    from retrieval.graph_walk import MIN_BACKGROUND

    rng = np.random.default_rng(3)
    seeds = 3  # graph_vector_seeds: the nearest, left out of the background
    few = _unit(rng.normal(size=(MIN_BACKGROUND + seeds - 1, 64)))  # one short of a spread
    assert not _walk_with_vectors(few).link("zzz", few[2]).seeds
    enough = _unit(rng.normal(size=(MIN_BACKGROUND + seeds, 64)))
    assert _walk_with_vectors(enough).link("zzz", enough[2]).by_vector[:1] == ("Entity 2",)


@needs_minilm
def test_an_old_generation_without_entity_vectors_loads_and_links_by_names(settings: StrataSettings,
                                                                           tmp_path: Path) -> None:
    from strata.engine import Engine
    from strata.pipeline import index_folder
    from strata.workspace import Workspace
    from tests.test_graph_walk import QUESTION

    index_folder(write_corpus(tmp_path / "notes", VECTOR_CORPUS), settings)
    current = Workspace(settings.data_dir).current()
    assert (current.index_dir / entity_vectors.MATRIX_FILE).exists()
    # As an older version published it: no entity vector files, and a manifest that does not list them.
    manifest_path = current.root / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    for name in (entity_vectors.MATRIX_FILE, entity_vectors.META_FILE):
        (current.index_dir / name).unlink()
        manifest["files"].pop(f"index/{name}")
    manifest_path.write_text(json.dumps(manifest))
    engine = Engine(settings)
    try:
        walk = engine.index.graph_walk
        assert walk is not None and walk.entity_vectors is None
        outcome = engine.index.search_detailed(QUESTION, 3)
        assert SECOND_HOP in ids(outcome.hits) and "Journal of Quantum Gardening" in outcome.graph_seeds
        assert not outcome.graph_vector_seeds and not engine.index.graph_link(PARAPHRASE).seeds
        reasons = engine.route(QUESTION).reasons
        assert any("no entity vectors" in r and "names only" in r for r in reasons)
    finally:
        engine.close()


class CountingEmbedder:
    """A small deterministic embedder that records what it embeds."""

    name, dim, semantic = "counting", 8, True

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.seen.extend(texts)
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, t in enumerate(texts):
            for j, ch in enumerate(t.encode()):
                out[i, (ch + j) % self.dim] += 1.0
        return out


def test_unchanged_entities_reuse_their_cached_vectors(tmp_path: Path) -> None:
    cache = VectorCache(tmp_path / "vectors.sqlite")
    emb = CountingEmbedder()
    a = Entity("e1", "Verdant Society", "name", "The Verdant Society keeps its offices in Lowmarsh.", ("c1",))
    b = Entity("e2", "Lowmarsh", "name", "A town by the old tram depot.", ("c1",))
    first = entity_vectors.compute([a, b], emb, cache)
    assert len(emb.seen) == 2 and first.ids == ("e1", "e2")
    assert np.allclose(np.linalg.norm(first.matrix, axis=1), 1.0)
    emb.seen.clear()
    changed = Entity("e2", "Lowmarsh", "name", "A harbour town with a market square.", ("c1",))
    second = entity_vectors.compute([a, changed], emb, cache)
    assert emb.seen == [entity_vectors.entity_text(changed)]  # only the entity whose text changed
    assert np.array_equal(second.matrix[0], first.matrix[0])
    entity_vectors.save(second, tmp_path)
    loaded = entity_vectors.load(tmp_path, "counting")
    assert loaded is not None and loaded.ids == second.ids and np.array_equal(loaded.matrix, second.matrix)
    assert entity_vectors.load(tmp_path, "another-embedder") is None  # not comparable with its questions
    cache.close()


@needs_minilm
def test_many_entities_are_looked_up_in_an_hnsw_graph_published_with_the_generation(tmp_path: Path) -> None:
    """Above ``retrieval.entity_hnsw_threshold`` entities the nearest ones come from an HNSW graph, written with
    the generation (listed in its manifest, so a damaged one is refused) and read when it loads; it links the
    same entities as the product with all of them."""
    from strata.engine import Engine
    from strata.pipeline import index_folder
    from strata.workspace import Workspace
    from tests.test_graph_walk import QUESTION

    settings = StrataSettings(data_dir=tmp_path / "ws", extraction={"mode": "offline"},
                              retrieval={"embedder": "minilm", "entity_hnsw_threshold": 2})
    index_folder(write_corpus(tmp_path / "notes", VECTOR_CORPUS), settings)
    current = Workspace(settings.data_dir).current()
    assert (current.index_dir / entity_vectors.ANN_FILE).exists()
    assert f"index/{entity_vectors.ANN_FILE}" in json.loads((current.root / "manifest.json").read_text())["files"]
    engine = Engine(settings)
    try:
        walk = engine.index.graph_walk
        assert walk._ann is not None
        link = engine.index.graph_link(PARAPHRASE)
        assert link.by_vector[0] == "Journal of Quantum Gardening"
        questions = [PARAPHRASE, QUESTION, "who tends the gardens of the society", "a harbour town"]
        vectors = [engine.index.embedder.embed([q])[0] for q in questions]
        by_graph = [[s.entity_id for s in walk.link(q, v).seeds] for q, v in zip(questions, vectors)]
        loaded = entity_vectors.load(current.index_dir, engine.index.embedder.name)
        walk.attach_vectors(entity_vectors.with_ann(loaded, 10**9))  # below the threshold: one product, exact
        assert walk._ann is None
        assert [[s.entity_id for s in walk.link(q, v).seeds] for q, v in zip(questions, vectors)] == by_graph
    finally:
        engine.close()
    # Written under a threshold it is now above, the generation loads without its graph (not rebuilt).
    engine = Engine(settings.model_copy(update={"retrieval": settings.retrieval.model_copy(
        update={"entity_hnsw_threshold": 10**9})}))
    try:
        assert engine.index.graph_walk._ann is None
        assert engine.index.graph_link(PARAPHRASE).by_vector[0] == "Journal of Quantum Gardening"
    finally:
        engine.close()


def test_only_entities_in_languages_the_embedder_reads_get_vectors() -> None:
    """A question is linked by vector only in a language the embedder reads, so an English embedder embeds no
    Chinese entity; names no language can be told of are kept, and an embedder that claims no limit gets all."""
    english = Entity("e1", "Verdant Society", "name", "The Verdant Society keeps its offices in Lowmarsh.", ("c1",))
    chinese = Entity("e2", "调度器", "concept", "调度器负责把任务分配给工作节点。", ("c2",))
    code = Entity("e3", "X-17", "concept", "X-17", ("c3",))
    assert entity_vectors.readable([english, chinese, code], frozenset({"en"})) == [english, code]
    assert entity_vectors.readable([english, chinese, code], None) == [english, chinese, code]
