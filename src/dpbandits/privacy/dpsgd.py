"""Private GLM fits: the authors' DP-SGD and the strict noisy projected GD.

docs/glm.md, "DP-SGD and the RDP accountant" (paper mode) and "Strict fits" (strict mode).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpbandits.jit import jit
from dpbandits.linalg import dot, project_ball_into
from dpbandits.links import Link, mean
from dpbandits.privacy.accountant import dpsgd_epsilon, noise_multiplier
from dpbandits.privacy.exact_noise import Noise, NumpyNoise
from dpbandits.privacy.grid import snap
from dpbandits.privacy.ledger import PrivacyLedger
from dpbandits.privacy.release import (
    Drawn,
    gaussian_rho,
    recording_active,
    release,
    replay_ahead,
)

CLIP = 0.2
LAMBDA_FIT = 1e-5
LR0 = 10.0
BATCH_MAX = 2048
BURN_IN = 10
STRICT_STEPS = 12
STRICT_BURN_IN = 5


@dataclass
class FitResult:
    """A private fit and the numbers its privacy rests on."""

    theta: np.ndarray
    n: int
    batch: int
    epochs: int
    burn_in: int
    steps: int
    sigma: float  # noise multiplier (std / sensitivity of the clipped sum, as calibrated)
    noise_std: float  # std of the Gaussian noise actually added (mean gradient or sum, see kind)
    kind: str
    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None


@jit
def clipped_gradient_add(theta: np.ndarray, x: np.ndarray, y: float, kind: int, clip: float,
                         out: np.ndarray) -> None:
    """out += one sample's canonical gradient (μ(xᵀθ) − y)x, scaled down to norm ≤ clip."""
    residual = mean(kind, dot(x, theta)) - y
    norm2 = 0.0
    for j in range(x.shape[0]):
        g = residual * x[j]
        norm2 += g * g
    scale = min(1.0, clip / max(math.sqrt(norm2), 1e-300))
    for j in range(x.shape[0]):
        out[j] += (residual * x[j]) * scale


@jit
def clipped_gradient_rows(theta: np.ndarray, X: np.ndarray, y: np.ndarray, kind: int,
                          clip: float) -> np.ndarray:
    """Per-sample clipped gradients, one row per sample (`clipped_gradient_add`)."""
    out = np.zeros(X.shape)
    for i in range(X.shape[0]):
        clipped_gradient_add(theta, X[i], y[i], kind, clip, out[i])
    return out


def clipped_gradients(theta: np.ndarray, X: np.ndarray, y: np.ndarray, link: Link,
                      clip: float) -> np.ndarray:
    """Per-sample canonical gradients (μ(xᵀθ) − y)x, each scaled down to norm ≤ clip."""
    return clipped_gradient_rows(np.ascontiguousarray(theta, dtype=float),
                                 np.ascontiguousarray(X, dtype=float),
                                 np.ascontiguousarray(y, dtype=float), link.kind, float(clip))


def starting_epochs(eps0: float) -> int:
    """E₀ from the per-fit ε₀, as in the authors' code."""
    for bound, epochs in ((0.1, 15), (0.3, 25), (1.0, 50), (2.0, 75)):
        if eps0 <= bound:
            return epochs
    return 100


def select_epochs(eps0: float, delta0: float, n: int, batch: int, d: int, clip: float = CLIP,
                  *, engine: str = "fast") -> tuple[int, int, float]:
    """The authors' epoch search: (epochs E, burn-in B, noise multiplier σ).

    Among the candidate epoch counts, maximise steps/(σ_E C/b)²; scores within 1e-6
    (relative) of the best count as ties, resolved towards the smallest E.
    """
    spe = max(1, n // batch)
    e0 = starting_epochs(eps0)
    sigma0 = noise_multiplier(eps0, delta0, e0 * spe, n, batch, engine=engine)
    ns0 = sigma0 * clip / batch
    floor = max(2, math.ceil(math.log(d + 1)))
    if ns0 > 8:
        factors: tuple[float, ...] = (0.1, 0.25, 0.5, 1.0, 1.5)
    elif ns0 > 5:
        factors = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5)
    else:
        factors = (0.5, 0.75, 1.0, 1.25, 1.5)
        floor = max(5, floor)
    candidates = sorted({max(floor, round(e0 * f)) for f in factors} | {e0})
    sigmas: dict[int, float] = {}
    scores: dict[int, float] = {}
    for e in candidates:
        sigma = sigma0 if e == e0 else noise_multiplier(eps0, delta0, e * spe, n, batch,
                                                        engine=engine)
        sigmas[e] = sigma
        scores[e] = e * spe / (sigma * clip / batch) ** 2
    best = max(scores.values())
    epochs = min(e for e in candidates if scores[e] >= best * (1.0 - 1e-6))
    burn_in = BURN_IN if epochs == e0 else max(1, round(BURN_IN * epochs / e0))
    return epochs, burn_in, sigmas[epochs]


