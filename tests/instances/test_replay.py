"""Replay environments: candidate sets, reward rules, warm start, and the Li et al. protocol."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "data"))
from rating_fixtures import small_rating_log  # noqa: E402

from dpbandits.data import DataError
from dpbandits.data.fitting import parse_fit
from dpbandits.data.leakage import auc
from dpbandits.data.online import build_online, refit_points
from dpbandits.data.ratings import RawRatings, build_log, write_log
from dpbandits.data.registry import check_data_config
from dpbandits.data.svd import featurize, read_factors, write_factors
from dpbandits.errors import ConfigError
from dpbandits.instances import replay
from dpbandits.instances.registry import build_instance
from dpbandits.instances.replay import arm_features
from dpbandits.policies.uniform import Uniform
from dpbandits.runner import run_policy

N_USERS, N_ITEMS, K_SVD = 100, 25, 4


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A MovieLens-like log (half stars, timestamps) with rank-4 factors."""
    tmp = tmp_path_factory.mktemp("replay")
    rng = np.random.default_rng(0)
    users, items = np.nonzero(rng.random((N_USERS, N_ITEMS)) < 0.6)
    stars = rng.integers(1, 11, len(users)) / 2.0
    stars[:3] = [4.0, 3.5, 4.5]
    raw = RawRatings(user=users + 100, item=7 * items + 1, rating=stars.astype(np.float32),
                     time=rng.permutation(len(users)) * 10)
    log = build_log("toy", raw)
    write_log(tmp / "ratings.h5", log)
    write_factors(tmp / "svd.h5", featurize(log, k=K_SVD))
    return {"ratings": str(tmp / "ratings.h5"), "features": str(tmp / "svd.h5"), "log": log}


def make(files, generator="movielens_replay", **overrides):
    """A replay instance on the files of `files` (ratings and features paths)."""
    params = {"generator": generator, "ratings": files["ratings"], "features": files["features"],
              "requires": [files["ratings"], files["features"]], "horizon": 50, "K": 3,
              "seed": 4, **overrides}
    return build_instance(params)


class Recorder(Uniform):
    """Uniform choice that records every call the replay makes."""

    name = "Recorder-test"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.selects: list[int] = []
        self.updates: list[tuple[int, np.ndarray, float]] = []
        self.begun = self.finished = False

    def begin(self, env):
        self.begun = True

    def finish(self):
        self.finished = True

    def select(self, t, arms):
        self.selects.append(t)
        return super().select(t, arms)

    def update(self, t, x, r):
        self.updates.append((t, x.copy(), r))


def test_candidate_sets_hold_the_logged_item_once_at_a_uniform_position(files):
    inst = make(files, warm_start=0.0)
    env = inst.environment(0)
    n, K = inst.n_steps, inst.K
    counts = np.zeros(K)
    for step in range(n):
        cands, pos = env.candidates(step), env.logged_index(step)
        assert len(set(cands.tolist())) == K
        assert cands[pos] == inst.item[env.event(step)]
        counts[pos] += 1
    se = np.sqrt(n * (1 / K) * (1 - 1 / K))
    assert np.all(np.abs(counts - n / K) < 5 * se)


def test_other_candidates_are_uniform_over_the_other_items(files):
    inst = make(files, warm_start=0.0, K=2)
    env = inst.environment(1)
    other = np.array([env.candidates(s)[1 - env.logged_index(s)] for s in range(inst.n_steps)])
    logged = inst.item[: inst.n_steps]
    assert not np.any(other == logged)
    counts = np.bincount(other, minlength=N_ITEMS)
    expected = np.array([np.sum(logged != j) / (N_ITEMS - 1) for j in range(N_ITEMS)])
    sd = np.sqrt(expected * (1 - 1 / (N_ITEMS - 1)))
    assert np.all(np.abs(counts - expected) < 5 * sd)


def test_trials_share_nothing_but_algorithms_share_everything(files):
    inst = make(files)
    a, b, c = inst.environment(0), inst.environment(0), inst.environment(1)
    first = [a.candidates(s).tolist() for s in range(300)]
    assert first == [b.candidates(s).tolist() for s in range(300)]
    assert first != [c.candidates(s).tolist() for s in range(300)]


