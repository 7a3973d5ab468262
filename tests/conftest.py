"""Shared fixtures: paths to the shared evaluation data, settings in a temporary workspace, Neo4j access."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.settings import StoreSettings, StrataSettings

ROOT = Path(__file__).resolve().parents[1]
# Most tests use the fast deterministic hashing embedder; tests of MiniLM construct it explicitly.
os.environ.setdefault("STRATA_RETRIEVAL__EMBEDDER", "hashing")
# Prefect's test server would try to send usage telemetry to a host outside this machine.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
SHARED_DATA = Path(os.environ.get("STRATA_SHARED_DATA", ROOT.parent / "shared" / "data"))


def shared(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared evaluation data not found at {path}")
    return path


@pytest.fixture
def settings(tmp_path: Path) -> StrataSettings:
    return StrataSettings(data_dir=tmp_path / "ws", extraction={"mode": "offline"})


def ask_offline(folder: Path, data_dir: Path, question: str, mode: str | None = None):  # type: ignore[no-untyped-def]
    """Index ``folder`` offline into ``data_dir`` and answer ``question`` there (strata.engine's Answer); ``mode``
    ("local" or "global") skips the router."""
    from strata.engine import Engine
    from strata.pipeline import index_folder

    settings = StrataSettings(data_dir=data_dir, extraction={"mode": "offline"})
    index_folder(folder, settings)
    engine = Engine(settings)
    try:
        return engine.ask(question, mode=mode)  # type: ignore[arg-type]
    finally:
        engine.close()


def neo4j_settings() -> StoreSettings:
    return StoreSettings(
        backend="neo4j",
        neo4j_uri=os.environ.get("STRATA_STORE__NEO4J_URI", f"bolt://127.0.0.1:{os.environ.get('NEO4J_PORT', '7687')}"),
        neo4j_password=os.environ.get("STRATA_STORE__NEO4J_PASSWORD", os.environ.get("NEO4J_PASSWORD", "strata-dev-password")),
        batch_size=500,
    )


@pytest.fixture(scope="session")
def neo4j_store_settings() -> StoreSettings:
    from core.store.neo4j_store import Neo4jGraphStore
    from core.store.port import StoreUnavailableError

    s = neo4j_settings()
    try:
        Neo4jGraphStore.connect(s).close()
    except StoreUnavailableError as exc:
        if os.environ.get("STRATA_REQUIRE_NEO4J") == "1":
            pytest.fail(f"Neo4j is required (STRATA_REQUIRE_NEO4J=1) but unavailable: {exc}")
        pytest.skip(f"Neo4j not running (start it with scripts/neo4j start): {exc}")
    return s


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    """With STRATA_FORBID_SKIPS=1 (CI, where Neo4j, the shared data and Chromium are all present) a skipped test
    is reported as failed: nothing may skip silently there."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.skipped and not hasattr(report, "wasxfail") and os.environ.get("STRATA_FORBID_SKIPS") == "1":
        report.outcome = "failed"
        report.longrepr = f"skipped in a run that forbids skips (STRATA_FORBID_SKIPS=1): {report.longrepr}"


def in_own_process(test):  # type: ignore[no-untyped-def]
    """Run the decorated test in a pytest process of its own. For tests of process-wide state that earlier tests
    in the same process may have changed and that no test can reset (the BLAS libraries' thread counts): the
    test body runs in the child, and its failure, with its output, fails the test here."""
    import functools
    import subprocess
    import sys

    @functools.wraps(test)
    def run(*args, **kwargs):  # type: ignore[no-untyped-def]
        node = os.environ["PYTEST_CURRENT_TEST"].rsplit(" (", 1)[0]
        if os.environ.get("STRATA_TEST_OWN_PROCESS") == node:
            return test(*args, **kwargs)
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", node], cwd=ROOT,
                              env={**os.environ, "STRATA_TEST_OWN_PROCESS": node}, capture_output=True,
                              text=True, timeout=600)
        if done.returncode != 0 or "1 passed" not in done.stdout:
            pytest.fail(f"{node} failed in a process of its own (exit {done.returncode}):\n"
                        f"{done.stdout[-6000:]}\n{done.stderr[-2000:]}", pytrace=False)

    return run
