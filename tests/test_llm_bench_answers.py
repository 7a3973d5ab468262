"""``bench.answers --llm`` against the scripted OpenAI-compatible server (tests/llm_server.py): LLM-written answers
from the reader's candidates beside the offline ones, gold-answer hits with the chunk ids removed, citations
checked against the excerpts given and dropped ones counted."""

from __future__ import annotations

import json
from pathlib import Path

from answers.reader import Reader
from bench.answers import Question, hit
from bench.answers_llm import run_llm, without_ids
from core.records import Chunk
from core.settings import LLMSettings, RetrievalSettings
from core.records import chunk_id
from retrieval.index import ChunkIndex
from tests.llm_server import FakeLLMServer, Fault

ROWS = [{"_id": "Harbour_Board", "title": "Harbour Board", "text": "The Harbour Board closed Kestrel Bay for a week."},
        {"_id": "Morning_Gull", "title": "Morning Gull", "text": "Captain Ilse Brandt commands the ferry Morning Gull."},
        {"_id": "Tarn", "title": "Tarn", "text": "Doctor Ansel Marr runs the only clinic on the island of Tarn."}]


def test_llm_answers_are_measured_beside_offline_ones(tmp_path: Path) -> None:
    index = ChunkIndex(RetrievalSettings(embedder="hashing"))  # type: ignore[arg-type]
    index.add([Chunk(chunk_id(r["_id"], 0), r["_id"], 0, f"{r['title']}\n{r['text']}", 0, 0, 0, r["_id"], r["_id"])
               for r in ROWS])
    questions = [Question("q1", "Who commands the ferry Morning Gull?", ("Ilse Brandt",), frozenset(), True),
                 Question("q2", "Who runs the clinic on Tarn?", ("Ansel Marr",), frozenset(), True)]
    assert not hit(without_ids("It says so. [Morning_Gull#0000]"), ("Morning Gull",))  # an id is no answer
    server = FakeLLMServer().start()
    try:
        good = json.dumps({"claims": [{"text": "Captain Ilse Brandt commands it.", "chunk_id": "Morning_Gull#0000"}]})
        bad = json.dumps({"claims": [{"text": "Ansel Marr runs it.", "chunk_id": "Tarn#0000"},
                                     {"text": "Made up.", "chunk_id": "Nowhere#0009"}]})
        server.enqueue(Fault(content=good, match="Morning Gull?"))
        server.enqueue(Fault(content=bad, match="clinic on Tarn?"))
        llm = LLMSettings(base_url=server.base_url, model="test-model", request_timeout_s=2.0, max_retries=0)
        fig = run_llm(questions, index, None, llm, Reader(), hit, top_k=3, n_units=2)
    finally:
        server.stop()
    out = fig.to_dict("test-model")
    assert out["questions"] == 2 and out["llm_answers"] == 2 and out["calls"] == 2
    assert out["llm_answer_hit_rate"] == 1.0
    assert out["dropped_citations"] == 1  # the id that was not given, removed from the answer
    assert out["citations_all_given_rate"] == 1.0  # what is left cites only given passages
    assert out["prompt_tokens"] > 0 and out["completion_tokens"] > 0
