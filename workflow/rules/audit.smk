# Empirical privacy audits of every landed mechanism and private policy, each mechanism with its
# negative control (`snakemake audit`, docs/audits.md): one job per audit →
# results/audit/<key>.json, then the table paper/tables/privacy_audit.{csv,md,tex}, then the
# check: the target fails (the table stays) when a strict audit's lower bound exceeds its claim,
# a control is missed or a mutation survives. The white-box release checks run next to them
# and fail naming the release; the mutation harness's score joins the table.
# Config: audit: {runs_scale, seed, confidence, select, control_noise_scale, weaken}; `select`
# runs only the named audits, `control_noise_scale: 1` restores the controls' honest noise and
# `weaken: "<policy>: <weakening>"` applies one mutation of the catalogue to the release checks
# (the target must then fail).
import re
import sys

from dpbandits.audit.table import audit_plan
from dpbandits.errors import DPBanditsError

try:
    AUDIT_CONFIG = config["audit"]
    AUDIT_PLAN = {
        a.key: a
        for a in audit_plan(float(AUDIT_CONFIG["runs_scale"]), AUDIT_CONFIG.get("select"),
                            AUDIT_CONFIG.get("control_noise_scale"))
    }
    AUDIT_WEAKEN = AUDIT_CONFIG.get("weaken")
    if AUDIT_WEAKEN is not None:
        from dpbandits.audit.mutations import mutation_named

        mutation_named(AUDIT_WEAKEN)
except DPBanditsError as exc:
    sys.stderr.write(f"dpbandits: error: {exc}\n")
    sys.exit(2)


rule audit_run:
    priority: FIRST
    output:
        f"{RESULTS}/audit/{{key}}.json",
    wildcard_constraints:
        key="|".join(re.escape(k) for k in AUDIT_PLAN),
    params:
        audit=lambda wildcards: AUDIT_PLAN[wildcards.key],
        seed=AUDIT_CONFIG["seed"],
        confidence=AUDIT_CONFIG["confidence"],
    log:
        f"{RESULTS}/logs/audit/{{key}}.log",
    resources:
        runtime=lambda wildcards, attempt: 60 * attempt,
    script:
        "../scripts/audit.py"


rule audit_release_checks:
    priority: FIRST
    output:
        f"{RESULTS}/audit/release_checks.txt",
    params:
        weaken=AUDIT_WEAKEN,
    log:
        f"{RESULTS}/logs/audit/release_checks.log",
    script:
        "../scripts/audit.py"


rule audit_mutations:
    priority: FIRST
    output:
        f"{RESULTS}/audit/mutations.json",
    log:
        f"{RESULTS}/logs/audit/mutations.log",
    script:
        "../scripts/audit.py"


rule audit_table:
    priority: FIRST
    input:
        rows=[f"{RESULTS}/audit/{key}.json" for key in AUDIT_PLAN],
        mutations=rules.audit_mutations.output[0],
    output:
        csv=f"{PAPER}/tables/privacy_audit.csv",
        md=f"{PAPER}/tables/privacy_audit.md",
        tex=f"{PAPER}/tables/privacy_audit.tex",
    log:
        f"{RESULTS}/logs/audit/table.log",
    script:
        "../scripts/audit.py"


rule audit_check:
    priority: FIRST
    input:
        csv=rules.audit_table.output.csv,
        mutations=rules.audit_mutations.output[0],
    output:
        f"{RESULTS}/audit/verdict.txt",
    log:
        f"{RESULTS}/logs/audit/check.log",
    script:
        "../scripts/audit.py"


rule audit:
    priority: FIRST
    input:
        rules.audit_table.output,
        rules.audit_check.output,
        rules.audit_release_checks.output,
