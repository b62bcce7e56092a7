"""Snakemake wrapper: extract a verified archive safely into its folder."""

from dpbandits.data import pipeline

sm = snakemake  # noqa: F821
pipeline.run(pipeline.extract, sm.log[0], archive=sm.input.archive, target=sm.output[0])
