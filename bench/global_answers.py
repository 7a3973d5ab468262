"""Offline global answers on A Christmas Carol and Dulce: quoted exactly, different per question, and how much of
Microsoft GraphRAG's reference reports they reach beside a BM25 baseline.

    python -m bench.global_answers [--data ../shared/data] [--questions bench/data/global_questions.jsonl]

Each book is indexed offline into a temporary workspace; every question of the set (written for this benchmark:
themes, conflicts, how a character changes, what a group has in common, plus off-topic controls marked
``"covered": false``) is asked on the global route. Figures:

- ``verbatim_rate``: share of answer sentences found verbatim in the chunk they cite (read back from the store).
- ``distinct_rate``: share of pairs of on-topic questions of the same book whose answers cite different sets of
  sentences (Jaccard of (chunk, start, end) sets below 0.5).
- ``reference_coverage`` (Carol): for each question, the reference reports relevant to it are fixed by one rule:
  the 5 reference community reports whose ``title + summary`` is closest to the question (MiniLM cosine). A
  relevant report counts as reached when some sentence of the answer has cosine >= 0.5 with its summary. The
  figure is the mean share reached. ``baseline_coverage`` is the same for a baseline answering with as many
  sentences: the whole sentences of BM25's top 8 chunks, ranked by BM25 over those sentences.
- ``uncovered_detected``: share of the off-topic controls the answer declines; ``false_uncovered``: share of
  on-topic questions it wrongly declines.

Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from communities.sentences import chunk_is_first, normalized, sentences_of
from core.settings import RetrievalSettings, StrataSettings
from core.store import open_store
from retrieval.bm25 import BM25Index
from retrieval.index import ChunkIndex
from strata.engine import Engine
from strata.pipeline import index_folder

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
QUESTIONS = Path(__file__).resolve().parent / "data" / "global_questions.jsonl"
BOOKS = {"carol": "christmas_carol/a-christmas-carol.txt", "dulce": "dulce/dulce.txt"}
MATCH_COSINE = 0.5  # an answer sentence "matches" a reference summary at or above this cosine
RELEVANT_REPORTS = 5  # reference reports relevant to a question: the 5 closest to it
DISTINCT_JACCARD = 0.5


@dataclass(frozen=True, slots=True)
class Question:
    corpus: str
    text: str
    covered: bool


@dataclass
class Result:
    question: Question
    sentences: list[tuple[str, int, int, str]]  # chunk id, start, end, text
    covered: bool
    verbatim: int
    seconds: float
    baseline: list[str]


def load_questions(path: Path) -> list[Question]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("corpus") not in BOOKS or not str(row.get("question", "")).strip():
            raise ValueError(f"{path}:{n}: each line needs a corpus in {sorted(BOOKS)} and a question")
        out.append(Question(row["corpus"], row["question"], bool(row.get("covered", True))))
    return out


def bm25_baseline(question: str, index: ChunkIndex, n: int) -> list[str]:
    """The ``n`` best whole sentences of BM25's top 8 chunks, ranked by BM25 over those sentences."""
    hits = index.search(question, 8, dense_weight=0.0, sparse_weight=1.0, fusion="rrf")
    sents, seen = [], set()
    for h in hits:
        for s in sentences_of(h.chunk_id, h.text, chunk_is_first(h.chunk_id)):
            if normalized(s.text) not in seen:
                seen.add(normalized(s.text))
                sents.append(s.text)
    if not sents:
        return []
    bm25 = BM25Index()
    bm25.add(index.tokenizer(s) for s in sents)
    bm25.commit()
    scores = bm25.get_scores(index.tokenizer(question))
    order = sorted(range(len(sents)), key=lambda i: (-scores[i], i))
    return [sents[i] for i in order[:n]]


def run_corpus(name: str, book: Path, questions: list[Question], tmp: Path) -> list[Result]:
    settings = StrataSettings(data_dir=tmp / name, extraction={"mode": "offline"})
    t0 = time.perf_counter()
    index_folder(book, settings)
    print(f"{name}: indexed in {time.perf_counter() - t0:.1f} s")
    store = open_store(settings)
    chunks = {c.id: c for c in store.all_chunks()}
    store.close()
    baseline_index = ChunkIndex(RetrievalSettings(embedder="none"))
    baseline_index.add(list(chunks.values()))
    engine = Engine(settings)
    results = []
    try:
        for q in questions:
            t = time.perf_counter()
            answer = engine.ask(q.text, "global")
            seconds = time.perf_counter() - t
            sents = [(p.chunk_id, p.start, p.end, p.text) for p in answer.points]
            verbatim = sum(1 for cid, _, _, text in sents if cid in chunks and text in chunks[cid].text)
            base = bm25_baseline(q.text, baseline_index, max(1, len(sents)))
            results.append(Result(q, sents, answer.covered, verbatim, seconds, base))
    finally:
        engine.close()
    return results


