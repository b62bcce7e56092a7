"""Shuffle-model vector summation P_vec (Cheu–Joseph–Mao–Peng, ICLR 2022, arXiv:2106.09805).

Each user encodes every coordinate of v (|v_j| ≤ ‖v‖ ≤ L) in unary with randomised rounding
into 2g bits and adds b Bernoulli(p) blanket bits; the shuffler permutes all messages; the
analyzer counts ones per coordinate. `vector_sum` samples the analyzer's output directly
(exact in distribution at every n·b); `randomize`, `shuffle` and `analyze` are the explicit
protocol.

Privacy: CJMP Theorem 4.2, the statement the Private-GLM paper relies on (its Appendix F).
Constants: g = ⌈max(2√n, D, 4)⌉, p = 1/4, b = ⌈c_b g² ln²(4(D²+1)/δ)/(ε² n)⌉ with
c_b = 24·10⁴, for ε ≤ 15. UNVERIFIED: these are the values this project attributes to that
theorem, but its text could not be retrieved and checked here, so the constants are not
confirmed against the paper (docs/glm.md, "Algorithm 1").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpbandits.errors import ConfigError
from dpbandits.jit import jit, python_function

CB_THEORY = 24.0e4  # CJMP's constant for P_vec as used here (unverified, see module docstring)
CB_PRACTICAL = 1.0
LOG_ARGS = ("theory", "practical")
BLANKET_P = 0.25  # blanket-bit probability p of P_vec (CJMP; unverified)
MAX_EPSILON = 15.0  # range ε ≤ 15 of CJMP's guarantee for P_vec (unverified)
# numpy draws Binomial(n, p) for int64 n but computes in doubles, so n is exact only up to
# 2^53 ≈ 9.0e15 (draws at n = 2^63 − 1 come back as multiples of 256). Counts above
# EXACT_BINOMIAL_MAX are drawn as sums of Binomial(BINOMIAL_CHUNK, p) and a remainder.
EXACT_BINOMIAL_MAX = 1e15
BINOMIAL_CHUNK = 10**15


@dataclass(frozen=True)
class VectorSumParams:
    """Protocol parameters for n users, dimension D, norm bound L, target (ε, δ)."""

    n: int
    dim: int
    bound: float
    epsilon: float
    delta: float
    g: int
    b: int
    p: float = BLANKET_P
    c_b: float = CB_THEORY
    log_arg: str = "theory"

    @property
    def messages_per_user(self) -> int:
        return self.dim * (2 * self.g + self.b)

    @property
    def noise_sd(self) -> float:
        """σ̃ = (L/g)·√(n(b·p(1−p) + 1/4)): per-coordinate std bound (blanket + rounding)."""
        return self.bound / self.g * math.sqrt(self.n * (self.b * self.p * (1 - self.p) + 0.25))

    def variance(self, frac: np.ndarray) -> np.ndarray:
        """Exact per-coordinate variance given the users' fractional parts f (n × D)."""
        rounding = np.sum(frac * (1.0 - frac), axis=0)
        return (self.bound / self.g) ** 2 * (self.n * self.b * self.p * (1 - self.p) + rounding)


def vector_sum_params(n: int, dim: int, bound: float, epsilon: float, delta: float, *,
                      c_b: float = CB_THEORY, log_arg: str = "theory") -> VectorSumParams:
    """g = ⌈max(2√n, D, 4)⌉, b = ⌈c_b g² ln²(arg)/(ε² n)⌉, arg = 4(D²+1)/δ or D/δ (CJMP P_vec)."""
    if int(n) != n or n < 1:
        raise ConfigError(f"n = {n!r} is not allowed; must be an integer >= 1")
    if int(dim) != dim or dim < 1:
        raise ConfigError(f"dim = {dim!r} is not allowed; must be an integer >= 1")
    if not (math.isfinite(bound) and bound > 0):
        raise ConfigError(f"bound = {bound!r} is not allowed; must be a finite number > 0")
    if not (math.isfinite(epsilon) and 0 < epsilon <= MAX_EPSILON):
        raise ConfigError(f"epsilon = {epsilon!r} is not allowed for vector summation; "
                          f"must be in (0, {MAX_EPSILON}]")
    if not 0 < delta < 1:
        raise ConfigError(f"delta = {delta!r} is not allowed; must be in (0, 1)")
    if not (math.isfinite(c_b) and c_b > 0):
        raise ConfigError(f"c_b = {c_b!r} is not allowed; must be a finite number > 0")
    if log_arg not in LOG_ARGS:
        raise ConfigError(f"log_arg = {log_arg!r} is not allowed; allowed: {', '.join(LOG_ARGS)}")
    n, dim = int(n), int(dim)
    g = math.ceil(max(2.0 * math.sqrt(n), dim, 4))
    arg = log_argument(dim, delta, log_arg)
    b = math.ceil(c_b * g * g * math.log(arg) ** 2 / (epsilon * epsilon * n))
    return VectorSumParams(n, dim, float(bound), float(epsilon), float(delta), g, max(b, 1),
                           c_b=float(c_b), log_arg=log_arg)


