"""The router's model: question features, index evidence and the logistic regressions that weigh them.

Three models are shipped in one small JSON file (``routing/weights.json``), all trained by
``python -m routing.train``:

- ``full``: the mean-pooled output of all-MiniLM-L6-v2's third encoder layer for the question (what the question
  means and how it is put), plus the evidence features;
- ``multilingual``: multilingual-e5-small's query embedding plus the evidence features, for questions in a
  language MiniLM does not read (trained on every language: e5 puts a question near its translations);
- ``evidence``: the evidence features alone, used when no MiniLM embedder is available.

The evidence features are deliberately few, and none is a list of words: identifiers and names the offline
extractor finds in the question, entities the index knows (specific ones, mentioned in a small share of the
chunks, against hubs that run through much of the corpus), how concentrated the question's top BM25 scores are
(a question whose answer sits in a few chunks scores them far above the rest; a corpus-wide question does not),
and the question's length. What words such as "overall" or "themes" say reaches the model through the
embedding, in any language. Features that need an index are zero without one, and a ``has_index`` indicator
carries their offset, so a question routed without an index is scored by exactly the part of the model that
does not depend on one.

Standardization is folded into the stored coefficients, and the output is a Platt-calibrated probability that
the question is global.
"""

from __future__ import annotations

import json
import math
import re
import threading
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from core.fitting import logistic
from core.text.names import find_entities
from core.text.keys import is_term
from core.text.language import detect_language

WEIGHTS_PATH = Path(__file__).resolve().parent / "weights.json"
EMBEDDER_NAME = "all-MiniLM-L6-v2"
IDENTIFIER_TYPES = frozenset({"error_code", "config_key", "version", "identifier", "service", "constant"})
HUB_SHARE = 0.25  # an entity mentioned in more than this share of chunks runs through the corpus

# A plain list of English words that people use when they ask about a collection as a whole: the naive peer that
# routing.train and bench.router measure beside the router. The router does not read it (it would name words of
# one language); what such words say reaches the router through the question's embedding.
GENERIC_CUES = ("overall", "across", "themes", "theme", "trends", "trend", "patterns", "pattern", "summarize",
                "summarise", "summary", "overview", "general", "generally", "common", "recurring", "main", "whole",
                "corpus", "collection", "collectively", "throughout", "broadly", "all")
_QUOTED = re.compile(r"\"[^\"]+\"|“[^”]+”|`[^`]+`|'[^']{3,}'")
_WORDS = re.compile(r"\w+", re.UNICODE)

EVIDENCE_FEATURES = ("identifiers", "names", "length", "quoted", "has_index", "specific_known",
                     "hub_known", "bm25_concentration", "other_language")
# other_language stays last: LogisticModel.probability reads it to pick the calibration.
# The languages all-MiniLM-L6-v2 reads (undetermined: too short to tell, judged as English).
EMBEDDER_LANGUAGES = frozenset({"en", "und"})


class Lexicon(Protocol):
    """What the router needs from the entity lexicon (retrieval.lexicon.EntityLexicon)."""

    total_chunks: int

    def find_spans(self, question: str) -> list: ...  # type: ignore[type-arg]  # (the question's words, entity)


class LexicalScorer(Protocol):
    """What the router needs from the index: the top BM25 scores of a question (empty when nothing matches)."""

    def top_scores(self, question: str, k: int) -> np.ndarray: ...


@dataclass(frozen=True, slots=True)
class Evidence:
    """The non-embedding evidence about one question, with the names behind the counts (for the reasons)."""

    identifiers: tuple[str, ...]
    names: tuple[str, ...]
    n_words: int
    quoted: bool
    has_index: bool
    specific: tuple[str, ...]
    hubs: tuple[str, ...]
    concentration: float | None  # top1 / mean(top 10) of the BM25 scores; None without an index or a match
    language: str = "und"  # core.text.language code of the question
    terms: tuple[str, ...] = ()  # those of ``specific`` and ``hubs`` that spell concept terms only (is_term), no name

    @property
    def other_language(self) -> bool:
        """Written in a language the router's embedder does not read (its confidence is calibrated apart)."""
        return self.language not in EMBEDDER_LANGUAGES

    def vector(self) -> np.ndarray:
        conc = math.log(self.concentration) if self.concentration else 0.0
        return np.array([math.log1p(len(self.identifiers)), math.log1p(len(self.names)),
                         math.log(max(1, self.n_words)), float(self.quoted), float(self.has_index),
                         math.log1p(len(self.specific)), math.log1p(len(self.hubs)), conc,
                         float(self.other_language)], dtype=np.float64)


_LETTERS = re.compile(r"[^\W\d_]")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")


