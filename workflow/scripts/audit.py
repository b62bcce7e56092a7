"""Snakemake wrapper: one audit → JSON record (audit_run); records → table (audit_table); the
table's verdicts → verdict.txt, or exit 1 naming each failure (audit_check)."""

import json
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from dpbandits.atomic import write_text_atomic
from dpbandits.audit.registry import FAILING, run_audit
from dpbandits.audit.table import record, summary_lines, write_audit_table, write_record

from _logging import setup

log = setup(snakemake.log[0])
if snakemake.rule == "audit_run":
    plan = snakemake.params.audit
    log.info("auditing %s [%s, %s] at ε = %g, δ = %g with %d runs per input", plan.name,
             plan.accounting, plan.role, plan.epsilon, plan.delta, plan.runs)
    result = run_audit(plan.name, plan.epsilon, plan.delta, runs=plan.runs,
                       seed=int(snakemake.params.seed),
                       confidence=float(snakemake.params.confidence),
                       accounting=plan.accounting, noise_scale=plan.noise_scale,
                       role=plan.role, **dict(plan.options))
    log.info("%s", result.summary())
    write_record(snakemake.output[0], record(result, plan))
elif snakemake.rule == "audit_table":
    rows = [json.loads(Path(p).read_text()) for p in snakemake.input]
    paths = write_audit_table(rows, Path(snakemake.output.csv).with_suffix(""))
    log.info("wrote %s", ", ".join(map(str, paths)))
else:
    table = pd.read_csv(snakemake.input[0])
    rows = table.to_dict(orient="records")
    lines = summary_lines(rows)
    for line in lines:
        log.info("%s", line)
    bad = [r for r in rows if r["verdict"] in FAILING]
    if bad:
        sys.exit("AUDIT FAILED: " + "; ".join(lines[1:]))
    write_text_atomic(snakemake.output[0], "\n".join(lines) + "\n")
