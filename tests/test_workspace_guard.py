"""A workspace knows its folders: indexing another folder into it is refused with one line naming both (nothing
stored is touched) unless --add (both indexed, every document of each kept) or --replace (what a plain run did
before: the other folder's documents deleted); `strata reindex` with no folder reindexes the recorded ones; a
workspace from before the record is read as its last run's folder; --workers goes to an injected runner; a busy
workspace says so in one sentence."""

from __future__ import annotations

import json
import pkgutil
import shutil
import tomllib
from pathlib import Path

import pytest

from core.settings import StrataSettings
from core.store import open_store
from strata.cli import main
from strata.workspace import Workspace
from tests.conftest import ROOT


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def stored_ids(data: Path) -> set[str]:
    store = open_store(StrataSettings(data_dir=data, extraction={"mode": "offline"}))
    try:
        return set(store.document_hashes())
    finally:
        store.close()


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, Path, Path]:
    a = tmp_path / "infra"
    shutil.copytree(ROOT / "samples" / "infra-notes", a)
    b = tmp_path / "handbook"
    b.mkdir()
    (b / "index.md").write_text("The on-call handbook says the pager-service escalates after 15 minutes.\n")
    (b / "rota.md").write_text("Sam Rivera owns the pager-service rota in March.\n")
    data = tmp_path / "ws"
    assert main(["index", str(a), "--data-dir", str(data)]) == 0
    return a, b, data


def test_another_folder_is_refused_naming_both(two, capsys) -> None:
    a, b, data = two
    before = stored_ids(data)
    generation = Workspace(data).current_number()
    code, _, err = run(["index", str(b), "--data-dir", str(data)], capsys)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1, err
    assert str(a.resolve()) in lines[0] and str(b.resolve()) in lines[0]
    assert "--add" in lines[0] and "--replace" in lines[0]
    assert stored_ids(data) == before and len(before) == 6
    assert Workspace(data).current_number() == generation
    code, _, err = run(["reindex", str(b), "--data-dir", str(data)], capsys)  # reindex is guarded too
    assert code == 2 and "--add" in err and stored_ids(data) == before


def test_add_keeps_both_folders(two, capsys) -> None:
    a, b, data = two
    code, out, _ = run(["index", str(b), "--add", "--json", "--data-dir", str(data)], capsys)
    assert code == 0 and json.loads(out)["new"] == 2 and json.loads(out)["deleted"] == 0
    ids = stored_ids(data)
    assert len(ids) == 8 and {"handbook/index.md", "handbook/rota.md"} <= ids and "ledger-service.md" in ids
    # Either folder named again, or none with reindex: both are loaded, nothing is deleted.
    for args in (["index", str(a)], ["index", str(b)], ["reindex"]):
        code, out, _ = run([*args, "--json", "--data-dir", str(data)], capsys)
        summary = json.loads(out)
        assert code == 0 and summary["unchanged"] == 8 and summary["deleted"] == 0, (args, summary)
    (b / "rota.md").unlink()
    code, out, _ = run(["reindex", "--json", "--data-dir", str(data)], capsys)
    assert code == 0 and json.loads(out)["deleted"] == 1 and "handbook/rota.md" not in stored_ids(data)


def test_replace_is_the_old_behaviour(two, capsys) -> None:
    _, b, data = two
    code, out, _ = run(["index", str(b), "--replace", "--json", "--data-dir", str(data)], capsys)
    summary = json.loads(out)
    assert code == 0 and summary["deleted"] == 6 and summary["new"] == 2
    assert stored_ids(data) == {"index.md", "rota.md"}
    code, out, _ = run(["reindex", "--json", "--data-dir", str(data)], capsys)
    assert code == 0 and json.loads(out)["unchanged"] == 2


def test_add_and_replace_exclude_each_other(two, capsys) -> None:
    _, b, data = two
    code, _, err = run(["index", str(b), "--add", "--replace", "--data-dir", str(data)], capsys)
    assert code == 2 and "not allowed with argument --add" in err and len(stored_ids(data)) == 6


