"""`dpbandits privacy zcdp`: ρ-zCDP → (ε, δ) with --rho, or (ε, δ) → ρ with --eps."""

from __future__ import annotations

import argparse

from dpbandits.errors import ConfigError
from dpbandits.privacy.zcdp import (
    epsilon_from_rho,
    epsilon_from_rho_tight,
    rho_from_epsilon,
    rho_from_epsilon_tight,
)

NAME = "zcdp"
HELP = "zCDP <-> (epsilon, delta) conversion (Bun & Steinke 2016)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags: exactly one of --rho / --eps, plus --delta and --conversion."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--rho", type=float, help="ρ of a ρ-zCDP mechanism: print its ε")
    source.add_argument("--eps", type=float, help="target ε: print the largest ρ that meets it")
    parser.add_argument("--delta", type=float, required=True, help="δ in (0, 1)")
    parser.add_argument(
        "--conversion", choices=["classic", "tight"], default="classic",
        help="classic: ε = ρ + 2√(ρ ln(1/δ)) (the paper's Eq. 2.8); tight: dp-accounting RDP",
    )


def main(args: argparse.Namespace) -> int:
    """Print ε (from --rho) or ρ (from --eps)."""
    if args.rho is not None:
        fn = epsilon_from_rho_tight if args.conversion == "tight" else epsilon_from_rho
        print(f"{fn(args.rho, args.delta):.6g}")
        return 0
    if args.eps is None:
        raise ConfigError("one of --rho or --eps is required")
    fn = rho_from_epsilon_tight if args.conversion == "tight" else rho_from_epsilon
    print(f"{fn(args.eps, args.delta):.6g}")
    return 0
