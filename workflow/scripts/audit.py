"""Snakemake wrapper: one privacy audit → JSON record (audit_run), or records → table (audit)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from dpbandits.audit.registry import run_audit
from dpbandits.audit.table import record, strict_violations, write_audit_table, write_record

from _logging import setup

log = setup(snakemake.log[0])
if snakemake.rule == "audit_run":
    plan = snakemake.params.audit
    log.info("auditing %s [%s] at ε = %g, δ = %g with %d runs per input", plan.name,
             plan.accounting, plan.epsilon, plan.delta, plan.runs)
    result = run_audit(plan.name, plan.epsilon, plan.delta, runs=plan.runs,
                       seed=int(snakemake.params.seed),
                       confidence=float(snakemake.params.confidence),
                       accounting=plan.accounting, noise_scale=plan.noise_scale)
    log.info("%s", result.summary())
    write_record(snakemake.output[0], record(result, plan.role))
else:
    rows = [json.loads(Path(p).read_text()) for p in snakemake.input]
    paths = write_audit_table(rows, Path(snakemake.output.csv).with_suffix(""))
    log.info("wrote %s", ", ".join(map(str, paths)))
    for row in rows:
        if row["role"] == "audit" and row["violated"]:
            log.warning("audit %s [%s]: empirical ε ≥ %.4g exceeds the claimed ε = %.4g",
                        row["audit"], row["accounting"], row["epsilon_lb"],
                        row["claimed_epsilon"])
    bad = strict_violations(rows)
    if bad:
        names = ", ".join(f"{r['audit']} [strict]" for r in bad)
        sys.exit(f"PRIVACY AUDIT FAILED: lower bound exceeds the claimed ε for {names}")
