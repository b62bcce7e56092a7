"""`dpbandits privacy subsampled-gaussian`: σ of a Poisson-subsampled Gaussian for (ε, δ).

Prints σ rounded up (a larger σ only adds privacy), the ε of the release at the printed σ
rounded up, and with -v the optimal RDP order.
"""

from __future__ import annotations

import argparse

from dpbandits.privacy.commands._output import (
    add_value_only,
    line,
    round_up,
    significant_digits,
    verified,
)
from dpbandits.privacy.subsampled import EXTENDED_ORDERS, PAPER_ORDERS, amp_epsilon, amp_sigma

RDP_SOURCE = "RDP of the Poisson-subsampled Gaussian, Mironov–Talwar–Zhang 2019"
CONVERSION_SOURCE = {
    "classic": "classic conversion ε = min_α RDP(α) + ln(1/δ)/(α−1), Mironov 2017 Prop. 3",
    "tight": "dp-accounting RdpAccountant, conversion of Canonne–Kamath–Steinke 2020 Prop. 12",
}
RELATION_SOURCE = {
    "add_remove": "add/remove one record",
    "replace_one": "replace one record via Mironov 2017 Prop. 11",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags: --q, --eps, --delta, --orders, --relation, --conversion, --verbose, --value-only."""
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
    add_value_only(parser)


def bound_label(relation: str, conversion: str) -> str:
    """The bound used, with its sources, as printed after each value."""
    if conversion == "tight":
        return f"{RDP_SOURCE}, {CONVERSION_SOURCE['tight']}"
    return f"{RDP_SOURCE}, {RELATION_SOURCE[relation]}, {CONVERSION_SOURCE['classic']}"


def main(args: argparse.Namespace) -> int:
    """Print the smallest σ meeting (ε, δ), rounded up and re-checked, and ε at the printed σ."""
    orders = EXTENDED_ORDERS if args.orders == "extended" else PAPER_ORDERS
    sigma, _ = amp_sigma(args.q, args.eps, args.delta, orders=orders,
                         relation=args.relation, conversion=args.conversion)

    def eps_at(s: float) -> tuple[float, int]:
        return amp_epsilon(args.q, s, args.delta, orders=orders, relation=args.relation,
                           conversion=args.conversion)

    sigma_text = verified(sigma, lambda s: eps_at(s)[0] <= args.eps, up=True)
    eps, alpha = eps_at(float(sigma_text))
    if args.value_only:
        print(sigma_text + (f"\talpha*={alpha}" if args.verbose else ""))
        return 0
    inputs = {"q": args.q, "ε": args.eps, "δ": args.delta, "orders": args.orders,
              "relation": args.relation, "conversion": args.conversion}
    bound = bound_label(args.relation, args.conversion)
    print(line("σ", sigma_text, f"noise multiplier for sensitivity 1, rounded up; {bound}",
               inputs))
    digits = max(6, significant_digits(args.eps))
    print(line("ε", round_up(eps, digits), "of one release at the printed σ, rounded up; "
               "same bound", {"σ": sigma_text, "δ": args.delta}))
    if args.verbose:
        print(line("α*", str(alpha), "RDP order attaining ε at the printed σ",
                   {"orders": args.orders}))
    return 0
