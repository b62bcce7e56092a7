import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dpbandits.simulate import run_shard
from dpbandits.storage import read_shard

from helpers import small_spec

REPO = Path(__file__).resolve().parents[1]
DPBANDITS = str(Path(sys.executable).parent / "dpbandits")


def cli(*args, stdin=None):
    return subprocess.run(
        [DPBANDITS, *args], capture_output=True, text=True, input=stdin, cwd=REPO, timeout=120
    )


def test_run_matches_library_bitwise(tmp_path):
    spec = small_spec()
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    out = tmp_path / "out" / "shard.h5"
    out.parent.mkdir()
    proc = cli("run", "--spec", str(tmp_path / "spec.json"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert np.array_equal(read_shard(out).cum_regret, run_shard(spec).cum_regret)
    shown = cli("inspect", str(out))
    assert shown.returncode == 0 and "trial 2: regret" in shown.stdout


def test_list_commands():
    algorithms = cli("list", "algorithms")
    assert algorithms.returncode == 0 and "Uniform\tnon-private" in algorithms.stdout
    assert "glm_ball" in cli("list", "instances").stdout
    assert "regret_curves" in cli("list", "outputs").stdout


@pytest.mark.parametrize(
    "mutate,needle",
    [
        (lambda s: s.update(epsilon=-1.0), "epsilon = -1.0"),
        (lambda s: s.update(delta=2.0), "delta = 2.0"),
        (lambda s: s.update(policy="Nope"), "unknown algorithm 'Nope'"),
        (lambda s: s["instance"].update(S=0.0), "S = 0.0"),
        (lambda s: s["instance"].update(horizon=0), "horizon = 0"),
        (lambda s: s["instance"].update(K=0), "K = 0"),
        (lambda s: s["instance"].update(d=0), "d = 0"),
    ],
)
def test_bad_spec_one_line_nonzero_no_file(tmp_path, mutate, needle):
    spec = small_spec()
    mutate(spec)
    out = tmp_path / "shard.h5"
    proc = cli("run", "--spec", "-", "--out", str(out), stdin=json.dumps(spec))
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and needle in proc.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_bad_flags_and_paths(tmp_path):
    proc = cli("run", "--spec", str(tmp_path / "missing.json"), "--out", str(tmp_path / "a.h5"))
    assert proc.returncode == 2 and "missing.json" in proc.stderr
    proc = cli("run", "--bogus")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    proc = cli("inspect", str(tmp_path / "nothing.h5"))
    assert proc.returncode == 2 and "nothing.h5" in proc.stderr
