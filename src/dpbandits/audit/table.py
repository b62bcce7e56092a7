"""The audit plan (every audit and its negative control), JSON records, CSV/Markdown/LaTeX table.

The plan is data (docs/audits.md): each mechanism is audited at its point (ε, δ) next to a
control with its noise cut (× 0.5 unless the calibration is so conservative that a halved noise
is still private: then the control's scale is the one documented with it); each private policy
is audited on its neighbouring pair in each accounting mode, the paper-mode runs whose ledger
records a breach for that relation being controls too (the audit must catch them).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dpbandits.atomic import atomic_output, write_text_atomic
from dpbandits.audit.registry import FAILING, AuditResult, available
from dpbandits.errors import ConfigError

CAPTION = (
    "Empirical privacy audits: lower confidence bounds on ε from a threshold distinguisher on "
    "neighbouring inputs, next to the claimed ε; controls are deliberately broken versions "
    "that the audit must catch"
)


@dataclass(frozen=True)
class MechanismPoint:
    """A mechanism audited at (ε, δ) with options, and the noise scale of its control."""

    name: str
    epsilon: float
    delta: float
    runs: int
    modes: tuple[str, ...] = ("strict",)
    control_scale: float = 0.5
    options: tuple[tuple[str, Any], ...] = ()
    paper_runs: int | None = None
    why: str = ""

    @property
    def key(self) -> str:
        """The point's name and options: name[~<option><value>…]."""
        return f"{self.name}{''.join(f'~{k}{v}' for k, v in self.options)}"


