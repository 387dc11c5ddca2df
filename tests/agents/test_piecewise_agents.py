"""CUSUM-klUCB, M-klUCB and the passively adaptive bandits of the piecewise benchmark."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bam_rl.agents.klucb import CUSUMKLUCB, GLRKLUCB, MonitoredKLUCB
from bam_rl.agents.passive import DiscountedKLUCB, DiscountedThompson, Exp3S, SlidingWindowKLUCB


def _play(agent, means_at, horizon: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    arms = np.empty(horizon, dtype=np.int64)
    for t in range(horizon):
        means = means_at(t)
        arm = agent.act(0)
        agent.observe(arm, float(rng.random() < means[arm]), 0, False, False, {})
        arms[t] = arm
    return arms


@pytest.mark.parametrize("name", ["cusum", "m-klucb"])
def test_regret_grows_like_log_t_on_a_stationary_problem(name: str) -> None:
    means = np.array([0.3, 0.7])
    horizons = [250, 1000, 4000]
    regret = []
    for horizon in horizons:
        runs = []
        for seed in range(3):
            if name == "cusum":
                agent = CUSUMKLUCB(2, horizon=horizon, n_breakpoints=1, seed=seed)
            else:
                agent = MonitoredKLUCB(2, horizon=horizon, seed=seed)
            arms = _play(agent, lambda t: means, horizon, seed)
            runs.append(float(np.sum(means.max() - means[arms])))
        regret.append(np.mean(runs))
    # forced exploration is a share of order sqrt(log T / T) of the steps: sub-linear, and the
    # 4x longer run adds far less than 4x the regret of the previous one
    assert regret[2] < 0.2 * 0.4 * horizons[2]
    assert regret[2] - regret[1] < 2.5 * (regret[1] - regret[0]) + 40
    assert np.polyfit(np.log(horizons), regret, 1)[0] > 0


def _swap(t: int, change: int = 1000) -> np.ndarray:
    return np.array([0.9, 0.1]) if t < change else np.array([0.1, 0.9])


@pytest.mark.parametrize(
    "make",
    [
        lambda: DiscountedKLUCB(2, seed=0),
        lambda: SlidingWindowKLUCB(2, horizon=2000, n_breakpoints=1, seed=0),
        lambda: DiscountedThompson(2, seed=0),
        lambda: Exp3S(2, horizon=2000, n_breakpoints=1, seed=0),
        lambda: CUSUMKLUCB(2, horizon=2000, n_breakpoints=1, seed=0),
        lambda: MonitoredKLUCB(2, horizon=2000, seed=0),
        lambda: GLRKLUCB(2, horizon=2000, n_breakpoints=1, seed=0),
    ],
    ids=["d-klucb", "sw-klucb", "dts", "exp3s", "cusum-klucb", "m-klucb", "glr-klucb"],
)
def test_every_adaptive_agent_follows_a_swap(make) -> None:
    """The passive agents' fixed forgetting gives linear regret on a stationary problem (no
    log T test for them); what they promise is to follow a change, which a stationary klUCB
    does not (it keeps the old best arm for hundreds of steps)."""
    arms = _play(make(), _swap, 2000, seed=1)
    assert np.mean(arms[500:1000] == 0) > 0.75
    assert np.mean(arms[1500:] == 1) > 0.75


def test_sliding_window_counts_are_those_of_the_last_tau_steps() -> None:
    agent = SlidingWindowKLUCB(3, tau=37, seed=0)
    rng = np.random.default_rng(2)
    history = []
    for _ in range(200):
        arm, reward = int(rng.integers(3)), float(rng.random() < 0.5)
        agent.observe(arm, reward, 0, False, False, {})
        history.append((arm, reward))
        window = history[-37:]
        for k in range(3):
            assert agent.pulls[k] == sum(a == k for a, _ in window)
            assert math.isclose(agent.sums[k], sum(r for a, r in window if a == k), abs_tol=1e-9)


def test_exp3s_probabilities_and_update() -> None:
    agent = Exp3S(4, horizon=1000, n_breakpoints=3, seed=0)
    before = agent.weights.copy()
    p = agent.probabilities()
    assert math.isclose(p.sum(), 1.0) and (p >= agent.gamma / 4 - 1e-15).all()
    agent.observe(2, 1.0, 0, False, False, {})
    share = math.e * agent.alpha / 4 * before.sum()
    expected = before + share
    expected[2] = before[2] * math.exp(agent.gamma / (p[2] * 4)) + share
    np.testing.assert_allclose(agent.weights, expected / expected.sum(), rtol=1e-12)


def test_the_reference_codes_variants() -> None:
    """SMPyBandits 0.9.7's D-klUCB keeps integer discounted pulls (so its "mean" passes 1)
    and its DTS discounts the pulled arm K-1 more times and never the others."""
    dk = DiscountedKLUCB(3, variant="smpybandits-0.9.7", seed=0)
    for _ in range(30):
        dk.observe(1, 1.0, 0, False, False, {})
    assert dk.pulls[1] == 1.0 and dk.sums[1] > 5.0  # gamma * 1 + 1 truncated to 1
    dk.observe(0, 0.0, 0, False, False, {})
    dk.observe(2, 0.0, 0, False, False, {})
    assert dk.act(0) == 1
    assert dk._index[1] == 0.5 * (dk.sums[1] / dk.pulls[1] + 1.0) > 1.0  # (mean + 1) / 2
    dts = DiscountedThompson(3, gamma=0.9, variant="smpybandits-0.9.7", seed=0)
    dts.observe(0, 1.0, 0, False, False, {})
    dts.observe(1, 0.0, 0, False, False, {})
    np.testing.assert_allclose(dts.successes, [0.81, 0.0, 0.0])
    np.testing.assert_allclose(dts.failures, [0.0, 0.81, 0.0])
    paper = DiscountedThompson(3, gamma=0.9, seed=0)
    paper.observe(0, 1.0, 0, False, False, {})
    paper.observe(1, 0.0, 0, False, False, {})
    np.testing.assert_allclose(paper.successes, [0.9, 0.0, 0.0])
    np.testing.assert_allclose(paper.failures, [0.0, 1.0, 0.0])


def test_bad_input_names_the_argument() -> None:
    for cls in (CUSUMKLUCB, SlidingWindowKLUCB, Exp3S, GLRKLUCB):
        with pytest.raises(ValueError, match="horizon"):
            cls(3, n_breakpoints=2)
        with pytest.raises(ValueError, match="n_breakpoints"):
            cls(3, horizon=100)
        with pytest.raises(ValueError, match="n_breakpoints"):
            cls(3, horizon=100, n_breakpoints=-1)
    with pytest.raises(ValueError, match="horizon"):
        MonitoredKLUCB(3)
    with pytest.raises(ValueError, match="gamma"):
        DiscountedKLUCB(3, gamma=1.0)
    with pytest.raises(ValueError, match="horizon"):
        DiscountedKLUCB(3, gamma="tuned")
    with pytest.raises(ValueError, match="variant"):
        DiscountedThompson(3, variant="lazy")
    with pytest.raises(ValueError, match="epsilon"):
        CUSUMKLUCB(3, horizon=100, n_breakpoints=1, epsilon=2.0)
    with pytest.raises(ValueError, match="c must"):
        GLRKLUCB(3, horizon=100, n_breakpoints=1, c=0.0)
    with pytest.raises(ValueError, match="reward"):
        DiscountedKLUCB(3).observe(0, 1.5, 0, False, False, {})


def test_m_klucb_window_by_hand_sets_b_and_gamma() -> None:
    """The published runs' configuration passed w = 150 whatever the horizon: b and gamma
    follow from it by the same formulas; at T = 5000 with 3 arms the formula gives 150 too."""
    formula = MonitoredKLUCB(3, horizon=5000)
    by_hand = MonitoredKLUCB(3, horizon=5000, window=150)
    assert formula.window == by_hand.window == 150
    assert (formula.b, formula.gamma, formula.period) == (by_hand.b, by_hand.gamma, by_hand.period)
    long = MonitoredKLUCB(6, horizon=100_000, window=150)
    assert long.window == 150 and long.recent.shape == (6, 150)
    assert long.b == pytest.approx(math.sqrt(75 * math.log(2 * 6 * 100_000**2)))
    assert long.gamma == pytest.approx(math.sqrt(6 * (2 * long.b + 3 * math.sqrt(150)) / 200_000))
    assert MonitoredKLUCB(6, horizon=100_000).window == 6000
    for bad in (1, 0, 2.5, True, "150"):
        with pytest.raises(ValueError, match="window"):
            MonitoredKLUCB(3, horizon=5000, window=bad)
    with pytest.raises(ValueError, match="per_arm_restart"):
        MonitoredKLUCB(3, horizon=5000, per_arm_restart="yes")


def test_m_klucb_per_arm_restart_keeps_the_other_windows() -> None:
    """A detection restarts the klUCB in full either way; the paper's M-UCB also empties every
    window, the published configuration's per-arm restart only the detecting arm's."""
    for per_arm in (False, True):
        agent = MonitoredKLUCB(2, horizon=200, window=4, per_arm_restart=per_arm, seed=0)
        agent.b = 1.5  # a jump of 2 between the window's halves alarms
        agent.observe(1, 0.0, 0, False, False, {})
        agent.observe(1, 1.0, 0, False, False, {})
        for reward in (0.0, 0.0, 1.0):
            agent.observe(0, reward, 0, False, False, {})
        assert agent.last_restart == 0 and agent.filled.tolist() == [3, 2]
        agent.observe(0, 1.0, 0, False, False, {})  # window [0, 0 | 1, 1]: |0 - 2| > 1.5
        assert agent.last_restart == 6 and agent.pulls.sum() == 0.0
        assert agent.filled.tolist() == ([1, 2] if per_arm else [1, 0])
        assert agent.recent[0, 0] == 1.0


def test_segment_ucbam_beliefs_are_its_segment_rules() -> None:
    """Each arm's belief is its SegmentBAM rule's (BOCD over the arm closes segments), and a
    change of the arm's mean is detected and read out over its closed segments."""
    from bam_rl.agents.ucbam import SegmentUCBAM
    from bam_rl.families import BetaBinomial

    agent = SegmentUCBAM(2, BetaBinomial(), hazard=0.01, seed=0)
    arms = _play(
        agent, lambda t: np.array([0.9, 0.1]) if t < 600 else np.array([0.1, 0.9]), 1200, 3
    )
    for arm, rule in enumerate(agent.rules):
        for key, value in rule.belief.fields.items():
            np.testing.assert_array_equal(agent.beliefs[arm].fields[key], value)
    assert agent.summary()["n_segments"] >= 1  # the change closed a segment
    assert np.mean(arms[1000:] == 1) > 0.5
    with pytest.raises(ValueError, match="hazard"):
        SegmentUCBAM(2, BetaBinomial(), hazard=1.5)


