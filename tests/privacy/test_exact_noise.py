"""Exact discrete samplers (CKS 2020, Algorithms 1–3), snapping and calibration."""

from __future__ import annotations

import math
import threading
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats

from dpbandits.errors import ConfigError
from dpbandits.privacy import _exact
from dpbandits.privacy.exact_noise import (
    GRID_BITS,
    ExactNoise,
    Noise,
    NumpyNoise,
    bernoulli_exp,
    discrete_gaussian,
    discrete_laplace,
    inflate_by_fractions,
    inflate_for_snapping,
)

from helpers import two_sampler_matrix

DRAWS = 200_000
SEED = 20201


# --------------------------------------------------------------------------- exact pmfs


def gaussian_pmf(sigma: float, support: np.ndarray) -> np.ndarray:
    """P(k) ∝ exp(−k²/(2σ²)), normalised over |k| ≤ 60σ + 60 (the rest is < 1e-700)."""
    full = np.arange(-60 * math.ceil(sigma) - 60, 60 * math.ceil(sigma) + 61)
    norm = np.exp(-(full.astype(float) ** 2) / (2 * sigma**2)).sum()
    return np.exp(-(support.astype(float) ** 2) / (2 * sigma**2)) / norm


def laplace_pmf(t: float, support: np.ndarray) -> np.ndarray:
    """P(k) = (1 − e^{−1/t}) / (1 + e^{−1/t}) · e^{−|k|/t}."""
    q = math.exp(-1 / t)
    return (1 - q) / (1 + q) * np.exp(-np.abs(support) / t)


def chi_square_pvalue(draws: np.ndarray, pmf) -> float:
    """Pearson χ² of `draws` against `pmf`: one cell per k with expectation ≥ 5, tails pooled."""
    n = len(draws)
    k = 0
    while n * pmf(np.array([k + 1]))[0] >= 5:
        k += 1
    cells = np.arange(-k, k + 1)
    observed = np.array([np.count_nonzero(draws == c) for c in cells], dtype=float)
    expected = n * pmf(cells)
    tail_prob = (1.0 - pmf(cells).sum()) / 2  # symmetric pmfs
    observed = np.concatenate([[np.count_nonzero(draws < -k)], observed,
                               [np.count_nonzero(draws > k)]])
    expected = np.concatenate([[n * tail_prob], expected, [n * tail_prob]])
    stat = ((observed - expected) ** 2 / expected).sum()
    return float(stats.chi2.sf(stat, len(observed) - 1))


@pytest.mark.parametrize("sigma", [1, 2, 5])
def test_discrete_gaussian_pmf(sigma: int) -> None:
    draws = discrete_gaussian(np.random.default_rng(SEED + sigma), sigma, DRAWS)
    assert draws.dtype == np.int64 and draws.shape == (DRAWS,)
    assert chi_square_pvalue(draws, lambda k: gaussian_pmf(sigma, k)) > 1e-3


@pytest.mark.parametrize("sigma", [1, 2, 5])
def test_gaussian_pmf_test_rejects_wrong_sigma(sigma: int) -> None:
    """Negative controls: the same test rejects draws of σ + 1, and a rounded normal of σ."""
    rng = np.random.default_rng(SEED + sigma)
    assert chi_square_pvalue(discrete_gaussian(rng, sigma + 1, DRAWS),
                             lambda k: gaussian_pmf(sigma, k)) < 1e-12
    if sigma <= 2:  # round(N(0, σ²)) has variance ≈ σ² + 1/12: visible at small σ
        rounded = np.rint(rng.normal(0.0, sigma, DRAWS)).astype(np.int64)
        assert chi_square_pvalue(rounded, lambda k: gaussian_pmf(sigma, k)) < 1e-6


@pytest.mark.parametrize("scale", [1, 2, 5])
def test_discrete_laplace_pmf(scale: int) -> None:
    draws = discrete_laplace(np.random.default_rng(SEED - scale), scale, DRAWS)
    assert chi_square_pvalue(draws, lambda k: laplace_pmf(scale, k)) > 1e-3
    wrong = discrete_laplace(np.random.default_rng(SEED - scale), scale + 1, DRAWS)
    assert chi_square_pvalue(wrong, lambda k: laplace_pmf(scale, k)) < 1e-12


