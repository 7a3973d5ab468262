"""Do offline local answers hold the answer, and do they decline what the corpus does not answer?

    python -m bench.answers --set NAME [--set NAME ...] [--weights shipped|auto|FILE] [--limit N] [--show N]
        [--embedder minilm] [--llm [--base-url URL] [--model NAME]]

Sets (``answers.train.SETS``; the data is read from ``../shared/data``): the multi-hop dev sets ``musique`` and
``hotpotqa`` (each corpus indexed as a Strata workspace, one passage per chunk, offline extraction and the graph
walk, as :mod:`bench.multihop` builds it), and the reading-comprehension sets ``xquad-en``, ``xquad-zh``,
``polaq``, ``squad2-heldout`` and ``drcd-test``, whose paragraphs are split in two halves by article, each half
indexed as its own workspace.

Every question is answered on the local route as ``strata ask`` answers it offline
(:func:`answers.answer.local_answer` over the workspace's served index, with its entity lexicon). Out of sample
only: with ``--weights auto`` (the default) a set the shipped weights were fitted on is measured with weights
fitted without it (:func:`answers.train.train`), and the line ``fitted_on`` says which sets the weights saw.

Figures, per set (own questions are asked of their own corpus; ``foreign`` ones are the other multi-hop set's,
or the other half's):
- ``hit_rate``: share of the own answerable questions whose quoted units (the answer's points; never its ids,
  titles or labels; a declined answer quotes nothing) hold a gold answer: lower-cased, accents, punctuation and
  articles removed; whole words, except that an answer in a script written without spaces (Chinese) is found
  anywhere inside the text;
- ``peer_hit_rate``: the same for the peer measured in the same run: as many sentences as the reader chose to
  quote, taken as the top BM25 sentences of the whole corpus (one BM25 index over every whole sentence);
- ``answered_rate``: share of own answerable questions not declined; ``foreign_declined``: share of the foreign
  questions declined; ``unanswerable_declined``: SQuAD 2.0's unanswerable questions asked of their own
  paragraphs, declined; for those, the trade-off curve (answered vs declined at other thresholds);
  ``without_paragraph_declined`` (reading-comprehension sets): share declined of own answerable questions asked
  again with their paragraph filtered out of the search (:data:`WITHOUT_PARAGRAPH` a half, among those whose
  answer no other paragraph holds): the corpus is on their topic, as a documentation site is on an
  out-of-scope question's, but no longer answers them;
- ``cited_gold_rate`` (multi-hop): share of own questions whose citations include a gold passage;
- sentences quoted per answer beside the peer's, and seconds per answer.

With ``--llm`` each own question is also answered by the LLM from the reader's candidates (see
:mod:`bench.answers_llm`). Last line: one JSON object with every set's figures.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from communities.sentences import sentences_of, whole_sentences
from core.records import stable_hash
from core.settings import ComputeSettings, RetrievalSettings
from core.threads import configure

WORK = Path(tempfile.gettempdir()) / "strata-bench-answers"
WITHOUT_PARAGRAPH = 150  # own answerable questions per half asked again with their paragraph filtered out


@dataclass(frozen=True)
class Question:
    qid: str
    text: str
    answers: tuple[str, ...]
    gold: frozenset[str]  # gold passages (multi-hop)
    own: bool
    without: str = ""  # a document filtered out of the search: the question's own paragraph


@dataclass
class Corpus:
    """A workspace's served index and the questions asked of it."""

    name: str
    folder: Path
    corpus_file: Path
    questions: list[Question]


# -- matching (the bench's own, independent of the reader's labels) ----------------------------------------
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")


def normalize(text: str) -> str:
    """Lower case, accents and punctuation removed, English articles dropped, whitespace collapsed (SQuAD's
    evaluation rule)."""
    text = unicodedata.normalize("NFKD", text.lower())
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    text = re.sub(r"[^\w\s]|_", " ", text)
    text = re.sub(r"\b(?:a|an|the)\b", " ", text)
    return " ".join(text.split())


def hit(text: str, answers: tuple[str, ...]) -> bool:
    """Whether ``text`` holds a gold answer: whole words, or anywhere for an answer written without spaces."""
    norm = normalize(text)
    padded = f" {norm} "
    for a in answers:
        na = normalize(a)
        if not na:
            continue
        if _UNSPACED.search(na):
            if na.replace(" ", "") in norm.replace(" ", ""):
                return True
        elif f" {na} " in padded:
            return True
    return False


