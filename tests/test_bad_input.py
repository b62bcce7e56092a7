"""Bad input anywhere — shard spec keys, config keys, CLI flags, paths — gives exactly one clear
error line on stderr, a non-zero exit code, and no output file."""

from __future__ import annotations

import copy
import json
import math
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from dpbandits.cli import main

from conftest import BIN, REPO
from helpers import small_spec

Mutation = Callable[[dict[str, Any]], None]


def setter(*path: str, value: Any) -> Mutation:
    def mutate(spec: dict[str, Any]) -> None:
        target = spec
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


def deleter(*path: str) -> Mutation:
    def mutate(spec: dict[str, Any]) -> None:
        target = spec
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return mutate


def private(policy: str = "Private-GLM", **extra: Any) -> Mutation:
    def mutate(spec: dict[str, Any]) -> None:
        spec.update(policy=policy, algorithm=policy, epsilon=1.0, **extra)

    return mutate


def pool(spec: dict[str, Any]) -> None:
    spec["instance"] = {"generator": "logistic_pool", "d": 3, "n_arms": 8, "K": 3,
                        "horizon": 30, "seed": 1}


def both(*mutations: Mutation) -> Mutation:
    def mutate(spec: dict[str, Any]) -> None:
        for m in mutations:
            m(spec)

    return mutate


NAN, INF = float("nan"), float("inf")

# (case id, mutation of a valid shard spec, text the one error line must contain)
SPEC_CASES: list[tuple[str, Mutation, str]] = [
    ("epsilon negative", both(private(), setter("epsilon", value=-1.0)), "epsilon = -1.0"),
    ("epsilon zero", both(private(), setter("epsilon", value=0)), "epsilon = 0"),
    ("epsilon NaN", both(private(), setter("epsilon", value=NAN)), "epsilon = nan"),
    ("epsilon inf", both(private(), setter("epsilon", value=INF)), "epsilon = inf"),
    ("epsilon string", both(private(), setter("epsilon", value="one")), "epsilon = 'one'"),
    ("epsilon bool", both(private(), setter("epsilon", value=True)), "epsilon = True"),
    ("epsilon missing for private", both(private(), setter("epsilon", value=None)),
     "needs an epsilon"),
    ("epsilon huge", both(private(), setter("epsilon", value=1e308)), "1e+308"),
    ("delta zero", both(private(), setter("delta", value=0.0)), "delta = 0.0"),
    ("delta one", both(private(), setter("delta", value=1.0)), "delta = 1.0"),
    ("delta negative", setter("delta", value=-0.5), "delta = -0.5"),
    ("delta NaN", setter("delta", value=NAN), "delta = nan"),
    ("delta string", setter("delta", value="small"), "delta = 'small'"),
    ("trials empty", setter("trials", value=[]), "trials = []"),
    ("trials negative", setter("trials", value=[-1]), "trials = [-1]"),
    ("trials string", setter("trials", value="0"), "trials = '0'"),
    ("trials float", setter("trials", value=[0.5]), "trials = [0.5]"),
    ("trials bool", setter("trials", value=[True]), "trials = [True]"),
    ("seed negative", setter("seed", value=-1), "seed = -1"),
    ("seed string", setter("seed", value="x"), "seed = 'x'"),
    ("seed float", setter("seed", value=1.5), "seed = 1.5"),
    ("seed bool", setter("seed", value=True), "seed = True"),
    ("accounting unknown", setter("accounting", value="loose"), "accounting = 'loose'"),
    ("accounting number", setter("accounting", value=3), "accounting = 3"),
    ("policy unknown", setter("policy", value="NoSuchPolicy"), "'NoSuchPolicy'"),
    ("params not a mapping", setter("params", value=[1]), "params = [1]"),
    ("param unknown", setter("params", value={"bogus": 1}), "bogus"),
    ("param B zero", both(pool, private("AdaPrivate-TS"), setter("params", value={"B": 0})),
     "B = 0"),
    ("param B string", both(pool, private("AdaPrivate-TS"),
                            setter("params", value={"B": "ten"})), "B = 'ten'"),
    ("param v negative", both(pool, private("AdaPrivate-TS"),
                              setter("params", value={"v": -1.0})), "v = -1.0"),
    ("param q above one", both(pool, private("AdaPrivate-TS-Amp"),
                               setter("params", value={"q": 1.5})), "q = 1.5"),
    ("spec key unknown", setter("colour", value="red"), "colour"),
    ("spec key missing", deleter("instance"), "instance"),
    ("instance not a mapping", setter("instance", value="glm"), "instance = 'glm'"),
    ("generator missing", deleter("instance", "generator"), "generator"),
    ("generator unknown", setter("instance", "generator", value="nope"), "'nope'"),
    ("instance key unknown", setter("instance", "colour", value=1), "colour"),
    ("instance key missing", deleter("instance", "S"), "S"),
    ("d zero", setter("instance", "d", value=0), "d = 0"),
    ("d negative", setter("instance", "d", value=-3), "d = -3"),
    ("d float", setter("instance", "d", value=2.5), "d = 2.5"),
    ("d string", setter("instance", "d", value="3"), "d = '3'"),
    ("K zero", setter("instance", "K", value=0), "K = 0"),
    ("S negative", setter("instance", "S", value=-1.0), "S = -1.0"),
    ("S NaN", setter("instance", "S", value=NAN), "S = nan"),
    ("S huge", setter("instance", "S", value=1e308), "S = 1e+308"),
    ("S string", setter("instance", "S", value="2"), "S = '2'"),
    ("horizon zero", setter("instance", "horizon", value=0), "horizon = 0"),
    ("family unknown", setter("instance", "family", value="poisson"), "'poisson'"),
    ("instance seed negative", setter("instance", "seed", value=-1), "seed = -1"),
    ("horizon huge", setter("instance", "horizon", value=10**12), "horizon"),
    ("K huge", setter("instance", "K", value=10**9), "K"),
]
SPEC_PARAMS = [pytest.param(*case, id=case[0]) for case in SPEC_CASES]


