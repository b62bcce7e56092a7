"""The mutation harness: weaken one private release at a time and see the checks catch it.

Each mutation patches the policy's own code for the duration of one run of its release checks
(`release_checks.check_case`, strict accounting): a noise scale × 0.1, a clip removed, a
declared sensitivity ÷ 10 (the noise calibrated for it), or noise drawn at × 0.1 while the
ledger states the plan. A mutation is caught when the checks report a violation; the score is
caught / total (docs/audits.md, "Mutation harness").
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any
from unittest import mock

from dpbandits.atomic import write_text_atomic
from dpbandits.audit.release_checks import CASES, CheckReport, PolicyCase, check_case
from dpbandits.errors import ConfigError
from dpbandits.jit import python_function
from dpbandits.policies import (
    adaprivate,
    dgs_linucb,
    elimination,
    episodic_zcdp,
    jdp_linucb,
    linear_core,
    private_glm,
    shuffle_glm,
)
from dpbandits.privacy import dpsgd, exact_noise, release, shuffle_gd, tree, vector_sum

WEAKENINGS = ("noise × 0.1", "reward clip removed", "context clip removed",
              "sensitivity ÷ 10", "ledger from the plan",
              # Private-GLM's and JDP-LinUCB's tree nodes; Private-GLM's noisy-GD fits and
              # Shuffle-GLM's second release, P_GD's gradient sums
              "tree-node noise × 0.1", "gradient noise × 0.1", "gradient clip removed",
              "gradient ledger from the plan")


@contextmanager
def _noise_cut() -> Iterator[None]:
    """Every calibrated σ of the policy × 0.1 (the release and its ledger see the cut)."""
    calibrate = linear_core.LinearPolicy.calibrate_release

    def cut(self: Any, sigma: float, sensitivity: float) -> float:
        return 0.1 * calibrate(self, sigma, sensitivity)

    with mock.patch.object(linear_core.LinearPolicy, "calibrate_release", cut):
        yield


@contextmanager
def _reward_clip_removed() -> Iterator[None]:
    """Rewards enter the statistics unclipped."""
    with mock.patch.object(linear_core, "clip_reward", lambda r: r):
        yield


@contextmanager
def _context_clip_removed() -> Iterator[None]:
    """Arm features enter the statistics unclipped."""
    with mock.patch.object(linear_core.LinearPolicy, "clips_contexts", property(lambda s: False)):
        yield


@contextmanager
def _sensitivity_tenth() -> Iterator[None]:
    """The reward's sensitivity declared ÷ 10 and the noise calibrated for it."""
    with mock.patch.object(adaprivate.BatchedPrivatePolicy, "REWARD_SENSITIVITY", 0.1):
        yield


@contextmanager
def _dgs_sensitivity_tenth() -> Iterator[None]:
    """DGS-LinUCB's Δ_t = 1/λ_min(A_t) declared ÷ 10 and σ_t calibrated for it."""
    with mock.patch.object(dgs_linucb.DGSLinUCB, "REWARD_SENSITIVITY", 0.1):
        yield


@contextmanager
def _episode_sensitivity_tenth() -> Iterator[None]:
    """The episodic releases' Δ (1/λ_min(A^(ℓ)) of θ̂, 1 of a b increment) declared ÷ 10 and
    σ calibrated for it."""
    with mock.patch.object(episodic_zcdp._EpisodeBase, "REWARD_SENSITIVITY", 0.1):
        yield


@contextmanager
def _ledger_from_plan() -> Iterator[None]:
    """The noise drawn at × 0.1 of the scale the release (and its ledger entry) states."""
    draw = release.draw

    def weak(noise: Any, statistic: Any, mechanism: str, scale: float) -> Any:
        return draw(noise, statistic, mechanism, 0.1 * scale)

    with mock.patch.object(release, "draw", weak):
        yield


@contextmanager
def _elimination_noise_cut() -> Iterator[None]:
    """The eliminations' Laplace scale b (per core sum or per report) × 0.1."""
    scale = elimination.release_scale

    def cut(cfg: Any, epsilon: float) -> float:
        return 0.1 * scale(cfg, epsilon)

    with mock.patch.object(elimination, "release_scale", cut):
        yield


@contextmanager
def _elimination_clip_removed() -> Iterator[None]:
    """The eliminations' rewards enter the sums and reports unclipped."""
    with mock.patch.object(elimination, "clip_rewards", lambda rewards, bound: rewards):
        yield


