"""SVD featurization: bitwise determinism, sign rule, and optimality against a dense SVD."""

import numpy as np
import pytest
from rating_fixtures import write_movielens_zip

from dpbandits.data import DataError
from dpbandits.data.extract import safe_extract
from dpbandits.data.parse import parse_dataset
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


@pytest.mark.parametrize("center", ["global", "user"])
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
    matrix, mean = centered_matrix(log, "global")
    assert mean == pytest.approx(float(log.rating.astype(np.float64).mean()))
    assert abs(float(matrix.data.astype(np.float64).mean())) < 1e-5


def test_rank_must_be_below_the_matrix_size(log):
    with pytest.raises(DataError, match="k = 40"):
        featurize(log, k=40)
