"""docs/any_env.md, "HalfCheetah-v5: a learning curve" (issue 53, beyond the paper).

Return against transitions on HalfCheetah-v5 (gravity 9.81 throughout, 300-step trials, the
registry's ``"half-cheetah"`` planning reward, the generic planner K = 128, H = 20) for one
method, one CSV row per trial appended as it finishes (so a long run checkpoints itself)::

    python scripts/any_env/half_cheetah_curve.py normalized 167 0   # ≥ 50k transitions
    python scripts/any_env/half_cheetah_curve.py rff 20 0           # the paper's model
    python scripts/any_env/half_cheetah_curve.py mppi-gt 3 0        # GT MPC, same planner
    python scripts/any_env/half_cheetah_curve.py random 10 0
    python scripts/any_env/half_cheetah_curve.py plot               # the figure from the CSV

``--pretrain N`` feeds ``N`` random-action trials to the learner first (what a larger data
budget buys); ``--states F.npz`` keeps every trial's states and actions, and
``gt-states-error 0 0 --states F.npz`` scores models fitted to growing random-action data on
the states of such a file (GT MPC's: the states a good planner visits), and models fitted to
all but its last trial on that last one; ``--pretrain-states F.npz`` feeds such a file's
trials to the learner first.

``normalized`` is ``mppi-bam-segments`` with ``dynamics_model="normalized"``
(:class:`~bam_rl.agents.normalized_dynamics.NormalizedRFFDynamicsModel`), ``rff`` the same
agent with the paper's model; both plan with the posterior mean, announced (nothing is
announced: gravity never changes) and read out only at trials' ends. For the learners each
row also holds the model's normalised one-step error on the trial's own transitions (the
planner's states) *before* the trial joins the model: per-component RMSE over the standard
deviation of the trial's state changes, root mean square over the 17 components.

Rows go to ``scripts/recurring/data/half_cheetah_curve.csv`` (``--csv`` to change it).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from bam_rl.harness.registry import make_agent

ROOT = Path(__file__).resolve().parents[2]
CSV = ROOT / "scripts" / "recurring" / "data" / "half_cheetah_curve.csv"
FIGURE = ROOT / "docs" / "figures" / "half_cheetah_curve.png"
FIELDS = ("method", "seed", "trial", "transitions", "return", "model_error", "ms_per_step")
STEPS = 300


def _agent(
    method: str, env: gym.Env, seed: int, pretrain: int = 0, pretrain_states: Path | None = None
) -> object | None:
    if method == "random":
        return None
    if method == "mppi-gt":
        return make_agent("mppi-gt", env, seed=seed, reward="half-cheetah")
    options: dict[str, Any] = {
        "announced": True,
        "planning_models": "mean",
        "readout_after_steps": None,
    }
    if method == "normalized":
        options["dynamics_model"] = "normalized"
    elif method != "rff":
        raise ValueError(f"method must be normalized, rff, mppi-gt or random, got {method!r}")
    agent = make_agent("mppi-bam-segments", env, seed=seed, reward="half-cheetah", **options)
    if pretrain:  # what a budget of random-action data buys: fed to the memory first
        sys.path.insert(0, str(ROOT / "scripts" / "experiments"))
        from half_cheetah_error import random_trials  # type: ignore[import-not-found]

        for states, actions in random_trials(seed + 50_000, pretrain):
            agent.rule.update(agent.model.stats(states, actions))
        agent.model.set_belief(agent.rule.belief)
    if pretrain_states is not None:  # trials of another agent (GT MPC's), fed first
        for states, actions in _load_trials(pretrain_states):
            agent.rule.update(agent.model.stats(states, actions))
        agent.model.set_belief(agent.rule.belief)
    return agent


def _load_trials(path: Path) -> list[tuple[np.ndarray, np.ndarray]]:
    """The trials of a ``--states`` file."""
    with np.load(path) as data:
        n = len([key for key in data.files if key.startswith("states_")])
        return [(data[f"states_{i}"], data[f"actions_{i}"]) for i in range(n)]


def _model_error(agent: object, states: np.ndarray, actions: np.ndarray) -> float:
    model = agent.model  # type: ignore[attr-defined]
    deltas = np.diff(states, axis=0)
    predicted = model.predict(states[:-1], actions) - states[:-1]
    rmse = np.sqrt(np.mean((predicted - deltas) ** 2, axis=0))
    scale = deltas.std(axis=0)
    return float(np.sqrt(np.mean((rmse / np.where(scale > 0, scale, 1.0)) ** 2)))


def run(
    method: str,
    trials: int,
    seed: int,
    path: Path,
    pretrain: int = 0,
    states_path: Path | None = None,
    pretrain_states: Path | None = None,
) -> None:
    """Runs ``trials`` trials of ``method`` and appends one CSV row per trial to ``path``
    (the method named ``<method>+random<pretrain>`` when ``pretrain`` random-action trials
    were fed to the learner first); ``states_path``: an ``.npz`` of every trial's states and
    actions."""
    env = gym.make("HalfCheetah-v5", max_episode_steps=STEPS)
    rng = np.random.default_rng(seed)
    agent = _agent(method, env, seed, pretrain, pretrain_states)
    label = f"{method}+random{pretrain}" if pretrain else method
    label += "+gt-trials" if pretrain_states is not None else ""
    kept: dict[str, np.ndarray] = {}
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    with path.open("a", newline="") as handle:
        writer = csv.writer(handle)
        if new:
            writer.writerow(FIELDS)
        transitions = 0
        for trial in range(trials):
            obs, info = env.reset(seed=seed if trial == 0 else None)
            if agent is not None:
                agent.reset(obs, info)  # type: ignore[attr-defined]
            states, actions, total, error = [obs], [], 0.0, float("nan")
            start = time.perf_counter()
            done = False
            while not done:
                if agent is None:
                    action = rng.uniform(-1.0, 1.0, size=6)
                else:
                    action = agent.act(obs)  # type: ignore[attr-defined]
                obs, reward, terminated, truncated, info = env.step(action)
                states.append(obs)
                actions.append(np.asarray(action, dtype=np.float64))
                total += float(reward)
                done = terminated or truncated
                if done and method in ("normalized", "rff"):  # before the trial joins the model
                    error = _model_error(
                        agent, np.array(states, dtype=np.float64), np.array(actions)
                    )
                if agent is not None:
                    agent.observe(action, reward, obs, terminated, truncated, info)  # type: ignore[attr-defined]
            ms = (time.perf_counter() - start) / len(actions) * 1e3
            transitions += len(actions)
            kept[f"states_{trial}"] = np.array(states, dtype=np.float64)
            kept[f"actions_{trial}"] = np.array(actions)
            if states_path is not None:
                np.savez(states_path, **kept)  # type: ignore[arg-type]
            row = (label, seed, trial, transitions, f"{total:.1f}", f"{error:.4f}", f"{ms:.1f}")
            writer.writerow(row)
            handle.flush()
            os.fsync(handle.fileno())
            print(*row, sep=",", flush=True)


def plot(path: Path, figure: Path) -> None:
    """The learning curve from ``path``'s rows (matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    labels = {
        "normalized": "segment BAM, normalised model",
        "rff": "segment BAM, paper's RFF model",
        "mppi-gt": "GT MPC (same planner)",
        "random": "random actions",
    }
    for method, label in labels.items():
        mine = [r for r in rows if r["method"] == method]
        if not mine:
            continue
        x = np.array([int(r["transitions"]) for r in mine])
        y = np.array([float(r["return"]) for r in mine])
        if method in ("mppi-gt", "random"):
            color = "tab:green" if method == "mppi-gt" else "tab:gray"
            left.axhline(
                y.mean(), linestyle="--", color=color, label=f"{label}: mean {y.mean():.0f}"
            )
            continue
        (line,) = left.plot(x, y, ".", alpha=0.4)
        window = min(10, len(y))
        smooth = np.convolve(y, np.ones(window) / window, mode="valid")
        left.plot(x[window - 1 :], smooth, color=line.get_color(), label=f"{label} (10-trial mean)")
        errors = np.array([float(r["model_error"]) for r in mine])
        right.plot(x, errors, ".", color=line.get_color(), label=label)
    left.set_xlabel("transitions")
    left.set_ylabel("return of a 300-step trial")
    left.set_title("HalfCheetah-v5, gravity 9.81")
    left.legend(fontsize=8)
    right.set_xlabel("transitions")
    right.set_ylabel("one-step error on the planner's states (normalised)")
    right.set_yscale("log")
    right.legend(fontsize=8)
    fig.tight_layout()
    figure.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(figure, dpi=120)


