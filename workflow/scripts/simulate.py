"""Run one shard and write it atomically: `python simulate.py SPEC_JSON OUTPUT LOG`.

A plain script run by the `simulate` rule's shell command, so that a job imports only what its
shard needs (no Snakemake script preamble).
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from dpbandits.simulate import run_shard
from dpbandits.storage import write_shard

from _logging import setup

spec_json, output, log_path = sys.argv[1:]
log = setup(log_path)
log.info("shard %s", output)
data = run_shard(json.loads(spec_json), progress=True)
write_shard(output, data)
log.info("done: %d trial(s), %.1fs", len(data.trials), data.wall_time.sum())
