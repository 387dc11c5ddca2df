"""Why BAM's readouts on the cart-pole keep few trials, and what a better readout would buy.

The episodic experiment (README, Experiment 2) found that BAM's readout at a revisited
gravity keeps only 2–13 past trials, mostly of that gravity, and that the first trial it
plans with them is far from ground-truth MPPI. This script separates the possible causes,
*search* (the greedy misses better subsets) and *criterion* (the evidence itself prefers few
trials), and measures what the selection costs in control:

1. It runs the paper's BAM agent (``memory="bam"``, announced changes) through the episodic
   schedule up to the second trial of the last revisit, keeping every trial's trajectory.
2. At each revisit (trials 46, 61, 76: the first trial of episodes 4–6, after which the agent
   selects its readout) it scores readouts by the objective BAM maximises,
   ``J(W) = log p(D_t | W)`` (λ = 0, ``D_t`` the revisit's first trial): the greedy's, every
   earlier trial of the revisited gravity, and the earlier trials of that gravity taken in
   order, the first ``k`` and the last ``k`` for ``k = 0 … 15``.
3. Where the trials are: the share of each trial's steps with the pole below horizontal
   (``cos θ < 0``), for the revisit's first trial and by position in the earlier visit.
4. The model's misfit: the mean squared one-step residual, on the revisit's first trial, of
   the posterior mean fitted to every earlier trial of that gravity, against the model's
   noise variance σ² = 1e-6 (the simulator is deterministic: the residual is approximation).
5. Ablation (analysis only; the agents keep the paper's σ²): the same greedy readout under a
   model whose σ² is that measured residual variance.
6. Paired control trials from one start state at the revisited gravity, each planned with
   one belief by a fresh agent with the BAM agent's random features and planning seed (all
   with the paper's σ²): BAM's (readout + the first trial, what trial 2 uses), recursive
   Bayes' (the first trial alone), every earlier trial of that gravity + the first trial,
   those earlier trials alone (what a readout before any data of the visit could give), the
   best first-``k`` subset by ``J`` + the first trial, the ablation's readout + the first
   trial, and ground-truth MPPI.
7. Naive BAM (a readout after every trial, as the continual experiment's ``memory="bam"``):
   at the last trial of each first visit (trials 15, 30, 45) the greedy readout the selector
   makes over *this* (episodic) agent's trials, against all earlier trials of the visit — a
   proxy for naive BAM's readouts, whose own run has another history.

A trial's score is its mean reward (``cos θ``) over all its steps, as in the experiments. The
summary (``readout_summary.txt``, over every seed) holds the numbers docs/experiments.md's "Why
one-shot recovery does not reproduce" quotes.

Run by ``bam-rl reproduce cartpole-readout [--seeds 5] [--jobs 2] --out DIR`` (about a minute a
seed on one core; seeds in parallel with ``--jobs``; each seed's rows are kept in
``DIR/cartpole-readout/runs`` so an interrupted run resumes). It writes ``revisits.csv``,
``naive_readouts.csv``, ``readout_summary.txt`` (the numbers docs/experiments.md quotes),
``readout_variants.csv`` and the figure ``readout_analysis.png``. One module of about 710
lines, over the house's 700 on purpose: it is one analysis whose pieces are read together
(the paired trials, the readout variants compared on them, the summary lines docs quote and
the figure of the same rows), each a few dozen lines; split, a reader would follow one
variant's row across files.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd

from bam_rl import experiments
from bam_rl._io import atomic_path
from bam_rl.agents.mppi import GroundTruthMPPI, MPPIAgent
from bam_rl.experiments.options import RunOptions, claims_from, reproduction
from bam_rl.families.base import NaturalParams
from bam_rl.memory import Memory
from bam_rl.readout import select

VARIANTS = ("bam", "recursive", "oracle", "oracle-before", "best-first-k", "ablation", "gt")
Trial = tuple[np.ndarray, np.ndarray]  # states (T + 1, 5), actions (T, 1)


def run_trial(
    env: gym.Env, agent: Any, observation: np.ndarray, info: dict
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, dict]:
    """One trial; returns its score (mean reward of its second half), the states, actions,
    rewards and the last info."""
    states, actions, rewards = [observation], [], []  # rewards: floats
    while True:
        action = agent.act(observation)
        observation, reward, terminated, truncated, info = env.step(action)
        agent.observe(action, reward, observation, terminated, truncated, info)
        states.append(observation)
        actions.append(np.asarray(action, dtype=np.float64))
        rewards.append(float(reward))
        if terminated or truncated:
            break
    score = float(np.mean(rewards[len(rewards) // 2 :]))
    return score, np.array(states), np.array(actions), np.array(rewards), info


@dataclass(frozen=True)
class Setup:
    """The episodic schedule analysed and the agents' planner options.

    Attributes:
        episodes: Gravity of each episode (the paper's 9.81, 11.15, 3.72, 11.15, 3.72, 9.81).
        episode_length: Trials per episode (15).
        max_steps: Steps per trial (200).
        planner: ``MPPIAgent``/``GroundTruthMPPI`` planner options (the paper's by default).
    """

    episodes: tuple[float, ...] = (9.81, 11.15, 3.72, 11.15, 3.72, 9.81)
    episode_length: int = 15
    max_steps: int = 200
    planner: dict[str, Any] = field(default_factory=dict)

    def revisits(self) -> list[int]:
        """0-based index of the first trial of every episode whose gravity came before."""
        return [
            e * self.episode_length
            for e, g in enumerate(self.episodes)
            if any(np.isclose(g, h) for h in self.episodes[:e])
        ]

    def first_visit_ends(self) -> list[int]:
        """0-based index of the last trial of every episode that is a first visit."""
        return [
            (e + 1) * self.episode_length - 1
            for e, g in enumerate(self.episodes)
            if not any(np.isclose(g, h) for h in self.episodes[:e])
        ]

    def make_env(self, gravities: Sequence[float], announce: bool) -> gym.Env:
        """The cart-pole with one gravity per trial (held after the last)."""
        return gym.make(
            "bam_rl/GravityCartPole-v0",
            gravity_schedule=list(gravities),
            schedule_mode="hold",
            announce_changes=announce,
            max_steps=self.max_steps,
        )


def summed(prior: NaturalParams, stats: Sequence[NaturalParams], chosen: Any) -> NaturalParams:
    """``prior`` plus the statistics ``stats[j]`` of every index ``j`` in ``chosen``."""
    belief = prior
    for j in chosen:
        belief = belief + stats[j]
    return belief


def evidence(family: Any, stats: Sequence[NaturalParams], chosen: Any, s_t: NaturalParams) -> float:
    """BAM's objective at λ = 0: ``log p(D_t | W)`` with ``W`` the records ``chosen`` (summed
    in index order: it agrees with the selector's value to about 1e-4 nats, the rounding of
    another summation order of a precision with entries of order 1e7)."""
    return float(family.log_marginal(summed(family.prior, stats, chosen), s_t))


def greedy_readout(family: Any, stats: Sequence[NaturalParams]) -> Any:
    """The greedy readout (λ = 0) for the last of ``stats`` over all the others."""
    memory = Memory()
    for j, record in enumerate(stats[:-1]):
        memory.add(record, time=j)
    return select(family, memory, stats[-1], lam=0.0)


def below_horizontal(trial: Trial) -> float:
    """Share of a trial's steps with the pole below horizontal (``cos θ < 0``)."""
    return float(np.mean(trial[0][1:, 2] < 0))


def same_features(agent: MPPIAgent, reference: MPPIAgent) -> bool:
    """Whether two agents draw the same random Fourier features (so statistics match)."""
    a, b = agent.model.features, reference.model.features
    return bool(np.array_equal(a.omega, b.omega) and np.array_equal(a.offset, b.offset))


def paired_trial(
    variant: str,
    belief: NaturalParams | None,
    reference: MPPIAgent,
    seed: int,
    gravity: float,
    start_seed: int,
    setup: Setup,
) -> float:
    """Mean reward of one trial at ``gravity`` from the start state of ``start_seed``.

    Args:
        variant: ``"gt"`` plans with the simulator; any other name with ``belief``.
        belief: The belief a fresh ``MPPIAgent`` of ``seed`` plans with (its features are
            ``reference``'s; its planning draws are the same for every learned variant).
        reference: The BAM agent, whose features the statistics use.
        seed: The agent seed.
        gravity: The trial's gravity.
        start_seed: Seed of the environment's reset (the start state).
        setup: Steps per trial and planner options.
    """
    env = setup.make_env([gravity], announce=False)
    observation, info = env.reset(seed=start_seed)
    if variant == "gt":
        agent: Any = GroundTruthMPPI(env, seed=seed, **setup.planner)
        agent.reset(observation, info)
    else:
        agent = MPPIAgent(
            env.observation_space, env.action_space, memory="recursive", seed=seed, **setup.planner
        )
        if not same_features(agent, reference):
            raise RuntimeError("the paired agent must draw the BAM agent's features")
        agent.reset(observation, info)
        agent.model.set_belief(belief)
    _, _, _, rewards, _ = run_trial(env, agent, observation, info)
    env.close()
    return float(np.mean(rewards))


def residual_variance(probe: MPPIAgent, belief: NaturalParams, trial: Trial) -> float:
    """Mean squared one-step residual of ``belief``'s posterior-mean model on ``trial``
    (``probe``: an agent with the same features, not the one running)."""
    model = probe.model
    model.set_belief(belief)
    states, actions = trial
    predicted = model.predict(states[:-1], actions)
    return float(np.mean((predicted - states[1:]) ** 2))


def naive_readout(
    seed: int,
    family: Any,
    stats: list[NaturalParams],
    gravities: list[float],
    episode_length: int,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """The readout the selector makes for the last trial so far over every earlier trial
    (naive BAM's), scored against all earlier trials of that trial's episode.

    Args:
        seed: The agent seed (for the row).
        family: The agent model's family.
        stats: Every trial's statistics so far, in order.
        gravities: Their gravities.
        episode_length: Trials per episode.
        log: Where the row's line goes.

    Returns:
        A row: how many trials the greedy keeps, how many of them from the episode, and
        ``J`` of both sets.
    """
    index = len(stats) - 1
    readout = greedy_readout(family, stats)
    greedy = np.flatnonzero(readout.weights > 0)
    episode = np.arange(index - index % episode_length, index)
    row = {
        "seed": seed,
        "trial": index + 1,
        "gravity": gravities[index],
        "greedy_n": len(greedy),
        "greedy_in_episode": int(np.isin(greedy, episode).sum()),
        "n_episode": len(episode),
        "J_greedy": evidence(family, stats, greedy, stats[index]),
        "J_episode": evidence(family, stats, episode, stats[index]),
    }
    if not np.isclose(row["J_greedy"], readout.objective, rtol=0.0, atol=0.01):
        raise RuntimeError("the recomputed J differs from the readout's objective")
    log(
        f"seed {seed} trial {index + 1} g={gravities[index]} (naive readout for the last trial "
        f"of a first visit): greedy keeps {len(greedy)} trials ({row['greedy_in_episode']} of "
        f"the episode's {len(episode)} earlier ones) J {row['J_greedy']:.6g}; J of the "
        f"episode's {len(episode)} earlier trials {row['J_episode']:.6g}",
    )
    return row


def revisit_row(
    seed: int,
    agent: MPPIAgent,
    spaces: tuple[gym.Space, gym.Space],
    trials: list[Trial],
    stats: list[NaturalParams],
    gravities: list[float],
    setup: Setup,
) -> dict[str, Any]:
    """Everything measured at one revisit: the last of ``trials`` is its first trial.

    Args:
        seed: The BAM agent's seed (also the probes' and the paired agents').
        agent: The BAM agent, right after the revisit's first trial (and its readout).
        spaces: The environment's observation and action spaces (for the probes).
        trials: Every trial so far.
        stats: Their statistics under the BAM agent's model.
        gravities: Their gravities.
        setup: The schedule and planner options.
    """
    index = len(trials) - 1
    gravity = gravities[index]
    family = agent.model.family
    s_t = stats[index]
    same = np.flatnonzero(np.isclose(gravities[:index], gravity))
    readout = agent.last_readout
    if readout is None or len(readout.weights) != index:
        raise RuntimeError("the BAM agent must have selected over every earlier trial")
    greedy = np.flatnonzero(readout.weights > 0)
    j_greedy = evidence(family, stats, greedy, s_t)
    if not np.isclose(j_greedy, readout.objective, rtol=0.0, atol=0.01):
        raise RuntimeError("the recomputed J differs from the readout's objective")
    first_k = [evidence(family, stats, same[:k], s_t) for k in range(len(same) + 1)]
    last_k = [evidence(family, stats, same[len(same) - k :], s_t) for k in range(len(same) + 1)]
    best_k = 1 + int(np.argmax(first_k[1:]))
    oracle_prior = summed(family.prior, stats, same)
    probe = MPPIAgent(*spaces, memory="recursive", seed=seed, **setup.planner)
    residual = residual_variance(probe, oracle_prior, trials[index])
    # ablation: the same greedy under a model whose σ² is the measured residual variance
    wide = MPPIAgent(*spaces, memory="recursive", seed=seed, noise_var=residual, **setup.planner)
    if not (same_features(probe, agent) and same_features(wide, agent)):
        raise RuntimeError("the probes must draw the BAM agent's features")
    wide_readout = greedy_readout(wide.model.family, [wide.model.stats(*t) for t in trials])
    wide_chosen = np.flatnonzero(wide_readout.weights > 0)
    bam_belief = summed(family.prior, stats, greedy) + s_t
    if not all(
        np.allclose(bam_belief.fields[k], value) for k, value in agent.model.belief.fields.items()
    ):
        raise RuntimeError("BAM's belief for trial 2 must be its readout plus the first trial")
    beliefs: dict[str, NaturalParams | None] = {
        "bam": bam_belief,
        "recursive": family.prior + s_t,
        "oracle": oracle_prior + s_t,
        "oracle-before": oracle_prior,
        "best-first-k": summed(family.prior, stats, same[:best_k]) + s_t,
        "ablation": summed(family.prior, stats, wide_chosen) + s_t,
        "gt": None,
    }
    start_seed = 10_000 * (seed + 1) + index
    scores = {
        v: paired_trial(v, beliefs[v], agent, seed, gravity, start_seed, setup) for v in VARIANTS
    }
    positions = [int(np.flatnonzero(same == j)[0]) + 1 for j in greedy if j in same]
    return {
        "seed": seed,
        "trial": index + 1,
        "gravity": gravity,
        "n_same": len(same),
        "greedy_n": len(greedy),
        "greedy_same": int(np.isin(greedy, same).sum()),
        "greedy_positions": positions,
        "J_greedy": j_greedy,
        "J_all_same": first_k[-1],
        "J_prior": first_k[0],
        "J_first_k": first_k,
        "J_last_k": last_k,
        "best_k": best_k,
        "below_first": below_horizontal(trials[index]),
        "below_by_position": [below_horizontal(trials[j]) for j in same],
        "residual_var": residual,
        "noise_var": agent.model.noise_var,
        "wide_n": len(wide_chosen),
        "wide_same": int(np.isin(wide_chosen, same).sum()),
        **{f"score_{v}": scores[v] for v in VARIANTS},
    }


def analyse(
    seed: int, setup: Setup | None = None, log: Callable[[str], None] = print
) -> tuple[list[dict], list[dict]]:
    """Runs the BAM agent of ``seed`` through ``setup``'s schedule; returns the revisit rows
    and the naive-readout rows (a line per row goes to ``log``)."""
    setup = Setup() if setup is None else setup
    schedule = [g for g in setup.episodes for _ in range(setup.episode_length)]
    env = setup.make_env(schedule, announce=True)
    agent = MPPIAgent(
        env.observation_space,
        env.action_space,
        memory="bam",
        seed=seed,
        announced=True,
        **setup.planner,
    )
    observation, info = env.reset(seed=seed)
    agent.reset(observation, info)
    trials: list[Trial] = []
    stats: list[NaturalParams] = []  # each trial's, computed once
    gravities: list[float] = []
    rows: list[dict[str, Any]] = []
    naive_rows: list[dict[str, Any]] = []
    revisits, ends = setup.revisits(), setup.first_visit_ends()
    start = time.perf_counter()
    for index in range(max(revisits) + 1):
        gravities.append(float(info["gravity"]))
        _, states, actions, _, _ = run_trial(env, agent, observation, info)
        trials.append((states, actions))
        stats.append(agent.model.stats(states, actions))
        observation, info = env.reset()
        agent.reset(observation, info)
        if index in ends:
            family = agent.model.family
            naive_rows.append(
                naive_readout(seed, family, stats, gravities, setup.episode_length, log)
            )
        if index in revisits:
            spaces = (env.observation_space, env.action_space)
            row = revisit_row(seed, agent, spaces, trials, stats, gravities, setup)
            rows.append(row)
            log(row_line(row, time.perf_counter() - start))
    env.close()
    return rows, naive_rows


def row_line(row: dict[str, Any], elapsed: float) -> str:
    """One revisit's numbers, as a line."""
    return (
        f"seed {row['seed']} trial {row['trial']} g={row['gravity']}: greedy keeps "
        f"{row['greedy_n']} ({row['greedy_same']} of the {row['n_same']} same-gravity, at "
        f"positions {row['greedy_positions']}) J {row['J_greedy']:.6g}; J of the earlier "
        "trials of that gravity, first k = 0.. "
        + " ".join(f"{v:.0f}" for v in row["J_first_k"])
        + ", last k = 0.. "
        + " ".join(f"{v:.0f}" for v in row["J_last_k"])
        + f"; below horizontal: first trial {row['below_first']:.2f}, earlier visit by position "
        + " ".join(f"{v:.2f}" for v in row["below_by_position"])
        + f"; residual var {row['residual_var']:.3g} (sigma^2 {row['noise_var']:g}); readout "
        f"at that sigma^2 keeps {row['wide_n']} ({row['wide_same']} same); scores "
        + ", ".join(f"{v} {row[f'score_{v}']:.3f}" for v in VARIANTS)
        + f"; {elapsed:.0f} s"
    )


def summary_lines(rows: list[dict[str, Any]], naive_rows: list[dict[str, Any]]) -> list[str]:
    """The numbers docs/experiments.md quotes, over every seed analysed, one per line."""
    lines: list[str] = []
    for key in ("greedy_n", "greedy_same", "wide_n", "wide_same", "greedy_positions"):
        lines.append(f"{key}: " + " ".join(str(r[key]) for r in rows))
    gap = np.array([r["J_greedy"] - r["J_all_same"] for r in rows])
    lines.append(
        f"J(greedy) - J(all same-gravity): median {np.median(gap):.1f}, range "
        f"{gap.min():.1f} to {gap.max():.1f}; greedy higher in {(gap > 0).sum()}/{len(gap)}"
    )
    firsts = [np.array(r["J_first_k"]) for r in rows]
    lasts = [np.array(r["J_last_k"]) for r in rows]
    peaks = [int(np.argmax(c)) for c in firsts]
    drops = np.array([c.max() - c[-1] for c in firsts])
    above = np.array([c.max() - r["J_greedy"] for c, r in zip(firsts, rows, strict=True)])
    lines.append(
        f"J(first k) peaks at k = {min(peaks)}-{max(peaks)} ({peaks}); falls to all of them "
        f"by {drops.min():.0f}-{drops.max():.0f} (median {np.median(drops):.0f}); the best "
        f"first-k subset beats the greedy in {(above > 0).sum()}/{len(rows)}, by up to "
        f"{above.max():.0f}"
    )
    for k in (1, 3, 5):
        if not all(len(f) > k for f in firsts):  # a short schedule (--quick)
            continue
        lead = np.array([f[k] - last[k] for f, last in zip(firsts, lasts, strict=True)])
        lines.append(
            f"J(first {k}) - J(last {k}): median {np.median(lead):.0f}, first higher in "
            f"{(lead > 0).sum()}/{len(rows)}"
        )
    positions = np.array([p for r in rows for p in r["greedy_positions"]])
    n_same = rows[0]["n_same"] if rows else 0
    if positions.size:
        lines.append(
            f"greedy same-gravity picks among the earlier visit's first five trials: "
            f"{np.mean(positions <= 5):.0%} of {positions.size} (uniform picks: "
            f"{min(5, n_same) / max(n_same, 1):.0%})"
        )
    below = np.array([r["below_by_position"] for r in rows if len(r["below_by_position"])])
    if below.size:
        lines.append(
            "below horizontal, median over revisits: the revisit's first trial "
            f"{np.median([r['below_first'] for r in rows]):.2f}; the earlier visit by position "
            + " ".join(f"{v:.2f}" for v in np.median(below, axis=0))
        )
    ratio = np.array([r["residual_var"] / r["noise_var"] for r in rows])
    lines.append(
        f"residual variance / sigma^2: median {np.median(ratio):.2f}, range "
        f"{ratio.min():.2f} to {ratio.max():.2f}; at most 1.5 in {(ratio <= 1.5).sum()}, "
        f"where J(greedy) - J(all) is " + " ".join(f"{g:.0f}" for g in gap[ratio <= 1.5])
    )
    trials = sorted({r["trial"] for r in rows})
    gt = np.array([r["score_gt"] for r in rows])
    for v in VARIANTS:
        values = np.array([r[f"score_{v}"] for r in rows])
        medians = [np.median([r[f"score_{v}"] for r in rows if r["trial"] == t]) for t in trials]
        close = "" if v == "gt" else "; within 10 % of GT MPC (or above) in "
        close += "" if v == "gt" else f"{(values >= 0.9 * gt).sum()}/{len(rows)}"
        lines.append(
            f"score {v:14s} median {np.median(values):6.3f}; per revisit (trials {trials}) "
            + ", ".join(f"{m:6.3f}" for m in medians)
            + close
        )
    bam = np.array([r["score_bam"] for r in rows])
    recursive = np.array([r["score_recursive"] for r in rows])
    oracle = np.array([r["score_oracle"] for r in rows])
    misses = [
        f"{r['gravity']:g}: {r['score_oracle']:.3f} vs GT {r['score_gt']:.3f}"
        for r in rows
        if r["score_oracle"] < 0.9 * r["score_gt"]
    ]
    lines.append(
        f"BAM above recursive Bayes in {(bam > recursive).sum()}/{len(rows)} pairs (median "
        f"difference {np.median(bam - recursive):+.3f}); oracle - GT MPC median "
        f"{np.median(oracle - gt):+.3f}; oracle misses: {misses}"
    )
    if naive_rows:
        gaps = np.array([r["J_greedy"] - r["J_episode"] for r in naive_rows])
        kept = np.array([r["greedy_n"] for r in naive_rows])
        lines.append(
            "naive readouts at the end of first visits: keep "
            + " ".join(str(k) for k in kept)
            + f" trials (mean {kept.mean():.1f}), of them from the visit "
            + " ".join(str(r["greedy_in_episode"]) for r in naive_rows)
            + f"; J(greedy) - J(the visit's earlier trials) median {np.median(gaps):.0f}, "
            f"greedy higher in {(gaps > 0).sum()}/{len(gaps)}"
        )
    return lines


def save(rows: list[dict[str, Any]], out: Path) -> None:
    """Writes the revisit rows (``revisits.csv``) and the figure (``readout_analysis.png``)."""
    from bam_rl.harness.files import write_frame
    from bam_rl.harness.plotting import (
        add_caption,
        figure_legend,
        new_figure,
        plot_points,
        save_figure,
    )

    out.mkdir(parents=True, exist_ok=True)
    table = pd.DataFrame(rows)
    for key in ("J_first_k", "J_last_k", "below_by_position"):
        if key in table:
            table[key] = [" ".join(f"{v:.3f}" for v in r[key]) for r in rows]
    table["greedy_positions"] = [" ".join(map(str, r["greedy_positions"])) for r in rows]
    write_frame(table, out / "revisits.csv")
    figure, (left, right) = new_figure(1, 2, figsize=(12, 4.2))
    colours = {11.15: "C0", 3.72: "C1", 9.81: "C2"}
    for r in rows:
        left.plot(
            np.arange(len(r["J_first_k"])),
            np.asarray(r["J_first_k"]) - r["J_greedy"],
            color=colours.get(r["gravity"], "0.5"),
            alpha=0.7,
            label=f"revisit of {r['gravity']:g} m/s²",
        )
    left.axhline(0.0, color="black", linestyle="--", linewidth=1, label="BAM's greedy readout")
    left.set_ylim(-1500, 400)
    left.set_xlabel("k: the earlier visit's first k trials as the readout")
    left.set_ylabel("J(first k) − J(greedy readout) [nats]")
    left.set_title("evidence of the revisit's first trial")
    names = {
        "bam": "BAM\nreadout",
        "recursive": "recursive",
        "oracle": "all 15\n+ trial 1",
        "oracle-before": "all 15\nonly",
        "best-first-k": "best first k\n+ trial 1",
        "ablation": "readout at\nresidual σ²",
        "gt": "GT MPC",
    }
    for position, variant in enumerate(VARIANTS):
        values = [r[f"score_{variant}"] for r in rows]
        plot_points(right, position, values, f"C{position + 3}")
        right.scatter(position + 0.3, np.median(values), marker="_", s=300, color="red", zorder=5)
    right.set_xticks(range(len(VARIANTS)), [names[v] for v in VARIANTS])
    right.set_ylabel("trial reward (mean cos angle)")
    right.set_title("the trial planned after the readout")
    add_caption(
        figure,
        "Left: J = log p(trial 1 of a revisit | readout) for the earlier visit's first k trials "
        "of that gravity, relative to BAM's greedy readout (one line per seed and revisit; "
        "curves below −1,500 leave the panel). Right: one paired trial per seed and revisit "
        "(same start state; same planning draws for the learned models) planned with each "
        "belief: BAM's readout + trial 1, trial 1 alone (recursive Bayes), all 15 earlier "
        "trials of that gravity + trial 1, those 15 alone, the best first-k subset by J + trial "
        "1, the readout chosen with σ² set to the measured residual variance, and MPPI on the "
        "simulator (GT MPC); black: mean ± sd, red: median. bam-rl reproduce cartpole-readout.",
    )
    figure_legend(figure, left, loc="right")
    save_figure(figure, out / "readout_analysis.png")


#: ``reproduce --quick``: a short schedule (two trials an episode, 30 steps a trial) and a
#: small planner, to check that everything runs.
QUICK_SETUP = Setup(
    episodes=(9.81, 3.72, 9.81),
    episode_length=2,
    max_steps=30,
    planner={"horizon": 5, "n_samples": 8},
)


def _seed_rows(folder: Path, seed: int, setup: Setup, quick: bool) -> dict[str, list[dict]]:
    """One seed's rows, from ``folder`` if an earlier run wrote them (resumption)."""
    path = folder / f"{'quick' if quick else 'paper'}_seed{seed}.json"
    if path.exists():
        return json.loads(path.read_text())
    revisits, naive = analyse(seed, setup, log=lambda line: None)
    result = {"revisits": revisits, "naive": naive}
    with atomic_path(path) as temporary:
        temporary.write_text(json.dumps(result, default=_json_number))
    return json.loads(path.read_text())


def _json_number(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    raise TypeError(f"not JSON: {type(value).__name__}")


def variant_table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Per belief of the paired trials: median score and pairs within 10 % of GT MPC."""
    gt = np.array([r["score_gt"] for r in rows])
    table = []
    for variant in VARIANTS:
        values = np.array([r[f"score_{variant}"] for r in rows])
        within = int(np.sum(values >= 0.9 * gt)) if variant != "gt" else len(rows)
        table.append(
            {"variant": variant, "median": float(np.median(values)), "within_10pct": within}
        )
    return pd.DataFrame(table).assign(pairs=len(rows))


@reproduction(default_seeds=5, quick_seeds=1)
def reproduce(options: RunOptions) -> pd.DataFrame:
    """Runs the readout analysis for ``seeds`` seeds (5; ``quick``: 1 on :data:`QUICK_SETUP`)
    and writes its tables, summary lines and figure to ``out``; returns the variant table.

    Args:
        out: Output directory.
        seeds: Seeds 0..seeds-1 (the BAM agent's and the paired trials').
        quick: The short schedule, to check that everything runs.
        n_jobs: Seeds analysed in parallel processes.
        progress: Show a progress bar over seeds.
    """
    from joblib import Parallel, delayed
    from tqdm.auto import tqdm

    from bam_rl.harness.files import write_frame
    from bam_rl.harness.plotting import write_summary

    out, quick, count = options.out, options.quick, options.seeds
    folder = out / "runs"
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"seeds must be a positive int, got {count!r}")
    setup = QUICK_SETUP if quick else Setup()
    jobs = (delayed(_seed_rows)(folder, seed, setup, quick) for seed in range(count))
    results = list(
        tqdm(
            Parallel(n_jobs=options.n_jobs, return_as="generator")(jobs),
            total=count,
            disable=not options.progress,
        )
    )
    rows = [row for result in results for row in result["revisits"]]
    naive = [row for result in results for row in result["naive"]]
    write_frame(pd.DataFrame(naive), out / "naive_readouts.csv")
    with atomic_path(out / "readout_summary.txt") as temporary:
        temporary.write_text("\n".join(summary_lines(rows, naive)) + "\n")
    return write_summary(
        quick, variant_table(rows), out / "readout_variants.csv", draw=lambda: save(rows, out)
    )


#: What the analysis measures (rows of the report's claim table; not claims of the paper).
CLAIMS = (
    "Analysis of §4.2: BAM's readout objective J prefers a few early trials to every earlier "
    "trial of the revisited gravity (J of the greedy's trials > J of all of them).",
    "Analysis of §4.2: planning with every earlier trial of the revisited gravity reaches GT "
    "MPC (within 10 %), where BAM's readout does not.",
)


@claims_from("revisits.csv", "cartpole-readout", "§4.2 (analysis)", CLAIMS)
def claims(table: pd.DataFrame) -> list[dict[str, str]]:
    """The analysis rows of the claim table from ``folder/revisits.csv``."""
    from bam_rl.experiments.report import claim

    gap = table["J_greedy"] - table["J_all_same"]
    higher = int((gap > 0).sum())
    first = claim(
        "cartpole-readout",
        "§4.2 (analysis)",
        CLAIMS[0],
        f"greedy higher in {higher} of {len(table)} revisits (median {gap.median():+.0f} nats)",
        higher > len(table) / 2,
    )
    gt = table["score_gt"]
    oracle = int((table["score_oracle"] >= 0.9 * gt).sum())
    bam = int((table["score_bam"] >= 0.9 * gt).sum())
    second = claim(
        "cartpole-readout",
        "§4.2 (analysis)",
        CLAIMS[1],
        f"every earlier trial + trial 1: {oracle} of {len(table)} paired trials; BAM's readout: "
        f"{bam} of {len(table)}",
        oracle > len(table) / 2 and bam < oracle,
    )
    return [first, second]


def scale(folder: str | Path) -> str:
    """What ``folder/revisits.csv`` holds, counted (the report's caption): seeds and the
    revisits analysed; ``""`` without the file."""
    from bam_rl.harness import plotting

    return experiments.counted(
        folder,
        "revisits.csv",
        ["seed", "trial"],
        lambda table: (
            f"{experiments.distinct(table, seed='seed')}, "
            f"{plotting.count_text(len(table), 'revisit')} analysed (one paired trial per variant "
            "each)."
        ),
    )
