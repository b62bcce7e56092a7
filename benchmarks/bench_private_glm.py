"""Speed of Private-GLM (Algorithm 2) and Shuffle-GLM (Algorithm 1).

1. One Private-GLM run, Table 2 setting (probit, d=3, K=20, T=5000, S=2, ε=4), paper and strict
   accounting, with a cold and a warm accountant cache. Target: ≤ 5 s on one core (the authors'
   code: 320–780 s).
2. The private part of Table 2 (3 S × 3 ε × 10 trials × 2 accountings = 180 runs): one trial
   per (S, ε, accounting) is timed (cold cache) and scaled by 10 to a CPU-minutes estimate.
3. With --shuffle: Shuffle-GLM at T = 20000 (d=3, K=10, ε huge, practical c_b, capped B₁),
   an end-to-end check that it learns (last-half mean regret < first-half).
4. With --authors PATH (a checkout of the authors' repository
   Sahasrajit123/Shuffle_joint_dp_generalized_linear_contextual_bandits): their Private-GLM,
   one run at the setting of 1. on the same instance, against ours in paper mode (their CPU
   seconds ÷ ours, measured in one run). Theirs takes several minutes.

CPU (process) time is reported: what a run costs on one core even when the machine is shared.
Run under `nice -n 10`.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from bench_glm_baselines import authors_environment, time_authors_algorithm  # noqa: E402
from machine import machine_line  # noqa: E402

from dpbandits.instances.glm import GLMInstance  # noqa: E402
from dpbandits.policies import make_policy  # noqa: E402
from dpbandits.privacy import accountant  # noqa: E402
from dpbandits.seeding import policy_rng  # noqa: E402

SEED = 109832


def fresh_cache() -> None:
    os.environ["DPBANDITS_CACHE"] = tempfile.mkdtemp(prefix="dpbandits-bench-")
    accountant.clear_memo()


def one_run(inst: GLMInstance, trial: int, eps: float,
            accounting: str) -> tuple[float, float, float]:
    """(cpu seconds, wall seconds, cumulative regret) of one Private-GLM run."""
    env = inst.environment(trial)
    policy = make_policy("Private-GLM", inst.info, policy_rng(SEED, trial, "Private-GLM", eps),
                         epsilon=eps, delta=0.02, accounting=accounting)
    cpu, wall = time.process_time(), time.perf_counter()
    result = policy.run(env)
    return time.process_time() - cpu, time.perf_counter() - wall, float(result.regret.sum())


def single_runs() -> None:
    inst = GLMInstance("probit", 3, 20, 2.0, 5000, SEED)
    print("1. One Private-GLM run (probit d=3 K=20 T=5000 S=2 eps=4)")
    for accounting in ("paper", "strict"):
        fresh_cache()
        cold = one_run(inst, 0, 4.0, accounting)
        warm = one_run(inst, 0, 4.0, accounting)
        print(f"   {accounting:6s} cold cache: cpu {cold[0]:5.2f} s  wall {cold[1]:5.2f} s  "
              f"regret {cold[2]:7.1f} | warm cache: cpu {warm[0]:5.2f} s  wall {warm[1]:5.2f} s")


def table2_estimate(trials: int) -> None:
    print(f"2. Table 2 private part: {trials} timed trial(s) per cell, cold accountant cache")
    fresh_cache()
    total = 0.0
    for S in (2.0, 2.5, 3.0):
        inst = GLMInstance("probit", 3, 20, S, 5000, SEED)
        for eps in (4.0, 6.0, 8.0):
            for accounting in ("paper", "strict"):
                cpus = [one_run(inst, t, eps, accounting)[0] for t in range(trials)]
                total += float(np.mean(cpus)) * 10
                print(f"   S={S} eps={eps:g} {accounting:6s} cpu/run {np.mean(cpus):5.2f} s")
    print(f"   estimate for 180 runs: {total / 60:.2f} CPU-minutes (instance generation excluded)")


def shuffle_check() -> None:
    print("3. Shuffle-GLM end-to-end (logistic d=3 K=10 S=2 T=20000, eps=1e6, c_b=1)")
    inst = GLMInstance("logistic", 3, 10, 2.0, 20000, 7)
    policy = make_policy("Shuffle-GLM", inst.info, np.random.default_rng(0), epsilon=1e6,
                         delta=0.02, c_b=1.0, log_arg="practical")
    cpu = time.process_time()
    regret = policy.run(inst.environment(0)).regret
    half = regret.size // 2
    print(f"   batches {policy.lengths}; cpu {time.process_time() - cpu:.1f} s")
    print(f"   mean regret first half {regret[:half].mean():.4f}, "
          f"second half {regret[half:].mean():.4f} (sublinear: "
          f"{regret[half:].mean() < regret[:half].mean()})")


def authors_comparison(path: Path) -> None:
    print("4. The authors' Private-GLM against ours (probit d=3 K=20 T=5000 S=2 eps=4, one run)")
    env = authors_environment(path, "Probit", 5000)
    from glmbanditexp.algorithms.private_rs_glinucb import (  # type: ignore[import-not-found]
        Private_RS_GLinUCB,
    )

    algo = Private_RS_GLinUCB(env.get_first_action_set(), env.kappa, env.kappa_star, env.R,
                              env.S, env.model, env.T, 0.02, 4.0, 0.02,
                              rng=np.random.default_rng(0))
    theirs = time_authors_algorithm(env, algo)
    fresh_cache()
    ours = one_run(GLMInstance("probit", 3, 20, 2.0, 5000, SEED), 0, 4.0, "paper")[0]
    print(f"   theirs {theirs:8.2f} CPU-s  ours {ours:6.2f} CPU-s (cold cache)  "
          f"×{theirs / ours:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1, help="timed trials per Table 2 cell")
    parser.add_argument("--shuffle", action="store_true", help="also run the Shuffle-GLM check")
    parser.add_argument("--authors", type=Path, help="checkout of the authors' repository")
    args = parser.parse_args()
    print(machine_line())
    single_runs()
    table2_estimate(args.trials)
    if args.shuffle:
        shuffle_check()
    if args.authors is not None:
        authors_comparison(args.authors)


if __name__ == "__main__":
    main()