_BLOCK_LINE = re.compile(r"^\s*(?:[-*+]\s|\d{1,3}[.)]\s|\||```|~~~)")


def sentence_count(text: str) -> int:
    """Sentences in a quoted unit: a list, a table or a code block counts as its lines."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if any(_BLOCK_LINE.match(ln) for ln in lines):
        return len(lines)
    return max(1, len(whole_sentences(text, True)))


# -- corpora ----------------------------------------------------------------------------------------------
def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write_corpus(rows: list[dict[str, Any]], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


def corpora(name: str, data: Path, limit: int | None) -> list[Corpus]:
    """The corpora of a set and the questions asked of each (see the module docstring)."""
    from answers.train import SETS, multihop_rows, qa_rows

    spec = SETS[name]
    if spec.kind == "multihop":
        folder = data / spec.path
        other = {"musique": "hotpotqa", "hotpotqa": "musique"}[name]
        gold: dict[str, set[str]] = {}
        for line in (folder / "qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]:
            parts = line.split("\t")
            if len(parts) >= 3 and parts[2].strip().lstrip("-").isdigit() and int(parts[2]) > 0:
                gold.setdefault(parts[0], set()).add(parts[1])
        _, own = multihop_rows(spec, data)
        _, foreign = multihop_rows(SETS[other], data)
        qs = [Question(q.qid, q.question, q.answers, frozenset(gold.get(q.qid, ())), True) for q in own[:limit]]
        qs += [Question(q.qid, q.question, q.answers, frozenset(), False) for q in foreign[:limit]]
        return [Corpus(name, WORK / f"{name}-workspace", folder / "corpus.jsonl", qs)]
    rows = qa_rows(spec, data)
    out = []
    for half in (0, 1):
        mine = [r for r in rows if _half(r.title) == half]
        others = [r for r in rows if _half(r.title) != half and r.answers]
        paragraphs = list(dict.fromkeys((r.title, r.context) for r in mine))
        docs = [{"_id": f"{name}-{half}-p{i:05d}", "title": t, "text": c} for i, (t, c) in enumerate(paragraphs)]
        digest = stable_hash(json.dumps(docs, ensure_ascii=False), size=6)
        corpus_file = _write_corpus(docs, WORK / "corpora" / f"{name}-{half}-{digest}.jsonl")
        per_half = None if limit is None else max(1, limit // 2)
        qs = [Question(r.qid, r.question, r.answers, frozenset(), True) for r in mine[:per_half]]
        qs += [Question(r.qid, r.question, r.answers, frozenset(), False) for r in others[:per_half]]
        qs += without_paragraph(mine, docs, min(per_half or WITHOUT_PARAGRAPH, WITHOUT_PARAGRAPH))
        out.append(Corpus(f"{name}/{half}", WORK / f"{name}-{half}-{digest}-workspace", corpus_file, qs))
    return out


def _half(title: str) -> int:
    return int(stable_hash("bench-half", title, size=4), 16) % 2


def without_paragraph(rows: list[Any], docs: list[dict[str, Any]], n: int) -> list[Question]:
    """``n`` answerable questions of ``rows`` to ask again with their own paragraph filtered out of the search,
    among those whose answer no other paragraph of ``docs`` holds: the corpus is on their topic but no longer
    answers them, so the reader should decline them. (The bench picks them with its own matcher, :func:`hit`,
    not the one the reader is fitted with.)"""
    doc_of = {(d["title"], d["text"]): d["_id"] for d in docs}
    texts = [(d["_id"], d["text"]) for d in docs]
    out = []
    for r in sorted((r for r in rows if r.answers), key=lambda r: stable_hash("bench-without", r.qid, size=8)):
        if len(out) >= n:
            break
        own = doc_of[(r.title, r.context)]
        if not any(doc != own and hit(text, r.answers) for doc, text in texts):
            out.append(Question(r.qid, r.question, r.answers, frozenset(), False, own))
    return out


# -- running ----------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    question: Question
    quoted: str
    sentences: int
    declined: bool
    probability: float
    cited: frozenset[str]
    seconds: float
    text: str


def answer_all(corpus: Corpus, reader: Any, embedder: str | None, show: int) -> tuple[list[Outcome], list[Outcome]]:
    """(own outcomes, foreign outcomes) of every question of ``corpus``, and the peer's hits alongside."""
    from answers.answer import local_answer
    from bench.multihop import bench_settings, ensure_index
    from retrieval.bm25 import BM25Index
    from routing.router import forced
    from strata.engine import Engine

    ensure_index(corpus.corpus_file, corpus.folder, False, embedder)
    engine = Engine(bench_settings(corpus.folder, embedder))
    index, lexicon = engine.current.index, engine.current.lexicon
    s = RetrievalSettings()
    outcomes = []
    for i, q in enumerate(corpus.questions):
        t = time.perf_counter()
        without = {"document_id": {"ne": q.without}} if q.without else None
        answer = local_answer(q.text, forced("local"), index, s.top_k, s.answer_sentences, without,
                              lexicon=lexicon, reader=reader)
        seconds = time.perf_counter() - t
        quoted = "\n".join(p.text for p in answer.points)
        n = sum(sentence_count(p.text) for p in answer.points)
        cited = frozenset(c.chunk_id.rsplit("#", 1)[0] for c in answer.citations)
        outcomes.append(Outcome(q, quoted, n, not answer.covered, answer.confidence or 0.0, cited, seconds,
                                answer.text))
        if i < show:
            print(f"--- {corpus.name} {q.qid} own={q.own} {q.text}\n    gold={q.answers} hit={hit(quoted, q.answers)}"
                  f" p={answer.confidence}\n{answer.text}\n", flush=True)
    # The peer: the top BM25 sentences of the whole corpus, as many as the reader would quote.
    chunks = [(r.chunk_id, r.text) for r in index.rows]
    sents = [s_ for cid, text in chunks for s_ in sentences_of(cid, text, True)]
    bm25 = BM25Index()
    bm25.add(index.tokenizer(x.text) for x in sents)
    bm25.commit()
    peer: list[Outcome] = []
    for o in (o for o in outcomes if o.question.own):  # the peer is measured on a corpus's own questions
        k = max(1, o.sentences) if not o.declined else 1
        top = bm25.top(index.tokenizer(o.question.text), k, bm25.alive)
        text = "\n".join(sents[r].text for r, _ in top)
        peer.append(Outcome(o.question, text, len(top), False, 1.0, frozenset(), 0.0, text))
    engine.close()
    return outcomes, peer


