"""Snakemake wrapper: run one shard and write it atomically."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _logging import setup  # noqa: E402

from dpbandits.simulate import run_shard  # noqa: E402
from dpbandits.storage import write_shard  # noqa: E402

log = setup(snakemake.log[0])  # noqa: F821
spec = snakemake.params.spec  # noqa: F821
log.info("shard %s", snakemake.output[0])  # noqa: F821
data = run_shard(spec, progress=True)
write_shard(snakemake.output[0], data)  # noqa: F821
log.info("done: %d trial(s), %.1fs", len(data.trials), data.wall_time.sum())
