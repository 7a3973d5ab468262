"""Fit the reader's weights from third-party labelled data, and say how well they generalize.

    python -m answers.train [--out FILE] [--without SET ...] [--limit N] [--check] [--data DIR]

The labelled sets (``--data``, default ``../shared/data``; :data:`SETS`) are extractive question answering in
English, Chinese and Polish, and the two multi-hop dev sets:

- fitted (``role`` fit): SQuAD 2.0 (its answerable and unanswerable questions; the paragraphs XQuAD also holds,
  and a quarter of the articles, are left out), DRCD's dev half, PolAQ, MuSiQue and HotpotQA;
- never fitted (``role`` eval): XQuAD in English and Chinese, SQuAD 2.0's held-out articles and DRCD's test
  half. ``bench.answers`` measures the reader on these, and on a fitted set with weights fitted without it.

Each set's paragraphs (or passages) are indexed as a corpus (BM25, the default embedder's vectors, the offline
extractor's graph walked for the graph list, and its names, as a Strata index has them) in two halves by article: a question is asked of its own half, and some questions of the
other half are asked of it (questions of the wrong corpus, which the reader should decline); MuSiQue and
HotpotQA ask each other's. Some of a set's own answerable questions are asked again of their own half with their
own paragraph filtered out of the search (the corpus is on their topic but no longer holds their answer, as a
documentation site holds much about its subject but not every answer), chosen among those whose answer no other
paragraph of the half holds. Every question is searched, its candidates built and measured exactly as
:class:`answers.reader.Reader` does at query time, and each candidate is labelled by whether it holds a gold
answer.

Then, in order:
1. the question-kind classifier (:mod:`answers.kinds`): softmax regression on the questions' multilingual-e5
   vectors, labels read off their gold answers, L2 strength by 5-fold cross-validation;
2. the ranker: a conditional logit over each answerable question's candidates, L2 strength by cross-validation;
3. ``keep_share``, the share of the best unit's probability a further unit needs to be quoted;
4. answerability: a logistic regression over :data:`answers.signals.ANSWERABILITY` computed from out-of-fold
   ranker scores, and the products of each pair of the first :data:`answers.signals.CROSSED` of them
   (:class:`answers.model.Crossed`), labelled by whether the corpus answers the question (1 for a set's own
   answerable questions, 0 for SQuAD 2.0's unanswerable ones, for the wrong corpus's and for those asked without
   their paragraph),
   Platt-calibrated on its out-of-fold scores;
   the threshold answers at least :data:`ANSWER_SHARE` of each fitted set's own answerable questions, out of
   fold.

Candidate vectors and question vectors are cached (``~/.cache/strata/reader``), and so are each set's signals,
so a refit (``--without``, or ``bench.answers`` fitting without the set it measures) takes seconds. ``--check``
fits again and fails when the result differs from the shipped file by more than CPU rounding (multilingual-e5's
4-bit kernels differ slightly across CPUs).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from answers.kinds import KINDS, KindModel, answer_kind
from answers.model import CLIP, WEIGHTS_PATH, Crossed, Linear, Platt, ReaderWeights, crossed_names, crossed_signals
from answers.reader import IndexCorpus, Reader, choose
from answers.signals import ANSWERABILITY, CROSSED, FEATURES, Asked, answerability, cross_kinds
from core.fitting import fit_conditional_logit, fit_logistic, fit_softmax, group_softmax
from core.records import Chunk, stable_hash
from core.text.fold import fold
from core.text.script import has_cjk

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("STRATA_SHARED_DATA", ROOT.parent / "shared" / "data"))
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "strata" / "reader"
SIGNALS_VERSION = 6  # bump when a signal's definition or the questions asked change: cached signals are then
# computed again
TOP_K = 8  # passages searched per question (as retrieval.top_k)
N_UNITS = 4  # units quoted at most (as retrieval.answer_sentences)
FOLDS = 5
LAMBDAS = (0.1, 1.0, 10.0, 100.0)
KIND_LAMBDAS = (0.3, 1.0, 3.0, 10.0)
KEEP_SHARES = (0.05, 0.1, 0.2, 0.3, 0.5)
UNIT_COST = 0.03  # what one more quoted unit must buy in hit rate to be worth reading
ANSWER_SHARE = 0.92  # the threshold answers this share of the fitted sets' own answerable questions (out of fold)
OWN_LIMIT = 1500  # own questions per set half at most
FOREIGN_LIMIT = 300  # questions of the other half asked of a half
NEAR_LIMIT = 300  # own answerable questions per set asked again without their own paragraph


@dataclass(frozen=True)
class LabelledSet:
    name: str
    language: str
    kind: str  # "qa" (paragraph, question, answer spans) or "multihop" (BEIR corpus, queries, answers)
    path: str  # under the data folder
    role: str  # "fit" (in the shipped weights) or "eval" (never fitted)


SETS: dict[str, LabelledSet] = {s.name: s for s in (
    LabelledSet("squad2", "en", "qa", "qa/squad2_dev_en.jsonl", "fit"),
    LabelledSet("drcd", "zh", "qa", "qa/drcd_zh.jsonl", "fit"),
    LabelledSet("polaq", "pl", "qa", "qa/polaq_manual_pl.jsonl", "fit"),
    LabelledSet("musique", "en", "multihop", "multihop/musique_dev", "fit"),
    LabelledSet("hotpotqa", "en", "multihop", "multihop/hotpotqa_dev", "fit"),
    LabelledSet("squad2-heldout", "en", "qa", "qa/squad2_dev_en.jsonl", "eval"),
    LabelledSet("drcd-test", "zh", "qa", "qa/drcd_zh.jsonl", "eval"),
    LabelledSet("xquad-en", "en", "qa", "qa/xquad_en.jsonl", "eval"),
    LabelledSet("xquad-zh", "zh", "qa", "qa/xquad_zh.jsonl", "eval"),
)}
FOREIGN_PAIRS = {"musique": "hotpotqa", "hotpotqa": "musique"}


# -- the data ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class QARow:
    qid: str
    title: str
    context: str
    question: str
    answers: tuple[str, ...]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise SystemExit(f"labelled data not found: {path} (set --data or STRATA_SHARED_DATA)")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _heldout_article(title: str) -> bool:
    return int(stable_hash("reader-heldout", title, size=4), 16) % 4 == 0


def qa_rows(spec: LabelledSet, data: Path = DATA) -> list[QARow]:
    """The rows of a question-answering set, as the set's role selects them."""
    rows = _jsonl(data / spec.path)
    if spec.name.startswith("squad2"):
        xquad = {r["context"] for r in _jsonl(data / SETS["xquad-en"].path)}
        heldout = spec.name == "squad2-heldout"
        rows = [r for r in rows if r["context"] not in xquad and _heldout_article(r["title"]) == heldout]
    elif spec.name == "drcd":
        rows = [r for r in rows if r["id"].startswith("drcd-dev-")]
    elif spec.name == "drcd-test":
        rows = [r for r in rows if r["id"].startswith("drcd-test-")]
    return [QARow(r["id"], r["title"], r["context"], r["question"],
                  tuple(a["text"] for a in r["answers"])) for r in rows]


