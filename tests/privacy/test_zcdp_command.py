"""The `privacy zcdp` CLI plug-in: ρ → ε, ε → ρ (ts spec §2.1 table), bad input."""

from __future__ import annotations

import argparse

import pytest

from dpbandits.cli import main as cli_main
from dpbandits.privacy.commands import zcdp


def run(argv: list[str], capsys) -> float:
    parser = argparse.ArgumentParser()
    zcdp.add_arguments(parser)
    assert zcdp.main(parser.parse_args(argv)) == 0
    return float(capsys.readouterr().out.strip())


# ε → (ρ classic, ρ tight) at δ = 1e-5 (spec §2.1, 4 significant digits).
TABLE = [(0.1, 0.0002163, 0.000433), (0.5, 0.005314, 0.008506), (1, 0.02082, 0.03056),
         (2, 0.08005, 0.1083), (5, 0.4496, 0.5510), (10, 1.5504, 1.7827)]


@pytest.mark.parametrize("eps, rho, rho_tight", TABLE)
def test_eps_to_rho_and_back(eps: float, rho: float, rho_tight: float, capsys) -> None:
    assert zcdp.NAME == "zcdp"
    got = run(["--eps", str(eps), "--delta", "1e-5"], capsys)
    assert got == pytest.approx(rho, rel=6e-4)
    assert run(["--rho", repr(got), "--delta", "1e-5"], capsys) == pytest.approx(eps, rel=1e-5)
    tight = run(["--eps", str(eps), "--delta", "1e-5", "--conversion", "tight"], capsys)
    assert tight == pytest.approx(rho_tight, rel=6e-3)


def test_through_the_cli(capsys) -> None:
    assert cli_main(["privacy", "zcdp", "--rho", "0.4496", "--delta", "1e-5"]) == 0
    assert float(capsys.readouterr().out) == pytest.approx(5.0, abs=1e-3)


@pytest.mark.parametrize("argv", [
    ["--eps", "0", "--delta", "1e-5"], ["--eps", "-1", "--delta", "1e-5"],
    ["--rho", "0.1", "--delta", "1.5"], ["--rho", "-0.1", "--delta", "1e-5"],
    ["--eps", "1", "--delta", "0"],
])
def test_bad_input_exit_2_one_line(argv: list[str], capsys) -> None:
    assert cli_main(["privacy", "zcdp", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dpbandits: error:") and "\n" not in err
