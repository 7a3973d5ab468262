"""Do offline local answers hold the answer? Gold-answer hit rate on a BEIR-format question set.

    python -m bench.answers --corpus C.jsonl --queries Q.jsonl --answers A.jsonl [--qrels R.tsv]
        [--embedder minilm] [--index-dir DIR] [--no-graph] [--limit N] [--llm [--base-url URL] [--model NAME]]

Each corpus row (``{"_id", "title", "text"}``) is one chunk (title line, then text). Every question is answered
on the local route by :func:`retrieval.answer.local_answer`, as ``strata ask`` would answer it offline: over a
Strata workspace that indexed the corpus (offline extraction, one passage per chunk, as :mod:`bench.multihop`
builds it), so the ranking is the default's with the graph walk's list; ``--no-graph`` answers from BM25 and
vectors alone (a bare chunk index, no extraction), the ranking of a corpus without a graph. Figures:

- ``answer_hit_rate``: share of questions whose answer text contains a gold answer (``answers.jsonl`` rows
  ``{"_id", "answers": [gold, aliases...]}``), both lower-cased with punctuation and articles removed.
- ``baseline_hit_rate``: the same for the peer measured in the same run: as many sentences as the answer quoted
  (a quoted list or code block counts as the sentences in it), taken as the top BM25 sentences of the whole
  corpus (every whole sentence of every passage, one BM25 index over them).
- ``cited_gold_rate`` (with ``--qrels``): share of questions whose citations include a gold passage.
- the mean answer length in sentences and characters beside the baseline's, and seconds per answer.

With ``--llm`` (an endpoint from ``--base-url``/``--model`` or the ``STRATA_LLM__*`` settings) each question is
answered by the LLM from the ranked passages beside the offline answer instead: ``llm_answer_hit_rate``,
``offline_answer_hit_rate``, ``citations_all_given_rate``, ``dropped_citations``, calls, tokens and wall time
(see :mod:`bench.answers_llm`).

The workspace (or, with ``--no-graph``, the chunk index) is built once into ``--index-dir`` (a folder under the
system's temporary folder by default, named by the corpus's content) and reused by later runs; a workspace made
by another extractor is indexed again. Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import tempfile
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from communities.sentences import sentences_of, whole_sentences
from core.records import Chunk, stable_hash
from extraction.chunking import chunk_id
from core.settings import ComputeSettings, RetrievalSettings
from core.threads import configure
from retrieval.answer import local_answer
from retrieval.bm25 import BM25Index
from retrieval.index import ChunkIndex
from retrieval.router import forced
from retrieval.vector_cache import VectorCache


@dataclass(frozen=True, slots=True)
class Question:
    qid: str
    text: str
    answers: tuple[str, ...]
    gold: frozenset[str]


def _rows(path: Path) -> list[dict]:  # type: ignore[type-arg]
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except ValueError as exc:
            raise SystemExit(f"{path}:{n}: invalid JSON ({exc})") from None
    return out


def load_corpus(path: Path) -> list[Chunk]:
    """One chunk per passage, named as Strata names a document's first chunk (``<id>#0000``)."""
    chunks = []
    for row in _rows(path):
        text = (str(row.get("title", "")) + "\n" + str(row["text"])).strip()
        chunks.append(Chunk(chunk_id(row["_id"], 0), row["_id"], 0, text, 0, len(text), 0, row["_id"],
                            stable_hash(text, size=12)))
    return chunks


def load_questions(queries: Path, answers: Path, qrels: Path | None) -> list[Question]:
    gold: dict[str, set[str]] = {}
    if qrels is not None:
        for i, line in enumerate(qrels.read_text(encoding="utf-8").splitlines()):
            parts = line.strip().split("\t")
            if len(parts) < 3 or (i == 0 and not parts[-1].lstrip("-").isdigit()):
                continue
            if int(parts[2]) > 0:
                gold.setdefault(parts[0], set()).add(parts[1])
    ans = {r["_id"]: tuple(str(a) for a in r["answers"]) for r in _rows(answers)}
    out = [Question(r["_id"], r["text"], ans[r["_id"]], frozenset(gold.get(r["_id"], ())))
           for r in _rows(queries) if r["_id"] in ans]
    if not out:
        raise SystemExit(f"{queries}: no question has a row in {answers}")
    return out


