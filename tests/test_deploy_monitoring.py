"""deploy/: the Prometheus scrape config and alert rules pass promtool (``check config``, ``check rules`` and the
rules' unit tests in alerts.test.yml), and every metric the alerts and the Grafana dashboard use is one that
``strata serve`` really exports."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from core.settings import StrataSettings
from strata.api import create_app
from strata.pipeline import index_folder

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
PROMTOOL = shutil.which("promtool")
METRIC = re.compile(r"\bstrata_[a-z0-9_]+\b")


def promtool(*args: str, cwd: Path) -> None:
    if PROMTOOL is None:
        pytest.skip("promtool is not installed (Debian package prometheus; `make system-deps` installs it)")
    done = subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_scrape_config_is_valid(tmp_path: Path) -> None:
    shutil.copytree(DEPLOY / "prometheus", tmp_path / "prometheus")
    (tmp_path / "prometheus" / "strata-api-key").write_text("a-key\n")  # the file the config names
    promtool("check", "config", "prometheus.yml", cwd=tmp_path / "prometheus")


def test_alert_rules_are_valid_and_their_unit_tests_pass() -> None:
    promtool("check", "rules", "alerts.yml", cwd=DEPLOY / "prometheus")
    promtool("test", "rules", "alerts.test.yml", cwd=DEPLOY / "prometheus")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """Every sample name /metrics shows after an index run and some traffic."""
    root = tmp_path_factory.mktemp("deploy")
    shutil.copytree(ROOT / "samples" / "infra-notes", root / "notes")
    settings = StrataSettings(data_dir=root / "data", extraction={"mode": "offline"})
    index_folder(root / "notes", settings)
    with TestClient(create_app(settings)) as c:
        c.post("/v1/memory/query", json={"query_id": "a", "search_text": "billing", "top_k": 2})
        text = c.get("/metrics").text
    return {s.name for f in text_string_to_metric_families(text) for s in f.samples}


def alert_rules() -> list[dict]:
    groups = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yml").read_text())["groups"]
    return [r for g in groups for r in g["rules"]]


def test_alerts_cover_what_the_issue_asks_and_use_exported_metrics(exported: set[str]) -> None:
    rules = alert_rules()
    names = {r["alert"] for r in rules}
    assert {"StrataHighErrorRate", "StrataHighLatencyP99", "StrataIndexStale", "StrataLedgerFailures"} <= names
    for rule in rules:
        assert rule["labels"]["severity"] in {"page", "ticket"} and rule["annotations"]["summary"]
        used = set(METRIC.findall(rule["expr"]))
        assert used and used <= exported, f"{rule['alert']} uses metrics /metrics does not show: {used - exported}"
    config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    (job,) = config["scrape_configs"]
    assert job["metrics_path"] == "/metrics" and config["rule_files"] == ["alerts.yml"]


def test_dashboard_is_well_formed_and_uses_exported_metrics(exported: set[str]) -> None:
    dash = json.loads((DEPLOY / "grafana" / "strata-dashboard.json").read_text())
    inputs = {f"${{{i['name']}}}" for i in dash["__inputs"]}
    panels = dash["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    queried: set[str] = set()
    for p in panels:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not mine & cells, f"panel {p['title']!r} overlaps another"
        cells |= mine
        if p["type"] == "row":
            continue
        assert p["datasource"]["uid"] in inputs and p["targets"]
        assert len({t["refId"] for t in p["targets"]}) == len(p["targets"])
        for t in p["targets"]:
            used = set(METRIC.findall(t["expr"]))
            assert used and used <= exported, f"{p['title']!r} uses metrics /metrics does not show: {used - exported}"
            queried |= used
    # the figures the issue names are all on the dashboard
    for name in ("strata_http_requests_total", "strata_http_request_duration_seconds_bucket",
                 "strata_http_requests_in_flight", "strata_http_rejected_total", "strata_query_cache_hits_total",
                 "strata_index_generation", "strata_index_generation_age_seconds", "strata_index_chunks",
                 "strata_embedder_info", "strata_index_run_stage_seconds", "strata_index_run_ledger_failures",
                 "strata_index_run_llm_cost_usd"):
        assert name in queried, name
