"""Snakemake wrapper: one audit → JSON record (audit_run); records and the mutation score →
table (audit_table); the table's verdicts and the mutations → verdict.txt, or exit 1 naming each
failure (audit_check); the release checks → release_checks.txt, or exit 1 naming each violating
release (audit_release_checks); the mutation harness → mutations.json (audit_mutations)."""

import json
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from dpbandits.atomic import write_text_atomic
from dpbandits.audit.mutations import (
    checks_with,
    coverage_lines,
    mutation_named,
    read_results,
    run_mutations,
    write_results,
)
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
elif snakemake.rule == "audit_release_checks":
    weaken = snakemake.params.weaken
    report = checks_with(None if weaken is None else mutation_named(weaken))
    summary = (f"release checks: {report.pairs} neighbouring pairs, {report.releases} releases "
               f"of {', '.join(report.policies)}; {len(report.violations)} violation(s)")
    log.info("%s", summary)
    for line in report.violations:
        log.error("RELEASE CHECK FAILED: %s", line)
    if report.violations:
        sys.exit(f"RELEASE CHECKS FAILED ({len(report.violations)}): " + report.violations[0])
    write_text_atomic(snakemake.output[0], summary + "\n")
elif snakemake.rule == "audit_mutations":
    results = run_mutations()
    for line in coverage_lines(results):
        log.info("%s", line)
    write_results(snakemake.output[0], results)
elif snakemake.rule == "audit_table":
    rows = [json.loads(Path(p).read_text()) for p in snakemake.input.rows]
    paths = write_audit_table(rows, Path(snakemake.output.csv).with_suffix(""),
                              coverage_lines(read_results(snakemake.input.mutations)))
    log.info("wrote %s", ", ".join(map(str, paths)))
else:
    table = pd.read_csv(snakemake.input.csv)
    rows = table.to_dict(orient="records")
    lines = summary_lines(rows)
    mutations = read_results(snakemake.input.mutations)
    lines.insert(1, coverage_lines(mutations)[0])
    for line in lines:
        log.info("%s", line)
    missed = [f"MUTATION NOT CAUGHT: {r.policy}: {r.weakening}" for r in mutations
              if not r.caught]
    bad = [r for r in rows if r["verdict"] in FAILING]
    if bad or missed:
        sys.exit("AUDIT FAILED: " + "; ".join(lines[2:] + missed))
    write_text_atomic(snakemake.output[0], "\n".join(lines) + "\n")
