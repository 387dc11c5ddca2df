"""The piecewise-bandit reproduction: cells, resumption, summary and claims (small runs)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bam_rl.experiments import piecewise
from bam_rl.experiments.piecewise import (
    agent_kwargs,
    claims,
    piecewise_experiment,
    run_cell,
    runs_for,
    summarize,
)


def test_runs_per_cell() -> None:
    assert runs_for(1, "glr-klucb", 100) == 100
    assert runs_for("random", "glr-klucb", 100) == piecewise.RANDOM_RUNS
    assert runs_for(2, "thompson-bocd", 100) == piecewise.BAM_RUNS
    assert runs_for(4, "ucbam", 100) == piecewise.SLOW_BAM_RUNS
    assert runs_for(5, "thompson-bocd", 100) == piecewise.LONG_BAM_RUNS  # T = 20 000
    assert runs_for(3, "thompson-bocd", 100) == piecewise.VERY_LONG_BAM_RUNS  # T = 100 000
    assert runs_for(3, "glr-klucb", 100) == piecewise.VERY_LONG_RUNS
    assert runs_for("4-long", "glr-klucb", 100) == 100
    for problem in (3, "4-long", 5, "random"):  # the per-observation readouts at T = 5000 only
        assert runs_for(problem, "thompson-bam", 100) == 0
    assert runs_for(1, "ucbam", 3) == 3
    # the reference code's variants only where a published cell is there to compare with
    for method in ("d-klucb-ref", "dts-ref", "oracle-restart-klucb-ref", "m-klucb-ref"):
        assert runs_for("random", method, 100) == 0
        assert runs_for(3, method, 100) == piecewise.VERY_LONG_RUNS
    assert piecewise.PUBLISHED[3]["m-klucb-ref"] == piecewise.PUBLISHED[3]["m-klucb"]


def test_cells_run_longest_first() -> None:
    """Longest processing time first: the estimate orders the cells as their measured agent
    times did (BOCD's at T = 100 000 before a baseline's, a baseline's at T = 100 000 before
    the same at 5000)."""
    cost = piecewise.estimated_seconds
    assert cost(3, "thompson-bocd", 5) > cost(3, "glr-klucb", 30) > cost(1, "glr-klucb", 100)
    assert cost(1, "ucbam", 5) > cost(1, "thompson-bocd", 20) > cost(1, "klucb", 100)
    assert cost(1, "klucb", 0) == 0.0


def test_tuning_inputs_come_from_the_problem() -> None:
    import gymnasium as gym

    env = gym.make("bam_rl/PiecewiseBandit-v0", problem=1, max_steps=5000).unwrapped
    assert agent_kwargs("glr-klucb", env) == {"horizon": 5000, "n_breakpoints": 4}
    assert agent_kwargs("m-klucb", env) == {"horizon": 5000}
    assert agent_kwargs("thompson-bocd", env) == {"hazard": 4 / 5000}
    oracle = agent_kwargs("oracle-restart-klucb", env)
    assert oracle["breakpoints"] == [1000, 2000, 3000, 4000] and oracle["means"].shape == (5, 3)
    assert agent_kwargs("dts-ref", env) == {"variant": "smpybandits-0.9.7"}
    assert agent_kwargs("m-klucb-ref", env) == {"window": 150, "horizon": 5000}


def test_cells_are_reproducible_and_share_streams() -> None:
    first = run_cell(1, "klucb", 2)
    np.testing.assert_array_equal(
        first["cumulative_regret"], run_cell(1, "klucb", 2)["cumulative_regret"]
    )
    assert set(first["run"]) == {0, 1} and first["step"].max() == 5000
    assert (first.groupby("run")["cumulative_regret"].diff().dropna() >= -1e-9).all()
    # the oracle on the same streams does far better than klUCB (Problem 1's changes)
    oracle = run_cell(1, "oracle-restart-klucb", 2)
    assert oracle["cumulative_regret"].iloc[-1] < first["cumulative_regret"].iloc[-1]


def test_experiment_resumes_from_its_cells(tmp_path) -> None:
    frame = piecewise_experiment(tmp_path, (1,), ("klucb",), runs=2, progress=False)
    files = list(tmp_path.glob("p1__klucb__*.csv"))
    assert len(files) == 1
    stamp = files[0].stat().st_mtime_ns
    again = piecewise_experiment(tmp_path, (1,), ("klucb",), runs=2, progress=False)
    assert files[0].stat().st_mtime_ns == stamp  # loaded, not recomputed
    pd.testing.assert_frame_equal(frame, again, check_dtype=False)
    with pytest.raises(ValueError, match="method"):
        piecewise_experiment(tmp_path, (1,), ("nope",), runs=2, progress=False)
    with pytest.raises(ValueError, match="problem"):
        piecewise_experiment(tmp_path, (7,), ("klucb",), runs=2, progress=False)


def _frame(problem: str, method: str, finals: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "problem": problem,
            "method": method,
            "run": range(len(finals)),
            "step": 5000,
            "cumulative_regret": finals,
            "agent_seconds": 0.05,
            "horizon": 5000,
        }
    )


def test_summary_bounds_and_claims(tmp_path) -> None:
    frame = pd.concat(
        [
            _frame("1", "glr-klucb", [70.0, 80.0, 75.0, 71.0]),  # published 74: within
            _frame("1", "d-klucb", [500.0, 510.0, 490.0, 505.0]),  # published 1456: outside
            _frame("1", "thompson-bocd", [30.0, 40.0, 35.0, 36.0]),
        ]
    )
    summary = summarize(frame)
    rows = summary.set_index("method")
    assert bool(rows.loc["glr-klucb", "within"]) and not bool(rows.loc["d-klucb", "within"])
    assert pd.isna(rows.loc["thompson-bocd", "within"])
    # SE 2.2 against a tenth of the published std 3.1: enough runs
    assert bool(rows.loc["glr-klucb", "se_under_tenth"])
    assert rows.loc["glr-klucb", "us_per_step"] == pytest.approx(1e6 * 0.05 / 5000)
    summary.to_csv(tmp_path / "piecewise_summary.csv", index=False)
    table = claims(tmp_path)
    assert table[0]["holds"] == "partly" and "d-klucb 501 vs 1456" in table[0]["measured"]
    assert table[1]["holds"] == "yes" and "thompson-bocd 35 vs GLR 74" in table[1]["measured"]
    assert all(row["holds"] == "not run" for row in claims(None))


def test_problem_4_long_and_the_published_columns(monkeypatch, tmp_path) -> None:
    table = piecewise.problem_table("4-long", np.random.SeedSequence(0))
    assert table == {"problem": 4, "max_steps": 10_000}
    codes = [piecewise._problem_code(p) for p in piecewise.PROBLEMS]
    assert len(set(codes)) == len(codes)  # every problem its own streams
    assert piecewise.PUBLISHED["4-long"]["klucb"] == (1218.0, 123.0)
    assert piecewise.PUBLISHED[3]["dts"] == (2492.0, 52.0)
    assert piecewise.PUBLISHED[5]["oracle-restart-klucb-ref"] == (126.0, 54.0)
    # a cell's file name changes with its horizon: no stale cells after a change
    before = piecewise._cell_path(tmp_path, 3, "klucb", 30, 0)
    monkeypatch.setitem(piecewise.HORIZONS, 3, 20_000)
    assert piecewise._cell_path(tmp_path, 3, "klucb", 30, 0) != before


def test_claims_let_the_published_runs_code_stand_in(tmp_path) -> None:
    frame = pd.concat(
        [
            _frame("1", "dts", [420.0, 430.0, 425.0, 428.0]),  # published 209: outside
            _frame("1", "dts-ref", [205.0, 210.0, 212.0, 208.0]),  # within: stands in
            _frame("1", "d-klucb", [500.0, 510.0, 490.0, 505.0]),  # outside, its -ref too
            _frame("1", "d-klucb-ref", [900.0, 910.0, 905.0, 902.0]),
            _frame("1", "glr-klucb", [70.0, 300.0, 75.0, 71.0]),  # within by 3 SE only
        ]
    )
    summary = summarize(frame)
    rows = summary.set_index("method")
    # SE 57 against a tenth of the published std (3.1): too few runs for the bar
    assert not bool(rows.loc["glr-klucb", "se_under_tenth"])
    summary.to_csv(tmp_path / "piecewise_summary.csv", index=False)
    measured = claims(tmp_path)[0]["measured"]
    assert measured.startswith("1 of 3 cells within, 2 with the published runs' code")
    assert "P1 d-klucb 501 vs 1456" in measured and "dts" not in measured.split("outside")[1]


@pytest.mark.parametrize("method", ["glr-klucb", "thompson-bocd", "exp3s"])
def test_replayed_rewards_are_the_environments(method: str) -> None:
    """A cell replays the environment's rewards instead of stepping it: the pulls are those of
    the same agent stepping the environment itself."""
    import gymnasium as gym

    from bam_rl.harness.registry import make_agent

    # beyond the environment's first block of 4096 steps of noise
    env = gym.make("bam_rl/PiecewiseBandit-v0", problem=1, max_steps=4500).unwrapped

    def fresh_agent():
        return make_agent(method, env, 5, **agent_kwargs(method, env))

    observation, info = env.reset(seed=11)
    agent = fresh_agent()
    agent.reset(observation, info)
    replayed, _ = piecewise._pulls(agent, observation, env.noise_stream(), env.means_table())
    observation, info = env.reset(seed=11)
    agent = fresh_agent()
    agent.reset(observation, info)
    stepped = []
    for _ in range(4500):
        arm = agent.act(observation)
        observation, reward, terminated, truncated, info = env.step(arm)
        agent.observe(arm, reward, observation, terminated, truncated, info)
        stepped.append(int(arm))
    np.testing.assert_array_equal(replayed, stepped)


def test_runs_stop_at_a_tenth_of_the_published_std() -> None:
    assert piecewise.target_se(1, "glr-klucb") == pytest.approx(3.1)  # published 74 ± 31
    assert piecewise.target_se(3, "m-klucb-ref") == pytest.approx(14.1)
    assert piecewise.target_se("random", "glr-klucb") is None  # no published cell
    assert piecewise.target_se(1, "thompson-bocd") is None
    fixed = run_cell(1, "klucb", 5)
    early = run_cell(1, "klucb", 5, stop_se=1e9, min_runs=3)  # any SE will do: 3 runs
    assert sorted(early["run"].unique()) == [0, 1, 2]
    # the runs of a shorter cell are the first runs of a longer one
    pd.testing.assert_frame_equal(
        early.drop(columns="agent_seconds"),
        fixed[fixed["run"] < 3].drop(columns="agent_seconds").reset_index(drop=True),
    )
    never = run_cell(1, "klucb", 4, stop_se=0.0, min_runs=2)
    assert never["run"].nunique() == 4


def test_a_stopping_cell_is_another_file(tmp_path) -> None:
    plain = piecewise._cell_path(tmp_path, 1, "klucb", 100, 0)
    stopping = piecewise._cell_path(tmp_path, 1, "klucb", 100, 0, stop_se=7.6)
    assert plain != stopping