@contextmanager
def _elimination_sensitivity_tenth() -> Iterator[None]:
    """The eliminations' declared Δ ÷ 10 and b = Δ/ε calibrated for it."""
    config = elimination.PrivateElimination._config

    def tenth(self: Any) -> elimination.EliminationConfig:
        cfg = config(self)
        cfg.sensitivity /= 10.0
        return cfg

    with mock.patch.object(elimination.PrivateElimination, "_config", tenth):
        yield


def _blanket_cut(params: Any) -> Any:
    """P_vec's parameters with b ÷ 100: the per-coordinate σ̃ × ≈0.1 (and ε(b) × 10)."""
    return replace(params, b=max(1, params.b // 100))


@contextmanager
def _blanket_cut_in(module: Any) -> Iterator[None]:
    """The vector sums `module` plans (SymSum in shuffle_glm, P_GD's in shuffle_gd) drawn with
    b ÷ 100 (σ̃ × 0.1); the ledger prices the b drawn."""
    plan = module.vector_sum_params
    with mock.patch.object(module, "vector_sum_params",
                           lambda *a, **k: _blanket_cut(plan(*a, **k))):
        yield


@contextmanager
def _shuffle_glm_context_clip_removed() -> Iterator[None]:
    """Contexts enter the Gram matrix unclipped: the policy's clip to the unit ball and the
    summation's refusal of a vector beyond its bound (the clip's second line) both removed."""
    def unchecked(vectors: Any, params: Any) -> Any:
        import numpy as np

        return np.ascontiguousarray(np.atleast_2d(np.asarray(vectors, dtype=float)))

    with mock.patch.object(shuffle_glm.ShuffleGLM, "clips_contexts", property(lambda s: False)), \
            mock.patch.object(vector_sum, "_check_vectors", unchecked):
        yield


@contextmanager
def _shuffle_gradient_clip_removed() -> Iterator[None]:
    """P_GD's per-user gradients enter the sums unclipped (its loop run as Python with
    `clip_factor` ≡ 1)."""
    with mock.patch.object(shuffle_gd, "gd_steps", python_function(shuffle_gd.gd_steps)), \
            mock.patch.object(shuffle_gd, "clip_factor", lambda norm, bound: 1.0):
        yield


@contextmanager
def _gram_ledger_from_plan() -> Iterator[None]:
    """SymSum's blanket noise drawn from n·b/100 bits while its release states the b planned."""
    deviation = vector_sum.blanket_deviation
    with mock.patch.object(vector_sum, "blanket_deviation",
                           lambda trials, *a: deviation(trials // 100, *a)):
        yield


@contextmanager
def _shuffle_gradient_ledger_from_plan() -> Iterator[None]:
    """P_GD's blanket noise drawn from n·b/100 bits while its release states the b planned."""
    split = shuffle_gd.blanket_split
    with mock.patch.object(shuffle_gd, "blanket_split", lambda trials: split(trials // 100)):
        yield


@contextmanager
def _private_glm_noise_cut() -> Iterator[None]:
    """Private-GLM: every tree's calibrated σ × 0.1 (its ledger entry prices the cut)."""
    calibrate = private_glm.tree_calibration

    def cut(*args: Any) -> tuple[float, float]:
        sigma, sensitivity = calibrate(*args)
        return 0.1 * sigma, sensitivity

    with mock.patch.object(private_glm, "tree_calibration", cut):
        yield


@contextmanager
def _tree_node_noise_cut() -> Iterator[None]:
    """Every tree node's noise Z_j drawn × 0.1; the tree's ledger entry states σ."""
    draw = tree.MatrixTree._draw

    def weak(self: Any, count: int | None) -> Any:
        return 0.1 * draw(self, count)

    with mock.patch.object(tree.MatrixTree, "_draw", weak):
        yield


@contextmanager
def _noisy_gd_noise_cut() -> Iterator[None]:
    """The noisy-GD fits' gradient noise drawn × 0.1; the fit's ledger entry states σ."""
    draws = dpsgd.gradient_draws

    def weak(*args: Any) -> Any:
        return 0.1 * draws(*args)

    with mock.patch.object(dpsgd, "gradient_draws", weak):
        yield


@contextmanager
def _private_glm_ledger_from_plan() -> Iterator[None]:
    """Private-GLM (strict): every noise it draws (tree nodes, the fits' counts and gradient
    sums) at × 0.1 of the scale its releases and ledger entries state."""
    gaussian = exact_noise.ExactNoise.gaussian

    def weak(self: Any, sigma: float, size: Any = None) -> Any:
        return 0.1 * gaussian(self, sigma, size)

    with _tree_node_noise_cut(), mock.patch.object(exact_noise.ExactNoise, "gaussian", weak):
        yield


@contextmanager
def _private_glm_context_clip_removed() -> Iterator[None]:
    """Private-GLM (strict): contexts enter the trees and fits unclipped."""
    with mock.patch.object(private_glm.PrivateGLM, "clips_contexts",
                           property(lambda s: False)):
        yield


@contextmanager
def _private_glm_sensitivity_tenth() -> Iterator[None]:
    """Private-GLM: the V tree calibrated and declared at Δ_V ÷ 10."""
    with mock.patch.object(private_glm, "V_SENSITIVITY", private_glm.V_SENSITIVITY / 10):
        yield


@contextmanager
def _jdp_sensitivity_tenth() -> Iterator[None]:
    """JDP-LinUCB: the leaf bound L̃² ÷ 10, so Δ = √2·L̃² and σ_n ∝ L̃² both ÷ 10."""
    with mock.patch.object(jdp_linucb, "L_TILDE", jdp_linucb.L_TILDE / math.sqrt(10.0)):
        yield


Patch = Callable[[], AbstractContextManager[None]]

TS_FAMILY_PATCHES: dict[str, Patch] = dict(
    zip(WEAKENINGS[:5], (_noise_cut, _reward_clip_removed, _context_clip_removed,
                         _sensitivity_tenth, _ledger_from_plan), strict=True))

# The eliminations' contexts (the actions) are public: no context clip.
ELIMINATION_PATCHES: dict[str, Patch] = {
    "noise × 0.1": _elimination_noise_cut, "reward clip removed": _elimination_clip_removed,
    "sensitivity ÷ 10": _elimination_sensitivity_tenth, "ledger from the plan": _ledger_from_plan,
}

# For every checked policy, its weakenings (a subset of WEAKENINGS) and how each is made.
PATCHES: dict[str, dict[str, Patch]] = {
    policy: TS_FAMILY_PATCHES
    for policy in ("AdaPrivate-TS", "AdaPrivate-TS-Amp", "AdaPrivate-TS-Adaptive",
                   "AdaPrivate-UCB")
}
PATCHES.update({policy: ELIMINATION_PATCHES for policy in
                ("CentralDPElimination", "LocalDPElimination", "ShuffleDPElimination")})
# Shuffle-GLM: no "sensitivity ÷ 10" (P_vec clips or refuses at the bound it is calibrated
# for: docs/audits.md, "Mutation harness"); rewards enter only P_GD's clipped gradients.
PATCHES["Shuffle-GLM"] = {
    "noise × 0.1": partial(_blanket_cut_in, shuffle_glm),
    "context clip removed": _shuffle_glm_context_clip_removed,
    "ledger from the plan": _gram_ledger_from_plan,
    "gradient noise × 0.1": partial(_blanket_cut_in, shuffle_gd),
    "gradient clip removed": _shuffle_gradient_clip_removed,
    "gradient ledger from the plan": _shuffle_gradient_ledger_from_plan,
}
# The zCDP linear baselines: the TS family's patches (they share `calibrate_release`, the clips
# and `release.draw`) and their own declared sensitivities.
PATCHES["DGS-LinUCB"] = {**TS_FAMILY_PATCHES, "sensitivity ÷ 10": _dgs_sensitivity_tenth}
PATCHES.update({policy: {**TS_FAMILY_PATCHES, "sensitivity ÷ 10": _episode_sensitivity_tenth}
                for policy in ("zCDP-Episodic", "RarelySwitching-zCDP", "AdaC-OFUL-zCDP")})
PATCHES["Private-GLM"] = {
    "noise × 0.1": _private_glm_noise_cut,
    "context clip removed": _private_glm_context_clip_removed,
    "sensitivity ÷ 10": _private_glm_sensitivity_tenth,
    "ledger from the plan": _private_glm_ledger_from_plan,
    "tree-node noise × 0.1": _tree_node_noise_cut, "gradient noise × 0.1": _noisy_gd_noise_cut,
}
# JDP-LinUCB's σ_n × 0.1 is not a weakening of its claim: Shariff & Sheffet's calibration
# spends ρ ≈ 1.9·10⁻⁴ of the 0.0198 that (1, 10⁻⁵) allows, and the cut tree's ρ (100×) still
# fits (docs/audits.md, "Mutation harness"); the noise drawn below the σ its ledger states is.
PATCHES["JDP-LinUCB"] = {
    "reward clip removed": _reward_clip_removed,
    "context clip removed": _context_clip_removed, "sensitivity ÷ 10": _jdp_sensitivity_tenth,
    "ledger from the plan": _tree_node_noise_cut,
}


@dataclass(frozen=True)
class Mutation:
    """One weakening of one policy's release."""

    policy: str
    weakening: str

    @property
    def name(self) -> str:
        return f"{self.policy}: {self.weakening}"


@dataclass(frozen=True)
class MutationResult:
    """Whether the checks caught a mutation, and the first violation they reported."""

    policy: str
    weakening: str
    caught: bool
    pairs: int
    evidence: str


def catalogue(policies: list[str] | None = None) -> list[tuple[Mutation, PolicyCase]]:
    """Every weakening of every checked policy (or of the named ones)."""
    return [(Mutation(case.policy, w), case) for case in CASES
            if policies is None or case.policy in policies
            for w in WEAKENINGS if w in PATCHES[case.policy]]


def mutation_named(name: str) -> Mutation:
    """The catalogue's mutation called `name` ("<policy>: <weakening>")."""
    known = {m.name: m for m, _ in catalogue()}
    if name not in known:
        raise ConfigError(f"mutation {name!r} is not allowed; allowed: {', '.join(known)}")
    return known[name]


def checks_with(mutation: Mutation | None, modes: tuple[str, ...] = ("strict", "paper"),
                seeds: int = 3) -> CheckReport:
    """The release checks of every case in each mode, the mutated policy's with its
    weakening applied (the snakemake target's negative control)."""
    report = CheckReport()
    for case in CASES:
        for mode in modes:
            if mutation is not None and case.policy == mutation.policy:
                with PATCHES[case.policy][mutation.weakening]():
                    check_case(case, mode, seeds, report)
            else:
                check_case(case, mode, seeds, report)
    return report


def run_mutation(mutation: Mutation, case: PolicyCase, seeds: int = 1) -> MutationResult:
    """The release checks of `case` (strict) with `mutation` applied."""
    with PATCHES[case.policy][mutation.weakening]():
        report = check_case(case, "strict", seeds)
    evidence = report.violations[0] if report.violations else ""
    return MutationResult(mutation.policy, mutation.weakening, bool(report.violations),
                          report.pairs, evidence)


def run_mutations(policies: list[str] | None = None, seeds: int = 1) -> list[MutationResult]:
    """Every mutation of the catalogue, one at a time."""
    return [run_mutation(m, case, seeds) for m, case in catalogue(policies)]


def score(results: list[MutationResult]) -> tuple[int, int]:
    """(caught, total)."""
    return sum(r.caught for r in results), len(results)


def coverage_lines(results: list[MutationResult]) -> list[str]:
    """The mutation score and one Markdown row per policy: caught / total per weakening."""
    caught, total = score(results)
    lines = [f"Mutation score of the release checks: {caught} / {total} weakenings caught "
             "(strict accounting; docs/audits.md, \"Mutation harness\").", "",
             "| policy | " + " | ".join(WEAKENINGS) + " | caught |",
             "|---|" + "---|" * (len(WEAKENINGS) + 1)]
    for policy in dict.fromkeys(r.policy for r in results):
        mine = {r.weakening: r for r in results if r.policy == policy}
        cells = [("caught" if mine[w].caught else "**MISSED**") if w in mine else "n/a"
                 for w in WEAKENINGS]
        got = sum(r.caught for r in mine.values())
        lines.append(f"| {policy} | " + " | ".join(cells) + f" | {got} / {len(mine)} |")
    return lines


def write_results(path: str | Path, results: list[MutationResult]) -> None:
    """The results as JSON (atomically)."""
    write_text_atomic(path, json.dumps([asdict(r) for r in results], indent=1) + "\n")


def read_results(path: str | Path) -> list[MutationResult]:
    """Results written by `write_results`."""
    return [MutationResult(**row) for row in json.loads(Path(path).read_text())]
