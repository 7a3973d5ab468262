"""An index run raises the garbage collector's young-generation threshold while it runs, and puts it back."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from core.settings import StrataSettings
from core.threads import BATCH_GC_YOUNG


@pytest.mark.parametrize("fails", [False, True])
def test_an_index_run_collects_less_often_and_restores_the_thresholds(tmp_path: Path, fails: bool) -> None:
    from strata import pipeline

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Billing\n\nThe billing service writes invoices to PostgreSQL.\n")
    (folder / "b.md").write_text("# Cache\n\nRedis evicts keys when maxmemory is reached.\n")
    settings = StrataSettings(data_dir=tmp_path / "ws", extraction={"mode": "offline"})
    before = gc.get_threshold()
    seen: list[int] = []

    def progress(stage: str, done: int, total: int | None) -> None:
        seen.append(gc.get_threshold()[0])
        if fails and stage == "reports":
            raise RuntimeError("stopped in the reports stage")

    try:
        if fails:
            with pytest.raises(RuntimeError, match="stopped in the reports stage"):
                pipeline.index_folder(folder, settings, progress=progress)
        else:
            pipeline.index_folder(folder, settings, progress=progress)
        after = gc.get_threshold()
    finally:
        gc.set_threshold(*before)
    staged = seen[1:]  # after the load, the session is open
    assert staged and all(t == max(before[0], BATCH_GC_YOUNG) for t in staged)
    assert after == before


def test_overlapping_runs_share_the_raise_and_the_last_to_end_restores() -> None:
    from core.threads import batch_collector

    before = gc.get_threshold()
    raised = max(before[0], BATCH_GC_YOUNG)
    try:
        end_a = batch_collector()
        end_b = batch_collector()  # opened while A runs
        end_a()  # A ends first: B still runs with the raise
        assert gc.get_threshold()[0] == raised
        end_a()  # a second call changes nothing
        assert gc.get_threshold()[0] == raised
        end_b()
        assert gc.get_threshold() == before
    finally:
        gc.set_threshold(*before)