def test_arm_features_are_unit_products_of_the_factors(files):
    inst = make(files)
    env = inst.environment(0)
    arms = env.arms(5)
    user = inst.user[env.event(5)]
    source = inst.source
    raw = source.P[user].astype(float) * source.Q[env.candidates(5)].astype(float)
    np.testing.assert_allclose(arms, raw / np.linalg.norm(raw, axis=1, keepdims=True))
    np.testing.assert_array_equal(env.features_at(5, env.candidates(5)), arms)
    concat = arm_features(source.P[user], source.Q[env.candidates(5)], "concat", "clip")
    assert concat.shape == (3, 2 * K_SVD)
    assert np.all(np.linalg.norm(concat, axis=1) <= 1 + 1e-12)


def test_biased_features_carry_the_biases_and_an_intercept(tmp_path, files):
    log = files["log"]
    pair = write_pair(tmp_path, log, "whole", center="biases")
    inst = make(pair, feature_map="biased", normalize="clip", scale=1e6)
    env = inst.environment(0)
    cands = env.candidates(7)
    user = inst.user[env.event(7)]
    f = inst.source.factors
    p, q = f.user_factors[user].astype(float), f.item_factors[cands].astype(float)
    raw = np.hstack([p * q, f.item_bias[cands, None].astype(float),
                     np.full((3, 1), float(f.user_bias[user])), np.ones((3, 1))])
    np.testing.assert_allclose(env.arms(7) * 1e6, raw, rtol=1e-12)
    assert inst.d == K_SVD + 3
    with pytest.raises(ConfigError, match="feature_map = biased is not allowed"):
        make(files, feature_map="biased")  # features fit without biases


def test_reward_rules(files):
    ml = make(files, warm_start=0.0)
    jester = make(files, generator="jester_replay", threshold=3.5)
    rating = files["log"].rating
    np.testing.assert_array_equal(ml.reward, (rating >= 4.0).astype(float))
    assert jester.order == "shuffle" and ml.order == "time"
    assert set(np.unique(jester.reward)) == {0.0, 1.0}
    np.testing.assert_array_equal(np.sort(jester.reward), np.sort((rating > 3.5).astype(float)))
    assert ml.reward[np.flatnonzero(rating == 4.0)].min() == 1.0  # 4 counts for MovieLens


def test_warm_start_is_the_ridge_fit_on_the_earliest_events_which_are_excluded(files):
    log = files["log"]
    inst = make(files, warm_start=0.1)
    n_warm = int(np.floor(0.1 * len(log.user)))
    assert inst.n_warm == n_warm and inst.n_steps == len(log.user) - n_warm
    np.testing.assert_array_equal(inst.user, log.user[n_warm:])
    f = inst.source.factors
    x = arm_features(f.user_factors[log.user[:n_warm]], f.item_factors[log.item[:n_warm]],
                     "product", "unit")
    r = (log.rating[:n_warm] >= 4).astype(float)
    # ridge with λ = 1 as the least-squares solution of the augmented system
    aug_x = np.vstack([x, np.eye(K_SVD)])
    aug_r = np.concatenate([r, np.zeros(K_SVD)])
    np.testing.assert_allclose(inst.theta0, np.linalg.lstsq(aug_x, aug_r, rcond=None)[0],
                               atol=1e-10)
    assert make(files, generator="jester_replay").theta0 is None


def test_play_follows_the_replay_protocol(files):
    inst = make(files, horizon=120, warm_start=0.0)
    env = inst.environment(2)
    policy = Recorder(inst.info, np.random.default_rng(9))
    result = run_policy(policy, env)
    steps = int(result.diagnostics["replay_steps"])
    assert policy.begun and policy.finished
    assert len(policy.selects) == steps and len(policy.updates) == 120
    assert [u[0] for u in policy.updates] == list(range(120))
    # a step counts only when the logged arm is picked, and then its features and reward are used
    check = inst.environment(2)
    rng = np.random.default_rng(9)
    counted = 0
    for step in range(steps):
        pick = int(rng.integers(inst.K))
        if pick == check.logged_index(step):
            t, x, r = policy.updates[counted]
            np.testing.assert_array_equal(x, check.arms(step)[pick])
            assert r == inst.reward[step]
            counted += 1
    assert counted == 120
    assert result.reward.tolist() == [u[2] for u in policy.updates]
    assert result.diagnostics["accept_rate"] == pytest.approx(120 / steps)
    assert result.diagnostics["ctr"] == pytest.approx(np.mean(result.reward))
    assert np.all(result.regret == 0)


