"""Snakemake wrapper: check an archive's size and sha256, write its stamp."""

from dpbandits.data import pipeline

sm = snakemake  # noqa: F821
pipeline.run(pipeline.verify, sm.log[0], file=sm.wildcards.archive, archive=sm.input.archive,
             stamp=sm.output[0], data=sm.config.get("data"))
