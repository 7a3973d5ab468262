"""One contract suite for every GraphStore backend; subclassed once per backend with a ``store`` fixture."""

from __future__ import annotations


from core.records import Chunk, Community, Document, Entity, Finding, Relation, Report
from core.store.port import GraphStore

NASTY = ["O'Brien \"quoted\"", "`backtick` name", "{braces} and $dollar", "MATCH (n) DETACH DELETE n //",
         "RETURN 1; DROP", "数据库服务", "Ωμέγα", "Ёлка-сервис", "ключ\\n\\\\", "emoji 🚀"]


def doc(i: str, text: str = "text", h: str = "h") -> Document:
    return Document(i, f"{i}.txt", text, h, {"team": "core", "n": 1})


def chunk(doc_id: str, n: int, text: str = "some text") -> Chunk:
    return Chunk(f"{doc_id}#{n:04d}", doc_id, n, text, 0, len(text), 2, f"{doc_id}.txt", f"ch{n}", {"team": "core"})


class StoreContract:
    """Behaviour every backend must show."""

    store: GraphStore

    def seed(self, store: GraphStore) -> None:
        store.upsert_documents([doc("a"), doc("b")])
        store.upsert_chunks([chunk("a", 0), chunk("a", 1), chunk("b", 0)])
        store.upsert_entities([
            Entity("e1", "billing-service", "service", "handles invoices", ("a#0000", "b#0000")),
            Entity("e2", "HTTP 504", "error_code", "gateway timeout", ("a#0000",)),
            Entity("e3", "max_connections", "config_key", "pool size", ("a#0001",)),
            Entity("e4", "Redis", "database", "cache", ("b#0000",)),
        ])
        store.upsert_relations([
            Relation("r12", "e1", "e2", "billing-service returns HTTP 504", ("a#0000",)),
            Relation("r13", "e1", "e3", "billing-service sets max_connections", ("a#0001",)),
            Relation("r14", "e1", "e4", "billing-service caches in Redis", ("b#0000",)),
        ])

    def test_empty_graph(self, store: GraphStore) -> None:
        snap = store.read_graph()
        assert snap.entities == () and snap.relations == ()
        assert store.document_hashes() == {}
        assert store.communities() == [] and store.reports() == []
        assert store.all_chunks() == []
        assert store.counts()["entities"] == 0

    def test_upserts_are_idempotent_and_keep_provenance(self, store: GraphStore) -> None:
        self.seed(store)
        first = store.read_graph()
        self.seed(store)
        second = store.read_graph()
        assert first == second
        ents = {e.id: e for e in second.entities}
        assert ents["e1"].chunk_ids == ("a#0000", "b#0000")
        assert ents["e2"].description == "gateway timeout"
        rels = {r.id: r for r in second.relations}
        assert rels["r12"].chunk_ids == ("a#0000",) and rels["r12"].weight == 1.0
        assert store.counts() == {"documents": 2, "chunks": 3, "entities": 4, "relations": 3, "communities": 0, "reports": 0}

    def test_provenance_unions_across_upserts(self, store: GraphStore) -> None:
        self.seed(store)
        store.upsert_entities([Entity("e2", "HTTP 504", "error_code", "seen again", ("b#0000",))])
        store.upsert_relations([Relation("r12", "e1", "e2", "again", ("b#0000",))])
        snap = store.read_graph()
        e2 = next(e for e in snap.entities if e.id == "e2")
        assert e2.chunk_ids == ("a#0000", "b#0000")
        assert "gateway timeout" in e2.description and "seen again" in e2.description
        r12 = next(r for r in snap.relations if r.id == "r12")
        assert r12.chunk_ids == ("a#0000", "b#0000") and r12.weight == 2.0

    def test_delete_document_cascades(self, store: GraphStore) -> None:
        self.seed(store)
        store.replace_communities([Community("c0", 0, None, ("e1", "e2", "e3", "e4")),
                                   Community("c1", 1, "c0", ("e1", "e4"))])
        store.save_reports([Report("c0", 0, "t", "s", (Finding("f", ("a#0000",)),), 5.0, "fp", "offline", "x", "now"),
                            Report("c1", 1, "t1", "s1", (), 1.0, "fp1", "offline", "x", "now")])
        result = store.delete_document("b")
        assert result.chunks == 1
        assert result.entities_removed == 1  # Redis had no other source
        assert result.relations_removed == 1  # r14
        assert result.communities_marked == 2
        snap = store.read_graph()
        assert {e.id for e in snap.entities} == {"e1", "e2", "e3"}
        assert {r.id for r in snap.relations} == {"r12", "r13"}
        assert next(e for e in snap.entities if e.id == "e1").chunk_ids == ("a#0000",)
        assert set(store.document_hashes()) == {"a"}
        assert [c.id for c in store.all_chunks()] == ["a#0000", "a#0001"]
        assert all(r.stale for r in store.reports())

    def test_delete_unknown_document_is_a_no_op(self, store: GraphStore) -> None:
        self.seed(store)
        before = store.read_graph()
        result = store.delete_document("nope")
        assert result.chunks == 0 and store.read_graph() == before

    def test_text_is_stored_verbatim(self, store: GraphStore) -> None:
        store.upsert_documents([doc("d/üñí 'q' `b` {x}")])
        store.upsert_chunks([chunk("d/üñí 'q' `b` {x}", 0, text=" | ".join(NASTY))])
        ents = [Entity(f"n{i}", name, "name", name + " desc", ("d/üñí 'q' `b` {x}#0000",)) for i, name in enumerate(NASTY)]
        store.upsert_entities(ents)
        snap = store.read_graph()
        assert sorted(e.name for e in snap.entities) == sorted(NASTY)
        assert {e.description for e in snap.entities} == {n + " desc" for n in NASTY}
        assert store.get_chunks(["d/üñí 'q' `b` {x}#0000"])[0].text == " | ".join(NASTY)

    def test_large_batches(self, store: GraphStore) -> None:
        n = 3000
        store.upsert_documents([doc("big")])
        store.upsert_chunks([chunk("big", i) for i in range(10)])
        store.upsert_entities([Entity(f"e{i:05d}", f"name {i}", "name", "", (f"big#{i % 10:04d}",)) for i in range(n)])
        store.upsert_relations([Relation(f"r{i:05d}", f"e{i:05d}", f"e{(i + 1) % n:05d}", "next", (f"big#{i % 10:04d}",))
                                for i in range(n)])
        snap = store.read_graph()
        assert len(snap.entities) == n and len(snap.relations) == n

    def test_many_relations_among_shared_entities(self, store: GraphStore) -> None:
        """Dense writes among few entities (a backend may write them concurrently): every relation lands once,
        and a relation repeated later in the same call unions its provenance."""
        import random

        rng = random.Random(5)
        store.upsert_documents([doc("dense")])
        store.upsert_chunks([chunk("dense", i) for i in range(8)])
        store.upsert_entities([Entity(f"d{i:03d}", f"dense {i}", "name", "", ("dense#0000",)) for i in range(60)]
                              + [Entity("d000", "dense 0", "name", "seen again", ("dense#0001",))])
        again = next(e for e in store.read_graph().entities if e.id == "d000")
        assert again.chunk_ids == ("dense#0000", "dense#0001") and again.description == "seen again"
        rels, expected = [], {}
        for i in range(1500):
            a, b = rng.sample(range(60), 2)
            cid = f"dense#{rng.randrange(8):04d}"
            rels.append(Relation(f"x{i:05d}", f"d{a:03d}", f"d{b:03d}", "linked", (cid,)))
            expected[f"x{i:05d}"] = (f"d{a:03d}", f"d{b:03d}", {cid})
        for i in range(0, 1500, 7):  # repeats with one more chunk each
            src, dst, cids = expected[f"x{i:05d}"]
            extra = f"dense#{(int(sorted(cids)[0][-1]) + 1) % 8:04d}"
            rels.append(Relation(f"x{i:05d}", src, dst, "linked", (extra,)))
            cids.add(extra)
        store.upsert_relations(rels)
        got = {r.id: (r.source_id, r.target_id, set(r.chunk_ids)) for r in store.read_graph().relations}
        assert got == expected

    def test_set_attributes_changes_only_what_with_attributes_says(self, store: GraphStore) -> None:
        """The merge stage does not read the graph again after setting attributes: it applies them to the graph
        it holds (:func:`strata.stages.with_attributes`), which must be what the store then holds."""
        from strata.stages import with_attributes

        self.seed(store)
        before = store.read_graph()
        entities = [Entity("e1", NASTY[0], "team", NASTY[6], ()), Entity("e4", "Redis", "database", "", ("x#0000",))]
        relations = [Relation("r13", "e1", "e3", NASTY[2], ())]
        store.set_attributes(entities, relations)
        assert store.read_graph() == with_attributes(before, entities, relations) != before

    def test_communities_and_reports_round_trip(self, store: GraphStore) -> None:
        self.seed(store)
        comms = [Community("c0", 0, None, ("e1", "e2", "e3", "e4")), Community("c1", 1, "c0", ("e1", "e4"))]
        store.replace_communities(comms)
        assert store.communities() == comms
        rep = Report("c1", 1, "Billing", "sum", (Finding("f {x} 'y'", ("b#0000",)), Finding("A quoted\nsentence.", ("b#0001",), 4, 22)), 3.5, "fp", "offline", "extractive",
                     "2026-01-01T00:00:00+00:00", inputs='{"entities": {}}')
        store.save_reports([rep])
        assert store.reports() == [rep] and store.reports()[0].inputs == '{"entities": {}}'
        store.replace_communities([Community("c0", 0, None, ("e1", "e2"))])
        assert [c.id for c in store.communities()] == ["c0"]
        assert store.reports() == [rep]  # kept for the drift report after its community is gone
        store.replace_communities([Community("c1", 0, None, ("e1", "e2"))])  # an id can come back
        assert [c.id for c in store.communities()] == ["c1"] and store.reports() == [rep]
        store.delete_reports(["c1"])
        assert store.reports() == [] and [c.id for c in store.communities()] == ["c1"]
        store.save_reports([rep])
        store.replace_communities([])
        store.delete_reports(["c1"])
        assert store.reports() == [] and store.communities() == []

    def test_clear(self, store: GraphStore) -> None:
        self.seed(store)
        store.clear()
        assert store.counts()["documents"] == 0 and store.read_graph().entities == ()
