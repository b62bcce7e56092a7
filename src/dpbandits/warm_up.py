"""A run's kernels compiled before its jobs start, and loaded once by its fork server.

Every algorithm of a run plays a short copy of one of its shards (`tiny_specs`): the first
trial, at most `WARM_HORIZON` rounds, on the same generator, so the kernels are compiled for
the argument types the real shards pass. On a fresh cache `compile_kernels` plays them in as
many processes as the run has cores, each compiling what its share needs into the disk cache
(`dpbandits.jit`), instead of the first jobs each compiling the same kernels; the fork server
then plays them once more (`play`), loading the compiled code that every job it forks
inherits. Warm-up is an optimisation only: a spec that fails here is left to its job.

    python -m dpbandits.warm_up SPECS_JSON      (one share, as `compile_kernels` starts it)
"""

from __future__ import annotations

import hashlib
import json
import logging
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from dpbandits import jit

log = logging.getLogger(__name__)

ENV = "DPBANDITS_WARM_UP"
"""Environment variable holding the tiny specs (JSON) the fork server loads."""
WARM_HORIZON = 5000
SYNTHETIC = ("glm_ball", "logistic_pool", "linear_sphere")  # replays need data not yet there


def tiny_specs(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One short spec per distinct (algorithm, parameters, accounting, generator, family) of
    the synthetic instances among `specs`."""
    out: dict[str, dict[str, Any]] = {}
    for spec in specs:
        instance = spec["instance"]
        if instance.get("generator") not in SYNTHETIC:
            continue
        key = json.dumps([spec["policy"], spec["params"], spec["accounting"],
                          instance.get("generator"), instance.get("family")], sort_keys=True)
        if key not in out:
            horizon = min(int(instance.get("horizon", WARM_HORIZON)), WARM_HORIZON)
            out[key] = {**spec, "instance": {**instance, "horizon": horizon},
                        "trials": spec["trials"][:1]}
    return list(out.values())


def play(specs: list[dict[str, Any]]) -> int:
    """Play each spec (results discarded); the number that ran."""
    from dpbandits.simulate import run_shard

    played = 0
    for spec in specs:
        try:
            run_shard(spec)
            played += 1
        except Exception as exc:  # noqa: BLE001 - the job itself will report it
            log.debug("warm-up of %s skipped: %s", spec["algorithm"], exc)
    return played


def _marker(specs: list[dict[str, Any]]) -> Path:
    digest = hashlib.sha256(json.dumps(specs, sort_keys=True).encode()).hexdigest()[:16]
    return jit.cache_folder() / f"warm-{digest}"


def compile_kernels(specs: list[dict[str, Any]], processes: int) -> float:
    """Compile the kernels of `specs` (tiny specs) in `processes` processes, unless this cache
    already holds them; the wall seconds spent."""
    if not specs or not jit.enabled() or not jit.caching():
        return 0.0
    marker = _marker(specs)
    if marker.exists():
        return 0.0
    start = time.perf_counter()
    shares = [specs[i::max(1, processes)] for i in range(max(1, processes))]
    with tempfile.TemporaryDirectory(prefix="dpb-warm-") as folder:
        workers = []
        for i, share in enumerate(s for s in shares if s):
            path = Path(folder) / f"share-{i}.json"
            path.write_text(json.dumps(share))
            workers.append(subprocess.Popen([sys.executable, "-m", "dpbandits.warm_up",
                                             str(path)], stdout=subprocess.DEVNULL))
        statuses = [worker.wait() for worker in workers]
    if all(status == 0 for status in statuses):
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
        except OSError:
            pass
    jit.prune()
    return time.perf_counter() - start


if __name__ == "__main__":
    sys.exit(0 if play(json.loads(Path(sys.argv[1]).read_text())) >= 0 else 1)
