"""Build the C extensions (`dpbandits.privacy._exact`, `dpbandits.privacy._wbk`,
`dpbandits.instances._ball`, `dpbandits.policies._ridge`, `dpbandits.policies._glm_rounds`,
`dpbandits._stacked`, `dpbandits._design`, `dpbandits._newton`,
`dpbandits.privacy._shuffle`, `dpbandits.privacy._sgd`); all other
metadata is in pyproject.toml."""

from pathlib import Path

import numpy as np
from setuptools import Extension, setup

NUMPY_RANDOM_LIB = str(Path(np.get_include()).parents[1] / "random" / "lib")

setup(
    ext_modules=[
        Extension(
            "dpbandits.privacy._exact",
            sources=["src/dpbandits/privacy/_exact.c"],
            depends=["src/dpbandits/privacy/exact_sampler.h",
                     "src/dpbandits/privacy/exact_calibration.h"],
            extra_compile_args=["-O3", "-ffp-contract=off"],
        ),
        Extension(
            "dpbandits.privacy._wbk",
            sources=["src/dpbandits/privacy/_wbk.c"],
            depends=["src/dpbandits/numpy_loops.h"],
            include_dirs=[np.get_include()],
            extra_compile_args=["-O2", "-ffp-contract=off"],
        ),
        Extension(
            "dpbandits.policies._ridge",
            sources=["src/dpbandits/policies/_ridge.c"],
            depends=["src/dpbandits/numpy_loops.h", "src/dpbandits/privacy/exact_sampler.h",
                     "src/dpbandits/privacy/exact_calibration.h",
                     "src/dpbandits/policies/outcome_tables.h"],
            include_dirs=[np.get_include()],
            extra_compile_args=["-O2", "-ffp-contract=off"],
        ),
        Extension(
            "dpbandits._stacked",
            sources=["src/dpbandits/_stacked.c"],
            depends=["src/dpbandits/numpy_loops.h", "src/dpbandits/glm_links.h"],
            include_dirs=[np.get_include()],
            extra_compile_args=["-O2", "-ffp-contract=off"],
        ),
        Extension(
            "dpbandits.policies._glm_rounds",
            sources=["src/dpbandits/policies/_glm_rounds.c"],
            depends=["src/dpbandits/numpy_loops.h", "src/dpbandits/glm_links.h",
                     "src/dpbandits/policies/outcome_tables.h", "src/dpbandits/newton_api.h"],
            include_dirs=[np.get_include()],
            extra_compile_args=["-O2", "-ffp-contract=off"],
        ),
        Extension(
            "dpbandits._newton",
            sources=["src/dpbandits/_newton.c"],
            depends=["src/dpbandits/numpy_loops.h", "src/dpbandits/newton_api.h"],
            include_dirs=[np.get_include()],
            extra_compile_args=["-O2", "-ffp-contract=off"],
        ),
        Extension(
            "dpbandits.privacy._shuffle",
            sources=["src/dpbandits/privacy/_shuffle.c"],
            depends=["src/dpbandits/numpy_loops.h", "src/dpbandits/privacy/clip_rows.h"],
            include_dirs=[np.get_include()],
            extra_compile_args=["-O2", "-ffp-contract=off"],
        ),
        Extension(
            "dpbandits.privacy._sgd",
            sources=["src/dpbandits/privacy/_sgd.c"],
            depends=["src/dpbandits/numpy_loops.h", "src/dpbandits/privacy/clip_rows.h"],
            include_dirs=[np.get_include()],
            extra_compile_args=["-O2", "-ffp-contract=off"],
        ),
        Extension(
            "dpbandits._design",
            sources=["src/dpbandits/_design.c"],
            depends=["src/dpbandits/numpy_loops.h"],
            include_dirs=[np.get_include()],
            extra_compile_args=["-O2", "-ffp-contract=off"],
        ),
        Extension(
            "dpbandits.instances._ball",
            sources=["src/dpbandits/instances/_ball.c"],
            include_dirs=[np.get_include()],
            library_dirs=[NUMPY_RANDOM_LIB],
            libraries=["npyrandom", "m"],
            extra_compile_args=["-O2", "-ffp-contract=off"],
        ),
    ]
)