def dpsgd_fit(theta0: np.ndarray, X: np.ndarray, y: np.ndarray, eps0: float, delta0: float,
              link: Link, rng: np.random.Generator, *, clip: float = CLIP,
              lam: float = LAMBDA_FIT, lr0: float = LR0, batch_max: int = BATCH_MAX,
              noiseless: bool = False, engine: str = "fast",
              name: str = "DP-SGD step") -> FitResult:
    """DP-SGD as the authors ran it: shuffled fixed-size minibatches, drop-last.

    Each step adds N(0, (σC/b)²) to the mean clipped gradient; returns the average of the
    epoch-end iterates after burn-in. `noiseless` keeps every random draw but scales the
    noise to zero (a sanity switch, no privacy).
    """
    theta = np.array(theta0, dtype=float)
    n, d = X.shape
    if n == 0:
        return FitResult(theta, 0, 0, 0, 0, 0, 0.0, 0.0, "dpsgd", eps0, delta0)
    batch = min(batch_max, n)
    spe = max(1, n // batch)
    epochs, burn_in, sigma = select_epochs(eps0, delta0, n, batch, d, clip, engine=engine)
    noise_std = 0.0 if noiseless else sigma * clip / batch
    out = sgd_passes(theta, *sample_rows(X, y), link.kind, rng, spe, batch, epochs, burn_in,
                     float(clip), float(lam), float(lr0), noise_std, name=name)
    return FitResult(out, n, batch, epochs, burn_in, epochs * spe, sigma, noise_std, "dpsgd",
                     eps0, delta0)


def sample_rows(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The samples as the kernels take them: C-ordered float64."""
    return np.ascontiguousarray(X, dtype=float), np.ascontiguousarray(y, dtype=float)


@jit
def sgd_epoch(theta: np.ndarray, X: np.ndarray, y: np.ndarray, kind: int, order: np.ndarray,
              noise: np.ndarray, k: int, batch: int, clip: float, lam: float,
              lr0: float, steps: np.ndarray, replayed: np.ndarray) -> None:
    """One epoch's len(noise) minibatch steps in place, the s-th on rows
    order[s·batch : min((s + 1)·batch, n)]: θ ← θ − (lr0/√k)(ḡ + 2λθ + noise[s]), ḡ the mean
    clipped gradient, k counting steps from `k` + 1 on. steps[s] ← ḡ + 2λθ (the step's
    statistic); with rows in `replayed`, replayed[s] is the noisy step used instead."""
    n, d = X.shape
    g = np.empty(d)
    for s in range(noise.shape[0]):
        start = s * batch
        stop = min(start + batch, n)
        for j in range(d):
            g[j] = 0.0
        for i in range(start, stop):
            clipped_gradient_add(theta, X[order[i]], y[order[i]], kind, clip, g)
        rate = lr0 / math.sqrt(k + s + 1)
        for j in range(d):
            step = g[j] / (stop - start) + 2.0 * lam * theta[j]
            steps[s, j] = step
            value = replayed[s, j] if replayed.shape[0] else step + noise[s, j]
            theta[j] = theta[j] - rate * value


_NO_ROWS = np.zeros((0, 0))


def sgd_passes(theta: np.ndarray, X: np.ndarray, y: np.ndarray, kind: int,
               rng: np.random.Generator, per_epoch: int, batch: int, epochs: int, burn_in: int,
               clip: float, lam: float, lr0: float, noise_std: float,
               name: str = "DP-SGD step") -> np.ndarray:
    """`epochs` shuffled passes of `per_epoch` minibatch steps (`sgd_epoch`), each epoch
    shuffling the rows, then drawing its steps' noise N(0, noise_std²I) in one call (the
    values one call per step draws); the average of the epoch-end iterates after burn-in.
    In audit mode each step is a release (`privacy.release.release`, the noise drawn here)
    of the regularised mean clipped gradient, replace-one sensitivity 2C/b."""
    theta = np.array(theta, dtype=float)
    order = np.arange(X.shape[0])
    total = np.zeros(X.shape[1])
    steps = np.empty((per_epoch, X.shape[1]))
    audit = recording_active()
    kept = 0
    for e in range(epochs):
        rng.shuffle(order)
        noise = rng.normal(0.0, noise_std, size=(per_epoch, X.shape[1]))
        ahead = replay_ahead(per_epoch) if audit else None
        sgd_epoch(theta, X, y, kind, order, noise, e * per_epoch, batch, clip, lam, lr0, steps,
                  _NO_ROWS if ahead is None else ahead)
        if audit:
            release(NumpyNoise(rng), None, steps, name=name, mechanism="gaussian",
                    sensitivity=2.0 * clip / batch, scale=noise_std, partition=f"epoch {e + 1}",
                    noise_drawn=noise, rows=True)
        if e >= burn_in:
            total += theta
            kept += 1
    return total / kept if kept else theta


def replace_one_epsilon(fit: FitResult, *, engine: str = "fast") -> float:
    """Actual ε of a paper-mode fit: the mean's replace-one sensitivity is 2C/b, not C/b.

    Re-runs the accountant with the effective noise multiplier σ/2 at the fit's δ₀.
    """
    if fit.n == 0 or fit.epsilon is None or fit.delta is None:
        return 0.0
    return dpsgd_epsilon(fit.sigma / 2.0, fit.delta, fit.steps, fit.n, fit.batch,
                         target_epsilon=fit.epsilon, engine=engine)


def project_ball(theta: np.ndarray, radius: float) -> np.ndarray:
    """Euclidean projection onto {‖θ‖ ≤ radius} (a new array)."""
    out = np.array(theta, dtype=float)
    project_ball_into(out, float(radius))
    return out


@jit
def noisy_gd_steps(theta: np.ndarray, X: np.ndarray, y: np.ndarray, kind: int, denom: float,
                   noise: np.ndarray, grid: float, radius: float, burn_in: int, clip: float,
                   lam: float, lr0: float, sums: np.ndarray,
                   replayed: np.ndarray) -> np.ndarray:
    """K = len(noise) steps θ ← Π(θ − lr_k(g̃/denom + 2λθ)) from θ (in place), g̃ the clipped
    gradient sum snapped to `grid` (exact noise; 0: none) plus noise[k], or replayed[k] where
    `replayed` has rows; sums[k] ← the snapped sum (the step's statistic); the mean of the
    iterates after `burn_in`, or the last iterate (docs/glm.md, "Strict fits")."""
    d = X.shape[1]
    mean_after = np.zeros(d)
    g = np.empty(d)
    kept = 0
    for k in range(1, noise.shape[0] + 1):
        for j in range(d):
            g[j] = 0.0
        for i in range(X.shape[0]):
            clipped_gradient_add(theta, X[i], y[i], kind, clip, g)
        rate = lr0 / math.sqrt(k)
        for j in range(d):
            sums[k - 1, j] = snap(g[j], grid)
            if replayed.shape[0]:
                noisy = replayed[k - 1, j]
            else:
                noisy = sums[k - 1, j] + noise[k - 1, j]
            theta[j] = theta[j] - rate * (noisy / denom + 2.0 * lam * theta[j])
        project_ball_into(theta, radius)
        if k > burn_in:
            for j in range(d):
                mean_after[j] += theta[j]
            kept += 1
    for j in range(d):
        mean_after[j] = mean_after[j] / kept if kept else theta[j]
    return mean_after


def strict_sigma(rho: float, steps: int = STRICT_STEPS) -> float:
    """σ = √((K + 1)/(2ρ)): K gradient releases plus one noisy count at ρ-zCDP.

    docs/glm.md, "Strict fits".
    """
    return math.sqrt((steps + 1) / (2.0 * rho))


FIT_MECHANISM = "noisy projected GD (count + K gradient sums)"


def fit_cost(count: Drawn, gradient: float, steps: int) -> Callable[[Drawn], dict[str, float]]:
    """ρ of a noisy-GD fit from the noise drawn: Δ'²/(2σ²) of the count at the σ its noise
    was drawn at plus K gradient sums' (zCDP composition; docs/glm.md, "Strict fits"); Δ' the
    snapped sensitivities (`count.sensitivity`, `gradient`) the calibration found."""
    return lambda drawn: {"rho": gaussian_rho(count) + steps * gaussian_rho(
        Drawn(drawn.mechanism, drawn.scale, gradient))}


def gradient_draws(source: Noise, rng: np.random.Generator, exact: bool, sd: float,
                   shape: tuple[int, int]) -> np.ndarray:
    """The K gradient sums' noise N(0, sd²) (exact: discrete, on sd's grid), drawn in one
    call (what K calls draw)."""
    return source.gaussian(sd, shape) if exact else rng.normal(0.0, sd, size=shape)


def noisy_gd_fit(theta0: np.ndarray, X: np.ndarray, y: np.ndarray, rho: float, link: Link,
                 rng: np.random.Generator, *, radius: float, steps: int = STRICT_STEPS,
                 burn_in: int = STRICT_BURN_IN, clip: float = CLIP, lam: float = LAMBDA_FIT,
                 lr0: float = LR0, noise: Noise | None = None,
                 ledger: PrivacyLedger | None = None, name: str = "noisy GD") -> FitResult:
    """Full-batch noisy projected GD at ρ-zCDP (docs/glm.md, "Strict fits").

    One noisy count ñ = n + N(0, σ²), then K steps θ ← Π(θ − lr_k(g̃/max(ñ, 1) + 2λθ)) with
    g̃ = Σ clip_C(∇ℓ_i) + N(0, (2Cσ)² I); returns the mean of the iterates after `burn_in`.
    With an exact `noise` source each of the K + 1 releases is snapped and calibrated to
    ρ/(K + 1) for its own sensitivity (1 for the count, 2C for a gradient sum). The count and
    the K gradient sums are releases (`privacy.release.release`, the noise drawn here first);
    the gradient sums' release writes the fit's ledger entry (to `ledger`, as `name`) from
    the noise drawn.
    """
    theta = project_ball(theta0, radius)
    n, d = X.shape
    sigma = strict_sigma(rho, steps)
    exact = noise is not None and noise.exact
    source: Noise = noise if noise is not None else NumpyNoise(rng)
    if not exact:  # Δ: a record's count and its clipped gradient, replaced (snapped: Δ')
        count_sd, count_sens = sigma, 1.0
        grad_sd, grad_sens = 2.0 * clip * sigma, 2.0 * clip
        count, count_noise = float(n), rng.normal(0.0, sigma)
    else:
        count_sd, count_sens = source.calibrate_gaussian(1.0, rho / (steps + 1), 1)
        grad_sd, grad_sens = source.calibrate_gaussian(2.0 * clip, rho / (steps + 1), d)
        sigma = grad_sd / (2.0 * clip)
        count = float(source.snap(float(n), count_sd))
        count_noise = float(source.gaussian(count_sd))
    noisy_n = count + count_noise  # recorded (and replayed) in audit mode; its cost is below
    if recording_active():
        noisy_n = float(release(source, None, count, name=f"{name}: count",
                                mechanism="gaussian", sensitivity=count_sens, scale=count_sd,
                                noise_drawn=count_noise))
    gradient_noise = gradient_draws(source, rng, exact, grad_sd, (steps, d))
    grid = source.grid(grad_sd) if exact else 0.0
    ahead = replay_ahead(steps)
    sums = np.empty((steps, d))
    out = noisy_gd_steps(theta, *sample_rows(X, y), link.kind, max(noisy_n, 1.0),
                         gradient_noise, grid, float(radius), burn_in, float(clip), float(lam),
                         float(lr0), sums, _NO_ROWS if ahead is None else ahead)
    count_drawn = Drawn("gaussian", source.effective_sigma(count_sd), count_sens)
    release(source, ledger, sums, name=name, mechanism="gaussian", sensitivity=grad_sens,
            scale=grad_sd, noise_drawn=gradient_noise, rows=True,
            ledger_mechanism=FIT_MECHANISM,
            cost=fit_cost(count_drawn, grad_sens, steps),
            note=f"n = {n}, K = {steps}, sigma = {sigma:.6g}")
    return FitResult(out, n, n, steps, burn_in, steps, sigma, grad_sd, "noisy_gd", rho=rho)
