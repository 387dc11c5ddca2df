"""NS-Gym's published problems side by side (issue 42): bam-rl agents on NS-Gym's own
CartPole-v1 and Pendulum-v1 environments, through :func:`bam_rl.interop.nsgym.from_nsgym`,
beside the numbers NS-Gym published.

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
(``summary.csv``). ``published.csv`` is the table of published numbers (:data:`PUBLISHED`).
``mppi-gt`` plans with the live environment: with notification that is the information
NS-Gym's MCTS gets from its planning environment; without it, GT is an oracle (marked, and
never counted as our best agent). Runs are resumable: a (cell, agent, seed) already complete
in ``episodes.csv`` is skipped::

    python scripts/nsgym_published.py --out /tmp/nsgym --seeds 0 1 2 3 4
    python scripts/nsgym_published.py --smoke --out /tmp/nsgym_smoke
    python scripts/nsgym_published.py --cells cartpole-1.5-notified --agents mppi-gt

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
from typing import Any

import gymnasium as gym
import numpy as np

from bam_rl.harness.registry import make_agent

TAG = "scope-lab-vu/ns_gym@submission/ns_gym_v0"
CP_NB = f"{TAG}:ns_gym_experiments/experiments/NS_Cartpole/CartPoleResults.ipynb"
DA_NB = f"{TAG}:ns_gym_experiments/experiments/data_analysis.ipynb"

#: NS-Gym's published CartPole numbers (single change of the pole mass 0.1 -> m at t = 0, step
#: cap 2500): (algorithm, variant, m, notified, mean return, standard error = std / sqrt(n),
#: n episodes, source: notebook, cell, result file named there). Read from the notebooks'
#: stored outputs; the result CSVs themselves are not in the repository. DDQN ignores the
#: planning environment, so its numbers (run without notification) stand in both cells.
#: ADA-MCTS and RATS have no CartPole results at the tag; NS-Gym published no Pendulum numbers
#: there (its NS_Pendulum scripts, PPO / DDPG / A2C, have no stored results).
PUBLISHED: list[tuple[str, str, float, bool, float, float, int, str]] = [
    # MCTS (ns_gym MCTS, gamma 0.5, c sqrt 2, depth 500), 50 episodes per row
    *[
        ("MCTS", f"num_iter={it}", m, False, mean, se, 50,
         f"{CP_NB} cell 2 (= {DA_NB} cell 33): CartpoleVanillaMCTS_withoutChangNotif_"
         "2024-05-21_21:50:47.csv")
        for m, it, mean, se in [
            (1.0, 50, 667.90, 55.690957), (1.0, 100, 718.64, 67.964791),
            (1.0, 300, 600.90, 47.676540), (1.2, 50, 717.70, 63.285793),
            (1.2, 100, 629.40, 47.673259), (1.2, 300, 595.64, 52.964260),
            (1.3, 50, 552.68, 38.400100), (1.3, 100, 601.52, 49.955353),
            (1.3, 300, 552.84, 49.281841), (1.5, 50, 724.84, 67.259123),
            (1.5, 100, 625.60, 44.359883), (1.5, 300, 641.28, 50.465644),
        ]
    ],
    *[
        ("MCTS", f"num_iter={it}", m, True, mean, se, 50,
         f"{CP_NB} cell 3: CartpoleVanillaMCTS_single_transition_withChangNotif_"
         "2024-05-22_02:56:49.csv")
        for m, it, mean, se in [
            (1.0, 50, 699.38, 46.761338), (1.0, 100, 711.92, 61.059555),
            (1.0, 300, 633.62, 49.274780), (1.2, 50, 668.96, 48.726224),
            (1.2, 100, 794.64, 69.984872), (1.2, 300, 735.52, 74.128731),
            (1.3, 50, 801.60, 75.002133), (1.3, 100, 813.06, 57.670743),
            (1.3, 300, 734.08, 53.160173), (1.5, 50, 742.62, 58.148690),
            (1.5, 100, 826.20, 71.246396), (1.5, 300, 678.58, 51.134884),
        ]
    ],
    # AlphaZero (500 simulations, depth 500, gamma 1, c sqrt 2, 2x128 network), temp 1
    *[
        ("AlphaZero", "trial_1 2024-07-16", m, False, mean, se, 150,
         f"{CP_NB} cell 9: CartPole_AlphaZero_single_change_without_notif_trial_1_2024-07-16.csv")
        for m, mean, se in [
            (1.0, 441.653333, 51.967588), (1.2, 286.06, 25.946431),
            (1.3, 259.30, 15.107133), (1.5, 272.82, 21.246861),
        ]
    ],
    ("AlphaZero", "rerun 2024-08-15", 1.0, False, 585.13, 80.868251, 100,
     f"{CP_NB} cell 15: CartPole_AlphaZero_single_change_without_notif_2024-08-15.csv"),
    *[
        ("AlphaZero", "trial_1 2024-07-16", m, True, mean, se, 150,
         f"{CP_NB} cell 8: CartPole_AlphaZero_single_change_with_notif_trial_1_2024-07-16.csv")
        for m, mean, se in [
            (1.0, 230.813333, 1.056497), (1.2, 241.853333, 1.016393),
            (1.3, 242.793333, 0.819958), (1.5, 902.046667, 83.005411),
        ]
    ],
    ("AlphaZero", "rerun 2024-08-15", 1.0, True, 232.18, 1.299213, 100,
     f"{CP_NB} cell 16: CartPole_AlphaZero_single_change_with_notif_2024-08-15.csv"),
    ("AlphaZero", "big_mass 2024-08-15", 1.5, True, 932.49, 103.154253, 100,
     f"{CP_NB} cell 17: CartPole_AlphaZero_single_change_with_notif_big_mass_2024-08-15.csv"),
    # DDQN (3x64 network, trained at m = 0.1), no notification; stands in both cells
    *[
        ("DDQN", "no notification (policy ignores it)", m, notified, mean, se, 150,
         f"{CP_NB} cell 12 (= {DA_NB} cell 49): CartPole_DDQN_single_transition_"
         "increasingMass_trial_1_2024-05-30.csv")
        for m, mean, se in [
            (1.0, 135.533333, 0.278806), (1.2, 135.853333, 0.271772),
            (1.3, 136.026667, 0.259055), (1.5, 135.193333, 0.267175),
        ]
        for notified in (False, True)
    ],
    # PA-MCTS (DDQN + MCTS, alpha 0.25 its best; masses 0.1, 1.0, 1.5 only), 100 episodes
    *[
        ("PA-MCTS", f"alpha={alpha}", m, notified, mean, se, 100,
         f"{CP_NB} cell {cell}: CartPole_PAMCTS_single_change_"
         f"{'with' if notified else 'without'}_change_notif_2024-08-09.csv")
        for notified, cell, rows in [
            (True, 10, [(1.0, 0.25, 740.84, 43.230458), (1.0, 0.5, 123.55, 0.467613),
                        (1.0, 0.75, 136.07, 0.291029), (1.5, 0.25, 702.58, 43.605674),
                        (1.5, 0.5, 124.29, 0.472538), (1.5, 0.75, 135.22, 0.302708)]),
            (False, 11, [(1.0, 0.25, 525.98, 31.912503), (1.0, 0.5, 120.48, 0.586460),
                         (1.0, 0.75, 135.41, 0.316577), (1.5, 0.25, 467.35, 25.112295),
                         (1.5, 0.5, 117.60, 1.239094), (1.5, 0.75, 135.42, 0.344709)]),
        ]
        for m, alpha, mean, se in rows
    ],
]  # fmt: skip

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
    rows = [r for r in rows if r["cell"] in args.cells]
    summary, curve = summarise(rows)
    if summary:
        write_csv(os.path.join(args.out, "summary.csv"), summary)
        write_csv(os.path.join(args.out, "curve.csv"), curve)
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