def test_workspace_from_before_the_record(two, capsys) -> None:
    """No folders.json (a workspace made before it existed): the last run's folder stands for it."""
    a, b, data = two
    (data / "folders.json").unlink()
    code, _, err = run(["index", str(b), "--data-dir", str(data)], capsys)
    assert code == 2 and str(a.resolve()) in err and len(stored_ids(data)) == 6
    assert run(["index", str(a), "--data-dir", str(data)], capsys)[0] == 0
    assert json.loads((data / "folders.json").read_text())["folders"] == [{"path": str(a.resolve()), "prefix": ""}]


def test_reindex_without_folder_needs_a_record(tmp_path: Path, capsys) -> None:
    code, _, err = run(["reindex", "--data-dir", str(tmp_path / "ws")], capsys)
    assert code == 2 and "records no folder" in err and len([ln for ln in err.splitlines() if ln.strip()]) == 1


def test_nightly_deployment_takes_the_folder_from_the_workspace(two) -> None:
    """prefect.yaml's scheduled reindex names no folder; the flow then needs one recorded, or says so."""
    import yaml

    from flows.params import FlowParameterError, checked_folder
    from flows.reindex import reindex_flow

    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    nightly = next(d for d in spec["deployments"] if d["name"] == "nightly-reindex")
    assert "folder" not in (nightly.get("parameters") or {})
    a, b, data = two
    assert checked_folder("folder", None, data) is None  # the recorded folder is used
    with pytest.raises(FlowParameterError, match=r"parameter 'folder': the workspace .* records no folder yet"):
        reindex_flow.fn(None, str(data.parent / "fresh-ws"))
    with pytest.raises(FlowParameterError,
                       match=r"parameter 'folder': the workspace .* indexes .*infra.*other_folder='add'"):
        reindex_flow.fn(str(b), str(data))
    with pytest.raises(FlowParameterError, match="parameter 'other_folder'"):
        reindex_flow.fn(str(b), str(data), other_folder="merge")


def test_workers_use_the_injected_runner(two, capsys) -> None:
    a, _, data = two
    calls = []

    def runner(folder, data_dir, report_policy, prune, workers, full=False, other_folder="refuse"):  # type: ignore[no-untyped-def]
        calls.append((folder, data_dir, report_policy, prune, workers, full, other_folder))
        return {"source": folder, "mode": "offline", "store": "embedded", "embedder": "hashing", "documents": 6,
                "unchanged": 6, "generation": 1}

    code = main(["index", str(a), "--workers", "2", "--json", "--data-dir", str(data)], distributed_runner=runner)
    assert code == 0 and calls == [(str(a), str(data), "changed", True, 2, False, "refuse")]
    assert json.loads(capsys.readouterr().out)["unchanged"] == 6
    # Without one injected, the project's declared runner is the Prefect flow (an entry point, not an import).
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["strata.index_runners"]
    from flows.index import run_flow

    assert pkgutil.resolve_name(declared["distributed"]) is run_flow
    cli_sources = "".join((ROOT / "strata" / name).read_text() for name in ("cli.py", "cli_index.py"))
    assert "import flows" not in cli_sources and "from flows" not in cli_sources


def test_busy_workspace_is_one_clear_sentence(two, capsys) -> None:
    a, _, data = two
    with Workspace(data).lock():
        code, _, err = run(["index", str(a), "--data-dir", str(data)], capsys)
    line = " ".join(err.split())
    assert code == 1 and line == (f"busy: another index run is using {data}; run this one again when it has "
                                  "finished"), err


def test_an_unreadable_record_is_named_and_replace_writes_it_anew(two, capsys) -> None:
    a, _, data = two
    (data / "folders.json").write_text('{"folders": [')  # torn
    code, _, err = run(["index", str(a), "--data-dir", str(data)], capsys)
    assert code == 2 and "folders.json is unreadable" in err and "--replace" in err
    code, out, _ = run(["index", str(a), "--replace", "--json", "--data-dir", str(data)], capsys)
    assert code == 0 and json.loads(out)["unchanged"] == 6
    assert json.loads((data / "folders.json").read_text())["folders"][0]["path"] == str(a.resolve())


def test_refused_before_the_store_is_set_aside(two, capsys) -> None:
    _, b, data = two
    code, _, err = run(["index", str(b), "--replace-store", "--data-dir", str(data)], capsys)
    assert code == 2 and "--add" in err and (data / "graph.sqlite").exists() and len(stored_ids(data)) == 6