@pytest.mark.parametrize(
    ("num", "den"),
    [(1, 3), (1, 1), (3, 2), (7, 3), (5, 1), (2**40 + 1, 2**40), (1, 2**63 + 5),
     (2**64 - 1, 2**62 + 3)],
)
def test_bernoulli_exp_frequency(num: int, den: int) -> None:
    p = math.exp(-num / den)
    hits = bernoulli_exp(np.random.default_rng(num % 1000 + den % 997), num, den, DRAWS)
    assert hits.dtype == np.bool_
    assert abs(hits.mean() - p) < 5 * math.sqrt(p * (1 - p) / DRAWS) + 1e-12


def test_bernoulli_exp_edge_cases() -> None:
    rng = np.random.default_rng(3)
    assert bernoulli_exp(rng, 0, 7, 1000).all()  # exp(0) = 1
    assert not bernoulli_exp(rng, 60, 1, 1000).any()  # exp(−60) ≈ 1e-26
    wrong = bernoulli_exp(rng, 4, 3, DRAWS).mean()  # negative control: 4/3 vs 1
    p = math.exp(-1)
    assert abs(wrong - p) > 10 * math.sqrt(p * (1 - p) / DRAWS)


# ------------------------------------------------------------------- moments, large σ


def test_large_sigma_mean_and_variance() -> None:
    """σ = 2^20: Var = σ² up to e^{−2π²σ²} (Poisson summation); 5 standard errors."""
    sigma, n = 2**20, DRAWS
    z = discrete_gaussian(np.random.default_rng(SEED), sigma, n).astype(float)
    assert abs(z.mean()) < 5 * sigma / math.sqrt(n)
    assert abs(np.mean(z**2) - sigma**2) < 5 * sigma**2 * math.sqrt(2 / n)


def test_large_laplace_variance() -> None:
    t, n = 2**20 + 1, DRAWS
    q = math.exp(-1 / t)
    var = 2 * q / (1 - q) ** 2
    z = discrete_laplace(np.random.default_rng(SEED), t, n).astype(float)
    assert abs(np.mean(z**2) - var) < 5 * math.sqrt(5 * var**2 / n)  # E z⁴ ≈ 6 var²


def test_extreme_parameters_run() -> None:
    rng = np.random.default_rng(1)
    top = 2**31 - 1
    z = discrete_gaussian(rng, top, 2000).astype(float)
    assert abs(np.std(z) / top - 1) < 0.1
    assert np.all(discrete_gaussian(rng, 1, 10) < 20)
    y = discrete_laplace(rng, top, 2000).astype(float)
    assert abs(np.mean(np.abs(y)) / top - 1) < 0.1


# ------------------------------------------------------- reference implementation check


class _Words:
    """next_uint64 of a PCG64 BitGenerator, dealt out in w-bit pieces as the C module does."""

    def __init__(self, seed: int) -> None:
        self.bits = np.random.PCG64(seed)
        self.pool = self.avail = 0

    def fresh(self) -> _Words:
        """Empty the pool: the C module starts every output value with no bits in hand."""
        self.pool = self.avail = 0
        return self

    def next(self) -> int:
        return int(self.bits.random_raw())

    def take(self, w: int) -> int:
        if w == 64:
            return self.next()
        if self.avail < w:
            self.pool, self.avail = self.next(), 64
        x = self.pool & ((1 << w) - 1)
        self.pool >>= w
        self.avail -= w
        return x


def _upto(w: _Words, m: int) -> int:
    if m == 0:
        return 0
    if m >> 64 == 0:
        while (x := w.take(m.bit_length())) > m:
            pass
        return x
    while True:
        x = (w.take((m >> 64).bit_length()) << 64) | w.next()
        if x <= m:
            return x


def _bern(w: _Words, n: int, d: int) -> bool:
    return n != 0 and (n >= d or _upto(w, d - 1) < n)


def _bern_exp_unit(w: _Words, n: int, d: int) -> bool:
    k = 1
    while (_bern(w, n, d * k) if d * k < 2**128 else _bern(w, n, d) and _bern(w, 1, k)):
        k += 1
    return k % 2 == 1


