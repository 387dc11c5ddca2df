"""Paper-scale checks of the MPPI agents (issue 10): prints every acceptance number.

Usage (``python -m bam_rl.experiments.mppi_checks …`` is the same)::

    python -m bam_rl.experiments.mppi_checks bandwidth  # bandwidth of swing-up data
    python -m bam_rl.experiments.mppi_checks model      # one-step error; cross-gravity
    python -m bam_rl.experiments.mppi_checks gt         # GroundTruthMPPI, 3 gravities
    python -m bam_rl.experiments.mppi_checks learn [--seeds 0,1,2,3,4] [--trials 15]
    python -m bam_rl.experiments.mppi_checks memory [--seeds 0] [--memories bam]

A trial's score is the mean ``cos(angle)`` over its last 100 of 200 steps.
"""

from __future__ import annotations

import argparse
import ast
import time
from typing import Any

import gymnasium as gym
import numpy as np

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents.dynamics import RFFDynamicsModel
from bam_rl.agents.mppi import GroundTruthMPPI, MPPIAgent
from bam_rl.experiments.cartpole_readout import run_trial
from bam_rl.features import mean_pairwise_distance

CARTPOLE = "bam_rl/GravityCartPole-v0"


def random_trial(
    env: gym.Env, rng: np.random.Generator, **reset: Any
) -> tuple[np.ndarray, np.ndarray]:
    """200 uniformly random actions from a reset with ``reset``; the states and actions."""
    observation, _ = env.reset(**reset)
    states, actions = [observation], []
    for _ in range(200):
        action = rng.uniform(-1, 1, size=1)
        observation, *_ = env.step(action)
        states.append(observation)
        actions.append(action)
    return np.array(states), np.array(actions)


def bandwidth(args: argparse.Namespace) -> None:
    """The paper's rule on swing-up data: GT-MPPI trials at the three gravities."""
    inputs = []
    for gravity in (9.81, 3.72, 11.15):
        env = gym.make(CARTPOLE, gravity_schedule=[gravity])
        agent = GroundTruthMPPI(env, seed=0)
        observation, info = env.reset(seed=0)
        agent.reset(observation, info)
        _, states, actions, _, _ = run_trial(env, agent, observation, info)
        inputs.append(np.concatenate([states[:-1], actions], axis=1))
    data = np.concatenate(inputs)
    print(
        f"mean pairwise distance of [state, action] over {len(data)} GT swing-up "
        f"transitions: {mean_pairwise_distance(data, max_points=None):.3f} (paper: 6.0)"
    )
    print(
        f"  without the cart position: {mean_pairwise_distance(data[:, 1:], max_points=None):.3f}"
    )


def model(args: argparse.Namespace) -> None:
    """One-step error of the posterior mean against the number of trials; cross-gravity."""
    env = gym.make(CARTPOLE)
    rng = np.random.default_rng(0)
    for policy in ("random", "gt-mppi"):
        for gravity in (9.81,):
            trials = []
            for seed in range(6):
                if policy == "random":
                    trials.append(random_trial(env, rng, seed=seed, options={"gravity": gravity}))
                else:
                    agent = GroundTruthMPPI(env, seed=seed)
                    observation, info = env.reset(seed=seed, options={"gravity": gravity})
                    agent.reset(observation, info)
                    _, states, actions, _, _ = run_trial(env, agent, observation, info)
                    trials.append((states, actions))
            dyn = RFFDynamicsModel(5, 1, seed=0)
            belief = dyn.family.prior
            errors = []
            for k in range(5):
                belief = belief + dyn.stats(*trials[k])
                dyn.set_belief(belief)
                errors.append(dyn.one_step_error(*trials[5]))
            print(
                f"{policy} trials at g={gravity}: relative one-step error on a held-out "
                f"trial after 1..5 trials: " + ", ".join(f"{e:.4f}" for e in errors)
            )
    fitted = {}
    data = {}
    for gravity in (3.72, 11.15):
        data[gravity] = [
            random_trial(env, rng, seed=20 + i, options={"gravity": gravity}) for i in range(4)
        ]
        dyn = RFFDynamicsModel(5, 1, seed=0)
        belief = dyn.family.prior
        for trial in data[gravity][:3]:
            belief = belief + dyn.stats(*trial)
        dyn.set_belief(belief)
        fitted[gravity] = dyn
    held_out = data[11.15][3]
    own = fitted[11.15].one_step_error(*held_out)
    other = fitted[3.72].one_step_error(*held_out)
    s = fitted[3.72].stats(*held_out)
    fam = fitted[3.72].family
    print(
        f"held-out 11.15 trial: error of the 11.15 model {own:.4f}, of the 3.72 model "
        f"{other:.4f}; log marginal likelihood under 11.15 posterior "
        f"{fam.log_marginal(fitted[11.15].belief, s):.4g}, under 3.72 posterior "
        f"{fam.log_marginal(fitted[3.72].belief, s):.4g}"
    )


def gt(args: argparse.Namespace) -> None:
    for gravity in (3.72, 9.81, 11.15):
        env = gym.make(CARTPOLE, gravity_schedule=[gravity])
        scores, times = [], []
        for seed in args.seeds:
            agent = GroundTruthMPPI(env, seed=seed)
            observation, info = env.reset(seed=seed)
            agent.reset(observation, info)
            start = time.perf_counter()
            score, *_ = run_trial(env, agent, observation, info)
            times.append(time.perf_counter() - start)
            scores.append(score)
        print(
            f"GT MPPI g={gravity}: first-trial score (mean cos, last 100 steps) per seed "
            + ", ".join(f"{s:.4f}" for s in scores)
            + f"; {np.mean(times):.1f} s per trial",
            flush=True,
        )


