"""The reader's fitted weights: one small JSON file (``reader_weights.json``) written by ``python -m answers.train``.

It holds three models, each a few numbers per signal:

- ``kinds``: the question-kind classifier (:mod:`answers.kinds`);
- ``ranker``: a conditional logit over a question's candidates: each candidate's score is a weighted sum of its
  standardized signals (:data:`answers.signals.FEATURES`), and a softmax over the candidates gives the
  probability that each holds the answer;
- ``answerable``: a logistic regression over the question-level signals (:data:`answers.signals.ANSWERABILITY`)
  and the products of each pair of those every question has, not their copies for a question written without
  spaces (:class:`Crossed`: one signal weighs another, as a close passage that lacks the question's rarest term
  does), giving the probability that the corpus answers the question, Platt-calibrated on out-of-fold scores;
  below ``threshold`` the reader declines. The probability that the quoted units hold the answer is that times
  the ranker's probability mass on them (:attr:`answers.reader.Reading.quoted_probability`).

Standardization is stored beside each linear model, never folded by hand; the file records which labelled sets
it was fitted on, so a figure measured on one of them is known to be in sample.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from answers.kinds import KindModel
from answers.signals import ANSWERABILITY, CROSSED, FEATURES
from core.fitting import logistic

WEIGHTS_PATH = Path(__file__).resolve().parent / "reader_weights.json"
FORMAT = 2  # 2: the answerability model crosses its signals (:class:`Crossed`)
CLIP = 4.0  # standardized signals are clipped to this many standard deviations (at fitting and at reading)


@dataclass(frozen=True)
class Linear:
    """``(x - mean) / scale @ coef + bias`` over named features."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    bias: float = 0.0

    def standardized(self, x: np.ndarray) -> np.ndarray:
        """``x`` standardized and clipped to :data:`CLIP` standard deviations: a signal far outside what the
        labelled data held (another kind of corpus) counts as much as the most extreme it saw, no more."""
        return np.clip((np.asarray(x, np.float64) - self.mean) / self.scale, -CLIP, CLIP)

    def score(self, x: np.ndarray) -> np.ndarray:
        return self.standardized(x) @ self.coef + self.bias

    def to_json(self) -> dict[str, Any]:
        return {"features": list(self.features), "mean": np.round(self.mean, 6).tolist(),
                "scale": np.round(self.scale, 6).tolist(), "coef": np.round(self.coef, 6).tolist(),
                "bias": round(float(self.bias), 6)}

    @classmethod
    def from_json(cls, data: dict[str, Any], expected: Sequence[str]) -> "Linear":
        if tuple(data["features"]) != tuple(expected):
            raise ValueError(f"the weights name the signals {data['features']}, but this reader computes "
                             f"{list(expected)}: retrain with `python -m answers.train`")
        return cls(tuple(data["features"]), np.asarray(data["mean"], np.float64),
                   np.asarray(data["scale"], np.float64), np.asarray(data["coef"], np.float64),
                   float(data.get("bias", 0.0)))


def crossed_names(features: Sequence[str], pairs: int) -> tuple[str, ...]:
    """``features`` and a name for the product of each pair of the first ``pairs`` of them."""
    i, j = np.triu_indices(pairs, 1)
    return tuple(features) + tuple(f"{features[a]}*{features[b]}" for a, b in zip(i, j))


def cross(z: np.ndarray, pairs: int) -> np.ndarray:
    """Rows of standardized signals ``z`` with the product of each pair of their first ``pairs`` columns appended."""
    z = np.atleast_2d(np.asarray(z, np.float64))
    i, j = np.triu_indices(pairs, 1)
    return np.hstack([z, z[:, i] * z[:, j]])


def crossed_signals(x: np.ndarray, mean: np.ndarray, scale: np.ndarray, pairs: int) -> np.ndarray:
    """Raw signals ``x`` standardized and clipped (as :meth:`Linear.standardized`) and crossed (:func:`cross`): the
    columns :class:`Crossed` scores, the same at fitting (``answers.train``) and at reading."""
    return cross(np.clip((np.asarray(x, np.float64) - mean) / scale, -CLIP, CLIP), pairs)


