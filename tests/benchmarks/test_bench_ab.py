"""The A/B benchmark picks the named shard, cut to the asked trials, and rejects unknown names."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
from bench_ab import shard_spec  # noqa: E402


def test_the_named_entry_with_its_first_trials() -> None:
    spec = shard_spec("glm_table2", "Private-GLM (strict)", 6.0, 2)
    assert (spec["algorithm"], spec["epsilon"], spec["trials"]) == ("Private-GLM (strict)",
                                                                     6.0, [0, 1])


@pytest.mark.parametrize(("args", "named"), [
    (("no_such_experiment", "GLOC", None), "experiment = 'no_such_experiment'"),
    (("glm_table2", "No-Such-Algorithm", None), "algorithm = 'No-Such-Algorithm'"),
    (("glm_table2", "Private-GLM", 3.5), "epsilon = 3.5"),
])
def test_an_unknown_entry_is_one_line_naming_it(args: tuple[str, str, float | None],
                                                 named: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        shard_spec(*args, trials=1)
    message = str(exit_info.value.code)
    assert named in message and "\n" not in message
