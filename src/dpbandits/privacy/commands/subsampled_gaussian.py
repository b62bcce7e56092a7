"""`dpbandits privacy subsampled-gaussian`: σ of a Poisson-subsampled Gaussian for (ε, δ)."""

from __future__ import annotations

import argparse

from dpbandits.privacy.subsampled import EXTENDED_ORDERS, PAPER_ORDERS, amp_sigma

NAME = "subsampled-gaussian"
HELP = "noise σ of the Poisson-subsampled Gaussian at rate q (RDP, AdaPrivate-TS Eq. 15)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags: --q, --eps, --delta, --orders, --relation, --conversion, --verbose."""
    parser.add_argument("--q", type=float, required=True, help="sampling rate q in (0, 1]")
    parser.add_argument("--eps", type=float, required=True, help="target ε > 0")
    parser.add_argument("--delta", type=float, required=True, help="δ in (0, 1)")
    parser.add_argument(
        "--orders", choices=["paper", "extended"], default="paper",
        help="paper: α ∈ {2..6, 8, 16, 32, 64}; extended: also 128, 256",
    )
    parser.add_argument(
        "--relation", choices=["add_remove", "replace_one"], default="add_remove",
        help="add_remove: the paper's bound; replace_one: bound for a changed reward",
    )
    parser.add_argument(
        "--conversion", choices=["classic", "tight"], default="classic",
        help="classic: ε = min_α RDP(α) + ln(1/δ)/(α−1) (paper); tight: dp-accounting",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="also print α*")


def main(args: argparse.Namespace) -> int:
    """Print the smallest σ whose release meets (ε, δ)."""
    orders = EXTENDED_ORDERS if args.orders == "extended" else PAPER_ORDERS
    sigma, alpha = amp_sigma(args.q, args.eps, args.delta, orders=orders,
                             relation=args.relation, conversion=args.conversion)
    print(f"{sigma:.6g}" + (f"\talpha*={alpha}" if args.verbose else ""))
    return 0
