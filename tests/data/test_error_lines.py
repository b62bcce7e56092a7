"""Bad data stops a stage with one line naming the file and what is expected, exit code 1, and
nothing written: a corrupt or truncated archive, a CSV line with the wrong number of fields or an
out-of-range rating, a checksum override with a typo, an exhausted replay."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from rating_fixtures import ml_latest_small_frame, ratings_csv_text, write_movielens_zip

from dpbandits.data import pipeline
from dpbandits.data.files import sha256_of
from dpbandits.data.fitting import parse_fit
from dpbandits.data.online import build_online
from dpbandits.data.ratings import RawRatings, build_log, write_log
from dpbandits.data.registry import check_data_config

from conftest import REPO

SCRIPTS = REPO / "workflow" / "scripts"


def run_stage(capsys, stage, tmp_path, **kwargs) -> str:
    """Run a data stage as its Snakemake script does; its one error line (exit code 1)."""
    with pytest.raises(SystemExit) as exit_info:
        pipeline.run(stage, tmp_path / "stage.log", **kwargs)
    assert exit_info.value.code == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpbandits: error: "), lines
    return lines[0].removeprefix("dpbandits: error: ")


def small_frame():
    return ml_latest_small_frame(n_users=30, n_items=150, n_ratings=900, seed=1)


def test_a_corrupt_member_stops_the_extraction(tmp_path, capsys):
    archive = write_movielens_zip(tmp_path, "ml-latest-small", frame=small_frame())
    data = bytearray(archive.read_bytes())
    start = data.find(b"ml-latest-small/ratings.csv") + len("ml-latest-small/ratings.csv")
    data[start + 50:start + 54] = b"\xff\xff\xff\xff"  # inside the deflate stream
    archive.write_bytes(bytes(data))
    target = tmp_path / "raw" / "ml-latest-small"
    line = run_stage(capsys, pipeline.extract, tmp_path, archive=archive, target=target)
    assert line.startswith(f"{archive}: member 'ml-latest-small/ratings.csv' is corrupt")
    assert not target.exists() and list(target.parent.iterdir()) == []


def test_a_truncated_archive_stops_the_extraction(tmp_path, capsys):
    archive = write_movielens_zip(tmp_path, "ml-latest-small", frame=small_frame())
    archive.write_bytes(archive.read_bytes()[:-200])
    target = tmp_path / "raw" / "ml-latest-small"
    line = run_stage(capsys, pipeline.extract, tmp_path, archive=archive, target=target)
    assert line.startswith(f"{archive}: truncated zip archive") and not target.exists()


@pytest.mark.parametrize("bad,problem", [
    ("7,5,4.0,964982703,1", "has 5 fields; expected 4 fields (userId, movieId, rating, "
                            "timestamp)"),
    ("7,5,4.0", "has 3 fields; expected 4 fields (userId, movieId, rating, timestamp)"),
    ("7,5,6.5,964982703", "has rating 6.5, outside [0.5, 5]; allowed: 0.5 to 5"),
])
def test_a_bad_csv_line_stops_the_parse_with_its_number(tmp_path, capsys, bad, problem):
    text = ratings_csv_text(small_frame()).splitlines()
    text.insert(123, bad)  # line 124 of the file (the header is line 1)
    folder = tmp_path / "raw" / "ml-latest-small"
    folder.mkdir(parents=True)
    (folder / "ratings.csv").write_text("\n".join(text) + "\n")
    output = tmp_path / "ratings.h5"
    line = run_stage(capsys, pipeline.parse, tmp_path, dataset="ml-latest-small",
                     raw_dirs={"ml-latest-small.zip": str(tmp_path / "raw")}, output=output)
    assert line == f"{folder / 'ratings.csv'}: line 124 {problem}"
    assert not output.exists()


def test_a_typo_in_a_checksum_override_is_called_the_override(tmp_path, capsys):
    archive = write_movielens_zip(tmp_path, "ml-latest-small", frame=small_frame())
    digest = sha256_of(archive)
    typo = digest[:-1] + ("0" if digest[-1] != "0" else "1")
    stamp = tmp_path / "ml-latest-small.zip.verified.json"
    data = {"files": {"ml-latest-small.zip": {"sha256": typo}}}
    line = run_stage(capsys, pipeline.verify, tmp_path, file="ml-latest-small.zip",
                     archive=archive, stamp=stamp, data=data)
    assert line.startswith(f"{archive}: sha256 {digest} does not match {typo}, the value of the "
                           "config override data: files: ml-latest-small.zip: sha256")
    assert "the pinned" not in line and not stamp.exists()


AVOIDER = '''
    from dpbandits.policies.uniform import Uniform


    class AvoidLogged(Uniform):
        """Never picks the logged item (it peeks at the log): every replay runs out."""

        name = "AvoidLogged-test"

        def begin(self, env):
            self.env, self.step = env, 0

        def select(self, t, arms):
            self.step += 1
            return (self.env.logged_index(self.step - 1) + 1) % len(arms)
'''


def test_an_exhausted_replay_stops_the_shard_job_in_one_line(tmp_path):
    frame = ml_latest_small_frame(n_users=60, n_items=200, n_ratings=3000, seed=2)
    log = build_log("ml-latest-small", RawRatings(
        user=frame["userId"].to_numpy(), item=frame["movieId"].to_numpy(),
        rating=frame["rating"].to_numpy(np.float32), time=frame["timestamp"].to_numpy()))
    write_log(tmp_path / "ratings.h5", log)
    features = tmp_path / "svd_k4_online.h5"
    build_online(log, 4, parse_fit("online"), check_data_config({})["svd"], features)
    instance = {"generator": "movielens_replay", "ratings": str(tmp_path / "ratings.h5"),
                "features": str(features), "horizon": 100, "feature_map": "biased",
                "normalize": "clip", "scale": 2.0,
                "requires": [str(tmp_path / "ratings.h5"), str(features)]}
    spec = {"experiment": "x", "algorithm": "avoid", "policy": "AvoidLogged-test",
            "instance": instance, "instance_index": 0, "trials": [0], "seed": 1}
    (tmp_path / "avoider.py").write_text(textwrap.dedent(AVOIDER))
    output = tmp_path / "shard.h5"
    code = (f"import sys; sys.path[:0] = [{str(SCRIPTS)!r}, {str(tmp_path)!r}]\n"
            "from dpbandits.policies import POLICIES\n"
            "POLICIES.add('AvoidLogged-test', 'avoider:AvoidLogged')\n"
            "import simulate\n"
            "sys.exit(simulate.main(sys.argv[1:]))\n")
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(spec), str(output),
                           str(tmp_path / "shard.log")], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpbandits: error: replay log exhausted: 0 "
                                                   "of horizon 100 rounds counted"), lines
    assert "lower horizon or K" in lines[0] and not output.exists()
    assert not [p for p in Path(tmp_path).iterdir() if p.name.startswith(".shard.h5")]
