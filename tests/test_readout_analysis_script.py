"""Smoke tests of ``scripts/mppi_readout_analysis.py`` (its full run takes CPU-minutes a seed)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


@pytest.fixture
def analysis(monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPTS))  # it imports its sibling mppi_acceptance
    spec = importlib.util.spec_from_file_location(
        "readout_analysis", SCRIPTS / "mppi_readout_analysis.py"
    )
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "readout_analysis", module)
    spec.loader.exec_module(module)
    return module


def test_naive_readout_scores_the_greedy_against_the_visit(analysis):
    from mppi_acceptance import random_trial

    from agents.mppi import MPPIAgent

    env = gym.make("bam_rl/GravityCartPole-v0")
    agent = MPPIAgent(env.observation_space, env.action_space, memory="bam", seed=0)
    rng = np.random.default_rng(0)
    trials = [random_trial(env, rng, seed=i) for i in range(15)]
    row = analysis.naive_readout(0, agent, trials, [9.81] * 15)
    assert row["trial"] == 15 and row["n_episode"] == 14
    assert 0 <= row["greedy_in_episode"] <= row["greedy_n"] <= 14
    family = agent.model.family
    stats = [agent.model.stats(*t) for t in trials]
    prior_score = float(family.log_marginal(family.prior, stats[14]))
    assert row["J_greedy"] >= prior_score  # the greedy only adds trials that raise J


def test_summary_counts_what_the_readme_quotes(analysis, capsys):
    def row(trial, greedy, all_same, curve, scores):
        return {
            "trial": trial,
            "greedy_n": 3,
            "greedy_same": 2,
            "wide_n": 4,
            "wide_same": 1,
            "greedy_positions": [1, 7],
            "J_greedy": greedy,
            "J_all_same": all_same,
            "J_first_k": curve,
            "residual_var": 2e-6,
            **{f"score_{v}": s for v, s in zip(analysis.VARIANTS, scores, strict=True)},
        }

    rows = [
        row(46, 10.0, 4.0, [0.0, 12.0, 5.0], [0.1, -0.5, 0.4, 0.4, 0.0, 0.4]),
        row(61, 3.0, 5.0, [0.0, 2.0, 1.0], [-0.2, -0.1, 0.7, 0.2, 0.0, 0.7]),
    ]
    analysis.summarise(rows, [])
    out = capsys.readouterr().out
    assert "median 2.0, range -2.0 to 6.0; greedy higher in 1/2" in out
    assert "peaks at k = 1-1" in out and "beats the greedy in 1/2, by up to 2.00" in out
    assert "first five trials: 50% of 4" in out
    assert "residual variance / sigma^2: median 2.00" in out
    assert "score oracle         median  0.550" in out and "in 2/2" in out
    assert "BAM above recursive Bayes in 1/2 pairs" in out