@dataclass(frozen=True)
class Crossed:
    """A linear score over signals and the products of each pair of the first ``pairs`` of them: the signals are
    standardized and clipped (``mean``, ``scale``, as :class:`Linear` does), crossed (:func:`cross`), and the
    crossed columns scored by ``outer``, which standardizes them again. Out of fold on the labelled sets it
    declines more of the questions a corpus does not answer, at the same share of its own answered, than the
    signals alone (``python -m answers.train`` reports both figures; docs/benchmarks.md)."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    pairs: int
    outer: Linear

    def score(self, x: np.ndarray) -> np.ndarray:
        return self.outer.score(crossed_signals(x, self.mean, self.scale, self.pairs))

    def to_json(self) -> dict[str, Any]:
        return {"features": list(self.features), "mean": np.round(self.mean, 6).tolist(),
                "scale": np.round(self.scale, 6).tolist(), "pairs": self.pairs, "crossed": self.outer.to_json()}

    @classmethod
    def from_json(cls, data: dict[str, Any], expected: Sequence[str]) -> "Crossed":
        if tuple(data["features"]) != tuple(expected):
            raise ValueError(f"the weights name the signals {data['features']}, but this reader computes "
                             f"{list(expected)}: retrain with `python -m answers.train`")
        pairs = int(data["pairs"])
        return cls(tuple(data["features"]), np.asarray(data["mean"], np.float64), np.asarray(data["scale"], np.float64),
                   pairs, Linear.from_json(data["crossed"], crossed_names(expected, pairs)))


@dataclass(frozen=True)
class Platt:
    a: float = 1.0
    b: float = 0.0

    def __call__(self, z: np.ndarray | float) -> np.ndarray | float:
        return logistic(self.a * np.asarray(z, np.float64) + self.b)


@dataclass(frozen=True)
class ReaderWeights:
    kinds: KindModel
    ranker: Linear
    answerable: Crossed
    platt: Platt
    threshold: float  # least calibrated P(answer in the chosen units) at which the reader answers
    keep_share: float  # a unit whose probability is under this share of the best one's is not quoted
    trained_on: tuple[str, ...] = ()
    report: dict[str, Any] = field(default_factory=dict, compare=False)

    def p_answerable(self, z: np.ndarray) -> np.ndarray:
        return np.asarray(self.platt(self.answerable.score(z)))

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "trained_on": list(self.trained_on), "threshold": round(self.threshold, 6),
                "keep_share": round(self.keep_share, 6), "kinds": self.kinds.to_json(),
                "ranker": self.ranker.to_json(), "answerable": self.answerable.to_json(),
                "platt": {"a": round(self.platt.a, 6), "b": round(self.platt.b, 6)},
                "report": {k: v for k, v in self.report.items() if not k.startswith("_")}}

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ReaderWeights":
        if data.get("format") != FORMAT:
            raise ValueError(f"reader weights of format {data.get('format')!r}; this reader reads format {FORMAT}")
        return cls(KindModel.from_json(data["kinds"]), Linear.from_json(data["ranker"], FEATURES),
                   Crossed.from_json(data["answerable"], ANSWERABILITY), Platt(**data["platt"]),
                   float(data["threshold"]), float(data["keep_share"]), tuple(data.get("trained_on", ())),
                   dict(data.get("report", {})))

    @classmethod
    def load(cls, path: Path) -> "ReaderWeights":
        try:
            return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError) as exc:
            raise ValueError(f"{path}: not a reader weights file ({exc})") from exc


@lru_cache(maxsize=1)
def shipped_weights() -> ReaderWeights:
    """The weights shipped with Strata (``answers/reader_weights.json``)."""
    return ReaderWeights.load(WEIGHTS_PATH)