def question_language(question: str) -> str:
    """The question's language (core.text.language); an undetermined question written mostly in a script other
    than Latin (Cyrillic, Greek, Arabic, Devanagari...) counts as ``other``: MiniLM reads neither."""
    language = detect_language(question)
    if language == "und":
        letters = len(_LETTERS.findall(question))
        if letters and len(_LATIN.findall(question)) < 0.5 * letters:
            return "other"
    return language


def gather_evidence(question: str, lexicon: Lexicon | None = None, scorer: LexicalScorer | None = None) -> Evidence:
    """The evidence features of ``question``; with no lexicon and no scorer, the index features are neutral."""
    found = find_entities(question)
    identifiers = tuple(dict.fromkeys(f.name for f in found if f.type in IDENTIFIER_TYPES))
    names = tuple(dict.fromkeys(f.name for f in found if f.type not in IDENTIFIER_TYPES and not f.at_start
                                and not f.possessive and not f.term))  # "Ardent's revenue" names Ardent, not a
    # second entity; a Chinese candidate term (a common noun: 齿轮) is no name (as an entity, it is a lexicon span)
    n_words = len(_WORDS.findall(question))
    has_index = lexicon is not None or scorer is not None
    specific: list[str] = []
    hubs: list[str] = []
    terms: list[str] = []
    named: set[str] = set()  # spans that spell an entity other than a term too
    if lexicon is not None and lexicon.total_chunks > 0:
        # Each entity once, shown as the question writes it (a reason quotes the question, not the index's form).
        for span, e in lexicon.find_spans(question):
            (hubs if e.chunks / lexicon.total_chunks > HUB_SHARE else specific).append(span)
            if is_term(e.name, e.type):
                terms.append(span)
            else:
                named.add(span)
    concentration = None
    if scorer is not None:
        top = scorer.top_scores(question, 10)
        if top.size and top[0] > 0:
            concentration = float(top[0] / max(top.mean(), 1e-9))
    return Evidence(identifiers, names, n_words, bool(_QUOTED.search(question)), has_index, tuple(specific),
                    tuple(hubs), concentration, question_language(question),
                    tuple(t for t in terms if t not in named))


@dataclass(frozen=True, slots=True)
class LogisticModel:
    """A logistic regression on raw features (standardization folded in) with a Platt calibration on top. The
    questions in a language the embedder does not read get a calibration of their own (``platt_other``): the
    model is right less often on them, and its confidence says so."""

    features: tuple[str, ...]  # names; "layer3" stands for the MiniLM dimensions
    coef: np.ndarray
    bias: float
    platt_a: float
    platt_b: float
    platt_other: tuple[float, float] | None = None

    def logit(self, x: np.ndarray) -> np.ndarray:
        return x @ self.coef + self.bias

    def probability(self, x: np.ndarray) -> np.ndarray:
        """Calibrated P(global) for rows of ``x`` (the ``other_language`` feature, last, picks the calibration)."""
        z = self.logit(x)
        a = np.full(len(z), self.platt_a)
        b = np.full(len(z), self.platt_b)
        if self.platt_other is not None:
            other = x[:, -1] > 0.5
            a[other], b[other] = self.platt_other
        return logistic(a * z + b)  # type: ignore[return-value]

    def to_dict(self, digits: int = 5) -> dict[str, object]:
        r = lambda v: float(f"{v:.{digits + 2}g}")  # noqa: E731
        out: dict[str, object] = {"features": list(self.features), "coef": [float(f"{c:.{digits}g}") for c in self.coef],
                                  "bias": r(self.bias), "platt": [r(self.platt_a), r(self.platt_b)]}
        if self.platt_other is not None:
            out["platt_other"] = [r(v) for v in self.platt_other]
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "LogisticModel":  # type: ignore[type-arg]
        a, b = data["platt"]
        other = data.get("platt_other")
        if len(data["coef"]) != len(data["features"]):
            raise ValueError(f"{len(data['coef'])} coefficients for {len(data['features'])} features")
        return cls(tuple(data["features"]), np.asarray(data["coef"], np.float64), float(data["bias"]), float(a), float(b),
                   (float(other[0]), float(other[1])) if other else None)