def _bern_exp(w: _Words, n: int, d: int) -> bool:
    """CKS Algorithm 1 (γ = 1 is taken as 1/1, whichever branch: the draws are the same)."""
    if n <= d:
        floor, rem = (0, n) if n < d else (0, 1)
        d = 1 if n == d else d
    else:
        floor, rem = divmod(n, d)
    for _ in range(floor):
        if not _bern_exp_unit(w, 1, 1):
            return False
    return _bern_exp_unit(w, rem, d)


def _laplace(w: _Words, t: int) -> int:
    while True:
        u = _upto(w, t - 1)
        if not _bern_exp_unit(w, u, t):
            continue
        v = 0
        while _bern_exp_unit(w, 1, 1):
            v += 1
        x, negative = u + t * v, _bern(w, 1, 2)
        if negative and x == 0:
            continue
        return -x if negative else x


def _gaussian(w: _Words, s: int) -> int:
    t = s + 1
    while True:
        y = _laplace(w, t)
        if _bern_exp(w, (t * abs(y) - s * s) ** 2, 2 * s * s * t * t):
            return y


@pytest.mark.parametrize("sigma", [1, 3, 2**20, 2**31 - 1])
def test_c_matches_python_reference_of_cks_algorithms(sigma: int) -> None:
    """Word for word the same draws as a big-integer Python transcription of CKS Alg. 1–3."""
    seed = 77 + sigma
    ref = _Words(seed)
    want = [_gaussian(ref.fresh(), sigma) for _ in range(300)]
    got = discrete_gaussian(np.random.Generator(np.random.PCG64(seed)), sigma, 300)
    assert got.tolist() == want
    ref = _Words(seed)
    want = [_laplace(ref.fresh(), sigma) for _ in range(300)]
    got = discrete_laplace(np.random.Generator(np.random.PCG64(seed)), sigma, 300)
    assert got.tolist() == want
    for num, den in [(sigma, 3), (2**64 - 1, sigma), (sigma, sigma)]:
        ref = _Words(seed)
        want = [_bern_exp(ref.fresh(), num, den) for _ in range(300)]
        got = bernoulli_exp(np.random.Generator(np.random.PCG64(seed)), num, den, 300)
        assert got.tolist() == want


@settings(max_examples=300, deadline=None)
@given(sigma=st.integers(1, 2**31 - 1), abs_y=st.integers(0, 2**63 - 1),
       small=st.booleans())
@example(sigma=1, abs_y=2**62, small=False)  # x ≈ 2^123, still exact
@example(sigma=2**31 - 1, abs_y=2**63 - 1, small=False)  # a ≈ 2^94: x ≥ 2^63 bound
@example(sigma=2**31 - 1, abs_y=2**40, small=False)  # a ≈ 2^71: the split path
def test_acceptance_exponent_is_exact(sigma: int, abs_y: int, small: bool) -> None:
    """Algorithm 3's x = (t|Y| − s²)²/(2s²t²) as (floor, remainder) equals big-integer math."""
    if small:
        abs_y %= 8 * (sigma + 1)
    t = sigma + 1
    a = abs(t * abs_y - sigma * sigma)
    den = 2 * sigma * sigma * t * t
    floor, rem = divmod(a * a, den)
    for force_split in (False, True):
        got_floor, got_rem, got_den, is_bound = _exact._accept_split(sigma, abs_y, force_split)
        assert got_den == den
        if is_bound:  # only a lower bound, and only when x is astronomically large
            assert a // (sigma * t) >= 2**32 and got_floor == 2**63 <= floor
        else:
            assert (got_floor, got_rem) == (floor, rem)


# -------------------------------------------------------------------------- determinism


def test_same_seed_same_numbers_different_seed_different() -> None:
    for draw in (lambda r: discrete_gaussian(r, 7, 5000), lambda r: discrete_laplace(r, 7, 5000),
                 lambda r: bernoulli_exp(r, 1, 2, 5000),
                 lambda r: ExactNoise(r).gaussian(0.37, (50, 100))):
        a = draw(np.random.default_rng(5))
        assert np.array_equal(a, draw(np.random.default_rng(5)))
        assert not np.array_equal(a, draw(np.random.default_rng(6)))


