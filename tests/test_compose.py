"""docker-compose.yml is valid and wires Neo4j the way Strata's settings expect (checked offline)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import yaml

from tests.conftest import ROOT


def test_compose_file_declares_neo4j_for_strata() -> None:
    spec = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    neo4j = spec["services"]["neo4j"]
    assert neo4j["image"].startswith("neo4j:5.26")
    assert {"7474:7474", "7687:7687"} <= set(neo4j["ports"])
    assert "NEO4J_AUTH" in neo4j["environment"] and "healthcheck" in neo4j
    assert set(spec["volumes"]) == {"neo4j-data", "neo4j-logs"}


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="docker-compose (Debian's, offline validator) not installed")
def test_compose_config_accepts_the_file() -> None:
    env = {**os.environ, "NEO4J_PASSWORD": "example-password"}
    ok = subprocess.run(["docker-compose", "-f", str(ROOT / "docker-compose.yml"), "config", "-q"], env=env,
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    env.pop("NEO4J_PASSWORD")
    missing = subprocess.run(["docker-compose", "-f", str(ROOT / "docker-compose.yml"), "config"], env=env,
                             capture_output=True, text=True)
    assert "NEO4J_PASSWORD" in missing.stdout + missing.stderr
