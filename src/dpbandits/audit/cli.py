"""`dpbandits audit <name> [--eps E --delta D]`: empirical ε lower bound next to the claim;
`dpbandits audit --release-checks` and `dpbandits audit --mutations`: the white-box release
checks and the mutation harness (docs/audits.md).

Prints the same as a row of the audit table: the claim, the lower bound with its
Clopper–Pearson interval, the runs and the verdict. Exit 1 when an honest strict audit exceeds
its claim or a control (noise scale < 1) is missed, else 0 (docs/audits.md).
"""

from __future__ import annotations

import argparse
import math
import sys

from dpbandits.errors import ConfigError

ACCOUNTING_MODES = ("strict", "paper")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of the audit command (the name `list` prints the available audits)."""
    parser.add_argument("name", nargs="?", default=None,
                        help="mechanism or policy audit (e.g. Private-GLM@context-d2), or 'list'")
    parser.add_argument("--release-checks", action="store_true",
                        help="white-box release checks of every checked policy instead "
                             "(docs/audits.md, \"Release checks\")")
    parser.add_argument("--mutations", action="store_true",
                        help="the mutation harness instead: every weakening of the catalogue, "
                             "one at a time; exit 1 if one is not caught")
    parser.add_argument("--out", default=None,
                        help="--mutations: also write the results as JSON to this path")
    parser.add_argument("--eps", type=float, default=None,
                        help="claimed ε (> 0; default: the audit's point)")
    parser.add_argument("--delta", type=float, default=None,
                        help="claimed δ in [0, 1) (default: the audit's point)")
    parser.add_argument("--runs", type=int, default=None, help="runs per neighbouring input")
    parser.add_argument("--seed", type=int, default=0, help="root seed (>= 0)")
    parser.add_argument("--confidence", type=float, default=0.95,
                        help="confidence level of the lower bound (default 0.95)")
    parser.add_argument("--accounting", choices=ACCOUNTING_MODES, default="strict",
                        help="accounting mode of a private algorithm (default strict)")
    parser.add_argument("--noise-scale", type=float, default=1.0,
                        help="multiply the calibrated noise; < 1 makes the run a control that "
                             "the audit must catch")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="audit option, e.g. n=50 for shuffle-laplace (repeatable)")


def _options(items: list[str]) -> dict[str, int | float | str]:
    """KEY=VALUE strings → a dict with int, float or string values."""
    out: dict[str, int | float | str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--option {item!r} is not allowed; must be KEY=VALUE")
        for cast in (int, float):
            try:
                out[key] = cast(value)
                break
            except ValueError:
                continue
        else:
            out[key] = value
    return out


def main(args: argparse.Namespace) -> int:
    """Run the audit and print its row; exit 1 with one loud line if it fails."""
    if args.release_checks or args.mutations:
        if args.name is not None:
            raise ConfigError(f"audit name {args.name!r} is not allowed with --release-checks "
                              "or --mutations; they take no name")
        return release_checks_main() if args.release_checks else mutations_main(args.out)
    if args.name is None:
        raise ConfigError("audit: a name (or 'list'), --release-checks or --mutations is "
                          "required")
    from dpbandits.audit.registry import available, run_audit

    audits = available()
    if args.name == "list":
        for name, spec in audits.items():
            eps, delta = spec.point
            print(f"{name}\t{spec.kind}\t{spec.default_runs}\t(ε, δ) = ({eps:g}, {delta:g})\t"
                  f"{spec.description}")
        return 0
    result = run_audit(
        args.name,
        args.eps,
        args.delta,
        runs=args.runs,
        seed=args.seed,
        confidence=args.confidence,
        accounting=args.accounting,
        noise_scale=args.noise_scale,
        **_options(args.option),
    )
    print(result.summary())
    print(f"  pair: {result.pair}; statistic: {result.statistic}; {result.seconds:.1f}s")
    extra = [f"{key} = {value:.3g}" for key, value in sorted(result.info.items())
             if isinstance(value, float) and not math.isnan(value)]
    if extra:
        print("  " + ", ".join(extra))
    verdict = result.verdict
    claim = f"empirical ε ≥ {result.bound.epsilon_lb:.4g} vs claimed ε = " \
            f"{result.claimed_epsilon:.4g} at {100 * result.bound.confidence:g}% confidence"
    if verdict == "EXCEEDS CLAIM":
        print(f"PRIVACY AUDIT FAILED: {result.name} [{result.accounting}] leaks more than "
              f"claimed: {claim}", file=sys.stderr)
        return 1
    if verdict == "control MISSED":
        print(f"AUDIT CONTROL MISSED: {result.name} [{result.accounting}, noise "
              f"×{result.noise_scale:g}] was not caught: {claim}", file=sys.stderr)
        return 1
    messages = {
        "ok": "OK: the empirical lower bound does not exceed the claimed ε",
        "inconclusive": "INCONCLUSIVE: nothing observed differs between the inputs, or the "
                        "runs are too few for any outcome to exceed the claim",
        "flagged (paper)": "FLAGGED (paper accounting): the authors' code leaks more than its "
                           "claimed ε",
        "control caught": "CONTROL CAUGHT: the under-noised mechanism exceeds its claim",
    }
    print(messages[verdict])
    return 0


def release_checks_main() -> int:
    """Run the release checks; one line per violation on stderr and exit 1 if any."""
    from dpbandits.audit.mutations import checks_with

    report = checks_with(None)
    print(f"release checks: {', '.join(report.policies)}; {report.pairs} neighbouring pairs, "
          f"{report.releases} releases compared; {len(report.violations)} violation(s)")
    for line in report.violations:
        print(f"RELEASE CHECK FAILED: {line}", file=sys.stderr)
    return 1 if report.violations else 0


def mutations_main(out: str | None) -> int:
    """Run the mutation harness; print the score and coverage; exit 1 if one survives."""
    from dpbandits.audit.mutations import coverage_lines, run_mutations, write_results

    results = run_mutations()
    if out is not None:
        write_results(out, results)
    print("\n".join(coverage_lines(results)))
    for r in results:
        if r.caught:
            print(f"caught: {r.policy}: {r.weakening}: {r.evidence}")
        else:
            print(f"MUTATION NOT CAUGHT: {r.policy}: {r.weakening}", file=sys.stderr)
    return 0 if all(r.caught for r in results) else 1
