"""Whether a replay can count T rounds (docs/realdata.md, "Feasibility").

A replay step counts when the policy picks the logged item; uniform choice does so with
probability 1/K. From E replay events it counts E/K rounds on average with standard deviation
√(E (1/K)(1 − 1/K)); a horizon is accepted when E/K − Z·sd ≥ T (Z = 3). The events E a replay
offers follow from the ratings file and the feature mode: the events after the warm start
(prefix, whole), only the held-out ones (split<p>), or those the online features cover
(online<p>), capped at max_steps. The check runs at validation when the ratings file exists
(`snakemake -n` included) and again, exactly, when a shard builds its instance, before any trial.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpbandits.data.fitting import TOKEN_PATTERN, FeatureFit, parse_fit
from dpbandits.errors import ConfigError

Z = 3.0
"""Margin, in standard deviations of the number of rounds uniform choice counts."""
FEATURES_NAME = re.compile(rf"svd_k[0-9]+_({TOKEN_PATTERN})\.h5")


@dataclass(frozen=True)
class Supply:
    """Replay events available and where the count comes from (`about`: an estimate)."""

    events: int
    where: str
    about: bool = False


def rounds_supported(events: int, K: int) -> int:
    """Largest horizon T with E/K − Z √(E (1/K)(1 − 1/K)) ≥ T (0 if none)."""
    p = 1.0 / K
    return max(0, math.floor(events * p - Z * math.sqrt(events * p * (1 - p))))


def events_needed(horizon: int, K: int) -> int:
    """Smallest E with rounds_supported(E, K) ≥ horizon."""
    p = 1.0 / K
    b = Z * math.sqrt(p * (1 - p))  # E p − b √E ≥ T: a quadratic in √E
    root = (b + math.sqrt(b * b + 4 * p * horizon)) / (2 * p)
    events = max(1, math.floor(root * root) - 2)
    while rounds_supported(events, K) < horizon:
        events += 1
    return events


def supply_of(instance: Any) -> Supply:
    """The exact supply of a built replay instance."""
    return Supply(int(instance.n_steps), f"{instance.ratings_path} with {instance.features_path}")


def _fit_of(features: str) -> FeatureFit | None:
    match = FEATURES_NAME.fullmatch(Path(features).name)
    return parse_fit(match.group(1)) if match else None


def supply_from_keys(keys: dict[str, Any]) -> Supply | None:
    """The supply of a replay's checked keys before it is built: None while its ratings file
    does not exist or its features file is not named `svd_k<k>_<fit>.h5`."""
    import h5py

    ratings, features = Path(keys["ratings"]), Path(keys["features"])
    fit = _fit_of(str(features))
    if fit is None or not ratings.is_file():
        return None
    try:
        with h5py.File(ratings, "r") as f:
            n = int(f.attrs["n_ratings"])
    except (OSError, KeyError):
        return None  # unreadable: the shard job reports it with its own line
    n_warm = math.floor(float(keys.get("warm_start") or 0.0) * n)
    max_steps = keys.get("max_steps")
    about = False
    if fit.mode == "split":
        held_out = n - fit.n_fit(n)
        events = held_out if n_warm == 0 else round(held_out * (n - n_warm) / n)
        about = n_warm > 0
        what = f"the held-out {100 - fit.percent} % of {n} ratings"
    else:
        end = fit.n_fit(n) if fit.mode == "online" else n
        events = max(0, end - n_warm)
        what = f"{n} ratings, {n_warm} of them for the warm start"
        if fit.mode == "online" and end < n:
            what += f", the earliest {end} covered by the features"
    if max_steps is not None:
        events = min(events, int(max_steps))
        what += f", max_steps {max_steps}"
    return Supply(events, f"{ratings} ({what})", about)


def check_supply(kind: str, keys: dict[str, Any], supply: Supply | None) -> None:
    """One ConfigError line when the horizon cannot be counted from the supply."""
    if supply is None:
        return
    horizon, K = int(keys["horizon"]), int(keys.get("K", 3))
    if horizon <= rounds_supported(supply.events, K):
        return
    fits = [k for k in range(K - 1, 1, -1) if horizon <= rounds_supported(supply.events, k)]
    other_k = f", or K = {fits[0]}" if fits else ""
    raise ConfigError(
        f"horizon = {horizon} is not allowed for {kind}: at the accept rate of uniform choice "
        f"(1/K = 1/{K}) it needs {events_needed(horizon, K)} replay events, and "
        f"{supply.where} offers {'about ' if supply.about else ''}{supply.events}; allowed: "
        f"horizon <= {rounds_supported(supply.events, K)}{other_k}, or more replay events "
        "(max_steps, a smaller warm_start, features leaving more events to replay)")
