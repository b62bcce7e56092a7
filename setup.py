"""Build the one C extension, `dpbandits.privacy._exact`: the exact discrete Laplace and
Gaussian samplers (privacy mechanisms; docs/architecture.md, "Exact noise"). All other metadata
is in pyproject.toml; the algorithms are Python compiled by numba at run time."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "dpbandits.privacy._exact",
            sources=["src/dpbandits/privacy/_exact.c"],
            depends=["src/dpbandits/privacy/exact_sampler.h",
                     "src/dpbandits/privacy/exact_calibration.h"],
            extra_compile_args=["-O3", "-ffp-contract=off"],
        ),
    ]
)
