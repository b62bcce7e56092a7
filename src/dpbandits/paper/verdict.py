"""The verdict rules of the reproduction report (docs/reproduction.md, "Verdicts"): equivalence
against a stated margin (two one-sided tests), the precision gate, one-sided tests that can end
inconclusive, and how many trials would make an inconclusive verdict decisive."""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import special

REPRODUCED = "reproduced"
DIFFERS = "differs"
INCONCLUSIVE = "inconclusive"
INCONSISTENT = "paper inconsistent"
PRECISION_GATE = 3.0
"""A verdict of equivalence needs s.e. ≤ margin / PRECISION_GATE."""
POWER = 0.8
"""The power the trials-needed estimate aims at."""
DIVERGED_FACTOR = 2.0
"""A run whose regret exceeds this multiple of its cell's median counts as diverged."""


@dataclass
class Decision:
    """One verdict with its reason and, when inconclusive, the trials that would decide it."""

    status: str
    reason: str
    trials_needed: int | None = None


def plain(x: float | None, digits: int = 4) -> str:
    """A number in plain notation with `digits` significant digits (no exponent), "—" for none."""
    if x is None or not math.isfinite(x):
        return "—"
    if x == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    text = f"{x:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _quantile(df: float | None, alpha: float) -> float:
    """One-sided 1 − α quantile: Student t with df degrees of freedom, normal when df is None."""
    return float(special.ndtri(1 - alpha) if df is None else special.stdtrit(df, 1 - alpha))


def trials_for(sd_per_trial: float, distance: float, alpha: float) -> int | None:
    """Trials n at which an effect `distance` from the decision boundary is detected with power
    POWER at one-sided level α: n = ((z_{1−α} + z_POWER) · sd / distance)²; None when the
    estimate sits on the boundary or there is no spread."""
    if not (distance > 0 and sd_per_trial > 0) or not math.isfinite(sd_per_trial):
        return None
    z = special.ndtri(1 - alpha) + special.ndtri(POWER)
    return max(2, math.ceil((z * sd_per_trial / distance) ** 2))


def equivalence(estimate: float, se: float, n: int, low: float, high: float, alpha: float,
                df: float | None = None) -> Decision:
    """Two one-sided tests of low ≤ θ ≤ high: reproduced when the 1 − 2α interval lies inside
    [low, high] and s.e. ≤ margin/3 (margin = (high − low)/2), differs when the interval lies
    outside, inconclusive otherwise."""
    if se == 0 or not math.isfinite(se):
        inside = low - 1e-12 * abs(low) <= estimate <= high + 1e-12 * abs(high)
        band = plain(low) if low == high else f"[{plain(low)}, {plain(high)}]"
        return Decision(REPRODUCED if inside else DIFFERS,
                        f"no spread across trials: {plain(estimate)} "
                        f"{'within' if inside else 'outside'} {band}")
    q = _quantile(df, alpha)
    lo, hi = estimate - q * se, estimate + q * se
    margin = (high - low) / 2
    level = f"{100 * (1 - 2 * alpha):g} % interval {plain(lo)} to {plain(hi)}"
    band = f"[{plain(low)}, {plain(high)}]"
    sd = se * math.sqrt(n)
    if hi < low or lo > high:
        return Decision(DIFFERS, f"{level} lies outside {band}")
    if margin <= 0:
        return Decision(INCONCLUSIVE, f"{level} contains the published {plain(low)}, but no "
                        "equivalence margin is stated around it")
    distance = min(estimate - low, high - estimate)
    gate = math.ceil((PRECISION_GATE * sd / margin) ** 2)
    if low <= lo and hi <= high:
        if se <= margin / PRECISION_GATE:
            return Decision(REPRODUCED, f"{level} lies inside {band}")
        return Decision(INCONCLUSIVE, f"{level} lies inside {band}, but s.e. {plain(se)} > "
                        f"margin/3 = {plain(margin / PRECISION_GATE)} (precision gate)",
                        max(n + 1, gate))
    needed = trials_for(sd, abs(distance), alpha)
    if distance > 0 and needed is not None:
        needed = max(needed, gate)
    return Decision(INCONCLUSIVE, f"{level} overlaps the edge of {band}", needed)


def one_sided(estimate: float, se: float, n: int, p_claim: float, p_opposite: float,
              alpha: float, boundary: float = 0.0) -> Decision:
    """A strict claim (estimate > boundary, or < with the p-values swapped by the caller):
    reproduced when its test rejects the opposite at α, differs when the opposite direction is
    significant, inconclusive otherwise."""
    if p_claim < alpha:
        return Decision(REPRODUCED, f"established (p = {_p(p_claim)})")
    if p_opposite < alpha:
        return Decision(DIFFERS, f"the opposite direction is significant (p = {_p(p_opposite)})")
    sd = se * math.sqrt(n) if math.isfinite(se) else math.nan
    return Decision(INCONCLUSIVE, f"neither direction significant (p = {_p(p_claim)})",
                    trials_for(sd, abs(estimate - boundary), alpha))


def _p(p: float) -> str:
    return "< 0.0001" if p < 1e-4 else f"{p:.3g}"


def combine(decisions: list[Decision]) -> tuple[str, int | None]:
    """Intersection–union of several parts: differs if any part differs, reproduced if all are
    reproduced, else inconclusive with the most trials any inconclusive part needs (None when
    one of them cannot be decided by more trials)."""
    statuses = {d.status for d in decisions}
    if DIFFERS in statuses:
        return DIFFERS, None
    if statuses == {REPRODUCED}:
        return REPRODUCED, None
    needed = [d.trials_needed for d in decisions if d.status == INCONCLUSIVE]
    return INCONCLUSIVE, None if any(n is None for n in needed) else max(needed)