def normalize(text: str) -> str:
    """Lower case, accents and punctuation removed, articles dropped, whitespace collapsed (SQuAD's rule)."""
    text = unicodedata.normalize("NFKD", text.lower())
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    text = re.sub(r"[^\w\s]|_", " ", text)
    text = re.sub(r"\b(?:a|an|the)\b", " ", text)
    return " ".join(text.split())


def hit(text: str, answers: tuple[str, ...]) -> bool:
    padded = f" {normalize(text)} "
    return any(f" {normalize(a)} " in padded for a in answers if normalize(a))


def build_index(chunks: list[Chunk], embedder: str, folder: Path, cache: VectorCache) -> ChunkIndex:
    settings = RetrievalSettings(embedder=embedder)  # type: ignore[arg-type]
    if (folder / "index.json").exists():
        index = ChunkIndex.load(folder, settings, vector_cache=cache)
        if len(index) == len(chunks):
            return index
    index = ChunkIndex(settings, vector_cache=cache)
    index.add(chunks)
    index.save(folder)
    return ChunkIndex.load(folder, settings, vector_cache=cache)


def workspace_index(corpus: Path, folder: Path, embedder: str) -> ChunkIndex:
    """The served index of a Strata workspace in ``folder`` that indexed ``corpus`` (offline extraction, one passage
    per chunk: :func:`bench.multihop.ensure_index`), with its graph walk, as ``strata ask`` searches it."""
    from bench.multihop import bench_settings, ensure_index
    from strata.engine import Engine

    ensure_index(corpus, folder, False, embedder)
    settings = bench_settings(folder, embedder)
    return Engine(settings).current.index


_BLOCK_LINE = re.compile(r"^\s*(?:[-*+]\s|\d{1,3}[.)]\s|\||```|~~~)")