def run_cli(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse errors
        code = exc.code
    out, err = capsys.readouterr()
    return int(code), out, err


def assert_one_clear_line(code: int, err: str, text: str, out_file: Path | None) -> None:
    lines = err.strip().splitlines()
    assert code != 0
    assert len(lines) == 1, err
    assert lines[0].startswith("dpbandits") and "error: " in lines[0], lines[0]
    assert text in lines[0], lines[0]
    if out_file is not None:
        assert not out_file.exists()
        assert not list(out_file.parent.glob(f".{out_file.name}*")) if out_file.parent.exists() \
            else True


@pytest.mark.parametrize("case, mutate, text", SPEC_PARAMS)
def test_bad_shard_spec(
    tmp_path: Path, capsys: pytest.CaptureFixture, recwarn: pytest.WarningsRecorder,
    case: str, mutate: Mutation, text: str,
) -> None:
    spec = copy.deepcopy(small_spec())
    mutate(spec)
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(spec))
    out = tmp_path / "out" / "shard.h5"
    out.parent.mkdir()
    code, _, err = run_cli(["run", "--spec", str(spec_file), "--out", str(out)], capsys)
    assert code == 2
    assert_one_clear_line(code, err, text, out)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def _valid_spec_file(tmp_path: Path) -> Path:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(small_spec()))
    return path


def _unwritable_folder(tmp_path: Path) -> Path:
    """A folder this process cannot create files in (a read-only mode, or /sys for root)."""
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    probe = folder / "probe"
    try:
        probe.write_text("")
    except OSError:
        return folder
    probe.unlink()
    return Path("/sys")


