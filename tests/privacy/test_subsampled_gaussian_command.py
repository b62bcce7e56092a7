"""The `privacy subsampled-gaussian` CLI plug-in: σ rounded up meets (ε, δ), labels, bad input."""

from __future__ import annotations

import re

import pytest

from dpbandits.cli import main as cli_main
from dpbandits.privacy.commands import CALCULATORS, subsampled_gaussian
from dpbandits.privacy.commands._output import round_down, round_up, verified
from dpbandits.privacy.subsampled import EXTENDED_ORDERS, PAPER_ORDERS, amp_epsilon, amp_sigma

LINE = re.compile(r"^(\S+) = (\S+)  \((.*); (.*)\)$")


def lines(out: str) -> dict[str, tuple[str, str, str]]:
    """{symbol: (value text, bound label, inputs)} of every labelled line printed."""
    found = {}
    for text in out.strip().splitlines():
        match = LINE.match(text)
        assert match, f"unlabelled output line: {text!r}"
        found[match[1]] = (match[2], match[3], match[4])
    return found


def run(argv: list[str], capsys) -> str:
    assert cli_main(["privacy", "subsampled-gaussian", *argv]) == 0
    return capsys.readouterr().out


BASE = ["--q", "0.3", "--eps", "1", "--delta", "1e-5"]


def test_labelled_lines(capsys) -> None:
    assert CALCULATORS.get("subsampled-gaussian") is subsampled_gaussian
    out = lines(run(BASE, capsys))
    value, bound, inputs = out["σ"]
    assert float(value) == pytest.approx(2.593, abs=1e-3)
    assert "rounded up" in bound and "Mironov–Talwar–Zhang 2019" in bound
    assert "classic conversion" in bound and "Mironov 2017 Prop. 3" in bound
    assert inputs == ("q = 0.3, ε = 1, δ = 1e-5, orders = paper, relation = add_remove, "
                      "conversion = classic")
    eps_value, eps_bound, eps_inputs = out["ε"]
    assert float(eps_value) <= 1.0 and "at the printed σ" in eps_bound
    assert eps_inputs == f"σ = {value}, δ = 1e-5"
    assert "α*" not in out
    tight = lines(run([*BASE, "--conversion", "tight"], capsys))["σ"][1]
    assert "dp-accounting" in tight and "Canonne–Kamath–Steinke 2020" in tight
    replace = lines(run([*BASE, "--relation", "replace_one"], capsys))["σ"]
    assert float(replace[0]) > float(value) and "Mironov 2017 Prop. 11" in replace[1]


def test_verbose_and_value_only(capsys) -> None:
    out = lines(run([*BASE, "-v"], capsys))
    assert out["α*"][0] == "16"
    bare = run([*BASE, "--value-only"], capsys).strip()
    assert bare == out["σ"][0]
    assert run([*BASE, "-v", "--value-only"], capsys).strip() == f"{bare}\talpha*=16"


# (q, ε, δ, conversion, relation, orders): the first three are cases where σ rounded to
# nearest at 6 digits lands below the root, so the printed σ would overspend ε.
OVERSPENT_BY_NEAREST = [
    (0.3, 1.0, 1e-5, "tight", "add_remove", "paper"),  # 2.21738 gives ε = 1.0000033
    (0.1, 0.5, 1e-5, "classic", "add_remove", "paper"),
    (1.0, 1.0, 1e-5, "classic", "add_remove", "paper"),
]
CASES = [*OVERSPENT_BY_NEAREST, (0.3, 1.0, 1e-5, "classic", "replace_one", "extended"),
         (0.02, 0.2, 1e-6, "classic", "add_remove", "extended")]


def _argv(q: float, eps: float, delta: float, conversion: str, relation: str,
          orders: str) -> list[str]:
    return ["--q", repr(q), "--eps", repr(eps), "--delta", repr(delta), "--conversion",
            conversion, "--relation", relation, "--orders", orders]


def _eps(q: float, sigma: float, delta: float, conversion: str, relation: str,
         orders: str) -> float:
    order_set = EXTENDED_ORDERS if orders == "extended" else PAPER_ORDERS
    return amp_epsilon(q, sigma, delta, orders=order_set, relation=relation,
                       conversion=conversion)[0]


@pytest.mark.parametrize("case", CASES)
def test_printed_sigma_meets_the_target(case: tuple, capsys) -> None:
    """ε re-evaluated at the printed σ is within the target, and σ is not padded needlessly."""
    q, eps, delta, conversion, relation, orders = case
    printed = float(lines(run(_argv(*case), capsys))["σ"][0])
    assert _eps(q, printed, delta, conversion, relation, orders) <= eps
    order_set = EXTENDED_ORDERS if orders == "extended" else PAPER_ORDERS
    root, _ = amp_sigma(q, eps, delta, orders=order_set, relation=relation,
                        conversion=conversion)
    assert root <= printed <= root * (1 + 1e-5)


@pytest.mark.parametrize("case", OVERSPENT_BY_NEAREST)
def test_rounding_to_nearest_fails_the_same_check(case: tuple) -> None:
    """Control: the old output (σ to nearest at 6 digits) overspends ε in these cases."""
    q, eps, delta, conversion, relation, orders = case
    order_set = EXTENDED_ORDERS if orders == "extended" else PAPER_ORDERS
    root, _ = amp_sigma(q, eps, delta, orders=order_set, relation=relation,
                        conversion=conversion)
    nearest = float(f"{root:.6g}")
    assert _eps(q, nearest, delta, conversion, relation, orders) > eps


def test_directed_rounding_helpers() -> None:
    assert (round_up(2.2173831), round_down(2.2173831)) == ("2.21739", "2.21738")
    assert (round_up(100.0), round_down(100.0)) == ("100", "100")
    assert (round_up(9.9999995), round_down(9.9999995)) == ("10", "9.99999")
    assert (round_up(1.23456789e-7), round_down(1.23456789e-7)) == ("1.23457e-7", "1.23456e-7")
    # 0.1 is stored slightly above 1/10, so rounding up must leave 0.1 behind.
    assert round_up(0.1) == "0.100001" and round_down(0.1) == "0.1"
    # When the rounded value fails the re-check, step one unit further in the safe direction.
    assert verified(2.2173831, lambda s: s >= 2.21741, up=True) == "2.21741"
    assert verified(2.2173831, lambda s: s <= 2.21736, up=False) == "2.21736"


@pytest.mark.parametrize("q, eps, delta", [("0", "1", "1e-5"), ("1.2", "1", "1e-5"),
                                           ("0.3", "0", "1e-5"), ("0.3", "1", "1"),
                                           ("0.3", "0.1", "1e-5")])
def test_bad_input_exit_2_one_line(q: str, eps: str, delta: str, capsys) -> None:
    argv = ["privacy", "subsampled-gaussian", "--q", q, "--eps", eps, "--delta", delta]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dpbandits: error:") and "\n" not in err
