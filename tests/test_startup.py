"""A shard job imports only what simulating needs: heavy modules load lazily where used."""

import subprocess
import sys

HEAVY = ("dp_accounting", "scipy.stats", "scipy.optimize", "scipy.linalg", "scipy.special",
         "seaborn", "matplotlib", "pandas")


def test_simulate_and_all_registries_avoid_heavy_imports():
    code = (
        "import sys\n"
        "from dpbandits.simulate import run_shard\n"
        "from dpbandits.storage import write_shard\n"
        "from dpbandits.policies import POLICIES\n"
        "from dpbandits.instances.registry import GENERATORS\n"
        "list(POLICIES.items()); list(GENERATORS.items())\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def loaded(imports: str, modules: tuple[str, ...]) -> list[str]:
    """Which of `modules` a fresh interpreter has loaded after `imports`."""
    code = f"import sys\n{imports}\nprint(','.join(m for m in {modules!r} if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [m for m in proc.stdout.strip().split(",") if m]


def test_figure_aggregation_and_report_jobs_do_not_load_scipy_stats():
    imports = "import dpbandits.aggregate, dpbandits.outputs.common, dpbandits.stats"
    assert loaded(imports, ("scipy.stats",)) == []
    tests = ("\nimport numpy as np; from dpbandits import stats; x = np.arange(4.0)\n"
             "stats.welch_t_test(x, x ** 2); stats.paired_t_test(x, x ** 2)\n"
             "stats.slope_t_test(x, x ** 2, increasing=True)")
    assert loaded(imports + tests, ("scipy.stats",)) == []
    assert loaded(imports + "\nimport scipy.stats", ("scipy.stats",)) == ["scipy.stats"]


def test_policy_modules_load_scipy_optimize_only_where_a_solver_runs():
    """Solvers (L-BFGS-B fits, projections, the σ searches of DP-SGD's calibrations) import
    scipy.optimize when they run, so a job whose calibrations are cached never loads it."""
    imports = ("import dpbandits.policies.private_glm, dpbandits.policies.glm_ucb, "
               "dpbandits.policies.ecolog, dpbandits.policies.shuffle_glm, dpbandits.glm")
    assert loaded(imports, ("scipy.optimize",)) == []
    brent = ("\nfrom dpbandits.privacy.dpsgd_ab8fd16 import noise_multiplier"
             "\nnoise_multiplier(1.0, 1e-5, 10, 0.5)")
    assert loaded(imports + brent, ("scipy.optimize",)) == ["scipy.optimize"]


def test_the_workflow_lists_every_output_file_without_the_makers_imports():
    """Snakemake parses the workflow (every job's, under SLURM) and lists each experiment's
    figures and tables: matplotlib and pandas load only where a maker runs."""
    listing = ("\nfrom dpbandits.config import load_config\nfrom dpbandits.outputs import "
               "OUTPUTS, output_files\nfor kind in OUTPUTS.names():\n"
               "    output_files('x', {'kind': kind})")
    assert loaded(listing, ("matplotlib", "pandas")) == []
    assert loaded(listing + "\nimport dpbandits.outputs.ts", ("matplotlib", "pandas")) == [
        "matplotlib", "pandas"]  # the check sees a maker's imports


def test_the_figure_jobs_preload_makes_every_makers_imports_once_for_all_its_jobs():
    """The fork server forks figure jobs from a process that has imported every maker."""
    from pathlib import Path

    scripts = Path(__file__).parents[1] / "workflow" / "scripts"
    makers = ("dpbandits.outputs.common", "dpbandits.outputs.linear",
              "dpbandits.outputs.realdata", "dpbandits.outputs.ts", "matplotlib.pyplot")
    imports = f"sys.path.insert(0, {str(scripts)!r})\nimport make_outputs"
    assert loaded(imports, makers) == []  # importing the script alone loads none of them
    assert loaded(imports + "\nmake_outputs.preload()", makers) == list(makers)


def test_a_jobs_client_imports_no_more_than_the_hand_over_needs():
    """Every job's own process imports dpbandits.forkserver: socket and signal (enum,
    selectors) are the fork server's imports, not the client's."""
    heavy = ("socket", "signal", "enum", "selectors")
    assert loaded("import dpbandits.forkserver", heavy) == []
    assert loaded("import socket, signal", heavy) == list(heavy)  # the check sees them