FLAG_CASES = [
    ("out not .h5", lambda p: ["run", "--spec", str(_valid_spec_file(p)), "--out",
                               str(p / "o.txt")], "ending in .h5"),
    ("out folder is a file", lambda p: ["run", "--spec", str(_valid_spec_file(p)), "--out",
                                        str(_valid_spec_file(p) / "o.h5")], "does not exist"),
    ("out folder missing", lambda p: ["run", "--spec", str(_valid_spec_file(p)), "--out",
                                      str(p / "no_such_dir" / "o.h5")], "does not exist"),
    ("out folder unwritable", lambda p: ["run", "--spec", str(_valid_spec_file(p)), "--out",
                                         str(_unwritable_folder(p) / "o.h5")], "not writable"),
    ("spec file missing", lambda p: ["run", "--spec", str(p / "nope.json"), "--out",
                                     str(p / "o.h5")], "nope.json"),
    ("spec not JSON", lambda p: ["run", "--spec", str(_text(p, "{not json")), "--out",
                                 str(p / "o.h5")], "not valid JSON"),
    ("spec JSON list", lambda p: ["run", "--spec", str(_text(p, "[1, 2]")), "--out",
                                  str(p / "o.h5")], "must be a mapping"),
    ("spec missing key", lambda p: ["run", "--spec", str(_text(p, "{}")), "--out",
                                    str(p / "o.h5")], "is missing key(s): experiment"),
    ("config missing", lambda p: ["run", "--shard", "x.h5", "--config", str(p / "c.yaml"),
                                  "--out", str(p / "o.h5")], "c.yaml"),
    ("shard unknown", lambda p: ["run", "--shard", "x.h5", "--config",
                                 str(REPO / "config" / "smoke.yaml"), "--out",
                                 str(p / "o.h5")], "'x.h5'"),
    ("flag unknown", lambda p: ["run", "--spec", "s.json", "--out", str(p / "o.h5"), "--fast"],
     "unrecognized arguments: --fast"),
    ("out missing", lambda p: ["run", "--spec", str(_valid_spec_file(p))], "--out"),
    ("spec and shard", lambda p: ["run", "--spec", "s.json", "--shard", "x.h5", "--out",
                                  str(p / "o.h5")], "not allowed with argument"),
    ("command unknown", lambda p: ["fly"], "invalid choice: 'fly'"),
    ("inspect missing file", lambda p: ["inspect", str(p / "o.h5")], "does not exist"),
    ("list unknown", lambda p: ["list", "planets"], "invalid choice: 'planets'"),
]


def _text(folder: Path, text: str) -> Path:
    path = folder / "given.json"
    path.write_text(text)
    return path


@pytest.mark.parametrize("case, argv, text", FLAG_CASES, ids=[c[0] for c in FLAG_CASES])
def test_bad_flags_and_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture, case: str,
    argv: Callable[[Path], list[str]], text: str,
) -> None:
    code, out, err = run_cli(argv(tmp_path), capsys)
    assert code == 2
    assert_one_clear_line(code, err, text, tmp_path / "o.h5")


def base_config() -> dict[str, Any]:
    return {
        "results": "results",
        "paper": "paper",
        "experiments": {
            "tiny": {
                "instance": {"generator": "glm_ball", "family": "probit", "d": 2, "K": 3,
                             "S": 2.0, "horizon": 20, "seed": 1},
                "algorithms": [{"label": "U", "policy": "Uniform"},
                               {"label": "P", "policy": "Private-GLM"}],
                "epsilons": [1.0],
                "delta": 0.02,
                "trials": 2,
            }
        },
    }


def cfg(*path: str, value: Any = None, delete: bool = False) -> Callable[[dict], None]:
    def mutate(config: dict[str, Any]) -> None:
        target = config
        for key in path[:-1]:
            target = target[key]
        if delete:
            del target[path[-1]]
        else:
            target[path[-1]] = value

    return mutate