MECHANISM_PLAN: tuple[MechanismPoint, ...] = (
    MechanismPoint("gaussian", 4.0, 0.02, 50_000),
    MechanismPoint("laplace", 1.0, 0.0, 400_000),
    MechanismPoint("shuffle-laplace", 1.0, 1e-6, 20_000, options=(("n", 1000),),
                   control_scale=0.2,
                   why="FMT21's bound is > 2× conservative for Laplace reports at n = 1000: "
                       "noise × 0.5 and × 0.33 stay below the claim (ε_lb 0.10, 0.49)"),
    MechanismPoint("shuffle-laplace", 4.0, 0.02, 100_000, options=(("n", 50),)),
    MechanismPoint("tree", 4.0, 0.02, 50_000, modes=("strict", "paper")),
    MechanismPoint("tree", 4.0, 0.02, 30_000, modes=("strict", "paper"),
                   options=(("cover", "ab8fd16"),)),
    MechanismPoint("counter", 4.0, 0.02, 50_000),
    MechanismPoint("ts-release", 4.0, 0.02, 50_000, modes=("strict", "paper")),
    MechanismPoint("ts-release-amp", 4.0, 0.02, 50_000, modes=("strict", "paper"),
                   control_scale=0.25,
                   why="strict calibrates σ_amp by replace-one RDP, conservative for a reward "
                       "pair: true ε 0.53 at the claim 4, 2.5 with σ halved (still private), "
                       "10.0 with σ quartered"),
    MechanismPoint("vector-sum", 4.0, 0.02, 50_000, modes=("strict", "paper"),
                   control_scale=0.002,
                   why="the theory constant c_b = 24·10⁴ puts the blanket's sd ≈ 300× above "
                       "what the claim needs: the bound stays below 4 down to noise × 0.005 "
                       "(ε_lb 2.55) and first exceeds it near × 0.0033"),
    MechanismPoint("dpsgd", 4.0, 0.02, 100_000, modes=("strict", "paper"), paper_runs=8_000),
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
    options: tuple[tuple[str, Any], ...] = field(default_factory=tuple)

    @property
    def key(self) -> str:
        """File-name key: name~accounting[~<option><value>…][~noise<scale> | ~control]."""
        tags = "".join(f"~{k}{v}" for k, v in self.options)
        if self.noise_scale != 1.0:
            tags += f"~noise{self.noise_scale:g}"
        elif self.role == "control":
            tags += "~control"
        return f"{self.name}~{self.accounting}{tags}"


def _scaled(runs: int, runs_scale: float) -> int:
    """Runs per input after `runs_scale`, at least 8."""
    return max(8, round(runs * runs_scale))


def audit_plan(
    runs_scale: float = 1.0,
    select: list[str] | None = None,
    control_noise_scale: float | None = None,
) -> list[PlannedAudit]:
    """Every landed mechanism and private policy, in each accounting mode it has, with controls.

    `select` keeps the audits of the named mechanisms/policy audits only; `control_noise_scale`
    replaces every mechanism control's noise scale (1 restores the honest noise, which the
    audit target must then report as a missed control).
    """
    from dpbandits.audit.algorithms import policy_audits

    audits = available()
    if select is not None:
        unknown = sorted(set(select) - set(audits))
        if unknown:
            raise ConfigError(f"audit select: unknown audit(s) {', '.join(unknown)}; allowed: "
                              f"{', '.join(audits)}")
    keep = set(audits) if select is None else set(select)
    plan: list[PlannedAudit] = []
    for point in MECHANISM_PLAN:
        if point.name not in audits or point.name not in keep:
            continue
        for mode in point.modes:
            runs = point.paper_runs if mode == "paper" and point.paper_runs else point.runs
            plan.append(PlannedAudit(point.name, mode, point.epsilon, point.delta,
                                     _scaled(runs, runs_scale), options=point.options))
        scale = point.control_scale if control_noise_scale is None else control_noise_scale
        plan.append(PlannedAudit(point.name, "strict", point.epsilon, point.delta,
                                 _scaled(point.runs, runs_scale), scale, "control",
                                 point.options))
    for name, audit in policy_audits().items():
        if name not in audits or name not in keep:
            continue
        for mode in audit.modes:
            role = "control" if mode == "paper" and audit.paper_leaks else "audit"
            plan.append(PlannedAudit(name, mode, audit.epsilon, audit.delta,
                                     _scaled(audit.default_runs, runs_scale), role=role))
    keys = [p.key for p in plan]
    if len(set(keys)) != len(keys):
        raise ConfigError("the audit plan has duplicate keys")
    return plan


def plan_notes() -> dict[str, str]:
    """Why a control's scale differs from 0.5, by mechanism point key prefix."""
    return {p.key: p.why for p in MECHANISM_PLAN if p.why}


def record(result: AuditResult, planned: PlannedAudit | None = None) -> dict[str, Any]:
    """JSON-safe record of one audit result."""
    row = result.row()
    row["seed"] = result.seed
    if planned is not None:
        row["key"] = planned.key
    for key, value in result.info.items():
        row.setdefault(f"info_{key}", value)
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}


def write_record(path: str | Path, row: dict[str, Any]) -> None:
    """Write one audit record as JSON (atomically)."""
    write_text_atomic(path, json.dumps(row, indent=1, sort_keys=True, default=float))


def status(row: dict[str, Any]) -> str:
    """The row's verdict: ok | inconclusive | EXCEEDS CLAIM | flagged (paper) | control …."""
    return str(row["verdict"])


