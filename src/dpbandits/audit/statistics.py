"""Distinguishers for end-to-end policy audits, fitted on the selection half only (cross-fitted).

A policy audit observes, per run, the actions that later users see: one categorical action per
round after the changed record, plus a summary vector (per-arm counts or the sum of the chosen
features). Candidate scores are a naive-Bayes log-likelihood ratio of the per-round actions
(over every later round, or over the first few only) and Fisher's discriminant of the summary.

`epsilon_lower_bound` chooses its threshold on the first half of each sample and estimates the
rates on the second half. Here the first half is split again into two folds: each fold is scored
by the model fitted on the other fold (out-of-fold scores, used to choose the candidate and, in
`epsilon_lower_bound`, the threshold), and the second half by the average of the two fold models.
Nothing fitted ever sees the second half, so its rates stay valid (Jagielski et al. 2020;
Nasr et al. 2021).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpbandits.audit.bounds import selection_bound

SMOOTHING = 0.5
EARLY_ROUNDS = 3

Scorer = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Transcripts:
    """What later users see on one side of a pair: per-round actions and a summary per run."""

    actions: np.ndarray  # (runs, rounds) integer action indices after the changed round
    summary: np.ndarray  # (runs, p) per-arm counts or summed features after the changed round


def naive_bayes(actions0: np.ndarray, actions1: np.ndarray, n_values: int) -> np.ndarray:
    """Per-round log-ratio table w[r, k] = ln p̂₁(a_r = k) − ln p̂₀(a_r = k), add-½ smoothing."""
    rounds = actions0.shape[1]
    weights = np.zeros((rounds, n_values))
    n0, n1 = actions0.shape[0], actions1.shape[0]
    for r in range(rounds):
        c0 = np.bincount(actions0[:, r], minlength=n_values)
        c1 = np.bincount(actions1[:, r], minlength=n_values)
        weights[r] = (np.log((c1 + SMOOTHING) / (n1 + n_values * SMOOTHING))
                      - np.log((c0 + SMOOTHING) / (n0 + n_values * SMOOTHING)))
    return weights


def nb_score(weights: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """Σ_r w[r, a_r] for each run."""
    if actions.shape[1] == 0:
        return np.zeros(actions.shape[0])
    return weights[np.arange(actions.shape[1])[None, :], actions].sum(axis=1)


def fisher_direction(f0: np.ndarray, f1: np.ndarray, ridge: float = 1e-6) -> np.ndarray:
    """Fisher's discriminant w ∝ (Σ + ridge·I)⁻¹(m₁ − m₀), normalised (0 if the means agree)."""
    diff = f1.mean(axis=0) - f0.mean(axis=0)
    centred = np.vstack([f0 - f0.mean(axis=0), f1 - f1.mean(axis=0)])
    cov = centred.T @ centred / max(1, centred.shape[0] - 2)
    scale = float(np.trace(cov)) / max(1, cov.shape[0])
    w = np.linalg.solve(cov + ridge * scale * np.eye(cov.shape[0]), diff) if scale > 0 else diff
    norm = float(np.linalg.norm(w))
    return w / norm if norm > 0 else w


class Candidate:
    """A distinguisher family: `fit(train0, train1)` returns a scorer of transcripts."""

    name = ""

    def fit(self, t0: Transcripts, t1: Transcripts, n_values: int) -> Callable[[Transcripts],
                                                                               np.ndarray]:
        raise NotImplementedError


class NaiveBayes(Candidate):
    """Naive-Bayes likelihood ratio of the per-round actions (all rounds, or the first few)."""

    def __init__(self, rounds: int | None = None) -> None:
        self.rounds = rounds
        self.name = "naive-Bayes LR of every later action" if rounds is None else (
            f"naive-Bayes LR of the next {rounds} actions")

    def _cut(self, actions: np.ndarray) -> np.ndarray:
        return actions if self.rounds is None else actions[:, : self.rounds]

    def fit(self, t0: Transcripts, t1: Transcripts, n_values: int) -> Callable[[Transcripts],
                                                                               np.ndarray]:
        weights = naive_bayes(self._cut(t0.actions), self._cut(t1.actions), n_values)
        return lambda t: nb_score(weights, self._cut(t.actions))


class Fisher(Candidate):
    """Fisher's discriminant of the summary vector (per-arm counts or summed features)."""

    name = "Fisher discriminant of the action summary"

    def fit(self, t0: Transcripts, t1: Transcripts, n_values: int) -> Callable[[Transcripts],
                                                                               np.ndarray]:
        w = fisher_direction(t0.summary, t1.summary)
        return lambda t: t.summary @ w


CANDIDATES: tuple[Candidate, ...] = (NaiveBayes(), NaiveBayes(EARLY_ROUNDS), Fisher())


def _take(t: Transcripts, index: np.ndarray | slice) -> Transcripts:
    """The runs selected by `index`."""
    return Transcripts(t.actions[index], t.summary[index])


def crossfit_scores(
    t0: Transcripts,
    t1: Transcripts,
    delta: float,
    confidence: float = 0.95,
    candidates: tuple[Candidate, ...] = CANDIDATES,
) -> tuple[np.ndarray, np.ndarray, str]:
    """Scores for `epsilon_lower_bound`: out-of-fold on the first halves, and on the second
    halves the average of the two fold models of the candidate that does best out of fold."""
    n_values = int(max(t0.actions.max(initial=0), t1.actions.max(initial=0))) + 1
    h0, h1 = t0.actions.shape[0] // 2, t1.actions.shape[0] // 2
    sel0, sel1 = _take(t0, slice(0, h0)), _take(t1, slice(0, h1))
    test0, test1 = _take(t0, slice(h0, None)), _take(t1, slice(h1, None))
    folds0 = (np.arange(h0) % 2 == 0, np.arange(h0) % 2 == 1)
    folds1 = (np.arange(h1) % 2 == 0, np.arange(h1) % 2 == 1)
    best: tuple[float, np.ndarray, np.ndarray, str] | None = None
    for candidate in candidates:
        oof0, oof1 = np.zeros(h0), np.zeros(h1)
        held0, held1 = np.zeros(t0.actions.shape[0] - h0), np.zeros(t1.actions.shape[0] - h1)
        for fit_fold, score_fold in ((0, 1), (1, 0)):
            scorer = candidate.fit(_take(sel0, folds0[fit_fold]), _take(sel1, folds1[fit_fold]),
                                   n_values)
            oof0[folds0[score_fold]] = scorer(_take(sel0, folds0[score_fold]))
            oof1[folds1[score_fold]] = scorer(_take(sel1, folds1[score_fold]))
            held0 += 0.5 * scorer(test0)
            held1 += 0.5 * scorer(test1)
        value = selection_bound(oof0, oof1, delta, confidence)
        if best is None or value > best[0]:
            best = (value, np.concatenate([oof0, held0]), np.concatenate([oof1, held1]),
                    candidate.name)
    assert best is not None
    return best[1], best[2], best[3]
