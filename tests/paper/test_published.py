"""Reading paper/published/*.yaml and paper/claims.yaml: entries, items, experiments, checks."""

from __future__ import annotations

import pytest
import yaml

from dpbandits.errors import ConfigError
from dpbandits.paper.published import (
    PublishedEntry,
    experiment_for,
    load_claims_file,
    load_published,
    published_entry,
    published_files,
    published_items,
    validate_claim,
)

from conftest import REPO


def test_load_published_names_entries_by_family(tmp_path):
    (tmp_path / "b.yaml").write_text(yaml.safe_dump({"t": {"source": "Table 1"}}))
    (tmp_path / "a.yaml").write_text(yaml.safe_dump({"f": {"values": {"X": 1.0}}, "g": {}}))
    published = load_published([tmp_path / "b.yaml", tmp_path / "a.yaml"])
    assert list(published) == ["a:f", "a:g", "b:t"]
    entry = published_entry(published, "b:t")
    assert entry == PublishedEntry("b:t", {"source": "Table 1"}) and entry.source == "Table 1"
    assert published_entry(published, "a:g").source == "a:g"  # no source: the reference
    with pytest.raises(ConfigError, match="'a:nope' is not an entry"):
        published_entry(published, "a:nope")
    (tmp_path / "c.yaml").write_text("- a list\n")
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_published([tmp_path / "c.yaml"])


def test_published_files_of_references(tmp_path):
    assert published_files(["glm:table2", "glm:fig1", "ts:table1"], tmp_path) == \
        [str(tmp_path / "glm.yaml"), str(tmp_path / "ts.yaml")]
    assert published_files([], tmp_path) == []


def test_repository_published_files_load():
    published = load_published((REPO / "paper" / "published").glob("*.yaml"))
    assert {"glm:table2", "linear:fig2", "ts:table1", "realdata:ts_movielens"} <= set(published)


def test_published_items_skip_settings_and_text():
    entry = {"source": "Sec. 5", "horizon": 10000, "summary": "k = 1: 80.4%",
             "values": {"A": {1: 2.0}}, "claims": [{"text": "x"}],
             "rows": {1: {"rho": 0.45, "np": 80.4}}, "p_values": {"TS − UCB": {1: {"p": "<0.01"}}},
             "sigma": {"note": "σ_amp < σ_base", "alpha_star": {1: 16}}}
    assert published_items(entry) == [("rows/1/rho", "0.45"), ("rows/1/np", "80.4"),
                                      ("p_values/TS − UCB/1/p", "<0.01"),
                                      ("sigma/alpha_star/1", "16")]


def test_experiment_for_prefers_explicit_then_outputs_then_names():
    config = {"experiments": {"glm_table2": {"outputs": []},
                              "x": {"outputs": [{"kind": "k", "published": "glm:table2"}]},
                              "ts_jester": {"outputs": []}}}
    assert experiment_for("glm:table2", {"experiment": "y"}, config) == "y"
    assert experiment_for("glm:table2", {}, config) == "x"
    assert experiment_for("realdata:ts_jester", {}, config) == "ts_jester"
    assert experiment_for("glm:fig1", {}, config) is None


def claim(**overrides) -> dict:
    base = {"id": "c1", "paper": "glm", "text": "A below B", "experiment": "unit",
            "horizon": 1000, "comparison": {"kind": "less", "a": {"algorithm": "A"},
                                            "b": {"algorithm": "B"}}}
    return validate_claim({**base, **overrides}, 0)


@pytest.mark.parametrize(
    "override,needle",
    [
        ({"comparison": {"kind": "bigger"}}, "kind 'bigger' is not allowed"),
        ({"comparison": {"kind": "less", "a": {}}}, "lacks 'b'"),
        ({"test": "z_test"}, "test 'z_test' is not allowed"),
        ({"alpha": 0.7}, "alpha 0.7 is not allowed"),
    ],
)
def test_bad_claims_fail_with_one_line(override, needle):
    with pytest.raises(ConfigError, match=needle) as info:
        claim(**override)
    assert "\n" not in str(info.value)


def test_missing_key_and_duplicate_ids(tmp_path):
    with pytest.raises(ConfigError, match="lacks 'horizon'"):
        validate_claim({"id": "x", "paper": "glm", "text": "t", "experiment": "e",
                        "comparison": {}}, 3)
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump({"claims": [claim(), claim()]}))
    with pytest.raises(ConfigError, match="repeated: c1"):
        load_claims_file(path)


def test_repository_claims_file_is_valid():
    data = load_claims_file(REPO / "paper" / "claims.yaml")
    assert len(data["claims"]) >= 20
    assert {c["paper"] for c in data["claims"]} == {"glm", "linear", "ts"}
