"""Which events the SVD features are fit on (docs/realdata.md, "Feature modes").

`whole`: every event, including those replayed later (the features then see the replayed
ratings). `prefix<p>`: the earliest p % of events in replay order (MovieLens: the warm-start
prefix, so that only the past enters the features). `split<p>`: a seeded random p % of the events;
the other events are the only ones replayed (Jester, which has no time order). The mode is part of
the features' file name, `svd_k<k>_<mode>.h5`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from dpbandits.data import DataError

FIT_MODES = ("whole", "prefix", "split")
TOKEN_PATTERN = r"whole|(?:prefix|split)[1-9][0-9]?"
"""A feature-fit token (also the Snakemake wildcard constraint of the features file)."""
TOKEN = re.compile(r"whole|(prefix|split)([1-9][0-9]?)")
ALLOWED = "whole, prefix<p> or split<p> with p an integer percentage 1-99 (e.g. prefix10, split80)"
SPLIT_STREAM = 1
"""Second key of the split's SeedSequence (the first is data/svd/seed)."""


@dataclass(frozen=True)
class FeatureFit:
    """A feature-fit mode: `mode` and the percentage of events the SVD sees."""

    mode: str
    percent: int = 100

    @property
    def token(self) -> str:
        """The mode as it appears in file names (`whole`, `prefix10`, `split80`)."""
        return "whole" if self.mode == "whole" else f"{self.mode}{self.percent}"

    @property
    def leak_free(self) -> bool:
        """Whether no replayed event can enter the features."""
        return self.mode != "whole"

    def text(self) -> str:
        """The mode in words, for tables and the report."""
        if self.mode == "whole":
            return "SVD fit on the whole log (the replayed ratings included)"
        if self.mode == "prefix":
            return f"SVD fit on the earliest {self.percent} % of events only (leak-free)"
        return (f"SVD fit on a random {self.percent} % of events, the other "
                f"{100 - self.percent} % replayed (leak-free)")

    def n_fit(self, n: int) -> int:
        """Number of events the SVD is fit on, out of n."""
        return n if self.mode == "whole" else n * self.percent // 100

    def mask(self, n: int, seed: int = 0) -> np.ndarray:
        """Boolean mask of the n events (in replay order) that the SVD is fit on."""
        mask = np.zeros(n, dtype=bool)
        if self.mode == "whole":
            mask[:] = True
        elif self.mode == "prefix":
            mask[: self.n_fit(n)] = True
        else:
            rng = np.random.default_rng([seed, SPLIT_STREAM])
            mask[rng.permutation(n)[: self.n_fit(n)]] = True
        return mask


WHOLE = FeatureFit("whole")


def parse_fit(token: str) -> FeatureFit:
    """The mode a file-name token names, or one DataError line saying what is allowed."""
    match = TOKEN.fullmatch(str(token))
    if match is None:
        raise DataError(f"feature fit {token!r} is not allowed; allowed: {ALLOWED}")
    if token == "whole":
        return WHOLE
    return FeatureFit(match.group(1), int(match.group(2)))
