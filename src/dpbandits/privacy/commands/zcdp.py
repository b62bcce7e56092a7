"""`dpbandits privacy zcdp`: ρ-zCDP → (ε, δ) with --rho, or (ε, δ) → ρ with --eps.

With --rho, ε is the guarantee of a mechanism with that ρ: printed rounded up. With --eps,
ρ is the budget a mechanism may spend: printed rounded down.
"""

from __future__ import annotations

import argparse

from dpbandits.errors import ConfigError
from dpbandits.privacy.commands._output import add_value_only, line, round_up, verified
from dpbandits.privacy.zcdp import (
    epsilon_from_rho,
    epsilon_from_rho_tight,
    rho_from_epsilon,
    rho_from_epsilon_tight,
)

BOUND_LABELS = {
    "classic": "classic conversion ε = ρ + 2√(ρ ln(1/δ)), Bun–Steinke 2016 Prop. 1.3",
    "tight": "RDP(α) = ρα through dp-accounting, conversion of Canonne–Kamath–Steinke 2020 "
             "Prop. 12",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags: exactly one of --rho / --eps, plus --delta, --conversion and --value-only."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--rho", type=float, help="ρ of a ρ-zCDP mechanism: print its ε")
    source.add_argument("--eps", type=float, help="target ε: print the largest ρ that meets it")
    parser.add_argument("--delta", type=float, required=True, help="δ in (0, 1)")
    parser.add_argument(
        "--conversion", choices=["classic", "tight"], default="classic",
        help="classic: ε = ρ + 2√(ρ ln(1/δ)) (the paper's Eq. 2.8); tight: dp-accounting RDP",
    )
    add_value_only(parser)


def main(args: argparse.Namespace) -> int:
    """Print ε (from --rho, rounded up) or ρ (from --eps, rounded down and re-checked)."""
    label = BOUND_LABELS[args.conversion]
    if args.rho is not None:
        fn = epsilon_from_rho_tight if args.conversion == "tight" else epsilon_from_rho
        text = round_up(fn(args.rho, args.delta))
        print(text if args.value_only else line(
            "ε", text, f"guarantee of a ρ-zCDP mechanism, rounded up; {label}",
            {"ρ": args.rho, "δ": args.delta}))
        return 0
    if args.eps is None:
        raise ConfigError("one of --rho or --eps is required")
    fn = rho_from_epsilon_tight if args.conversion == "tight" else rho_from_epsilon
    forward = epsilon_from_rho_tight if args.conversion == "tight" else epsilon_from_rho
    text = verified(fn(args.eps, args.delta), lambda r: forward(r, args.delta) <= args.eps,
                    up=False)
    print(text if args.value_only else line(
        "ρ", text, f"largest ρ whose conversion is ≤ ε, rounded down; {label}",
        {"ε": args.eps, "δ": args.delta}))
    return 0