def _fmt(value: float | None, digits: int = 3) -> str:
    """A number for the table (∞ spelled out, missing values empty)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if math.isinf(value):
        return "∞"
    return f"{value:.{digits}f}"


def _label(row: dict[str, Any]) -> str:
    """The audit column: name, options and whether the row is a control."""
    opts = row.get("options")
    options = f" ({opts})" if isinstance(opts, str) and opts else ""
    noise = f" noise ×{row['noise_scale']:g}" if row["noise_scale"] != 1.0 else ""
    control = f" [control{noise}]" if row["role"] == "control" else noise
    return f"{row['audit']}{options}{control}"


def build_table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """One line per audit: mechanisms first, each followed by its control, then policies."""
    order = {"mechanism": 0, "algorithm": 1}
    rows = sorted(rows, key=lambda r: (order.get(r["kind"], 2), r["audit"],
                                       str(r.get("options") or ""), r["role"] == "control",
                                       r["accounting"]))
    return pd.DataFrame(
        [
            {
                "audit": _label(r),
                "accounting": r["accounting"],
                "claimed ε": _fmt(r["claimed_epsilon"], 2),
                "δ": f"{r['delta']:.0e}" if r["delta"] else "0",
                "ε lower bound": _fmt(r["epsilon_lb"]),
                "Clopper–Pearson interval": f"[{_fmt(r['epsilon_lb'])}, {_fmt(r['epsilon_ub'])}]",
                "runs per input": int(r["runs"]),
                "transcript changed": (f"{100 * r['transcript_changed']:.0f}%"
                                       if r.get("transcript_changed") is not None else ""),
                "ledger ε": _fmt(r.get("ledger_epsilon"), 2),
                "verdict": status(r),
            }
            for r in rows
        ]
    )


LATEX = (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#"),
         ("ε", r"$\varepsilon$"), ("δ", r"$\delta$"), ("∞", r"$\infty$"), ("×", r"$\times$"),
         ("≥", r"$\geq$"), ("–", "--"), ("·", r"$\cdot$"))


def _latex(text: str) -> str:
    """Text with LaTeX specials escaped and symbols in math mode."""
    for a, b in LATEX:
        text = text.replace(a, b)
    return text


def to_markdown(df: pd.DataFrame, caption: str) -> str:
    """The caption, then the table in Markdown."""
    lines = [caption, "", "| " + " | ".join(map(str, df.columns)) + " |",
             "|" + "|".join("---" for _ in df.columns) + "|"]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def to_latex(df: pd.DataFrame, caption: str) -> str:
    """A booktabs LaTeX table with its caption (Greek letters and symbols in math mode)."""
    lines = [r"\begin{table}[t]", r"\centering", r"\small",
             rf"\begin{{tabular}}{{{'l' * len(df.columns)}}}", r"\toprule",
             " & ".join(_latex(str(c)) for c in df.columns) + r" \\", r"\midrule"]
    lines += [" & ".join(_latex(str(v)) for v in row) + r" \\"
              for row in df.itertuples(index=False)]
    lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{_latex(caption)}}}",
              r"\end{table}"]
    return "\n".join(lines) + "\n"


def write_audit_table(rows: list[dict[str, Any]], stem: str | Path,
                      mutations: list[str] | None = None) -> list[Path]:
    """`stem.csv` (every field), `stem.md` and `stem.tex` (the display columns); the Markdown
    ends with the mutation score and per-policy coverage lines when given."""
    stem = Path(stem)
    display = build_table(rows)
    level = f"{100 * rows[0]['confidence']:g}%" if rows else "95%"
    caption = f"{CAPTION} (one-sided {level} lower bounds)."
    paths = [stem.with_suffix(s) for s in (".csv", ".md", ".tex")]
    with atomic_output(paths[0]) as tmp:
        pd.DataFrame(rows).to_csv(tmp, index=False)
    extra = "\n" + "\n".join(mutations) + "\n" if mutations else ""
    write_text_atomic(paths[1], to_markdown(display, caption) + extra)
    write_text_atomic(paths[2], to_latex(display, caption))
    return paths


def failures(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows that make the audit target fail: a strict claim exceeded or a control missed."""
    return [r for r in rows if r["verdict"] in FAILING]


def summary_lines(rows: list[dict[str, Any]]) -> list[str]:
    """One line per verdict with its count, then one line per failing row."""
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    lines = [f"privacy audits: {len(rows)} rows; " + ", ".join(
        f"{v}: {n}" for v, n in sorted(counts.items()))]
    for r in failures(rows):
        lines.append(f"{r['verdict']}: {_label(r)} [{r['accounting']}] empirical ε ≥ "
                     f"{_fmt(r['epsilon_lb'])} vs claimed ε = {_fmt(r['claimed_epsilon'])}")
    return lines
