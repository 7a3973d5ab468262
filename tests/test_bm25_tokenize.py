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


def _reference_top(idx: BM25Index, query: list[int], k: int, mask: np.ndarray | None) -> list[tuple[int, float]]:
    """Top k from the full score vector: best score first, ties by row."""
    rows, sc = idx.scores(query)
    if mask is not None:
        keep = mask[rows]
        rows, sc = rows[keep], sc[keep]
    order = np.lexsort((rows, -sc))[:k]
    return [(int(rows[i]), float(sc[i])) for i in order]


@pytest.mark.parametrize("n_docs,vocab", [(4000, 3000), (300, 40), (5, 4)])
def test_pruned_top_k_equals_the_full_ranking(n_docs: int, vocab: int) -> None:
    rng = np.random.default_rng(n_docs)
    p = 1.0 / np.arange(1, vocab + 1) ** 1.1
    p /= p.sum()
    lens = rng.integers(3, 40, n_docs)
    idx = BM25Index()
    idx.prune_min_postings = 0  # prune whenever possible, even on small postings
    idx.add_flat(rng.choice(vocab, size=int(lens.sum()), p=p), lens)  # short docs, few terms: many tied scores
    idx.commit()
    pruned = 0
    for trial in range(200):
        query = list(rng.choice(vocab, size=int(rng.integers(1, 6)), p=p))
        mask = rng.random(n_docs) < 0.3 if trial % 3 == 0 else None
        k = int(rng.choice([1, 3, 10, 50]))
        expected = _reference_top(idx, query, k, mask)
        assert idx.top(query, k, mask) == expected
        assert idx.top(query, k, mask, prune=False) == expected
        pruned += idx._top_maxscore(idx._terms(query), k, mask) is not None
    if n_docs > 100:
        assert pruned > 20  # the pruned path really ran


def test_rows_holding_all_terms_match_a_count_by_hand_after_adds_and_deletes() -> None:
    rng = np.random.default_rng(7)
    vocab = [f"w{i}" for i in range(12)]
    docs = [list(rng.choice(vocab, size=int(rng.integers(1, 9)))) for _ in range(300)]
    index = BM25Index()
    index.add(docs[:200])
    index.commit()
    index.add(docs[200:])  # postings of rows added later come after the earlier ones'
    index.delete(range(0, 300, 7))
    index.commit()
    for terms in (["w1"], ["w1", "w2"], ["w3", "w4", "w5"], ["w1", "w1"], ["w0", "nowhere"], []):
        want = [r for r, d in enumerate(docs) if r % 7 and terms and all(t in d for t in terms)]
        assert index.rows_holding_all(terms).tolist() == want, terms
