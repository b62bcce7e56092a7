"""Snakemake wrapper: rank-k SVD factors of a dataset's centred rating matrix, fit on the events
of the file name's feature-fit mode."""

from dpbandits.data import pipeline

sm = snakemake  # noqa: F821
pipeline.run(pipeline.svd, sm.log[0], ratings=sm.input[0], output=sm.output[0],
             k=int(sm.wildcards.k), data=sm.config.get("data"), fit=sm.wildcards.fit)
