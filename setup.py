"""Build the C extension `dpbandits.privacy._exact`; all other metadata is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "dpbandits.privacy._exact",
            sources=["src/dpbandits/privacy/_exact.c"],
            extra_compile_args=["-O3"],
        )
    ]
)
