"""``bam-rl demo``: BAM and recursive Bayes tracking the sinusoidal Binomial stream."""

from __future__ import annotations

import argparse
from typing import Any

from bam_rl.cli.common import (
    MAX_STEPS,
    command,
    output_directory,
    seed_option,
    steps_option,
)

#: ``bam-rl demo``'s line in ``bam-rl --help`` and its ``--help`` description.
HELP = "BAM vs recursive Bayes tracking the sinusoidal Binomial stream"
DESCRIPTION = (
    "Tracks the sinusoidal BinomialStream with recursive Bayes and BAM and "
    "prints the posterior-mean MSE and how many past data BAM remembers. "
    "Writes nothing unless --out is given."
)


def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    import time

    import gymnasium as gym
    import numpy as np
    import pandas as pd

    from bam_rl.harness import make_agent, rollout

    out = output_directory(parser, args.out)
    start = time.perf_counter()
    env_id = "bam_rl/BinomialStream-v0"
    methods = {"tracker-recursive": "recursive Bayes", "tracker-bam": "BAM (λ=0)"}
    frames = []
    env = gym.make(env_id, max_steps=args.steps)
    unwrapped: Any = env.unwrapped  # the stream: amplitude, period, offset, n
    try:
        for name in methods:
            agent = make_agent(name, env, seed=args.seed)
            frames.append(
                rollout(env, agent, n_steps=args.steps, seed=args.seed, method=name, config=env_id)
            )
    finally:
        env.close()
    frame = pd.concat(frames, ignore_index=True)

    print(
        f"BAM demo: tracking θ_t = {unwrapped.amplitude:g}·sin(2πt/{unwrapped.period:g}) + "
        f"{unwrapped.offset:g} from Binomial({unwrapped.n}, θ_t) counts, "
        f"{args.steps} steps, seed {args.seed}."
    )
    print("Posterior mean of θ_t after each count vs the truth; 'remembered' is how many past")
    print("counts BAM's readout keeps for the current estimate (recursive Bayes keeps all).")
    print()
    print(
        f"{'method':<16} {'posterior-mean MSE':>19} {'remembered (mean)':>18} "
        f"{'remembered (end)':>17}"
    )
    for name, label in methods.items():
        run = frame[frame["method"] == name]
        mse = float(np.mean((run["belief_mean"] - run["theta"]) ** 2))
        remembered = run["belief_remembered"]
        if remembered.isna().all():  # no readout: every past datum is remembered
            mean_text, end_text = "all", f"all ({len(run) - 1})"
        else:
            mean_text = f"{remembered.mean():.1f}"
            end_text = f"{remembered.iloc[-1]:.0f} of {len(run) - 1}"
        print(f"{label:<16} {mse:>19.5f} {mean_text:>18} {end_text:>17}")
    if out is not None:
        from bam_rl.harness.files import write_frame

        path = out / "demo_tracking.csv"
        write_frame(frame, path, "csv")
        print(f"\nper-step records: {path.resolve()}")
    print(f"\n({time.perf_counter() - start:.1f} s)")
    return 0


def add(commands: Any) -> None:
    """The ``demo`` command's parser: its arguments and handler."""
    demo = command(commands, "demo", handle, HELP, DESCRIPTION)
    demo.add_argument(
        "--steps",
        type=steps_option,
        default=300,
        help=f"stream length (300; at most {MAX_STEPS:,})",
    )
    demo.add_argument("--seed", type=seed_option, default=0, help="stream seed (0; >= 0)")
    demo.add_argument("--out", default=None, help="directory for the per-step CSV")
