"""Snakemake wrapper: fetch one pinned archive (mirror folder, then URLs) into place."""

from dpbandits.data import pipeline

sm = snakemake  # noqa: F821
pipeline.run(pipeline.download, sm.log[0], file=sm.wildcards.archive, output=sm.output[0],
             data=sm.config.get("data"))