def test_pinned_values_identical_on_every_machine() -> None:
    """The first draws for a fixed seed (PCG64): any platform or code drift shows here."""
    assert discrete_gaussian(np.random.default_rng(2020), 3, 12).tolist() == [
        -2, 0, 1, 0, -1, 4, -1, -2, 3, 1, -1, 1]
    assert discrete_laplace(np.random.default_rng(2020), 3, 12).tolist() == [
        -2, 1, 1, 2, -1, 3, -1, -2, 0, 1, -1, 1]
    assert discrete_gaussian(np.random.default_rng(2020), 2**20, 4).tolist() == [
        -1031087, -680282, 753319, 1295943]


def test_chunking_does_not_change_the_stream() -> None:
    """No buffered state outside the Generator: 3 calls of 100 equal 1 call of 300."""
    a, b = np.random.default_rng(9), np.random.default_rng(9)
    parts = np.concatenate([discrete_gaussian(a, 4, 100) for _ in range(3)])
    assert np.array_equal(parts, discrete_gaussian(b, 4, 300))
    assert a.random() == b.random()  # the Generator state has advanced identically


@pytest.mark.parametrize("bitgen", [np.random.PCG64, np.random.PCG64DXSM, np.random.Philox,
                                    np.random.SFC64, np.random.MT19937])
def test_any_bit_generator(bitgen) -> None:
    z = discrete_gaussian(np.random.Generator(bitgen(4)), 2, 20_000)
    assert abs(z.var() - 4) < 0.25


