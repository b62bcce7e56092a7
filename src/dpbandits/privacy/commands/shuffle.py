"""`dpbandits privacy shuffle`: central ε of n shuffled ε0-LDP reports, or the inverse."""

from __future__ import annotations

import argparse

from dpbandits.errors import ConfigError
from dpbandits.privacy.amplification import amplified_epsilon, local_epsilon

NAME = "shuffle"
BOUND_NAMES = {"closed-form": "fmt_thm", "closed-form-ref": "fmt_ref", "fmt": "numerical"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags: --eps0 (forward) or --inverse --eps (inverse), --n, --delta, --bound."""
    parser.add_argument("--eps0", type=float, help="local ε0 of each report (forward)")
    parser.add_argument("--eps", type=float, help="target central ε (with --inverse)")
    parser.add_argument("--n", type=int, required=True, help="number of shuffled reports")
    parser.add_argument("--delta", type=float, required=True, help="target δ in (0, 1)")
    parser.add_argument("--inverse", action="store_true", help="print ε0 = f^{-1}_{n,δ}(ε)")
    parser.add_argument(
        "--bound",
        choices=sorted(BOUND_NAMES),
        default="closed-form",
        help="closed-form: FMT21 Thm 3.1; closed-form-ref: FMT21 reference code; "
        "fmt: FMT21 numerical bound",
    )


def main(args: argparse.Namespace) -> int:
    """Print the amplified ε (or the local ε0 with --inverse)."""
    bound = BOUND_NAMES[args.bound]
    if args.inverse:
        if args.eps is None:
            raise ConfigError("--eps is required with --inverse; must be a finite number > 0")
        print(f"{local_epsilon(args.eps, args.n, args.delta, bound):.6f}")
    else:
        if args.eps0 is None:
            raise ConfigError("--eps0 is required (or use --inverse --eps E)")
        print(f"{amplified_epsilon(args.eps0, args.n, args.delta, bound):.6f}")
    return 0
