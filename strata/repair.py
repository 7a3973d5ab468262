"""Rebuilding a damaged embedded graph store from the folder: ``strata index FOLDER --replace-store``.

The store is the source of truth for documents, chunks, entities and relations, but all of it is derived from
the folder (LLM responses come back from the response cache, vectors from the vector cache). So a damaged
``graph.sqlite`` is renamed aside (kept for inspection, never deleted) under the workspace's run lock, and the
index run that follows finds an empty store and rebuilds everything from the folder (as ``--full`` does), so it
ends as a first index of the folder; the published generation keeps serving meanwhile.
"""

from __future__ import annotations

from pathlib import Path

from core.settings import StrataSettings
from core.sqlite_cache import set_aside
from strata.workspace import Workspace


def set_aside_store(settings: StrataSettings) -> Path | None:
    """Rename the embedded store's file aside; returns its new path (None when there is none)."""
    if settings.store.backend != "embedded":
        raise ValueError("--replace-store rebuilds the embedded store (graph.sqlite); for Neo4j, clear the database "
                         "or point STRATA_STORE__NEO4J_URI at an empty one and index again")
    ws = Workspace(Path(settings.data_dir))
    path = ws.root / "graph.sqlite"
    if not path.exists():
        return None
    with ws.lock():
        return set_aside(path)
