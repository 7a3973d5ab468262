"""The small fitted models (core.fitting): the conditional logit puts its mass on the labelled candidates and its
gradient is exact; softmax and logistic regression recover a separable signal; fits are deterministic."""

from __future__ import annotations

import numpy as np
from scipy.optimize import check_grad

from core.fitting import fit_conditional_logit, fit_logistic, fit_softmax, group_softmax


def _groups(seed: int = 0, n_groups: int = 200, size: int = 6) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Groups of candidates in which feature 0 marks the answer (with noise) and feature 1 is noise."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n_groups * size, 2))
    y = np.zeros(n_groups * size, bool)
    for g in range(n_groups):
        answer = g * size + int(rng.integers(size))
        y[answer] = True
        x[answer, 0] += 2.0
    return x, y, np.arange(0, n_groups * size, size)


def test_the_conditional_logit_learns_which_signal_marks_the_answer() -> None:
    x, y, starts = _groups()
    w = fit_conditional_logit(x, y, starts, lam=1.0)
    assert w[0] > 1.0 and abs(w[1]) < 0.3
    p = group_softmax(x @ w, starts)
    assert np.allclose(np.add.reduceat(p, starts), 1.0)
    top = [int(np.argmax(p[s:s + 6])) + s for s in starts]
    assert np.mean(y[top]) > 0.7
    assert np.array_equal(w, fit_conditional_logit(x, y, starts, lam=1.0))  # deterministic


def test_the_conditional_logit_gradient_is_exact() -> None:
    x, y, starts = _groups(1, 20, 4)
    y[starts[0] + 1] = True  # a group with two answers
    group = np.repeat(np.arange(len(starts)), 4)

    def loss(w: np.ndarray) -> float:
        s = x @ w
        e = np.exp(s)
        return float(-np.sum(np.log(np.add.reduceat(e * y, starts) / np.add.reduceat(e, starts))) + 0.5 * w @ w)

    def grad(w: np.ndarray) -> np.ndarray:
        s = x @ w
        e = np.exp(s)
        all_, pos = np.add.reduceat(e, starts)[group], np.add.reduceat(e * y, starts)[group]
        return x.T @ (e / all_ - e * y / pos) + w

    assert check_grad(loss, grad, np.array([0.3, -0.2])) < 1e-5
    w = fit_conditional_logit(x, y, starts, lam=1.0)
    assert np.linalg.norm(grad(w)) < 1e-3  # the fit sits at the minimum of the same objective


def test_softmax_and_logistic_regression_recover_a_separable_signal() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(size=(300, 3))
    labels = np.argmax(x, axis=1)
    coef, bias = fit_softmax(x, labels, 3, lam=0.1)
    assert np.mean(np.argmax(x @ coef.T + bias, axis=1) == labels) > 0.95
    y = (x[:, 0] > 0).astype(float)
    w, b = fit_logistic(x, y, lam=0.1)
    assert np.mean(((x @ w + b) > 0) == (y > 0)) > 0.97 and w[0] > abs(w[1]) + abs(w[2])
