"""Privacy ledger: every release of a private policy, what each record pays, and the total.

An entry states the cost that *each record of its partition* pays for one release (times
`count` identical releases): records in different partitions are disjoint (parallel
composition), entries of one partition compose sequentially, and entries of the partition
`EVERY_RECORD` are paid by every record. The total is the worst partition's composition, so it
follows from the entries alone: nothing is declared that the entries do not show. zCDP costs
(ρ) add up and are converted at the end with the ledger's conversion ("classic":
ε = ρ + 2√(ρ ln 1/δ), Bun & Steinke 2016 Prop. 1.3; "tight": dp-accounting's RDP conversion).

A mechanism whose privacy argument does not hold for the neighbouring relation claimed (e.g. a
data-dependent decision released without noise) is recorded as a `breach`: the total is then
ε = ∞ with the reason stated. Paper accounting may also state the authors' own bound for
information (`claim`); it is reported next to the total, never used for it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from dpbandits.errors import ConfigError, PrivacyBudgetError

ACCOUNTING_MODES = ("strict", "paper")  # the theorem's guarantee, or the authors' code
EVERY_RECORD = "every record"
CONVERSIONS = ("classic", "tight")
TOLERANCE = 1e-9


@dataclass
class LedgerEntry:
    """One release (or `count` identical releases) and what each record of `partition` pays."""

    mechanism: str
    component: str
    sensitivity: float
    noise_scale: float
    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None
    count: int = 1
    note: str = ""
    partition: str = EVERY_RECORD


def rho_to_epsilon(rho: float, delta: float) -> float:
    """Classic zCDP → (ε, δ): ε = ρ + 2√(ρ ln(1/δ)) (Bun & Steinke 2016, Prop. 1.3)."""
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def convert_rho(rho: float, delta: float, conversion: str) -> float:
    """ρ-zCDP → ε at δ with the named conversion."""
    if conversion == "tight":
        from dpbandits.privacy.zcdp import epsilon_from_rho_tight

        return epsilon_from_rho_tight(rho, delta)
    return rho_to_epsilon(rho, delta)


@dataclass(frozen=True)
class Cost:
    """Sequentially composed cost of a set of entries: pure (ε, δ) plus zCDP ρ."""

    epsilon: float = 0.0
    delta: float = 0.0
    rho: float = 0.0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.epsilon + other.epsilon, self.delta + other.delta,
                    self.rho + other.rho)

    @staticmethod
    def of(entry: LedgerEntry) -> Cost:
        n = entry.count
        if entry.rho is not None:
            return Cost(rho=entry.rho * n)
        return Cost((entry.epsilon or 0.0) * n, (entry.delta or 0.0) * n)

    def to_epsilon_delta(self, delta_budget: float, conversion: str) -> tuple[float, float]:
        """(ε, δ): the ρ part is converted at whatever δ the pure part leaves of the budget."""
        if self.rho <= 0:
            return self.epsilon, self.delta
        rho_delta = delta_budget - self.delta
        if rho_delta <= 0:
            return math.inf, self.delta
        return self.epsilon + convert_rho(self.rho, rho_delta, conversion), delta_budget


@dataclass
class PrivacyLedger:
    """Record of releases; the total is the worst partition's sequential composition."""

    epsilon_budget: float
    delta_budget: float
    accounting: str = "strict"
    conversion: str = "classic"
    entries: list[LedgerEntry] = field(default_factory=list)
    breaches: list[str] = field(default_factory=list)
    claim: tuple[float, float, str] | None = None

    def __post_init__(self) -> None:
        if self.conversion not in CONVERSIONS:
            raise ConfigError(f"conversion = {self.conversion!r} is not allowed; allowed: "
                              f"{', '.join(CONVERSIONS)}")

    def add(self, mechanism: str, component: str, **kwargs: object) -> LedgerEntry:
        """Record one release (see LedgerEntry for the fields)."""
        entry = LedgerEntry(mechanism=mechanism, component=component, **kwargs)  # type: ignore[arg-type]
        self.entries.append(entry)
        return entry

    def breach(self, reason: str) -> None:
        """The guarantee does not hold for the claimed neighbouring relation: total ε = ∞."""
        if self.accounting == "strict":
            raise PrivacyBudgetError(f"strict accounting cannot hold a breach: {reason}")
        if reason not in self.breaches:
            self.breaches.append(reason)

    def state_claim(self, epsilon: float, delta: float, reason: str) -> None:
        """Paper accounting: the bound the authors claim, reported next to the actual total."""
        if self.accounting == "strict":
            raise PrivacyBudgetError("strict accounting takes its total from the entries only")
        self.claim = (float(epsilon), float(delta), reason)

    def partition_costs(self) -> dict[str, Cost]:
        """Sequential composition per partition, each including the every-record entries."""
        return {name: Cost(*total) for name, total in self._partition_totals().items()}

    def _partition_totals(self) -> dict[str, tuple[float, float, float]]:
        """(ε, δ, ρ) per partition: the sums of `Cost.of` in entry order (without the +0.0s),
        plus the every-record sums as `Cost.__add__` adds them."""
        sums: dict[str, list[float]] = {EVERY_RECORD: [0.0, 0.0, 0.0]}  # ε, δ, ρ
        for entry in self.entries:
            total = sums.get(entry.partition)
            if total is None:
                total = sums[entry.partition] = [0.0, 0.0, 0.0]
            n = entry.count
            if entry.rho is not None:
                total[2] += entry.rho * n
            else:
                total[0] += (entry.epsilon or 0.0) * n
                total[1] += (entry.delta or 0.0) * n
        se, sd, sr = sums.pop(EVERY_RECORD)
        if not sums:
            return {EVERY_RECORD: (se, sd, sr)}
        return {name: (e + se, d + sd, r + sr) for name, (e, d, r) in sums.items()}

    @property
    def rho_spent(self) -> float:
        """Largest ρ any record pays."""
        return max(r for _, _, r in self._partition_totals().values())

    def spent(self) -> tuple[float, float]:
        """(ε, δ) of the worst-off record, from the entries (∞ if a breach is recorded, NaN if
        an entry's cost is NaN)."""
        if self.breaches:
            return math.inf, self.delta_budget
        # Partitions that pay the same (ε, δ, ρ) convert to the same (ε, δ): once each, the
        # first of equals kept in order, as max keeps the first of equals.
        totals = [Cost(*total).to_epsilon_delta(self.delta_budget, self.conversion)
                  for total in dict.fromkeys(self._partition_totals().values())]
        if any(math.isnan(e) or math.isnan(d) for e, d in totals):  # not a cost: unknown
            return math.nan, math.nan
        return max(e for e, _ in totals), max(d for _, d in totals)

    def check(self) -> None:
        """Strict accounting: raise if any record pays more than the (ε, δ) budget."""
        if self.accounting != "strict":
            return
        eps, delta = self.spent()
        if not (eps <= self.epsilon_budget * (1 + TOLERANCE)
                and delta <= self.delta_budget * (1 + TOLERANCE)):  # NaN (unknown) fails too
            raise PrivacyBudgetError(
                f"strict ledger overspent: (ε, δ) = ({eps:.6g}, {delta:.3g}) > budget "
                f"({self.epsilon_budget:.6g}, {self.delta_budget:.3g})"
            )

    def to_json(self) -> str:
        eps, delta = self.spent()
        return json.dumps(
            {
                "epsilon_budget": self.epsilon_budget,
                "delta_budget": self.delta_budget,
                "accounting": self.accounting,
                "conversion": self.conversion,
                "epsilon_spent": eps,
                "delta_spent": delta,
                "breaches": self.breaches,
                "claim": self.claim,
                "entries": [vars(e) for e in self.entries],  # scalar fields only, read as they are
            },
            sort_keys=True,
        )