def test_threads_share_one_generator_under_its_lock() -> None:
    rng = np.random.default_rng(0)
    out: list[np.ndarray] = []
    workers = [threading.Thread(target=lambda: out.append(discrete_gaussian(rng, 3, 50_000)))
               for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(out) == 4 and all(abs(z.var() - 9) < 0.5 for z in out)


def test_shapes() -> None:
    rng = np.random.default_rng(0)
    assert discrete_gaussian(rng, 2, (3, 4)).shape == (3, 4)
    assert discrete_laplace(rng, 2, 0).shape == (0,)
    assert discrete_gaussian(rng, 2).shape == ()
    assert ExactNoise(rng).laplace(1.5, (2, 2)).dtype == np.float64


# ------------------------------------------------------------------- snapping, grid


@settings(max_examples=200, deadline=None)
@given(scale=st.floats(1e-12, 1e12), values=st.lists(st.floats(-1e9, 1e9), min_size=1,
                                                      max_size=8))
def test_snap_and_noise_lie_on_the_grid(scale: float, values: list[float]) -> None:
    noise = ExactNoise(np.random.default_rng(1))
    gamma = noise.grid(scale)
    assert 2**GRID_BITS <= scale / gamma < 2 ** (GRID_BITS + 1)
    assert gamma == 2.0 ** round(math.log2(gamma))
    snapped = noise.snap(values, scale)
    k = snapped / gamma
    assert np.array_equal(k, np.rint(k))
    assert np.all(np.abs(snapped - np.asarray(values)) <= gamma / 2)
    released = snapped + noise.gaussian(scale, len(values))
    assert np.array_equal(released / gamma, np.rint(released / gamma))
    lap = noise.laplace(scale, 5) / gamma
    assert np.array_equal(lap, np.rint(lap))
    sigma = noise.effective_sigma(scale)
    assert scale <= sigma < scale + 2 * gamma and noise.effective_sigma(sigma) == sigma
    assert noise.effective_scale(scale) == sigma


def test_gaussian_uses_the_effective_sigma() -> None:
    noise = ExactNoise(np.random.default_rng(3))
    sigma = 1e-3 * (1 + 2**-30)  # rounds up to the next multiple of γ
    gamma = noise.grid(sigma)
    expected = discrete_gaussian(np.random.default_rng(3), math.ceil(sigma / gamma), 1000) * gamma
    assert np.array_equal(noise.gaussian(sigma, 1000), expected)
    assert noise.effective_sigma(sigma) == math.ceil(sigma / gamma) * gamma > sigma


# ----------------------------------------------------------------------- calibration


@settings(max_examples=300, deadline=None)
@given(sensitivity=st.floats(1e-6, 1e6), rho=st.floats(1e-6, 1e3), dim=st.integers(1, 1000))
def test_calibrate_gaussian_keeps_the_budget_exactly(sensitivity: float, rho: float,
                                                     dim: int) -> None:
    noise = ExactNoise(np.random.default_rng(0))
    sigma, dprime = noise.calibrate_gaussian(sensitivity, rho, dim)
    gamma = noise.grid(sigma)
    assert noise.effective_sigma(sigma) == sigma  # on its own grid: the σ really used
    d = Fraction(dprime) - Fraction(sensitivity)
    assert d >= 0 and d * d >= Fraction(gamma) ** 2 * dim  # Δ' ≥ Δ + γ√dim
    assert Fraction(dprime) ** 2 <= 2 * Fraction(rho) * Fraction(sigma) ** 2  # Δ'²/(2σ²) ≤ ρ
    assert sigma <= dprime / math.sqrt(2 * rho) * (1 + 2**-18)  # and not much more


@settings(max_examples=300, deadline=None)
@given(sensitivity=st.floats(1e-6, 1e6), epsilon=st.floats(1e-3, 1e3), dim=st.integers(1, 500))
def test_calibrate_laplace_keeps_the_budget_exactly(sensitivity: float, epsilon: float,
                                                    dim: int) -> None:
    noise = ExactNoise(np.random.default_rng(0))
    scale, dprime = noise.calibrate_laplace(sensitivity, epsilon, dim)
    gamma = noise.grid(scale)
    assert noise.effective_scale(scale) == scale
    assert Fraction(dprime) >= Fraction(sensitivity) + Fraction(gamma) * dim
    assert Fraction(dprime) <= Fraction(epsilon) * Fraction(scale)
    assert scale <= dprime / epsilon * (1 + 2**-18)


def test_calibration_near_the_feasibility_limit() -> None:
    noise = ExactNoise(np.random.default_rng(0))
    dim = 100
    rho = dim * 2.0**-41 * 1.01  # the snapping slack nearly eats the budget
    sigma, dprime = noise.calibrate_gaussian(1.0, rho, dim)
    assert Fraction(dprime) ** 2 <= 2 * Fraction(rho) * Fraction(sigma) ** 2
    with pytest.raises(ConfigError, match="rho = .* is not allowed") as err:
        noise.calibrate_gaussian(1.0, dim * 2.0**-41 * 0.99, dim)
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="epsilon = .* is not allowed"):
        noise.calibrate_laplace(1.0, dim * 2.0**-20, dim)


def test_snapped_mechanism_privacy_statement() -> None:
    """ρ of the snapped discrete Gaussian on k = snap(x)/γ, from the integers themselves."""
    noise = ExactNoise(np.random.default_rng(0))
    sigma, dprime = noise.calibrate_gaussian(2.0, 0.05, 3)
    gamma = noise.grid(sigma)
    x = np.array([0.3, -1.2, 0.5])
    x2 = x + np.array([2.0, 0.0, 0.0]) / 1  # neighbour at ℓ2 distance 2
    k = noise.snap(x, sigma) / gamma
    k2 = noise.snap(x2, sigma) / gamma
    shift = Fraction(int(np.sum((k - k2) ** 2)))
    sigma_z = Fraction(sigma) / Fraction(gamma)
    assert sigma_z.denominator == 1
    assert shift / (2 * sigma_z**2) <= Fraction(dprime) ** 2 / (2 * Fraction(sigma) ** 2) <= 0.05


# --------------------------------------------------------------------------- NumpyNoise


