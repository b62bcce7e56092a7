# Empirical privacy audits of every landed mechanism and private algorithm (`snakemake audit`):
# one job per audit → results/audit/<name>~<accounting>.json, then the table
# paper/tables/privacy_audit.{csv,md,tex}. Optional config: audit: {runs_scale, seed, confidence}.
import re

from dpbandits.audit.table import audit_plan

AUDIT_CONFIG = {"runs_scale": 1.0, "seed": 2024, "confidence": 0.95, **config.get("audit", {})}
AUDIT_PLAN = {a.key: a for a in audit_plan(float(AUDIT_CONFIG["runs_scale"]))}


rule audit_run:
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


rule audit:
    input:
        [f"{RESULTS}/audit/{key}.json" for key in AUDIT_PLAN],
    output:
        csv=f"{PAPER}/tables/privacy_audit.csv",
        md=f"{PAPER}/tables/privacy_audit.md",
        tex=f"{PAPER}/tables/privacy_audit.tex",
    log:
        f"{RESULTS}/logs/audit/table.log",
    script:
        "../scripts/audit.py"
