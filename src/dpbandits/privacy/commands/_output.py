"""Output of the privacy calculators: rounding in the safe direction and labelled lines.

Every printed number is rounded so that using it as printed never weakens the guarantee:
noise (σ, scales, multipliers) and privacy costs reported for given noise are rounded up,
budgets a user may spend (a target ρ, a per-report ε0) are rounded down.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

SIGNIFICANT = 6
MAX_STEPS = 1000


def _text(number: Decimal, digits: int) -> str:
    """A decimal with at most `digits` significant digits as text, without trailing zeros."""
    text = format(number, f".{digits}g")
    if "." in text:  # 100.000 → 100, 0.500000 → 0.5
        mantissa, _, exponent = text.partition("e")
        text = mantissa.rstrip("0").rstrip(".") + ("e" + exponent if exponent else "")
    return text


def _directed(value: float, digits: int, rounding: str) -> str:
    """Decimal text of `value` at `digits` significant digits, rounded toward ±∞."""
    exact = Decimal(float(value))  # the double's exact binary value, no rounding yet
    if not exact.is_finite() or exact == 0:
        return format(float(value), "g")
    quantum = Decimal(1).scaleb(exact.adjusted() - digits + 1)
    return _text(exact.quantize(quantum, rounding=rounding), digits)


def round_up(value: float, digits: int = SIGNIFICANT) -> str:
    """Smallest decimal with `digits` significant digits that is ≥ value, as text."""
    return _directed(value, digits, ROUND_CEILING)


def round_down(value: float, digits: int = SIGNIFICANT) -> str:
    """Largest decimal with `digits` significant digits that is ≤ value, as text."""
    return _directed(value, digits, ROUND_FLOOR)


def _step(text: str, direction: int, digits: int) -> str:
    """The neighbour of `text` one unit in its `digits`-th significant digit up (+1) or down."""
    exact = Decimal(text)
    quantum = Decimal(1).scaleb(exact.adjusted() - digits + 1)
    return _text(exact + direction * quantum, digits + 1)


def verified(value: float, ok: Callable[[float], bool], *, up: bool,
             digits: int = SIGNIFICANT) -> str:
    """Round up (noise) or down (budget), then step on until the printed value passes `ok`."""
    text = round_up(value, digits) if up else round_down(value, digits)
    for _ in range(MAX_STEPS):
        if ok(float(text)):
            return text
        text = _step(text, 1 if up else -1, digits)
    raise RuntimeError(f"no {digits}-digit value near {value!r} meets the target")


def significant_digits(value: float) -> int:
    """Number of significant digits in the shortest text that reads back as `value`."""
    mantissa = repr(float(value)).split("e")[0].replace("-", "").replace(".", "")
    return max(1, len(mantissa.strip("0")))


def show(value: float | int | str) -> str:
    """An input as the user would write it: 1000, 1, 0.5, 1e-5."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) or float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    text = repr(float(value))
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}e{int(exponent)}"
    return text


def line(symbol: str, value: str, bound: str, inputs: dict[str, float | int | str]) -> str:
    """`symbol = value  (bound; name = input, ...)`: one labelled result line."""
    given = ", ".join(f"{name} = {show(v)}" for name, v in inputs.items())
    return f"{symbol} = {value}  ({bound}; {given})"


def add_value_only(parser: argparse.ArgumentParser) -> None:
    """The --value-only flag: print only the main number (still safely rounded), for scripts."""
    parser.add_argument("--value-only", action="store_true",
                        help="print only the number (rounded in the safe direction)")
