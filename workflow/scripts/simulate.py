"""Snakemake wrapper: run one shard and write it atomically."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from dpbandits.simulate import run_shard
from dpbandits.storage import write_shard

from _logging import setup

log = setup(snakemake.log[0])
spec = snakemake.params.spec
log.info("shard %s", snakemake.output[0])
data = run_shard(spec, progress=True)
write_shard(snakemake.output[0], data)
log.info("done: %d trial(s), %.1fs", len(data.trials), data.wall_time.sum())
