"""The contract suite against the real Neo4j server (scripts/neo4j start), plus its fault handling."""

import pytest

from core.settings import StoreSettings
from core.store.neo4j_store import Neo4jGraphStore
from core.store.port import StoreUnavailableError
from tests.store_contract import StoreContract

pytestmark = pytest.mark.neo4j


class TestNeo4jStore(StoreContract):
    @pytest.fixture
    def store(self, neo4j_store_settings: StoreSettings):
        s = Neo4jGraphStore.connect(neo4j_store_settings)
        s.batch_size = 100  # small batches, so the larger tests take the concurrent relation writers
        s.clear()
        yield s
        s.clear()
        s.close()


def test_concurrent_relation_rounds_never_share_a_bucket() -> None:
    from core.store.neo4j_store import disjoint_rounds

    for buckets in (2, 4, 8):
        rounds = disjoint_rounds(buckets)
        pairs = [p for r in rounds for p in r]
        assert sorted(pairs) == [(a, b) for a in range(buckets) for b in range(a, buckets)]
        for r in rounds:
            used = [x for a, b in r for x in {a, b}]
            assert len(used) == len(set(used))


def test_wrong_password_names_the_uri(neo4j_store_settings: StoreSettings) -> None:
    bad = StoreSettings(**{**neo4j_store_settings.model_dump(), "neo4j_password": "definitely-wrong"})
    with pytest.raises(StoreUnavailableError, match=bad.neo4j_uri.replace(".", r"\.")):
        Neo4jGraphStore.connect(bad)


def test_server_down_names_the_uri() -> None:
    down = StoreSettings(backend="neo4j", neo4j_uri="bolt://127.0.0.1:1", connection_timeout_s=2)
    with pytest.raises(StoreUnavailableError, match="bolt://127.0.0.1:1"):
        Neo4jGraphStore.connect(down)


def test_failed_batch_commits_nothing(neo4j_store_settings: StoreSettings) -> None:
    from core.store.port import StoreError
    from tests.store_contract import doc

    store = Neo4jGraphStore.connect(neo4j_store_settings)
    store.clear()
    try:
        store.upsert_documents([doc("ok")])
        # A map is not a valid property value: the batch with the good row fails as a whole.
        from core.store import cypher

        with pytest.raises(StoreError):
            store._write_rows(cypher.UPSERT_DOCUMENTS, [{"id": "good", "source": "s", "content_hash": "h", "metadata": "{}"},
                                                        {"id": "bad", "source": {"nested": 1}, "content_hash": "h", "metadata": "{}"}])
        assert set(store.document_hashes()) == {"ok"}
    finally:
        store.clear()
        store.close()


def test_index_and_ask_on_neo4j(neo4j_store_settings: StoreSettings, tmp_path) -> None:
    """The CLI's pipeline works unchanged on the Neo4j backend."""
    from strata.engine import Engine
    from strata.pipeline import index_folder
    from core.settings import StrataSettings

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("The billing-service returned HTTP 504 when max_connections was reached on PostgreSQL.\n")
    (folder / "b.md").write_text("The search-api caches results in Redis. Redis evicts keys under memory pressure.\n")
    settings = StrataSettings(data_dir=tmp_path / "ws", store=neo4j_store_settings, extraction={"mode": "offline"})
    store = Neo4jGraphStore.connect(neo4j_store_settings)
    store.clear()
    try:
        run = index_folder(folder, settings, store=store)
        assert run.store == "neo4j" and run.entities > 0
        engine = Engine(settings)
        answer = engine.ask("What happened with HTTP 504?")
        assert answer.citations[0].chunk_id.startswith("a.md#")
        (folder / "b.md").unlink()
        run2 = index_folder(folder, settings, store=store)
        assert run2.deleted == 1
        assert all(not e.name.startswith("Redis") for e in store.read_graph().entities)
    finally:
        store.clear()
        store.close()
