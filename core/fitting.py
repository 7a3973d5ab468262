"""The small models Strata fits from labelled data, in numpy and scipy: L2-regularized logistic regression,
softmax (multinomial) regression and the conditional logit (a softmax over each group's candidates, the ranker
of the reader). Deterministic: the same data gives the same weights (no random starts, BLAS as configured)."""

from __future__ import annotations

import numpy as np


def logistic(z: np.ndarray | float) -> np.ndarray | float:
    """The logistic function, written as 0.5 (1 + tanh(z / 2)): the same values as 1 / (1 + exp(-z)), without
    overflow far from zero. Every model here maps a score to a probability with it."""
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(z, np.float64)))


def fit_logistic(x: np.ndarray, y: np.ndarray, lam: float, weight: np.ndarray | None = None,
                 iterations: int = 50) -> tuple[np.ndarray, float]:
    """Weighted L2 logistic regression by Newton's method (the intercept is not penalized)."""
    n, d = x.shape
    w = np.ones(n) if weight is None else weight
    xa = np.hstack([x, np.ones((n, 1))])
    reg = np.full(d + 1, lam)
    reg[-1] = 0.0
    beta = np.zeros(d + 1)

    def loss(b: np.ndarray) -> float:
        z = xa @ b
        return float(np.sum(w * (np.logaddexp(0, z) - y * z)) + 0.5 * np.sum(reg * b * b))

    current = loss(beta)
    for _ in range(iterations):
        p = logistic(xa @ beta)
        grad = xa.T @ (w * (p - y)) + reg * beta
        hess = (xa * (w * p * (1 - p))[:, None]).T @ xa + np.diag(reg + 1e-9)
        step = np.linalg.solve(hess, grad)
        t = 1.0
        while t > 1e-4:
            trial = beta - t * step
            new = loss(trial)
            if new <= current + 1e-12:
                break
            t /= 2
        beta, improvement, current = trial, current - new, new
        if improvement < 1e-10 * max(1.0, abs(current)):
            break
    return beta[:-1], float(beta[-1])


def fit_softmax(x: np.ndarray, y: np.ndarray, classes: int, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """L2 softmax regression: (coef of shape (classes, d), bias of shape (classes,)); intercepts not penalized."""
    n, d = x.shape
    onehot = np.zeros((n, classes))
    onehot[np.arange(n), y] = 1.0

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:classes * d].reshape(classes, d), theta[classes * d:]
        z = x @ w.T + b
        z -= z.max(1, keepdims=True)
        log_p = z - np.log(np.exp(z).sum(1, keepdims=True))
        loss = -float(np.sum(onehot * log_p)) + 0.5 * lam * float(np.sum(w * w))
        g = np.exp(log_p) - onehot
        return loss, np.concatenate([(g.T @ x + lam * w).ravel(), g.sum(0)])

    from scipy.optimize import minimize  # (here: serving imports this module for logistic() alone)

    res = minimize(objective, np.zeros(classes * (d + 1)), jac=True, method="L-BFGS-B",
                   options={"maxiter": 500, "gtol": 1e-6})
    theta = res.x
    return theta[:classes * d].reshape(classes, d), theta[classes * d:]


def group_softmax(scores: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Softmax of ``scores`` within each group (groups are consecutive runs beginning at ``starts``)."""
    out = np.empty_like(scores, dtype=np.float64)
    ends = np.append(starts[1:], len(scores))
    for s, e in zip(starts, ends):
        z = scores[s:e] - scores[s:e].max()
        ez = np.exp(z)
        out[s:e] = ez / ez.sum()
    return out


def fit_conditional_logit(x: np.ndarray, y: np.ndarray, starts: np.ndarray, lam: float) -> np.ndarray:
    """The conditional logit: weights ``w`` such that, in each group (a question's candidates: consecutive rows
    from ``starts``), softmax(x @ w) puts its mass on the rows labelled 1 (a group may have several). Every
    group must hold a row labelled 1. L2 strength ``lam``; no intercept (a softmax ignores one)."""
    group = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(x))))
    y = y.astype(np.float64)

    def objective(w: np.ndarray) -> tuple[float, np.ndarray]:
        s = x @ w
        m = np.maximum.reduceat(s, starts)[group]
        e = np.exp(s - m)
        all_ = np.add.reduceat(e, starts)
        pos = np.add.reduceat(e * y, starts)
        loss = -float(np.sum(np.log(pos) - np.log(all_))) + 0.5 * lam * float(w @ w)
        grad_s = e / all_[group] - e * y / pos[group]
        return loss, x.T @ grad_s + lam * w

    from scipy.optimize import minimize

    res = minimize(objective, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B",
                   options={"maxiter": 1000, "gtol": 1e-7})
    return res.x
