"""The LLM path against a real model: the local server of ``scripts/llm start`` (or any OpenAI-compatible
endpoint), whose base URL is ``STRATA_TEST_LLM_URL`` (default ``http://127.0.0.1:8080/v1``).

Only structure is asserted, never the model's words: entities found, every structured answer valid against its
schema as it came, reports written by the LLM, answers citing only the passages they were given, no entity
taken from a prompt's example, no call on a rebuild from the response cache. Without a server the tests skip,
unless ``STRATA_REQUIRE_LLM=1`` (CI, where ``.ci/run`` starts one), which makes them fail. Faults and exact
outputs are tested against the scripted server (tests/test_llm.py).
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.request
from pathlib import Path

import pytest

from core.settings import StrataSettings
from core.store import open_store
from extraction.llm_extractor import parse_example
from prompts import load_prompt
from routing.router import RouteDecision
from routing.llm import llm_route
from strata.engine import Engine
from strata.pipeline import index_folder
from strata.stages import open_llm

DOCS = {
    "harbour.md": "Captain Ilse Brandt commands the ferry Morning Gull between Kestrel Bay and the island of Tarn. "
                  "In March the Harbour Board closed Kestrel Bay for a week after a storm damaged the pier.\n",
    "tarn.md": "On Tarn, Doctor Ansel Marr runs the only clinic. When the Harbour Board closed the bay, Ilse Brandt "
               "carried medicine to him in a fishing boat.\n",
}


@pytest.fixture(scope="module")
def model() -> tuple[str, str]:
    """(base URL, model id) of the real endpoint, or a skip (a failure with STRATA_REQUIRE_LLM=1)."""
    url = os.environ.get("STRATA_TEST_LLM_URL", "http://127.0.0.1:8080/v1").rstrip("/")
    try:
        with urllib.request.urlopen(f"{url}/models", timeout=10) as r:
            ids = [m["id"] for m in json.load(r)["data"]]
    except (OSError, ValueError, KeyError) as exc:
        if os.environ.get("STRATA_REQUIRE_LLM") == "1":
            pytest.fail(f"a real LLM is required (STRATA_REQUIRE_LLM=1) but {url} does not answer: {exc}")
        pytest.skip(f"no LLM server at {url} (start one with scripts/llm start): {exc}")
    return url, ids[0]


def real_settings(model: tuple[str, str], tmp: Path) -> StrataSettings:
    url, name = model
    return StrataSettings(data_dir=tmp / "ws", extraction={"mode": "llm"},
                          llm={"base_url": url, "model": name, "max_concurrency": 1, "max_retries": 1})


def prompt_only_words() -> set[str]:
    """Entity names of the prompts' worked examples (none of them occurs in DOCS)."""
    names: set[str] = set()
    for genre in ("prose", "technical"):
        names |= parse_example(load_prompt(f"example_{genre}").render()).names
    corpus = " ".join(DOCS.values()).casefold()
    return {n for n in names if n not in corpus}


def test_index_and_answer_with_a_real_model(model: tuple[str, str], tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text)
    settings = real_settings(model, tmp_path)
    run = index_folder(folder, settings)
    assert run.mode == "llm" and run.failed_chunks == 0 and run.entities >= 2
    structured = {k: u for k, u in run.llm_usage.items() if k in ("extract", "glean", "merge", "report")}
    answered = sum(u["calls"] + u["cache_hits"] for u in structured.values())
    # Every structured answer matched its schema as it came (the server enforces it with a grammar).
    assert answered and sum(u["schema_valid"] for u in structured.values()) == answered
    assert run.reports_written >= 1 and run.report_fallbacks == 0
    store = open_store(settings)
    try:
        names = {e.name.casefold() for e in store.read_graph().entities}
        reports = store.reports()
    finally:
        store.close()
    assert reports and all(r.mode == "llm" for r in reports)
    assert not names & prompt_only_words()

    engine = Engine(settings)
    try:
        given = set(engine.index.by_id)
        local = engine.ask("Who runs the clinic on Tarn?", mode="local")
        assert local.mode == "llm" and local.text and local.citations
        assert {c.chunk_id for c in local.citations} <= given
        pieces: list[str] = []
        overall = engine.ask("What are the main themes across these documents?", mode="global", on_delta=pieces.append)
        assert overall.mode == "llm" and overall.text and "".join(pieces).strip() == overall.text
        assert {c.chunk_id for c in overall.citations} <= given
    finally:
        engine.close()

    # A rebuild from scratch with the response cache kept makes no call.
    (settings.data_dir / "graph.sqlite").unlink()
    shutil.rmtree(settings.data_dir / "generations")
    (settings.data_dir / "CURRENT").unlink()
    again = index_folder(folder, settings)
    assert sum(u["calls"] for u in again.llm_usage.values()) == 0 and again.entities == run.entities


def test_router_llm_classifier_with_a_real_model(model: tuple[str, str], tmp_path: Path) -> None:
    client = open_llm(real_settings(model, tmp_path))
    assert client is not None
    try:
        for question in ("Which port does the billing-service listen on?",
                         "What are the recurring themes across all these notes?"):
            unsure = RouteDecision("local", ("unsure",), 0.5, 0.5, confidence=0.5)
            decision = llm_route(question, unsure, client)
            assert decision.route in ("local", "global") and 0.5 <= decision.confidence <= 1.0
            assert "LLM classifier says" in decision.reasons[-1]
        usage = client.usage.stage("route")
        assert usage.schema_valid == 2 and usage.unusable == 0
    finally:
        client.close()
