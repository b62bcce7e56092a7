# Empirical privacy audits of every landed mechanism and private policy, each mechanism with its
# negative control (`snakemake audit`, docs/audits.md): one job per audit →
# results/audit/<key>.json, then the table paper/tables/privacy_audit.{csv,md,tex}, then the
# check: the target fails (the table stays) when a strict audit's lower bound exceeds its claim
# or a control is missed.
# Config: audit: {runs_scale, seed, confidence, select, control_noise_scale}; `select` runs only
# the named audits, `control_noise_scale: 1` restores the controls' honest noise (the target
# must then fail).
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


rule audit_table:
    priority: FIRST
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


rule audit_check:
    priority: FIRST
    input:
        rules.audit_table.output.csv,
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
