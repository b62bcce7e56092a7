"""Cross-fitted distinguishers of policy transcripts: power, and no leak of the held-out half."""

from __future__ import annotations

import math

import numpy as np

from dpbandits.audit.bounds import epsilon_lower_bound
from dpbandits.audit.statistics import Transcripts, crossfit_scores, naive_bayes, nb_score


def _transcripts(rng: np.random.Generator, runs: int, rounds: int, p_first: float,
                 n_values: int = 3) -> Transcripts:
    """Uniform actions except round 0, which is action 1 with probability p_first."""
    actions = rng.integers(0, n_values, size=(runs, rounds))
    first = rng.random(runs) < p_first
    actions[:, 0] = np.where(first, 1, np.where(rng.random(runs) < 0.5, 0, 2))
    summary = np.stack([np.bincount(row, minlength=n_values) for row in actions]).astype(float)
    return Transcripts(actions, summary)


def test_naive_bayes_weights_are_the_smoothed_log_ratios() -> None:
    a0 = np.array([[0], [0], [1], [1]])
    a1 = np.array([[1], [1], [1], [0]])
    w = naive_bayes(a0, a1, 2)
    assert w[0, 1] == math.log(3.5 / 5) - math.log(2.5 / 5)
    np.testing.assert_allclose(nb_score(w, a1), [w[0, 1], w[0, 1], w[0, 1], w[0, 0]])


def test_a_difference_in_one_later_action_is_caught() -> None:
    """Round 0 after the change: action 1 in 80 % of runs on D0, never on D1."""
    rng = np.random.default_rng(3)
    t0 = _transcripts(rng, 200, 12, 0.8)
    t1 = _transcripts(rng, 200, 12, 0.0)
    s0, s1, name = crossfit_scores(t0, t1, 0.02)
    bound = epsilon_lower_bound(s0, s1, 0.02)
    assert bound.epsilon_lb > 2.0, (bound, name)


def test_the_held_out_half_never_influences_the_fit() -> None:
    """Changing held-out runs changes only their own scores: the first halves (where the model
    and threshold are chosen) and every other held-out score stay the same."""
    rng = np.random.default_rng(5)
    t0 = _transcripts(rng, 100, 6, 0.6)
    t1 = _transcripts(rng, 100, 6, 0.2)
    s0, s1, name = crossfit_scores(t0, t1, 0.02)
    changed = Transcripts(t0.actions.copy(), t0.summary.copy())
    changed.actions[50:] = rng.integers(0, 3, size=(50, 6))
    changed.actions[60] = t0.actions[60]
    changed.summary[50:] = rng.normal(size=(50, 3)) * 100
    changed.summary[60] = t0.summary[60]
    u0, u1, other = crossfit_scores(changed, t1, 0.02)
    assert other == name
    np.testing.assert_array_equal(u0[:50], s0[:50])
    np.testing.assert_array_equal(u1, s1)
    assert u0[60] == s0[60]


def test_identical_transcript_distributions_rarely_give_a_positive_bound() -> None:
    """D0 = D1 in distribution: ε_lb > 0 is a coverage failure, ≤ 5 % expected."""
    rng = np.random.default_rng(11)
    trials = 150
    failures = 0
    for _ in range(trials):
        s0, s1, _ = crossfit_scores(_transcripts(rng, 80, 8, 0.3),
                                    _transcripts(rng, 80, 8, 0.3), 0.02)
        failures += epsilon_lower_bound(s0, s1, 0.02).epsilon_lb > 0
    assert failures <= 0.05 * trials + 4 * math.sqrt(trials * 0.05 * 0.95)
