"""The privacy-audit table: the audits to run, their JSON records, CSV/Markdown/LaTeX output."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from dpbandits.atomic import write_text_atomic
from dpbandits.audit.registry import AuditResult, available
from dpbandits.tables import write_csv, write_table

MECHANISM_BUDGETS: dict[str, tuple[float, float]] = {
    "laplace": (1.0, 0.0),
    "shuffle-laplace": (1.0, 1e-6),
}
DEFAULT_BUDGET = (1.0, 1e-5)
CONTROL = ("gaussian", 0.5)
CAPTION = (
    "Empirical privacy audits: lower confidence bounds on ε from a threshold distinguisher on "
    "worst-case neighbouring inputs, next to the claimed ε"
)


@dataclass(frozen=True)
class PlannedAudit:
    """One row of the audit table before it is run."""

    name: str
    accounting: str
    epsilon: float
    delta: float
    runs: int
    noise_scale: float = 1.0
    role: str = "audit"

    @property
    def key(self) -> str:
        tag = "" if self.noise_scale == 1.0 else f"~noise{self.noise_scale:g}"
        return f"{self.name}~{self.accounting}{tag}"


def audit_plan(runs_scale: float = 1.0) -> list[PlannedAudit]:
    """Every landed mechanism and private algorithm, in each accounting mode it has, plus one
    under-noised control (the Gaussian mechanism with σ halved) that the audit must catch."""
    from dpbandits.audit.algorithms import POLICY_AUDITS

    plan = []
    for name, spec in available().items():
        runs = max(8, round(spec.default_runs * runs_scale))
        modes = ("strict", "paper") if "accounting" in spec.options else ("strict",)
        if spec.kind == "algorithm":
            audit = POLICY_AUDITS[name]
            budget = (audit.epsilon, audit.delta)
        else:
            budget = MECHANISM_BUDGETS.get(name, DEFAULT_BUDGET)
        for mode in modes:
            plan.append(PlannedAudit(name, mode, budget[0], budget[1], runs))
    name, scale = CONTROL
    runs = max(8, round(available()[name].default_runs * runs_scale))
    plan.append(PlannedAudit(name, "strict", *DEFAULT_BUDGET, runs, scale, "control"))
    return plan


def record(result: AuditResult, role: str) -> dict[str, Any]:
    """JSON-safe record of one audit result."""
    row = result.row()
    row["role"] = role
    row["seed"] = result.seed
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}


def write_record(path: str | Path, row: dict[str, Any]) -> None:
    write_text_atomic(path, json.dumps(row, indent=1, sort_keys=True, default=float))


def status(row: dict[str, Any]) -> str:
    """ok | EXCEEDS CLAIM (strict: a bug) | flagged (paper accounting) | control caught/missed."""
    if row["role"] == "control":
        return "control: caught" if row["violated"] else "control: NOT caught"
    if not row["violated"]:
        return "ok"
    return "flagged (paper accounting)" if row["accounting"] == "paper" else "EXCEEDS CLAIM"


def _fmt(value: float, digits: int = 3) -> str:
    if value is None:
        return ""
    if math.isinf(value):
        return "∞"
    return f"{value:.{digits}f}"


def build_table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """One line per audit, mechanisms first."""
    order = {"mechanism": 0, "algorithm": 1}
    rows = sorted(rows, key=lambda r: (r["role"] == "control", order.get(r["kind"], 2),
                                       r["audit"], r["accounting"]))
    return pd.DataFrame(
        [
            {
                "audit": r["audit"] + (f" (noise ×{r['noise_scale']:g})"
                                       if r["noise_scale"] != 1.0 else ""),
                "kind": r["kind"],
                "accounting": r["accounting"],
                "claimed ε": _fmt(r["claimed_epsilon"], 2),
                "δ": f"{r['delta']:.0e}" if r["delta"] else "0",
                "ε lower bound": _fmt(r["epsilon_lb"]),
                "interval": f"[{_fmt(r['epsilon_lb'])}, {_fmt(r['epsilon_ub'])}]",
                "point estimate": _fmt(r["epsilon_hat"]),
                "runs per input": int(r["runs"]),
                "transcript changed": (f"{100 * r['transcript_changed']:.0f}%"
                                       if r.get("transcript_changed") is not None else ""),
                "status": status(r),
            }
            for r in rows
        ]
    )


def write_audit_table(rows: list[dict[str, Any]], stem: str | Path) -> list[Path]:
    """`stem.csv` (every field), `stem.md` and `stem.tex` (the display columns)."""
    stem = Path(stem)
    display = build_table(rows)
    paths = write_table(display, stem, f"{CAPTION} (one-sided, "
                        f"{100 * rows[0]['confidence']:g}% confidence)." if rows else CAPTION)
    full = pd.DataFrame(rows)
    full["status"] = [status(r) for r in rows]
    write_csv(full, paths[0])
    return paths


def strict_violations(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Audits whose claim is the theorem (strict) and whose lower bound exceeds it."""
    return [r for r in rows if r["role"] == "audit" and r["accounting"] == "strict"
            and r["violated"]]