def test_numpy_noise_is_the_float_path_bit_for_bit() -> None:
    noise, rng = NumpyNoise(np.random.default_rng(42)), np.random.default_rng(42)
    assert np.array_equal(noise.gaussian(0.7, (3, 5)), rng.normal(0.0, 0.7, (3, 5)))
    assert np.array_equal(noise.laplace(1.3, 11), rng.laplace(0.0, 1.3, 11))
    assert noise.gaussian(2.0) == rng.normal(0.0, 2.0)
    assert noise.grid(3.0) == 0.0
    values = np.array([0.1, 1 / 3])
    assert np.array_equal(noise.snap(values, 1.0), values)
    assert noise.snap([1, 2], 1.0).dtype == np.float64
    assert noise.effective_sigma(0.3) == 0.3 and noise.effective_scale(0.3) == 0.3
    assert noise.calibrate_gaussian(2.0, 0.5, 7) == (2.0 / math.sqrt(1.0), 2.0)
    assert noise.calibrate_laplace(2.0, 0.5, 7) == (4.0, 2.0)
    assert (noise.exact, noise.name) == (False, "numpy-float")
    assert (ExactNoise(rng).exact, ExactNoise(rng).name) == (True, "exact-discrete")


def test_both_satisfy_the_protocol() -> None:
    def draw(noise: Noise) -> np.ndarray:
        sigma, _ = noise.calibrate_gaussian(1.0, 0.5, 2)
        return noise.snap([0.25, 0.5], sigma) + noise.gaussian(sigma, 2)

    for cls in (NumpyNoise, ExactNoise):
        assert draw(cls(np.random.default_rng(0))).shape == (2,)


# ------------------------------------------------------------------------------- errors


@pytest.mark.parametrize("kind", [ExactNoise, NumpyNoise])
def test_a_sampler_draws_what_gaussian_draws(kind: type) -> None:
    """`gaussian_sampler(σ)(size)` equals `gaussian(σ, size)` from the same generator state and
    leaves the generator where `gaussian` leaves it; at another σ the values differ."""
    for sigma in (0.37, 1.0, 52.5, 3.0e4):
        for size in ((), (5,), (3, 4)):
            a, b = np.random.default_rng(9), np.random.default_rng(9)
            want = kind(a).gaussian(sigma, size)
            got = kind(b).gaussian_sampler(sigma)(size)
            assert np.asarray(got).tobytes() == np.asarray(want).tobytes()
            assert a.bit_generator.state == b.bit_generator.state
    other = kind(np.random.default_rng(9)).gaussian_sampler(2.0)((50,))
    assert other.tobytes() != kind(np.random.default_rng(9)).gaussian(1.0, (50,)).tobytes()


def test_grid_of_a_float_equals_the_validated_path() -> None:
    """Python floats take a short path; numpy floats the validating one: the same γ."""
    noise = ExactNoise(np.random.default_rng(0))
    scales = [2.0**-1000, 2.0**1000, 1.0, 0.75, 3.0, 2.0**20, math.nextafter(1.0, 0.0)]
    scales += list(np.exp(np.random.default_rng(1).uniform(-600.0, 600.0, 500)))
    for scale in scales:
        gamma = noise.grid(float(scale))
        assert gamma == noise.grid(np.float64(scale))
        assert 2.0**GRID_BITS <= float(scale) / gamma < 2.0**(GRID_BITS + 1)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda r: discrete_gaussian(r, 0, 3), "sigma"),
        (lambda r: discrete_gaussian(r, 2**31, 3), "sigma"),
        (lambda r: discrete_gaussian(r, -1, 3), "sigma"),
        (lambda r: discrete_gaussian(r, 2.5, 3), "sigma"),
        (lambda r: discrete_gaussian(r, True, 3), "sigma"),
        (lambda r: discrete_laplace(r, 0, 3), "scale"),
        (lambda r: discrete_laplace(r, 2**40, 3), "scale"),
        (lambda r: bernoulli_exp(r, -1, 2, 3), "num"),
        (lambda r: bernoulli_exp(r, 2**64, 2, 3), "num"),
        (lambda r: bernoulli_exp(r, 1, 0, 3), "den"),
        (lambda r: ExactNoise(r).gaussian(0.0, 3), "scale"),
        (lambda r: ExactNoise(r).laplace(float("nan"), 3), "scale"),
        (lambda r: ExactNoise(r).snap([1.0], float("inf")), "scale"),
        (lambda r: ExactNoise(r).grid(2.0**-1001), "scale"),
        (lambda r: ExactNoise(r).calibrate_gaussian(-1.0, 0.5, 2), "sensitivity"),
        (lambda r: ExactNoise(r).calibrate_gaussian(1.0, 0.0, 2), "rho"),
        (lambda r: ExactNoise(r).calibrate_gaussian(1.0, 0.5, 0), "dim"),
        (lambda r: ExactNoise(r).calibrate_laplace(1.0, float("inf"), 2), "epsilon"),
    ],
)
def test_bad_parameters_are_one_line_value_errors(call, name: str) -> None:
    with pytest.raises(ValueError) as err:
        call(np.random.default_rng(0))
    message = str(err.value)
    assert message.startswith(f"{name} = ") and "not allowed" in message and "\n" not in message


