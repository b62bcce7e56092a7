"""DP-SGD as the authors ran it and the strict noisy GD.

docs/glm.md, "DP-SGD and the RDP accountant" and "Strict fits".
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits.links import LINKS, get_link
from dpbandits.privacy import _sgd, accountant
from dpbandits.privacy import dpsgd as dpsgd_module
from dpbandits.privacy.dpsgd import (
    clipped_gradients,
    dpsgd_fit,
    noisy_gd_fit,
    replace_one_epsilon,
    select_epochs,
    sgd_passes,
    starting_epochs,
    strict_sigma,
)

PROBIT = get_link("probit")


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DPBANDITS_CACHE", str(tmp_path))
    accountant.clear_memo()
    yield
    accountant.clear_memo()


class RecordingRng:
    """Duck-typed Generator that records every normal draw (scale and values)."""

    def __init__(self, seed: int) -> None:
        self.g = np.random.default_rng(seed)
        self.normals: list[tuple[float, np.ndarray]] = []

    def shuffle(self, a: np.ndarray) -> None:
        self.g.shuffle(a)

    def normal(self, loc: float, scale: float, size=None):
        out = self.g.normal(loc, scale, size)
        self.normals.append((scale, np.atleast_1d(out)))
        return out


def test_starting_epochs() -> None:
    assert [starting_epochs(e) for e in (0.05, 0.1, 0.2, 0.3, 0.9, 1.5, 2.0, 3.0)] == [
        15, 15, 25, 25, 50, 75, 75, 100]


def test_epoch_search_matches_the_logs() -> None:
    """n ≤ 2048 → E = 12, B = 5; n = 4371, b = 2048 → E = 38, B = 15."""
    epochs, burn, sigma = select_epochs(0.2222222, 7.407407e-4, 1082, 1082, 3)
    assert (epochs, burn) == (12, 5)
    assert sigma == pytest.approx(37.9400, rel=1e-3)
    epochs, burn, _ = select_epochs(0.2962963, 7.407407e-4, 4371, 2048, 3)
    assert (epochs, burn) == (38, 15)


def _data(rng: np.random.Generator, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    x = rng.normal(size=(n, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x, (rng.random(n) < 0.5).astype(float)


def test_clipping() -> None:
    rng = np.random.default_rng(0)
    x, y = _data(rng, 500, 4)
    g = clipped_gradients(rng.normal(size=4) * 5, 3 * x, y, PROBIT, 0.2)
    assert np.all(np.linalg.norm(g, axis=1) <= 0.2 * (1 + 1e-12))
    small = clipped_gradients(np.zeros(4), 0.1 * x, y, PROBIT, 0.2)
    assert np.allclose(small, (0.5 - y)[:, None] * 0.1 * x)  # below C: untouched


def test_dpsgd_noise_steps_and_averaging() -> None:
    """With X = 0 the iterates are θ₀ − Σ lr_k ξ_k: check σC/b, E·spe steps, burn-in mean."""
    n, d, eps0, delta0 = 3000, 3, 0.2962963, 7.407407e-4
    x, y = np.zeros((n, d)), np.ones(n)
    theta0 = np.array([0.3, -0.2, 0.1])
    rng = RecordingRng(1)
    fit = dpsgd_fit(theta0, x, y, eps0, delta0, PROBIT, rng, lam=0.0)
    assert fit.batch == 2048 and fit.steps == fit.epochs * (n // 2048)
    draws = np.concatenate([v.reshape(-1, d) for _, v in rng.normals])
    assert len(draws) == fit.steps
    assert all(scale == pytest.approx(fit.sigma * 0.2 / 2048) for scale, _ in rng.normals)
    theta, iterates, k = theta0.copy(), [], 0
    spe = n // 2048
    for _ in range(fit.epochs):
        for _ in range(spe):
            theta = theta - 10.0 / math.sqrt(k + 1) * draws[k]
            k += 1
        iterates.append(theta)
    assert np.allclose(fit.theta, np.mean(iterates[fit.burn_in:], axis=0), atol=1e-12)


def test_dpsgd_injected_noise_std() -> None:
    rng = RecordingRng(2)
    x, y = _data(np.random.default_rng(3), 400, 3)
    draws = []
    for _ in range(40):
        rng.normals.clear()
        fit = dpsgd_fit(np.zeros(3), x, y, 0.2222222, 7.407407e-4, PROBIT, rng)
        draws.extend(v for _, v in rng.normals)
    draws = np.concatenate(draws)
    target = fit.sigma * 0.2 / 400
    se = math.sqrt(2.0 / (draws.size - 1))
    assert abs(draws.std(ddof=1) / target - 1) < 5 * se


def test_actual_replace_one_cost_exceeds_claim() -> None:
    x, y = _data(np.random.default_rng(4), 900, 3)
    fit = dpsgd_fit(np.zeros(3), x, y, 0.2222222, 7.407407e-4, PROBIT, np.random.default_rng(5))
    actual = replace_one_epsilon(fit)
    assert actual > 1.5 * fit.epsilon
    assert actual == pytest.approx(accountant.dpsgd_epsilon(
        fit.sigma / 2, fit.delta, fit.steps, fit.n, fit.batch, target_epsilon=fit.epsilon))


def test_strict_fit_noise_and_projection() -> None:
    """σ = √((K+1)/(2ρ)); one count draw of std σ, then K draws of std 2Cσ; ‖θ‖ ≤ S."""
    x, y = _data(np.random.default_rng(6), 300, 3)
    rng = RecordingRng(7)
    rho = 0.02
    fit = noisy_gd_fit(np.full(3, 5.0), x, y, rho, PROBIT, rng, radius=2.0)
    sigma = math.sqrt(13 / (2 * rho))
    assert fit.sigma == pytest.approx(sigma) == strict_sigma(rho)
    scales = [s for s, _ in rng.normals]
    assert scales[0] == pytest.approx(sigma)
    assert scales[1:] == pytest.approx([2 * 0.2 * sigma] * 12)
    assert np.linalg.norm(fit.theta) <= 2.0 + 1e-12
    for seed in range(20):  # huge noise: every iterate is projected
        out = noisy_gd_fit(np.zeros(3), x, y, 1e-6, PROBIT, np.random.default_rng(seed),
                           radius=1.5)
        assert np.linalg.norm(out.theta) <= 1.5 + 1e-12


def numpy_passes(theta: np.ndarray, X: np.ndarray, y: np.ndarray, link, rng, starts: range,
                 batch: int, epochs: int, burn_in: int, **kwargs: float) -> np.ndarray:
    """The passes of `sgd_passes` written step by step in numpy, one noise draw per step."""
    clip, lam, lr0, noise_std = (kwargs[key] for key in ("clip", "lam", "lr0", "noise_std"))
    order, total, kept, k = np.arange(X.shape[0]), np.zeros(X.shape[1]), 0, 0
    for e in range(epochs):
        rng.shuffle(order)
        for start in starts:
            k += 1
            idx = order[start:start + batch]
            g = clipped_gradients(theta, X[idx], y[idx], link, clip).mean(axis=0)
            g += 2.0 * lam * theta
            theta = theta - (lr0 / math.sqrt(k)) * (g + rng.normal(0.0, noise_std, size=X.shape[1]))
        if e >= burn_in:
            total += theta
            kept += 1
    return total / kept if kept else theta


def _passes_case(rng: np.random.Generator, family: str) -> tuple[tuple, dict[str, float]]:
    """Rows, a start point and minibatches as Private-GLM's fits make them: full minibatches
    (drop-last) or ab8fd16's with a short last one; gradients below and above the clip."""
    n, d = int(rng.integers(2, 2600)), int(rng.integers(1, 7))
    x = rng.normal(size=(n, d)) * rng.uniform(0.05, 2.0)
    y = (rng.random(n) < 0.5).astype(float) if LINKS[family].binary else rng.normal(size=n)
    batch = min(n, int(rng.integers(1, 2100)))
    starts = range(0, max(1, n // batch) * batch, batch) if rng.random() < 0.5 \
        else range(0, n, batch)
    args = (rng.normal(size=d), x, y, LINKS[family], starts, batch, int(rng.integers(1, 5)),
            int(rng.integers(0, 3)))
    return args, {"clip": 0.2, "lam": 1e-5, "lr0": float(rng.choice([0.5, 10.0])),
                  "noise_std": float(rng.choice([0.0, 1e-3, 1.0]))}


@pytest.mark.parametrize("family", ["logistic", "probit", "linear"])
def test_compiled_passes_are_the_numpy_steps(monkeypatch: pytest.MonkeyPatch,
                                             family: str) -> None:
    """θ̄ bit for bit and the generator's state after it, against one numpy step and one noise
    draw per step, with the compiled steps and without; d = 1 (numpy sums one column pairwise)
    takes numpy's steps. With noise, twice the noise gives another θ̄ (negative control)."""
    rng, made = np.random.default_rng(30), []
    real = _sgd.sgd_steps

    def counted(*args: object) -> tuple[np.ndarray, int]:
        found = real(*args)
        made.append(found[1] == args[6])
        return found

    monkeypatch.setattr(_sgd, "sgd_steps", counted)
    for case in range(16):
        (theta0, x, y, link, starts, *rest), kwargs = _passes_case(rng, family)
        made.clear()
        mine, numpys, plain = (np.random.default_rng(case) for _ in range(3))
        out = sgd_passes(theta0, x, y, link, mine, starts, *rest, **kwargs)
        expected = numpy_passes(theta0, x, y, link, numpys, starts, *rest, **kwargs)
        assert out.tobytes() == expected.tobytes()
        assert mine.bit_generator.state == numpys.bit_generator.state
        assert all(made) and len(made) == (rest[1] if x.shape[1] >= 2 else 0)
        with monkeypatch.context() as patch:
            patch.setattr(dpsgd_module, "compiled_steps", lambda *args: False)
            alone = sgd_passes(theta0, x, y, link, plain, starts, *rest, **kwargs)
        assert alone.tobytes() == expected.tobytes()
        if kwargs["noise_std"]:  # the noise rows reach θ̄ (negative control)
            louder = kwargs | {"noise_std": 2.0 * kwargs["noise_std"]}
            assert sgd_passes(theta0, x, y, link, np.random.default_rng(case), starts, *rest,
                              **louder).tobytes() != out.tobytes()


def test_steps_handed_over_partway_are_the_numpy_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled call stopping after k of an epoch's steps and numpy's making the rest."""
    x, y = _data(np.random.default_rng(6), 5000, 4)
    starts, kwargs = range(0, 4096, 512), {"clip": 0.2, "lam": 1e-5, "lr0": 10.0,
                                           "noise_std": 0.01}
    expected = numpy_passes(np.zeros(4), x, y, PROBIT, np.random.default_rng(7), starts, 512,
                            3, 1, **kwargs)
    real = _sgd.sgd_steps
    for k in (0, 1, 5, 7):
        made: list[int] = []

        def partway(*args, k=k, made=made):  # noqa: ANN001, ANN202
            args = list(args)
            args[6], args[8] = k, args[8][:k]
            made.append(real(*args)[1])
            return real(*args)

        monkeypatch.setattr(_sgd, "sgd_steps", partway)
        out = sgd_passes(np.zeros(4), x, y, PROBIT, np.random.default_rng(7), starts, 512, 3, 1,
                         **kwargs)
        assert made == [k] * 3  # each epoch: k compiled steps, then numpy's
        assert out.tobytes() == expected.tobytes()


def test_compiled_steps_leave_nan_to_numpy() -> None:
    """A NaN reward in the second minibatch: the first step is made, the second is not and
    θ is the first step's."""
    x, y = np.eye(4), np.array([0.0, 1.0, np.nan, 1.0])
    args = (x, y, np.arange(4), np.zeros(4), 0, 2, 2, 2, np.zeros((2, 4)), 0, 0.2, 0.0, 1.0)
    theta, done = _sgd.sgd_steps(*args, PROBIT.mean)
    first = np.zeros(4) - 1.0 * clipped_gradients(np.zeros(4), x[:2], y[:2], PROBIT,
                                                  0.2).mean(axis=0)
    assert done == 1 and theta.tobytes() == first.tobytes() and theta.any()
    y[2] = 0.0
    assert _sgd.sgd_steps(*args, PROBIT.mean)[1] == 2


def test_compiled_steps_refuse_other_arguments() -> None:
    x, y, order, theta = np.eye(3), np.zeros(3), np.arange(3), np.zeros(3)

    def steps(**changed: object) -> tuple[np.ndarray, int]:
        given = {"x": x, "y": y, "order": order, "theta": theta, "first": 0, "stride": 1,
                 "count": 2, "batch": 1, "noise": np.zeros((2, 3)), "k": 0, "clip": 0.2,
                 "two_lam": 0.0, "lr0": 1.0, "mean": None} | changed
        return _sgd.sgd_steps(*given.values())

    assert steps()[1] == 2
    with pytest.raises(ValueError, match=r"x of shape \(3, 1\) is not allowed"):
        steps(x=np.ones((3, 1)), theta=np.zeros(1), noise=np.zeros((2, 1)))
    with pytest.raises(ValueError, match="x is not allowed"):
        steps(x=np.asfortranarray(np.arange(6.0).reshape(3, 2)))
    with pytest.raises(ValueError, match="noise is not allowed"):
        steps(noise=np.zeros((3, 3)))
    with pytest.raises(ValueError, match="order is not allowed"):
        steps(order=np.arange(3, dtype=np.int32))
    with pytest.raises(ValueError, match=r"order\[1\] = 7 is not allowed"):
        steps(order=np.array([0, 7, 1]))
    with pytest.raises(ValueError, match="first, stride, count, batch, k are not allowed"):
        steps(stride=0)
    with pytest.raises(RuntimeError, match="mean is not a numpy ufunc"):
        steps(mean=len)


def test_compiled_steps_leave_floating_point_errors_to_numpy() -> None:
    """A step that overflows is numpy's: it warns, or raises under errstate, as numpy's steps
    do, and θ̄ is theirs."""
    x, y = np.full((6, 2), 1e200), np.ones(6)
    kwargs = {"clip": 0.2, "lam": 1e-5, "lr0": 1.0, "noise_std": 0.0}
    args = (np.full(2, 1e200), x, y, PROBIT)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
        sgd_passes(*args, np.random.default_rng(1), range(0, 6, 3), 3, 2, 0, **kwargs)
    with pytest.warns(RuntimeWarning, match="overflow"):
        out = sgd_passes(*args, np.random.default_rng(1), range(0, 6, 3), 3, 2, 0, **kwargs)
    with pytest.warns(RuntimeWarning, match="overflow"):
        expected = numpy_passes(*args, np.random.default_rng(1), range(0, 6, 3), 3, 2, 0,
                                **kwargs)
    assert out.tobytes() == expected.tobytes()


def test_compiled_steps_of_concurrent_calls_keep_their_own_link() -> None:
    """Two threads with different links (einsum lets the other thread run mid-call): each
    gets the numbers of its own link alone."""
    import threading

    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(3000, 5)), (rng.random(3000) < 0.5).astype(float)
    noise, order = rng.normal(size=(60, 5)) * 0.01, rng.permutation(3000)

    def run(link_name: str) -> bytes:
        return _sgd.sgd_steps(x, y, order, np.zeros(5), 0, 50, 60, 1024, noise, 0, 0.2, 2e-5,
                              1.0, LINKS[link_name].mean)[0].tobytes()

    alone = {name: run(name) for name in ("logistic", "probit")}
    assert alone["logistic"] != alone["probit"]
    found: dict[str, list[bytes]] = {"logistic": [], "probit": []}
    threads = [threading.Thread(target=lambda name=name: [found[name].append(run(name))
                                                          for _ in range(15)])
               for name in found]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(got == [alone[name]] * 15 for name, got in found.items())


def test_compiled_passes_keep_a_float32_start_and_odd_starts_to_numpy() -> None:
    """θ₀ in float32 (numpy computes 2λθ in float32 at first) and a range stepping backwards
    take numpy's steps: θ̄ is theirs."""
    x, y = _data(np.random.default_rng(5), 700, 3)
    kwargs = {"clip": 0.2, "lam": 1e-5, "lr0": 10.0, "noise_std": 0.01}
    theta0 = np.array([0.3, -0.2, 0.1], dtype=np.float32)
    for starts in (range(0, 600, 200), range(400, -1, -200)):
        out = sgd_passes(theta0, x, y, PROBIT, np.random.default_rng(2), starts, 200, 3, 1,
                         **kwargs)
        expected = numpy_passes(theta0, x, y, PROBIT, np.random.default_rng(2), starts, 200, 3,
                                1, **kwargs)
        assert out.tobytes() == expected.tobytes()


def test_compiled_steps_stop_at_a_start_beyond_the_rows() -> None:
    """Starts past n, however large the stride: the steps before are made, none after."""
    x, y = np.eye(4), np.zeros(4)
    for stride, made in ((2, 2), (2**63 - 1, 1), (4, 1)):
        theta, done = _sgd.sgd_steps(x, y, np.arange(4), np.zeros(4), 1, stride, 3, 1,
                                     np.zeros((3, 4)), 0, 0.2, 0.0, 1.0, None)
        assert done == made
