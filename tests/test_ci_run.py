""".ci/run installs Java 17 and Maven from Debian when they are missing (Neo4j's launcher needs both), and leaves
the machine alone when they are there; then it builds the documentation site and runs `make test`, and a failed
build fails CI before the tests. The script is run from a copy of the project's layout with a PATH of stubs:
apt-get, make and the scripts it starts only record their arguments."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

TOOLS = ("dirname", "sed", "head")


def _stub(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def run_ci(tmp_path: Path, *, java: str | None, javac: bool, mvn: bool, uid: int = 0,
           failing_target: str | None = None) -> tuple[int, str, list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        os.symlink(shutil.which(tool), bin_dir / tool)
    log = tmp_path / "calls.log"
    _stub(bin_dir, "id", f"echo {uid}")
    _stub(bin_dir, "apt-get", f'echo "apt-get $*" >> {log}')
    _stub(bin_dir, "make", f'echo "make $*" >> {log}; [ "$*" != "{failing_target}" ] || exit 2')
    if java is not None:
        _stub(bin_dir, "java", f"echo 'openjdk version \"{java}\" 2025-04-15' >&2")
    if javac:
        _stub(bin_dir, "javac", "exit 0")
    if mvn:
        _stub(bin_dir, "mvn", "exit 0")
    project = tmp_path / "project"
    (project / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / ".ci" / "run", project / ".ci" / "run")
    (project / "scripts").mkdir()
    for script in (ROOT / "scripts").iterdir():  # whatever .ci/run starts besides the tests (a local LLM, ...)
        _stub(project / "scripts", script.name, f'echo "scripts/{script.name} $*" >> {log}')
    proc = subprocess.run([shutil.which("bash"), str(project / ".ci" / "run")], env={"PATH": str(bin_dir)},
                          capture_output=True, text=True, timeout=30)
    calls = log.read_text().splitlines() if log.exists() else []
    return proc.returncode, proc.stdout + proc.stderr, calls


def test_missing_java_and_maven_are_installed_from_debian_before_the_tests(tmp_path: Path) -> None:
    rc, out, calls = run_ci(tmp_path, java=None, javac=False, mvn=False)
    assert rc == 0, out
    installs = [c for c in calls if c.startswith("apt-get install")]
    assert len(installs) == 1 and "openjdk-17-jdk-headless" in installs[0].split() and "maven" in installs[0].split()
    assert calls.index("apt-get update -qq") < calls.index(installs[0]) < calls.index("make docs") \
        < calls.index("make test")


@pytest.mark.parametrize("java", ["11.0.22", "1.8.0_402"])
def test_a_java_older_than_17_is_replaced(tmp_path: Path, java: str) -> None:
    rc, out, calls = run_ci(tmp_path, java=java, javac=True, mvn=True)
    assert rc == 0, out
    assert [c.split()[-1] for c in calls if c.startswith("apt-get install")] == ["openjdk-17-jdk-headless"]


def test_nothing_is_installed_when_java_17_and_maven_are_there(tmp_path: Path) -> None:
    rc, out, calls = run_ci(tmp_path, java="17.0.15", javac=True, mvn=True)
    assert rc == 0, out
    assert [c for c in calls if not c.startswith("scripts/")] == ["make docs", "make test"]


def test_a_failed_docs_build_fails_ci_before_the_tests(tmp_path: Path) -> None:
    rc, out, calls = run_ci(tmp_path, java="17.0.15", javac=True, mvn=True, failing_target="docs")
    assert rc != 0
    assert calls == ["make docs"]


def test_not_root_names_the_command_to_run(tmp_path: Path) -> None:
    rc, out, calls = run_ci(tmp_path, java="17.0.15", javac=True, mvn=False, uid=1000)
    assert rc == 1 and "sudo apt-get install -y maven" in out
    assert calls == []