def sentence_count(text: str) -> int:
    """Sentences in a quoted unit: a list, a table or a code block counts as its lines."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if any(_BLOCK_LINE.match(ln) for ln in lines):
        return len(lines)
    return max(1, len(whole_sentences(text, True)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--queries", type=Path, required=True)
    ap.add_argument("--answers", type=Path, required=True)
    ap.add_argument("--qrels", type=Path)
    ap.add_argument("--embedder", default="minilm", choices=["minilm", "e5", "hashing", "none"])
    ap.add_argument("--index-dir", type=Path)
    ap.add_argument("--no-graph", action="store_true", help="answer from BM25 and vectors alone (no extraction)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N questions")
    ap.add_argument("--top-k", type=int, default=RetrievalSettings().top_k)
    ap.add_argument("--sentences", type=int, default=RetrievalSettings().answer_sentences)
    ap.add_argument("--show", type=int, default=0, help="print the first N answers")
    ap.add_argument("--llm", action="store_true", help="LLM-written answers beside the offline ones (bench.answers_llm)")
    ap.add_argument("--base-url", help="with --llm: the endpoint (default: STRATA_LLM__BASE_URL)")
    ap.add_argument("--model", help="with --llm: the model (default: STRATA_LLM__MODEL)")
    args = ap.parse_args()
    for p in (args.corpus, args.queries, args.answers, args.qrels):
        if p is not None and not p.is_file():
            raise SystemExit(f"no such file: {p}")
    configure(ComputeSettings())
    chunks = load_corpus(args.corpus)
    questions = load_questions(args.queries, args.answers, args.qrels)
    if args.limit:
        questions = questions[:args.limit]
    digest = hashlib.blake2b(args.corpus.read_bytes(), digest_size=6).hexdigest()
    root = Path(tempfile.gettempdir()) / "strata-bench-answers"
    kind = "chunks" if args.no_graph else "workspace"
    folder = args.index_dir or root / f"{digest}-{args.embedder}-{kind}-v3"
    root.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if args.no_graph:
        index = build_index(chunks, args.embedder, folder, VectorCache(root / "vectors.sqlite"))
    else:
        index = workspace_index(args.corpus, folder, args.embedder)
    build_s = time.perf_counter() - t0
    if not args.no_graph and index.graph_walk is None:
        raise SystemExit(f"{folder}: the workspace's generation has no graph to walk")
    if args.llm:
        _llm(args, questions, index)
        return

    # The peer: one BM25 index over every whole sentence of the corpus.
    sents = [s for c in chunks for s in sentences_of(c.id, c.text, True)]
    sent_bm25 = BM25Index()
    sent_bm25.add(index.tokenizer(s.text) for s in sents)
    sent_bm25.commit()

    n_hit = n_base = n_cited = 0
    ours_sents = ours_chars = base_sents = base_chars = 0
    declined = 0
    seconds = 0.0
    for i, q in enumerate(questions):
        t = time.perf_counter()
        answer = local_answer(q.text, forced("local"), index, args.top_k, args.sentences)
        seconds += time.perf_counter() - t
        quoted = " ".join(p.text for p in answer.points)
        n = sum(sentence_count(p.text) for p in answer.points)
        top = sent_bm25.top(index.tokenizer(q.text), n, sent_bm25.alive) if n else []
        baseline = " ".join(sents[row].text for row, _ in top)
        declined += not answer.covered
        n_hit += hit(answer.text, q.answers)
        n_base += hit(baseline, q.answers)
        n_cited += bool(q.gold & {c.chunk_id.rsplit("#", 1)[0] for c in answer.citations})
        ours_sents += n
        ours_chars += len(quoted)
        base_sents += len(top)
        base_chars += len(baseline)
        if i < args.show:
            print(f"--- {q.qid} {q.text} gold={q.answers} hit={hit(answer.text, q.answers)} "
                  f"base={hit(baseline, q.answers)}\n{answer.text}\n")
    m = len(questions)
    result = {
        "questions": m, "passages": len(chunks), "embedder": index.dense_name,
        "ranking": "BM25 + dense" if args.no_graph else "BM25 + dense + graph walk",
        "answer_hit_rate": round(n_hit / m, 4), "baseline_hit_rate": round(n_base / m, 4),
        "cited_gold_rate": round(n_cited / m, 4) if any(q.gold for q in questions) else None,
        "declined": declined,
        "answer_sentences_mean": round(ours_sents / m, 2), "baseline_sentences_mean": round(base_sents / m, 2),
        "answer_chars_mean": round(ours_chars / m, 1), "baseline_chars_mean": round(base_chars / m, 1),
        "seconds_per_answer": round(seconds / m, 3), "index_seconds": round(build_s, 1),
    }
    print(f"{'':<22}{'hit rate':>9}{'sentences':>11}{'chars':>8}")
    print(f"{'local answer':<22}{result['answer_hit_rate']:>9.3f}{result['answer_sentences_mean']:>11.2f}"
          f"{result['answer_chars_mean']:>8.0f}")
    print(f"{'BM25 sentences (peer)':<22}{result['baseline_hit_rate']:>9.3f}{result['baseline_sentences_mean']:>11.2f}"
          f"{result['baseline_chars_mean']:>8.0f}")
    print(json.dumps(result))


def _llm(args: argparse.Namespace, questions: list[Question], index: ChunkIndex) -> None:
    from bench.answers_llm import print_llm, run_llm
    from core.settings import StrataSettings

    llm = StrataSettings().llm  # the STRATA_LLM__* settings, then the flags
    llm = llm.model_copy(update={k: v for k, v in (("base_url", args.base_url), ("model", args.model)) if v})
    if not llm.configured:
        raise SystemExit("--llm needs an endpoint: --base-url or STRATA_LLM__BASE_URL (scripts/llm env)")
    fig = run_llm(questions, index, llm, args.top_k, args.sentences, hit, args.show)
    print(json.dumps({**print_llm(fig, llm.model), "passages": len(index), "embedder": index.dense_name}))


if __name__ == "__main__":
    main()
