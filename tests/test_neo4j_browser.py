"""The local Neo4j server (scripts/neo4j) answers HTTP on 127.0.0.1:NEO4J_HTTP_PORT: the discovery document
points Neo4j Browser at the Bolt port, the browser's page is served at /browser/, and Strata's schema (its
uniqueness constraints) can be read over the same connector, as the browser reads it."""

from __future__ import annotations

import os

import httpx
import pytest

from core.settings import StoreSettings

pytestmark = pytest.mark.neo4j


@pytest.fixture(scope="module")
def http_base(neo4j_store_settings: StoreSettings) -> str:  # the fixture skips (or fails) without Neo4j
    return f"http://127.0.0.1:{os.environ.get('NEO4J_HTTP_PORT', '7474')}"


def test_discovery_points_at_bolt(http_base: str, neo4j_store_settings: StoreSettings) -> None:
    response = httpx.get(http_base + "/", headers={"Accept": "application/json"}, timeout=10)
    assert response.status_code == 200
    found = response.json()
    bolt_port = neo4j_store_settings.neo4j_uri.rsplit(":", 1)[-1]
    assert found["bolt_direct"] == f"bolt://127.0.0.1:{bolt_port}"
    assert found["neo4j_version"].startswith("5.26")


def test_browser_page_is_served(http_base: str) -> None:
    response = httpx.get(http_base + "/browser/", timeout=10, follow_redirects=True)
    assert response.status_code == 200
    assert "<title>Neo4j Browser</title>" in response.text


def test_schema_is_readable_over_http(http_base: str, neo4j_store_settings: StoreSettings) -> None:
    """What `:schema` / SHOW CONSTRAINTS shows in the browser: the ids of Strata's four node labels are unique."""
    auth = (neo4j_store_settings.neo4j_user, neo4j_store_settings.neo4j_password.get_secret_value())
    response = httpx.post(f"{http_base}/db/{neo4j_store_settings.neo4j_database}/tx/commit", auth=auth, timeout=30,
                          json={"statements": [{"statement": "SHOW CONSTRAINTS YIELD name, labelsOrTypes, properties, type"}]})
    assert response.status_code == 200
    body = response.json()
    assert body["errors"] == []
    rows = [dict(zip(body["results"][0]["columns"], r["row"])) for r in body["results"][0]["data"]]
    unique = {(r["labelsOrTypes"][0], tuple(r["properties"])) for r in rows if r["type"] == "UNIQUENESS"}
    assert {("Document", ("id",)), ("Chunk", ("id",)), ("Entity", ("id",)), ("Community", ("id",))} <= unique
    # Without the password the connector refuses: it is not an open door on the machine.
    assert httpx.post(f"{http_base}/db/neo4j/tx/commit", timeout=10,
                      json={"statements": [{"statement": "RETURN 1"}]}).status_code == 401