def log_argument(dim: int, delta: float, log_arg: str) -> float:
    """The argument of P_vec's logarithm: 4(D²+1)/δ (theory) or D/δ (practical)."""
    return 4.0 * (dim * dim + 1) / delta if log_arg == "theory" else dim / delta


def vector_sum_epsilon(params: VectorSumParams) -> float:
    """The ε the drawn protocol has: ε = g·ln(arg)·√(c_b/(b·n)), the b of `vector_sum_params`
    solved for ε (CJMP P_vec), when g ≥ max(2√n, D, 4), p = 1/4 and ε ≤ 15; else ∞."""
    n, g, b = params.n, params.g, params.b
    if g < max(2.0 * math.sqrt(n), params.dim, 4) or params.p != BLANKET_P or b < 1:
        return math.inf
    eps = g * math.log(log_argument(params.dim, params.delta, params.log_arg)) * math.sqrt(
        params.c_b / (b * n))
    return eps if eps <= MAX_EPSILON * (1 + 1e-12) else math.inf


@jit
def rounded_level(value: float, bound: float, g: int, u: float) -> int:
    """ȳ = ⌊w⌋ + [u < w − ⌊w⌋], w = (value + L)·g/L clipped to [0, 2g]: one coordinate's level
    in {0..2g} by randomised rounding with the uniform draw u (CJMP P_vec, the randomiser)."""
    scaled = min(max((value + bound) * (g / bound), 0.0), 2.0 * g)
    base = math.floor(scaled)
    return base + 1 if u < scaled - base else base


@jit
def level_sums(v: np.ndarray, bound: float, g: int, uniforms: np.ndarray) -> np.ndarray:
    """Σ_u ȳ_u per coordinate of the users' rows v (n, D) from their rounding draws (n, D)."""
    n, dim = v.shape
    totals = np.zeros(dim, dtype=np.int64)
    for i in range(n):
        for j in range(dim):
            totals[j] += rounded_level(v[i, j], bound, g, uniforms[i, j])
    return totals.astype(np.float64)


@jit
def max_row_norm(v: np.ndarray) -> float:
    """The largest ‖v_u‖ over the rows (−∞ without rows, NaN where an entry is not finite)."""
    largest = -np.inf
    for i in range(v.shape[0]):
        total = 0.0
        for j in range(v.shape[1]):
            if not math.isfinite(v[i, j]):
                return np.nan
            total += v[i, j] * v[i, j]
        largest = max(largest, math.sqrt(total))
    return largest


@jit
def blanket_draws(chunks: int, rest: int, p: float, dim: int, rng: np.random.Generator
                  ) -> np.ndarray:
    """Binomial(chunks·C + rest, p) − its mean per coordinate, C = 10^15: `chunks` draws of
    Binomial(C, p) per coordinate (chunk by chunk), then one of Binomial(rest, p)."""
    out = np.zeros(dim)
    chunk_mean = p * BINOMIAL_CHUNK
    for _ in range(chunks):
        for j in range(dim):
            out[j] += rng.binomial(BINOMIAL_CHUNK, p) - chunk_mean
    if rest > 0:
        rest_mean = p * rest
        for j in range(dim):
            out[j] += rng.binomial(rest, p) - rest_mean
    return out


def _check_vectors(vectors: np.ndarray, params: VectorSumParams) -> np.ndarray:
    v = np.ascontiguousarray(np.atleast_2d(np.asarray(vectors, dtype=float)))
    if v.shape != (params.n, params.dim):
        raise ValueError(f"vectors have shape {v.shape}; expected ({params.n}, {params.dim})")
    largest = max_row_norm(v)
    if math.isnan(largest):
        raise ValueError("a user's vector has a non-finite entry")
    if largest > params.bound * (1 + 1e-9):
        raise ValueError(f"a user's vector has norm {largest:.6g} > bound {params.bound}")
    return v


def levels_of(params: VectorSumParams) -> int:
    """The number of levels g as an integer (the rounding runs on integers)."""
    if not float(params.g).is_integer() or params.g < 1:
        raise ValueError(f"g = {params.g!r} is not allowed; must be an integer >= 1")
    return int(params.g)


