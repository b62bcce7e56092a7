"""Rating logs: dense indices, last rating of a repeated pair, time order, HDF5 round trip."""

import numpy as np

from dpbandits.data.ratings import RawRatings, build_log, read_log, write_log


def test_repeated_pair_keeps_the_last_and_time_order_is_stable(tmp_path):
    raw = RawRatings(
        user=np.array([10, 10, 20, 10, 30]), item=np.array([5, 6, 5, 5, 7]),
        rating=np.array([1.0, 2.0, 3.0, 4.0, 5.0], dtype=np.float32),
        time=np.array([50, 20, 20, 60, 10]), titles={5: "a, b", 6: "c", 7: "d"}, sources=["x"],
    )
    log = build_log("toy", raw)
    # (10, 5) rated twice: the later row (rating 4, t=60) wins; ties in time keep file order
    assert log.rating.tolist() == [5.0, 2.0, 3.0, 4.0]
    assert log.time.tolist() == [10, 20, 20, 60]
    assert log.user_ids[log.user].tolist() == [30, 10, 20, 10]
    assert log.item_titles == ["a, b", "c", "d"]
    write_log(tmp_path / "r.h5", log)
    back = read_log(tmp_path / "r.h5")
    for name in ("user", "item", "rating", "time", "user_ids", "item_ids"):
        np.testing.assert_array_equal(getattr(back, name), getattr(log, name))
    assert back.item_titles == log.item_titles and back.dataset == "toy"
    assert [p.name for p in tmp_path.iterdir()] == ["r.h5"]
    assert log.matrix().toarray()[0].tolist() == [4.0, 2.0, 0.0]  # user 10
