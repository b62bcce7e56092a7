"""DP-SGD of the authors' initial commit ab8fd16: a fixed number of epochs, its own RDP noise
calibration and its noise-adaptation rule (docs/glm.md, "Code state ab8fd16").

The fit, its calibration and what a record actually pays for it are kept apart from the later
fit of `dpsgd.py` (the corrected code state, which the default runs follow).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from dpbandits.errors import ConfigError
from dpbandits.links import Link
from dpbandits.privacy.accountant import epsilon_from_rdp, rdp_orders
from dpbandits.privacy.dpsgd import (
    CLIP,
    LAMBDA_FIT,
    LR0,
    FitResult,
    sample_rows,
    sgd_passes,
)

EPOCHS = 50
BURN_IN = 10
BATCH_MAX = 2048
SIGMA_BOUNDS = (1e-5, 4e7)
SIGMA_XTOL = 1e-6
ADAPT_ABOVE = 0.3  # noise std on the mean gradient above which epochs are cut
ADAPT_TARGET = 0.2
ADAPT_ROUNDS = 10
ADAPT_MIN_EPOCHS = 15
ADAPT_MIN_STEPS = 20


def orders(epsilon: float) -> np.ndarray:
    """ab8fd16's RDP orders: 2, 3, …, 63 for ε ≥ 0.3, else 2, 6, …, 62 and 70, 76, …, 508."""
    if epsilon >= 0.3:
        return np.arange(2.0, 64.0, 1.0)
    return np.concatenate([np.arange(2.0, 64.0, 4.0), np.arange(70.0, 512.0, 6.0)])


def claimed_epsilon(sigma: float, delta: float, steps: int, q: float,
                    target: float) -> float:
    """ab8fd16's ε(σ): min over its orders α of steps·α·q²/(2σ²) + ln(1/δ)/(α − 1).

    The q² scaling is not a valid RDP bound of a subsampled Gaussian step for q < 1; at q = 1
    it is the Gaussian mechanism's RDP at sensitivity = one noise multiplier's unit.
    """
    alpha = orders(target)
    rdp = steps * alpha * q * q / (2.0 * sigma * sigma)
    return float(np.min(rdp - math.log(delta) / (alpha - 1.0)))


@functools.lru_cache(maxsize=4096)
def noise_multiplier(epsilon: float, delta: float, steps: int, q: float) -> float:
    """σ with ab8fd16's ε(σ) = ε, by Brent's method on [1e-5, 4e7] (x tolerance 1e-6)."""
    from scipy.optimize import brentq  # loaded where a σ is sought

    low, high = SIGMA_BOUNDS
    f_low = claimed_epsilon(low, delta, steps, q, epsilon) - epsilon
    f_high = claimed_epsilon(high, delta, steps, q, epsilon) - epsilon
    if f_low > 0 and f_high > 0:
        raise ConfigError(f"epsilon = {epsilon!r} is not attainable by the ab8fd16 calibration "
                          f"at delta = {delta!r} (ε at σ = {high:g} is {f_high + epsilon:.6g}); "
                          "its code raises here too")
    if f_low < 0 and f_high < 0:
        raise ConfigError(f"epsilon = {epsilon!r} is not attainable by the ab8fd16 calibration "
                          f"at delta = {delta!r}: every σ in [{low:g}, {high:g}] is below it")
    return float(brentq(lambda s: claimed_epsilon(s, delta, steps, q, epsilon) - epsilon,
                        low, high, xtol=SIGMA_XTOL))


