"""Config values that would harm a run are refused at validation with one line: output folders
outside the working directory or on system folders, duplicate ε, oversized instances, YAML
errors without a position; an overlay can append to an experiment's algorithm list."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
import yaml

from dpbandits.aggregate import aggregate
from dpbandits.config import (
    all_shards,
    configfile_error,
    configfiles_in,
    load_config,
    validate_config,
)
from dpbandits.errors import ConfigError
from dpbandits.simulate import run_shard
from dpbandits.storage import write_shard

from conftest import REPO, run_snakemake
from helpers import small_spec

SMOKE = REPO / "config" / "smoke.yaml"


def overlay(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "overlay.yaml"
    path.write_text(f"base: {SMOKE}\n{text}")
    return path


@pytest.mark.parametrize("folder", ["", " ", ".", "/", "/etc", "/usr/share/x", "/tmp", "/home",
                                    "../outside", "results/../../outside", "README.md"])
@pytest.mark.parametrize("key", ["results", "paper"])
def test_output_folders_that_could_hit_the_disk_are_refused(folder, key, monkeypatch):
    monkeypatch.chdir(REPO)  # README.md: an existing file of the working directory
    config = load_config(SMOKE)
    config[key] = folder
    with pytest.raises(ConfigError) as info:
        validate_config(config)
    message = str(info.value)
    assert message.startswith(f"config error at {key}: {folder!r} is not allowed")
    assert "must be a folder inside the working directory" in message and "\n" not in message


@pytest.mark.parametrize("folder", ["results/mine", "out", "/tmp/dpb-results/x"])
def test_ordinary_output_folders_are_accepted(folder, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    config = load_config(SMOKE)
    config["results"] = folder
    assert validate_config(config)["results"] == folder


def test_an_absolute_folder_under_the_working_directory_is_accepted(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load_config(SMOKE)
    config["results"] = str(tmp_path / "results")
    validate_config(config)


def test_duplicate_epsilons_are_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"epsilons: \[4, 4.0\] is not allowed; 4 is listed "
                                          "twice"):
        load_config(overlay(tmp_path, "experiments:\n  glm_table2:\n    epsilons: [4, 4.0]\n"))
    config = load_config(overlay(tmp_path, "experiments:\n  glm_table2:\n    epsilons: [4, 6]\n"))
    assert config["experiments"]["glm_table2"]["epsilons"] == [4, 6]


def test_an_algorithms_own_duplicate_epsilons_are_refused(tmp_path):
    text = ("experiments:\n  glm_table2:\n    algorithms:\n"
            "      - {policy: Private-GLM, epsilons: [4, 4]}\n")
    with pytest.raises(ConfigError, match="algorithms/0/epsilons"):
        load_config(overlay(tmp_path, text))


def test_an_oversized_instance_is_refused_before_any_job(tmp_path):
    text = "experiments:\n  glm_table2:\n    instance: {horizon: 1000000000000}\n"
    config = load_config(overlay(tmp_path, text))  # the schema allows it
    with pytest.raises(ConfigError, match=r"glm_table2/instance .*horizon × K × d = 6e\+13 is "
                                          r"not allowed .*must be at most 1e\+08"):
        all_shards(config)
    config["experiments"]["glm_table2"]["instance"]["horizon"] = 5000  # the paper's: fine
    assert all_shards(config)["glm_table2"]


def test_yaml_errors_name_file_line_and_column(tmp_path):
    path = overlay(tmp_path, "experiments:\n  glm_table2:\n    trials: [3\n    epsilons: 4\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert str(path) in message and "at line 5, column 13:" in message and "\n" not in message


@pytest.mark.parametrize(("argv", "files"), [
    (["snakemake", "--configfile", "a.yaml", "b.yaml", "--cores", "2"], ["a.yaml", "b.yaml"]),
    (["snakemake", "-n", "--configfile=a.yaml", "--configfiles", "c.yaml"], ["a.yaml", "c.yaml"]),
    (["snakemake", "--cores", "2", "paper"], []),
])
def test_the_configfiles_of_a_command_line(argv, files):
    assert configfiles_in(argv) == files


def test_a_configfile_error_names_the_file_that_does_not_parse(tmp_path):
    good = overlay(tmp_path, "trials: 2\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("experiments:\n  glm_table2:\n    trials: [3\n    epsilons: 4\n")
    assert configfile_error(["snakemake", "--configfile", str(good)]) is None
    message = configfile_error(["snakemake", "--configfile", str(good), str(bad)])
    assert message.startswith(f"config file {str(bad)!r} is not valid YAML at line 4, column 13")


@pytest.mark.parametrize("dry", [True, False])
def test_snakemake_names_file_line_and_column_of_a_bad_configfile(tmp_path, dry):
    """Snakemake parses `--configfile` before the workflow and names neither file nor line; the
    run's logger (the default profile's) replaces its message with one line that does."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("experiments:\n  glm_table2:\n    trials: [3\n    epsilons: 4\n")
    proc = run_snakemake(tmp_path, *(["-n"] if dry else ["--cores", "1"]), "--configfile",
                         str(bad))
    output = proc.stdout + proc.stderr
    errors = [line for line in output.splitlines() if "dpbandits: error" in line]
    assert proc.returncode != 0 and len(errors) == 1, output[-2000:]
    assert f"{str(bad)!r} is not valid YAML at line 4, column 13" in errors[0]
    assert "not valid JSON or YAML" not in output


def test_an_overlay_appends_to_the_algorithm_list(tmp_path):
    text = ("experiments:\n  glm_table2:\n    algorithms+:\n"
            "      - {label: mine, policy: LinUCB, params: {alpha: 0.5}}\n")
    added = load_config(overlay(tmp_path, text))["experiments"]["glm_table2"]["algorithms"]
    shipped = load_config(SMOKE)["experiments"]["glm_table2"]["algorithms"]
    assert added[:-1] == shipped and len(shipped) > 1
    assert (added[-1]["label"], added[-1]["params"]) == ("mine", {"alpha": 0.5})
    replaced = load_config(overlay(tmp_path, text.replace("algorithms+", "algorithms")))
    assert [a["label"] for a in replaced["experiments"]["glm_table2"]["algorithms"]] == ["mine"]


def test_an_append_onto_an_extended_experiment_keeps_the_parents_list(tmp_path):
    text = ("experiments:\n  mine:\n    extends: glm_table2\n    algorithms+:\n"
            "      - {label: mine, policy: LinUCB}\n")
    config = load_config(overlay(tmp_path, text))
    labels = [a.get("label") for a in config["experiments"]["mine"]["algorithms"]]
    parent = [a.get("label") for a in config["experiments"]["glm_table2"]["algorithms"]]
    assert labels == [*parent, "mine"]


def test_appending_a_non_list_is_one_line(tmp_path):
    text = "experiments:\n  glm_table2:\n    algorithms+: {policy: LinUCB}\n"
    with pytest.raises(ConfigError, match="experiments/glm_table2/algorithms\\+: .* appends a "
                                          "list"):
        load_config(overlay(tmp_path, text))


def test_non_private_rows_say_none_for_accounting(tmp_path):
    private = small_spec(algorithm="Private-GLM", policy="Private-GLM", epsilon=4.0,
                         accounting="paper")
    paths = []
    for name, spec in (("uniform", small_spec()), ("private", private)):
        paths.append(tmp_path / f"{name}.h5")
        write_shard(paths[-1], run_shard(spec))
    aggregate(paths, tmp_path / "summary.csv", tmp_path / "curves.h5")
    summary = pd.read_csv(tmp_path / "summary.csv", keep_default_na=False)
    labels = summary.groupby("algorithm")["accounting"].unique().to_dict()
    assert list(labels["Uniform"]) == ["none"] and list(labels["Private-GLM"]) == ["paper"]


def test_shipped_configs_pass_the_guards():
    for path in [SMOKE, REPO / "config" / "config.yaml",
                 *sorted((REPO / "config" / "examples").glob("*.yaml"))]:
        assert all_shards(load_config(path)), path
    assert yaml.safe_load(SMOKE.read_text())["results"] == "results/smoke"
    assert not os.path.isabs(load_config(SMOKE)["results"])


@pytest.mark.parametrize("folder", ["", "/"])
def test_snakemake_refuses_the_folder_before_planning(tmp_path, folder):
    """The dry run a user starts with: one error line and exit 2, no plan under `/`."""
    config = tmp_path / "overlay.yaml"
    config.write_text(yaml.safe_dump({"base": str(SMOKE), "results": folder}))
    proc = run_snakemake(tmp_path, "-n", "--configfile", str(config))
    errors = [line for line in proc.stderr.splitlines() if "dpbandits: error" in line]
    assert proc.returncode == 2 and len(errors) == 1, proc.stderr[-2000:]
    assert f"config error at results: {folder!r} is not allowed" in errors[0]
    assert "glm_table2" not in proc.stdout
