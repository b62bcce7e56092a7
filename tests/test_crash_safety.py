"""SIGKILL of a shard job mid-write: no corrupt shard is ever accepted, finished shards stay.

A `sitecustomize` module put on PYTHONPATH pauses a real `dpbandits run` process (or a real
Snakemake shard job) at a chosen point of `write_shard` — after the n-th HDF5 dataset, or just
before the atomic rename — and reports its pid; the test then SIGKILLs that process.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from dpbandits.aggregate import aggregate
from dpbandits.errors import ShardError
from dpbandits.simulate import run_shard
from dpbandits.storage import read_shard, write_shard

from conftest import BIN, REPO
from helpers import small_spec

HOOK = '''
import os
if os.environ.get("DPB_PAUSE_AT"):
    import time
    import h5py

    _where = os.environ["DPB_PAUSE_AT"]
    _marker = os.environ["DPB_PAUSE_MARKER"]
    _match = os.environ.get("DPB_PAUSE_MATCH", "")

    def _pause():
        with open(_marker + ".tmp", "w") as handle:
            handle.write(str(os.getpid()))
        os.replace(_marker + ".tmp", _marker)
        time.sleep(600)

    if _where.startswith("dataset:"):
        _n, _count = int(_where.split(":")[1]), [0]
        _create = h5py.Group.create_dataset

        def _create_dataset(self, name, *args, **kwargs):
            out = _create(self, name, *args, **kwargs)
            if _match in self.file.filename:
                _count[0] += 1
                if _count[0] == _n:
                    self.file.flush()
                    _pause()
            return out

        h5py.Group.create_dataset = _create_dataset
    elif _where == "replace":
        _replace = os.replace

        def _paused_replace(src, dst, *args, **kwargs):
            if _match in str(dst) and str(dst).endswith(".h5"):
                _pause()
            return _replace(src, dst, *args, **kwargs)

        os.replace = _paused_replace
'''


def _hook_env(tmp_path: Path, where: str, match: str) -> tuple[dict[str, str], Path]:
    hook_dir = tmp_path / "hook"
    hook_dir.mkdir(exist_ok=True)
    (hook_dir / "sitecustomize.py").write_text(HOOK)
    marker = tmp_path / f"paused-{where.replace(':', '')}.pid"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(hook_dir), os.environ.get("PYTHONPATH", "")]),
        "DPB_PAUSE_AT": where,
        "DPB_PAUSE_MARKER": str(marker),
        "DPB_PAUSE_MATCH": match,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    return env, marker


def _wait_for(marker: Path, proc: subprocess.Popen, timeout: float = 120) -> int:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if marker.exists():
            return int(marker.read_text())
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"process ended before pausing (code {proc.returncode}):\n{err[-3000:]}")
        time.sleep(0.05)
    proc.kill()
    pytest.fail("process did not reach the pause point")


def _assert_same_shard(a: Path, b: Path) -> None:
    x, y = read_shard(a), read_shard(b)
    for name in ("trials", "checkpoints", "cum_regret", "cum_reward"):
        np.testing.assert_array_equal(getattr(x, name), getattr(y, name))
    assert x.spec == y.spec and x.ledger == y.ledger


SPEC = small_spec(policy="GLOC", algorithm="GLOC")


@pytest.mark.parametrize("where", ["dataset:3", "replace"])
def test_sigkilled_cli_job_leaves_no_shard_and_the_rerun_is_clean(
    tmp_path: Path, where: str
) -> None:
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(SPEC))
    out = tmp_path / "shards" / "seeds~0-2.h5"
    out.parent.mkdir()
    env, marker = _hook_env(tmp_path, where, "seeds~0-2")
    cmd = [str(BIN / "dpbandits"), "run", "--spec", str(spec_file), "--out", str(out)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    pid = _wait_for(marker, proc)
    assert pid == proc.pid
    os.kill(pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    # Nothing at the shard path; what the killed job left is a hidden temporary file.
    assert not out.exists()
    leftovers = list(out.parent.glob(f".{out.name}.tmp*"))
    assert len(leftovers) == 1
    if where.startswith("dataset"):
        with pytest.raises(ShardError, match=str(leftovers[0]).replace("~", ".")):
            read_shard(leftovers[0])
    # Readers and the aggregator refuse the missing shard by name.
    with pytest.raises(ShardError, match="seeds~0-2.h5: shard file does not exist"):
        aggregate([out], tmp_path / "summary.csv", tmp_path / "curves.h5")
    assert not (tmp_path / "summary.csv").exists()

    # The rerun (no hook) writes a complete shard equal to an in-process run of the spec.
    clean = {k: v for k, v in env.items() if not k.startswith("DPB_PAUSE")}
    done = subprocess.run(cmd, env=clean, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert list(out.parent.glob(f".{out.name}.tmp*")) == []  # the dead writer's temporary is gone
    reference = tmp_path / "reference.h5"
    write_shard(reference, run_shard(SPEC))
    _assert_same_shard(out, reference)


def _corrupt(path: Path, kind: str) -> None:
    if kind == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "not-hdf5":
        path.write_text("this is not an HDF5 file\n")
    else:
        with h5py.File(path, "r+") as f:
            if kind == "schema-version":
                f.attrs["schema_version"] = 99
            elif kind == "incomplete":
                del f.attrs["complete"]
            elif kind == "missing-dataset":
                del f["cum_reward"]
            elif kind == "wrong-shape":
                del f["cum_regret"]
                f.create_dataset("cum_regret", data=np.zeros((1, 3)))
            elif kind == "nan":
                values = f["cum_regret"][()]
                values[0, -1] = np.nan
                f["cum_regret"][...] = values
            elif kind == "foreign-trials":
                f["trials"][...] = f["trials"][()] + 100


CORRUPTIONS = ["truncated", "empty", "not-hdf5", "schema-version", "incomplete",
               "missing-dataset", "wrong-shape", "nan", "foreign-trials"]


@pytest.fixture(scope="module")
def good_shard(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("good") / "seeds~0-2.h5"
    write_shard(path, run_shard(small_spec(trials=[0, 1, 2])))
    return path


@pytest.mark.parametrize("kind", CORRUPTIONS)
def test_aggregator_refuses_a_bad_shard_naming_the_file(
    tmp_path: Path, good_shard: Path, kind: str
) -> None:
    ok = tmp_path / "ok" / "seeds~0-2.h5"
    bad = tmp_path / "bad" / "seeds~3-5.h5"
    ok.parent.mkdir()
    bad.parent.mkdir()
    ok.write_bytes(good_shard.read_bytes())
    bad.write_bytes(good_shard.read_bytes())
    _corrupt(bad, kind)
    summary, curves = tmp_path / "summary.csv", tmp_path / "curves.h5"
    with pytest.raises(ShardError) as info:
        aggregate([ok, bad], summary, curves)
    message = str(info.value)
    assert message.startswith(f"{bad}:"), message
    assert "\n" not in message
    assert not summary.exists() and not curves.exists()


def test_cli_inspect_of_a_truncated_shard_is_one_line(tmp_path: Path, good_shard: Path) -> None:
    bad = tmp_path / "seeds~0-2.h5"
    bad.write_bytes(good_shard.read_bytes()[:1000])
    proc = subprocess.run([str(BIN / "dpbandits"), "inspect", str(bad)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0]


CRASH_CONFIG = """\
results: results
paper: paper
experiments:
  crash:
    instance: {generator: glm_ball, family: probit, d: 2, K: 4, S: 2.0, horizon: 80, seed: 5}
    algorithms:
      - {label: GLOC, policy: GLOC}
    trials: 4
    trials_per_shard: 1
    seed: 5
