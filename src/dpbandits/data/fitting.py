"""Which events the SVD features are fit on (docs/realdata.md, "Feature modes").

`whole`: every event, including those replayed later (the features then see the replayed
ratings). `prefix<p>`: the earliest p % of events in replay order, frozen. `split<p>`: a seeded
random p % of the events; the other events are the only ones replayed (Jester, which has no time
order). `online` / `online<p>`: the features used at each event come from the events before it
only (`online.py`), computed for the whole log or its earliest p %. The mode is part of the
features' file name, `svd_k<k>_<mode>.h5`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from dpbandits.data import DataError

FIT_MODES = ("whole", "prefix", "split", "online")
TOKEN_PATTERN = r"whole|online(?:[1-9][0-9]?)?|(?:prefix|split)[1-9][0-9]?"
"""A feature-fit token (also the Snakemake wildcard constraint of the features file)."""
TOKEN = re.compile(r"whole|(online)([1-9][0-9]?)?|(prefix|split)([1-9][0-9]?)")
ALLOWED = ("whole, online, online<p>, prefix<p> or split<p> with p an integer percentage 1-99 "
           "(e.g. online, online14, prefix10, split80)")
SPLIT_STREAM = 1
"""Second key of the split's SeedSequence (the first is data/svd/seed)."""


@dataclass(frozen=True)
class FeatureFit:
    """A feature-fit mode: `mode` and the percentage of events the SVD sees."""

    mode: str
    percent: int = 100

    @property
    def leak_free(self) -> bool:
        """Whether no replayed event can enter the features."""
        return self.mode != "whole"

    @property
    def token(self) -> str:
        """The mode as it appears in file names (`whole`, `online`, `online14`, `prefix10`)."""
        if self.mode == "whole" or (self.mode == "online" and self.percent == 100):
            return self.mode
        return f"{self.mode}{self.percent}"

    def text(self) -> str:
        """The mode in words, for tables and the report."""
        if self.mode == "whole":
            return "SVD fit on the whole log (the replayed ratings included)"
        if self.mode == "online":
            return ("online features: each step's from the earlier events only, item factors "
                    "refit as the log grows (leak-free)")
        if self.mode == "prefix":
            return f"SVD fit on the earliest {self.percent} % of events only (leak-free)"
        return (f"SVD fit on a random {self.percent} % of events, the other "
                f"{100 - self.percent} % replayed (leak-free)")

    def n_fit(self, n: int) -> int:
        """Number of events the SVD is fit on out of n (online: the events covered)."""
        return n if self.percent == 100 else n * self.percent // 100

    def mask(self, n: int, seed: int = 0) -> np.ndarray:
        """Boolean mask of the n events (in replay order) that the SVD is fit on (online: none is
        fit on once and for all)."""
        mask = np.zeros(n, dtype=bool)
        if self.mode == "online":
            pass
        elif self.mode == "whole":
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
    if match.group(1):
        return FeatureFit("online", int(match.group(2) or 100))
    return FeatureFit(match.group(3), int(match.group(4)))
