"""The graph walk's ranked list (retrieval/graph_walk.py): it finds the second hop of a two-hop question, stays out
when asked (graph_weight 0) or when the question names no entity, obeys filters, reloads with the generation,
and works the same over Neo4j; a document's title is an entity its passages mention; and the first k hits do not
depend on top_k."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from core.records import Chunk, Document
from core.settings import StoreSettings, StrataSettings
from extraction.titles import document_title, with_titles
from extraction.types import ChunkExtraction, ExtractionResult
from retrieval.contract import HybridParams, MemoryQueryRequest
from core.text.keys import walk_key

QUESTION = "Which city hosts the publisher of the Journal of Quantum Gardening?"
FIRST_HOP = "journal.md#0000"
SECOND_HOP = "verdant.md#0000"  # shares no word with the question: only the entity "Verdant Society" leads to it

CORPUS = {
    "journal.md": "---\ntitle: Journal of Quantum Gardening\nteam: science\n---\n"
                  "The Journal of Quantum Gardening is published by the Verdant Society every spring.\n",
    "verdant.md": "---\nteam: societies\n---\n# Verdant Society\n\nThe Verdant Society keeps its offices in "
                  "Lowmarsh, beside the old tram depot.\n",
    "bright.md": "---\nteam: science\n---\nBrightwater is a city that hosts a harbour festival every summer.\n",
    "orbis.md": "---\nteam: science\n---\nThe publisher Orbis Press prints atlases for schools.\n",
    "labs.md": "---\nteam: science\n---\nQuantum computing labs in the city need cold rooms and quiet pumps.\n",
    "marine.md": "---\nteam: science\n---\nThe Journal of Marine Botany covers kelp forests and sea grasses.\n",
    "clubs.md": "---\nteam: science\n---\nGardening clubs meet in the city hall, which hosts seed swaps.\n",
    "press.md": "---\nteam: science\n---\nA city publisher hosts readings; the journal of a gardener was printed.\n",
    "tram.md": "---\nteam: transport\n---\nTram lines connect the harbour to the market squares.\n",
}


def write_corpus(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def ids(hits) -> list[str]:  # type: ignore[no-untyped-def]
    return [h.chunk_id for h in hits]


@pytest.fixture
def corpus() -> dict[str, str]:
    """The notes the engine indexes (a module that needs more overrides this fixture)."""
    return CORPUS


@pytest.fixture
def engine(settings: StrataSettings, corpus: dict[str, str], tmp_path: Path):  # type: ignore[no-untyped-def]
    from strata.engine import Engine
    from strata.pipeline import index_folder

    index_folder(write_corpus(tmp_path / "notes", corpus), settings)
    eng = Engine(settings)
    yield eng
    eng.close()


def test_walk_finds_the_second_hop_that_bm25_and_dense_miss(engine) -> None:  # type: ignore[no-untyped-def]
    index = engine.index
    bm25 = ids(index.search(QUESTION, 3, dense_weight=0.0, sparse_weight=1.0, graph_weight=0.0, fusion="rrf"))
    dense = ids(index.search(QUESTION, 3, dense_weight=1.0, sparse_weight=0.0, graph_weight=0.0, fusion="rrf"))
    assert bm25[0] == FIRST_HOP and SECOND_HOP not in bm25 and SECOND_HOP not in dense
    alone = ids(index.search(QUESTION, 3, dense_weight=0.0, sparse_weight=0.0, graph_weight=1.0, fusion="rrf"))
    assert alone[:2] == [FIRST_HOP, SECOND_HOP]
    outcome = index.search_detailed(QUESTION, 3)
    assert FIRST_HOP in ids(outcome.hits) and SECOND_HOP in ids(outcome.hits)
    assert outcome.graph_weight > 0 and "Journal of Quantum Gardening" in outcome.graph_seeds
    second = next(h for h in outcome.hits if h.chunk_id == SECOND_HOP)
    assert second.graph_rank == 2 and second.sparse_rank is None
    # The route says which entities seeded the walk (strata route --json, ask --json).
    decision = engine.route(QUESTION).to_dict()
    assert "Journal of Quantum Gardening" in decision["graph_seeds"]
    assert any("graph walk" in r for r in decision["reasons"])
    # The memory query uses it too: hybrid_params without graph_weight let the default decide, 0 leaves it out.
    with_graph = engine.query(MemoryQueryRequest(query_id="q", search_text=QUESTION, top_k=3,
                                                 hybrid_params=HybridParams(dense_weight=0, sparse_weight=1)))
    without = engine.query(MemoryQueryRequest(query_id="q", search_text=QUESTION, top_k=3,
                                              hybrid_params=HybridParams(dense_weight=0, sparse_weight=1,
                                                                         graph_weight=0)))
    assert SECOND_HOP in [r.chunk_id for r in with_graph.results]
    assert SECOND_HOP not in [r.chunk_id for r in without.results]


def test_graph_weight_zero_and_unlinked_questions_rank_as_before(engine) -> None:  # type: ignore[no-untyped-def]
    index = engine.index
    walk = index.graph_walk
    unlinked = "which rooms need quiet pumps and cold air"
    assert not walk.link(unlinked).seeds
    try:
        queries = [(QUESTION, {}), (unlinked, {}), (QUESTION, {"dense_weight": 1.0, "sparse_weight": 1.0}),
                   (QUESTION, {"metadata_filter": {"team": "science"}})]
        index.graph_walk = walk
        graph_off = [index.search_detailed(q, 6, graph_weight=0.0, **kw) for q, kw in queries]
        default_unlinked = index.search_detailed(unlinked, 6)
        index.graph_walk = None  # the ranking before the graph list existed
        before = [index.search_detailed(q, 6, **kw) for q, kw in queries]
    finally:
        index.graph_walk = walk
    for off, old in zip(graph_off, before):
        assert [(h.chunk_id, h.rrf_score) for h in off.hits] == [(h.chunk_id, h.rrf_score) for h in old.hits]
        assert off.graph_weight == 0
    assert ids(default_unlinked.hits) == ids(before[1].hits) and default_unlinked.graph_weight == 0


def test_filters_apply_to_the_graph_list(engine) -> None:  # type: ignore[no-untyped-def]
    index = engine.index
    science = {"team": "science"}
    for kw in ({}, {"dense_weight": 0.0, "sparse_weight": 0.0, "graph_weight": 1.0, "fusion": "rrf"}):
        hits = index.search(QUESTION, 8, metadata_filter=science, **kw)
        assert hits and SECOND_HOP not in ids(hits)
        assert all(index.rows[index.by_id[h.chunk_id]].fields["team"] == "science" for h in hits)
    only = index.search(QUESTION, 8, dense_weight=0.0, sparse_weight=0.0, graph_weight=1.0, fusion="rrf",
                        metadata_filter={"team": "societies"})
    assert ids(only) == [SECOND_HOP]


def test_a_new_generation_brings_its_graph(settings: StrataSettings, tmp_path: Path) -> None:
    from strata.engine import Engine
    from strata.pipeline import index_folder

    folder = write_corpus(tmp_path / "notes", CORPUS)
    index_folder(folder, settings)
    engine = Engine(settings)
    try:
        question = "What does the Pennyford Choir sing?"
        assert not engine.index.graph_walk.link(question).seeds
        write_corpus(folder, {"choir.md": "# Pennyford Choir\n\nThe Pennyford Choir rehearses with Ada Quillon.\n",
                              "ada.md": "Ada Quillon writes carols about winter tides.\n"})
        index_folder(folder, settings)
        assert engine.check_reload()
        walk = engine.index.graph_walk
        assert [s.name for s in walk.link(question).seeds] == ["Pennyford Choir"]
        alone = engine.index.search(question, 2, dense_weight=0.0, sparse_weight=0.0, graph_weight=1.0, fusion="rrf")
        assert ids(alone) == ["choir.md#0000", "ada.md#0000"]
    finally:
        engine.close()


def test_the_first_k_hits_do_not_depend_on_top_k(tmp_path: Path) -> None:
    from strata.engine import Engine
    from strata.pipeline import index_folder

    files = dict(CORPUS)
    for i in range(40):  # more candidates than the pool, so a large top_k reaches the deeper lists
        files[f"filler{i:02d}.md"] = (f"Filler note {i} about a city journal, gardening {i % 7} and the harbour "
                                      f"tram {i % 5}; the publisher hosts {i % 3} fairs.\n")
    settings = StrataSettings(data_dir=tmp_path / "ws", extraction={"mode": "offline"},
                              retrieval={"candidate_pool": 10, "dense_weight": 1.0})
    index_folder(write_corpus(tmp_path / "notes", files), settings)
    engine = Engine(settings)
    try:
        index = engine.index
        for q in (QUESTION, "harbour tram fairs", "gardening journal 3"):
            for kw in ({}, {"dense_weight": 1.0, "sparse_weight": 1.0, "fusion": "rrf"}, {"graph_weight": 0.0},
                       {"fusion": "convex"}):
                full = ids(index.search(q, 45, **kw))
                assert len(full) == 45
                for k in (1, 2, 3, 5, 8, 10, 11, 20, 44):
                    assert ids(index.search(q, k, **kw)) == full[:k], (q, kw, k)
            # BM25 alone: its list is cut at the pool, and a larger top_k still reaches every matching chunk.
            bm25 = {"dense_weight": 0.0, "sparse_weight": 1.0, "graph_weight": 0.0}
            full = ids(index.search(q, 45, **bm25))
            assert len(full) == min(45, len(index.sparse.rank(q, 1000, index.bm25.alive))) > 10
            assert all(ids(index.search(q, k, **bm25)) == full[:k] for k in (1, 5, 10, 11, 20))
    finally:
        engine.close()


def test_a_documents_title_is_an_entity_its_passages_mention() -> None:
    def doc(text: str, **meta: object) -> Document:
        return Document("d", "d.md", text, "h", dict(meta))

    assert document_title(doc("body", title="Lothair II")) == "Lothair II"  # BEIR title / front matter
    assert document_title(doc("\n# Verdant *Society* #\n\nText.")) == "Verdant Society"  # a Markdown heading
    assert document_title(doc("No heading here.\n# Later heading")) is None
    chunks = [Chunk(f"d#{i:04d}", "d", i, "x", 0, 1, 1, "d.md", "h") for i in range(2)]
    result = ExtractionResult((ChunkExtraction("d#0000", (), ()), ChunkExtraction("d#0001", (), ())))
    out = with_titles([(doc("text", title="Lothair II"), chunks)], result)
    assert [[m.name for m in x.entities] for x in out.extractions] == [["Lothair II"], ["Lothair II"]]
    again = with_titles([(doc("text", title="lothair ii"), chunks)], out)  # already named: not added twice
    assert [[m.name for m in x.entities] for x in again.extractions] == [["Lothair II"], ["Lothair II"]]


def test_names_link_up_to_case_punctuation_underscores_hyphens_and_accents() -> None:
    assert walk_key("node_exporter") == walk_key("Node Exporter") == walk_key("node-exporter")
    assert walk_key("Aschenbrödel") == walk_key("Aschenbrodel")
    assert walk_key("Lothair II's") == walk_key("lothair ii")


def test_a_name_is_linked_by_its_last_part_alone_where_that_names_one_entity() -> None:
    from core.records import Entity, GraphSnapshot
    from retrieval.graph_walk import GraphWalk

    names = [("Joseph Stiglitz", "name"), ("Millennium Development Goals", "name"), ("Academy Award", "name"),
             ("Bob Cratchit", "name"), ("Mrs. Cratchit", "name"), ("University of Chicago", "name"),
             ("Chicago", "name"), ("约翰·埃尔维", "person"), ("调度器", "concept"), ("Bank of America", "name"),
             ("卡万·肖特", "person"), ("乔治·华盛顿", "person")]
    entities = tuple(Entity(f"e{i}", n, t, "", (f"c{i}",)) for i, (n, t) in enumerate(names))
    walk = GraphWalk.build(GraphSnapshot(entities, ()), {f"c{i}": i for i in range(len(names))}, len(names))
    assert set(walk.parts) == {walk_key(p) for p in ("Stiglitz", "Goals", "Award", "埃尔维", "肖特", "华盛顿")}
    # ("America" is no key: a name joined by a lower-case word is named by its head)

    def seeds(question: str) -> set[str]:
        return {s.name for s in walk.link(question).seeds}

    assert seeds("What did Stiglitz present in 2009?") == {"Joseph Stiglitz"}
    assert seeds("What are both Branko Milanovic and Joseph Stiglitz?") == {"Joseph Stiglitz"}
    assert seeds("埃尔维在 38 岁时赢得了哪一届超级碗？") == {"约翰·埃尔维"}
    assert seeds("What goals do the protests have in Chicago?") == {"Chicago"}  # lower case: a common noun
    assert seeds("How many Grammy Awards has she won?") == set()  # inside a longer name the question writes
    assert seeds("What did Cratchit say?") == set()  # the last part of two names: which one is not said
    assert seeds("Where is the University of Chicago?") == {"University of Chicago"}  # the whole name first
    assert seeds("Who discovered America?") == set()
    assert seeds("Goals of the protests?") == set()  # the first word's capital is its place's
    # Chinese: whole words of the question, no interpunct beside them
    assert seeds("肖特在比赛中得了几分？") == {"卡万·肖特"}
    assert seeds("肖特基二极管是什么？") == set() and seeds("华盛顿州在哪里？") == set()
    assert seeds("塞缪尔·华盛顿是谁？") == seeds("塞缪尔･华盛顿是谁？") == seeds("塞缪尔⋅华盛顿是谁？") == set()
    assert seeds("Stiglitz在2009年提出了什么？") == {"Joseph Stiglitz"}  # a capital in a Chinese question is the name's


def test_a_longer_span_that_names_no_entity_leaves_its_words_to_the_names_inside_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from core.records import Entity, GraphSnapshot
    from retrieval.graph_walk import GraphWalk

    names = ["Types of Lowmarsh", "Lowmarsh", "Port Vesmar", "Vesmar"]
    entities = tuple(Entity(f"e{i}", n, "name", "", (f"c{i}",)) for i, n in enumerate(names))
    walk = GraphWalk.build(GraphSnapshot(entities, ()), {f"c{i}": i for i in range(4)}, 4)
    # "Types of Lowmarsh" was met where a heading capitalized it: its words are mostly another thing's uses.
    ordinary = walk.keys[walk_key("Types of Lowmarsh")][0]
    walk.is_stop = lambda text: text.lower() in {"of", "are", "there", "which", "was", "when"}  # (the tokenizer's, in an index)
    monkeypatch.setattr(walk, "share", lambda j, matched, language: 0.1 if j == ordinary else 1.0)

    def seeds(question: str) -> list[str]:
        return [s.name for s in walk.link(question).seeds]

    assert seeds("Which types of Lowmarsh pumps are there?") == ["Lowmarsh"]
    assert seeds("Which Types of Lowmarsh pumps are there?") == ["Types of Lowmarsh"]  # capitalized: the name
    # A question that capitalizes no name amid lower-case words says nothing of where its names end.
    assert seeds("which types of lowmarsh pumps are there?") == []
    assert seeds("Which Types Of Lowmarsh Pumps Are There?") == []
    # A longer name too common to seed is still what the question names: no shorter one stands in for it.
    walk.df[walk.keys[walk_key("Port Vesmar")][0]] = 100.0
    assert seeds("When was Port Vesmar built?") == []


def test_the_walk_works_the_same_over_neo4j(neo4j_store_settings: StoreSettings, tmp_path: Path) -> None:
    from core.store.neo4j_store import Neo4jGraphStore
    from strata.engine import Engine
    from strata.pipeline import index_folder

    settings = StrataSettings(data_dir=tmp_path / "ws", store=neo4j_store_settings, extraction={"mode": "offline"})
    store = Neo4jGraphStore.connect(neo4j_store_settings)
    store.clear()
    try:
        index_folder(write_corpus(tmp_path / "notes", CORPUS), settings, store=store)
        engine = Engine(settings)
        try:
            alone = engine.index.search(QUESTION, 2, dense_weight=0.0, sparse_weight=0.0, graph_weight=1.0,
                                        fusion="rrf")
            assert ids(alone) == [FIRST_HOP, SECOND_HOP]
            assert SECOND_HOP in ids(engine.index.search(QUESTION, 3))
        finally:
            engine.close()
    finally:
        store.clear()
        store.close()


def test_the_local_walk_matches_igraphs_personalized_pagerank() -> None:
    """pagerank_sparse spreads mass only from the nodes that hold it and drops crumbs below ``prune``: on a random
    entity-chunk graph (with chunks that mention nothing, where the walker goes back to the seeds) it is igraph's
    exact personalized PageRank (PRPACK) without pruning, and with it it falls short of it only by the mass it
    dropped, node by node, with the same top chunks."""
    import dataclasses

    import igraph as ig
    import numpy as np

    from core.records import Entity, GraphSnapshot, Relation
    from retrieval.graph_walk import GraphWalk, WalkParams

    rng = np.random.default_rng(4)
    n_rows, n_e = 600, 150
    entities = tuple(Entity(f"e{i}", f"thing {i}", "name", "",
                            tuple(f"c{r}" for r in rng.integers(0, n_rows - 50, int(rng.integers(1, 9)))))
                     for i in range(n_e))  # the last 50 chunks mention nothing
    relations = tuple(Relation(f"r{j}", f"e{a}", f"e{b}", "", ("c0",) * int(rng.integers(1, 4)))
                      for j, (a, b) in enumerate(rng.integers(0, n_e, (300, 2))) if a != b)
    walk = GraphWalk.build(GraphSnapshot(entities, relations), {f"c{i}": i for i in range(n_rows)}, n_rows,
                           WalkParams(damping=0.5))
    n = walk.n_entities + n_rows
    p = walk.out_edges.tocoo()  # row j: where a walker at j steps
    g = ig.Graph(n=n, edges=list(zip(p.row.tolist(), p.col.tolist())), directed=True)
    pruned = walk.params
    exact = dataclasses.replace(pruned, prune=0.0, tolerance=1e-12, iterations=100)
    def pagerank(reset: np.ndarray) -> np.ndarray:  # stuck mass goes back to the seeds, as igraph's does
        at = np.flatnonzero(reset)
        return walk.pagerank_sparse(at, reset[at], at, reset[at])

    for seeds in ([3], [7, 40, 41], [walk.n_entities + n_rows - 1, 12]):  # the last: a chunk without entities
        reset = np.zeros(n)
        reset[seeds] = 1.0 / len(seeds)
        theirs = np.asarray(g.personalized_pagerank(damping=0.5, reset=reset.tolist(), weights=p.data.tolist()))
        walk.params = exact
        assert np.abs(pagerank(reset) - theirs).max() < 1e-9, seeds
        walk.params = pruned
        ours = pagerank(reset)
        dropped = 1.0 - ours.sum()
        assert 0 < dropped < 0.02, seeds
        assert (ours <= theirs + 1e-12).all() and np.abs(theirs - ours).max() <= dropped, seeds
        top = lambda m: set(np.argsort(-m[walk.n_entities:])[:10].tolist())  # noqa: E731
        assert len(top(ours) & top(theirs)) >= 9, seeds


ORDINARY = {  # "type" is an ordinary word here; the extractor takes "Types" for a name where it is capitalized
    "engines.md": "Steam engines of this type drove the mills. See the diagram below (in Types of motor units "
                  "section).\n",
    "pumps.md": "A pump of the rotary type moves water at Lowmarsh.\n",
    "valves.md": "Each valve type has its own seal, made at Lowmarsh.\n",
    "boilers.md": "The boiler type decides the pressure.\n",
}


def test_an_ordinary_word_does_not_name_an_entity_met_where_it_was_capitalized(settings: StrataSettings,
                                                                                 tmp_path: Path) -> None:
    from strata.engine import Engine
    from strata.pipeline import index_folder

    index_folder(write_corpus(tmp_path / "notes", ORDINARY), settings)
    eng = Engine(settings)
    try:
        walk = eng.index.graph_walk
        assert walk_key("Types") in walk.keys and walk_key("Lowmarsh") in walk.keys  # both extracted
        j = walk.keys[walk_key("Types")][0]
        assert walk.share(j, "type", "en") < walk.params.name_share  # 1 chunk mentions it, 4 hold the word
        assert [s.name for s in walk.link("which type drove the mills").seeds] == []
        # A name is most of its word's uses, in any case the question writes it; a question that writes the
        # word capitalized amid its words says it means the name.
        assert [s.name for s in walk.link("what is made at lowmarsh").seeds] == ["Lowmarsh"]
        assert "Types" in [s.name for s in walk.link("What does the Types section show?").seeds]
        # A question in capitals or Title Case says nothing of names by its capitals.
        assert [s.name for s in walk.link("WHICH TYPE DROVE THE MILLS").seeds] == []
        assert [s.name for s in walk.link("Which Type Drove The Mills").seeds] == []
        # A name the walk does not hold (the lexicon of another generation) is not judged away.
        assert walk.names_in("which type", [("type", "Types"), ("type", "Typewriters")]) == [("type", "Typewriters")]
        # The reader's question names are judged alike.
        from answers.reader import IndexCorpus

        corpus = IndexCorpus(eng.index, eng.current.lexicon)
        assert corpus.known_names("which type drove the mills at lowmarsh") == ["lowmarsh"]
        # With the share at 0 every name links as spelled: the word links the entity again.
        walk.params = replace(walk.params, name_share=0.0)
        assert "Types" in [s.name for s in walk.link("which type drove the mills").seeds]
        assert corpus.known_names("which type drove the mills at lowmarsh") == ["type", "lowmarsh"]
    finally:
        eng.close()


PLAIN = {  # `main` is a branch in one page's code span, and a word of the code and prose of the others
    "sync.md": "Push the commit to the `main` branch of the repository at Lowmarsh.\n",
    "entry.md": "The entry point of the tool:\n\n```python\ndef main():\n    run()\n```\n",
    "script.md": "Run it as a script:\n\n```python\nif __name__ == '__main__':\n    main()\n```\n",
    "loop.md": "The main loop reads events until the tool stops.\n",
    "tests.md": "Each test calls the tool:\n\n```python\nmain(['--check'])\n```\n",
}


def test_a_plain_word_found_in_a_code_span_names_its_entity_only_where_the_corpus_says_so(
        settings: StrataSettings, tmp_path: Path) -> None:
    from strata.engine import Engine
    from strata.pipeline import index_folder

    index_folder(write_corpus(tmp_path / "notes", PLAIN), settings)
    eng = Engine(settings)
    try:
        walk = eng.index.graph_walk
        j = walk.keys[walk_key("main")][0]  # extracted from its code span
        assert walk.share(j, "main", "en") < walk.params.name_share  # one page mentions it, four hold the word
        question = "What are the main topics?"
        spelled = [("main", "main")]
        # A search and the reader take an identifier as spelled; what a question about the whole corpus asks
        # judges a plain word by its uses.
        assert walk.names_in(question, spelled) == spelled and walk.names_in(question, spelled, plain=True) == []
        route = eng.route(question)
        assert "main" not in route.entities and "main" in route.terms  # a term: a topic only where it leads a title
        assert eng.route("Where is Lowmarsh?").entities == ("Lowmarsh",)
        # a question that capitalizes the word amid lower-case ones says it means the name
        assert walk.names_in("Where is the Main branch pushed?", [("Main", "main")], plain=True) == [("Main", "main")]
    finally:
        eng.close()


def test_a_name_a_page_title_puts_above_every_chunk_is_that_pages_name(settings: StrataSettings,
                                                                      tmp_path: Path) -> None:
    """BM25 reads a page's title above each of its chunks, and the extractor finds the name only in the chunks
    whose text says it: the share counts the page whole, so a lowercase question still names it."""
    from strata.engine import Engine
    from strata.pipeline import index_folder

    body = "\n\n".join(f"Step {i}: the agent copies its settings and restarts the pumps in rotation {i}." for i in range(12))
    files = {"consul.md": "---\ntitle: Running Quorvale\n---\nEach node runs Quorvale, which keeps the cluster's catalog.\n\n" + body + "\n",
             "other.md": "The harbour opens at dawn.\n"}
    settings = settings.model_copy(update={"chunking": settings.chunking.model_copy(
        update={"chunk_tokens": 48, "overlap_tokens": 0})})
    index_folder(write_corpus(tmp_path / "notes", files), settings)
    eng = Engine(settings)
    try:
        walk = eng.index.graph_walk
        rows = [r for r in eng.index.rows if r.document_id.endswith("consul.md")]
        j = walk.keys[walk_key("Quorvale")][0]
        assert len(rows) > 3 and walk.df[j] < len(rows) / 2  # most of the page's chunks hold it by their header
        assert [s.name for s in walk.link("how does quorvale keep the catalog").seeds][:1] == ["Quorvale"]
        walk.document_of_row, walk._shares = None, {}  # counted chunk by chunk, the page's own name falls short
        assert walk.share(j, "quorvale", "en") < walk.params.name_share
    finally:
        eng.close()


def test_passages_the_same_seeds_mention_share_one_place_in_the_fusion() -> None:
    """Four passages mention the question's one entity; how much mass each gets depends on how many other
    entities it holds, which says nothing of the question, so they share the mean of their places and the other
    lists' order decides among them. A passage two seeds mention is a group of its own, and one the walk reaches
    only through another entity keeps its place."""
    import numpy as np

    from core.records import Entity, GraphSnapshot, Relation
    from retrieval.fusion import weighted_rrf
    from retrieval.graph_walk import GraphWalk, Link, Seed

    crowd = tuple(Entity(f"x{i}", f"extra {i}", "name", "", ("c0",) * (i < 3) + ("c1",) * (i < 1)) for i in range(3))
    entities = (Entity("low", "Lowmarsh", "name", "", ("c0", "c1", "c2", "c3")),
                Entity("ver", "Verdant", "name", "", ("c2", "c4")),
                Entity("kel", "Kelp", "name", "", ("c4", "c5"))) + crowd
    relations = (Relation("r0", "ver", "kel", "", ("c4",)),)
    walk = GraphWalk.build(GraphSnapshot(entities, relations), {f"c{i}": i for i in range(8)}, 8)
    one = Link((Seed("low", "Lowmarsh", "Lowmarsh", 1.0),))
    rows = [row for row, _ in walk.rank(one, 10, None)]
    masses = dict(walk.rank(one, 10, None))
    assert {0, 1, 2, 3} <= set(rows) and len({round(masses[r], 9) for r in (0, 1, 2, 3)}) > 1  # masses differ
    places = dict(zip(rows, walk.places(one, rows)))
    shared = np.mean([rows.index(r) + 1 for r in (0, 1, 2, 3)])
    assert all(places[r] == shared for r in (0, 1, 2, 3))
    assert all(places[r] == rows.index(r) + 1 for r in rows if r not in (0, 1, 2, 3))  # reached through Verdant
    fused = dict(weighted_rrf([(1.0, [3, 1, 0, 2]), (1.0, rows, walk.places(one, rows))]))
    assert sorted(fused, key=lambda r: -fused[r])[:4] == [3, 1, 0, 2]  # the walk keeps the other list's order
    two = Link((Seed("low", "Lowmarsh", "Lowmarsh", 1.0), Seed("ver", "Verdant", "Verdant", 1.0)))
    rows2 = [row for row, _ in walk.rank(two, 10, None)]
    places2 = dict(zip(rows2, walk.places(two, rows2)))
    assert places2[2] == rows2.index(2) + 1  # both seeds mention it: its own group
    assert places2[0] == places2[1] == places2[3] != places2[2]


KELP = "kelp forests sea grasses and the Verdant Society"  # BM25's first passage, marine.md, holds no seed


def test_the_walk_does_not_displace_bm25_and_denses_first(engine) -> None:  # type: ignore[no-untyped-def]
    """Under RRF (k = 60) a passage first by the question's words but absent from the walk's list falls below
    passages both hold; the default keeps it first (``retrieval.graph_keeps_first``). Under a caller's weights, or
    its own ``graph_weight``, nothing is put back first."""
    index = engine.index
    plain = ids(index.search(KELP, 5, graph_weight=0.0))
    default = index.search_detailed(KELP, 5)
    assert plain[0] == "marine.md#0000" and default.graph_weight > 0
    assert ids(default.hits)[0] == plain[0] and "the first passage of BM25" in default.ranking
    assert all(a.score >= b.score for a, b in zip(default.hits, default.hits[1:]))
    given = ids(index.search(KELP, 5, graph_weight=default.graph_weight))
    assert given[0] != plain[0]  # the displacement the default prevents
    settings = index.settings
    try:
        index.settings = settings.model_copy(update={"graph_keeps_first": 0})
        assert ids(index.search(KELP, 5)) == given
        index.settings = settings.model_copy(update={"rerank": True})
        assert ids(index.search(KELP, 5))[0] == plain[0]
    finally:
        index.settings = settings
    # The memory query with hybrid_params is the caller's weighted RRF (no title is named here): scores descend.
    response = engine.query(MemoryQueryRequest(query_id="q", search_text=KELP, top_k=5,
                                               hybrid_params=HybridParams(dense_weight=0, sparse_weight=1)))
    scores = [r.rrf_score for r in response.results]
    assert scores == sorted(scores, reverse=True) and response.results[0].chunk_id != plain[0]


def test_the_head_put_back_is_the_order_without_the_walk_reranked_too(settings: StrataSettings,
                                                                     tmp_path: Path) -> None:
    """The passages put back first are the head of the order the search makes without the walk's list: BM25 and
    dense fused (not BM25's first alone), and with the lexical rerank on, reranked the same way."""
    from strata.engine import Engine
    from strata.pipeline import index_folder
    from retrieval.graph_fusion import GraphList
    from retrieval.ordering import Lists, Order, first_kept

    order = Order([3, 4, 0, 1, 2], {r: 1.0 / (i + 1) for i, r in enumerate([3, 4, 0, 1, 2])}, {}, "convex")
    lists = Lists([(0, 2.0), (1, 1.0)], [(1, 0.9), (0, 0.1)], 1.0, 1.0)
    kept = first_kept(order, [1], GraphList((3, 4), 1.0, ("Seed",)), lists)
    assert kept.rows == [1, 3, 4, 0, 2] and "BM25 and dense without the graph walk" in kept.ranking
    assert first_kept(order, [1], GraphList((), 0.0, ()), lists) is order  # no walk list: nothing to undo

    files = {**CORPUS, "a.md": "Sea grass survey: a survey of sea grass, grass of the sea, which we run.\n",
             "b.md": "A long report on coastal things, piers, boats, gulls, nets and tides asks which survey does "
                     "the verdant society run on sea grass each year.\n"}  # the question's words as a phrase
    question = "which survey does the Verdant Society run on sea grass"
    reranking = settings.model_copy(update={"retrieval": settings.retrieval.model_copy(update={"rerank": True})})
    index_folder(write_corpus(tmp_path / "rerank", files), reranking)
    engine = Engine(reranking)
    try:
        plain = ids(engine.index.search(question, 5, graph_weight=0.0))
        default = engine.index.search_detailed(question, 5)
        assert default.graph_weight > 0 and ids(default.hits)[0] == plain[0] == "b.md#0000"
    finally:
        engine.close()
