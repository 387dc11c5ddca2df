"""The figure of docs/nonstationary.md: one schedule's values over a run, as ``rollout`` logs
them (the ground truth columns ``context_<parameter>``), with the steps ``info`` flagged.

Usage::

    python scripts/nonstationary/figure_nonstationary.py [docs/figures/nonstationary_schedule.png]
"""

from __future__ import annotations

import sys

import gymnasium as gym
import numpy as np

from bam_rl.agents.random_agent import RandomAgent
from bam_rl.harness.plotting import add_caption, new_figure, save_figure
from bam_rl.harness.runner import rollout
from bam_rl.schedules import cycle, markov
from bam_rl.wrappers import NonStationary

STEPS = 3000


def main(path: str = "docs/figures/nonstationary_schedule.png") -> None:
    """Run a random agent on a non-stationary InvertedPendulum-v5 and draw its world."""
    env = NonStationary(
        gym.make("InvertedPendulum-v5"),
        {
            "gravity": markov([9.81, 3.72, 11.15], p_switch=0.004, unit="step"),
            "mass_scale": cycle([1.0, 1.0, 2.0], every=40),
        },
    )
    frame = rollout(env, RandomAgent(env.action_space, seed=0), n_steps=STEPS, seed=0)
    figure, (top, bottom) = new_figure(2, 1, figsize=(8, 4.2), sharex=True)
    top.step(frame["step"], frame["context_gravity"], where="post", color="C0")
    flagged = frame["step"][frame["context_changed"]]
    for step in flagged:
        top.axvline(step, color="0.6", lw=0.6, ls=":")
    top.set_ylabel("gravity (m/s²)")
    top.set_yticks([3.72, 9.81, 11.15])
    bottom.step(frame["step"], frame["context_mass_scale"], where="post", color="C1")
    bottom.set_ylabel("mass scale")
    bottom.set_xlabel("step")
    bottom.set_yticks([1.0, 2.0])
    episodes = int(frame["episode"].max()) + 1
    n_flags = int(frame["context_changed"].sum())
    real = int(
        np.count_nonzero(
            np.diff(frame[["context_gravity", "context_mass_scale"]], axis=0).any(axis=1)
        )
    )
    add_caption(
        figure,
        f"NonStationary(InvertedPendulum-v5): gravity follows markov([9.81, 3.72, 11.15], "
        f"p_switch=0.004, unit='step') (mean duration 250 steps), the mass scale follows "
        f"cycle([1, 1, 2], every=40) episodes; a random agent, {STEPS} steps, {episodes} "
        f"episodes, seed 0. Dotted lines: the {n_flags} steps where info['context_changed'] "
        f"was True ({real} real changes between logged steps; a change at a reset is flagged "
        f"in the reset's info). Values are rollout's context_* columns.",
        width=120,
    )
    save_figure(figure, path)
    print(f"wrote {path}: {n_flags} flagged steps, {episodes} episodes")


if __name__ == "__main__":
    main(*sys.argv[1:])
