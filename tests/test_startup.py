"""A shard job imports only what simulating needs: heavy modules load lazily where used."""

import subprocess
import sys

HEAVY = ("dp_accounting", "scipy.stats", "seaborn", "matplotlib", "pandas")


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
