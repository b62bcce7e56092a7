"""Record the digests of the smoke shards (tests/smoke_digests.json) that the regression test
compares every later run against: run after a change that is meant to alter results.

    .venv/bin/snakemake --cores 2 --configfile config/smoke.yaml
    .venv/bin/python tools/dev/smoke_digests.py results/smoke
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from shard_compare import numeric_fingerprint, shard_digests  # noqa: E402


def main(results: str) -> None:
    digests = shard_digests(Path(results))
    if not digests:
        raise SystemExit(f"no shards under {results}")
    out = REPO / "tests" / "smoke_digests.json"
    out.write_text(json.dumps({"fingerprint": numeric_fingerprint(), "shards": digests},
                              indent=1, sort_keys=True) + "\n")
    print(f"{out}: {len(digests)} shards")


if __name__ == "__main__":
    main(*sys.argv[1:])
