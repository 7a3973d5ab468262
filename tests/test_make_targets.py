"""`make test` is what CI runs: it requires every part (Neo4j, Chromium, the local LLM, no skips), points the
real-model tests at the URL `scripts/llm env` prints, and stops what it started; `make test-quick` starts nothing
and requires nothing; `make docs` installs the docs extra and builds strictly.

The Makefile runs in a copy of the project's layout whose virtualenv and scripts are stubs that record their
calls (and, for pytest, the STRATA_* variables it was given), so no package is installed and no server started.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")

LLM_URL = "http://127.0.0.1:9311/v1"  # not the default port: the URL must come from `scripts/llm env`
REQUIRED = {"STRATA_REQUIRE_NEO4J": "1", "STRATA_REQUIRE_BROWSER": "1", "STRATA_REQUIRE_LLM": "1",
            "STRATA_FORBID_SKIPS": "1"}


def _stub(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def run_make(tmp_path: Path, target: str, *, llm_running: bool = False, llm_start_rc: int = 0,
             neo4j_start_rc: int = 0, pytest_rc: int = 0, pytest_interrupts: bool = False,
             ) -> tuple[int, str, list[str], dict[str, str]]:
    """Run ``make target`` in a stub project: (exit code, output, recorded calls, pytest's STRATA_* variables).
    With ``pytest_interrupts`` pytest sends SIGTERM to the shell that runs it, as an interrupted run would."""
    interrupt = "kill -TERM $PPID; " if pytest_interrupts else ""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "Makefile", project / "Makefile")
    log, env_file = tmp_path / "calls.log", tmp_path / "pytest.env"
    _stub(project / ".venv" / "bin" / "python",
          f'echo "python $*" >> {log}\n'
          f'case "$*" in *pytest*) env | grep "^STRATA_" > {env_file}; {interrupt}exit {pytest_rc};; esac')
    _stub(project / ".venv" / "bin" / "pip", f'echo "pip $*" >> {log}')
    _stub(project / "scripts" / "llm",
          f'echo "llm $1" >> {log}\n'
          f'case "$1" in\n'
          f'  status) exit {0 if llm_running else 1};;\n'
          f'  start) exit {llm_start_rc};;\n'
          f'  env) echo STRATA_LLM__BASE_URL={LLM_URL}; echo STRATA_LLM__MODEL=qwen2.5-coder-0.5b;;\n'
          f'esac')
    _stub(project / "scripts" / "neo4j", f'echo "neo4j $1" >> {log}\n[ "$1" != start ] || exit {neo4j_start_rc}')
    tools = tmp_path / "tools"
    for name in ("chromium", "docker-compose", "promtool"):  # make system-deps finds them and installs nothing
        _stub(tools / name, "exit 0")
    _stub(tools / "npm", f'echo "npm $*" >> {log}')  # the MCP inspector's packages (install-test)
    proc = subprocess.run([shutil.which("make"), "--no-print-directory", target], cwd=project,
                          env={"PATH": f"{tools}:/usr/bin:/bin"}, capture_output=True, text=True, timeout=60)
    calls = log.read_text().splitlines() if log.exists() else []
    seen = dict(line.split("=", 1) for line in env_file.read_text().splitlines()) if env_file.exists() else {}
    return proc.returncode, proc.stdout + proc.stderr, calls, seen


def test_make_test_requires_every_part_and_runs_against_the_llm_it_started(tmp_path: Path) -> None:
    rc, out, calls, seen = run_make(tmp_path, "test")
    assert rc == 0, out
    assert {k: seen.get(k) for k in REQUIRED} == REQUIRED
    assert seen["STRATA_TEST_LLM_URL"] == LLM_URL
    flow = [c for c in calls if c.startswith(("llm", "neo4j", "python -m pytest"))]
    assert flow == ["llm status", "llm start", "llm env", "neo4j start", "python -m pytest -q", "neo4j stop",
                    "llm stop"]


def test_make_test_fails_when_the_tests_fail_and_still_stops_what_it_started(tmp_path: Path) -> None:
    rc, out, calls, _ = run_make(tmp_path, "test", pytest_rc=1)
    assert rc != 0
    assert calls[-2:] == ["neo4j stop", "llm stop"]


def test_an_interrupted_make_test_stops_what_it_started(tmp_path: Path) -> None:
    rc, out, calls, _ = run_make(tmp_path, "test", pytest_interrupts=True)
    assert rc != 0
    assert calls[-2:] == ["neo4j stop", "llm stop"]


def test_make_test_uses_a_running_llm_server_and_leaves_it_running(tmp_path: Path) -> None:
    rc, out, calls, seen = run_make(tmp_path, "test", llm_running=True)
    assert rc == 0, out
    assert "llm start" not in calls and "llm stop" not in calls
    assert seen["STRATA_TEST_LLM_URL"] == LLM_URL


def test_make_test_names_the_llm_server_when_it_cannot_start(tmp_path: Path) -> None:
    rc, out, calls, seen = run_make(tmp_path, "test", llm_start_rc=1)
    assert rc != 0
    assert "local LLM server did not start (scripts/llm start" in out and "make test-quick" in out
    assert not seen and "neo4j start" not in calls


def test_make_test_names_neo4j_when_it_cannot_start_and_stops_the_llm(tmp_path: Path) -> None:
    rc, out, calls, seen = run_make(tmp_path, "test", neo4j_start_rc=1)
    assert rc != 0
    assert "Neo4j did not start (scripts/neo4j start" in out
    assert not seen and calls[-1] == "llm stop"


def test_make_test_quick_starts_nothing_and_requires_nothing(tmp_path: Path) -> None:
    rc, out, calls, seen = run_make(tmp_path, "test-quick")
    assert rc == 0, out
    assert "python -m pytest -q" in calls
    assert not [c for c in calls if c.startswith(("llm", "neo4j"))]
    assert not set(seen) & {*REQUIRED, "STRATA_TEST_LLM_URL"}
    assert "skip" in out


def test_make_docs_installs_the_docs_extra_and_builds_strictly(tmp_path: Path) -> None:
    rc, out, calls, _ = run_make(tmp_path, "docs")
    assert rc == 0, out
    assert "pip install --quiet -e .[docs]" in calls
    assert calls[-1] == "python -m mkdocs build --strict"
