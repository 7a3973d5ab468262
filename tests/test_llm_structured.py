"""Structured output, answers committed on arrival, prompts whose examples cannot leak, LLM-written local answers,
against the scripted OpenAI-compatible server (tests/llm_server.py)."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
from pathlib import Path

import openai
import pytest

from core.settings import LLMSettings, StrataSettings
from core.store import open_store
from extraction.estimate import estimate_documents
from extraction.genre import PROSE_TYPES, TECHNICAL_TYPES, entity_types_for
from core.llm_client import LLMClient, ParseFailure, ResponseCache
from extraction.llm_extractor import _Payload
from extraction.loader import load_folder
from core.structured import parse_json_object, wire_schema
from prompts import load_prompt
from strata.engine import Engine
from strata.pipeline import index_folder
from tests.conftest import ROOT
from tests.llm_server import FakeLLMServer, Fault, server, fresh_server  # noqa: F401 (fixtures)


@pytest.fixture(autouse=True)
def _fresh(fresh_server: FakeLLMServer) -> None:
    """Each test starts from a reset server (tests/llm_server.py)."""


def client_for(server: FakeLLMServer, cache: Path | None = None, **kw) -> LLMClient:
    s = LLMSettings(base_url=server.base_url, model="test-model", request_timeout_s=2.0, max_retries=1, **kw)
    raw = openai.OpenAI(base_url=s.base_url, api_key="test", timeout=s.timeout_s, max_retries=0)
    return LLMClient(raw, s, ResponseCache(cache) if cache else None, sleep=lambda _: None)


def llm_settings(server: FakeLLMServer, tmp: Path, **extraction) -> StrataSettings:
    return StrataSettings(data_dir=tmp / "ws", extraction={"mode": "llm", **extraction},
                          llm={"base_url": server.base_url, "model": "test-model", "request_timeout_s": 2.0,
                               "max_retries": 1, "max_concurrency": 2})


def corpus(tmp: Path) -> Path:
    folder = tmp / "notes"
    shutil.copytree(ROOT / "samples" / "infra-notes", folder)
    return folder


ASK = [{"role": "user", "content": "Passage:\n<<<\nThe billing-service talks to PgBouncer.\n>>>"}]
GOOD = json.dumps({"entities": [{"name": "billing-service", "type": "service", "description": "talks"}],
                   "relationships": []})


# -- structured output ------------------------------------------------------------------------------------------
def test_wire_schema_is_strict_and_self_contained() -> None:
    schema = wire_schema(_Payload)
    assert "$defs" not in json.dumps(schema) and "$ref" not in json.dumps(schema)

    def objects(node):
        if isinstance(node, dict):
            if node.get("type") == "object":
                yield node
            for v in node.values():
                yield from objects(v)
        elif isinstance(node, list):
            for v in node:
                yield from objects(v)

    found = list(objects(schema))
    assert len(found) == 3  # the payload, an entity, a relationship
    assert all(o["additionalProperties"] is False and o["required"] == list(o["properties"]) for o in found)


def test_calls_ask_for_the_schema_and_count_the_path_each_answer_took(server: FakeLLMServer, tmp_path: Path) -> None:
    client = client_for(server, tmp_path / "c.sqlite")
    repair = load_prompt("repair_json")
    server.enqueue(Fault(content=GOOD))
    client.complete_json("extract", ASK, _Payload, repair=repair)
    fmt = server.chat_requests[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == wire_schema(_Payload)
    # Fenced JSON needs the tolerant parser: usable, counted as repaired.
    server.enqueue(Fault(content=f"```json\n{GOOD}\n```", match="PgBouncer."))
    client.complete_json("extract", [{"role": "user", "content": ASK[0]["content"].replace("PgBouncer", "PgBouncer.")}],
                         _Payload, repair=repair)
    # Garbage, then garbage again after the repair round: unusable, and both answers are forgotten so that a
    # later run asks again.
    other = [{"role": "user", "content": "Passage:\n<<<\nsomething else\n>>>"}]
    server.enqueue(Fault(content="no json here", times=2))
    with pytest.raises(ParseFailure):
        client.complete_json("extract", other, _Payload, repair=repair)
    u = client.usage.stage("extract")
    assert (u.schema_valid, u.repaired, u.unusable, u.calls) == (1, 1, 1, 4)
    before = len(server.chat_requests)
    client.complete_json("extract", other, _Payload, repair=repair)  # asked again, now answered
    assert len(server.chat_requests) == before + 1 and client.usage.stage("extract").schema_valid == 2
    client.close()


@pytest.mark.parametrize(("accepted", "form", "status"), [
    ({"json_object_schema", "json_object"}, "json_object_schema", 422),
    ({"json_object_schema", "json_object"}, "json_object_schema", 500),  # as llama-cpp-python's server refuses
    ({"json_object"}, "json_object", 400), (set(), "none", 422)])
def test_a_rejected_form_moves_to_the_next_one_once(server: FakeLLMServer, accepted: set[str], form: str,
                                                    status: int) -> None:
    server.state.accepted_formats = frozenset(accepted)
    server.state.reject_status = status
    client = client_for(server)
    server.enqueue(Fault(content=GOOD, times=2))
    client.complete_json("extract", ASK, _Payload)
    assert client.structured_form == form
    first = len(server.chat_requests)
    assert first == 1 + {"json_object_schema": 1, "json_object": 2, "none": 3}[form]
    client.complete_json("extract", [{"role": "user", "content": ASK[0]["content"] + " "}], _Payload)
    assert len(server.chat_requests) == first + 1  # straight to the form that works
    last = server.chat_requests[-1]
    assert (last.get("response_format") or {}).get("type", "none") == {"json_object_schema": "json_object"}.get(form, form)
    client.close()
    assert client_for(server).structured_form == form  # the next client of the run asks it at once



def test_a_runaway_answer_cut_by_max_tokens_is_salvaged() -> None:
    cut = '{"entities": [{"name": "Scrooge", "type": "person", "description": "a miser"}, {"name": "Mar'
    payload = parse_json_object(cut, _Payload)
    assert [e.name for e in payload.entities] == ["Scrooge"]
    with pytest.raises(ValueError, match="no JSON object"):
        parse_json_object("nothing", _Payload)


def test_timeouts_follow_the_endpoint() -> None:
    assert LLMSettings(base_url="http://127.0.0.1:8080/v1").timeout_s == 600
    assert LLMSettings(base_url="https://api.openai.com/v1").timeout_s == 60
    assert LLMSettings(base_url="http://localhost:8080/v1", request_timeout_s=5).timeout_s == 5


# -- committed on arrival ---------------------------------------------------------------------------------------
def _killed_after_arrival(base_url: str, cache: str) -> None:
    """A process killed (os._exit, as kill -9) at the first thing that touches an answer after it arrived."""
    s = LLMSettings(base_url=base_url, model="test-model", request_timeout_s=2.0, max_retries=0)
    client = LLMClient(openai.OpenAI(base_url=base_url, api_key="t", max_retries=0), s, ResponseCache(Path(cache)))
    client.usage.add = lambda *a, **k: os._exit(9)  # type: ignore[method-assign]
    client.complete("extract", ASK)
    os._exit(0)


def test_an_answer_that_arrived_before_a_kill_is_never_asked_again(server: FakeLLMServer, tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    child = multiprocessing.get_context("fork").Process(target=_killed_after_arrival, args=(server.base_url, str(cache)))
    child.start()
    child.join(30)
    assert child.exitcode == 9 and len(server.chat_requests) == 1
    client = client_for(server, cache)
    assert client.complete("extract", ASK) and len(server.chat_requests) == 1
    assert client.usage.stage("extract").cache_hits == 1
    client.close()


# -- prompts ----------------------------------------------------------------------------------------------------
def test_entity_types_follow_the_passage() -> None:
    tech = (ROOT / "samples" / "infra-notes" / "postgres-operations.md").read_text()
    assert entity_types_for(tech) == ("technical", TECHNICAL_TYPES)
    prose = "Scrooge walked home through the fog, and at the door he saw Marley's face in the knocker."
    assert entity_types_for(prose) == ("prose", PROSE_TYPES)
    assert entity_types_for(prose, ["ship"]) == ("prose", ("ship",))


def test_the_examples_names_never_enter_the_graph(server: FakeLLMServer, tmp_path: Path) -> None:
    folder = tmp_path / "story"
    folder.mkdir()
    (folder / "a.txt").write_text("Scrooge met Marley at the Exchange, where Pell the clerk waited.\n")
    copied = json.dumps({"entities": [{"name": n, "type": "person", "description": "x"}
                                      for n in ("Scrooge", "Tamsin Ore", "Greywater", "Pell")]
                         + [{"name": "Marley", "type": "person", "description": "rowed to the Saltmarket"}],
                         "relationships": [{"source": "Scrooge", "target": "Tamsin Ore", "description": "x"}]})
    server.enqueue(Fault(content=copied, match="Scrooge met Marley"))
    settings = llm_settings(server, tmp_path)
    run = index_folder(folder, settings)
    assert run.failed_chunks == 0
    store = open_store(settings)
    graph = store.read_graph()
    store.close()
    names = {e.name for e in graph.entities}
    # Example names absent from the passage are dropped; "Pell" is in both the example and the passage: kept;
    # a description naming the example's entities is the example's, not the passage's: emptied.
    assert "Scrooge" in names and "Pell" in names and not names & {"Tamsin Ore", "Greywater"}
    assert "Saltmarket" not in next(e.description for e in graph.entities if e.name == "Marley")
    system = next(r for r in server.chat_requests if "Scrooge met Marley" in json.dumps(r))["messages"]
    assert [m["role"] for m in system] == ["system", "user", "assistant", "user"]
    assert "person, place, organization, event" in system[0]["content"]


def test_estimate_forecasts_merges(server: FakeLLMServer, tmp_path: Path) -> None:
    docs = load_folder(corpus(tmp_path)).documents
    base = StrataSettings(data_dir=tmp_path / "e", llm={"merge_descriptions_over": 2})
    never = StrataSettings(data_dir=tmp_path / "e", llm={"merge_descriptions_over": 10_000})
    with_merges, without = estimate_documents(docs, base), estimate_documents(docs, never)
    assert with_merges.calls > without.calls and with_merges.input_tokens > without.input_tokens


# -- LLM-written local answers ----------------------------------------------------------------------------------
def test_local_answers_are_written_by_the_llm_and_cite_only_given_passages(server: FakeLLMServer,
                                                                          tmp_path: Path) -> None:
    settings = llm_settings(server, tmp_path)
    index_folder(corpus(tmp_path), settings)
    engine = Engine(settings)
    try:
        server.reset()
        answer = engine.ask("Why did the billing-service return HTTP 504?", mode="local")
        asked = server.chat_requests[-1]
        assert answer.mode == "llm" and answer.citations and answer.dropped_citations == 0
        # The prompt quotes the reader's best candidates, several of a passage under its id: the schema allows each
        # id once, in the order first quoted.
        given = list(dict.fromkeys(line.split("]")[0][1:] for line in asked["messages"][0]["content"].splitlines()
                                   if line.startswith("[")))
        assert {c.chunk_id for c in answer.citations} <= set(given)
        enum = asked["response_format"]["json_schema"]["schema"]["properties"]["claims"]["items"]["properties"]
        assert enum["chunk_id"]["enum"] == given
        # An endpoint that ignores the schema cites an id it was not given: dropped and counted, streamed alike.
        bad = json.dumps({"claims": [{"text": "Pool exhaustion.", "chunk_id": given[0]},
                                     {"text": "Made up.", "chunk_id": "invented.md#0009"}]})
        server.enqueue(Fault(content=bad, match="raise db.pool.size"))
        pieces: list[str] = []
        streamed = engine.ask("What did the on-call engineer raise db.pool.size to?", mode="local",
                              on_delta=pieces.append)
        again = server.chat_requests[-1]["messages"][0]["content"]
        assert f"[{given[0]}]" in again  # the first passage of the first question is given again
        assert streamed.dropped_citations == 1 and "invented.md#0009" not in streamed.text
        assert [c.chunk_id for c in streamed.citations] == [given[0]]
        assert "".join(pieces) == streamed.text
    finally:
        engine.close()


def test_llm_chunks_fit_the_context_window(server: FakeLLMServer, tmp_path: Path) -> None:
    from extraction.llm_context import context_window, fit_to_context

    small = llm_settings(server, tmp_path).model_copy(update={"llm": LLMSettings(
        base_url=server.base_url, model="test-model", context_tokens=1024)})
    assert fit_to_context(small).chunking.chunk_tokens == 64  # (1024 - 700 - 200) // 3 is below the floor
    roomy = small.model_copy(update={"llm": small.llm.model_copy(update={"context_tokens": 8192})})
    assert fit_to_context(roomy).chunking.chunk_tokens == 300
    # The scripted server lists no window: unknown, so chunks keep their size.
    unknown = llm_settings(server, tmp_path)
    assert context_window(unknown) is None and fit_to_context(unknown) is unknown
    run = index_folder(corpus(tmp_path), small)
    assert run.chunks_total > index_folder(corpus(tmp_path / "b"), llm_settings(server, tmp_path / "b")).chunks_total


def _index_killed_after_answers(folder: str, settings: StrataSettings, after: int) -> None:
    """An index run killed (os._exit, as kill -9) the moment its ``after``-th answer has arrived."""
    from core.llm_client import Usage

    arrived = []
    add = Usage.add

    def killing_add(self, name, **deltas):  # type: ignore[no-untyped-def]
        if deltas.get("calls"):
            arrived.append(name)
            if len(arrived) == after:
                os._exit(9)
        add(self, name, **deltas)

    Usage.add = killing_add  # type: ignore[method-assign]
    index_folder(folder, settings)
    os._exit(0)


def test_an_index_run_killed_mid_extraction_repeats_no_answered_call(server: FakeLLMServer, tmp_path: Path) -> None:
    folder = corpus(tmp_path)
    settings = llm_settings(server, tmp_path).model_copy(update={"llm": LLMSettings(
        base_url=server.base_url, model="test-model", request_timeout_s=2.0, max_retries=1, max_concurrency=1)})
    child = multiprocessing.get_context("fork").Process(target=_index_killed_after_answers,
                                                        args=(str(folder), settings, 3))
    child.start()
    child.join(60)
    assert child.exitcode == 9
    before = [json.dumps(r["messages"], sort_keys=True) for r in server.chat_requests]
    assert len(before) == 3
    server.reset()
    run = index_folder(folder, settings)
    assert run.failed_chunks == 0
    again = [json.dumps(r["messages"], sort_keys=True) for r in server.chat_requests]
    assert not set(before) & set(again)  # none of the answered requests was sent again


def test_run_metrics_count_the_path_of_structured_answers(server: FakeLLMServer, tmp_path: Path) -> None:
    settings = llm_settings(server, tmp_path)
    server.enqueue(Fault(content="```json\n" + GOOD + "\n```", match="PgBouncer in front"))
    run = index_folder(corpus(tmp_path), settings)
    assert run.llm_usage["extract"]["repaired"] == 1
    assert run.llm_usage["extract"]["schema_valid"] == run.chunks_extracted - 1
    prom = (settings.data_dir / "metrics" / "index.prom").read_text()
    assert 'strata_index_run_llm_answers{path="repaired",stage="extract"} 1.0' in prom


def test_llama_cpp_form_asks_for_bounded_lists_and_strings_and_openai_form_does_not(server: FakeLLMServer) -> None:
    from extraction.llm_extractor import payload_schema

    def bounds(node):  # every length bound in a schema
        if isinstance(node, dict):
            yield from ((k, v) for k, v in node.items() if k in ("maxItems", "maxLength"))
            for v in node.values():
                yield from bounds(v)
        elif isinstance(node, list):
            for v in node:
                yield from bounds(v)

    schema = payload_schema(800)
    server.enqueue(Fault(content=GOOD))
    client_for(server, structured_output="json_object_schema").complete_json("extract", ASK, schema)
    sent = server.chat_requests[-1]["response_format"]["schema"]
    assert sent["properties"]["entities"]["maxItems"] == sent["properties"]["relationships"]["maxItems"] == 13
    assert sent["properties"]["entities"]["items"]["properties"]["description"]["maxLength"] == 200
    # OpenAI's strict mode refuses string bounds: its form carries none, and the cache key is the same.
    server.enqueue(Fault(content=GOOD))
    client_for(server).complete_json("extract", ASK, schema)
    assert not list(bounds(server.chat_requests[-1]["response_format"]["json_schema"]["schema"]))
    # A long answer from an endpoint that ignores the bounds is still accepted.
    many = json.dumps({"entities": [{"name": f"E{i}", "type": "service", "description": "x" * 400} for i in range(20)],
                       "relationships": []})
    assert len(parse_json_object(many, schema).entities) == 20
