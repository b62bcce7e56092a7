"""Record the digests of the smoke shards (tests/smoke_digests.json) that the regression test
compares every later run against: run after a change that is meant to alter results. The file
keeps one record per numeric fingerprint (libraries, CPU features, BLAS kernels: the same code
rounds differently on machines that differ in these); a run replaces its own fingerprint's.

    .venv/bin/snakemake --cores 2 --configfile config/smoke.yaml
    .venv/bin/python tools/dev/smoke_digests.py results/smoke

A result-changing commit re-records every fingerprint the file holds or removes those it cannot
(OpenBLAS's kernels can be chosen with OPENBLAS_CORETYPE, e.g. SkylakeX on an AVX-512 CPU).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from shard_compare import shard_digests  # noqa: E402

from dpbandits.numerics import fingerprint  # noqa: E402


def main(results: str) -> None:
    digests = shard_digests(Path(results))
    if not digests:
        raise SystemExit(f"no shards under {results}")
    out = REPO / "tests" / "smoke_digests.json"
    current = fingerprint()
    records = json.loads(out.read_text())["records"] if out.is_file() else []
    records = [r for r in records if r["fingerprint"] != current]
    records.append({"fingerprint": current, "shards": digests})
    out.write_text(json.dumps({"records": records}, indent=1, sort_keys=True) + "\n")
    print(f"{out}: {len(digests)} shards for {current['blas_kernels']}; "
          f"{len(records)} fingerprint(s)")


if __name__ == "__main__":
    main(*sys.argv[1:])
