"""`dpbandits audit <name> --eps E --delta D`: empirical ε lower bound next to the claimed ε."""

from __future__ import annotations

import argparse
import sys

from dpbandits.errors import ConfigError

ACCOUNTING_MODES = ("strict", "paper")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of the audit command (the name `list` prints the available audits)."""
    parser.add_argument("name", help="mechanism or private algorithm to audit, or 'list'")
    parser.add_argument("--eps", type=float, help="claimed ε (> 0)")
    parser.add_argument("--delta", type=float, default=None, help="claimed δ in [0, 1)")
    parser.add_argument("--runs", type=int, default=None, help="runs per neighbouring input")
    parser.add_argument("--seed", type=int, default=0, help="root seed (>= 0)")
    parser.add_argument("--confidence", type=float, default=0.95,
                        help="confidence level of the lower bound (default 0.95)")
    parser.add_argument("--accounting", choices=ACCOUNTING_MODES, default="strict",
                        help="accounting mode of a private algorithm (default strict)")
    parser.add_argument("--noise-scale", type=float, default=1.0,
                        help="multiply the calibrated noise (e.g. 0.5 = deliberately under-noised)")


def main(args: argparse.Namespace) -> int:
    """Run the audit, print its bound; exit 1 with a loud message if the claim is refuted."""
    from dpbandits.audit.registry import available, run_audit

    audits = available()
    if args.name == "list":
        for name, spec in audits.items():
            print(f"{name}\t{spec.kind}\t{spec.default_runs}\t{spec.description}")
        return 0
    if args.eps is None:
        raise ConfigError("--eps is required; must be a finite number > 0")
    if args.delta is None:
        raise ConfigError("--delta is required; must be in [0, 1)")
    result = run_audit(
        args.name,
        args.eps,
        args.delta,
        runs=args.runs,
        seed=args.seed,
        confidence=args.confidence,
        accounting=args.accounting,
        noise_scale=args.noise_scale,
    )
    print(result.summary())
    print(f"  pair: {result.pair}; statistic: {result.statistic}; {result.seconds:.1f}s")
    if result.violated:
        print(
            f"PRIVACY AUDIT FAILED: {result.name} [{result.accounting}] leaks more than claimed: "
            f"empirical ε ≥ {result.bound.epsilon_lb:.4g} > claimed ε = "
            f"{result.claimed_epsilon:.4g} at {100 * result.bound.confidence:g}% confidence",
            file=sys.stderr,
        )
        return 1
    print("OK: the empirical lower bound does not exceed the claimed ε")
    return 0
