"""Every stage of an index run that has a count says its total up front (so the bar can show an ETA) and
advances in small steps: the embed stage as the embedder goes, LLM extraction chunk by chunk as each answer
arrives, offline extraction a few documents at a time; never once per 256-chunk batch."""

from __future__ import annotations

import shutil
from collections import defaultdict
from pathlib import Path

from core.settings import StrataSettings
from strata.pipeline import index_folder
from tests.conftest import ROOT
from tests.llm_server import FakeLLMServer


def many_notes(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True)
    for i in range(n):
        (folder / f"note-{i:03d}.md").write_text(f"The service-{i % 9} on host-{i} writes to PostgreSQL {i}.\n")
    return folder


def record(calls: list[tuple[str, int, int | None]]):  # type: ignore[no-untyped-def]
    return lambda stage, advance, total: calls.append((stage, advance, total))


def test_counted_stages_give_a_total_first_and_small_steps(tmp_path: Path) -> None:
    calls: list[tuple[str, int, int | None]] = []
    settings = StrataSettings(data_dir=tmp_path / "ws", extraction={"mode": "offline"})
    index_folder(many_notes(tmp_path / "notes", 80), settings, record(calls))
    first_total = {}
    steps: dict[str, list[int]] = defaultdict(list)
    for stage, advance, total in calls:
        first_total.setdefault(stage, total)
        if advance:
            steps[stage].append(advance)
    for stage in ("extract", "reports", "embed"):
        assert first_total[stage], (stage, first_total)  # a total before the first step: rich can show an ETA
        assert sum(steps[stage]) == first_total[stage], stage
    assert len(steps["embed"]) >= 5 and max(steps["embed"]) <= 16, steps["embed"]
    assert len(steps["extract"]) >= 5 and max(steps["extract"]) <= 16, steps["extract"]  # offline: a few documents


def test_llm_extraction_reports_each_chunk(tmp_path: Path) -> None:
    server = FakeLLMServer().start()
    try:
        folder = tmp_path / "notes"
        folder.mkdir()
        shutil.copy(ROOT / "samples" / "infra-notes" / "ledger-service.md", folder / "ledger-service.md")
        settings = StrataSettings(data_dir=tmp_path / "ws", extraction={"mode": "llm"},
                                  chunking={"chunk_tokens": 40, "overlap_tokens": 5},
                                  llm={"base_url": server.base_url, "model": "test-model", "request_timeout_s": 5.0,
                                       "max_concurrency": 2})
        calls: list[tuple[str, int, int | None]] = []
        run = index_folder(folder, settings, record(calls))
    finally:
        server.stop()
    extract = [advance for stage, advance, _ in calls if stage == "extract" and advance]
    assert run.chunks_extracted >= 3 and extract == [1] * run.chunks_extracted, extract  # one document, many chunks


def test_embed_total_counts_changed_chunks_too(tmp_path: Path) -> None:
    """A changed document keeps its chunk ids; its chunks are embedded again and counted in the total."""
    settings = StrataSettings(data_dir=tmp_path / "ws", extraction={"mode": "offline"})
    folder = many_notes(tmp_path / "notes", 12)
    index_folder(folder, settings)
    (folder / "note-005.md").write_text("The service-5 on host-5 now writes to Redis instead.\n")
    calls: list[tuple[str, int, int | None]] = []
    index_folder(folder, settings, record(calls))
    embed = [(advance, total) for stage, advance, total in calls if stage == "embed"]
    assert embed[0] == (0, 1) and sum(a for a, _ in embed) == 1, embed


def test_offline_extraction_in_document_groups_is_the_same(tmp_path: Path) -> None:
    """The offline extractor is given a batch's documents a few at a time (so its progress is told often): it
    judges each document from its own chunks only, so the result is the one of the whole batch at once (what a
    Dask worker extracts)."""
    import json

    from extraction.offline import OfflineExtractor
    from strata.stages import document_groups, batch_chunks, plan_batches
    from tests.conftest import shared

    from core.records import Document

    rows = [json.loads(line) for line in shared("scifact", "corpus.jsonl").read_text().splitlines()[:120]]
    docs = [Document(r["_id"], r["_id"], f"{r['title']}\n{r['text']}", r["_id"]) for r in rows]
    docs.append(Document("carol", "carol", shared("christmas_carol", "a-christmas-carol.txt").read_text()[:30000], "c"))
    settings = StrataSettings(data_dir=tmp_path / "ws", extraction={"mode": "offline"})
    extractor = OfflineExtractor(settings.extraction)
    for batch in plan_batches(docs, settings):
        whole = extractor.extract(batch_chunks(batch))
        groups = document_groups(batch)
        assert len(groups) > 1
        parts = [x for g in groups for x in extractor.extract(batch_chunks(g)).extractions]
        assert tuple(parts) == whole.extractions