def multihop_rows(spec: LabelledSet, data: Path = DATA) -> tuple[list[dict[str, Any]], list[QARow]]:
    """(corpus rows, questions with answers) of a multi-hop set."""
    folder = data / spec.path
    corpus = _jsonl(folder / "corpus.jsonl")
    answers = {r["_id"]: tuple(str(a) for a in r["answers"]) for r in _jsonl(folder / "answers.jsonl")}
    questions = [QARow(r["_id"], "", "", r["text"], answers[r["_id"]]) for r in _jsonl(folder / "queries.jsonl")
                 if r["_id"] in answers]
    return corpus, questions


def holds(text: str, answers: Iterable[str]) -> bool:
    """Whether ``text`` holds one of ``answers`` (folded; whole words, except in scripts without spaces)."""
    t = " ".join(fold(text).split())
    for a in answers:
        a = " ".join(fold(a).split())
        if not a:
            continue
        if has_cjk(a):
            if a in t:
                return True
        elif re.search(r"(?<!\w)" + re.escape(a) + r"(?!\w)", t):
            return True
    return False


# -- corpora -------------------------------------------------------------------------------------------------
@dataclass
class Context:
    """An indexed corpus: its chunk index and entity lexicon."""

    name: str
    index: Any
    lexicon: Any


