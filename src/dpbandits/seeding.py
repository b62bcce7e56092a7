"""Stable seeding: every random stream derives from integer keys through SeedSequence."""

from __future__ import annotations

import zlib

import numpy as np


def stable_key(*parts: object) -> int:
    """Map names/numbers to a 32-bit integer that is the same on every machine (never hash())."""
    text = "\x1f".join(repr(p) for p in parts)
    return zlib.crc32(text.encode("utf-8"))


def reward_rng(root: int, trial: int) -> np.random.Generator:
    """Reward-noise stream of one trial: shared by every algorithm (common random numbers)."""
    return np.random.default_rng(np.random.SeedSequence(root, spawn_key=(trial, 0)))


def policy_rng(root: int, trial: int, algorithm: str, epsilon: float | None) -> np.random.Generator:
    """Algorithm randomness of one trial, keyed by the algorithm label and its ε."""
    key = stable_key(algorithm, None if epsilon is None else float(epsilon))
    return np.random.default_rng(np.random.SeedSequence(root, spawn_key=(trial, 1, key)))


def instance_rng(root: int, trial: int, stream: int = 2) -> np.random.Generator:
    """Per-trial instance stream (used when an instance is redrawn per trial)."""
    return np.random.default_rng(np.random.SeedSequence(root, spawn_key=(trial, stream)))
