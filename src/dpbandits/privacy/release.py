"""One noisy release: draw the noise, write the ledger entry from the noise drawn, record it.

`release` takes the statistic, its declared sensitivity, the mechanism and its scale. It draws
the noise through the policy's `Noise` (exact discrete noise on the snapped statistic in strict
mode, numpy's floats in paper mode; `exact_noise.py`), writes the ledger entry from the scale
the sampler used and the sensitivity the snapped release has (never from a plan), and, inside
`recording()`, keeps the pre-noise statistic for the release checks (docs/audits.md,
"Release checks"). A recording that replays another run's released values returns those
instead of the fresh draws, so that a neighbouring run sees the same outputs as the first.

A mechanism that draws its noise ahead with its own sampler (a tree's node noise, drawn when
the tree is built; a fit's gradient noise, drawn before its steps) passes it as `noise_drawn`:
nothing is drawn here, the release is statistic + that noise, recorded alike. `rows=True`
releases each row of the statistic as a release of its own (one record each, one ledger entry
for all), and `replay_ahead` hands a compiled loop the values it will be replayed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpbandits.errors import ConfigError
from dpbandits.privacy.exact_noise import Noise
from dpbandits.privacy.ledger import EVERY_RECORD, LedgerEntry, PrivacyLedger

MECHANISMS = ("gaussian", "laplace", "vector-sum")
# the norm each mechanism's sensitivity is in
NORMS = {"gaussian": "l2", "laplace": "l1", "vector-sum": "l2"}


@dataclass(frozen=True)
class Drawn:
    """What a release's noise was drawn at: the scale the sampler used (σ or b, on its grid in
    strict mode) and the sensitivity the release has after snapping (Δ' ≥ Δ); a vector sum's
    scale is the per-coordinate σ̃ of the protocol drawn, `detail` its parameters."""

    mechanism: str
    scale: float
    sensitivity: float
    detail: Any = None


@dataclass(frozen=True)
class ReleaseRecord:
    """One release as the release checks see it."""

    index: int
    name: str
    partition: str
    statistic: np.ndarray
    released: np.ndarray
    sensitivity: float
    norm: str
    drawn: Drawn
    entry: LedgerEntry | None
    changed: int | None = None  # the most coordinates a neighbour changes (None: any)
    freedom: int = 0  # independent noise coordinates (0: every coordinate of the statistic)


@dataclass
class ReleaseRecorder:
    """Every release of a run, in order; with `replay`, the released values to hand back."""

    replay: Sequence[ReleaseRecord] | None = None
    records: list[ReleaseRecord] = field(default_factory=list)

    def capture(self, record: ReleaseRecord) -> np.ndarray:
        """Keep `record`; the value the policy receives (the replayed one when replaying)."""
        self.records.append(record)
        if self.replay is None:
            return record.released
        if record.index >= len(self.replay):
            raise ConfigError(f"release {record.index} ({record.name!r}) has no counterpart in "
                              f"the run replayed ({len(self.replay)} releases)")
        return np.array(self.replay[record.index].released, dtype=float)

    def ahead(self, count: int) -> list[np.ndarray] | None:
        """The next `count` values the replay will hand back (None when not replaying)."""
        if self.replay is None:
            return None
        start = len(self.records)
        if start + count > len(self.replay):
            raise ConfigError(f"releases {start}…{start + count - 1} have no counterpart in "
                              f"the run replayed ({len(self.replay)} releases)")
        return [np.array(r.released, dtype=float) for r in self.replay[start:start + count]]


_ACTIVE: list[ReleaseRecorder] = []


@contextmanager
def recording(replay: Sequence[ReleaseRecord] | None = None) -> Iterator[ReleaseRecorder]:
    """Record every release made inside the block (audit mode); replay `replay`'s values."""
    recorder = ReleaseRecorder(replay=replay)
    _ACTIVE.append(recorder)
    try:
        yield recorder
    finally:
        _ACTIVE.remove(recorder)


def drawn_for(noise: Noise, mechanism: str, scale: float, sensitivity: float,
              dim: int) -> Drawn:
    """The scale the sampler uses for `scale` and the snapped release's sensitivity:
    Δ' = Δ + γ√dim (Gaussian) or Δ + γ·dim (Laplace) on the grid γ (CKS 2020, Thm 4)."""
    if scale == 0:
        return Drawn(mechanism, 0.0, float(sensitivity))
    gamma = noise.grid(scale)
    if mechanism == "gaussian":
        return Drawn(mechanism, noise.effective_sigma(scale),
                     sensitivity + gamma * math.sqrt(dim))
    return Drawn(mechanism, noise.effective_scale(scale), sensitivity + gamma * dim)


def gaussian_rho(drawn: Drawn) -> float:
    """ρ = Δ'²/(2σ²) of a Gaussian release (Bun & Steinke 2016, Prop. 1.6; CKS 2020, Thm 4)."""
    return math.inf if drawn.scale == 0 else drawn.sensitivity**2 / (2.0 * drawn.scale**2)


def laplace_epsilon(drawn: Drawn) -> float:
    """ε = Δ'/b of a Laplace release (Dwork & Roth 2014, Thm 3.6)."""
    return math.inf if drawn.scale == 0 else drawn.sensitivity / drawn.scale


def vector_sum_cost(drawn: Drawn) -> dict[str, float]:
    """(ε, δ) of the vector-summation protocol drawn: its b solved for ε (CJMP P_vec)."""
    from dpbandits.privacy.vector_sum import vector_sum_epsilon

    return {"epsilon": vector_sum_epsilon(drawn.detail), "delta": float(drawn.detail.delta)}


def drawn_cost(drawn: Drawn) -> dict[str, float]:
    """The ledger cost of a release from the noise it drew: ρ (Gaussian), ε (Laplace) or
    (ε, δ) (vector summation)."""
    if drawn.mechanism == "gaussian":
        return {"rho": gaussian_rho(drawn)}
    if drawn.mechanism == "vector-sum":
        return vector_sum_cost(drawn)
    return {"epsilon": laplace_epsilon(drawn), "delta": 0.0}


def upcoming() -> np.ndarray | None:
    """Inside a replaying recording, the value the next release will hand back (None
    otherwise): a mechanism whose later draws follow its earlier outputs (P_GD's iterates)
    follows these while it draws, as the policy would on D0's outputs."""
    ahead = replay_ahead(1)
    return None if ahead is None else ahead[0]


def draw(noise: Noise, statistic: np.ndarray, mechanism: str, scale: float) -> np.ndarray:
    """statistic + noise: the exact discrete mechanism on the snapped statistic (strict) or
    numpy's float draws (paper); scale 0 adds nothing."""
    if scale == 0:
        return statistic.copy()
    if mechanism == "gaussian":
        if noise.exact:
            return noise.release(statistic, scale)  # type: ignore[attr-defined]
        return statistic + noise.gaussian(scale, statistic.shape)
    if noise.exact:
        return noise.snap(statistic, scale) + noise.laplace(scale, statistic.shape)
    return statistic + noise.laplace(scale, statistic.shape)


def merge_entry(ledger: PrivacyLedger, mechanism: str, name: str, sensitivity: float,
                drawn: Drawn, partition: str, note: str, costs: dict[str, float]) -> LedgerEntry:
    """One more release into the ledger's last entry when it is of the same name, mechanism
    and partition, else a new entry: `count` releases composed sequentially at the largest
    cost of any (≥ their sum), with the smallest scale and the largest sensitivity of any."""
    last = ledger.entries[-1] if ledger.entries else None
    if (last is None or last.component != name or last.mechanism != mechanism
            or last.partition != partition):
        return ledger.add(mechanism, name, sensitivity=sensitivity, noise_scale=drawn.scale,
                          partition=partition, note=note, **costs)
    last.count += 1
    last.sensitivity = max(last.sensitivity, sensitivity)
    last.noise_scale = min(last.noise_scale, drawn.scale)
    for key, value in costs.items():
        setattr(last, key, max(getattr(last, key) or 0.0, value))
    return last


def recording_active() -> bool:
    """Whether a `recording()` block is open (its releases are kept or replayed)."""
    return bool(_ACTIVE)


def replaying() -> bool:
    """Whether the releases being recorded hand back another run's values."""
    return bool(_ACTIVE) and _ACTIVE[-1].replay is not None


def replay_ahead(count: int) -> np.ndarray | None:
    """The values the next `count` releases will be replayed, stacked (None when not
    replaying): what a compiled loop that makes them uses in place of its own."""
    if not _ACTIVE:
        return None
    values = _ACTIVE[-1].ahead(count)
    return None if values is None else np.array(values, dtype=float)


def release(noise: Noise | None, ledger: PrivacyLedger | None, statistic: Any, *, name: str,
            mechanism: str, sensitivity: float, scale: float,
            partition: str = EVERY_RECORD, note: str = "", ledger_mechanism: str | None = None,
            cost: Callable[[Drawn], dict[str, float]] = drawn_cost,
            changed: int | None = None,
            sample: Callable[[], tuple[np.ndarray, Any]] | None = None,
            merge: bool = False, noise_drawn: np.ndarray | None = None, rows: bool = False,
            freedom: int = 0, entry: LedgerEntry | None = None) -> np.ndarray:
    """The statistic released with `mechanism` noise of `scale`, for a declared sensitivity in
    the mechanism's norm (`NORMS`); the ledger entry states the cost of the noise drawn.
    `changed`: a neighbour moves at most that many coordinates (one user's sum or report), so
    snapping adds γ per changed coordinate only. A vector sum (CJMP P_vec) is drawn from the
    users' own vectors by `sample`, which returns (output, protocol parameters drawn);
    `statistic` is then the exact sum it estimates and `scale` is not used. With `merge`, one
    ledger entry for a run of releases of one name (`merge_entry`).

    `noise_drawn`: the noise the mechanism's own sampler drew ahead at `scale` (added, nothing
    drawn here). `rows`: every row of the statistic is a release of its own. `freedom`: the
    independent noise coordinates of one release when fewer than its size (a symmetric
    matrix's d(d + 1)/2). `entry`: the ledger entry that already prices the release (a tree's,
    written when it was built); else one is written to `ledger` (if given)."""
    if mechanism not in MECHANISMS:
        raise ConfigError(f"mechanism = {mechanism!r} is not allowed; allowed: "
                          f"{', '.join(MECHANISMS)}")
    value = np.array(statistic, dtype=float)
    if mechanism == "vector-sum":
        if sample is None:
            raise ConfigError("a vector-sum release needs the protocol's sampler (sample=)")
        released, params = sample()
        released = np.array(released, dtype=float)
        drawn = Drawn(mechanism, params.noise_sd, float(sensitivity), params)
    else:
        size = value[0].size if rows and len(value) else value.size
        dim = (freedom or size) if changed is None else min(size, changed)
        drawn = drawn_for(noise, mechanism, scale, float(sensitivity), max(dim, 1))
        if noise_drawn is None:
            released = draw(noise, value, mechanism, scale)
        else:
            released = value + noise_drawn
    if entry is None and ledger is not None:
        mechanism_name = ledger_mechanism or mechanism
        entry = (merge_entry(ledger, mechanism_name, name, float(sensitivity), drawn, partition,
                             note, cost(drawn)) if merge else
                 ledger.add(mechanism_name, name, sensitivity=float(sensitivity),
                            noise_scale=drawn.scale, partition=partition, note=note,
                            **cost(drawn)))
    if not _ACTIVE:
        return released
    recorder = _ACTIVE[-1]

    def capture(stat: np.ndarray, out: np.ndarray) -> np.ndarray:
        return recorder.capture(ReleaseRecord(
            index=len(recorder.records), name=name, partition=partition, statistic=stat,
            released=out, sensitivity=float(sensitivity), norm=NORMS[mechanism],
            drawn=drawn, entry=entry, changed=changed, freedom=freedom))

    if not rows:
        return capture(value, released)
    return np.array([capture(a, b) for a, b in zip(value, released, strict=True)],
                    dtype=float).reshape(released.shape)
