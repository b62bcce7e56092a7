"""`dpbandits privacy shuffle`: central ε of n shuffled ε0-LDP reports, or the inverse.

Forward, the central ε is a guarantee for given local noise: printed rounded up. With
--inverse, ε0 is the per-report budget a user may spend: printed rounded down. Either way a
line says so when shuffling gives no amplification at these inputs.
"""

from __future__ import annotations

import argparse
import math

from dpbandits.errors import ConfigError
from dpbandits.privacy.amplification import (
    amplified_epsilon,
    check_inputs,
    local_epsilon,
    threshold,
)
from dpbandits.privacy.commands._output import (
    add_value_only,
    line,
    round_down,
    round_up,
    verified,
)

BOUND_NAMES = {"closed-form": "fmt_thm", "closed-form-ref": "fmt_ref", "fmt": "numerical"}
BOUND_LABELS = {
    "fmt_thm": "closed form, Feldman–McMillan–Talwar 2021 Thm 3.1",
    "fmt_ref": "closed form of the Feldman–McMillan–Talwar 2021 reference code",
    "numerical": "numerical bound, Feldman–McMillan–Talwar 2021",
}
NEGLIGIBLE = 1e-3  # relative amplification below which the note calls it negligible


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
    add_value_only(parser)


def _closed_form_reason(eps0: float, n: int, delta: float, bound: str) -> str:
    """Why the closed form (FMT21 Thm 3.1, valid for ε0 ≤ ln(n/(16 ln(c/δ)))) gives no gain."""
    c = 2.0 if bound == "fmt_thm" else 4.0
    thr = threshold(n, delta, bound)
    if thr <= 0:
        need = 16.0 * math.log(c / delta)
        return (f"n = {n} is too small for the closed form, which needs "
                f"n > 16·ln({c:g}/δ) = {round_up(need, 4)}")
    if eps0 > thr:
        return (f"the closed form applies only for ε0 ≤ ln(n/(16·ln({c:g}/δ))) = "
                f"{round_down(thr, 4)}")
    return "the closed form's value is not below ε0 at these inputs"


def no_amplification_note(local: float, central: float, n: int, delta: float,
                          bound: str) -> str | None:
    """A line saying that shuffling does not (or barely) amplify at these inputs, else None."""
    if central >= local:
        reason = ("the numerical bound gives no improvement at these inputs"
                  if bound == "numerical" else _closed_form_reason(local, n, delta, bound))
        return f"no amplification applies: {reason}; the central ε equals the local ε0"
    if central > local * (1.0 - NEGLIGIBLE):
        return "amplification is negligible here: the central ε is within 0.1 % of ε0"
    return None


def main(args: argparse.Namespace) -> int:
    """Print the amplified ε (rounded up), or with --inverse ε0 (rounded down and re-checked)."""
    bound = BOUND_NAMES[args.bound]
    label = BOUND_LABELS[bound]
    if args.inverse:
        if args.eps is None:
            raise ConfigError("--eps is required with --inverse; must be a finite number > 0")
        check_inputs(args.n, args.delta, eps=args.eps)
        eps0 = local_epsilon(args.eps, args.n, args.delta, bound)
        text = verified(eps0, lambda e0: amplified_epsilon(e0, args.n, args.delta, bound)
                        <= args.eps, up=False)
        if args.value_only:
            print(text)
            return 0
        print(line("ε0", text, f"largest per-report local ε0 whose shuffled ε is ≤ ε, rounded "
                   f"down; {label}", {"n": args.n, "ε": args.eps, "δ": args.delta}))
        note = no_amplification_note(eps0, args.eps, args.n, args.delta, bound)
    else:
        if args.eps0 is None:
            raise ConfigError("--eps0 is required (or use --inverse --eps E)")
        eps = amplified_epsilon(args.eps0, args.n, args.delta, bound)
        text = round_up(eps)
        if args.value_only:
            print(text)
            return 0
        print(line("ε", text, f"central ε of the shuffled reports, rounded up; {label}",
                   {"n": args.n, "ε0": args.eps0, "δ": args.delta}))
        note = no_amplification_note(args.eps0, eps, args.n, args.delta, bound)
    if note:
        print(note)
    return 0
