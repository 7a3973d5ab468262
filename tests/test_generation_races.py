"""Index generations under hostile timing: a reader whose in-flight request still uses a generation it has
swapped out, ``strata drift --refresh`` beside a half-finished or running index run, and a refresh killed between
its store write and its publish."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import strata.pipeline as pipeline
from core.settings import StrataSettings
from core.store import open_store
from strata.engine import Engine
from strata.pipeline import index_folder, refresh_reports
from strata.workspace import IndexLockedError, Workspace
from tests.conftest import ROOT
from tests.test_generations import edit_folder, run_killed, settings_dict


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    f = tmp_path / "notes"
    shutil.copytree(ROOT / "samples" / "infra-notes", f)
    return f


def _add(folder: Path, i: int) -> None:
    (folder / f"extra-{i}.md").write_text(f"# Extra {i}\n\nThe worker-{i} pool drains at 0{i}:00 UTC.\n")


def test_a_generation_still_used_by_a_request_is_not_pruned_after_the_reader_swapped(folder: Path,
                                                                                      tmp_path: Path) -> None:
    """A request that started on generation 1 keeps it (its lazily read graph included) even after the engine
    swapped to 2 and the writer published 3 with keep_generations 1."""
    settings = StrataSettings(data_dir=tmp_path / "ws", extraction={"mode": "offline"}, index={"keep_generations": 1})
    index_folder(folder, settings)
    engine = Engine(settings)
    try:
        snap = engine.acquire()  # a request in flight on generation 1
        try:
            _add(folder, 1)
            index_folder(folder, settings)
            assert engine.check_reload() and engine.generation == 2
            _add(folder, 2)
            index_folder(folder, settings)  # publishes 3 and prunes
            assert 1 in Workspace(settings.data_dir).numbers(), "generation 1 pruned while a request still used it"
            assert snap.graph().entities  # read from generation 1's own files, not from the store
        finally:
            engine.release(snap)
        engine.check_reload()
        _add(folder, 3)
        index_folder(folder, settings)
        assert 1 not in Workspace(settings.data_dir).numbers()  # released: pruned by the next run
    finally:
        engine.close()


def test_refresh_after_a_killed_run_does_not_publish_a_half_written_store(folder: Path, tmp_path: Path) -> None:
    conf = settings_dict(tmp_path / "ws")
    settings = StrataSettings(**conf)
    index_folder(folder, settings)
    edit_folder(folder)
    run_killed(folder, conf, "reports", 0)  # communities of the unfinished run are in the store, not published
    with pytest.raises(RuntimeError, match="did not finish"):
        refresh_reports(settings, 0.0)
    ws = Workspace(settings.data_dir)
    assert ws.current_number() == 1
    index_folder(folder, settings)
    served = ws.current()
    communities = {c["id"] for c in json.loads(served.communities_path.read_text())}
    reports = {r["community_id"] for r in json.loads(served.reports_path.read_text())}
    assert communities <= reports


def test_refresh_waits_for_no_index_run(folder: Path, settings: StrataSettings) -> None:
    index_folder(folder, settings)
    with Workspace(settings.data_dir).lock():
        with pytest.raises(IndexLockedError):
            refresh_reports(settings, 0.0)


def test_refresh_killed_before_its_publish_is_published_by_the_next_refresh(folder: Path, tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    settings = StrataSettings(**settings_dict(tmp_path / "ws"))
    index_folder(folder, settings)
    edit_folder(folder)
    index_folder(folder, settings, report_policy="missing")  # reports left drifting for the refresh

    def killed(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt("killed between the store write and the publish")

    with monkeypatch.context() as m:
        m.setattr(pipeline, "republish_reports", killed)
        with pytest.raises(KeyboardInterrupt):
            refresh_reports(settings, 0.1)
    refresh_reports(settings, 0.1)
    ws = Workspace(settings.data_dir)
    store = open_store(settings)
    try:
        stored = {r.community_id: r.fingerprint for r in store.reports()}
    finally:
        store.close()
    served = {r["community_id"]: r["fingerprint"] for r in json.loads(ws.current().reports_path.read_text())}
    assert served == stored


def test_a_workspace_written_before_generations_is_named_as_such(folder: Path, settings: StrataSettings) -> None:
    """An older workspace (its chunk index in ``index/``, no CURRENT) is not called empty: the error says what
    to run, and the first index run publishes generation 1."""
    from strata.engine import NoIndexError

    index_folder(folder, settings)
    ws = Workspace(settings.data_dir)
    shutil.move(ws.current().index_dir, ws.root / "index")
    shutil.rmtree(ws.generations_dir)
    ws.current_path.unlink()
    with pytest.raises(NoIndexError, match="older version") as info:
        Engine(settings)
    assert "strata index" in str(info.value) and "no index here yet" not in str(info.value)
    assert index_folder(folder, settings).generation == 1
    Engine(settings).close()


def test_an_index_run_after_a_refresh_that_changes_nothing_publishes_nothing(folder: Path,
                                                                              settings: StrataSettings) -> None:
    index_folder(folder, settings)
    refreshed = refresh_reports(settings, 0.0)  # every report written again: a reports-only generation
    assert refreshed["generation"] == 2
    run = index_folder(folder, settings)
    assert not run.published and run.generation == 2
