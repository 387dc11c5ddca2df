"""Besson-Kaufmann problems, the shared Bernoulli-KL index, klUCB, GLR-klUCB, Oracle-Restart."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents.klucb import GLRKLUCB, KLUCB, OracleRestartKLUCB, glr_statistic, klucb_index
from bam_rl.envs.piecewise_bandit import besson_kaufmann_problem, random_problem


def _kl(p: float, q: float) -> float:
    out = 0.0
    if p > 0:
        out += p * math.log(p / q)
    if p < 1:
        out += (1 - p) * math.log((1 - p) / (1 - q))
    return out


@settings(max_examples=60, deadline=None)
@given(st.floats(0.0, 0.99), st.floats(1e-3, 5.0))
def test_klucb_index_matches_root_of_literal_kl(mean: float, bound: float) -> None:
    index = float(klucb_index(mean, bound))
    if _kl(mean, 1 - 1e-12) <= bound:
        assert index > 1 - 1e-6
    else:
        root = brentq(lambda q: _kl(mean, q) - bound, mean, 1 - 1e-12, xtol=1e-14)
        assert index == pytest.approx(root, abs=1e-9)


def _glr_brute(y: np.ndarray) -> float:
    n = len(y)
    best = -math.inf
    for s in range(1, n):
        mu, before, after = y.mean(), y[:s].mean(), y[s:].mean()
        clip = lambda x: min(max(x, 1e-15), 1 - 1e-15)  # noqa: E731
        g = s * _kl(clip(before), clip(mu)) + (n - s) * _kl(clip(after), clip(mu))
        best = max(best, g)
    return best


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.0, 1.0]), min_size=2, max_size=30))
def test_glr_statistic_matches_brute_force(rewards: list[float]) -> None:
    y = np.array(rewards)
    assert glr_statistic(y) == pytest.approx(_glr_brute(y), rel=1e-9, abs=1e-9)


def test_problems_match_smpybandits_tables() -> None:
    means, breaks = besson_kaufmann_problem(1, 5000)
    assert breaks == [1000, 2000, 3000, 4000]
    assert means[0].tolist() == [0.3, 0.5, 0.9] and means[-1].tolist() == [0.7, 0.5, 0.1]
    means, breaks = besson_kaufmann_problem(3, 5000)  # config 5: linspace(0, T, 9)
    assert means.shape == (9, 6)
    assert [0, *breaks] == np.linspace(0, 5000, num=9, endpoint=False, dtype=int).tolist()
    means, breaks = besson_kaufmann_problem(5, 5000)
    assert means.shape == (82, 5)
    assert [0, *breaks] == np.linspace(0, 5000, num=82, endpoint=False, dtype=int).tolist()
    env = gym.make("bam_rl/PiecewiseBandit-v0", problem=4, max_steps=2000)
    assert env.unwrapped.breakpoints.tolist() == [1000, 1250, 1500, 1750]
    with pytest.raises(ValueError, match="problem"):
        gym.make("bam_rl/PiecewiseBandit-v0", problem=6)


def test_random_problem_respects_gaps() -> None:
    means, breaks = random_problem(np.random.default_rng(0))
    assert means.shape == (7, 5) and len(breaks) == 6
    gaps = np.diff([0, *breaks, 20_000])
    assert gaps.min() >= 1000
    moves = np.abs(np.diff(means, axis=0))
    assert ((moves == 0) | (moves <= 0.3 + 1e-12)).all()


def _regret(agent: KLUCB, means: np.ndarray, horizon: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    agent.reset(0, {})
    regret = 0.0
    for _ in range(horizon):
        arm = agent.act(0)
        agent.observe(arm, float(rng.random() < means[arm]), 0, False, False, {})
        regret += means.max() - means[arm]
    return regret


@pytest.mark.parametrize("name", ["klucb", "glr-klucb", "glr-klucb-global", "oracle"])
def test_regret_grows_like_log_t_on_stationary_problem(name: str) -> None:
    means = np.array([0.3, 0.7])
    horizons = [200, 800, 3200]
    mean_regret = []
    for horizon in horizons:
        if name == "klucb":
            make = lambda: KLUCB(2)  # noqa: E731
        elif name == "oracle":
            make = lambda: OracleRestartKLUCB(2, breakpoints=[])  # noqa: E731
        else:
            make = lambda h=horizon: GLRKLUCB(2, h, 1, local=name == "glr-klucb")  # noqa: E731
        mean_regret.append(np.mean([_regret(make(), means, horizon, s) for s in range(4)]))
    slope = np.polyfit(np.log(horizons), mean_regret, 1)[0]
    # log T growth: regret(4000) - regret(1000) ~ slope * log 4, far below linear growth
    # (linear would add 0.4 * 3000 = 1200). GLR's forced exploration adds ~sqrt(T log T).
    assert mean_regret[2] < 0.25 * 0.4 * 3200
    assert slope > 0
    assert mean_regret[2] - mean_regret[1] < 3 * (mean_regret[1] - mean_regret[0]) + 20


def test_bad_input_names_the_argument() -> None:
    with pytest.raises(ValueError, match="horizon"):
        GLRKLUCB(3, n_breakpoints=4)
    with pytest.raises(ValueError, match="n_breakpoints"):
        GLRKLUCB(3, horizon=100)
    with pytest.raises(ValueError, match="breakpoints"):
        OracleRestartKLUCB(3)
    with pytest.raises(ValueError, match="reward"):
        KLUCB(2).observe(0, 2.0, 0, False, False, {})


def test_glr_restarts_after_a_change_and_save_load_round_trips(tmp_path) -> None:
    agent = GLRKLUCB(2, horizon=4000, n_breakpoints=1, seed=0)
    means = np.array([0.9, 0.1])
    _regret(agent, means, 1, 0)
    rng = np.random.default_rng(1)
    for t in range(3000):
        m = means if t < 1500 else means[::-1]
        arm = agent.act(0)
        agent.observe(arm, float(rng.random() < m[arm]), 0, False, False, {})
    assert agent.restart_times.max() > 1500  # the change was detected
    path = tmp_path / "glr"
    agent.save(path)
    loaded = GLRKLUCB.load(path)
    assert loaded.act(0) == agent.act(0)
    np.testing.assert_array_equal(loaded.restart_times, agent.restart_times)


def test_oracle_variants_reset_as_described(tmp_path) -> None:
    """The paper's oracle forgets the arms whose mean moves at the breakpoint, before the new
    segment's first pull; the published runs' code forgets only the arm pulled at that step
    and keeps its reward (a literal trace of both)."""
    means = [[0.2, 0.5, 0.8], [0.2, 0.9, 0.1]]  # arms 1 and 2 change at step 4
    paper = OracleRestartKLUCB(3, breakpoints=[4], means=means, seed=0)
    ref = OracleRestartKLUCB(3, breakpoints=[4], means=means, variant="smpybandits-2019-01")
    rewards = [(0, 0.0), (1, 1.0), (2, 1.0), (0, 1.0)]  # the 4th pull is the last of segment 1
    for agent in (paper, ref):
        for arm, reward in rewards:
            agent.observe(arm, reward, 0, False, False, {})
    np.testing.assert_array_equal(paper.pulls, [2.0, 0.0, 0.0])  # arm 0 kept, 1 and 2 reset
    np.testing.assert_array_equal(paper.restart_times, [0.0, 4.0, 4.0])
    np.testing.assert_array_equal(ref.pulls, [1.0, 1.0, 1.0])  # arm 0 reset to its last pull
    np.testing.assert_array_equal(ref.sums, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(ref.restart_times, [0.0, 0.0, 0.0])  # a global log t
    ref.save(tmp_path / "oracle")
    assert OracleRestartKLUCB.load(tmp_path / "oracle").variant == "smpybandits-2019-01"
    with pytest.raises(ValueError, match="variant"):
        OracleRestartKLUCB(3, breakpoints=[4], variant="smpybandits-0.9.7")
