"""The graph-store port and its backends (embedded SQLite and Neo4j)."""

from core.store.port import GraphStore, StoreError, StoreUnavailableError

__all__ = ["GraphStore", "StoreError", "StoreUnavailableError", "open_store"]


def open_store(settings, data_dir=None) -> GraphStore:  # type: ignore[no-untyped-def]
    """Open the backend chosen by ``settings`` (a :class:`StrataSettings`)."""
    from pathlib import Path

    if settings.store.backend == "neo4j":
        from core.store.neo4j_store import Neo4jGraphStore

        return Neo4jGraphStore.connect(settings.store)
    from core.store.sqlite_store import SQLiteGraphStore

    root = Path(data_dir or settings.data_dir)
    root.mkdir(parents=True, exist_ok=True)
    return SQLiteGraphStore(root / "graph.sqlite")
