"""The `privacy shuffle` CLI plug-in (forward, inverse, bounds, bad input)."""

from __future__ import annotations

import argparse

import pytest

from dpbandits.errors import ConfigError
from dpbandits.privacy.commands import shuffle


def run(argv: list[str], capsys) -> str:
    parser = argparse.ArgumentParser()
    shuffle.add_arguments(parser)
    assert shuffle.main(parser.parse_args(argv)) == 0
    return capsys.readouterr().out.strip()


def test_forward_and_inverse(capsys) -> None:
    assert shuffle.NAME == "shuffle"
    out = run(["--eps0", "4", "--n", "100000", "--delta", "1e-6"], capsys)
    assert float(out) == pytest.approx(0.534634, abs=1e-6)
    out = run(["--inverse", "--eps", "1", "--n", "10000", "--delta", "1e-6"], capsys)
    assert float(out) == pytest.approx(3.503714, abs=1e-6)
    ref = ["--eps0", "1", "--n", "1000", "--delta", "1e-5", "--bound", "closed-form-ref"]
    assert float(run(ref, capsys)) == pytest.approx(0.608836, abs=1e-6)
    fmt = run(["--eps0", "1", "--n", "10000", "--delta", "1e-6", "--bound", "fmt"], capsys)
    assert 0.0528 < float(fmt) < 0.0536


def test_bad_input(capsys) -> None:
    parser = argparse.ArgumentParser()
    shuffle.add_arguments(parser)
    for argv in (
        ["--eps0", "-1", "--n", "10", "--delta", "1e-6"],
        ["--eps0", "1", "--n", "0", "--delta", "1e-6"],
        ["--eps0", "1", "--n", "10", "--delta", "2"],
        ["--inverse", "--n", "10", "--delta", "1e-6"],
    ):
        with pytest.raises(ConfigError):
            shuffle.main(parser.parse_args(argv))
