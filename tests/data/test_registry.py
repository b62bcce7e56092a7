"""The committed archive table and config overrides of its rows."""

import pytest

from dpbandits.data.registry import archive_spec, archives, check_data_config, datasets, stems
from dpbandits.errors import ConfigError

SPEC_SHA256 = {  # an independent copy (docs/realdata.md, "Pinned downloads")
    "ml-25m.zip": "8b21cfb7eb1706b4ec0aac894368d90acf26ebdfb6aced3ebd4ad5bd1eb9c6aa",
    "jester_dataset_2.zip": "5c2b9fb8346fc132ac1be6a9264fef9a6d153da68f3201839ac25c19f9a59a09",
}


def test_table_pins_the_spec_values():
    table = archives()
    for name, sha in SPEC_SHA256.items():
        assert table[name].sha256 == sha
    assert table["ml-25m.zip"].bytes == 261_978_986
    assert table["ml-25m.zip"].urls[0] == \
        "https://files.grouplens.org/datasets/movielens/ml-25m.zip"
    assert table["jester_dataset_2.zip"].bytes is None  # not pinned: computed at verification
    assert all(u.startswith("https://") for s in table.values() for u in s.urls)
    assert datasets()["jester-1"] == [f"jester_dataset_1_{i}.zip" for i in (1, 2, 3)]
    assert stems("ml-25m") == {"ml-25m.zip": "ml-25m"}


def test_overrides_replace_urls_and_checksum():
    sha = "ab" * 32
    spec = archive_spec("ml-25m.zip", {"files": {"ml-25m.zip": {"sha256": sha,
                                                                "urls": ["file:///x.zip"]}}})
    assert spec.sha256 == sha and spec.bytes is None and spec.urls == ("file:///x.zip",)
    assert archive_spec("ml-25m.zip").sha256 == SPEC_SHA256["ml-25m.zip"]


@pytest.mark.parametrize("data,needle", [
    ({"rooot": "x"}, "data/rooot"),
    ({"files": {"nope.zip": {}}}, "data/files/nope.zip"),
    ({"files": {"ml-25m.zip": {"sha256": "XYZ"}}}, "sha256"),
    ({"files": {"ml-25m.zip": {"bytes": 0}}}, "bytes"),
    ({"timeout": -1}, "data/timeout"),
    ({"svd": {"center": "median"}}, "data/svd/center"),
])
def test_bad_data_config_is_one_clear_error(data, needle):
    with pytest.raises(ConfigError, match=needle.replace("/", "/")):
        check_data_config(data)
