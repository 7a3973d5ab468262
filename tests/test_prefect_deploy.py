"""prefect.yaml as shipped, from a fresh copy of the project: a local Prefect server, a process work pool,
`prefect deploy --all`, one run of the index deployment with its default parameters picked up by a worker
(`--run-once`), and the run completes with a published index generation in the project's workspace and the
stages linked in the run graph. Also: parameters are checked with a message naming the parameter."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from tests.conftest import ROOT

PREFECT = str(Path(sys.executable).with_name("prefect"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _fresh_clone(dest: Path) -> Path:
    """The files a clone has that a deployment needs: prefect.yaml, flows/ and the sample corpus."""
    dest.mkdir()
    shutil.copy(ROOT / "prefect.yaml", dest / "prefect.yaml")
    shutil.copytree(ROOT / "flows", dest / "flows", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "samples" / "infra-notes", dest / "samples" / "infra-notes")
    return dest


def _env(home: Path, api: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "STRATA_"))}
    env.update(PREFECT_HOME=str(home), PREFECT_API_URL=api, PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PREFECT_LOGGING_LEVEL="WARNING", STRATA_COMPUTE__BLAS_THREADS="1", PYTHONUNBUFFERED="1")
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> str:
    done = subprocess.run([PREFECT, "--no-prompt", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"prefect {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_prefect_yaml_defaults_need_no_environment() -> None:
    """No `{{ $VAR }}` that renders empty when unset; default folders exist in the project; the pool is one."""
    text = (ROOT / "prefect.yaml").read_text()
    assert not re.search(r"\{\{\s*\$", text)
    spec = yaml.safe_load(text)
    assert {d["work_pool"]["name"] for d in spec["deployments"]} == {"strata"}
    for dep in spec["deployments"]:
        folder = (dep.get("parameters") or {}).get("folder")
        if folder is not None:
            assert not Path(folder).is_absolute() and (ROOT / folder).is_dir(), (dep["name"], folder)


def test_flow_parameters_are_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from flows.drift import drift_report_flow
    from flows.index import index_flow
    from flows.params import FlowParameterError
    from flows.reindex import reindex_flow

    monkeypatch.chdir(tmp_path)
    with pytest.raises(FlowParameterError, match=rf"parameter 'folder': folder corpus \(relative to the working "
                                                 rf"directory {re.escape(str(tmp_path))}\) does not exist"):
        index_flow.fn("corpus", str(tmp_path / "ws"))
    (tmp_path / "a.md").write_text("x")
    with pytest.raises(FlowParameterError, match="parameter 'folder': a.md .* is a file, not a folder"):
        reindex_flow.fn("a.md", str(tmp_path / "ws"))
    with pytest.raises(FlowParameterError, match="parameter 'report_policy'"):
        reindex_flow.fn(str(tmp_path), str(tmp_path / "ws"), report_policy="sometimes")
    with pytest.raises(FlowParameterError, match=rf"parameter 'data_dir': no published index in "
                                                 rf"{re.escape(str(tmp_path / 'ws'))}; run the index"):
        drift_report_flow.fn(str(tmp_path / "ws"))
    assert not (tmp_path / "ws").exists()


@pytest.mark.slow
def test_deploy_and_run_on_a_worker(tmp_path: Path) -> None:
    started = time.monotonic()
    project = _fresh_clone(tmp_path / "project")
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = _env(tmp_path / "prefect-home", api)
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen([PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port), "--no-ui",
                               "--no-scheduler", "--no-late-runs", "--analytics-off"], cwd=tmp_path, env=env, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    try:
        with httpx.Client(base_url=api, timeout=10) as client:
            deadline = time.monotonic() + 60
            while True:
                assert server.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
                try:
                    if client.get("/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "the Prefect server did not start in 60 s"
                time.sleep(0.3)

            _run(["work-pool", "create", "strata", "--type", "process"], project, env, 60)
            out = _run(["deploy", "--all"], project, env, 120)
            assert "full-index" in out and "nightly-reindex" in out and "weekly-drift-report" in out
            dep = client.get("/deployments/name/strata-index/full-index").json()
            assert dep["parameters"] == {"folder": "samples/infra-notes"}
            pull = dep["pull_steps"][0]["prefect.deployments.steps.set_working_directory"]["directory"]
            assert Path(pull).resolve() == project.resolve()
            names = {d["name"]: d for d in client.post("/deployments/filter", json={}).json()}
            assert {"nightly-reindex", "weekly-drift-report", "full-index"} <= set(names)
            assert names["nightly-reindex"]["schedules"][0]["schedule"]["cron"] == "0 2 * * *"

            run = client.post(f"/deployments/{dep['id']}/create_flow_run", json={}).json()
            assert run["state"]["type"] == "SCHEDULED"
            worker = subprocess.run([PREFECT, "--no-prompt", "worker", "start", "--pool", "strata", "--run-once"],
                                    cwd=tmp_path, env=env, capture_output=True, text=True, timeout=150)
            state = client.get(f"/flow_runs/{run['id']}").json()["state"]
            assert state["type"] == "COMPLETED", (state, worker.stdout[-4000:], worker.stderr[-4000:])

            # The run used the deployment's defaults, in the project folder: the sample corpus, ./.strata.
            current = project / ".strata" / "CURRENT"
            assert current.is_file() and current.read_text().strip().isdigit()
            assert (project / ".strata" / "generations").is_dir()

            # Every stage after the first is linked to the one before it in the run graph.
            # (task runs are recorded from their events by a server service, a moment after the run)
            deadline = time.monotonic() + 20
            while True:
                tasks = client.post("/task_runs/filter", json={"flow_runs": {"id": {"any_": [run["id"]]}}}).json()
                if (len(tasks) >= 7 and {t["state"]["type"] for t in tasks} == {"COMPLETED"}) \
                        or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            by_id = {t["id"]: t for t in tasks}
            assert {t["state"]["type"] for t in tasks} == {"COMPLETED"}

            def upstream(task: dict) -> set[str]:
                return {by_id[i["id"]]["name"].rsplit("-", 1)[0] for inputs in task["task_inputs"].values() for i in inputs
                        if i.get("input_type") == "task_run" and i["id"] in by_id}

            stage = {t["name"].rsplit("-", 1)[0]: t for t in tasks}
            for later, earlier in [("extract-batch", "remove-changed-and-deleted"), ("merge", "extract-batch"),
                                   ("communities", "merge"), ("reports", "communities"),
                                   ("chunk-index", "reports"), ("publish-generation", "chunk-index")]:
                assert earlier in upstream(stage[later]), (later, upstream(stage[later]))
    finally:
        os.killpg(server.pid, 15)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, 9)
        log.close()
    assert time.monotonic() - started < 150
