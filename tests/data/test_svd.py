"""SVD featurization: bitwise determinism, sign rule, and optimality against a dense SVD."""

import numpy as np
import pytest
from rating_fixtures import ml_latest_small_frame, write_movielens_zip

from dpbandits.data import DataError
from dpbandits.data.extract import safe_extract
from dpbandits.data.fitting import WHOLE, parse_fit
from dpbandits.data.parse import parse_dataset
from dpbandits.data.ratings import RawRatings, build_log
from dpbandits.data.svd import centered_matrix, featurize, read_factors, write_factors


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("svd")
    archive = write_movielens_zip(tmp, n_users=80, n_items=40, density=0.3)
    safe_extract(archive, tmp / "raw")
    return parse_dataset("ml-25m", {archive.name: tmp / "raw"})


def test_same_input_same_factors_bitwise(log, tmp_path):
    a, b = featurize(log, k=5), featurize(log, k=5)
    for name in ("user_factors", "item_factors", "singular_values"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == np.float32 and x.tobytes() == y.tobytes()
    write_factors(tmp_path / "f.h5", a)
    back = read_factors(tmp_path / "f.h5")
    assert back.user_factors.tobytes() == a.user_factors.tobytes()
    assert back.meta["k"] == 5 and back.meta["center"] == "global"
    assert back.meta["peak_rss_mb"] > 0 and back.meta["seconds_svd"] >= 0


@pytest.mark.parametrize("center", ["global", "user", "biases"])
def test_rank_k_reconstruction_is_optimal_against_dense_svd(log, center):
    k = 5
    dense = centered_matrix(log, center)[0].toarray().astype(np.float64)
    s_dense = np.linalg.svd(dense, compute_uv=False)
    fac = featurize(log, k=k, center=center)
    recon = fac.user_factors.astype(np.float64) @ fac.item_factors.T.astype(np.float64)
    best = np.sqrt((s_dense[k:] ** 2).sum())  # Eckart–Young optimum
    err = np.linalg.norm(dense - recon)
    # float32 factors: relative error of the optimum within 1e-5 (float32 eps ≈ 1.2e-7 × size)
    assert err == pytest.approx(best, rel=1e-5)
    np.testing.assert_allclose(fac.singular_values, s_dense[:k], rtol=1e-5)
    assert np.all(np.diff(fac.singular_values) <= 0)


def test_signs_make_the_largest_item_entry_positive(log):
    fac = featurize(log, k=4)
    q = fac.item_factors
    pivot = np.argmax(np.abs(q), axis=0)
    assert np.all(q[pivot, np.arange(4)] > 0)


def test_centering_removes_the_mean_of_observed_ratings(log):
    matrix, mean, _ = centered_matrix(log, "global")
    assert mean == pytest.approx(float(log.rating.astype(np.float64).mean()))
    assert abs(float(matrix.data.astype(np.float64).mean())) < 1e-5


def test_rank_must_be_below_the_matrix_size(log):
    with pytest.raises(DataError, match="k = 40"):
        featurize(log, k=40)


def _changed_replay_rating(log, fit, seed=0):
    """A copy of the log with one rating outside the fit events changed (5 ↔ 0.5 stars)."""
    outside = np.flatnonzero(~fit.mask(len(log.user), seed))
    event = int(outside[len(outside) // 2])
    changed = log.subset(np.arange(len(log.user)))
    changed.rating = log.rating.copy()
    changed.rating[event] = 0.5 if log.rating[event] >= 3 else 5.0
    return changed


def _same(a, b):
    return all(getattr(a, n).tobytes() == getattr(b, n).tobytes()
               for n in ("user_factors", "item_factors", "singular_values"))


@pytest.mark.parametrize("token", ["prefix10", "prefix50", "split80"])
def test_leak_free_features_do_not_see_replay_period_ratings(log, token):
    fit = parse_fit(token)
    before = featurize(log, k=4, fit=fit)
    after = featurize(_changed_replay_rating(log, fit), k=4, fit=fit)
    assert _same(before, after)
    assert before.meta["fit"] == token and before.meta["n_fit"] == fit.n_fit(len(log.user))


def test_negative_control_whole_log_features_change_with_a_replay_period_rating(log):
    fit = parse_fit("prefix10")  # the same event as above, now inside the whole-log fit
    before = featurize(log, k=4, fit=WHOLE)
    after = featurize(_changed_replay_rating(log, fit), k=4, fit=WHOLE)
    assert not _same(before, after)


def test_users_and_items_unseen_in_the_fit_part_get_zero_factors(tmp_path):
    frame = ml_latest_small_frame(n_users=120, n_items=400, n_ratings=6000, seed=3)
    log = build_log("ml-latest-small", RawRatings(
        user=frame["userId"].to_numpy(), item=frame["movieId"].to_numpy(),
        rating=frame["rating"].to_numpy(np.float32), time=frame["timestamp"].to_numpy()))
    fit = parse_fit("prefix10")
    factors = featurize(log, k=5, fit=fit)
    mask = fit.mask(len(log.user))
    unseen_users = np.setdiff1d(np.arange(log.n_users), log.user[mask])
    unseen_items = np.setdiff1d(np.arange(log.n_items), log.item[mask])
    assert len(unseen_users) > 0 and len(unseen_items) > 0
    # exactly zero, not ARPACK's round-off (unit-norm features would blow that up)
    assert not factors.user_factors[unseen_users].any()
    assert not factors.item_factors[unseen_items].any()
    seen = np.unique(log.user[mask])
    assert np.abs(factors.user_factors[seen]).sum(axis=1).min() > 0
    write_factors(tmp_path / "f.h5", factors)
    back = read_factors(tmp_path / "f.h5")
    np.testing.assert_array_equal(back.fit_events, mask)
    assert back.fit == fit


def test_the_fit_part_is_factorised_exactly(log):
    fit = parse_fit("split80")
    factors = featurize(log, k=5, fit=fit)
    sub = log.subset(fit.mask(len(log.user)))
    dense = centered_matrix(sub, "global")[0].toarray().astype(np.float64)
    np.testing.assert_allclose(factors.singular_values,
                               np.linalg.svd(dense, compute_uv=False)[:5], rtol=1e-5)
