"""The mutation harness (fast subset): every weakening of two TS-family policies is caught."""

from __future__ import annotations

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


def test_catalogue_covers_every_checked_policy_with_every_weakening() -> None:
    entries = catalogue()
    assert len(entries) == 4 * len(WEAKENINGS) == 20
    assert mutation_named("AdaPrivate-TS: noise × 0.1") == Mutation("AdaPrivate-TS",
                                                                     "noise × 0.1")
    with pytest.raises(ConfigError, match="mutation 'x' is not allowed; allowed: "):
        mutation_named("x")


@pytest.mark.parametrize("policy", ["AdaPrivate-TS", "AdaPrivate-TS-Amp"])
def test_every_weakening_is_caught_naming_the_release(policy: str) -> None:
    results = run_mutations([policy])
    assert [r.weakening for r in results] == list(WEAKENINGS)
    missed = [r.weakening for r in results if not r.caught]
    assert missed == []
    assert all("release '" in r.evidence for r in results)
    lines = coverage_lines(results)
    assert lines[0].startswith("Mutation score of the release checks: 5 / 5")
    assert lines[-1] == f"| {policy} | " + " | ".join(["caught"] * 5) + " | 5 / 5 |"
