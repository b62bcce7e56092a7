# The reproduction report (published vs ours, claim by claim), numbers.tex and the generated LaTeX
# of paper/main.tex, the `paper` target (PDF) and the captions of `snakemake --report`. Everything
# the report reads is an input: the summaries, the experiments' claims tables, paper/claims.yaml
# and paper/published/*.yaml (PUBLISHED_DIR, figures.smk).
import os
from pathlib import Path


REPO_DIR = Path(workflow.basedir)
CLAIMS_FILE = REPO_DIR / "paper" / "claims.yaml"
EARLIER_FILE = REPO_DIR / "paper" / "earlier.yaml"
MAIN_TEX = REPO_DIR / "paper" / "main.tex"
PAPER_SECTIONS = ["glm", "linear", "ts"]


report: "../report/workflow.rst"


def summaries_of(group):
    return [f"{RESULTS}/{name}/summary.csv" for name in experiments_in(group)]


def report_summaries(wildcards):
    """Every synthetic summary, and the real-data summaries of the experiments already run."""
    return summaries_of("synthetic") + [f for f in summaries_of("realdata") if os.path.exists(f)]


def report_claim_tables(wildcards):
    """The claims tables (*claims.csv outputs) of the experiments whose summaries are read."""
    read = set(report_summaries(wildcards))
    return [f for name in config["experiments"] if f"{RESULTS}/{name}/summary.csv" in read
            for files in OUTPUT_FILES[name] for f in files if f.endswith("claims.csv")]


def paper_outputs(wildcards):
    """Every output file per experiment: the generated LaTeX lists them."""
    return {name: [f for files in OUTPUT_FILES[name] for f in files] for name in OUTPUT_FILES}


rule reproduction:
    priority: FIRST
    input:
        summaries=report_summaries,
        claim_tables=report_claim_tables,
        published=sorted(str(p) for p in PUBLISHED_DIR.glob("*.yaml")),
        claims=str(CLAIMS_FILE),
        earlier=str(EARLIER_FILE),
    output:
        md=f"{PAPER}/reproduction.md",
        html=report(
            f"{PAPER}/reproduction.html",
            caption="../report/reproduction.rst",
            category="Reproduction",
        ),
        json=f"{PAPER}/reproduction.json",
    log:
        f"{RESULTS}/logs/paper/reproduction.log",
    script:
        "../scripts/reproduction.py"


rule paper_tex:
    priority: FIRST
    input:
        summaries=report_summaries,
        report=rules.reproduction.output.json,
    output:
        numbers=f"{PAPER}/numbers.tex",
        papers=[f"{PAPER}/generated/{p}.tex" for p in PAPER_SECTIONS],
        verdicts=f"{PAPER}/generated/verdicts.tex",
    params:
        papers=PAPER_SECTIONS,
        outputs=paper_outputs,
    log:
        f"{RESULTS}/logs/paper/paper_tex.log",
    script:
        "../scripts/paper_tex.py"


rule paper:
    priority: FIRST
    input:
        main=str(MAIN_TEX),
        tex=rules.paper_tex.output,
        outputs=experiment_targets("synthetic"),
    output:
        pdf=f"{PAPER}/main.pdf",
    log:
        f"{RESULTS}/logs/paper/main_pdf.log",
    script:
        "../scripts/build_pdf.py"


EXTRA_TARGETS["synthetic"].extend(
    [*rules.reproduction.output, *rules.paper_tex.output]
)