def build_context(name: str, docs: Sequence[tuple[str, str, str]], embedder: str = "auto") -> Context:
    """A Strata index over ``docs`` ((doc id, title, text): one chunk each, the title as its first line and its
    metadata): BM25, the default embedder's chunk vectors (cached), the offline extractor's entity graph walked
    for the graph list and the second hop by title, and the entity lexicon, so that questions are searched as a
    workspace searches them (without the entity vectors a published generation adds)."""
    from core.records import GraphSnapshot
    from core.settings import ExtractionSettings, RetrievalSettings
    from core.records import chunk_id
    from extraction.offline import OfflineExtractor
    from extraction.resolution import resolve
    from extraction.wordlike import WordModel
    from retrieval.graph_walk import walk_for_index
    from retrieval.index import ChunkIndex
    from retrieval.lexicon import lexicon_for
    from retrieval.vector_cache import VectorCache

    chunks = []
    for doc_id, title, text in docs:
        body = f"{title}\n{text}".strip() if title else text
        chunks.append(Chunk(chunk_id(doc_id, 0), doc_id, 0, body, 0, len(body), 0, doc_id, stable_hash(body, size=12),
                            {"title": title} if title else {}))
    CACHE.mkdir(parents=True, exist_ok=True)
    index = ChunkIndex(RetrievalSettings(embedder=embedder), vector_cache=VectorCache(CACHE / "chunks.sqlite"))  # type: ignore[arg-type]
    index.add(chunks)
    # (extracted as an index run extracts: judged by the corpus's word model, strata.stages.corpus_words)
    words = WordModel.of_texts(c.text for c in chunks)
    entities, relations = resolve(OfflineExtractor(ExtractionSettings(), words).extract(chunks).extractions)
    graph = GraphSnapshot(tuple(entities), tuple(relations))
    lexicon = lexicon_for(graph, index)
    index.graph_walk = walk_for_index(graph, index, bases=lexicon.bases)  # (the base forms found once)
    return Context(name, index, lexicon)


@dataclass(frozen=True)
class Episode:
    """One question asked of one corpus."""

    set: str
    qid: str
    question: str
    answers: tuple[str, ...]
    context: str  # the corpus it is asked of
    own: bool  # asked of its own corpus, all of it (else of the wrong one, or without its paragraph)
    without: str = ""  # the document filtered out of the search: the question's own paragraph

    @property
    def answerable(self) -> bool:
        return self.own and bool(self.answers)


def _half(title: str) -> int:
    return int(stable_hash("reader-half", title, size=4), 16) % 2


def _sample(items: list[Any], limit: int, salt: str) -> list[Any]:
    """At most ``limit`` items, the same ones every time (by a stable hash of their ids)."""
    if len(items) <= limit:
        return items
    return sorted(items, key=lambda r: stable_hash(salt, r.qid, size=8))[:limit]


