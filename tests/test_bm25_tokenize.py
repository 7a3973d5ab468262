import json

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from retrieval.bm25 import BM25Index
from retrieval.tokenize import Tokenizer, TokenizerConfig
from tests.conftest import shared


def test_tokenizer_keeps_identifiers_whole_and_as_parts() -> None:
    t = Tokenizer(TokenizerConfig(stopwords=True, stemming=False))
    toks = t("max_connections on billing-service gave HTTP 504")
    assert {"max_connections", "max", "connections", "billing-service", "billing", "service", "http", "504"} <= set(toks)
    assert "on" not in toks
    assert t("北京大学") == ["北京", "京大", "大学"]
    stemmed = Tokenizer(TokenizerConfig(stopwords=False, stemming=True))("running connections")
    assert stemmed == ["run", "connect"]


def _scifact(n: int) -> tuple[list[list[str]], list[list[str]]]:
    path = shared("scifact", "corpus.jsonl")
    t = Tokenizer()
    docs = []
    with open(path) as fh:
        for i, line in enumerate(fh):
            if i >= n:
                break
            row = json.loads(line)
            docs.append(t(row["title"] + " " + row["text"]))
    queries = [t(json.loads(l)["text"]) for l in open(shared("scifact", "queries_test.jsonl")).readlines()[:50]]
    return docs, queries


def test_scores_match_rank_bm25_oracle() -> None:
    docs, queries = _scifact(3000)
    ref = BM25Okapi(docs, k1=1.5, b=0.75, epsilon=0.25)
    ours = BM25Index(1.5, 0.75, 0.25)
    ours.add(docs)
    ours.commit()
    worst = max(float(np.max(np.abs(ref.get_scores(q) - ours.get_scores(q)))) for q in queries + [["the", "the", "cell"]])
    assert worst < 1e-6


def test_add_and_delete_equal_a_fresh_build() -> None:
    docs, queries = _scifact(600)
    grown = BM25Index()
    grown.add(docs[:300])
    grown.commit()
    grown.add(docs[300:])
    grown.delete(range(100, 200))
    grown.commit()
    kept = docs[:100] + docs[200:]
    ref = BM25Okapi(kept)
    for q in queries[:20]:
        ours = np.delete(grown.get_scores(q), range(100, 200))
        assert np.max(np.abs(ours - ref.get_scores(q))) < 1e-6


def test_query_before_commit_is_refused() -> None:
    idx = BM25Index()
    idx.add([["a"]])
    with pytest.raises(RuntimeError, match="commit"):
        idx.top(["a"], 1)