def _rate(values: list[bool]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def figures(name: str, outs: list[Outcome], peer: list[Outcome], fitted_on: list[str]) -> dict[str, Any]:
    own = [o for o in outs if o.question.own and o.question.answers]
    own_peer = [p for p in peer if p.question.own and p.question.answers]
    unans = [o for o in outs if o.question.own and not o.question.answers]
    foreign = [o for o in outs if not o.question.own and not o.question.without]
    near = [o for o in outs if o.question.without]
    fig: dict[str, Any] = {
        "set": name, "fitted_on": fitted_on, "questions": len(own),
        "hit_rate": _rate([not o.declined and hit(o.quoted, o.question.answers) for o in own]),
        "peer_hit_rate": _rate([hit(p.quoted, p.question.answers) for p in own_peer]),
        "answered_rate": _rate([not o.declined for o in own]),
        "hit_rate_when_answered": _rate([hit(o.quoted, o.question.answers) for o in own if not o.declined]),
        "foreign_questions": len(foreign), "foreign_declined": _rate([o.declined for o in foreign]),
        "unanswerable_questions": len(unans), "unanswerable_declined": _rate([o.declined for o in unans]),
        "without_paragraph_questions": len(near), "without_paragraph_declined": _rate([o.declined for o in near]),
        "sentences_mean": round(float(np.mean([o.sentences for o in own if not o.declined] or [0])), 2),
        "peer_sentences_mean": round(float(np.mean([p.sentences for p in own_peer] or [0])), 2),
        "seconds_per_answer": round(float(np.median([o.seconds for o in outs] or [0])), 3),
    }
    if any(o.question.gold for o in own):
        fig["cited_gold_rate"] = _rate([bool(o.question.gold & o.cited) for o in own])
    if unans:
        fig["tradeoff"] = tradeoff(own, unans)
    return fig


def tradeoff(answerable: list[Outcome], unanswerable: list[Outcome]) -> list[dict[str, float]]:
    """Answered share of the answerable and declined share of the unanswerable questions at thresholds spread
    over the reader's probabilities."""
    pa = np.array([o.probability for o in answerable])
    pu = np.array([o.probability for o in unanswerable])
    out = []
    for t in np.quantile(np.concatenate([pa, pu]), np.linspace(0.0, 0.9, 10)):
        out.append({"threshold": round(float(t), 4), "answered": round(float((pa >= t).mean()), 4),
                    "declined_unanswerable": round(float((pu < t).mean()), 4)})
    return out


def llm_figures(corpus: Corpus, reader: Any, args: argparse.Namespace) -> dict[str, object]:
    """LLM-written answers beside the offline ones on ``corpus``'s own answerable questions (the endpoint from
    ``--base-url``/``--model`` or the ``STRATA_LLM__*`` settings)."""
    from bench.answers_llm import print_llm, run_llm
    from bench.multihop import bench_settings
    from core.settings import StrataSettings
    from strata.engine import Engine

    llm = StrataSettings().llm
    llm = llm.model_copy(update={k: v for k, v in (("base_url", args.base_url), ("model", args.model)) if v})
    if not llm.configured:
        raise SystemExit("--llm needs an endpoint: --base-url or STRATA_LLM__BASE_URL (scripts/llm env)")
    engine = Engine(bench_settings(corpus.folder, args.embedder))
    try:
        questions = [q for q in corpus.questions if q.own and q.answers]
        fig = run_llm(questions, engine.current.index, engine.current.lexicon, llm, reader, hit, args.show)
    finally:
        engine.close()
    return print_llm(fig, llm.model)


def weights_for(name: str, choice: str, data: Path) -> tuple[Any, list[str]]:
    """The reader to measure ``name`` with, and the sets its weights were fitted on."""
    from answers.model import ReaderWeights, shipped_weights
    from answers.reader import Reader
    from answers.train import train

    if choice == "shipped":
        w = shipped_weights()
    elif choice == "auto":
        w = shipped_weights()
        if name in w.trained_on:
            print(f"{name}: the shipped weights were fitted on it; fitting without it", flush=True)
            w = train(without=[name], data=data, progress=False)
    else:
        w = ReaderWeights.load(Path(choice))
    return Reader(w), list(w.trained_on)


def main() -> None:
    from answers.train import DATA, SETS

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", action="append", required=True, choices=sorted(SETS), help="repeatable")
    ap.add_argument("--weights", default="auto", help="auto (out of sample), shipped, or a weights file")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--embedder", default=None, help="retrieval.embedder of the workspaces (default: the settings')")
    ap.add_argument("--limit", type=int, default=None, help="own (and foreign, and without-paragraph) questions per corpus at most")
    ap.add_argument("--show", type=int, default=0, help="print the first N answers of each corpus")
    ap.add_argument("--llm", action="store_true", help="LLM-written answers beside the offline ones")
    ap.add_argument("--base-url")
    ap.add_argument("--model")
    args = ap.parse_args()
    configure(ComputeSettings())
    results = []
    for name in args.set:
        reader, fitted_on = weights_for(name, args.weights, args.data)
        outs: list[Outcome] = []
        peer: list[Outcome] = []
        for corpus in corpora(name, args.data, args.limit):
            o, p = answer_all(corpus, reader, args.embedder, args.show)
            outs += o
            peer += p
            if args.llm:
                results.append({"set": corpus.name, **llm_figures(corpus, reader, args)})
        fig = figures(name, outs, peer, fitted_on)
        results.append(fig)
        print(f"{name:<16} hit {fig['hit_rate']}  peer {fig['peer_hit_rate']}  answered {fig['answered_rate']}  "
              f"foreign declined {fig['foreign_declined']}  unanswerable declined {fig['unanswerable_declined']}  "
              f"without its paragraph declined {fig['without_paragraph_declined']}  "
              f"(fitted on {', '.join(fitted_on)})", flush=True)
    by = {r["set"]: r for r in results if "hit_rate" in r}
    if "xquad-en" in by and "xquad-zh" in by and by["xquad-en"]["hit_rate"]:
        print(f"parity: xquad-zh / xquad-en hit rate = {by['xquad-zh']['hit_rate'] / by['xquad-en']['hit_rate']:.3f}")
    print(json.dumps(results, ensure_ascii=False))


if __name__ == "__main__":
    main()
