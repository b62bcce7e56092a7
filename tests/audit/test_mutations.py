"""The mutation harness (fast subset): every weakening of two TS-family policies and of the
zCDP linear baselines is caught."""

from __future__ import annotations

from collections import Counter

import pytest

from dpbandits.audit.mutations import (
    WEAKENINGS,
    Mutation,
    catalogue,
    coverage_lines,
    mutation_named,
    run_mutations,
)
from dpbandits.errors import ConfigError

ZCDP_LINEAR = ("DGS-LinUCB", "zCDP-Episodic", "RarelySwitching-zCDP", "AdaC-OFUL-zCDP")


def test_catalogue_covers_every_checked_policy_with_every_weakening() -> None:
    entries = catalogue()
    counts = Counter(m.policy for m, _ in entries)
    for policy in ("AdaPrivate-TS", "AdaPrivate-TS-Amp", "AdaPrivate-TS-Adaptive",
                   "AdaPrivate-UCB", *ZCDP_LINEAR):
        assert counts[policy] == len(WEAKENINGS) == 5
    assert len(entries) >= 8 * len(WEAKENINGS)
    assert mutation_named("AdaPrivate-TS: noise × 0.1") == Mutation("AdaPrivate-TS",
                                                                     "noise × 0.1")
    with pytest.raises(ConfigError, match="mutation 'x' is not allowed; allowed: "):
        mutation_named("x")


@pytest.mark.parametrize("policy", ["AdaPrivate-TS", "AdaPrivate-TS-Amp", *ZCDP_LINEAR])
def test_every_weakening_is_caught_naming_the_release(policy: str) -> None:
    results = run_mutations([policy])
    assert [r.weakening for r in results] == list(WEAKENINGS)
    missed = [r.weakening for r in results if not r.caught]
    assert missed == []
    assert all("release '" in r.evidence for r in results)
    lines = coverage_lines(results)
    assert lines[0].startswith("Mutation score of the release checks: 5 / 5")
    assert lines[-1] == f"| {policy} | " + " | ".join(["caught"] * 5) + " | 5 / 5 |"
