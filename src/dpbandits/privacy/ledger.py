"""Privacy ledger: every release a private policy makes, with its mechanism and cost."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

from dpbandits.errors import PrivacyBudgetError


@dataclass
class LedgerEntry:
    """One release (or a batch of identical releases, `count` > 1)."""

    mechanism: str
    component: str
    sensitivity: float
    noise_scale: float
    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None
    count: int = 1
    note: str = ""


def rho_to_epsilon(rho: float, delta: float) -> float:
    """Classic zCDP → (ε, δ): ε = ρ + 2√(ρ ln(1/δ)) (Bun & Steinke 2016, Prop. 1.3)."""
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


@dataclass
class PrivacyLedger:
    """Record of releases; totals by basic composition of (ε, δ) plus zCDP additivity of ρ.

    A policy whose guarantee composes differently (parallel composition across disjoint
    batches, amplification) states its own total with `declare_total`.
    """

    epsilon_budget: float
    delta_budget: float
    accounting: str = "strict"
    entries: list[LedgerEntry] = field(default_factory=list)
    declared: tuple[float, float, str] | None = None

    def record(self, entry: LedgerEntry) -> None:
        self.entries.append(entry)

    def add(self, mechanism: str, component: str, **kwargs: object) -> LedgerEntry:
        entry = LedgerEntry(mechanism=mechanism, component=component, **kwargs)  # type: ignore[arg-type]
        self.record(entry)
        return entry

    def declare_total(self, epsilon: float, delta: float, reason: str) -> None:
        self.declared = (float(epsilon), float(delta), reason)

    @property
    def rho_spent(self) -> float:
        return sum((e.rho or 0.0) * e.count for e in self.entries)

    def spent(self) -> tuple[float, float]:
        """(ε, δ) spent: the declared total if any, else basic composition of all entries."""
        if self.declared is not None:
            return self.declared[0], self.declared[1]
        eps = sum((e.epsilon or 0.0) * e.count for e in self.entries if e.rho is None)
        delta = sum((e.delta or 0.0) * e.count for e in self.entries if e.rho is None)
        rho = self.rho_spent
        if rho > 0:
            rho_delta = self.delta_budget - delta
            if rho_delta <= 0:
                return math.inf, delta
            eps += rho_to_epsilon(rho, rho_delta)
            delta += rho_delta
        return eps, delta

    def check(self) -> None:
        """Strict mode: raise if the spent (ε, δ) exceeds the budget."""
        eps, delta = self.spent()
        if self.accounting == "strict" and (
            eps > self.epsilon_budget * (1 + 1e-9) or delta > self.delta_budget * (1 + 1e-9)
        ):
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
                "epsilon_spent": eps,
                "delta_spent": delta,
                "declared": self.declared,
                "entries": [asdict(e) for e in self.entries],
            },
            sort_keys=True,
        )