def learn(args: argparse.Namespace) -> None:
    options = dict(args.opt)
    firsts, lates = [], []
    for seed in args.seeds:
        env = gym.make(CARTPOLE, gravity_schedule=[9.81])
        agent = MPPIAgent(
            env.observation_space, env.action_space, memory="recursive", seed=seed, **options
        )
        observation, info = env.reset(seed=seed)
        agent.reset(observation, info)
        trial_scores, start = [], time.perf_counter()
        for _ in range(args.trials):
            score, _, _, _, info = run_trial(env, agent, observation, info)
            trial_scores.append(score)
            observation, info = env.reset()
            agent.reset(observation, info)
        scores = np.array(trial_scores)
        above = np.flatnonzero(scores > 0.9)
        first = int(above[0]) + 1 if above.size else None
        firsts.append(first)
        lates.append(scores[10:15].mean())
        print(
            f"seed {seed} {options}: first trial > 0.9: {first}; mean of trials 11-15: "
            f"{scores[10:15].mean():.3f}; {(time.perf_counter() - start) / args.trials:.2f} "
            f"s/trial; scores " + " ".join(f"{v:.2f}" for v in scores),
            flush=True,
        )
    n_ok = sum(f is not None and f <= 10 for f in firsts)
    ok = n_ok == len(firsts)
    print(
        f"summary {options}: trial > 0.9 within 10 trials in {n_ok}/"
        f"{len(firsts)} seeds ({'met' if ok else 'NOT met'}); mean of trials 11-15 per seed "
        + ", ".join(f"{v:.3f}" for v in lates)
        + f" (overall {np.mean(lates):.3f})"
    )


def memory(args: argparse.Namespace) -> None:
    """The episodic schedule (6 episodes × 15 trials, announced): first-trial scores."""
    for memory_rule in args.memories:
        for seed in args.seeds:
            env = gym.make("bam_rl/GravityCartPoleEpisodic-v0")
            agent: Any
            if memory_rule == "gt":
                agent = GroundTruthMPPI(env, seed=seed)
            else:
                agent = MPPIAgent(
                    env.observation_space,
                    env.action_space,
                    memory=memory_rule,
                    seed=seed,
                    announced=True,
                    **dict(args.opt),
                )
            observation, info = env.reset(seed=seed)
            agent.reset(observation, info)
            rows, start = [], time.perf_counter()
            n_trials = 90 if memory_rule != "gt" else 6
            for trial in range(n_trials):
                if memory_rule == "gt":  # memoryless: one trial per episode suffices
                    observation, info = env.reset(options={"trial": 15 * trial})
                    agent.reset(observation, info)
                gravity = info["gravity"]
                score, _, _, _, _ = run_trial(env, agent, observation, info)
                readout = ""
                if (
                    memory_rule == "bam"
                    and trial % 15 == 0
                    and agent.last_readout is not None
                    and trial > 0
                ):
                    w = agent.last_readout.weights
                    labels = agent.readout_labels
                    chosen = labels[w > 0]
                    same = float(np.mean(np.isclose(chosen, gravity))) if chosen.size else 0.0
                    readout = (
                        f" readout: {int(w.sum())} trials selected, fraction of gravity "
                        f"{gravity}: {same:.2f} (labels {sorted(set(chosen.tolist()))})"
                    )
                rows.append((trial, gravity, score))
                if trial % 15 == 0 or memory_rule == "gt":
                    print(
                        f"{memory_rule} seed {seed} trial {trial} g={gravity}: score "
                        f"{score:.3f}{readout}",
                        flush=True,
                    )
                if memory_rule != "gt":
                    observation, info = env.reset()
                    agent.reset(observation, info)
            scores = np.array([r[2] for r in rows])
            if memory_rule == "gt":
                firsts = scores
            else:
                firsts = scores[::15]
            if memory_rule != "gt":
                print(
                    f"{memory_rule} seed {seed}: second-trial scores per episode (the first "
                    "planned after the readout) " + ", ".join(f"{v:.3f}" for v in scores[1::15])
                )
                print(
                    f"{memory_rule} seed {seed}: all scores " + " ".join(f"{v:.2f}" for v in scores)
                )
            print(
                f"{memory_rule} seed {seed}: first-trial scores per episode "
                + ", ".join(f"{v:.3f}" for v in firsts)
                + (
                    "; episode means "
                    + ", ".join(f"{scores[i : i + 15].mean():.3f}" for i in range(0, 90, 15))
                    if memory_rule != "gt"
                    else ""
                )
                + f"; {(time.perf_counter() - start) / n_trials:.2f} s/trial",
                flush=True,
            )


def _options(text: str) -> tuple[str, Any]:
    key, _, value = text.partition("=")
    return key, ast.literal_eval(value)


def main(argv: list[str] | None = None) -> int:
    """Runs one check (``what``) and prints its numbers."""
    parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False)
    parser.add_argument("what", choices=["bandwidth", "model", "gt", "learn", "memory"])
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--trials", type=int, default=15)
    parser.add_argument("--memories", default="bam,recursive,gt")
    parser.add_argument(
        "--opt",
        nargs="*",
        type=_options,
        default=[],
        help="MPPIAgent options, e.g. bandwidth=2.0 'feature_states=(1,2,3,4)'",
    )
    args = parser.parse_args(argv)
    args.seeds = [int(s) for s in args.seeds.split(",")]
    args.memories = args.memories.split(",")
    {"bandwidth": bandwidth, "model": model, "gt": gt, "learn": learn, "memory": memory}[args.what](
        args
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
