"""Private-GLM's round kernels against the dense formulas of Algorithm 2 (docs/glm.md,
"Per-round procedure"); the rounds themselves: tests/policies/test_private_glm.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.linalg

from dpbandits.policies import private_glm as pg
from dpbandits.policies import private_glm_rounds as rounds

DELTA = 0.02


def _white(a: np.ndarray, floor: float = 1e-12) -> np.ndarray:
    d = a.shape[0]
    w = np.empty((d, d))
    rounds.whitening_into(np.ascontiguousarray(a), floor, w, np.empty((d, d)))
    return w


def test_generalised_eigenvalue() -> None:
    """The largest generalised eigenvalue of (A, B) from a whitening of B is the dense one
    (scipy's generalised eigh)."""
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 3))
    b = a @ a.T + 3 * np.eye(3)
    f_sw = pg.private_glm_constants(3, 5000, 2.0, 1.0, 18.4, 2.5, 4.0, DELTA, DELTA).f_sw
    work = np.empty((3, 3))
    assert rounds.gen_eig_max_white(1.5 * b, _white(b), work) > f_sw
    assert rounds.gen_eig_max_white(1.4 * b, _white(b), work) < f_sw
    for d in (2, 3, 5):
        for _ in range(20):
            m = rng.normal(size=(d, d))
            c = m @ m.T + 0.5 * np.eye(d)
            n = rng.normal(size=(d, d))
            b = n @ n.T + 0.1 * np.eye(d)
            assert rounds.gen_eig_max_white(c, _white(b), np.empty((d, d))) == pytest.approx(
                scipy.linalg.eigh(c, b, eigvals_only=True)[-1], rel=1e-9)


def test_whitenings_and_the_norms_they_give() -> None:
    """WᵀAW = I and ‖Wᵀx‖² = xᵀA⁻¹x, by Cholesky and, for an A without a Cholesky factor, by
    its eigen-decomposition with eigenvalues clipped at the floor (what the repair does)."""
    rng = np.random.default_rng(2)
    for d in (1, 3, 5):
        m = rng.normal(size=(d, d))
        a = m @ m.T + 0.3 * np.eye(d)
        w = _white(a)
        assert np.allclose(np.triu(w), w)  # L⁻ᵀ: upper triangular
        np.testing.assert_allclose(w.T @ a @ w, np.eye(d), atol=1e-10)
        arms = rng.normal(size=(7, d))
        out = np.empty(7)
        rounds.white_norms_into(arms, w, out)
        np.testing.assert_allclose(out, np.einsum("ij,ij->i", arms, np.linalg.solve(a, arms.T).T),
                                   rtol=1e-10)
        vals, vecs = np.linalg.eigh(a)
        indefinite = (vecs * np.r_[-1.0, vals[1:]]) @ vecs.T
        w = _white(indefinite, 0.25)
        clipped = np.r_[0.25, vals[1:]]
        np.testing.assert_allclose(w @ w.T, (vecs / clipped) @ vecs.T, rtol=1e-8, atol=1e-8)


def test_log_det_is_slogdets() -> None:
    rng = np.random.default_rng(2)
    for d in (1, 3, 5):
        m = rng.normal(size=(d, d))
        a = m @ m.T + 0.3 * np.eye(d)
        vals, vecs = np.linalg.eigh(a)
        work = np.empty((d, d))
        assert rounds.log_det_positive(a, work) == pytest.approx(np.linalg.slogdet(a)[1],
                                                                 rel=1e-12)
        if d >= 2:  # two negative eigenvalues: det > 0; one: −∞ (slogdet's sign)
            flip = vecs @ np.diag(np.r_[-vals[:2], vals[2:]]) @ vecs.T
            assert rounds.log_det_positive(flip, work) == pytest.approx(
                np.linalg.slogdet(flip)[1], rel=1e-9)
            one = vecs @ np.diag(np.r_[-vals[:1], vals[1:]]) @ vecs.T
            assert rounds.log_det_positive(one, work) == -math.inf


def test_the_decision_rule_eliminates_with_theta_w_then_plays_the_ucb_arm() -> None:
    """`ucb_arm` against the dense formulas of Alg. 2 lines 13–15 on random instances, with
    and without elimination (θ_w = 0 keeps every arm)."""
    rng = np.random.default_rng(3)
    for case in range(200):
        d, K = int(rng.integers(1, 6)), int(rng.integers(1, 12))
        arms = rng.normal(size=(K, d))
        theta_w = np.zeros(d) if case % 4 == 0 else rng.normal(size=d)
        theta_tau = rng.normal(size=d)
        h = rng.normal(size=(d, d))
        h = h @ h.T + np.eye(d)
        v = rng.normal(size=(d, d))
        v = v @ v.T + 0.2 * np.eye(d)
        beta, width_scale = rng.uniform(0.1, 3.0, size=2)
        arm = rounds.ucb_arm(arms, theta_w, theta_tau, beta, _white(h), width_scale, _white(v),
                             np.empty(K), np.empty(K))
        ucb = arms @ (0.5 * (theta_w + theta_tau)) + beta * np.sqrt(
            np.einsum("ij,ij->i", arms, np.linalg.solve(h, arms.T).T))
        if theta_w.any():
            width = width_scale * np.sqrt(np.einsum("ij,ij->i", arms,
                                                    np.linalg.solve(v, arms.T).T))
            keep = arms @ theta_w + width >= (arms @ theta_w - width).max()
            ucb = np.where(keep, ucb, -np.inf)
        assert ucb[arm] >= ucb.max() - 1e-9 and np.isfinite(ucb[arm])


def test_the_gershgorin_bound_decides_as_the_eigenvalue() -> None:
    """`gen_eig_above` says what comparing the largest generalised eigenvalue says, near
    the threshold (where the eigenvalues decide) and far below it (where the bound does)."""
    rng = np.random.default_rng(4)
    for d in (1, 2, 3, 5):
        for scale in (0.01, 0.1, 0.3, 1.0):
            for _ in range(40):
                n = rng.normal(size=(d, d))
                b = n @ n.T + np.eye(d)
                e = rng.normal(size=(d, d)) * scale
                a = b + 0.5 * (e + e.T) @ b @ (e + e.T) * 0.5 + 0.2 * b * rng.random()
                w = _white(b)
                top = rounds.gen_eig_max_white(a, w, np.empty((d, d)))
                for threshold in (top * 0.999, top * 1.001, top * 1.5, 1.4):
                    assert rounds.gen_eig_above(a, w, threshold, np.empty((d, d))) == (
                        top > threshold)