def set_episodes(spec: LabelledSet, data: Path, limit: int | None) -> tuple[list[Context], list[Episode]]:
    """The corpora of a set and the questions asked of them."""
    own_limit = limit or OWN_LIMIT
    foreign_limit = max(1, (limit or OWN_LIMIT) * FOREIGN_LIMIT // OWN_LIMIT)
    near_limit = max(1, (limit or OWN_LIMIT) * NEAR_LIMIT // OWN_LIMIT)
    if spec.kind == "multihop":
        corpus, questions = multihop_rows(spec, data)
        ctx = build_context(spec.name, [(r["_id"], str(r.get("title", "")), str(r["text"])) for r in corpus])
        eps = [Episode(spec.name, q.qid, q.question, q.answers, spec.name, True) for q in _sample(questions, own_limit, "own")]
        other = FOREIGN_PAIRS.get(spec.name)
        if other:
            _, foreign = multihop_rows(SETS[other], data)
            eps += [Episode(other, q.qid, q.question, q.answers, spec.name, False)
                    for q in _sample(foreign, foreign_limit, "foreign")]
        return [ctx], eps
    rows = qa_rows(spec, data)
    contexts, episodes = [], []
    for half in (0, 1):
        mine = [r for r in rows if _half(r.title) == half]
        others = [r for r in rows if _half(r.title) != half and r.answers]
        paragraphs = list(dict.fromkeys((r.title, r.context) for r in mine))
        docs = [(f"{spec.name}-{half}-{i:05d}", t, c) for i, (t, c) in enumerate(paragraphs)]
        name = f"{spec.name}/{half}"
        contexts.append(build_context(name, docs))
        episodes += [Episode(spec.name, r.qid, r.question, r.answers, name, True)
                     for r in _sample(mine, own_limit // 2, "own")]
        episodes += [Episode(spec.name, r.qid, r.question, r.answers, name, False)
                     for r in _sample(others, foreign_limit // 2, "foreign")]
        episodes += without_paragraph(spec.name, name, mine, docs, near_limit // 2)
    return contexts, episodes


def without_paragraph(set_name: str, context: str, rows: list[QARow], docs: Sequence[tuple[str, str, str]],
                      limit: int) -> list[Episode]:
    """At most ``limit`` answerable questions of ``rows`` asked of ``context`` with their own paragraph (of
    ``docs``: doc id, title, text) filtered out, among those whose answer no other paragraph holds: the corpus is
    then on their topic but does not answer them."""
    doc_of = {(t, c): d for d, t, c in docs}
    out = []
    for r in sorted((r for r in rows if r.answers), key=lambda r: stable_hash("near", r.qid, size=8)):
        if len(out) >= limit:
            break
        own = doc_of[(r.title, r.context)]
        if not any(d != own and holds(text, r.answers) for d, _, text in docs):
            out.append(Episode(set_name, r.qid, r.question, r.answers, context, False, own))
    return out


# -- signals of every episode ------------------------------------------------------------------------------
@dataclass
class SetSignals:
    """Every episode of a set: its question's vector and kind label, its candidates' signals and labels."""

    episodes: list[Episode]
    qvec: np.ndarray  # (episodes, dim)
    kind: np.ndarray  # kind label per episode (-1: no gold answer)
    x: np.ndarray  # (candidates, features), want_* columns not yet crossed with kinds
    y: np.ndarray  # candidate holds a gold answer
    starts: np.ndarray  # first candidate row of each episode (episodes without candidates start at the next's)
    counts: np.ndarray  # candidates per episode
    oov: np.ndarray
    has_entities: np.ndarray
    n_terms: np.ndarray
    sim: list[np.ndarray] = field(default_factory=list)  # per episode, its candidates' vector similarities



# The code a candidate's signals come from: a change to any of it computes cached signals again.
SIGNAL_CODE = ("answers/signals.py", "answers/units.py", "answers/reader.py", "core/text/*.py", "core/settings.py",
               "extraction/*.py", "retrieval/*.py", "communities/sentences.py")  # settings: the retrieval defaults


def _code_digest() -> str:
    """A digest of :data:`SIGNAL_CODE` as it is when this module is first imported (the code the process runs,
    whatever is edited on disk meanwhile)."""
    h = hashlib.blake2b(digest_size=8)
    for pattern in SIGNAL_CODE:
        for f in sorted(ROOT.glob(pattern)):
            h.update(f.read_bytes())
    return h.hexdigest()


CODE_DIGEST = _code_digest()


def _cache_key(spec: LabelledSet, data: Path, limit: int | None) -> str:
    source = data / spec.path
    files = sorted(source.glob("*.jsonl")) if source.is_dir() else [source]
    h = hashlib.blake2b(digest_size=8)
    for f in files:
        h.update(f.read_bytes())
    h.update(CODE_DIGEST.encode())
    h.update(json.dumps([SIGNALS_VERSION, FEATURES, spec.name, limit, OWN_LIMIT, FOREIGN_LIMIT, NEAR_LIMIT,
                         TOP_K]).encode())
    return f"{spec.name}-{h.hexdigest()}"


def set_signals(spec: LabelledSet, data: Path, limit: int | None, reader: Reader,
                progress: bool = True) -> SetSignals:
    """The signals of every episode of ``spec``, from the cache when computed before."""
    from retrieval.vector_cache import VectorCache

    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"{_cache_key(spec, data, limit)}.npz"
    meta_path = path.with_suffix(".json")
    if path.exists() and meta_path.exists():
        z = np.load(path, allow_pickle=False)
        eps = [Episode(**e) for e in json.loads(meta_path.read_text(encoding="utf-8"))]
        sims = [z[f"sim{i}"] for i in range(len(eps))]
        return SetSignals(eps, z["qvec"], z["kind"], z["x"], z["y"], z["starts"], z["counts"], z["oov"],
                          z["has_entities"], z["n_terms"], sims)
    contexts, eps = set_episodes(spec, data, limit)
    by_name = {c.name: c for c in contexts}
    disk = VectorCache(CACHE / "vectors.sqlite")
    qvec = _question_vectors(reader, [e.question for e in eps], disk)
    xs, ys, counts, sims, oov, ents, nterms, kinds = [], [], [], [], [], [], [], []
    started = time.monotonic()
    for i, (ep, v) in enumerate(zip(eps, qvec)):
        ctx = by_name[ep.context]
        corpus = IndexCorpus(ctx.index, ctx.lexicon)
        q = reader.question(ep.question, corpus, v)
        without = {"document_id": {"ne": ep.without}} if ep.without else None
        outcome = ctx.index.search_detailed(ep.question, TOP_K, metadata_filter=without)
        pool = reader.candidates(q, outcome.hits, ctx.index, outcome.hops, without)
        x, vecs, _ = reader.score(q, pool, corpus, disk)
        xs.append(x)
        ys.append(np.array([holds(c.unit.text, ep.answers) if ep.own else False for c in pool.candidates], bool))
        counts.append(len(pool.candidates))
        sims.append((vecs @ vecs.T).astype(np.float32) if vecs is not None and len(vecs) else np.eye(len(x), dtype=np.float32))
        oov.append(q.oov)
        ents.append(bool(q.entities))
        nterms.append(len(q.terms))
        kinds.append(KINDS.index(answer_kind(ep.answers[0])) if ep.answers else -1)
        if progress and (i + 1) % 100 == 0:
            rate = (i + 1) / max(1e-9, time.monotonic() - started)
            print(f"  {spec.name}: {i + 1}/{len(eps)} questions, {rate:.1f}/s, ETA {(len(eps) - i - 1) / rate:.0f} s",
                  file=sys.stderr, flush=True)
    disk.close()
    counts_a = np.array(counts, np.int64)
    starts = np.concatenate([[0], np.cumsum(counts_a)[:-1]]).astype(np.int64) if len(counts_a) else np.zeros(0, np.int64)
    out = SetSignals(eps, qvec, np.array(kinds, np.int64),
                     np.concatenate(xs) if xs else np.zeros((0, len(FEATURES))),
                     np.concatenate(ys) if ys else np.zeros(0, bool), starts, counts_a, np.array(oov),
                     np.array(ents, bool), np.array(nterms, np.int64), sims)
    np.savez_compressed(path, qvec=out.qvec, kind=out.kind, x=out.x, y=out.y, starts=out.starts, counts=out.counts,
                        oov=out.oov, has_entities=out.has_entities, n_terms=out.n_terms,
                        **{f"sim{i}": s for i, s in enumerate(sims)})
    meta_path.write_text(json.dumps([e.__dict__ for e in eps], ensure_ascii=False), encoding="utf-8")
    return out


def _question_vectors(reader: Reader, questions: Sequence[str], disk: Any) -> np.ndarray:
    """multilingual-e5 query vectors, cached by question text."""
    if reader.embedder is None:
        return np.zeros((len(questions), 384), np.float32)
    name = "query:" + reader.embedder.name
    keys = [hashlib.blake2b(q.encode("utf-8"), digest_size=12).hexdigest() for q in questions]
    have = disk.get_many(name, list(dict.fromkeys(keys)), reader.embedder.dim)
    todo = [k for k in dict.fromkeys(keys) if k not in have]
    if todo:
        text = dict(zip(keys, questions))
        for s in range(0, len(todo), 256):
            part = todo[s:s + 256]
            vecs = reader.embedder.embed_queries([text[k] for k in part])
            fresh = {k: np.asarray(v, np.float32) for k, v in zip(part, vecs)}
            disk.put_many(name, fresh)
            have.update(fresh)
    return np.stack([have[k] for k in keys]) if keys else np.zeros((0, reader.embedder.dim), np.float32)


# -- fitting -------------------------------------------------------------------------------------------------
def _fold(qid: str, salt: str = "reader-fold") -> int:
    return int(stable_hash(salt, qid, size=4), 16) % FOLDS


def fit_kinds(vecs: np.ndarray, labels: np.ndarray, folds: np.ndarray) -> tuple[KindModel, np.ndarray, dict]:  # type: ignore[type-arg]
    """The kind classifier, its L2 strength chosen by cross-validated log loss, and out-of-fold P(kind)."""
    best = None
    k = len(KINDS)
    for lam in KIND_LAMBDAS:
        oof = np.zeros((len(labels), k))
        for f in range(FOLDS):
            tr, te = folds != f, folds == f
            if not te.any():
                continue
            coef, bias = fit_softmax(vecs[tr], labels[tr], k, lam)
            z = vecs[te] @ coef.T + bias
            z = np.exp(z - z.max(1, keepdims=True))
            oof[te] = z / z.sum(1, keepdims=True)
        ll = -float(np.mean(np.log(np.maximum(oof[np.arange(len(labels)), labels], 1e-12))))
        if best is None or ll < best[0]:
            best = (ll, lam, oof)
    assert best is not None
    coef, bias = fit_softmax(vecs, labels, k, best[1])
    acc = float(np.mean(best[2].argmax(1) == labels))
    return KindModel(coef, bias), best[2], {"lambda": best[1], "cv_log_loss": round(best[0], 4), "cv_accuracy": round(acc, 4)}


def _standardize(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = x.mean(0)
    scale = x.std(0)
    scale[scale < 1e-6] = 1.0
    return mean, scale


@dataclass
class Pooled:
    """Every episode of the fitted sets, side by side."""

    sets: list[str]
    episodes: list[Episode]
    x: np.ndarray
    y: np.ndarray
    starts: np.ndarray
    counts: np.ndarray
    qvec: np.ndarray
    kind: np.ndarray
    oov: np.ndarray
    has_entities: np.ndarray
    n_terms: np.ndarray
    sim: list[np.ndarray]

    @classmethod
    def of(cls, parts: dict[str, SetSignals]) -> "Pooled":
        names = sorted(parts)
        xs = [parts[n].x for n in names]
        offsets = np.cumsum([0] + [len(x) for x in xs])[:-1]
        return cls(names, [e for n in names for e in parts[n].episodes],
                   np.concatenate(xs) if xs else np.zeros((0, len(FEATURES))),
                   np.concatenate([parts[n].y for n in names]),
                   np.concatenate([parts[n].starts + o for n, o in zip(names, offsets)]),
                   np.concatenate([parts[n].counts for n in names]),
                   np.concatenate([parts[n].qvec for n in names]),
                   np.concatenate([parts[n].kind for n in names]),
                   np.concatenate([parts[n].oov for n in names]),
                   np.concatenate([parts[n].has_entities for n in names]),
                   np.concatenate([parts[n].n_terms for n in names]),
                   [s for n in names for s in parts[n].sim])

    def rows(self, i: int) -> slice:
        return slice(int(self.starts[i]), int(self.starts[i] + self.counts[i]))


def fit(parts: dict[str, SetSignals]) -> tuple[ReaderWeights, dict[str, Any]]:
    """Fit every model on the episodes of ``parts`` (see the module docstring); the weights and a report."""
    pooled = Pooled.of(parts)
    eps = pooled.episodes
    folds = np.array([_fold(e.qid) for e in eps])
    # 1. kinds, from each distinct answerable question once
    labelled = np.array([e.answerable and k >= 0 for e, k in zip(eps, pooled.kind)])
    kind_model, oof_kinds, kind_report = fit_kinds(pooled.qvec[labelled].astype(np.float64), pooled.kind[labelled],
                                                   folds[labelled])
    kinds = np.array([kind_model.probabilities(v) for v in pooled.qvec])
    kinds[labelled] = oof_kinds
    oof_of = {eps[i].qid: kinds[i] for i in np.flatnonzero(labelled)}
    for i, e in enumerate(eps):  # a question asked again (of another corpus, without its paragraph) keeps its
        if e.qid in oof_of:      # out-of-fold kinds
            kinds[i] = oof_of[e.qid]
    x = pooled.x.copy()
    for i in range(len(eps)):
        cross_kinds(x[pooled.rows(i)], kinds[i])
    # 2. the ranker, on the answerable questions with a candidate holding the answer
    has_pos = np.array([bool(pooled.y[pooled.rows(i)].any()) for i in range(len(eps))])
    train = np.array([e.answerable for e in eps]) & has_pos
    mean, scale = _standardize(x[np.concatenate([np.arange(pooled.rows(i).start, pooled.rows(i).stop)
                                                 for i in np.flatnonzero(train)])])
    xs = np.clip((x - mean) / scale, -CLIP, CLIP)

    def groups(sel: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        idx = [np.arange(pooled.rows(i).start, pooled.rows(i).stop) for i in np.flatnonzero(sel)]
        rows = np.concatenate(idx) if idx else np.zeros(0, np.int64)
        starts = np.concatenate([[0], np.cumsum([len(r) for r in idx])[:-1]]).astype(np.int64)
        return rows, starts, np.array([len(r) for r in idx])

    best = None
    for lam in LAMBDAS:
        ll = []
        for f in range(FOLDS):
            tr_rows, tr_starts, _ = groups(train & (folds != f))
            te_rows, te_starts, _ = groups(train & (folds == f))
            if not len(te_rows):
                continue
            w = fit_conditional_logit(xs[tr_rows], pooled.y[tr_rows], tr_starts, lam)
            p = group_softmax(xs[te_rows] @ w, te_starts)
            ll.append(-np.sum(np.log(np.maximum(np.add.reduceat(p * pooled.y[te_rows], te_starts), 1e-12))))
        score = float(np.sum(ll)) / max(1, int(train.sum()))
        if best is None or score < best[0]:
            best = (score, lam)
    assert best is not None
    lam = best[1]
    all_rows, all_starts, _ = groups(train)
    coef = fit_conditional_logit(xs[all_rows], pooled.y[all_rows], all_starts, lam)
    ranker = Linear(FEATURES, mean, scale, coef)
    # out-of-fold logits for every question: its fold's model never saw it (nor its twin asked of another
    # corpus or without its paragraph: folds go by question id)
    logits = xs @ coef
    for f in range(FOLDS):
        tr_rows, tr_starts, _ = groups(train & (folds != f))
        w = fit_conditional_logit(xs[tr_rows], pooled.y[tr_rows], tr_starts, lam)
        for i in np.flatnonzero(folds == f):
            r = pooled.rows(i)
            logits[r] = xs[r] @ w
    # 3. keep_share: hit rate of the quoted units against how many are quoted (own answerable questions)
    own = np.array([e.answerable for e in eps])
    trade = {}
    for share in KEEP_SHARES:
        hit = quoted = 0
        for i in np.flatnonzero(own):
            r = pooled.rows(i)
            chosen = choose(logits[r], pooled.sim[i], share, N_UNITS)
            hit += bool(pooled.y[r][chosen].any()) if chosen else 0
            quoted += len(chosen)
        n = max(1, int(own.sum()))
        trade[share] = (hit / n, quoted / n)
    keep_share = max(KEEP_SHARES, key=lambda s: (trade[s][0] - UNIT_COST * trade[s][1], s))
    # 4. answerability
    z, hits = [], []
    for i, e in enumerate(eps):
        r = pooled.rows(i)
        chosen = choose(logits[r], pooled.sim[i], keep_share, N_UNITS)
        asked = Asked(kinds[i], float(pooled.oov[i]), bool(pooled.has_entities[i]), int(pooled.n_terms[i]),
                      has_cjk(e.question))
        z.append(answerability(asked, x[r], logits[r], chosen, pooled.sim[i]))
        hits.append(bool(e.own and chosen and pooled.y[r][chosen].any()))
    # The label is whether the corpus answers the question at all: a hard question of the corpus (its answer
    # missed by the quoted units) is still one to answer; another corpus's, SQuAD's unanswerable ones and those
    # asked without their paragraph (whose answer no other paragraph holds) are not.
    zz, yy = np.array(z), own.astype(float)
    # Each set's own questions weigh as much as the questions it should decline, and every set as much as the
    # others: one threshold then means the same in each corpus and language.
    weight = np.zeros(len(yy))
    for name in pooled.sets:
        mine = np.array([e.context.split("/")[0] == name for e in eps])
        for cls in (0.0, 1.0):
            m = mine & (yy == cls)
            if m.any():
                weight[m] = 0.5 / m.sum()
    weight *= len(yy) / weight.sum()
    a_mean, a_scale = _standardize(zz)
    crossed = crossed_signals(zz, a_mean, a_scale, CROSSED)
    c_mean, c_scale = _standardize(crossed)
    zs = np.clip((crossed - c_mean) / c_scale, -CLIP, CLIP)
    a_best = None
    for a_lam in LAMBDAS:
        oof = np.zeros(len(yy))
        for f in range(FOLDS):
            tr, te = folds != f, folds == f
            c, b = fit_logistic(zs[tr], yy[tr], a_lam, weight[tr])
            oof[te] = zs[te] @ c + b
        ll = float(np.sum(weight * (np.logaddexp(0, oof) - yy * oof)) / weight.sum())
        if a_best is None or ll < a_best[0]:
            a_best = (ll, a_lam, oof)
    assert a_best is not None
    a_coef, a_bias = fit_logistic(zs, yy, a_best[1], weight)
    (pa,), pb = fit_logistic(a_best[2][:, None], yy, 0.0, weight)
    platt = Platt(float(pa), float(pb))
    answerable = Crossed(ANSWERABILITY, a_mean, a_scale, CROSSED,
                         Linear(crossed_names(ANSWERABILITY, CROSSED), c_mean, c_scale, a_coef, a_bias))
    p_oof = np.asarray(platt(a_best[2]))
    # Every fitted set answers at least ANSWER_SHARE of its own answerable questions (a corpus of hard questions
    # must not be declined wholesale because the others are easy).
    per_set = [p_oof[own & np.array([e.set == name for e in eps])] for name in pooled.sets]
    threshold = min((float(np.quantile(p, 1.0 - ANSWER_SHARE)) for p in per_set if len(p)), default=0.5)
    report = _report(pooled, eps, own, np.array(hits), p_oof, threshold, kind_report, best, a_best, trade, keep_share)
    weights = ReaderWeights(kind_model, ranker, answerable, platt, threshold, keep_share, tuple(sorted(parts)), report)
    return weights, report


def _report(pooled: Pooled, eps: list[Episode], own: np.ndarray, hits: np.ndarray, p: np.ndarray, threshold: float,
            kind_report: dict, ranker_cv: tuple, answer_cv: tuple, trade: dict, keep_share: float) -> dict:  # type: ignore[type-arg]
    """Out-of-fold figures per fitted set: how often the quoted units hold the answer, how often the reader
    answers its own questions and declines the others."""
    answered = p >= threshold
    per_set: dict[str, Any] = {}
    for name in pooled.sets:
        mine = np.array([e.set == name and e.context.split("/")[0] == name for e in eps])
        ans = mine & own
        unans = mine & np.array([e.own and not e.answers for e in eps])
        foreign = np.array([not e.own and not e.without and e.context.split("/")[0] == name for e in eps])
        near = mine & np.array([bool(e.without) for e in eps])
        per_set[name] = {
            "questions": int(ans.sum()),
            "hit_rate": round(float((hits[ans] & answered[ans]).mean()), 4) if ans.any() else None,
            "answered_rate": round(float(answered[ans].mean()), 4) if ans.any() else None,
            "unanswerable_declined": round(float((~answered[unans]).mean()), 4) if unans.any() else None,
            "foreign_declined": round(float((~answered[foreign]).mean()), 4) if foreign.any() else None,
            "without_paragraph": int(near.sum()),
            "without_paragraph_declined": round(float((~answered[near]).mean()), 4) if near.any() else None,
        }
    return {"out_of_fold": per_set, "kinds": kind_report,
            "ranker": {"lambda": ranker_cv[1], "cv_log_loss": round(ranker_cv[0], 4)},
            "answerable": {"lambda": answer_cv[1], "cv_log_loss": round(answer_cv[0], 4)},
            "keep_share": {str(k): [round(v[0], 4), round(v[1], 2)] for k, v in trade.items()},
            "keep_share_chosen": keep_share, "threshold": round(threshold, 4)}


def fitted_sets() -> list[str]:
    return [n for n, s in SETS.items() if s.role == "fit"]


def train(without: Sequence[str] = (), limit: int | None = None, data: Path = DATA,
          reader: Reader | None = None, progress: bool = True) -> ReaderWeights:
    """Weights fitted on every fitted set but ``without``."""
    unknown = [w for w in without if w not in SETS]
    if unknown:
        raise SystemExit(f"unknown set(s) {unknown}; the sets are {sorted(SETS)}")
    reader = reader or Reader(weights=_blank_weights(), embedder="shared")
    parts = {}
    for name in fitted_sets():
        if name in without:
            continue
        started = time.monotonic()
        parts[name] = set_signals(SETS[name], data, limit, reader, progress)
        if progress:
            print(f"{name}: {len(parts[name].episodes)} questions, {len(parts[name].x)} candidates "
                  f"({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
    weights, _ = fit(parts)
    return weights


def _blank_weights() -> ReaderWeights:
    """Weights that score nothing: the signals are computed before any model is fitted."""
    from answers.kinds import uniform

    zeros = np.zeros(len(FEATURES))
    names = crossed_names(ANSWERABILITY, CROSSED)
    outer = Linear(names, np.zeros(len(names)), np.ones(len(names)), np.zeros(len(names)))
    return ReaderWeights(uniform(384), Linear(FEATURES, zeros, np.ones(len(FEATURES)), zeros),
                         Crossed(ANSWERABILITY, np.zeros(len(ANSWERABILITY)), np.ones(len(ANSWERABILITY)), CROSSED,
                                 outer), Platt(), 0.0, 1.0)


def _close(a: ReaderWeights, b: ReaderWeights) -> list[str]:
    """How ``a`` differs from ``b`` beyond CPU rounding (empty: the same weights)."""
    problems = []
    if a.trained_on != b.trained_on:
        problems.append(f"fitted on {list(a.trained_on)}, shipped on {list(b.trained_on)}")
    pairs = [("ranker", a.ranker.coef, b.ranker.coef), ("ranker mean", a.ranker.mean, b.ranker.mean),
             ("ranker scale", a.ranker.scale, b.ranker.scale),
             ("answerable", a.answerable.outer.coef, b.answerable.outer.coef),
             ("answerable mean", a.answerable.mean, b.answerable.mean),
             ("answerable scale", a.answerable.scale, b.answerable.scale),
             ("answerable crossed mean", a.answerable.outer.mean, b.answerable.outer.mean),
             ("answerable crossed scale", a.answerable.outer.scale, b.answerable.outer.scale),
             ("platt", np.array([a.platt.a, a.platt.b]), np.array([b.platt.a, b.platt.b])),
             ("kinds", a.kinds.coef, b.kinds.coef)]
    for name, u, v in pairs:
        gap = float(np.max(np.abs(u - v))) if u.shape == v.shape else np.inf
        if gap > 0.05 * max(1.0, float(np.max(np.abs(v)))):
            problems.append(f"{name} differs by up to {gap:.3f}")
    if abs(a.threshold - b.threshold) > 0.03:
        problems.append(f"threshold {a.threshold:.3f} against {b.threshold:.3f}")
    if a.keep_share != b.keep_share:
        problems.append(f"keep_share {a.keep_share} against {b.keep_share}")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=WEIGHTS_PATH)
    ap.add_argument("--without", nargs="*", default=[], help="fitted sets to leave out (for an out-of-sample figure)")
    ap.add_argument("--limit", type=int, default=None, help="questions per set at most (a quick fit)")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--check", action="store_true", help="fit again and compare with the shipped weights")
    args = ap.parse_args(argv)
    from core.settings import ComputeSettings
    from core.threads import configure

    configure(ComputeSettings())
    weights = train(args.without, args.limit, args.data)
    print(json.dumps({k: v for k, v in weights.report.items() if not k.startswith("_")}, indent=1))
    if args.check:
        shipped = ReaderWeights.load(WEIGHTS_PATH)
        problems = _close(weights, shipped)
        print(json.dumps({"matches_shipped": not problems, "differences": problems}))
        return 1 if problems else 0
    weights.save(args.out)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