def test_uniform_choice_accepts_one_in_K_and_sees_the_log_ctr(files):
    inst = make(files, generator="jester_replay", horizon=250, threshold=2.5)
    accept, ctr = [], []
    for trial in range(4):
        res = run_policy(Uniform(inst.info, np.random.default_rng(trial)),
                         inst.environment(trial))
        accept.append(res.diagnostics["accept_rate"])
        ctr.append(res.diagnostics["ctr"])
    steps = 250 / np.mean(accept)
    assert np.mean(accept) == pytest.approx(1 / 3, abs=5 * np.sqrt(2 / 9 / (4 * steps)))
    p = inst.describe()["log_ctr"]
    assert np.mean(ctr) == pytest.approx(p, abs=5 * np.sqrt(p * (1 - p) / 1000))


def test_an_exhausted_log_is_one_error_line_naming_what_to_lower(files):
    inst = make(files, horizon=200, warm_start=0.0)  # what uniform choice can count
    inst.horizon = inst.n_steps  # as if a policy accepted every step: more than the log holds
    env = inst.environment(0)
    with pytest.raises(DataError) as err:
        run_policy(Uniform(inst.info, np.random.default_rng(0)), env)
    message = str(err.value)
    assert message.startswith("replay log exhausted: ") and f"after {inst.n_steps} steps" in message
    assert "lower horizon or K" in message and "\n" not in message


def test_rated_candidates_come_from_the_users_ratings(files):
    inst = make(files, candidates="rated", warm_start=0.0)
    env = inst.environment(0)
    log = files["log"]
    for step in range(200):
        user = inst.user[env.event(step)]
        rated = set(log.item[log.user == user].tolist())
        if len(rated) >= inst.K:
            assert set(env.candidates(step).tolist()) <= rated


@pytest.mark.parametrize("override,needle", [
    ({"requires": []}, "requires"),
    ({"d": 7}, "d = 7"),
    ({"K": 1}, "K = 1"),
    ({"K": N_ITEMS + 1}, "K = 26"),
    ({"order": "random"}, "order"),
    ({"warm_start": 1.0}, "warm_start"),
    ({"colour": 1}, "unknown instance key"),
])
def test_bad_instance_keys(files, override, needle):
    with pytest.raises(ConfigError, match=needle):
        make(files, **override)


def test_missing_feature_file_says_to_run_the_data_rules(files, tmp_path):
    with pytest.raises(DataError, match="run the data rules"):
        make(files, features=str(tmp_path / "no.h5"),
             requires=[files["ratings"], str(tmp_path / "no.h5")])


def test_info_is_a_linear_problem(files):
    info = make(files).info
    assert (info.family, info.d, info.K, info.horizon) == ("linear", K_SVD, 3, 50)


# --- leak-free feature modes (docs/realdata.md, "Feature modes") -------------------------------

ARCHIVE = {"file": "toy.zip", "dataset": "toy", "sha256": "ab" * 32, "bytes": 1, "pinned": False}


def write_pair(folder, log, token, k=K_SVD, center="global"):
    """ratings.h5 (with an archive record) and features fit in mode `token`."""
    folder.mkdir(parents=True, exist_ok=True)
    log = log.subset(np.arange(len(log.user)))  # a copy: the module's log stays as it is
    log.archives = [ARCHIVE]
    write_log(folder / "ratings.h5", log)
    write_factors(folder / f"svd_{token}.h5",
                  featurize(log, k=k, fit=parse_fit(token), center=center))
    return {"ratings": str(folder / "ratings.h5"), "features": str(folder / f"svd_{token}.h5")}


def with_rating(log, event, value):
    changed = log.subset(np.arange(len(log.user)))
    changed.rating = log.rating.copy()
    changed.rating[event] = value
    return changed


def all_arms(inst, trial=0):
    env = inst.environment(trial)
    return np.stack([env.arms(s) for s in range(inst.n_steps)])