def randomize(v: np.ndarray, params: VectorSumParams, rng: np.random.Generator) -> np.ndarray:
    """One user's messages: rows (coordinate tag, bit); ȳ_j ones, 2g − ȳ_j zeros, b blanket bits."""
    v = np.asarray(v, dtype=float).reshape(1, -1)
    one = VectorSumParams(1, params.dim, params.bound, params.epsilon, params.delta,
                          params.g, params.b, params.p)
    v = _check_vectors(v, one)
    levels = level_sums(v, params.bound, levels_of(params), rng.random(v.shape)).astype(np.int64)
    per = 2 * params.g + params.b
    tags = np.repeat(np.arange(params.dim), per)
    bits = np.zeros((params.dim, per), dtype=np.int8)
    for j in range(params.dim):
        bits[j, : levels[j]] = 1
        bits[j, 2 * params.g:] = rng.random(params.b) < params.p
    return np.column_stack([tags, bits.ravel()])


def shuffle(messages: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The shuffler: a uniformly random permutation of all users' messages."""
    return messages[rng.permutation(len(messages))]


def analyze(messages: np.ndarray, params: VectorSumParams) -> np.ndarray:
    """ŝ_j = (L/g)(Y_j − p·b·n) − nL with Y_j the ones tagged j: unbiased for Σ_u v_{u,j}."""
    counts = np.bincount(messages[:, 0], weights=messages[:, 1], minlength=params.dim)
    scale = params.bound / params.g
    return scale * (counts - params.p * params.b * params.n) - params.n * params.bound


def run_protocol(vectors: np.ndarray, params: VectorSumParams,
                 rng: np.random.Generator) -> np.ndarray:
    """The explicit protocol R → S → A (for small n·D·(2g + b) only)."""
    v = _check_vectors(vectors, params)
    msgs = np.vstack([randomize(row, params, rng) for row in v])
    return analyze(shuffle(msgs, rng), params)


def blanket_split(trials: int) -> tuple[int, int]:
    """(chunks, rest) with trials = chunks·10^15 + rest: a count up to 10^15 is one draw."""
    return divmod(int(trials), BINOMIAL_CHUNK)


def blanket_deviation(trials: int, p: float, dim: int, rng: np.random.Generator
                      ) -> np.ndarray:
    """Binomial(trials, p) − trials·p for each of `dim` coordinates, exact at any trials.

    Binomial(kC + r, p) is the sum of k independent Binomial(C, p) and one Binomial(r, p).
    Deviations from each part's mean are integers (p = 1/4, C = 10^15) far below 2^53, so their
    float sum is exact.
    """
    chunks, rest = blanket_split(trials)
    # One draw per coordinate costs less as Python than a compiled call (which unboxes the
    # Generator, ~10 µs): the kernel's own code runs as Python then.
    draws = blanket_draws if chunks else python_function(blanket_draws)
    return draws(chunks, rest, float(p), int(dim), rng)


def vector_sum(vectors: np.ndarray, params: VectorSumParams,
               rng: np.random.Generator) -> np.ndarray:
    """Analyzer output sampled directly: Y_j = Σ_u ȳ_{u,j} + Binomial(n·b, p) (CJMP P_vec).

    The permutation does not change the counts. The blanket count is drawn exactly at every
    n·b: one numpy draw up to 10^15 trials, a sum of exact chunk draws above.
    """
    v = _check_vectors(vectors, params)
    sums = level_sums(v, params.bound, levels_of(params), rng.random(v.shape))
    blanket = blanket_deviation(params.n * params.b, params.p, params.dim, rng)
    scale = params.bound / params.g
    return scale * (sums + blanket) - params.n * params.bound


def upper_indices(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Row/column indices of the D = d(d+1)/2 upper-triangular entries (with the diagonal)."""
    return np.triu_indices(d)


def sym_vectors(points: np.ndarray, weights: np.ndarray | None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each user's vector w_u·(x_u,i x_u,j)_{i ≤ j} (n, D) and the upper-triangle indices."""
    x = np.atleast_2d(np.asarray(points, dtype=float))
    n, d = x.shape
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    rows, cols = upper_indices(d)
    return w[:, None] * x[:, rows] * x[:, cols], rows, cols


def sym_sum(points: np.ndarray, weights: np.ndarray | None, bound: float, epsilon: float,
            delta: float, rng: np.random.Generator, *, c_b: float = CB_THEORY,
            log_arg: str = "theory") -> tuple[np.ndarray, VectorSumParams]:
    """SymSum: shuffle-private Σ_u w_u x_u x_uᵀ, its upper triangle summed with P_vec (CJMP)."""
    x = np.atleast_2d(np.asarray(points, dtype=float))
    n, d = x.shape
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    rows, cols = upper_indices(d)
    vectors = w[:, None] * x[:, rows] * x[:, cols]
    params = vector_sum_params(n, len(rows), bound, epsilon, delta, c_b=c_b, log_arg=log_arg)
    est = vector_sum(vectors, params, rng)
    out = np.zeros((d, d))
    out[rows, cols] = est
    out[cols, rows] = est
    return out, params
