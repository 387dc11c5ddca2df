"""``bam-rl reproduce cartpole-readout`` (the readout analysis; its full run takes minutes a
seed): small schedules and synthetic rows."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

from bam_rl.experiments import cartpole_readout


@pytest.fixture
def analysis():
    return cartpole_readout


def test_schedule_positions(analysis):
    setup = analysis.Setup()
    assert setup.revisits() == [45, 60, 75]
    assert setup.first_visit_ends() == [14, 29, 44]
    short = analysis.Setup(episodes=(9.81, 3.72, 9.81, 3.72), episode_length=2)
    assert short.revisits() == [4, 6] and short.first_visit_ends() == [1, 3]


def test_a_short_schedule_is_analysed_end_to_end(analysis):
    setup = analysis.Setup(
        episodes=(9.81, 3.72, 9.81),
        episode_length=2,
        max_steps=25,
        planner={"horizon": 5, "n_samples": 4},
    )
    lines: list[str] = []
    rows, naive = analysis.analyse(0, setup, log=lines.append)
    assert [r["trial"] for r in rows] == [5] and [r["trial"] for r in naive] == [2, 4]
    row = rows[0]
    assert row["n_same"] == 2 and row["gravity"] == 9.81
    assert row["J_all_same"] == row["J_first_k"][-1] == row["J_last_k"][-1]
    assert row["J_prior"] == row["J_first_k"][0] == row["J_last_k"][0]
    assert row["J_greedy"] >= row["J_prior"]  # the greedy only adds records that raise J
    assert 0.0 <= row["below_first"] <= 1.0 and len(row["below_by_position"]) == 2
    assert row["noise_var"] == 1e-6 and row["residual_var"] > 0
    assert all(-1.0 <= row[f"score_{v}"] <= 1.0 for v in analysis.VARIANTS)
    assert all(r["n_episode"] == 1 for r in naive)  # the visit's one earlier trial
    assert any(line.startswith("seed 0 trial 5 g=9.81: greedy keeps") for line in lines)


def test_naive_readout_scores_the_visit_with_log_marginal(analysis):
    from bam_rl.agents.mppi import MPPIAgent
    from bam_rl.experiments.mppi_checks import random_trial

    env = gym.make("bam_rl/GravityCartPole-v0")
    agent = MPPIAgent(env.observation_space, env.action_space, memory="bam", seed=0)
    rng = np.random.default_rng(0)
    trials = [random_trial(env, rng, seed=i) for i in range(20)]
    stats = [agent.model.stats(*t) for t in trials]
    family = agent.model.family
    row = analysis.naive_readout(0, family, stats, [9.81] * 20, 15, log=lambda line: None)
    assert row["trial"] == 20 and row["n_episode"] == 4  # trials 16-19 of the second episode
    assert 0 <= row["greedy_in_episode"] <= row["greedy_n"] <= 19
    visit = family.prior + stats[15] + stats[16] + stats[17] + stats[18]
    assert row["J_episode"] == pytest.approx(float(family.log_marginal(visit, stats[19])))


def _row(analysis, trial, greedy, all_same, first_k, last_k, scores, residual=2e-6):
    return {
        "trial": trial,
        "gravity": 9.81,
        "n_same": 10,
        "greedy_n": 3,
        "greedy_same": 2,
        "wide_n": 4,
        "wide_same": 1,
        "greedy_positions": [1, 7],
        "J_greedy": greedy,
        "J_all_same": all_same,
        "J_first_k": first_k,
        "J_last_k": last_k,
        "below_first": 0.9,
        "below_by_position": [0.8, 0.2],
        "residual_var": residual,
        "noise_var": 1e-6,
        **{f"score_{v}": s for v, s in zip(analysis.VARIANTS, scores, strict=True)},
    }


def test_summary_counts_what_the_docs_quote(analysis):
    rows = [
        _row(analysis, 46, 10.0, 4.0, [0, 12, 5, 5, 5, 4], [0, 1, 2, 3, 4, 4],
             [0.1, -0.5, 0.4, 0.4, 0.3, 0.0, 0.4]),
        _row(analysis, 61, 3.0, 5.0, [0, 2, 1, 1, 1, 5], [0, 3, 3, 3, 3, 5],
             [-0.2, -0.1, 0.5, 0.2, 0.1, 0.0, 0.7], residual=1e-5),
    ]  # fmt: skip
    naive = [
        {"greedy_n": 4, "greedy_in_episode": 3, "J_greedy": 5.0, "J_episode": 2.0},
        {"greedy_n": 2, "greedy_in_episode": 2, "J_greedy": 1.0, "J_episode": 2.0},
    ]
    lines = analysis.summary_lines(rows, naive)
    out = "\n".join(lines)
    assert "median 2.0, range -2.0 to 6.0; greedy higher in 1/2" in out
    assert "peaks at k = 1-5" in out and "beats the greedy in 2/2, by up to 2" in out
    assert "J(first 1) - J(last 1): median 5, first higher in 1/2" in out
    assert "first five trials: 50% of 4 (uniform picks: 50%)" in out
    assert "the revisit's first trial 0.90; the earlier visit by position 0.80 0.20" in out
    assert "median 6.00, range 2.00 to 10.00; at most 1.5 in 0" in out
    assert "score oracle         median  0.450" in out
    assert "oracle misses: ['9.81: 0.500 vs GT 0.700']" in out
    assert "BAM above recursive Bayes in 1/2 pairs" in out
    assert "keep 4 2 trials (mean 3.0), of them from the visit 3 2" in out
    assert "greedy higher in 1/2" in lines[-1]


def test_save_writes_the_rows_and_the_figure(analysis, tmp_path):
    scores = [0.1 * i for i in range(len(analysis.VARIANTS))]
    rows = [
        _row(analysis, 46, 5.0, 2.0, [0.0, 6.0, 2.0], [0.0, 1.0, 2.0], scores),
        _row(analysis, 61, 3.0, 4.0, [0.0, 1.0, 4.0], [0.0, 3.0, 4.0], scores),
    ]
    analysis.save(rows, tmp_path / "out")
    table = pd.read_csv(tmp_path / "out" / "revisits.csv")
    assert list(table["trial"]) == [46, 61]
    assert table["J_first_k"][0] == "0.000 6.000 2.000"
    assert (tmp_path / "out" / "readout_analysis.png").stat().st_size > 10_000


def test_quick_reproduction_resumes_and_claims(tmp_path):
    table = cartpole_readout.reproduce(tmp_path, quick=True, progress=False)
    assert list(table["variant"]) == list(cartpole_readout.VARIANTS)
    assert (table["pairs"] == 1).all() and "note" in table  # a smoke test says so
    for name in (
        "revisits.csv",
        "naive_readouts.csv",
        "readout_summary.txt",
        "readout_analysis.png",
    ):
        assert (tmp_path / name).stat().st_size > 0
    seed_file = tmp_path / "runs" / "quick_seed0.json"
    stamp = seed_file.stat().st_mtime_ns
    again = cartpole_readout.reproduce(tmp_path, quick=True, progress=False)
    assert seed_file.stat().st_mtime_ns == stamp  # resumed from the seed's file
    pd.testing.assert_frame_equal(table, again)
    rows = cartpole_readout.claims(tmp_path)
    assert len(rows) == len(cartpole_readout.CLAIMS)
    assert all(row["holds"] in ("yes", "no") for row in rows)
    assert all(row["holds"] == "not run" for row in cartpole_readout.claims(None))
    with pytest.raises(ValueError, match="seeds"):
        cartpole_readout.reproduce(tmp_path, seeds=0, quick=True, progress=False)