@pytest.mark.parametrize("token,warm", [("prefix10", 0.1), ("split80", 0.0)])
def test_replay_period_ratings_do_not_reach_the_features(files, tmp_path, token, warm):
    log = files["log"]
    fit = parse_fit(token)
    replayed = np.flatnonzero(~fit.mask(len(log.user)))
    event = int(replayed[len(replayed) // 2])
    a = make(write_pair(tmp_path / "a", log, token), warm_start=warm)
    flipped = 5.0 if log.rating[event] < 4 else 1.0  # the replayed click flips
    b = make(write_pair(tmp_path / "b", with_rating(log, event, flipped), token), warm_start=warm)
    assert a.reward.sum() != b.reward.sum()
    np.testing.assert_array_equal(all_arms(a), all_arms(b))
    assert (a.theta0 is None and b.theta0 is None) or np.array_equal(a.theta0, b.theta0)


def test_negative_control_whole_log_features_see_the_replay_period(files, tmp_path):
    log = files["log"]
    event = len(log.user) - 5
    a = make(write_pair(tmp_path / "a", log, "whole"), warm_start=0.1)
    flipped = 5.0 if log.rating[event] < 4 else 1.0
    b = make(write_pair(tmp_path / "b", with_rating(log, event, flipped), "whole"),
             warm_start=0.1)
    assert a.reward.sum() != b.reward.sum()
    assert not np.array_equal(all_arms(a), all_arms(b))


def test_prefix_features_replay_exactly_the_events_after_the_fit(files, tmp_path):
    log = files["log"]
    inst = make(write_pair(tmp_path, log, "prefix10"), warm_start=0.1)
    n_warm = int(np.floor(0.1 * len(log.user)))
    assert inst.n_fit == n_warm and inst.n_warm == n_warm
    np.testing.assert_array_equal(inst.user, log.user[n_warm:])
    assert inst.describe()["fit_events"] == n_warm


def test_prefix_features_reaching_into_the_replay_are_refused(files, tmp_path):
    pair = write_pair(tmp_path, files["log"], "prefix50")
    with pytest.raises(ConfigError) as err:
        make(pair, warm_start=0.1)
    message = str(err.value)
    assert "warm_start = 0.1 is not allowed" in message and "allowed: warm_start >= 0.5" in message
    make(pair, warm_start=0.5)  # the replay then starts where the fit ends


def test_split_features_replay_only_the_held_out_events(files, tmp_path):
    log = files["log"]
    fit = parse_fit("split80")
    mask = fit.mask(len(log.user))
    inst = make(write_pair(tmp_path, log, "split80"), generator="jester_replay", threshold=3.5)
    assert inst.n_steps == int((~mask).sum()) == len(log.user) - fit.n_fit(len(log.user))
    np.testing.assert_array_equal(inst.user, log.user[~mask])
    np.testing.assert_array_equal(inst.item, log.item[~mask])
    capped = make(write_pair(tmp_path, log, "split80"), generator="jester_replay", max_steps=100,
                  horizon=10)
    np.testing.assert_array_equal(capped.user, log.user[~mask][:100])


def test_features_of_another_ratings_file_are_refused(files, tmp_path):
    log = files["log"]
    pair = write_pair(tmp_path / "a", log, "prefix10")
    other = write_pair(tmp_path / "b", log.subset(np.arange(len(log.user) - 3)), "prefix10")
    with pytest.raises(DataError, match="rebuild the features"):
        make({"ratings": pair["ratings"], "features": other["features"]})
    moved = dict(ARCHIVE, sha256="cd" * 32)
    log_b = log.subset(np.arange(len(log.user)))
    log_b.archives = [moved]
    write_log(tmp_path / "a" / "ratings.h5", log_b)
    with pytest.raises(DataError, match="other archives"):
        make(pair)


def test_describe_and_provenance_of_a_replay(files, tmp_path):
    leak_free = make(write_pair(tmp_path / "a", files["log"], "prefix10"), warm_start=0.1)
    whole = make(write_pair(tmp_path / "b", files["log"], "whole"), warm_start=0.1)
    for inst in (leak_free, whole):
        assert 0.0 <= inst.describe()["feature_auc"] <= 1.0
    assert whole.describe()["feature_auc"] > leak_free.describe()["feature_auc"]
    # share of replayed events whose user and item have a rating in the fit part
    assert whole.describe()["feature_coverage"] == 1.0
    seen_users = np.unique(files["log"].user[: leak_free.n_fit])
    seen_items = np.unique(files["log"].item[: leak_free.n_fit])
    expected = np.mean(np.isin(leak_free.user, seen_users) & np.isin(leak_free.item, seen_items))
    assert leak_free.describe()["feature_coverage"] == pytest.approx(expected)
    assert leak_free.provenance() == {"dataset": "toy", "archives": [ARCHIVE],
                                      "features": {"fit": "prefix10", "leak_free": True}}
    assert whole.provenance()["features"] == {"fit": "whole", "leak_free": False}


def test_leak_free_features_without_their_fit_record_are_refused(files, tmp_path):
    pair = write_pair(tmp_path, files["log"], "prefix10")
    factors = read_factors(pair["features"])
    factors.fit_events = None
    write_factors(pair["features"], factors)
    with pytest.raises(DataError, match="does not record which events its prefix10 fit used"):
        make(pair, warm_start=0.1)


# --- online features (docs/realdata.md, "Online features") -------------------------------------

ONLINE_SVD = {**check_data_config({})["svd"], "refit": 0.5, "refit_min": 500}


@pytest.fixture(scope="module")
def timed_log():
    """An ml-latest-small-shaped log in time order (users arrive over the years)."""
    return small_rating_log("toy")


def write_online(folder, log, token="online", svd=ONLINE_SVD):
    """ratings.h5 (with an archive record) and online features `token` of rank K_SVD."""
    folder.mkdir(parents=True, exist_ok=True)
    log = log.subset(np.arange(len(log.user)))
    log.archives = [ARCHIVE]
    write_log(folder / "ratings.h5", log)
    build_online(log, K_SVD, parse_fit(token), svd, folder / f"svd_{token}.h5")
    return {"ratings": str(folder / "ratings.h5"), "features": str(folder / f"svd_{token}.h5")}


def biased(pair, **overrides):
    return make(pair, feature_map="biased", normalize="clip", scale=2.0, horizon=300,
                **overrides)


def every_feature(inst, upto):
    """The features of every item at every replay step whose event is at most `upto`."""
    steps = np.flatnonzero(inst.rows <= upto)
    items = np.arange(inst.n_items)
    for lo in range(0, len(steps), 400):
        s = steps[lo:lo + 400]
        yield inst.features(inst.rows[s], inst.user[s], np.tile(items, (len(s), 1)))


def test_online_arms_are_what_features_at_gives(timed_log, tmp_path):
    inst = biased(write_online(tmp_path, timed_log))
    env = inst.environment(1)
    for step in (0, 4000, 9000 % inst.n_steps):
        np.testing.assert_array_equal(env.arms(step), env.features_at(step, env.candidates(step)))


@pytest.mark.parametrize("generator", ["movielens_replay", "jester_replay"])
def test_bulk_tables_are_the_steps_one_at_a_time(files, generator, monkeypatch):
    monkeypatch.setattr(replay, "CHUNK", 64)  # many chunks, and a table across their edges
    inst = make(files, generator=generator, warm_start=0.0)
    start, stop = 5, inst.n_steps
    arms, positions, rewards = inst.environment(3).tables(start, stop)
    env = inst.environment(3)
    for step in range(start, stop):
        np.testing.assert_array_equal(arms[step - start], env.arms(step))
        assert positions[step - start] == env.logged_index(step)
        assert rewards[step - start] == env.logged_reward(step)


@pytest.mark.parametrize("where", ["warm start", "before a refit", "at a refit", "replay",
                                   "last"])
def test_a_rating_changes_no_feature_used_at_an_earlier_step(timed_log, tmp_path, where):
    """Item 2 of the leak test: with online features, changing any event's rating leaves every
    feature of every item at every step up to that event bitwise unchanged (and θ₀ too when
    the event is replayed), and does change a later one."""
    refits = refit_points(len(timed_log.user), ONLINE_SVD["refit"], ONLINE_SVD["refit_min"])
    n_warm = len(timed_log.user) // 10
    event = {"warm start": n_warm // 2, "before a refit": int(refits[3]) - 1,
             "at a refit": int(refits[3]), "replay": 4321,
             "last": len(timed_log.user) - 1}[where]
    rating = timed_log.rating[event]
    changed = with_rating(timed_log, event, 0.5 if rating >= 3 else 5.0)
    a = biased(write_online(tmp_path / "a", timed_log), warm_start=0.1)
    b = biased(write_online(tmp_path / "b", changed), warm_start=0.1)
    for x, y in zip(every_feature(a, event), every_feature(b, event), strict=True):
        np.testing.assert_array_equal(x, y)
    if event >= n_warm:
        np.testing.assert_array_equal(a.theta0, b.theta0)
    if where != "last":  # negative control: the change reaches the features after the event
        later = np.flatnonzero(a.rows > event)[:300]
        items = np.tile(np.arange(a.n_items), (len(later), 1))
        assert not np.array_equal(a.features(a.rows[later], a.user[later], items),
                                  b.features(b.rows[later], b.user[later], items))


def test_negative_control_whole_log_features_fail_the_leak_test(timed_log, tmp_path):
    event = 4321
    changed = with_rating(timed_log, event, 0.5 if timed_log.rating[event] >= 3 else 5.0)
    a = biased(write_pair(tmp_path / "a", timed_log, "whole", center="biases"), warm_start=0.1)
    b = biased(write_pair(tmp_path / "b", changed, "whole", center="biases"), warm_start=0.1)
    first = next(every_feature(a, event)), next(every_feature(b, event))
    assert a.rows[0] < event and not np.array_equal(*first)


def test_cold_users_and_items_fall_back_to_the_population_mean(timed_log, tmp_path):
    inst = biased(write_online(tmp_path, timed_log), warm_start=0.1)
    log = timed_log
    step = int(np.flatnonzero(inst.rows > 3000)[0])
    event = int(inst.rows[step])
    cold_items = np.setdiff1d(np.arange(log.n_items), log.item[:event])
    warm_item = int(log.item[0])
    x = inst.features(np.array([event]), np.array([log.user[event]]),
                      np.array([[cold_items[0], warm_item]]))[0] * 2.0  # undo the scale
    b_user = inst.source.users(np.array([event]), np.array([log.user[event]]))[1][0]
    # a cold item: no factors, no bias; the user's part and the intercept remain
    np.testing.assert_array_equal(x[0, :K_SVD + 1], 0.0)
    assert x[0, K_SVD + 1] == pytest.approx(b_user) and x[0, K_SVD + 2] == 1.0
    assert x[1, K_SVD] != 0.0  # a known item has a bias
    first_events = np.unique(log.user, return_index=True)[1]
    new_user = int(first_events[first_events >= inst.rows[0]][0])  # a user's first rating
    p, b, known = inst.source.users(np.array([new_user]), np.array([log.user[new_user]]))
    assert not p.any() and b[0] == 0.0 and not known[0]


def test_coverage_and_auc_measure_what_the_past_knows(timed_log, tmp_path):
    inst = biased(write_online(tmp_path, timed_log), warm_start=0.1)
    log = timed_log
    seen_users, seen_items, known = set(), set(), []
    for j in range(len(log.user)):
        if j >= inst.rows[0]:
            known.append(log.user[j] in seen_users and log.item[j] in seen_items)
        seen_users.add(log.user[j])
        seen_items.add(log.item[j])
    assert inst.describe()["feature_coverage"] == pytest.approx(np.mean(known))
    scores, _ = inst.scores(inst.rows, inst.user, inst.item)
    assert inst.describe()["feature_auc"] == pytest.approx(auc(scores, inst.reward))
    assert 0.6 < inst.describe()["feature_auc"] < 0.95  # the fixture's taste carries signal
    shuffled = auc(np.random.default_rng(0).permutation(scores), inst.reward)
    assert abs(shuffled - 0.5) < 0.05  # negative control: scores unrelated to the clicks


def test_online_features_must_cover_the_replay(timed_log, tmp_path):
    pair = write_online(tmp_path, timed_log, token="online40")
    inst = biased(pair, warm_start=0.1)
    assert inst.rows[-1] == len(timed_log.user) * 40 // 100 - 1
    with pytest.raises(ConfigError) as err:
        biased(pair, warm_start=0.1, max_steps=5000)
    message = str(err.value)
    assert message.startswith("max_steps = 5000 is not allowed with ") and "online40" in message
    assert "online<p> with p >= 94" in message and "\n" not in message
    with pytest.raises(ConfigError, match="order = shuffle"):
        make(pair, generator="jester_replay", horizon=100)
