"""Seconds per run of the non-private GLM baselines and the growth of run time with T.

Runs each baseline once per horizon T ∈ {1250, 2500, 5000} (d = 3, K = 20, S = 2, instance seed
109832; probit, and logistic for ECOLog) on one thread, prints CPU and wall seconds per run (the
instance is built outside the timer) and the exponent of a log-log fit of CPU time against T, and
writes benchmarks/results/glm_baselines.csv with the CPU model in every row. Absolute seconds
depend on the machine and its load; the ratios below are measured in one run and travel better:

- `--compare FILE`: CPU seconds of an earlier CSV divided by this run's, per (baseline, T) — the
  regression check of a later change (rerun the earlier state on the same machine when the load
  differs).
- `--authors PATH`: the authors' released code (a checkout of
  Sahasrajit123/Shuffle_joint_dp_generalized_linear_contextual_bandits) runs GLM-UCB, GLOC,
  RS-GLinUCB and EcoLog once on their own environment with the same instance parameters at the
  largest T, timed the same way (environment built outside the timer, rewards drawn per round);
  prints their CPU seconds over ours. Their GLM-UCB refits by L-BFGS-B every round: about a
  minute at T = 5000.

Usage: python benchmarks/bench_glm_baselines.py [--with-compat-glm-ucb] [--horizons 1250 2500 5000]
       [--compare OLD.csv] [--authors PATH]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import csv  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from machine import cpu_model  # noqa: E402

from dpbandits.instances.glm import GLMInstance  # noqa: E402
from dpbandits.policies import make_policy  # noqa: E402
from dpbandits.seeding import policy_rng  # noqa: E402

SEED = 109832
D, K, S = 3, 20, 2.0
BASELINES = [
    ("GLM-UCB", "probit", {}),
    ("GLOC", "probit", {}),
    ("ECOLog", "logistic", {}),
    ("RS-GLinUCB", "probit", {"variant": "T2"}),
    ("RS-GLinUCB", "probit", {"variant": "C"}),
]
COMPAT_GLM_UCB = ("GLM-UCB", "probit", {"solver": "compat"})
# our baseline → (the authors' class, its module, their model name)
AUTHORS = {
    "GLM-UCB": ("GlmUCB", "glm_ucb", "Probit"),
    "GLOC": ("Gloc", "gloc", "Probit"),
    "RS-GLinUCB (variant=C)": ("RS_GLinUCB", "rs_glinucb", "Probit"),  # their committed state
    "ECOLog": ("EcoLog", "ecolog", "Logistic"),
}
OUT = Path(__file__).resolve().parent / "results" / "glm_baselines.csv"



def label(name: str, params: dict) -> str:
    extra = ",".join(f"{k}={v}" for k, v in params.items())
    return f"{name} ({extra})" if extra else name


def time_run(name: str, family: str, params: dict, horizon: int) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, final cumulative regret) of one run of trial 0."""
    inst = GLMInstance(family, D, K, S, horizon, SEED)
    env = inst.environment(0)
    policy = make_policy(name, inst.info, policy_rng(SEED, 0, label(name, params), None),
                         delta=0.02, **params)
    wall, cpu = time.perf_counter(), time.process_time()
    result = policy.run(env)
    return time.perf_counter() - wall, time.process_time() - cpu, float(result.regret.sum())


def authors_environment(path: Path, model: str, horizon: int) -> object:
    """The authors' `GLMBandit` with this benchmark's instance (their code put on sys.path)."""
    if "tqdm" not in sys.modules:  # their environment imports tqdm for progress bars only
        try:
            import tqdm  # noqa: F401
        except ImportError:
            stub = types.ModuleType("tqdm")
            stub.tqdm = lambda iterable, *args, **kwargs: iterable  # type: ignore[attr-defined]
            sys.modules["tqdm"] = stub
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
    from environment import GLMBandit  # type: ignore[import-not-found]

    return GLMBandit(config={"full_norm": True, "seed": SEED, "model": model, "theta_dim": D,
                             "num_arms": K, "theta_norm": S, "horizon_length": horizon})


def time_authors_algorithm(env: object, algo: object) -> float:
    """CPU seconds of the authors' round loop (play, step, update) over their horizon."""
    cpu = time.process_time()
    for _ in range(env.T):  # type: ignore[attr-defined]
        act = algo.play_arm()  # type: ignore[attr-defined]
        rewards, regrets, arms = env.step([act])  # type: ignore[attr-defined]
        algo.update(rewards[0], regrets[0], arms)  # type: ignore[attr-defined]
    return time.process_time() - cpu


