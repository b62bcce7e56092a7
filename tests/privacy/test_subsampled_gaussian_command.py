"""The `privacy subsampled-gaussian` CLI plug-in: σ for (q, ε, δ), bad input."""

from __future__ import annotations

import pytest

from dpbandits.cli import main as cli_main
from dpbandits.privacy.commands import subsampled_gaussian


def test_prints_sigma(capsys) -> None:
    assert subsampled_gaussian.NAME == "subsampled-gaussian"
    argv = ["privacy", "subsampled-gaussian", "--q", "0.3", "--eps", "1", "--delta", "1e-5"]
    assert cli_main(argv) == 0
    assert float(capsys.readouterr().out) == pytest.approx(2.593, abs=1e-3)
    assert cli_main([*argv[:-2], "--delta", "1e-5", "-v"]) == 0
    assert capsys.readouterr().out.strip().endswith("alpha*=16")
    assert cli_main([*argv, "--relation", "replace_one"]) == 0
    assert float(capsys.readouterr().out) > 2.593


@pytest.mark.parametrize("q, eps, delta", [("0", "1", "1e-5"), ("1.2", "1", "1e-5"),
                                           ("0.3", "0", "1e-5"), ("0.3", "1", "1"),
                                           ("0.3", "0.1", "1e-5")])
def test_bad_input_exit_2_one_line(q: str, eps: str, delta: str, capsys) -> None:
    argv = ["privacy", "subsampled-gaussian", "--q", q, "--eps", eps, "--delta", delta]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dpbandits: error:") and "\n" not in err
