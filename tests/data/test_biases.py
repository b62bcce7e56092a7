"""User and item biases: shrunk means over fixed events, and running ones over earlier events."""

import numpy as np
import pytest

from dpbandits.data.biases import RunningBiases, static_biases

N_USERS, N_ITEMS, LAMBDA = 7, 5, 3.0


@pytest.fixture(scope="module")
def events():
    rng = np.random.default_rng(1)
    n = 300
    user = rng.integers(0, N_USERS, n)
    item = rng.integers(0, N_ITEMS, n)
    item[item == 4] = 3  # item 4 never rated: it stays cold
    rating = rng.integers(1, 11, n) / 2.0
    return user, item, rating


def brute(user, item, rating, j):
    """μ, the bias of each user and item, over events 0 … j − 1, one loop in time order."""
    mean = sum(rating[:j]) / j if j else 0.0
    out = []
    for index, size in ((user, N_USERS), (item, N_ITEMS)):
        n, s = np.zeros(size), np.zeros(size)
        for e in range(j):
            n[index[e]] += 1.0
            s[index[e]] += rating[e]
        out.append((s - n * mean) / (n + LAMBDA))
    return mean, out[0], out[1]


def test_static_biases_are_shrunk_mean_deviations(events):
    user, item, rating = events
    mean, b_user, b_item = static_biases(user, item, rating, N_USERS, N_ITEMS, LAMBDA)
    assert mean == pytest.approx(rating.mean())
    for b, index, k in ((b_user, user, 2), (b_item, item, 1)):
        rows = index == k
        assert b[k] == pytest.approx((rating[rows] - mean).sum() / (rows.sum() + LAMBDA))
    assert b_item[4] == 0.0  # no rating: the population's mean, deviation 0


def test_running_biases_use_the_earlier_events_only(events):
    user, item, rating = events
    running = RunningBiases(user, item, rating, N_USERS, N_ITEMS, LAMBDA)
    for j in (0, 1, 2, 57, 299):
        mean, b_user, b_item = brute(user, item, rating, j)
        assert running.mean[j] == pytest.approx(mean, abs=1e-12)
        bias, count = running.user(np.array([j]))
        assert bias[0] == pytest.approx(b_user[user[j]], abs=1e-12)
        assert count[0] == np.sum(user[:j] == user[j])
        bias, count = running.items(np.array([j]), np.arange(N_ITEMS)[None, :])
        np.testing.assert_allclose(bias[0], b_item, atol=1e-12)
        np.testing.assert_array_equal(count[0], np.bincount(item[:j], minlength=N_ITEMS))
        np.testing.assert_array_equal(running.logged_item(np.array([j]))[0], bias[0, [item[j]]])


def test_item_biases_are_the_same_in_any_order_of_asking(events):
    user, item, rating = events
    running = RunningBiases(user, item, rating, N_USERS, N_ITEMS, LAMBDA)
    steps = np.array([250, 10, 120, 120, 3])
    items = np.tile(np.arange(N_ITEMS), (len(steps), 1))
    once, count = running.items(steps, items)
    for s, row in zip(steps, once, strict=True):  # one at a time, forward and back
        np.testing.assert_array_equal(running.items(np.array([s]), items[:1])[0][0], row)
    assert count[1, item[0]] >= 1 and count[4].sum() == 3


def test_a_later_rating_changes_no_earlier_bias_bitwise(events):
    user, item, rating = events
    j = 150
    changed = rating.copy()
    changed[j] = 0.5 if rating[j] > 3 else 5.0
    a = RunningBiases(user, item, rating, N_USERS, N_ITEMS, LAMBDA)
    b = RunningBiases(user, item, changed, N_USERS, N_ITEMS, LAMBDA)
    steps = np.arange(len(user))
    items = np.tile(np.arange(N_ITEMS), (len(steps), 1))
    before, after = a.items(steps, items)[0], b.items(steps, items)[0]
    np.testing.assert_array_equal(a.logged[: j + 1], b.logged[: j + 1])
    np.testing.assert_array_equal(before[: j + 1], after[: j + 1])
    # negative control: the change does reach the steps after it
    assert not np.array_equal(a.logged[j + 1:], b.logged[j + 1:])
    assert not np.array_equal(before[j + 1:], after[j + 1:])
