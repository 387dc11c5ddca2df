"""docs/any_env.md: HalfCheetah-v5 one-step model error (issue 53, beyond the paper), the paper's
RFF model against the normalised model on held-out random-action transitions, and the readout's
cost.

Run through ``model_heldout_error.py --task half-cheetah`` (see its docstring); the helpers
here are reused by ``scripts/any_env/half_cheetah_curve.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import gymnasium as gym
import numpy as np

from bam_rl.agents.dynamics import RFFDynamicsModel
from bam_rl.agents.normalized_dynamics import LENGTHSCALE_RULES, NormalizedRFFDynamicsModel

Trial = tuple[np.ndarray, np.ndarray]
TRIAL_STEPS = 300


def random_trials(seed: int, n_trials: int, steps: int = TRIAL_STEPS) -> list[Trial]:
    """``(states (T+1, 17), actions (T, 6))`` of ``n_trials`` uniform-random-action trials."""
    env = gym.make("HalfCheetah-v5", max_episode_steps=steps)
    rng = np.random.default_rng(seed)
    trials = []
    for trial in range(n_trials):
        obs, _ = env.reset(seed=seed + trial)
        states, actions = [obs], []
        for _ in range(steps):
            action = rng.uniform(-1.0, 1.0, size=6)
            obs, _, terminated, truncated, _ = env.step(action)
            states.append(obs)
            actions.append(action)
            if terminated or truncated:
                break
        trials.append((np.array(states, dtype=np.float64), np.array(actions)))
    return trials


def normalized_error(model: RFFDynamicsModel, trials: Sequence[Trial]) -> float:
    """Per-component RMSE of the posterior-mean one-step change over the target standard
    deviation, root mean square over components (1: as good as predicting the mean).

    Its square is the variance unexplained (the mean over components of 1 − R²), the scale
    the issue's prototype figures appear to be on (docs/any_env.md): the tables print both.
    """
    states = np.concatenate([s[:-1] for s, _ in trials])
    actions = np.concatenate([a for _, a in trials])
    deltas = np.concatenate([np.diff(s, axis=0) for s, _ in trials])
    predicted = model.predict(states, actions) - states
    rmse = np.sqrt(np.mean((predicted - deltas) ** 2, axis=0))
    return float(np.sqrt(np.mean((rmse / deltas.std(axis=0)) ** 2)))


def fit(model: RFFDynamicsModel, trials: Sequence[Trial]) -> float:
    """Sets ``model``'s belief to the prior plus every trial's statistics (one datum per
    trial, as the agents record them); returns the seconds of the posterior solve (the
    readout's dominant cost: one Cholesky factorisation of the precision)."""
    belief = model.family.prior
    for states, actions in trials:
        belief = belief + model.stats(states, actions)
    model.set_belief(belief)
    start = time.perf_counter()
    model.mean_model()
    return time.perf_counter() - start


def _errors(
    make: Callable[[int], RFFDynamicsModel], train: list[Trial], test: list[Trial]
) -> list[float]:
    """Held-out errors of the models ``make(feature_seed)`` for feature seeds 0, 1, 2."""
    return [normalized_error(_fitted(make(s), train), test) for s in range(3)]


def half_cheetah(seed: int, tuning_seed: int = 0, n_test: int = 10) -> None:
    """Prints the one-step error table: the bandwidth and length-scale rule chosen on
    ``tuning_seed``'s data, then the current model against the normalised one on ``seed``'s
    (fitted on 3, 10 and 30 trials, scored on ``n_test`` held-out trials), the marginal
    likelihood of the bandwidths, and feature counts with the readout's costs."""
    tuning = random_trials(tuning_seed + 10_000, 10 + n_test)
    print(
        f"tuning data (seed {tuning_seed + 10_000}): 10 fitted trials, {n_test} held out",
        flush=True,
    )
    for rule in LENGTHSCALE_RULES:
        for bandwidth in (2.0, 4.0, 8.0, 12.0, 16.0, 24.0):
            errors = _errors(
                lambda s, b=bandwidth, r=rule: NormalizedRFFDynamicsModel(
                    17, 6, 200, b, seed=s, lengthscales=r
                ),
                tuning[:10],
                tuning[10:],
            )
            model = NormalizedRFFDynamicsModel(17, 6, 200, bandwidth, seed=0, lengthscales=rule)
            first = model.stats(*tuning[0])
            evidence = float(model.family.log_marginal(model.family.prior, first))
            print(
                f"  {rule} length scales, bandwidth {bandwidth:g}: {_cells(errors)}; "
                f"log marginal likelihood of the first trial {evidence:.0f}",
                flush=True,
            )
    trials = random_trials(seed, 30 + n_test)
    test = trials[30:]
    print(f"evaluation data (seed {seed}), {n_test} held-out trials", flush=True)
    for n_fit in (3, 10, 30):
        train = trials[:n_fit]
        current = _errors(lambda s: RFFDynamicsModel(17, 6, seed=s), train, test)
        print(
            f"  {n_fit * TRIAL_STEPS} transitions, current (200, bandwidth 6): {_cells(current)}",
            flush=True,
        )
        for rule in LENGTHSCALE_RULES:
            errors = _errors(
                lambda s, r=rule: NormalizedRFFDynamicsModel(17, 6, 200, seed=s, lengthscales=r),
                train,
                test,
            )
            unexplained = np.mean(np.square(errors)) / np.mean(np.square(current))
            print(
                f"  {n_fit * TRIAL_STEPS} transitions, normalised (200, {rule}): {_cells(errors)} "
                f"= {np.mean(errors) / np.mean(current):.3f} × current "
                f"(variance unexplained: {unexplained:.3f} ×)",
                flush=True,
            )
        linear = _linear_error(train, test)
        print(
            f"  {n_fit * TRIAL_STEPS} transitions, linear least squares: {linear:.4f} "
            f"(variance unexplained {linear**2:.4f})",
            flush=True,
        )
    train = trials[:10]
    flips = [float(np.ptp(states[:, 1])) for states, _ in test]
    print(
        "  held-out trials' root-angle range (rad; > 3: the cheetah turned over): "
        + ", ".join(f"{f:.1f}" for f in flips),
        flush=True,
    )
    for name, model in (
        ("current", RFFDynamicsModel(17, 6, seed=0)),
        ("normalised", NormalizedRFFDynamicsModel(17, 6, seed=0)),
    ):
        fit(model, train)
        per = [normalized_error(model, [trial]) for trial in test]
        print(
            f"  3000 transitions, {name}, per held-out trial: "
            + ", ".join(f"{e:.3f}" for e in per),
            flush=True,
        )
    for n_features in (200, 500, 1000, 2000, 3000):
        model = NormalizedRFFDynamicsModel(17, 6, n_features, seed=0, planning_models="mean")
        start = time.perf_counter()
        model.stats(*train[0])
        stats_s = time.perf_counter() - start
        solve_s = fit(model, train)
        s = model.stats(*train[1])
        start = time.perf_counter()
        model.family.log_marginal(model.belief, s)
        marginal_s = time.perf_counter() - start
        actions = np.random.default_rng(0).uniform(-1, 1, (128, 20, 6))
        model(train[0][0][0], actions, np.random.default_rng(0))
        start = time.perf_counter()
        for _ in range(3):
            model(train[0][0][0], actions, np.random.default_rng(0))
        rollout_s = (time.perf_counter() - start) / 3
        error = normalized_error(model, test)
        print(
            f"  normalised, {n_features} features, 3000 transitions: error {error:.4f} "
            f"(variance unexplained {error**2:.4f}); one "
            f"trial's statistics {stats_s * 1e3:.0f} ms, posterior solve {solve_s * 1e3:.0f} ms, "
            f"one log marginal likelihood (a readout's unit) {marginal_s * 1e3:.0f} ms, "
            f"planning rollout K = 128, H = 20: {rollout_s * 1e3:.0f} ms",
            flush=True,
        )


def _linear_error(train: Sequence[Trial], test: Sequence[Trial]) -> float:
    """The error of least-squares ``Δx = W [x, a, 1]`` (a reference)."""

    def design(trials: Sequence[Trial]) -> tuple[np.ndarray, np.ndarray]:
        x = np.concatenate([np.c_[s[:-1], a, np.ones(len(a))] for s, a in trials])
        return x, np.concatenate([np.diff(s, axis=0) for s, _ in trials])

    x, y = design(train)
    weights = np.linalg.lstsq(x, y, rcond=None)[0]
    x, y = design(test)
    rmse = np.sqrt(np.mean((x @ weights - y) ** 2, axis=0))
    return float(np.sqrt(np.mean((rmse / y.std(axis=0)) ** 2)))


def _fitted(model: RFFDynamicsModel, trials: Sequence[Trial]) -> RFFDynamicsModel:
    fit(model, trials)
    return model


def _cells(errors: list[float]) -> str:
    return (
        f"mean {np.mean(errors):.4f} (feature seeds: {', '.join(f'{e:.4f}' for e in errors)}; "
        f"variance unexplained mean {np.mean(np.square(errors)):.4f})"
    )
