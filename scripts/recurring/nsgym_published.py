"""docs/recurring.md: NS-Gym's published problems side by side (issue 42): bam-rl agents on
NS-Gym's own CartPole-v1 and Pendulum-v1 environments, through
:func:`bam_rl.interop.nsgym.from_nsgym`, beside the numbers NS-Gym published.

The ten cells are (problem, notification):

* CartPole-v1 capped at 2500 steps (``gym.make("CartPole-v1", max_episode_steps=2500)``),
  ``NSClassicControlWrapper`` with ``{"masspole": StepWiseUpdate(DiscreteScheduler({0}),
  [m])}``: the pole mass is 0.1 at every reset and m ∈ {1.0, 1.2, 1.3, 1.5} from the first
  step on (the update is applied before the step's physics, so every transition is at m);
* Pendulum-v1 (200 steps) with ``{"m": IncrementUpdate(ContinuousScheduler(start=0, end=0),
  1.0)}``: the mass 1.0 at every reset, 2.0 from the first step on (NS-Gym's
  ``NS_Pendulum/*_single_change.py``);

each without notification (``change_notification=False``: the bridge's ``notify="none"``)
and with it. "With notification" sets both NS-Gym flags: in ns-gym 1.0.12 only
``delta_change_notification=True`` makes ``get_planning_env()`` hold the current world, which
is what ``change_notification=True`` did at the paper's code tag (``submission/ns_gym_v0``),
so the bridge reports ``"value"``.

Every agent learns across the episodes of a seed: each episode's return is recorded
(``episodes.csv``), the per-episode mean over seeds (``curve.csv``) and, per cell and agent,
the mean ± SE over the episodes (as many as the cell's best published baseline used, unless
``--episodes``) with a 95 % interval (mean ± 1.96 SE; the SE is the larger of the one over all
(seed, episode) returns and the one over per-seed means), the mean seconds per decision
(``act`` only), and the best published baseline of the cell with its interval and source
(``summary.csv``). ``published.csv`` copies the table of published numbers
(``scripts/data/nsgym_published.csv``).
``mppi-gt`` plans with the live environment: with notification that is the information
NS-Gym's MCTS gets from its planning environment; without it, GT is an oracle (marked, and
never counted as our best agent). Runs are resumable: a (cell, agent, seed) already complete
in ``episodes.csv`` is skipped::

    python scripts/recurring/nsgym_published.py --out nsgym/ --seeds 0 1 2 3 4
    python scripts/recurring/nsgym_published.py --smoke --out nsgym_smoke/
    python scripts/recurring/nsgym_published.py --cells cartpole-1.5-notified --agents mppi-gt

NS-Gym restores the initial value at every reset and applies the new one before the first
transition, so every transition of these problems runs at m: the bridge flags a change at the
first transition that runs in another world than the last one, never at a reset, so a
notified learner sees one world here (before that rule it saw two changes an episode and
restarted BAM twice an episode: best episode 52 at m = 1.5).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from bam_rl.harness.registry import make_agent

#: The published table: ``scripts/data/nsgym_published.csv``.
PUBLISHED_CSV = Path(__file__).with_name("data") / "nsgym_published.csv"


def read_published(path: Path = PUBLISHED_CSV) -> list[tuple]:
    """NS-Gym's published CartPole numbers (single change of the pole mass 0.1 -> m at t = 0,
    step cap 2500), one row each: (algorithm, variant, m, notified, mean return, standard
    error = std / sqrt(n), n episodes, source: notebook and cell at the tag
    ``scope-lab-vu/ns_gym@submission/ns_gym_v0``, and the result file named there).

    Read from the notebooks' stored outputs; the result CSVs themselves are not in that
    repository. The algorithms: MCTS (ns_gym MCTS, gamma 0.5, c = sqrt 2, depth 500; 50
    episodes a row), AlphaZero (500 simulations, depth 500, gamma 1, c = sqrt 2, a 2x128
    network, temperature 1), DDQN (3x64 network trained at m = 0.1; run without notification,
    and its policy ignores the planning environment, so its numbers stand in both cells) and
    PA-MCTS (DDQN + MCTS, alpha 0.25 its best; masses 0.1, 1.0 and 1.5 only; 100 episodes).
    ADA-MCTS and RATS have no CartPole results at the tag; NS-Gym published no Pendulum numbers
    there (its NS_Pendulum scripts, PPO / DDPG / A2C, have no stored results).
    """
    with open(path, newline="") as handle:
        return [
            (
                r["algorithm"],
                r["variant"],
                float(r["mass"]),
                bool(int(r["notified"])),
                float(r["mean"]),
                float(r["se"]),
                int(r["n"]),
                r["source"],
            )
            for r in csv.DictReader(handle)
        ]


PUBLISHED = read_published()

MASSES = (1.0, 1.2, 1.3, 1.5)
CARTPOLE_CAP = 2500
REWARDS = {"cartpole": "cartpole-balance-shaped", "pendulum": "pendulum-swingup"}
AGENTS = ("mppi-bam-segments", "mppi-gt")


@dataclass(frozen=True)
class Cell:
    """One (problem, notification) cell."""

    problem: str  # "cartpole" or "pendulum"
    mass: float  # CartPole: the pole mass m; Pendulum: the mass after the change (2.0)
    notified: bool

    @property
    def name(self) -> str:
        note = "notified" if self.notified else "unnotified"
        return f"{self.problem}-{self.mass:g}-{note}"


CELLS = tuple(Cell("cartpole", m, n) for m in MASSES for n in (False, True)) + tuple(
    Cell("pendulum", 2.0, n) for n in (False, True)
)


def make_env(cell: Cell, cap: int) -> gym.Env:
    """NS-Gym's environment of ``cell`` through ``from_nsgym`` (NS-Gym's own notification
    level)."""
    from ns_gym.schedulers import ContinuousScheduler, DiscreteScheduler
    from ns_gym.update_functions import IncrementUpdate, StepWiseUpdate
    from ns_gym.wrappers import NSClassicControlWrapper

    from bam_rl.interop.nsgym import from_nsgym

    if cell.problem == "cartpole":
        base = gym.make("CartPole-v1", max_episode_steps=cap)
        changes: dict[str, Any] = {"masspole": StepWiseUpdate(DiscreteScheduler({0}), [cell.mass])}
    else:
        base = gym.make("Pendulum-v1", max_episode_steps=cap)
        changes = {"m": IncrementUpdate(ContinuousScheduler(start=0, end=0), cell.mass - 1.0)}
    ns_env = NSClassicControlWrapper(
        base,
        changes,
        change_notification=cell.notified,
        delta_change_notification=cell.notified,
    )
    return from_nsgym(ns_env)


def run_one(
    cell: Cell, agent_name: str, seed: int, episodes: int, cap: int, options: dict
) -> list[dict[str, Any]]:
    """Every episode of one (cell, agent, seed): return, steps, seconds per decision."""
    env = make_env(cell, cap)
    agent = make_agent(agent_name, env, seed=seed, reward=REWARDS[cell.problem], **options)
    rows = []
    for episode in range(episodes):
        obs, info = env.reset(seed=seed * 100_000 + episode)
        agent.reset(obs, info)
        total, steps, acting, done = 0.0, 0, 0.0, False
        while not done:
            start = time.perf_counter()
            action = agent.act(obs)
            acting += time.perf_counter() - start
            obs, reward, terminated, truncated, info = env.step(action)
            agent.observe(action, reward, obs, terminated, truncated, info)
            total, steps, done = total + float(reward), steps + 1, terminated or truncated
        rows.append(
            {
                "cell": cell.name,
                "problem": cell.problem,
                "mass": cell.mass,
                "notified": int(cell.notified),
                "agent": agent_name,
                "oracle": int(agent_name == "mppi-gt" and not cell.notified),
                "seed": seed,
                "episode": episode,
                "return": round(total, 3),
                "steps": steps,
                "s_per_decision": acting / max(steps, 1),
            }
        )
    return rows


def best_published(cell: Cell) -> tuple | None:
    """The cell's published row with the highest mean (``None``: nothing published)."""
    if cell.problem != "cartpole":
        return None
    rows = [r for r in PUBLISHED if r[2] == cell.mass and r[3] == cell.notified]
    return max(rows, key=lambda r: r[4]) if rows else None