def gt_states_error(path: Path, seed: int) -> None:
    """Prints the normalised model's one-step error on GT MPC's states (``path``: the
    ``--states`` file of an ``mppi-gt`` run) after random-action data of growing size, with
    200 and 1000 features: how far more random data carries the model to the states a good
    planner visits."""
    sys.path.insert(0, str(ROOT / "scripts" / "experiments"))
    from half_cheetah_error import fit, normalized_error, random_trials

    from bam_rl.agents.normalized_dynamics import NormalizedRFFDynamicsModel

    visited = _load_trials(path)
    pool = random_trials(seed + 50_000, 333)
    for n_random in (0, 100):
        for n_features in (200, 1000):
            model = NormalizedRFFDynamicsModel(17, 6, n_features, seed=seed)
            fit(model, visited[:-1] + pool[:n_random])
            print(
                f"GT MPC's first {len(visited) - 1} trials + {n_random * STEPS} random-action "
                f"transitions, {n_features} features: error on GT MPC's last trial "
                f"{normalized_error(model, visited[-1:]):.3f}",
                flush=True,
            )
    for n_trials in (10, 30, 100, 333):
        for n_features in (200, 1000):
            model = NormalizedRFFDynamicsModel(17, 6, n_features, seed=seed)
            fit(model, pool[:n_trials])
            print(
                f"{n_trials * STEPS} random-action transitions, {n_features} features: error on "
                f"GT MPC's states {normalized_error(model, visited):.3f}, on held-out random "
                f"ones {normalized_error(model, random_trials(seed + 90_000, 5)):.3f}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("method", help="normalized, rff, mppi-gt, random, or plot")
    parser.add_argument("trials", type=int, nargs="?", default=0)
    parser.add_argument("seed", type=int, nargs="?", default=0)
    parser.add_argument("--csv", type=Path, default=CSV)
    parser.add_argument("--pretrain", type=int, default=0, help="random-action trials fed first")
    parser.add_argument("--states", type=Path, default=None, help="an .npz of the trials")
    parser.add_argument("--pretrain-states", type=Path, default=None, help="trials fed first")
    args = parser.parse_args()
    if args.method == "plot":
        plot(args.csv, FIGURE)
        return
    if args.method == "gt-states-error":
        gt_states_error(args.states, args.seed)
        return
    if args.trials < 1:
        sys.exit("trials must be >= 1")
    run(
        args.method,
        args.trials,
        args.seed,
        args.csv,
        args.pretrain,
        args.states,
        args.pretrain_states,
    )


if __name__ == "__main__":
    main()