EXP = ("experiments", "tiny")
CONFIG_CASES = [
    ("trials zero", cfg(*EXP, "trials", value=0), "trials"),
    ("trials negative", cfg(*EXP, "trials", value=-1), "trials"),
    ("trials string", cfg(*EXP, "trials", value="ten"), "trials"),
    ("trials_per_shard zero", cfg(*EXP, "trials_per_shard", value=0), "trials_per_shard"),
    ("epsilon negative", cfg(*EXP, "epsilons", value=[-1.0]), "epsilons"),
    ("epsilon NaN", cfg(*EXP, "epsilons", value=[math.nan]), "epsilons"),
    ("epsilons missing for private", cfg(*EXP, "epsilons", delete=True), "epsilon"),
    ("delta above one", cfg(*EXP, "delta", value=2.0), "delta"),
    ("delta string", cfg(*EXP, "delta", value="tiny"), "delta"),
    ("top key unknown", cfg("colour", value="red"), "colour"),
    ("experiment key unknown", cfg(*EXP, "colour", value="red"), "colour"),
    ("experiments missing", cfg("experiments", delete=True), "experiments"),
    ("experiment name bad", lambda c: c["experiments"].update({"bad name": c["experiments"]
                                                               .pop("tiny")}), "bad name"),
    ("policy unknown", cfg(*EXP, "algorithms", value=[{"policy": "Nope"}]), "'Nope'"),
    ("algorithm key unknown", cfg(*EXP, "algorithms", value=[{"policy": "Uniform", "x": 1}]),
     "x"),
    ("accounting unknown", cfg(*EXP, "algorithms",
                               value=[{"policy": "Private-GLM", "accounting": "loose"}]),
     "loose"),
    ("code state of the initial commit with strict accounting",
     cfg(*EXP, "algorithms", value=[{"policy": "Private-GLM", "accounting": "strict",
                                     "params": {"code_state": "ab8fd16"}}]),
     "code_state = 'ab8fd16' is not allowed with accounting = strict; allowed only with "
     "accounting = paper"),
    ("algorithm epsilons outside the grid",
     cfg(*EXP, "algorithms", value=[{"policy": "Private-GLM", "accounting": "paper",
                                     "epsilons": [7.5]}]),
     "epsilons = [7.5] is not allowed"),
    ("instance d zero", cfg(*EXP, "instance", "d", value=0), "d"),
    ("instance S negative", cfg(*EXP, "instance", "S", value=-2.0), "S"),
    ("instance generator missing", cfg(*EXP, "instance", "generator", delete=True),
     "generator"),
    ("instance grid empty", cfg(*EXP, "instance_grid", value={"S": []}), "S"),
    ("group unknown", cfg(*EXP, "group", value="fictional"), "fictional"),
]


@pytest.mark.parametrize("case, mutate, text", CONFIG_CASES, ids=[c[0] for c in CONFIG_CASES])
def test_bad_config(
    tmp_path: Path, capsys: pytest.CaptureFixture, case: str, mutate: Callable[[dict], None],
    text: str,
) -> None:
    config = base_config()
    mutate(config)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    out = tmp_path / "o.h5"
    code, _, err = run_cli(["run", "--shard", "tiny/shards/U/eps~none/inst~0/seeds~0-0.h5",
                            "--config", str(path), "--out", str(out)], capsys)
    assert code == 2
    assert_one_clear_line(code, err, text, out)


def test_valid_inputs_of_the_tables_do_run(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The unmodified spec and config of the tables are accepted (so each case tests its key)."""
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(base_config()))
    out = tmp_path / "o.h5"
    code, _, err = run_cli(["run", "--shard", "tiny/shards/U/eps~none/inst~0/seeds~0-0.h5",
                            "--config", str(path), "--out", str(out)], capsys)
    assert code == 0, err
    assert out.is_file()
    spec_out = tmp_path / "spec.h5"
    code, _, err = run_cli(["run", "--spec", str(_valid_spec_file(tmp_path)), "--out",
                            str(spec_out)], capsys)
    assert code == 0, err
    for mutate in (pool, private("AdaPrivate-TS")):
        spec = small_spec()
        mutate(spec)
        (tmp_path / "p.json").write_text(json.dumps(spec))
        code, _, err = run_cli(["run", "--spec", str(tmp_path / "p.json"), "--out",
                                str(tmp_path / "p.h5")], capsys)
        assert code == 0, err


@pytest.mark.parametrize("argv, text", [
    (["run", "--spec", "-", "--out", "{tmp}/o.h5"], "not valid JSON"),
    (["run", "--spec", "{tmp}/missing.json", "--out", "{tmp}/o.h5"], "missing.json"),
])
def test_real_process_prints_one_line_and_exits_two(tmp_path: Path, argv: list[str],
                                                     text: str) -> None:
    """The same, end to end in a fresh process (no pytest capturing or warning filters)."""
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    proc = subprocess.run([str(BIN / "dpbandits"), *args], input="{oops", capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONWARNINGS": "default"})
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and text in lines[0]
    assert not (tmp_path / "o.h5").exists()
