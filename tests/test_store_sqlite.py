from pathlib import Path

import pytest

from core.store.sqlite_store import SQLiteGraphStore
from tests.store_contract import StoreContract


class TestSQLiteStore(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path):
        s = SQLiteGraphStore(tmp_path / "graph.sqlite")
        yield s
        s.close()


def test_failed_batch_leaves_nothing(tmp_path: Path) -> None:
    from core.records import Chunk

    store = SQLiteGraphStore(tmp_path / "g.sqlite")
    # A chunk whose document does not exist violates the foreign key: the whole batch must roll back.
    from tests.store_contract import chunk, doc
    store.upsert_documents([doc("a")])
    with pytest.raises(Exception):
        store.upsert_chunks([chunk("a", 0), Chunk("x#0", "missing", 0, "t", 0, 1, 1, "x", "h", {})])
    assert store.all_chunks() == []