def test_c_module_checks_its_own_arguments() -> None:
    capsule = np.random.default_rng(0).bit_generator.capsule
    with pytest.raises(ValueError, match=r"sigma = .* \[1, 2\^31\)"):
        _exact.discrete_gaussian(capsule, 2**64 + 5, np.empty(3, np.int64))
    with pytest.raises(TypeError, match="int64"):
        _exact.discrete_gaussian(capsule, 3, np.empty(3, np.float64))
    with pytest.raises(TypeError, match="int64"):
        _exact.discrete_laplace(capsule, 3, np.empty(3, np.int32))
    with pytest.raises(TypeError, match="PyCapsule"):
        _exact.discrete_gaussian(object(), 3, np.empty(3, np.int64))
    with pytest.raises(TypeError, match="Generator"):
        discrete_gaussian(np.random.RandomState(0), 3, 2)


@pytest.mark.parametrize("dim", [1, 2, 5, 21])
def test_symmetric_sampler_draws_what_two_samplers_draw(dim: int) -> None:
    """Same matrices bit for bit, and the generator left at the same point."""
    for seed, sigma in enumerate((0.37, 3.0, 1e-3, 250.0)):
        fused = ExactNoise(np.random.default_rng(seed)).symmetric_sampler(
            sigma, sigma / math.sqrt(2.0), dim)
        reference = ExactNoise(np.random.default_rng(seed))
        for _ in range(3):
            got = fused()
            assert got.tobytes() == two_sampler_matrix(
                reference, sigma, sigma / math.sqrt(2.0), dim).tobytes()
            assert (got == got.T).all()
        # the fused sampler's generator has moved exactly as far as the reference's
        assert fused().tobytes() == two_sampler_matrix(
            reference, sigma, sigma / math.sqrt(2.0), dim).tobytes()


@pytest.mark.parametrize("dim", [1, 3, 21])
def test_a_stack_of_symmetric_matrices_is_what_one_call_each_draws(dim: int) -> None:
    """k matrices in one call: the matrices of k calls, and the generator as far along."""
    for seed, count in enumerate((1, 2, 7)):
        stacked = ExactNoise(np.random.default_rng(seed)).symmetric_sampler(0.9, 0.6, dim)
        single = ExactNoise(np.random.default_rng(seed)).symmetric_sampler(0.9, 0.6, dim)
        got = stacked(count)
        assert got.shape == (count, dim, dim)
        assert got.tobytes() == np.stack([single() for _ in range(count)]).tobytes()
        assert stacked().tobytes() == single().tobytes()
        # the control: the stack's second matrix is not a repeat of its first
        assert count == 1 or got[1].tobytes() != got[0].tobytes()


def test_symmetric_sampler_comparison_sees_the_draw_order() -> None:
    """The control: drawing above the diagonal first gives other matrices."""
    noise = ExactNoise(np.random.default_rng(4))
    rows, cols = np.triu_indices(4, 1)
    swapped = np.zeros((4, 4))
    upper = noise.gaussian_sampler(1.0 / math.sqrt(2.0))((rows.size,))
    swapped[rows, cols] = swapped[cols, rows] = upper
    swapped[np.arange(4), np.arange(4)] = noise.gaussian_sampler(1.0)((4,))
    fused = ExactNoise(np.random.default_rng(4)).symmetric_sampler(1.0, 1.0 / math.sqrt(2.0), 4)
    assert fused().tobytes() != swapped.tobytes()


@pytest.mark.parametrize("out", [np.empty(9), np.empty((2, 8)), np.empty((0, 0)),
                                 np.empty((3, 3), dtype=np.int64), np.empty((3, 3)).T[:, :2],
                                 np.empty((2, 3, 4)), np.empty((2, 2, 2, 2)),
                                 np.empty((4, 3, 3))[::2]])
