"""A trusted shuffler for one batch of clients (Hanna et al., Section 5: shuffler semantics)."""

from __future__ import annotations

import numpy as np


class Shuffler:
    """Hides which client played which action: random assignment out, random order back."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def assign(self, counts: np.ndarray) -> np.ndarray:
        """Action index of each client in arrival order: a uniform permutation of the multiset."""
        multiset = np.repeat(np.arange(len(counts)), counts)
        return self.rng.permutation(multiset)

    def collect(self, actions: np.ndarray, reports: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(action, privatised report) pairs handed to the server in a fresh uniform order."""
        order = self.rng.permutation(len(actions))
        return actions[order], reports[order]


def per_action_sums(actions: np.ndarray, reports: np.ndarray, n_actions: int) -> np.ndarray:
    """Σ of the reports of each action: all the server keeps of a batch."""
    return np.bincount(actions, weights=reports, minlength=n_actions)
