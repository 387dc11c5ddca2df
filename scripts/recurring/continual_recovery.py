"""docs/recurring.md: unannounced segment BAM on the continual recurring worlds (issue 52).

Runs the recurring benchmark's continual setting (``bam_rl/Recurring<Name>Continual-v0``,
2 trials per world, the benchmark's configs so GT MPC's trials start from the same states)
for the chosen environments, seeds and methods, and prints per environment and method:

* ``pass``: (seed, revisit) pairs whose first revisit trial is >= 0.7 x GT MPC's;
* ``median first``: the median first revisit trial relative to GT MPC;
* for ``bam_segments``: identification accuracy (the fraction of steps, from step 20 after
  each change, whose ``belief_world`` maps to the true world under the majority mapping of
  believed to true worlds; median over seeds), the worlds it believes in at the run's end
  (``worlds``: ``belief_n_worlds``; ``believed``: the distinct ``belief_world`` values after
  the first quarter of the run, the benchmark's measure) and the changes it detected;
* ``--stationary``: one world held for 12 trials, nothing announced (the detector on, as
  ``mppi-bam-segments`` is by default): the worlds believed after the first quarter and the
  return against recursive Bayes'.

Usage::

    python scripts/recurring/continual_recovery.py --envs Pendulum --seeds 0 1 --out OUT
    python scripts/recurring/continual_recovery.py --envs Pendulum CartPole --seeds 0 1 2 3 4 \\
        --out OUT
    python scripts/recurring/continual_recovery.py --stationary --envs CartPole --seeds 0 1 \\
        --out OUT

Runs resume from ``out/runs`` (a run's file is keyed by its settings, so a changed agent
needs a fresh ``--out``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bam_rl.experiments import recurring
from bam_rl.experiments.recurring_metrics import believed_worlds
from bam_rl.harness import make_grid, run_many
from bam_rl.wrappers.recurring import SUITE, recurring_id

SETTLE = 20  # steps after a change before identification is scored


def continual_runs(
    envs: list[str], seeds: list[int], methods: list[str], peers: bool = False
) -> list[Any]:
    """The benchmark's continual runs of ``methods`` (and GT MPC; with ``peers``, the
    recent-window and CRP-mixture peers too) for ``seeds``."""
    runs = recurring.grid(
        max(seeds) + 1, envs=envs, settings=("continual",), methods=methods, peers=peers
    )
    return [run for run in runs if run.seed_index in seeds]


def identification(steps: pd.DataFrame, parameter: str) -> tuple[float, int]:
    """Accuracy from step ``SETTLE`` after each change (majority mapping) and the number of
    believed worlds at the run's end, for one run's steps."""
    truth = steps["context_" + parameter].to_numpy(dtype=np.float64)
    belief = steps["belief_world"].to_numpy(dtype=np.float64)
    since = np.zeros(truth.size, dtype=np.int64)
    for i in range(1, truth.size):
        since[i] = 0 if truth[i] != truth[i - 1] else since[i - 1] + 1
    scored = since >= SETTLE
    mapping = (
        pd.DataFrame({"b": belief[scored], "t": truth[scored]})
        .groupby("b")["t"]
        .agg(lambda x: x.value_counts().index[0])
    )
    mapped = pd.Series(belief[scored]).map(mapping).to_numpy()
    accuracy = float(np.mean(mapped == truth[scored])) if scored.any() else float("nan")
    return accuracy, int(steps["belief_n_worlds"].iloc[-1])


def report(steps: pd.DataFrame) -> pd.DataFrame:
    trials = recurring.per_trial(steps)
    visits = recurring.visit_table(trials)
    revisits = visits[visits["revisit"]]
    rows = []
    for (env, method), part in revisits.groupby(["env", "method"]):
        row: dict[str, Any] = {
            "env": env,
            "method": method,
            "pairs": len(part),
            "pass": int((part["first"] >= recurring.FIRST_TRIAL_RATIO).sum()),
            "median_first": float(part["first"].median()),
        }
        if method == "bam_segments":
            # the env's own config ("CartPole" must not take the swing-up's runs too)
            mine = steps[
                (steps["method"] == "bam_segments") & (steps["config"] == f"{env}-continual")
            ]
            scores = [
                identification(run, SUITE[env].parameter) for _, run in mine.groupby("seed_index")
            ]
            row["id_accuracy"] = float(np.median([a for a, _ in scores]))
            row["id_accuracy_all"] = " ".join(f"{a:.2f}" for a, _ in scores)
            row["worlds"] = " ".join(str(n) for _, n in scores)
            row["believed"] = " ".join(
                f"{believed_worlds(run.sort_values('step')['belief_world'].to_numpy()):.0f}"
                for _, run in mine.groupby("seed_index")
            )
            row["changes"] = " ".join(
                str(int(run["belief_detected_changes"].iloc[-1]))
                for _, run in mine.groupby("seed_index")
            )
        rows.append(row)
    return pd.DataFrame(rows)


def stationary(envs: list[str], seeds: list[int], out: Path) -> pd.DataFrame:
    """One world (A) for 12 trials, unannounced: segment BAM's believed worlds after the
    first quarter and its return against recursive Bayes'."""
    from bam_rl.agents.settings import ENV_SETTINGS

    rows = []
    for name in envs:
        env_id = recurring_id(name, True)
        options = ENV_SETTINGS[env_id].options("learned")
        chosen = {
            label: (agent, {"announced": False, **recurring.KEY_OPTIONS, **options})
            for label, agent in (
                ("bam_segments", "mppi-bam-segments"),
                ("recursive", "mppi-recursive"),
            )
        }
        runs = make_grid(
            chosen,
            {f"{name}-stationary": (env_id, {"trials_per_world": 12})},
            seeds=max(seeds) + 1,
            n_episodes=12,
        )
        runs = [run for run in runs if run.seed_index in seeds]
        steps = run_many(runs, backend="serial", n_jobs=1, out_dir=out / "runs", progress=False)
        for seed, run in steps.groupby("seed_index"):
            returns = run.groupby(["method", "episode"])["reward"].sum().unstack(0)
            mine = run[run["method"] == "bam_segments"]
            quarter = mine["episode"] >= 3
            rows.append(
                {
                    "env": name,
                    "seed": int(seed),
                    "worlds_after_quarter": int(mine.loc[quarter, "belief_world"].nunique()),
                    "worlds_at_end": int(mine["belief_n_worlds"].iloc[-1]),
                    "changes": int(mine["belief_detected_changes"].iloc[-1]),
                    "return_segments": float(returns["bam_segments"].sum()),
                    "return_recursive": float(returns["recursive"].sum()),
                }
            )
    frame = pd.DataFrame(rows)
    frame["ratio"] = frame["return_segments"] / frame["return_recursive"]
    return frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=["Pendulum"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--methods", nargs="+", default=["bam_segments", "recursive", "gt"])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--stationary", action="store_true")
    parser.add_argument("--peers", action="store_true", help="run the two peers too")
    args = parser.parse_args()
    pd.set_option("display.width", 200)
    if args.stationary:
        print(stationary(args.envs, args.seeds, args.out).to_string(index=False))
        return
    runs = continual_runs(args.envs, args.seeds, args.methods, args.peers)
    steps = run_many(runs, backend="serial", n_jobs=1, out_dir=args.out / "runs", progress=False)
    table = report(steps)
    print(table.to_string(index=False))
    table.to_csv(args.out / "continual_recovery.csv", index=False)


if __name__ == "__main__":
    main()
