"""A parent community's LLM report that was written from its sub-communities' reports is written again when a
sub-community's fallback report is retried: after a run with report failures and a clean rerun, every report
equals one clean run's."""

from __future__ import annotations

import hashlib
import itertools
import re
from dataclasses import replace
from pathlib import Path

import pytest

import tests.llm_server as llm_server
from core.store import open_store
from strata.pipeline import index_folder
from tests.llm_server import FakeLLMServer, Fault, server  # noqa: F401 (fixtures)
from tests.test_llm import llm_settings


def _answer_from_children(default):  # type: ignore[no-untyped-def]
    """The test server's report answer, named after the sub-community reports it was given (as a real model's
    answer depends on them)."""
    def answer(messages):  # type: ignore[no-untyped-def]
        first = messages[0]["content"]
        if "Write a report on one community" in first and "Sub-community reports:" in first:
            block = first.split("Sub-community reports:", 1)[1].split("Most central entities:", 1)[0]
            tag = hashlib.blake2b(block.encode(), digest_size=4).hexdigest()
            return ('{"title": "From sub-communities %s", "summary": "%s", "rating": 5, "findings": []}'
                    % (tag, re.sub(r'["\\\n]', " ", block)[:200]))
        return default(messages)
    return answer


def _corpus(tmp: Path) -> Path:
    """Two groups of six names, linked densely inside and once between: a top community with sub-communities."""
    folder = tmp / "notes"
    folder.mkdir()
    groups = (["Alder", "Birch", "Cedar", "Dogwood", "Elm", "Fir"], ["Gorse", "Hazel", "Ivy", "Juniper", "Larch", "Maple"])
    lines = [", ".join(trio) for g in groups for trio in itertools.combinations(g, 3)] + ["Fir, Gorse, bridge"]
    for i, line in enumerate(lines):
        (folder / f"n{i:02d}.md").write_text(f"# Note {i}\n\n{line} work together.\n")
    return folder


def _settings(server: FakeLLMServer, tmp: Path):  # type: ignore[no-untyped-def]
    s = llm_settings(server, tmp)
    # Small report budgets and clusters: the top community is described through its sub-communities' reports.
    return s.model_copy(update={"communities": s.communities.model_copy(
        update={"report_context_tokens": 200, "max_cluster_size": 4})})


def _reports(settings):  # type: ignore[no-untyped-def]
    store = open_store(settings)
    try:
        return {r.community_id: replace(r, created_at="") for r in store.reports()}
    finally:
        store.close()


def test_parent_written_from_a_fallback_child_is_rewritten_when_the_child_is_retried(
        server: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm_server, "default_answer", _answer_from_children(llm_server.default_answer))
    folder = _corpus(tmp_path)
    clean = _settings(server, tmp_path / "clean")
    server.reset()
    index_folder(folder, clean)
    want = _reports(clean)
    assert any(r.title.startswith("From sub-communities") for r in want.values()), "no parent written from children"

    faulty = _settings(server, tmp_path / "faulty")
    server.reset()
    # The first report requests (the deepest communities, written first) fail, first try and repair round.
    server.enqueue(Fault(content="this is not JSON", match="Write a report on one community", times=4))
    assert index_folder(folder, faulty).report_fallbacks == 2
    server.reset()
    assert index_folder(folder, faulty).report_fallbacks == 0
    got = _reports(faulty)
    assert got.keys() == want.keys()
    differ = [k for k in want if got[k] != want[k]]
    assert not differ, f"{len(differ)} report(s) differ from a clean run, e.g. {got[differ[0]]} vs {want[differ[0]]}"
