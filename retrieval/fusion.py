"""Fusion of the two rankings: weighted Reciprocal Rank Fusion (score(d) = sum_i w_i / (k + rank_i(d)), ranks
from 1), query-adaptive weights, a convex combination of min-max-normalized scores, and a lexical rerank."""

from __future__ import annotations

import re
from operator import itemgetter
from typing import Any, Callable, Hashable, Sequence, TypeVar

K = TypeVar("K", bound=Hashable)


def weighted_rrf(ranked_lists: Sequence[tuple[float, Sequence[K]] | tuple[float, Sequence[K], Sequence[float]]],
                 k: float = 60) -> list[tuple[K, float]]:
    """Fuse ranked lists given as (weight, ids best-first), or (weight, ids, ranks) for a list whose ties share a
    rank (each id's rank from 1, in the ids' order); returns (id, score) best-first, ties by first appearance."""
    scores: dict[K, float] = {}
    for entry in ranked_lists:
        weight, ids = entry[0], entry[1]
        if weight == 0:
            continue
        ranks = entry[2] if len(entry) > 2 and len(entry[2]) else range(1, len(ids) + 1)  # type: ignore[misc]
        for rank, item in zip(ranks, ids, strict=True):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    # A stable sort keeps ties in the order of first appearance (reverse=True keeps stability).
    return sorted(scores.items(), key=itemgetter(1), reverse=True)


def convex_combination(sparse: Sequence[tuple[K, float]], dense: Sequence[tuple[K, float]], alpha: float) -> list[tuple[K, float]]:
    """alpha * minmax(sparse) + (1 - alpha) * minmax(dense); an id missing from a list scores 0 there, and the
    lowest item a list returned scores just above 0."""

    def norm(items: Sequence[tuple[K, float]]) -> dict[K, float]:
        # Min-max into [0.001, 1]: an item a list did return never ties with one it did not return (0).
        if not items:
            return {}
        vals = [v for _, v in items]
        lo, hi = min(vals), max(vals)
        return {k: 0.001 + 0.999 * (v - lo) / (hi - lo) if hi > lo else 1.0 for k, v in items}

    ns, nd = norm(sparse), norm(dense)
    keys = list(dict.fromkeys([k for k, _ in sparse] + [k for k, _ in dense]))
    scored = [(k, alpha * ns.get(k, 0.0) + (1 - alpha) * nd.get(k, 0.0)) for k in keys]
    return sorted(scored, key=itemgetter(1), reverse=True)  # stable: ties in the order of first appearance


_QUOTED = re.compile(r"\"[^\"]+\"|“[^”]+”|`[^`]+`")
_LEXICAL = re.compile(r"\b[A-Z]{2,}[A-Z0-9_-]*\b|\b\w*\d\w*\b|\b\w+[_.-]\w+\b|\b[A-Z][a-z]+[A-Z]\w*\b")
_WORD = re.compile(r"[^\W\d_][\w'’.-]*")
MAX_CUE_FACTOR = 4.0  # the most exact-match cues can multiply BM25's weight by
NAME_SHARE_BOOST = 2.0  # a query made only of capitalized words multiplies it by 1 + this
_STARTERS = {"what", "who", "whom", "whose", "when", "where", "why", "how", "which", "is", "are", "was", "were", "do",
             "does", "did", "can", "could", "should", "tell", "list", "show", "find", "give", "the", "a", "an", "in", "on",
             # Polish question words and prepositions that open a question ("Kto napisał ...", "W którym roku ...")
             "kto", "co", "czego", "czym", "jak", "jaki", "jaka", "jakie", "gdzie", "kiedy", "dlaczego", "czemu", "który",
             "która", "które", "którym", "ile", "czy", "w", "we", "z", "ze", "na", "o", "od", "do", "po", "przez", "dla"}


def lexical_cues(query: str) -> float:
    """How strongly a query asks for exact matches: identifiers, codes, numbers, quoted phrases, and names. Returns
    a BM25 weight multiplier of at most ``MAX_CUE_FACTOR``: doubled for each identifier cue, and raised with the
    share of capitalized words (``1 + NAME_SHARE_BOOST * share``). Capitals are one signal among these, never a
    rule that drops the dense side: a query typed in lower case, or a title-case question, is read the same way
    apart from that factor (measured with bench.beir on SciFact and on the Carol name set in title case, lower
    case and as questions)."""
    cues = len(_QUOTED.findall(query)) + len(_LEXICAL.findall(query))
    words = _WORD.findall(query)
    content = [w for i, w in enumerate(words) if not (i == 0 and w.lower() in _STARTERS)]
    capitalized = [w for w in content if w[0].isupper()]
    share = len(capitalized) / len(content) if content else 0.0
    return min(MAX_CUE_FACTOR, 2.0 ** cues * (1.0 + NAME_SHARE_BOOST * share))


def adapt_weights(query: str, sparse: Sequence[tuple[K, float]], dense: Sequence[tuple[K, float]],
                  sparse_weight: float, dense_weight: float, depth: int = 10) -> tuple[float, float]:
    """Weights adapted to the query and to how far the two engines agree.

    - Exact-match cues and capitalized names favour BM25 (see :func:`lexical_cues`).
    - When the two top-``depth`` lists share almost nothing, the dense list is likely off the query's literal
      topic, so its weight is halved; when they agree, fusion is safe and the weights stand.
    """
    sparse_weight *= lexical_cues(query)
    top_s = {k for k, _ in sparse[:depth]}
    top_d = {k for k, _ in dense[:depth]}
    agreement = len(top_s & top_d) / max(1, min(depth, len(top_s), len(top_d)))
    if agreement < 0.2:
        dense_weight *= 0.5
    return sparse_weight, dense_weight


def rerank_scores(query: str, order: Sequence[int], rows: Sequence[Any], tokenizer: Callable[[str], list[str]],
                  rrf: dict[int, float], settings: Any) -> dict[int, float]:
    """Each candidate's fused score times (1 + overlap bonus + exact-phrase bonus)."""
    q_terms = set(tokenizer(query))
    phrase = " ".join(query.lower().split())
    scores: dict[int, float] = {}
    for row in order:
        text = rows[row].text
        overlap = len(q_terms & set(tokenizer(text))) / len(q_terms) if q_terms else 0.0
        exact = 1.0 if len(phrase.split()) >= 2 and phrase in " ".join(text.lower().split()) else 0.0
        bonus = 1 + settings.rerank_overlap_weight * overlap + settings.rerank_phrase_weight * exact
        scores[row] = rrf.get(row, 0.0) * bonus
    return scores


def lexical_rerank(query: str, order: Sequence[int], rows: Sequence[Any], tokenizer: Callable[[str], list[str]],
                   rrf: dict[int, float], settings: Any) -> list[int]:
    """Reorder candidates by :func:`rerank_scores`, ties in their given order."""
    scores = rerank_scores(query, order, rows, tokenizer, rrf, settings)
    return sorted(order, key=lambda row: -scores[row])  # a stable sort: ties keep their order
