"""Snakemake wrapper: parse a dataset's extracted archives into ratings.h5 (with the archives'
verification stamps as its provenance)."""

from dpbandits.data import pipeline

sm = snakemake  # noqa: F821
pipeline.run(pipeline.parse, sm.log[0], dataset=sm.wildcards.dataset,
             raw_dirs=dict(sm.params.raw_dirs), output=sm.output[0],
             stamps=list(sm.input.stamps))