def adapt(noise_std: float, epochs: int, burn_in: int, lr0: float, epsilon: float,
          delta: float, n: int, batch: int, clip: float) -> tuple[int, int, float, float]:
    """ab8fd16's rule for a noisy fit: (epochs, burn-in, lr₀, noise std on the mean gradient).

    Above a std of 0.3 it cuts the epochs (× 0.8 to 0.95 by the std, never below 15) and the
    burn-in, sets lr₀ > 2 to min(1, 0.8·lr₀), recalibrates, and stops at a std ≤ 0.2, at 15
    epochs, below 20 steps, or after 10 rounds.
    """
    if noise_std <= ADAPT_ABOVE:
        return epochs, burn_in, lr0, noise_std
    per_epoch = math.ceil(n / batch)
    q = batch / n
    for _ in range(ADAPT_ROUNDS):
        std = noise_multiplier(epsilon, delta, epochs * per_epoch, q) * clip / batch
        if std <= ADAPT_TARGET or epochs <= ADAPT_MIN_EPOCHS:
            break
        if epochs * per_epoch < ADAPT_MIN_STEPS:
            break
        factor = 0.8 if std > 2.0 else 0.85 if std > 1.0 else 0.9 if std > 0.5 else 0.95
        new_epochs = max(ADAPT_MIN_EPOCHS, int(epochs * factor))
        if new_epochs >= epochs:
            break
        epochs, burn_in = new_epochs, max(1, int(burn_in * factor))
        if lr0 > 2.0:
            lr0 = min(1.0, lr0 * 0.8)
        elif lr0 < 1.0:
            lr0 = min(lr0 * 1.1, 1.5)
    std = noise_multiplier(epsilon, delta, epochs * per_epoch, q) * clip / batch
    return epochs, burn_in, lr0, std


def dpsgd_fit(theta0: np.ndarray, X: np.ndarray, y: np.ndarray, eps0: float, delta0: float,
              link: Link, rng: np.random.Generator, *, clip: float = CLIP,
              lam: float = LAMBDA_FIT, lr0: float = LR0, epochs: int = EPOCHS,
              burn_in: int = BURN_IN, batch_max: int = BATCH_MAX,
              noiseless: bool = False) -> FitResult:
    """ab8fd16's DP-SGD: `epochs` passes over shuffled minibatches of b = min(2048, n), the last
    one partial; each step adds N(0, (σC/b)²) to the mean clipped gradient (σ from
    `noise_multiplier` for epochs·⌈n/b⌉ steps at q = b/n, then `adapt`); returns the average of
    the epoch-end iterates after burn-in. `noiseless` keeps every draw, noise scaled to zero.
    """
    theta = np.array(theta0, dtype=float)
    n, d = X.shape
    if n == 0:
        return FitResult(theta, 0, 0, 0, 0, 0, 0.0, 0.0, "dpsgd_ab8fd16", eps0, delta0)
    batch = min(batch_max, n)
    per_epoch = math.ceil(n / batch)
    sigma = noise_multiplier(eps0, delta0, epochs * per_epoch, batch / n)
    epochs, burn_in, lr0, std = adapt(sigma * clip / batch, epochs, burn_in, lr0, eps0,
                                      delta0, n, batch, clip)
    sigma = std * batch / clip
    noise_std = 0.0 if noiseless else std
    out = sgd_passes(theta, *sample_rows(X, y), link.kind, rng, per_epoch, batch, epochs,
                     burn_in, float(clip), float(lam), float(lr0), noise_std)
    return FitResult(out, n, batch, epochs, burn_in, epochs * per_epoch, sigma, noise_std,
                     "dpsgd_ab8fd16", eps0, delta0)


def smallest_batch(fit: FitResult) -> int:
    """Size of the last (smallest) minibatch of an epoch: n − (⌈n/b⌉ − 1)·b."""
    return fit.n - (math.ceil(fit.n / fit.batch) - 1) * fit.batch


def replace_one_epsilon(fit: FitResult) -> float:
    """What a record pays for one ab8fd16 fit at the fit's δ₀, without amplification.

    Each epoch puts a record in exactly one step; replacing it moves that step's mean clipped
    gradient by up to 2C/b_step while the noise std is σC/b, so the worst step (the partial
    batch b_min) is a Gaussian mechanism with multiplier σ·b_min/(2b). E epochs compose:
    RDP(α) = E·α/(2σ_eff²), converted as the accountant converts RDP (Canonne et al. 2020).
    """
    if fit.n == 0 or fit.delta is None:
        return 0.0
    if fit.noise_std == 0:
        return math.inf
    sigma_eff = fit.sigma * smallest_batch(fit) / (2.0 * fit.batch)
    alphas = rdp_orders(fit.epsilon if fit.epsilon is not None else 1.0)
    rdp = fit.epochs * np.asarray(alphas) / (2.0 * sigma_eff**2)
    return epsilon_from_rdp(alphas, rdp, fit.delta)