def test_a_crafted_state_file_cannot_hand_a_kernel_a_short_array(tmp_path) -> None:
    """The compiled index and GLR test read arrays without bounds checks: a restored agent
    checks their shapes (and the history's room for every pull) before it is used."""
    from bam_rl.serialization import FORMAT, read_archive, write_archive

    agent = GLRKLUCB(3, horizon=200, n_breakpoints=1, seed=0)
    _play(agent, lambda t: np.array([0.2, 0.5, 0.8]), 60, 0)
    path = tmp_path / "glr.npz"
    agent.save(path)
    assert GLRKLUCB.load(path).act(0) == agent.act(0)
    for field, bad in (
        ("_index", np.zeros(1)),
        ("sums", np.zeros(2)),
        ("history", np.zeros((3, 2))),
    ):
        document, arrays = read_archive(path, FORMAT, "bam-rl state")
        arrays[document["root"]["state"][field]["__array__"]] = bad
        crafted = tmp_path / f"crafted{field}.npz"
        write_archive(crafted, document, arrays)
        with pytest.raises(ValueError, match=field):
            GLRKLUCB.load(crafted)


def test_degenerate_tunings() -> None:
    """T = 1 gives GLR-klUCB no forced exploration (alpha 0) instead of a division by zero;
    CUSUM's threshold log(T / Upsilon_T) must be positive."""
    agent = GLRKLUCB(2, horizon=1, n_breakpoints=1, seed=0)
    assert agent.alpha == 0.0 and agent.act(0) in (0, 1)
    with pytest.raises(ValueError, match="horizon must exceed n_breakpoints"):
        CUSUMKLUCB(2, horizon=3, n_breakpoints=5)
