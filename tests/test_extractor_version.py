"""An upgraded extractor never leaves a workspace mixing two extractors' output: every document extracted by
another extractor (offline version, LLM model or extraction prompts) is extracted again by the next incremental
run, which says so in one line; a workspace written before the record existed counts as changed once."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from core.records import stable_hash
from core.settings import ExtractionSettings, StrataSettings
from core.store import open_store
from extraction.fingerprint import EXTRACTION_PROMPTS, ExtractorFingerprint, fingerprint_of
from extraction.loader import load_folder
from extraction.fingerprint import probe_digest, rules_version
from extraction.offline import OfflineExtractor
from extraction.types import EntityMention, ExtractionResult
from strata.extractor_record import extractor_path, recorded_extractor
from strata.pipeline import index_folder
from strata.workspace import Workspace
from tests.conftest import ROOT
from tests.llm_server import FakeLLMServer, server  # noqa: F401 (fixtures)


CURRENT = rules_version()  # the offline rules' digest: derived from what the extractor outputs, never bumped
OLDER, NEWER = "older-rules", "newer-rules"


def corpus(tmp: Path) -> Path:
    folder = tmp / "notes"
    shutil.copytree(ROOT / "samples" / "infra-notes", folder)
    return folder


def offline(tmp: Path, name: str = "ws") -> StrataSettings:
    return StrataSettings(data_dir=tmp / name, extraction={"mode": "offline"})


@pytest.fixture
def older_extractor(monkeypatch):
    """An older offline extractor: rules of another digest, and output of its own (it also found
    an entity in every passage, the kind of junk a later version rules out)."""
    real = OfflineExtractor.extract

    def older(self, chunks):  # type: ignore[no-untyped-def]
        result = real(self, chunks)
        extractions = tuple(replace(x, entities=(*x.entities, EntityMention("OLDJUNK", "concept", "junk of old")))
                            for x in result.extractions)
        return ExtractionResult(extractions, result.failures)

    def install() -> None:
        monkeypatch.setattr(OfflineExtractor, "extract", older)
        monkeypatch.setattr("extraction.fingerprint.rules_version", lambda: OLDER)

    def upgrade() -> None:
        monkeypatch.setattr(OfflineExtractor, "extract", real)
        monkeypatch.setattr("extraction.fingerprint.rules_version", lambda: CURRENT)

    return install, upgrade


def extractions(settings: StrataSettings) -> dict[str, str]:
    store = open_store(settings)
    try:
        return store.extractions()
    finally:
        store.close()


def entity_names(settings: StrataSettings) -> set[str]:
    store = open_store(settings)
    try:
        return {e.name for e in store.read_graph().entities}
    finally:
        store.close()


def test_an_upgraded_offline_extractor_re_extracts_every_document(tmp_path: Path, older_extractor, caplog) -> None:
    install, upgrade = older_extractor
    folder = corpus(tmp_path)
    settings = offline(tmp_path)
    install()
    first = index_folder(folder, settings)
    assert "OLDJUNK" in entity_names(settings)
    assert recorded_extractor(Workspace(settings.data_dir)) == ExtractorFingerprint("offline", OLDER)
    upgrade()
    with caplog.at_level("WARNING", logger="strata.index"):
        run = index_folder(folder, settings)  # incremental: no file changed
    n = first.documents
    line = (f"extractor changed (offline {OLDER} -> offline {CURRENT}): "
            f"re-extracting all {n} documents")
    assert run.changed == n and run.chunks_extracted == first.chunks_extracted
    assert run.extractor_change == line and run.extractor == f"offline {CURRENT}"
    # The one warning of the run (its stage lines are INFO; another test may leave INFO on for this logger).
    warnings = [r.getMessage() for r in caplog.records if r.name == "strata.index" and r.levelno >= logging.WARNING]
    assert warnings == [line]
    # The store is what a first index with the new extractor makes: nothing of the old one is left.
    fresh = offline(tmp_path, "fresh")
    index_folder(folder, fresh)
    assert extractions(settings) == extractions(fresh)
    assert entity_names(settings) == entity_names(fresh) and "OLDJUNK" not in entity_names(settings)
    assert recorded_extractor(Workspace(settings.data_dir)) == fingerprint_of(settings)
    again = index_folder(folder, settings)  # once only
    assert again.changed == 0 and again.chunks_extracted == 0 and again.extractor_change == ""


def test_a_re_extraction_killed_half_way_is_finished_by_the_next_run(tmp_path: Path, older_extractor) -> None:
    install, upgrade = older_extractor
    folder = corpus(tmp_path)
    settings = offline(tmp_path)
    install()
    first = index_folder(folder, settings)
    upgrade()
    stored = []

    def killed(stage: str, advance: int, total: int | None) -> None:
        if stage == "extract" and total is None and advance == 0:  # one document's extraction stored
            stored.append(1)
            if len(stored) == 2:
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        index_folder(folder, settings, progress=killed)
    assert recorded_extractor(Workspace(settings.data_dir)).version == OLDER
    run = index_folder(folder, settings)
    assert run.changed == first.documents - 2
    assert run.extractor_change.endswith(f"re-extracting {first.documents - 2} documents (2 already were, by an "
                                         "unfinished run)")
    fresh = offline(tmp_path, "fresh")
    index_folder(folder, fresh)
    assert extractions(settings) == extractions(fresh) and entity_names(settings) == entity_names(fresh)


def test_a_workspace_from_before_the_record_counts_as_changed_once(tmp_path: Path) -> None:
    folder = corpus(tmp_path)
    settings = offline(tmp_path)
    first = index_folder(folder, settings)
    # What an index run wrote before the record existed: no extractor.json, revisions without the extractor.
    extractor_path(Workspace(settings.data_dir)).unlink()
    store = open_store(settings)
    try:
        for d in load_folder(folder).documents:
            legacy = stable_hash(d.content_hash, d.source, json.dumps(d.metadata, sort_keys=True, default=str), size=16)
            store.upsert_documents([replace(d, content_hash=legacy)])
    finally:
        store.close()
    run = index_folder(folder, settings)
    assert run.changed == first.documents
    assert run.extractor_change == (f"extractor changed (none recorded -> offline {CURRENT}): "
                                    f"re-extracting all {first.documents} documents")
    assert index_folder(folder, settings).changed == 0


def test_an_unreadable_record_counts_as_none(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    extractor_path(ws).write_text("{not json", encoding="utf-8")
    assert recorded_extractor(ws) is None
    extractor_path(ws).write_text('{"mode": "offline", "version": [7]}', encoding="utf-8")
    assert recorded_extractor(ws) is None


def test_strata_index_says_so_in_one_line(tmp_path: Path, older_extractor) -> None:
    install, _ = older_extractor
    folder = corpus(tmp_path)
    settings = offline(tmp_path)
    install()
    first = index_folder(folder, settings)
    env = {**os.environ, "STRATA_EXTRACTION__MODE": "offline", "STRATA_RETRIEVAL__EMBEDDER": "hashing"}
    proc = subprocess.run([sys.executable, "-m", "strata.cli", "--data-dir", str(settings.data_dir), "index",
                           str(folder)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    line = (f"extractor changed (offline {OLDER} -> offline {CURRENT}): "
            f"re-extracting all {first.documents} documents")
    assert [x for x in proc.stderr.splitlines() if "extractor changed" in x] == [line]


# -- LLM mode: the model and the extraction prompts -------------------------------------------------------------
def llm(server: FakeLLMServer, tmp: Path, **extra) -> StrataSettings:
    return StrataSettings(data_dir=tmp / "ws", extraction={"mode": "llm"},
                          llm={"base_url": server.base_url, "model": "test-model", "request_timeout_s": 2.0,
                               "max_retries": 1, "max_concurrency": 2, **extra})


def extract_calls(run) -> int:  # type: ignore[no-untyped-def]
    return sum(u["calls"] for stage, u in run.llm_usage.items() if stage in ("extract", "glean"))


def test_llm_mode_re_extracts_after_a_prompt_changed_and_only_that_prompt_is_asked_again(
        server: FakeLLMServer, tmp_path: Path, monkeypatch) -> None:
    server.reset()
    folder = corpus(tmp_path)
    settings = llm(server, tmp_path)
    first = index_folder(folder, settings)
    assert first.failed_chunks == 0 and extract_calls(first) > 0
    assert first.extractor.startswith("llm test-model (prompts ")
    # Only the code changed (a version bump): every document again, every call from the response cache.
    monkeypatch.setattr("extraction.fingerprint.rules_version", lambda: NEWER)
    bumped = index_folder(folder, settings)
    assert bumped.changed == first.documents and extract_calls(bumped) == 0
    assert "extractor changed (llm test-model" in bumped.extractor_change
    # A prompt file changed (an override of the glean prompt): the documents again, the changed calls only.
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    glean = (ROOT / "prompts" / "glean.txt").read_text(encoding="utf-8")
    (prompts / "glean.txt").write_text(glean + "\nName only entities the passage states.\n", encoding="utf-8")
    changed = index_folder(folder, llm(server, tmp_path, prompts_dir=prompts))
    assert changed.changed == first.documents and changed.extractor_change
    assert changed.llm_usage.get("extract", {}).get("calls", 0) == 0  # the extraction prompt did not change
    assert index_folder(folder, llm(server, tmp_path, prompts_dir=prompts)).changed == 0
    # Another model: its own extractions.
    other = index_folder(folder, llm(server, tmp_path, prompts_dir=prompts, model="other-model"))
    assert other.changed == first.documents and "-> llm other-model" in other.extractor_change


def test_the_fingerprint_covers_every_prompt_the_llm_extractor_renders(monkeypatch) -> None:
    import extraction.llm_extractor as module
    from prompts import load_prompt

    loaded: list[str] = []

    def recording(name, prompts_dir=None):  # type: ignore[no-untyped-def]
        loaded.append(name)
        return load_prompt(name, prompts_dir)

    monkeypatch.setattr(module, "load_prompt", recording)
    module.LLMExtractor(None, ExtractionSettings())  # type: ignore[arg-type]
    assert set(loaded) == set(EXTRACTION_PROMPTS)


def test_status_names_the_recorded_extractor_and_a_pending_change(tmp_path: Path, older_extractor, capsys,
                                                                  monkeypatch) -> None:
    from strata.cli import main

    install, upgrade = older_extractor
    monkeypatch.setenv("STRATA_EXTRACTION__MODE", "offline")
    folder = corpus(tmp_path)
    settings = offline(tmp_path)
    install()
    index_folder(folder, settings)
    upgrade()
    capsys.readouterr()
    assert main(["status", "--json", "--data-dir", str(settings.data_dir)]) == 0
    said = json.loads(capsys.readouterr().out)["extractor"]
    assert said == (f"offline {OLDER}; these settings run offline {CURRENT}: the next "
                    "index run re-extracts every document")
    index_folder(folder, settings)
    assert main(["status", "--json", "--data-dir", str(settings.data_dir)]) == 0
    assert json.loads(capsys.readouterr().out)["extractor"] == f"offline {CURRENT}"


def test_the_offline_fingerprint_follows_what_the_extractor_outputs(monkeypatch) -> None:
    """No version to bump by hand: a rule that changes what the extractor makes of the probe changes the digest
    (a common word that is a name in the probe, a sentence-splitting abbreviation), and it is stable otherwise."""
    from core.text import names, sentences

    base = probe_digest()
    assert base == probe_digest() == CURRENT
    monkeypatch.setattr(names, "COMMON_WORDS", names.COMMON_WORDS | {"scrooge"})
    assert probe_digest() != base
    monkeypatch.undo()
    tables = dict(sentences._TABLES)
    tables["pl"] = (tables["pl"][0] - {"np."}, tables["pl"][1], tables["pl"][2])
    monkeypatch.setattr(sentences, "_TABLES", tables)
    assert probe_digest() != base


def test_a_reindex_with_nothing_to_extract_reads_no_word_model_and_one_with_a_change_reads_the_whole_corpus(
        tmp_path: Path, monkeypatch) -> None:
    import strata.stages as stages

    folder = corpus(tmp_path)
    settings = offline(tmp_path)
    index_folder(folder, settings)
    read: list[int] = []
    real = stages.corpus_words
    monkeypatch.setattr(stages, "corpus_words",
                        lambda loaded, *a, **k: read.append(len(loaded.documents)) or real(loaded, *a, **k))
    run = index_folder(folder, settings)  # nothing changed
    assert run.chunks_extracted == 0 and read == []
    page = sorted(folder.rglob("*.md"))[0]
    page.write_text(page.read_text(encoding="utf-8") + "\nThe Dispatcher now retries twice.\n", encoding="utf-8")
    run = index_folder(folder, settings)
    assert run.changed == 1 and read == [run.documents]  # the model of every document, for the one extracted