def distinct_rate(results: list[Result]) -> tuple[int, int]:
    sets = [{(c, s, e) for c, s, e, _ in r.sentences} for r in results if r.question.covered]
    pairs = distinct = 0
    for a, b in itertools.combinations(sets, 2):
        pairs += 1
        union = a | b
        if not union or len(a & b) / len(union) < DISTINCT_JACCARD:
            distinct += 1
    return distinct, pairs


def reference_coverage(results: list[Result], reports_path: Path) -> tuple[float, float, dict[float, tuple[float, float]]]:
    """(ours, baseline, {threshold: (ours, baseline)} at neighbouring thresholds for context)."""
    import pyarrow.parquet as pq

    from retrieval.minilm import MiniLMEmbedder

    table = pq.read_table(reports_path, columns=["title", "summary"]).to_pylist()
    emb = MiniLMEmbedder()
    ref_text = emb.embed([f"{r['title']}. {r['summary']}" for r in table])
    ref_summary = emb.embed([r["summary"] for r in table])
    on_topic = [r for r in results if r.question.covered]
    q_vecs = emb.embed([r.question.text for r in on_topic])
    thresholds = (0.4, MATCH_COSINE, 0.6)
    shares: dict[float, tuple[list[float], list[float]]] = {t: ([], []) for t in thresholds}
    for r, qv in zip(on_topic, q_vecs):
        relevant = np.argsort(-(ref_text @ qv), kind="stable")[:RELEVANT_REPORTS]
        for which, sents in ((0, [s[3] for s in r.sentences]), (1, r.baseline)):
            best = (emb.embed(sents) @ ref_summary[relevant].T).max(axis=0) if sents else np.zeros(len(relevant))
            for t in thresholds:
                shares[t][which].append(float((best >= t).mean()))
    table_out = {t: (float(np.mean(a)), float(np.mean(b))) for t, (a, b) in shares.items()}
    return table_out[MATCH_COSINE][0], table_out[MATCH_COSINE][1], table_out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--questions", type=Path, default=QUESTIONS)
    args = ap.parse_args()
    questions = load_questions(args.questions)
    results: dict[str, list[Result]] = {}
    with threadpool_limits(1), tempfile.TemporaryDirectory() as tmp:
        for name, rel in BOOKS.items():
            qs = [q for q in questions if q.corpus == name]
            if qs:
                results[name] = run_corpus(name, args.data / rel, qs, Path(tmp))
        cov = reference_coverage(results["carol"], args.data / "christmas_carol" / "community_reports.parquet") \
            if "carol" in results else None

    every = [r for rs in results.values() for r in rs]
    n_sent = sum(len(r.sentences) for r in every)
    verbatim_rate = sum(r.verbatim for r in every) / n_sent if n_sent else 0.0
    d_pairs = [distinct_rate(rs) for rs in results.values()]
    distinct = sum(d for d, _ in d_pairs) / max(1, sum(p for _, p in d_pairs))
    controls = [r for r in every if not r.question.covered]
    on_topic = [r for r in every if r.question.covered]
    uncovered_detected = sum(not r.covered for r in controls) / len(controls) if controls else 0.0
    false_uncovered = sum(not r.covered for r in on_topic) / len(on_topic) if on_topic else 0.0

    print(f"\n{'corpus':<8}{'questions':>10}{'declined':>10}{'sentences':>11}{'verbatim':>10}{'distinct':>10}{'ms/answer':>11}")
    for name, rs in results.items():
        d, p = distinct_rate(rs)
        ns = sum(len(r.sentences) for r in rs)
        print(f"{name:<8}{len(rs):>10}{sum(not r.covered for r in rs):>10}{ns:>11}"
              f"{(sum(r.verbatim for r in rs) / ns if ns else 0):>10.3f}{(d / p if p else 0):>10.3f}"
              f"{1000 * np.median([r.seconds for r in rs]):>11.0f}")
    if cov is not None:
        print(f"\nGraphRAG reference reports reached (Carol; {RELEVANT_REPORTS} relevant reports per question)")
        print(f"{'cosine >=':<12}{'Strata global':>15}{'BM25 sentences':>16}")
        for t, (ours, base) in sorted(cov[2].items()):
            mark = "  <- fixed threshold" if t == MATCH_COSINE else ""
            print(f"{t:<12}{ours:>15.3f}{base:>16.3f}{mark}")
    print(f"\noff-topic controls declined: {uncovered_detected:.2f}; on-topic questions declined: {false_uncovered:.2f}")
    print(json.dumps({"verbatim_rate": round(verbatim_rate, 4), "distinct_rate": round(distinct, 4),
                      "reference_coverage": round(cov[0], 4) if cov else None,
                      "baseline_coverage": round(cov[1], 4) if cov else None,
                      "uncovered_detected": round(uncovered_detected, 4), "false_uncovered": round(false_uncovered, 4),
                      "questions": len(every), "sentences": n_sent}))


if __name__ == "__main__":
    main()