def time_authors(path: Path, baseline: str, horizon: int) -> float:
    """CPU seconds of one run of the authors' implementation of `baseline` (trial seed 0)."""
    cls_name, module, model = AUTHORS[baseline]
    env = authors_environment(path, model, horizon)
    cls = getattr(__import__(f"glmbanditexp.algorithms.{module}", fromlist=[cls_name]), cls_name)
    args = [env.get_first_action_set(), env.kappa, env.R, env.S, env.model]
    kwargs = {"rng": np.random.default_rng(0)}
    if cls_name in ("GlmUCB", "RS_GLinUCB"):
        args.append(env.T)
    if cls_name == "RS_GLinUCB":
        kwargs.update(use_sgd_optimizer=False, use_max_det_switch=False)
    return time_authors_algorithm(env, cls(*args, 0.02, **kwargs))


def compare(old: Path, rows: list[dict]) -> None:
    """Print earlier CPU seconds ÷ this run's per (baseline, T)."""
    with old.open() as fh:
        before = {(r["baseline"], int(r["T"])): float(r["cpu_seconds"]) for r in csv.DictReader(fh)}
    print(f"speed-up against {old} (earlier CPU s ÷ now):")
    for row in rows:
        key = (row["baseline"], row["T"])
        if key in before:
            print(f"  {key[0]:34s} T={key[1]:<6d} {before[key]:7.2f}s → {row['cpu_seconds']:7.2f}s"
                  f"  ×{before[key] / row['cpu_seconds']:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizons", type=int, nargs="+", default=[1250, 2500, 5000])
    parser.add_argument("--with-compat-glm-ucb", action="store_true",
                        help="also time GLM-UCB with the L-BFGS-B solver (about a minute a run)")
    parser.add_argument("--compare", type=Path, help="an earlier glm_baselines.csv")
    parser.add_argument("--authors", type=Path, help="checkout of the authors' repository")
    args = parser.parse_args()
    runs = BASELINES + ([COMPAT_GLM_UCB] if args.with_compat_glm_ucb else [])
    cpu = cpu_model()
    print(f"CPU: {cpu}; numpy {np.__version__}; one thread; CPU seconds per run (wall)")
    rows = []
    print(f"{'baseline':34s} {'family':8s} " + " ".join(f"{'T=' + str(T):>16s}" for T in
                                                     args.horizons) + "  exponent")
    for name, family, params in runs:
        # warm-up at the smallest T: lazy imports and first-call set-up (RS-GLinUCB's first
        # L-BFGS-B fit, which imports scipy.optimize, comes after T = 100)
        time_run(name, family, params, min(args.horizons))
        times = []
        for horizon in args.horizons:
            wall, cpu_s, regret = time_run(name, family, params, horizon)
            times.append(cpu_s)
            rows.append({"baseline": label(name, params), "family": family, "d": D, "K": K,
                         "T": horizon, "wall_seconds": round(wall, 4),
                         "cpu_seconds": round(cpu_s, 4), "final_regret": round(regret, 3),
                         "cpu_model": cpu})
        slope = (float(np.polyfit(np.log(args.horizons), np.log(times), 1)[0])
                 if len(set(args.horizons)) > 1 else float("nan"))
        for row in rows[-len(args.horizons):]:
            row["time_exponent"] = round(slope, 3)
        cells = " ".join(f"{row['cpu_seconds']:7.2f}s ({row['wall_seconds']:5.1f})"
                         for row in rows[-len(args.horizons):])
        print(f"{label(name, params):34s} {family:8s} {cells}  {slope:6.2f}", flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {OUT}")
    if args.compare is not None:
        compare(args.compare, rows)
    if args.authors is not None:
        horizon = max(args.horizons)
        print(f"the authors' code at T = {horizon} (their CPU s ÷ ours, same machine and run):")
        ours = {row["baseline"]: row["cpu_seconds"] for row in rows if row["T"] == horizon}
        for baseline in AUTHORS:
            theirs = time_authors(args.authors, baseline, horizon)
            print(f"  {baseline:34s} theirs {theirs:8.2f}s  ours {ours[baseline]:7.2f}s  "
                  f"×{theirs / ours[baseline]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