def test_symmetric_sampler_refuses_a_matrix_that_is_not_square_float64(out) -> None:
    rng = np.random.default_rng(0)
    with pytest.raises((TypeError, ValueError)):
        _exact.discrete_gaussian_symmetric(rng.bit_generator.capsule, 3, 2, 1.0, 1.0, out)


def test_symmetric_sampler_checks_its_arguments() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ConfigError, match="dim = 0 is not allowed"):
        ExactNoise(rng).symmetric_sampler(1.0, 1.0, 0)
    with pytest.raises(ValueError, match="sigma_above = 0 is not allowed"):
        _exact.discrete_gaussian_symmetric(rng.bit_generator.capsule, 3, 0, 1.0, 1.0,
                                           np.empty((2, 2)))


def _calibration_cases(g: np.random.Generator, n: int) -> list[tuple[float, float, int]]:
    """σ = Δ·ratio over wide ranges, σ on or one step off its grid, and DGS-LinUCB's σ for
    Δ = 1/λ_min."""
    exact = ExactNoise(np.random.default_rng(0))
    cases = [(490.3, 1.0, 20), (4.9, 1.0, 20), (1.0, 1.0, 1), (2.0**14, 2.0, 21), (3.0, 0.5, 5)]
    for i in range(n):
        sensitivity = float(np.exp(g.uniform(-12, 6)))
        sigma = sensitivity * float(np.exp(g.uniform(-2, 9)))
        if i % 3 == 1:
            sigma = float(np.nextafter(exact.effective_sigma(sigma), g.choice([0, np.inf])))
        elif i % 3 == 2:
            sensitivity = float(np.exp(-g.uniform(0, 7)))
            sigma = sensitivity * float(np.exp(g.uniform(0, 9)))
        cases.append((sigma, sensitivity, int(g.integers(1, 3000))))
    return cases


def test_compiled_inflation_is_the_fraction_loops() -> None:
    """`_exact.inflate` (integer arithmetic) gives the σ′ of the Fraction loop bit for bit, and
    declines only where its binary arithmetic stops; `inflate_for_snapping` then answers or
    raises as the Fraction loop does."""
    exact = ExactNoise(np.random.default_rng(0))
    moved = 0
    cases = _calibration_cases(np.random.default_rng(11), 3000)
    cases += [(2.0**-120, 1.0, 7), (2.0**-90 * 1.3, 3.0, 20), (4.9, 1.0, 2**30), (1e3, 3.0, 2**10)]
    for sigma, sensitivity, dim in cases:
        compiled = _exact.inflate(sigma, sensitivity, dim)
        assert compiled is not None
        assert compiled == inflate_by_fractions(exact, sigma, sensitivity, dim)
        moved += compiled != exact.effective_sigma(sigma)
    assert moved > 2500  # the first candidate fails: the rounded quotient is what is compared
    declined = [(2.0**1001, 1.0, 5), (1.0, 2.0**-1020, 5), (2.0**-300, 2.0**300, 5),
                (2.0**20, 2.0, 21), (3.5, 1.0, 20.0), (3.5, 1.0, np.float64(20)),
                (3.5, 1.0, 2**53), (3.5, 1.0, 2**63), (3.5, 1.0, 0)]
    for sigma, sensitivity, dim in declined:
        assert _exact.inflate(sigma, sensitivity, dim) is None
        outcomes = []
        for inflate in (inflate_for_snapping, inflate_by_fractions):
            try:
                outcomes.append(inflate(exact, sigma, sensitivity, dim))
            except (ValueError, ZeroDivisionError) as error:
                outcomes.append(type(error))
        assert outcomes[0] == outcomes[1]
    # the negative control: one step of the grid off is seen
    value = inflate_by_fractions(exact, 490.3, 1.0, 20)
    assert _exact.inflate(490.3, 1.0, 20) != value + exact.grid(value)
    paper = NumpyNoise(np.random.default_rng(0))
    assert inflate_for_snapping(paper, 3.5, 1.0, 20) == 3.5
