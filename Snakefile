# dpbandits: every figure and table of the three papers from sharded simulations.
#   snakemake --cores N                     synthetic experiments at paper scale (default)
#   snakemake --cores N realdata            MovieLens-25M and Jester experiments
#   snakemake --cores N --configfile config/smoke.yaml    the same, tiny
from snakemake.utils import min_version

from dpbandits import scheduler_timer

min_version("9.0")
scheduler_timer.install()  # one pending re-evaluation timer (src/dpbandits/scheduler_timer.py)

if not config:

    configfile: f"{workflow.basedir}/config/config.yaml"


# Rule files append files to these lists to join the default / realdata targets.
EXTRA_TARGETS = {"synthetic": [], "realdata": []}


include: "workflow/rules/common.smk"
include: "workflow/rules/simulate.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/audit.smk"
include: "workflow/rules/paper.smk"
include: "workflow/rules/hooks.smk"


rule all:
    default_target: True
    input:
        experiment_targets("synthetic"),
        EXTRA_TARGETS["synthetic"],


rule realdata:
    input:
        experiment_targets("realdata"),
        EXTRA_TARGETS["realdata"],