"""


def _snakemake(workdir: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess:
    cmd = [str(BIN / "snakemake"), "-s", str(REPO / "Snakefile"), "--directory", str(workdir),
           "--configfile", str(workdir / "crash.yaml"), "--cores", "1", "--keep-going",
           "--rerun-incomplete", "results/crash/summary.csv", *extra]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=REPO)


@pytest.mark.slow
def test_sigkilled_snakemake_shard_job_is_redone_alone(tmp_path: Path) -> None:
    """A shard job killed mid-write fails; the rerun redoes only that shard, and the result
    equals the CLI run of the same shard bitwise."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "crash.yaml").write_text(CRASH_CONFIG)
    shards = [workdir / f"results/crash/shards/GLOC/eps~none/inst~0/seeds~{i}-{i}.h5"
              for i in range(4)]
    env, marker = _hook_env(tmp_path, "dataset:4", "seeds~2-2")
    cmd = [str(BIN / "snakemake"), "-s", str(REPO / "Snakefile"), "--directory", str(workdir),
           "--configfile", str(workdir / "crash.yaml"), "--cores", "1", "--keep-going",
           "results/crash/summary.csv"]
    controller = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, cwd=REPO)
    pid = _wait_for(marker, controller, timeout=400)
    os.kill(pid, signal.SIGKILL)
    _, err = controller.communicate(timeout=400)
    assert controller.returncode != 0
    assert not shards[2].exists(), "a killed job's shard must not be left at its path"
    finished = {p: p.stat().st_mtime_ns for p in shards if p.exists()}
    assert len(finished) == 3, err[-2000:]
    for path in finished:
        read_shard(path)

    clean = {k: v for k, v in env.items() if not k.startswith("DPB_PAUSE")}
    # Snakemake's own output (without the workflow profile's logger) counts the jobs per rule.
    rerun = _snakemake(workdir, clean, "--workflow-profile", "none")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "simulate" in rerun.stderr
    for path, mtime in finished.items():
        assert path.stat().st_mtime_ns == mtime, f"{path.name} was redone"
    stats = re.search(r"^simulate\s+(\d+)$", rerun.stderr, flags=re.MULTILINE)
    assert stats is not None and int(stats.group(1)) == 1, rerun.stderr[-2000:]
    summary = (workdir / "results/crash/summary.csv").read_text().strip().splitlines()
    assert len(summary) == 1 + 4

    # CLI vs Snakemake: the same shard run through `dpbandits run --shard` is identical.
    cli_out = tmp_path / "cli.h5"
    proc = subprocess.run(
        [str(BIN / "dpbandits"), "run", "--shard", "crash/shards/GLOC/eps~none/inst~0/"
         "seeds~2-2.h5", "--config", str(workdir / "crash.yaml"), "--out", str(cli_out)],
        env=clean, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    _assert_same_shard(shards[2], cli_out)


def test_hook_is_inert_without_its_variables() -> None:
    """The pause hook only acts when asked (so the clean reruns above really are clean)."""
    ns: dict = {}
    env = {k: v for k, v in os.environ.items() if not k.startswith("DPB_PAUSE")}
    code = compile(HOOK, "sitecustomize", "exec")
    saved = os.environ.copy()
    try:
        os.environ.clear()
        os.environ.update(env)
        exec(code, ns)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert "_pause" not in ns
    assert sys.modules["h5py"].Group.create_dataset.__name__ == "create_dataset"
