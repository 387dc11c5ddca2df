"""docs/any_env.md: In-trial changes (issue 41): ``mppi-bam-segments`` acting on a change announced
inside a trial against the same agent told to ignore it until the next trial
(``in_trial_changes=False``).

The cart-pole (``bam_rl/GravityCartPole-v0``, 200-step trials, the agent's registry defaults)
runs 10 trials: 9.81 for trials 0-4; in trial 5 gravity switches to 3.72 before step
``SWITCH`` (announced in that step's ``info`` only: ``context_changed=True``); 3.72 for trials
6-7; in trial 8 it switches back to 9.81 at ``SWITCH``; trial 9 at 9.81. Prints each variant's
mean return (sum of the environment's rewards) of every trial over the seeds, and of the
switching trials (5 and 8) with the trials after them (6 and 9), and the paired difference
(mean ± standard error over the seeds, and on how many seeds acting at once is better)::

    python scripts/any_env/in_trial_changes.py --seeds 0 1 2 3 4
    python scripts/any_env/in_trial_changes.py --seeds 0 1 2 3 4 \\
        --options '{"method": "continuous"}'

The second line runs both agents with continuous readout weights in [0, 1] (the paper's
general readout; docs/any_env.md, "Changes inside a trial", has the measured numbers).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import gymnasium as gym
import numpy as np

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.harness.registry import make_agent

SWITCH = 50
#: (gravity at the trial's start, gravity after step SWITCH or None) of each trial
TRIALS = [(9.81, None)] * 5 + [(9.81, 3.72), (3.72, None), (3.72, None), (3.72, 9.81), (9.81, None)]


def run(seed: int, in_trial_changes: bool, options: dict[str, Any] | None = None) -> list[float]:
    """The returns of the 10 trials of one seed (``options``: more agent keywords)."""
    env = gym.make("bam_rl/GravityCartPole-v0")
    agent = make_agent(
        "mppi-bam-segments",
        env,
        seed=seed,
        announced=True,
        in_trial_changes=in_trial_changes,
        **(options or {}),
    )
    returns = []
    for trial, (start, switch) in enumerate(TRIALS):
        env.unwrapped.set_gravity(start)
        obs, info = env.reset(seed=seed * 1000 + trial)
        agent.reset(obs, {**info, "context_changed": False})  # changes are announced in steps
        total, done, t = 0.0, False, 0
        while not done:
            changed = switch is not None and t == SWITCH
            if changed:
                env.unwrapped.set_gravity(switch)
            action = agent.act(obs)
            obs, reward, terminated, truncated, info = env.step(action)
            agent.observe(
                action, reward, obs, terminated, truncated, {**info, "context_changed": changed}
            )
            total += float(reward)
            done, t = terminated or truncated, t + 1
        returns.append(total)
    return returns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--options", default="{}", help="more agent keywords (JSON)")
    args = parser.parse_args()
    options = json.loads(args.options)
    table = {
        flag: np.array([run(seed, flag, options) for seed in args.seeds]) for flag in (True, False)
    }
    print(f"seeds {args.seeds}; mean return per trial (switch at step {SWITCH} of trials 5, 8)")
    for flag, returns in table.items():
        label = "acts in trial " if flag else "waits (ignore)"
        print(f"{label}: " + " ".join(f"{r:7.1f}" for r in returns.mean(axis=0)))
    for flag, returns in table.items():
        picked = returns[:, [5, 6, 8, 9]].sum(axis=1)
        spread = picked.std(ddof=1) / np.sqrt(picked.size) if picked.size > 1 else float("nan")
        print(
            f"in_trial_changes={flag}: trials 5+6+8+9 per seed {np.round(picked, 1).tolist()}, "
            f"mean {picked.mean():.1f} ± {spread:.1f} (s.e.)"
        )
    diff = table[True][:, [5, 6, 8, 9]].sum(axis=1) - table[False][:, [5, 6, 8, 9]].sum(axis=1)
    error = diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else float("nan")
    print(
        f"paired difference (acts - waits): {np.round(diff, 1).tolist()}, mean {diff.mean():.1f}"
        f" ± {error:.1f} (s.e.); acting better on {int((diff > 0).sum())} of {diff.size} seeds"
    )


if __name__ == "__main__":
    main()