def episodes_for(cell: Cell, requested: int | None) -> int:
    """``requested``, else the episode count of the cell's best published baseline (500, the
    NS_Pendulum scripts' ``num_exp``, for Pendulum)."""
    if requested is not None:
        return requested
    best = best_published(cell)
    return int(best[6]) if best else 500


def summarise(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per (cell, agent): mean ± SE, 95 % interval and the best published baseline; and the
    per-episode curve (mean over seeds)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[(row["cell"], row["agent"])].append(row)
    cells = {c.name: c for c in CELLS}
    summary, curve = [], []
    for (name, agent), group in sorted(groups.items()):
        cell = cells[name]
        returns = np.array([float(r["return"]) for r in group])
        per_seed: dict[int, list[float]] = defaultdict(list)
        per_episode: dict[int, list[float]] = defaultdict(list)
        for r in group:
            per_seed[int(r["seed"])].append(float(r["return"]))
            per_episode[int(r["episode"])].append(float(r["return"]))
        seed_means = np.array([np.mean(v) for v in per_seed.values()])
        se_all = float(returns.std(ddof=1) / math.sqrt(len(returns))) if len(returns) > 1 else 0.0
        se_seeds = (
            float(seed_means.std(ddof=1) / math.sqrt(len(seed_means)))
            if len(seed_means) > 1
            else float("nan")
        )
        se = max(se_all, se_seeds) if not math.isnan(se_seeds) else se_all
        mean = float(returns.mean())
        steps = np.array([int(r["steps"]) for r in group])
        s_per = np.array([float(r["s_per_decision"]) for r in group])
        best = best_published(cell)
        out: dict[str, Any] = {
            "cell": name,
            "agent": agent,
            "oracle": int(group[0]["oracle"]),
            "seeds": len(per_seed),
            "episodes_per_seed": max(len(v) for v in per_seed.values()),
            "mean": round(mean, 2),
            "se": round(se, 2),
            "se_over_episodes": round(se_all, 2),
            "se_over_seeds": round(se_seeds, 2),
            "ci95_low": round(mean - 1.96 * se, 2),
            "ci95_high": round(mean + 1.96 * se, 2),
            "best_episode": round(float(returns.max()), 2),
            "ms_per_decision": round(1e3 * float(np.average(s_per, weights=steps)), 3),
        }
        if best:
            lo, hi = best[4] - 1.96 * best[5], best[4] + 1.96 * best[5]
            out |= {
                "published_best": f"{best[0]} ({best[1]})",
                "published_mean": best[4],
                "published_se": round(best[5], 2),
                "published_n": best[6],
                "published_ci95_low": round(lo, 2),
                "published_ci95_high": round(hi, 2),
                "beats_published": int(out["ci95_low"] > hi and not out["oracle"]),
                "published_source": best[7],
            }
        summary.append(out)
        for episode in sorted(per_episode):
            values = per_episode[episode]
            curve.append(
                {
                    "cell": name,
                    "agent": agent,
                    "episode": episode,
                    "mean_return": round(float(np.mean(values)), 2),
                    "seeds": len(values),
                }
            )
    return summary, curve


def plot_curves(rows: list[dict[str, Any]], path: str) -> None:
    """Every episode's return of the CartPole cells (one panel per mass, each agent and seed
    a line), the cell's best published mean with its 95 % interval as a band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    masses = sorted({float(r["mass"]) for r in rows if r["problem"] == "cartpole"})
    figure, axes = plt.subplots(1, len(masses), figsize=(4.2 * len(masses), 3.4), sharey=True)
    for ax, mass in zip(np.atleast_1d(axes), masses, strict=True):
        shown = [r for r in rows if r["problem"] == "cartpole" and float(r["mass"]) == mass]
        lines: dict[tuple[str, str, str], list[tuple[int, float]]] = defaultdict(list)
        for r in shown:
            note = "notified" if int(r["notified"]) else "unnotified"
            lines[(r["agent"], note, r["seed"])].append((int(r["episode"]), float(r["return"])))
        for (agent, note, seed), points in sorted(lines.items()):
            episodes, returns = zip(*sorted(points), strict=True)
            ax.plot(episodes, returns, lw=1, label=f"{agent} ({note}, seed {seed})")
        for notified, colour in ((False, "tab:grey"), (True, "tab:purple")):
            best = best_published(Cell("cartpole", mass, notified))
            if best:
                low, high = best[4] - 1.96 * best[5], best[4] + 1.96 * best[5]
                ax.axhspan(low, high, color=colour, alpha=0.2, lw=0)
                ax.axhline(best[4], color=colour, lw=1, ls="--")
        ax.set_title(f"m = {mass:g}")
        ax.set_xlabel("episode")
    np.atleast_1d(axes)[0].set_ylabel("return (steps held, cap 2500)")
    np.atleast_1d(axes)[0].legend(fontsize=7, loc="lower right")
    figure.text(
        0.01,
        0.005,
        "Bands: the best published baseline's mean ± 1.96 SE (grey: without notification, "
        "purple: with it; NS-Gym's submission/ns_gym_v0 notebooks).",
        fontsize=8,
    )
    figure.tight_layout(rect=(0, 0.05, 1, 1))
    figure.savefig(path, dpi=110)


def write_csv(path: str, rows: list[dict[str, Any]], fields: list[str] | None = None) -> None:
    """``rows`` as a CSV: ``fields``, else every key in order of first appearance."""
    if fields is None:
        fields = list(dict.fromkeys(k for row in rows for k in row))
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, restval="")
        writer.writeheader()
        writer.writerows(rows)


EPISODE_FIELDS = [
    "cell", "problem", "mass", "notified", "agent", "oracle", "seed", "episode",
    "return", "steps", "s_per_decision",
]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="nsgym_published_out", help="output directory")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--agents", nargs="+", default=list(AGENTS))
    parser.add_argument("--cells", nargs="+", default=[c.name for c in CELLS])
    parser.add_argument(
        "--episodes", type=int, default=None, help="per seed (default: the best baseline's n)"
    )
    parser.add_argument("--cap", type=int, default=CARTPOLE_CAP, help="CartPole's step cap")
    parser.add_argument("--options", default="{}", help="JSON agent options")
    parser.add_argument(
        "--smoke", action="store_true", help="1 seed, 2 episodes, cap 100, two cells"
    )
    parser.add_argument("--figure", default=None, help="also draw the per-episode returns here")
    args = parser.parse_args()
    if args.smoke:
        args.seeds, args.episodes, args.cap = args.seeds[:1], args.episodes or 2, 100
        if args.cells == [c.name for c in CELLS]:
            args.cells = ["cartpole-1.5-notified", "pendulum-2-unnotified"]
    known = {c.name: c for c in CELLS}
    unknown = [c for c in args.cells if c not in known]
    if unknown:
        parser.error(f"unknown cells {unknown}; known: {sorted(known)}")
    options = json.loads(args.options)
    os.makedirs(args.out, exist_ok=True)
    # one folder, one cap and one set of options per agent: resuming with others would mix runs
    config_path = os.path.join(args.out, "config.json")
    config: dict[str, Any] = {"cap": args.cap, "options": {}}
    if os.path.exists(config_path):
        with open(config_path) as handle:
            config = json.load(handle)
    if config["cap"] != args.cap:
        parser.error(f"{args.out} holds runs capped at {config['cap']}: use another --out")
    for agent in args.agents:
        saved = config["options"].setdefault(agent, options)
        if saved != options:
            parser.error(f"{args.out} holds {agent} runs with options {saved}: use another --out")
    with open(config_path, "w") as handle:
        json.dump(config, handle, indent=1)
    published = [
        dict(
            zip(
                ["algorithm", "variant", "mass", "notified", "mean", "se", "n", "source"],
                r,
                strict=True,
            )
        )
        for r in PUBLISHED
    ]
    write_csv(os.path.join(args.out, "published.csv"), published)
    episodes_path = os.path.join(args.out, "episodes.csv")
    rows: list[dict[str, Any]] = []
    if os.path.exists(episodes_path):
        with open(episodes_path, newline="") as handle:
            rows = list(csv.DictReader(handle))
    else:
        write_csv(episodes_path, [], EPISODE_FIELDS)
    done = defaultdict(int)
    for r in rows:
        done[(r["cell"], r["agent"], int(r["seed"]))] += 1
    for name in args.cells:
        cell = known[name]
        n = episodes_for(cell, args.episodes)
        cap = args.cap if cell.problem == "cartpole" else 200
        for agent in args.agents:
            for seed in args.seeds:
                if done[(name, agent, seed)] >= n:
                    continue
                if done[(name, agent, seed)]:  # a run with fewer episodes: not resumable
                    parser.error(
                        f"{args.out} has {done[(name, agent, seed)]} episodes of {name} "
                        f"{agent} seed {seed}, not {n}: use another --out"
                    )
                start = time.perf_counter()
                new = run_one(cell, agent, seed, n, cap, options)
                rows.extend(new)
                with open(episodes_path, "a", newline="") as handle:
                    csv.DictWriter(handle, fieldnames=EPISODE_FIELDS).writerows(new)
                steps = sum(r["steps"] for r in new)
                print(
                    f"{name} {agent} seed {seed}: {n} episodes, {steps} steps, "
                    f"{time.perf_counter() - start:.1f} s "
                    f"({1e3 * (time.perf_counter() - start) / steps:.2f} ms/step all in); "
                    f"returns {[round(r['return']) for r in new]}",
                    flush=True,
                )
    # the summary and the figure cover every cell and agent the folder holds
    summary, curve = summarise(rows)
    if summary:
        write_csv(os.path.join(args.out, "summary.csv"), summary)
        write_csv(os.path.join(args.out, "curve.csv"), curve)
    if args.figure and rows:
        plot_curves(rows, args.figure)
    for row in summary:
        best = (
            f" | best published {row['published_best']} {row['published_mean']:.1f} ± "
            f"{row['published_se']:.1f} (n {row['published_n']}); beats: "
            f"{bool(row['beats_published'])}"
            if "published_mean" in row
            else " | no published number"
        )
        oracle = " [oracle]" if row["oracle"] else ""
        print(
            f"{row['cell']} {row['agent']}{oracle}: {row['mean']:.1f} ± {row['se']:.1f} "
            f"[{row['ci95_low']:.1f}, {row['ci95_high']:.1f}], {row['ms_per_decision']:.2f} "
            f"ms/decision{best}"
        )


if __name__ == "__main__":
    main()
