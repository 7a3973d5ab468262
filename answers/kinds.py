"""What a question asks for: the kind of its answer, predicted from the question's multilingual-e5 vector.

The kinds are the shapes a reader can check in a passage: a ``numeral`` (a count, an amount, a year or a date),
a ``name`` (a person, a place, an organization, a work), a ``short`` phrase, or a ``long`` answer (a
description, a reason, a procedure). The classifier is a softmax regression fitted on questions in English,
Chinese and Polish whose kind is read off their gold answers (:func:`answer_kind`), so no list of question words
decides it: "how many", "ile" and "多少" are learned from the questions that have numerals for answers, in the
same vector space (multilingual-e5 puts a question near its translations).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from core.text import cjk, shapes
from core.text.script import CJK_CHAR, has_cjk

KINDS = ("numeral", "name", "short", "long")
NUMERAL_SHARE = 0.25  # an answer this much numeral (by characters) asks for a numeral ("136 sacks", "四次")
NAME_SHARE = 0.5  # an answer this much proper name asks for a name
LONG_WORDS = 5  # an answer of more words than this is long
LONG_CJK_CHARS = 10  # ... and of more CJK characters than this
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def answer_kind(text: str) -> str:
    """The kind of a gold answer, from its shape (how training questions are labelled)."""
    text = text.strip()
    letters = len(re.sub(r"\s", "", text)) or 1
    if sum(len(v) for v in shapes.numerals(text)) / letters >= NUMERAL_SHARE:
        return "numeral"
    if has_cjk(text):
        if sum(len(n.text) for n in cjk.names(text)) / letters >= NAME_SHARE:
            return "name"
        return "long" if len(CJK_CHAR.findall(text)) > LONG_CJK_CHARS else "short"
    words = [w for w in _WORD.findall(text) if not w.isdigit()]
    if words and words[0][:1].isupper() and sum(w[:1].isupper() for w in words) / len(words) >= NAME_SHARE:
        return "name"
    return "long" if len(words) > LONG_WORDS else "short"


@dataclass(frozen=True)
class KindModel:
    """Softmax regression over a question vector: P(kind) for each of :data:`KINDS`."""

    coef: np.ndarray  # (len(KINDS), dim)
    bias: np.ndarray  # (len(KINDS),)

    def probabilities(self, vector: np.ndarray | None) -> np.ndarray:
        """P(kind); the prior (the bias alone) without a vector."""
        z = self.bias.copy() if vector is None else self.coef @ np.asarray(vector, np.float64) + self.bias
        z = np.exp(z - z.max())
        return z / z.sum()

    def to_json(self) -> dict[str, object]:
        return {"kinds": list(KINDS), "coef": np.round(self.coef, 6).tolist(), "bias": np.round(self.bias, 6).tolist()}

    @classmethod
    def from_json(cls, data: dict) -> "KindModel":  # type: ignore[type-arg]
        if tuple(data["kinds"]) != KINDS:
            raise ValueError(f"the kind model predicts {data['kinds']}, not {list(KINDS)}")
        return cls(np.asarray(data["coef"], np.float64), np.asarray(data["bias"], np.float64))


def uniform(dim: int) -> KindModel:
    """A model that knows nothing: every kind equally likely."""
    return KindModel(np.zeros((len(KINDS), dim)), np.zeros(len(KINDS)))
