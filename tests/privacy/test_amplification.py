"""Shuffle amplification bounds against the values of docs/linear.md, "Amplification bounds"."""

from __future__ import annotations

import pytest

from dpbandits.errors import ConfigError
from dpbandits.privacy.amplification import (
    amplified_epsilon,
    closed_form_epsilon,
    closed_form_inverse,
    local_epsilon,
    numerical_epsilon,
    numerical_inverse,
    threshold,
)

FORWARD = [  # (n, eps0, delta, fmt_thm, fmt_ref)
    (100_000, 4.0, 1e-6, 0.534634, 0.537804),
    (10_000, 1.0, 1e-6, 0.214026, 0.233266),
    (1000, 1.0, 1e-5, 0.531987, 0.608836),
]

INVERSE = [  # (n, eps, eps0) at delta = 1e-6, fmt_thm
    (1000, 0.1, 0.192554),
    (1000, 0.5, 0.887459),
    (1000, 1.0, 1.460421),
    (10_000, 0.1, 0.528081),
    (10_000, 1.0, 3.503714),
    (100_000, 0.1, 1.274315),
    (100_000, 1.0, 5.700792),
    (1_000_000, 1.0, 7.991521),
]

NUMERICAL = [  # (n, eps0, delta, lower, upper, upper with ref_compat)
    (100_000, 4.0, 1e-6, 0.1675386, 0.1754165, 0.1727906),
    (10_000, 1.0, 1e-6, 0.0528492, 0.0535326, 0.0535326),
    (1000, 1.0, 1e-5, 0.1474525, 0.1736134, 0.1736134),
]


@pytest.mark.parametrize("n,eps0,delta,thm,ref", FORWARD)
def test_closed_forms_reproduce_published_values(n, eps0, delta, thm, ref) -> None:
    assert closed_form_epsilon(eps0, n, delta, "fmt_thm") == pytest.approx(thm, abs=1e-6)
    assert closed_form_epsilon(eps0, n, delta, "fmt_ref") == pytest.approx(ref, abs=1e-6)


@pytest.mark.parametrize("n,eps,eps0", INVERSE)
def test_inverse_table(n, eps, eps0) -> None:
    assert closed_form_inverse(eps, n, 1e-6) == pytest.approx(eps0, abs=1e-6)


@pytest.mark.parametrize("eps", [0.05, 0.5, 3.0])
def test_no_amplification_for_small_batches(eps) -> None:
    assert closed_form_inverse(eps, 100, 1e-6) == eps
    assert closed_form_epsilon(eps, 100, 1e-6) == eps


@pytest.mark.parametrize("n", [1000, 10_000, 100_000, 1_000_000])
@pytest.mark.parametrize("eps", [0.05, 0.1, 0.3, 1.0, 2.0])
@pytest.mark.parametrize("variant", ["fmt_thm", "fmt_ref"])
def test_round_trips(n, eps, variant) -> None:
    """f(f^{-1}(ε)) = ε when not capped; f^{-1}(f(ε0)) = ε0 inside the valid regime."""
    eps0 = closed_form_inverse(eps, n, 1e-6, variant)
    assert eps0 >= eps
    if eps < eps0 < threshold(n, 1e-6, variant):
        assert closed_form_epsilon(eps0, n, 1e-6, variant) == pytest.approx(eps, rel=1e-10)
    for e0 in (0.2, 1.0, 0.9 * threshold(n, 1e-6, variant)):
        if e0 > 0:
            forward = closed_form_epsilon(e0, n, 1e-6, variant)
            assert closed_form_inverse(forward, n, 1e-6, variant) == pytest.approx(e0, rel=1e-9)


def test_inverse_monotone_in_n() -> None:
    for eps in (0.1, 0.5, 1.0, 5.0):
        values = [closed_form_inverse(eps, n, 1e-6) for n in (10, 100, 1000, 10**4, 10**5, 10**6)]
        assert all(a <= b for a, b in zip(values, values[1:], strict=False))
        assert values[0] == eps


@pytest.mark.parametrize("n,eps0,delta,lower,upper,upper_ref", NUMERICAL)
def test_numerical_bound_reproduces_reference(n, eps0, delta, lower, upper, upper_ref) -> None:
    kw = {"iterations": 10, "step": 100}
    assert numerical_epsilon(eps0, n, delta, upper=False, **kw) == pytest.approx(lower, abs=1e-6)
    assert numerical_epsilon(eps0, n, delta, **kw) == pytest.approx(upper, abs=1e-6)
    got = numerical_epsilon(eps0, n, delta, ref_compat=True, **kw)
    assert got == pytest.approx(upper_ref, abs=1e-6)


def test_numerical_is_tighter_than_closed_form_and_inverts() -> None:
    n, delta = 10_000, 1e-6
    assert numerical_epsilon(1.0, n, delta) < closed_form_epsilon(1.0, n, delta)
    eps0 = numerical_inverse(0.2, n, delta)
    assert eps0 > closed_form_inverse(0.2, n, delta)
    assert numerical_epsilon(eps0, n, delta) <= 0.2
    assert local_epsilon(0.2, n, delta, "numerical") == eps0
    assert amplified_epsilon(1.0, n, delta, "numerical") == numerical_epsilon(1.0, n, delta)


@pytest.mark.parametrize(
    "call",
    [
        lambda: closed_form_epsilon(0.0, 100, 1e-6),
        lambda: closed_form_epsilon(1.0, 0, 1e-6),
        lambda: closed_form_epsilon(1.0, 100, 1.0),
        lambda: closed_form_epsilon(1.0, 100, 0.0),
        lambda: closed_form_inverse(-1.0, 100, 1e-6),
        lambda: local_epsilon(1.0, 100, 1e-6, "made-up"),
    ],
)
def test_bad_input_is_one_line_config_error(call) -> None:
    with pytest.raises(ConfigError) as err:
        call()
    assert "\n" not in str(err.value)
