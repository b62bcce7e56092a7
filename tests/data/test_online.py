"""Online features: refit schedule, item factors of the past only, users folded in."""

import h5py
import numpy as np
import pytest
import scipy.sparse as sp
from rating_fixtures import small_rating_log

from dpbandits.data import DataError
from dpbandits.data.biases import static_biases
from dpbandits.data.fitting import parse_fit
from dpbandits.data.online import build_online, refit_points
from dpbandits.data.registry import check_data_config

K = 4
SVD = {**check_data_config({})["svd"], "refit": 0.5, "refit_min": 500}


@pytest.fixture(scope="module")
def log():
    return small_rating_log("ml-latest-small")


@pytest.fixture(scope="module")
def online(log, tmp_path_factory):
    path = tmp_path_factory.mktemp("online") / "svd_k4_online.h5"
    build_online(log, K, parse_fit("online"), SVD, path)
    with h5py.File(path, "r") as f:
        return {name: f[name][()] for name in f}


def test_refits_happen_as_the_past_grows():
    points = refit_points(10_000, growth=0.5, minimum=500)
    assert points.tolist() == [500, 1000, 1500, 2250, 3375, 5063, 7595]
    assert refit_points(400, 0.5, 500).tolist() == []  # too short a log: no factors at all
    assert np.all(np.diff(refit_points(10**6, 0.1, 1000)) >= 1000)


def residual_matrix(log, t):
    """The centred matrix a refit at event t factorises, from events 0 … t − 1 only."""
    u, i, r = log.user[:t], log.item[:t], log.rating[:t].astype(float)
    mean, b_user, b_item = static_biases(u, i, r, log.n_users, log.n_items, SVD["shrinkage"])
    values = r - mean - b_user[u] - b_item[i]
    return sp.csr_matrix((values, (u, i)), shape=(log.n_users, log.n_items)).toarray(), \
        (mean, b_user, b_item)


def test_each_refit_factorises_the_past_exactly(log, online):
    assert online["refit_at"].tolist() == refit_points(len(log.user), 0.5, 500).tolist()
    for e, t in enumerate(online["refit_at"]):
        dense, _ = residual_matrix(log, int(t))
        s = np.linalg.svd(dense, compute_uv=False)[:K]
        np.testing.assert_allclose(online["singular_values"][e], s, rtol=1e-5)
        q = online["item_factors"][e].astype(float)
        # Q = V√s: its Gram matrix is diag(s); items without an earlier rating have zeros
        np.testing.assert_allclose(q.T @ q, np.diag(s), atol=1e-4 * s[0])
        unseen = np.setdiff1d(np.arange(log.n_items), log.item[:t])
        assert not q[unseen].any() and (e > 0 or len(unseen) > 0)


def test_users_are_folded_in_from_their_earlier_ratings(log, online):
    """p_u at event j = Σ over u's ratings before j of res · q / s (docs/realdata.md, "Online
    features"), which at the refit is the SVD's own U√s."""
    refits = online["refit_at"]
    vectors = online["user_vectors"].astype(float)
    assert not vectors[: refits[0]].any()  # no factors before the first refit
    for e, t in enumerate(refits):
        stop = refits[e + 1] if e + 1 < len(refits) else len(log.user)
        dense, (mean, b_user, b_item) = residual_matrix(log, int(t))
        q = online["item_factors"][e].astype(float)
        s = online["singular_values"][e].astype(float)
        for j in np.linspace(t, stop - 1, 12).astype(int):
            u = log.user[j]
            earlier = np.flatnonzero(log.user[:j] == u)
            res = log.rating[earlier] - mean - b_user[u] - b_item[log.item[earlier]]
            expected = (res @ q[log.item[earlier]]) / s
            np.testing.assert_allclose(vectors[j], expected, atol=2e-4 * (1 + abs(expected).max()))


def test_fold_in_none_keeps_the_vectors_of_the_last_refit(log, tmp_path):
    path = tmp_path / "frozen.h5"
    build_online(log, K, parse_fit("online"), {**SVD, "fold_in": "none"}, path)
    with h5py.File(path, "r") as f:
        refits, vectors = f["refit_at"][()], f["user_vectors"][()]
    e = 2
    epoch = np.arange(refits[e], refits[e + 1])
    for u in np.unique(log.user[epoch])[:10]:
        rows = epoch[log.user[epoch] == u]
        assert (vectors[rows] == vectors[rows[0]]).all()


def test_online_features_cover_the_earliest_share_only(log, tmp_path):
    path = tmp_path / "part.h5"
    build_online(log, K, parse_fit("online40"), SVD, path)
    with h5py.File(path, "r") as f:
        assert len(f["user_vectors"]) == len(log.user) * 40 // 100
        assert f["refit_at"][-1] < len(log.user) * 40 // 100


def test_a_log_without_timestamps_is_refused(log, tmp_path):
    untimed = log.subset(np.arange(len(log.user)))
    untimed.time = None
    with pytest.raises(DataError, match="online features need the events' time order"):
        build_online(untimed, K, parse_fit("online"), SVD, tmp_path / "x.h5")
    assert not (tmp_path / "x.h5").exists()
