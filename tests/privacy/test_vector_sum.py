"""Shuffle vector summation P_vec (Cheu–Joseph–Mao–Peng 2022) and SymSum; exact large counts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits.errors import ConfigError
from dpbandits.privacy.vector_sum import (
    BINOMIAL_CHUNK,
    EXACT_BINOMIAL_MAX,
    VectorSumParams,
    blanket_deviation,
    blanket_split,
    run_protocol,
    sym_sum,
    vector_sum,
    vector_sum_params,
)


def test_parameters_hand_computed() -> None:
    """n = 100, D = 6, ε = 1, δ = 0.01, c_b = 1, log D/δ: g = 20, b = ⌈4·ln²(600)⌉ = 164."""
    p = vector_sum_params(100, 6, 1.0, 1.0, 0.01, c_b=1.0, log_arg="practical")
    assert (p.g, p.b) == (20, 164)
    assert p.noise_sd == pytest.approx(1 / 20 * math.sqrt(100 * (3 * 164 / 16 + 0.25)))
    theory = vector_sum_params(100, 6, 1.0, 1.0, 0.01)
    assert theory.b == math.ceil(24e4 * 400 * math.log(4 * 37 / 0.01) ** 2 / 100)


def _vectors(rng: np.random.Generator, n: int, dim: int, bound: float) -> np.ndarray:
    v = rng.normal(size=(n, dim))
    return v / np.linalg.norm(v, axis=1, keepdims=True) * bound * rng.random((n, 1))


def test_unbiased_with_the_stated_variance() -> None:
    rng = np.random.default_rng(0)
    n, dim, bound = 20, 3, 2.0
    v = _vectors(rng, n, dim, bound)
    p = vector_sum_params(n, dim, bound, 2.0, 1e-3, c_b=1.0, log_arg="practical")
    runs = np.array([vector_sum(v, p, rng) for _ in range(10_000)])
    truth = v.sum(axis=0)
    scaled = (v + bound) * p.g / bound
    var = p.variance(scaled - np.floor(scaled))
    assert np.all(var <= p.noise_sd**2)
    se_mean = np.sqrt(var / len(runs))
    assert np.all(np.abs(runs.mean(axis=0) - truth) < 4 * se_mean)
    rel_se = math.sqrt(2.0 / (len(runs) - 1))
    assert np.all(np.abs(runs.var(axis=0, ddof=1) / var - 1) < 5 * rel_se)


def test_explicit_protocol_matches_the_shortcut_in_distribution() -> None:
    rng = np.random.default_rng(1)
    n, dim, bound = 3, 2, 1.0
    v = _vectors(rng, n, dim, bound)
    p = vector_sum_params(n, dim, bound, 15.0, 0.1, c_b=1.0, log_arg="practical")
    explicit = np.array([run_protocol(v, p, rng) for _ in range(3000)])
    short = np.array([vector_sum(v, p, rng) for _ in range(3000)])
    scaled = (v + bound) * p.g / bound
    sd = np.sqrt(p.variance(scaled - np.floor(scaled)))
    for sample in (explicit, short):
        assert np.all(np.abs(sample.mean(axis=0) - v.sum(axis=0)) < 4 * sd / math.sqrt(3000))
    diff = explicit.mean(axis=0) - short.mean(axis=0)
    assert np.all(np.abs(diff) < 5 * sd * math.sqrt(2 / 3000))
    ratio = explicit.var(axis=0, ddof=1) / short.var(axis=0, ddof=1)
    assert np.all(np.abs(ratio - 1) < 5 * math.sqrt(4 / 3000))


def test_messages_per_user() -> None:
    p = vector_sum_params(4, 2, 1.0, 15.0, 0.1, c_b=1.0, log_arg="practical")
    from dpbandits.privacy.vector_sum import randomize

    msgs = randomize(np.array([0.3, -0.4]), p, np.random.default_rng(2))
    assert msgs.shape == (p.messages_per_user, 2)
    assert set(np.unique(msgs[:, 1])) <= {0, 1}


def test_bounded_inputs_enforced() -> None:
    p = vector_sum_params(2, 2, 1.0, 1.0, 0.01)
    with pytest.raises(ValueError):
        vector_sum(np.array([[1.0, 0.5], [0.0, 0.0]]), p, np.random.default_rng(0))


def test_sym_sum_is_symmetric_and_unbiased() -> None:
    rng = np.random.default_rng(3)
    x = _vectors(rng, 30, 3, 1.0)
    w = rng.random(30) * 0.4
    truth = (x * w[:, None]).T @ x
    draws = []
    for _ in range(2000):
        m, p = sym_sum(x, w, 0.4, 4.0, 0.01, rng, c_b=1.0, log_arg="practical")
        assert np.array_equal(m, m.T)
        draws.append(m)
    mean = np.mean(draws, axis=0)
    assert np.all(np.abs(mean - truth) < 5 * p.noise_sd / math.sqrt(2000))


USERS = np.array([[0.3, -0.4, 0.1], [0.0, 0.5, -0.5], [-0.2, 0.1, 0.9]])


def test_outputs_below_1e15_trials_are_unchanged() -> None:
    """Bitwise the values the single-draw path gave before large counts were made exact."""
    cases = [
        (vector_sum_params(3, 3, 1.0, 1.0, 0.01), 11, [1754.0625, 54.5625, 874.5625]),
        (vector_sum_params(3, 3, 1.0, 2.0, 1e-3, c_b=1.0, log_arg="practical"), 12,
         [2.625, -1.875, 0.625]),
        (VectorSumParams(3, 3, 1.0, 1.0, 0.01, 4, 333333333333333), 13,
         [9464670.0625, -3197304.4375, -1785233.9375]),  # n·b = 10^15 − 1
    ]
    for params, seed, expected in cases:
        assert params.n * params.b <= EXACT_BINOMIAL_MAX
        out = vector_sum(USERS, params, np.random.default_rng(seed))
        assert out.tolist() == expected


def _large(n: int, b: int) -> VectorSumParams:
    return VectorSumParams(n, 3, 1.0, 1.0, 0.01, 4, b)


def numpy_blanket(trials: int, p: float, dim: int, rng: np.random.Generator) -> np.ndarray:
    """The blanket deviations as numpy draws them: one Binomial(trials, p) per coordinate up to
    10^15 trials, above it Binomial(10^15, p) chunk by chunk and one of the remainder."""
    if trials <= EXACT_BINOMIAL_MAX:
        return rng.binomial(trials, p, size=dim).astype(float) - p * trials
    chunks, rest = divmod(trials, BINOMIAL_CHUNK)
    draws = rng.binomial(BINOMIAL_CHUNK, p, size=(chunks, dim)).astype(float)
    total = (draws - p * BINOMIAL_CHUNK).sum(axis=0)
    if rest:
        total += rng.binomial(rest, p, size=dim).astype(float) - p * rest
    return total


@pytest.mark.parametrize("trials", [1, 7, 10**9, 10**15 - 1, 10**15, 2 * 10**15 + 12345,
                                    3 * 10**20])
def test_blanket_counts_are_exact_binomial_draws(trials: int) -> None:
    """numpy's own draws, exact below 2^53 each, in numpy's order (the generator's state after
    them is numpy's), adding up to `trials` per coordinate; another seed draws others."""
    chunks, rest = blanket_split(trials)
    assert chunks * BINOMIAL_CHUNK + rest == trials and rest < BINOMIAL_CHUNK <= 2**53
    mine, numpys = np.random.default_rng(trials % 97), np.random.default_rng(trials % 97)
    got = blanket_deviation(trials, 0.25, 3, mine)
    assert got.tolist() == numpy_blanket(trials, 0.25, 3, numpys).tolist()
    assert mine.bit_generator.state == numpys.bit_generator.state
    if trials > 10:
        assert blanket_deviation(trials, 0.25, 3, np.random.default_rng(1)).tolist() != (
            got.tolist())


def test_large_count_stays_on_the_protocols_lattice() -> None:
    """With n·b·p an integer the analyzer's Y_j − p·n·b is an integer: (ŝ + nL)·g/L ∈ ℤ.

    A normal approximation of the blanket count would leave this lattice.
    """
    params = _large(4, 10**15 + 3)  # n·b·p = 10^15 + 3
    rng = np.random.default_rng(2)
    users = np.vstack([USERS, USERS[:1]])
    for _ in range(50):
        out = vector_sum(users, params, rng)
        counts = (out + params.n * params.bound) * params.g / params.bound
        assert np.array_equal(counts, np.round(counts))


def test_large_count_mean_and_variance() -> None:
    """Unbiased with the exact variance (L/g)²(n·b·p(1−p) + Σ f(1−f)) at n·b ≈ 3·10^15."""
    params = _large(3, 10**15 + 7)
    rng = np.random.default_rng(3)
    runs = np.array([vector_sum(USERS, params, rng) for _ in range(4000)])
    scaled = (USERS + params.bound) * params.g / params.bound
    var = params.variance(scaled - np.floor(scaled))
    assert np.all(np.abs(runs.mean(axis=0) - USERS.sum(axis=0)) < 4 * np.sqrt(var / len(runs)))
    rel_se = math.sqrt(2.0 / (len(runs) - 1))
    assert np.all(np.abs(runs.var(axis=0, ddof=1) / var - 1) < 5 * rel_se)


@pytest.mark.parametrize("kwargs", [{"epsilon": 0.0}, {"epsilon": 16.0}, {"delta": 1.0},
                                    {"n": 0}, {"bound": -1.0}, {"log_arg": "nope"},
                                    {"c_b": 0.0}])
def test_bad_parameters(kwargs: dict) -> None:
    args = {"n": 5, "dim": 2, "bound": 1.0, "epsilon": 1.0, "delta": 0.01, **kwargs}
    extra = {k: args.pop(k) for k in ("log_arg", "c_b") if k in args}
    with pytest.raises(ConfigError):
        vector_sum_params(**args, **extra)



@pytest.mark.parametrize("n, dim, eps, log_arg", [(50, 3, 0.5, "theory"), (4000, 6, 2.0, "theory"),
                                                  (300, 2, 1.0, "practical")])
def test_the_epsilon_of_the_b_drawn_is_the_target_rounded_down(n: int, dim: int, eps: float,
                                                               log_arg: str) -> None:
    """ε(b) = g·ln(arg)·√(c_b/(b·n)) ≤ ε (b rounded up), close to it; a smaller b costs more,
    and parameters outside the theorem's range cost ∞."""
    from dataclasses import replace

    from dpbandits.privacy.vector_sum import vector_sum_epsilon

    c_b = 1.0 if log_arg == "practical" else 24.0e4
    params = vector_sum_params(n, dim, 1.0, eps, 1e-5, c_b=c_b, log_arg=log_arg)
    drawn = vector_sum_epsilon(params)
    assert drawn <= eps and drawn == pytest.approx(eps, rel=1e-3)
    assert vector_sum_epsilon(replace(params, b=params.b // 100)) > 9 * drawn
    assert vector_sum_epsilon(replace(params, g=2)) == math.inf  # g below max(2√n, D, 4)
    assert vector_sum_epsilon(replace(params, b=1)) == math.inf  # ε above 15