@dataclass(frozen=True, slots=True)
class RouterWeights:
    """The shipped models and what they were trained on."""

    full: LogisticModel
    evidence: LogisticModel
    embedder: str
    training: dict  # type: ignore[type-arg]
    multilingual: LogisticModel | None = None  # over multilingual-e5's query embedding, for other languages

    def save(self, path: Path) -> None:
        data = {"embedder": self.embedder, "full": self.full.to_dict(), "evidence": self.evidence.to_dict()}
        if self.multilingual is not None:
            data["multilingual"] = self.multilingual.to_dict()
        path.write_text(json.dumps({**data, "training": self.training}, ensure_ascii=False,
                                   separators=(",", ":")) + "\n")

    @classmethod
    def load(cls, path: Path = WEIGHTS_PATH) -> "RouterWeights":
        try:
            data = json.loads(path.read_text())
            multi = data.get("multilingual")
            weights = cls(LogisticModel.from_dict(data["full"]), LogisticModel.from_dict(data["evidence"]),
                          data["embedder"], data.get("training", {}),
                          LogisticModel.from_dict(multi) if multi else None)
            if (weights.full.features != ("layer3",) * 384 + EVIDENCE_FEATURES
                    or weights.evidence.features != EVIDENCE_FEATURES
                    or (weights.multilingual is not None
                        and weights.multilingual.features != ("e5",) * 384 + EVIDENCE_FEATURES)):
                raise ValueError("trained for other features than this version reads (retrain with "
                                 "`python -m routing.train`)")
            return weights
        except FileNotFoundError:
            raise FileNotFoundError(f"router weights not found at {path}; run `python -m routing.train`") from None
        except (KeyError, ValueError, TypeError) as exc:
            raise ValueError(f"router weights at {path} are malformed: {exc}") from exc


@lru_cache(maxsize=4)
def shipped_weights(path: Path = WEIGHTS_PATH) -> RouterWeights:
    return RouterWeights.load(path)


def feature_row(evidence: Evidence, embedding: np.ndarray | None) -> np.ndarray:
    """The input row of the full model (``embedding`` is :meth:`QueryEmbeddings.question_features`, first) or,
    without it, of the evidence model."""
    ev = evidence.vector()
    return ev if embedding is None else np.concatenate([np.asarray(embedding, np.float64), ev])


def predict(weights: RouterWeights, evidence: Evidence, embedding: np.ndarray | None,
            multilingual: np.ndarray | None = None) -> tuple[float, str]:
    """Calibrated P(global) and which model gave it: ``multilingual`` for a question in another language when its
    multilingual-e5 query embedding is given, else ``full`` (MiniLM) or, without an embedding, ``evidence``."""
    if multilingual is not None and evidence.other_language and weights.multilingual is not None:
        model, name, embedding = weights.multilingual, "multilingual", multilingual
    else:
        model, name = (weights.evidence, "evidence") if embedding is None else (weights.full, "full")
    return float(model.probability(feature_row(evidence, embedding)[None, :])[0]), name


ROUTER_LAYER = 3  # the encoder layer whose mean-pooled output the full model reads


class QueryEmbeddings:
    """Wraps the MiniLM embedder so that one question runs through the model once. The router reads the
    mean-pooled output of the third encoder layer: it kept the question's meaning and more of how the question is
    put than the final embedding did (development split 0.963 against 0.954 for the final embedding beside it),
    and it costs half the forward pass. The dense search that follows resumes the same question from the
    third layer instead of embedding it again."""

    def __init__(self, inner, size: int = 64) -> None:  # type: ignore[no-untyped-def]
        self.inner = inner
        self.name, self.dim, self.semantic = inner.name, inner.dim, getattr(inner, "semantic", True)
        self.size = size
        # text -> [Partial after ROUTER_LAYER (dropped once finished), its mean, final embedding or None]. Server
        # threads share it: the lock guards the dict and the entries; the model runs outside it.
        self._memo: dict[str, list] = {}  # type: ignore[type-arg]
        self._lock = threading.Lock()

    def _entry(self, text: str) -> list:  # type: ignore[type-arg]
        with self._lock:
            hit = self._memo.get(text)
        if hit is None:
            from core.threads import blas_limit

            hidden: list[np.ndarray] = []
            with blas_limit():
                state = self.inner.advance(self.inner.begin([self.inner.tokenizer.encode(text).ids]), ROUTER_LAYER,
                                           hidden)
            hit = [state, hidden[-1][0], None]
            with self._lock:
                while len(self._memo) >= self.size:
                    self._memo.pop(next(iter(self._memo)))
                self._memo[text] = hit
        return hit

    def question_features(self, text: str) -> np.ndarray:
        """The full model's input from the model: the third encoder layer's mean-pooled output (384 values)."""
        return self._entry(text)[1]

    def clear(self) -> None:
        with self._lock:
            self._memo.clear()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 1:
            with self._lock:
                hit = self._memo.get(texts[0])
                state, final = (hit[0], hit[2]) if hit is not None else (None, None)
            if final is not None:
                return final[None, :]
            if state is not None:
                from core.threads import blas_limit

                with blas_limit():
                    final = self.inner.finish(replace(state))[0]  # a copy: another thread may finish it too
                with self._lock:
                    hit[2], hit[0] = final, None  # type: ignore[index]
                return final[None, :]
        return self.inner.embed(texts)
