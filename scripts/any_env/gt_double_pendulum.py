"""docs/any_env.md: Ground truth on a MuJoCo model (issue 41): ``GroundTruthMPPI`` on
InvertedDoublePendulum-v5 with gravity changed inside the trial and then the second pole's mass
(the ``NonStationary`` wrapper, step schedules), against the same planner blind to the changes
(``follow_changes=False``: it plans with the model copied at construction).

The planner reads the true simulator state (it is the oracle; the observation's sines,
cosines and constraint force do not give ``qpos``/``qvel``) and plans with a copy of the live
model, so every parameter the wrapper changed is planned with. Prints steps survived (of
1000) and the return of each variant per seed::

    python scripts/any_env/gt_double_pendulum.py --seeds 1 2 3 4 5

Defaults: gravity 9.81 → 15 at step 200, the second pole's mass × 2 at step 400; the registry's
``"inverted-double-pendulum-lqr"`` (the environment's reward plus an LQR terminal value),
K = 64, H = 5, ``sampling_var`` 0.05, temperature 1 (chosen on seed 0).
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym

from bam_rl.agents.mppi import GroundTruthMPPI
from bam_rl.schedules import Schedule, piecewise
from bam_rl.wrappers import NonStationary


def add_change_arguments(parser: argparse.ArgumentParser, gravity: float) -> None:
    """The options of :func:`changes` (``gravity``: the default of ``--gravity``)."""
    parser.add_argument("--gravity-step", type=int, default=200)
    parser.add_argument("--gravity", type=float, default=gravity)
    parser.add_argument("--mass-step", type=int, default=400)
    parser.add_argument("--mass-factor", type=float, default=2.0)


def changes(args: argparse.Namespace, mass: float) -> dict[str, Schedule]:
    """Gravity 9.81 -> ``--gravity`` at ``--gravity-step``, the second pole's mass (``mass``
    at first) x ``--mass-factor`` at ``--mass-step``: step schedules for ``NonStationary``."""
    return {
        "gravity": piecewise({0: 9.81, args.gravity_step: args.gravity}, unit="step"),
        "mass:pole2": piecewise({0: mass, args.mass_step: args.mass_factor * mass}, unit="step"),
    }


def run(seed: int, follow: bool, args: argparse.Namespace) -> tuple[int, float, float]:
    """Steps survived, return, and seconds per act of one episode."""
    env = NonStationary(gym.make("InvertedDoublePendulum-v5"), changes(args, args.base_mass))
    obs, info = env.reset(seed=seed)
    agent = GroundTruthMPPI(
        env,
        seed=seed,
        reward=args.reward,
        follow_changes=follow,
        n_samples=args.samples,
        horizon=args.horizon,
        sampling_var=args.sampling_var,
        temperature=args.temperature,
    )
    agent.reset(obs, info)
    total, steps, elapsed = 0.0, 0, 0.0
    for step in range(1, 1001):
        steps = step
        start = time.perf_counter()
        action = agent.act(obs)
        elapsed += time.perf_counter() - start
        obs, reward, terminated, truncated, info = env.step(action)
        agent.observe(action, reward, obs, terminated, truncated, info)
        total += float(reward)
        if terminated or truncated:
            break
    return steps, total, elapsed / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    add_change_arguments(parser, gravity=15.0)
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--horizon", type=int, default=5)
    parser.add_argument("--sampling-var", type=float, default=0.05)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--reward", default="inverted-double-pendulum-lqr")
    parser.add_argument("--variants", nargs="+", default=["follow", "blind"])
    args = parser.parse_args()
    model = gym.make("InvertedDoublePendulum-v5").unwrapped.model
    args.base_mass = float(model.body("pole2").mass[0])
    for seed in args.seeds:
        for follow in [variant == "follow" for variant in args.variants]:
            steps, total, per_act = run(seed, follow, args)
            label = "ground truth" if follow else "blind to the change"
            print(
                f"seed {seed} {label}: {steps} steps, return {total:.1f}, "
                f"{1e3 * per_act:.1f} ms per act",
                flush=True,
            )


if __name__ == "__main__":
    main()
