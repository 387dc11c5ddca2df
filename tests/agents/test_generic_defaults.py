"""Generic defaults for an environment without a settings row (issue 51, beyond the paper): a
temperature that does not depend on the reward's scale (``normalize_returns``), posterior-mean
planning, and planner sizes from the action space. Measured in
``scripts/any_env/generic_defaults.py`` (docs/env_settings.md#generic-defaults)."""

from __future__ import annotations

import warnings
from types import MappingProxyType

import gymnasium as gym
import numpy as np
import pytest

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents import GroundTruthMPPI, MPPIAgent
from bam_rl.agents import settings as table
from bam_rl.agents.planner import MPPI, CategoricalMPPI, softmax_weights
from bam_rl.harness.registry import make_agent, resolved_settings
from bam_rl.serialization import FORMAT, read_archive, write_archive


def linear(state, actions, rng):
    """``x' = x + u``, each sample's states over its horizon, ``(K, H, 1)``."""
    return state + np.cumsum(actions, axis=1)


def reward(scale):
    def scaled(states, actions):
        return -scale * (states[..., 0] - 1.0) ** 2

    return scaled


def plan(normalize, scale, **options):
    planner = MPPI(
        linear,
        reward(scale),
        horizon=5,
        n_samples=64,
        seed=3,
        normalize_returns=normalize,
        **options,
    )
    action = planner.plan(np.zeros(1))
    return action, planner.last_weights


def test_normalised_weights_do_not_depend_on_the_rewards_scale():
    action, weights = plan(True, 1.0)
    action_1000, weights_1000 = plan(True, 1000.0)
    np.testing.assert_allclose(weights_1000, weights, rtol=1e-10, atol=1e-300)
    np.testing.assert_allclose(action_1000, action, rtol=1e-10)
    # a power of two scales every float exactly: the weights are the same bits
    np.testing.assert_array_equal(plan(True, 1024.0)[1], weights)
    # the paper's weights do depend on it (so the test above can fail)
    assert not np.allclose(plan(False, 1000.0)[1], plan(False, 1.0)[1])


def test_the_paper_weights_are_kept_by_default():
    planner = MPPI(linear, reward(1.0), horizon=5, n_samples=64, seed=3)
    assert planner.normalize_returns is False
    planner.plan(np.zeros(1))
    returns = planner.last_returns
    expected = np.exp((returns - returns.max()) / planner.temperature)
    np.testing.assert_array_equal(planner.last_weights, expected / expected.sum())
    assert "normalize_returns" not in repr(planner)


def test_the_weights_of_ties_and_non_finite_returns():
    # the best tenth ties: the gap to the worst finite return is used
    returns = np.array([1.0] * 20 + [0.0, -np.inf])
    weights = softmax_weights(returns, 0.5, True)
    assert weights[-1] == 0.0 and weights[-2] == pytest.approx(np.exp(-2.0) * weights[0])
    np.testing.assert_allclose(softmax_weights(np.full(4, 3.0), 0.1, True), 0.25)
    np.testing.assert_allclose(softmax_weights(np.full(3, -np.inf), 0.1, True), 1 / 3)
    # one diverging rollout leaves the others' weights as they were
    good = np.linspace(0.0, 10.0, 50)
    with_outlier = np.concatenate([good, [-1e9]])
    weights, without = softmax_weights(with_outlier, 0.3, True), softmax_weights(good, 0.3, True)
    assert weights[-1] == 0.0
    np.testing.assert_allclose(weights[:-1], without, atol=0.02)
    # divided by the standard deviation of all the returns, the good ones would weigh alike
    by_std = np.exp((with_outlier - with_outlier.max()) / with_outlier.std() / 0.3)
    assert 1 / np.sum(weights**2) < 5 < 45 < 1 / np.sum((by_std / by_std.sum()) ** 2)


def test_the_categorical_planner_normalises_alike():
    def dynamics(state, actions, rng):
        return np.cumsum(actions[..., :1], axis=1)

    def count(scale):
        return lambda states, actions: scale * states[..., 0]

    weights = []
    for scale in (1.0, 1024.0):
        planner = CategoricalMPPI(2, count(scale), horizon=4, n_samples=16, seed=1)
        planner.normalize_returns = True
        planner.plan(np.zeros(1), dynamics=dynamics)
        weights.append(planner.last_weights)
    np.testing.assert_array_equal(weights[0], weights[1])
    assert "normalize_returns=True" in repr(planner)


@pytest.mark.parametrize("value", ["yes", 1, None, np.array([True])])
def test_normalize_returns_must_be_a_bool(value):
    with pytest.raises(ValueError, match="normalize_returns must be a bool"):
        MPPI(linear, reward(1.0), normalize_returns=value)
    with pytest.raises(ValueError, match="normalize_returns must be a bool"):
        CategoricalMPPI(2, reward(1.0), normalize_returns=value)
    env = gym.make("Pendulum-v1")
    with pytest.raises(ValueError, match="normalize_returns must be a bool"):
        MPPIAgent(
            env.observation_space,
            env.action_space,
            reward="pendulum-swingup",
            normalize_returns=value,
        )


def test_state_files_keep_the_option_and_old_files_load_without_it(tmp_path):
    env = gym.make("Pendulum-v1")
    options = {"horizon": 3, "n_samples": 4, "n_features": 10}
    agent = MPPIAgent.from_env(env, seed=0, normalize_returns=True, **options)
    assert agent.planner.normalize_returns is True
    assert MPPIAgent.load(agent.save(tmp_path / "new.npz")).planner.normalize_returns is True
    path = MPPIAgent.from_env(env, seed=0, **options).save(tmp_path / "old.npz")
    document, arrays = read_archive(path, FORMAT, "bam-rl state")
    planner = document["root"]["state"]["planner"]["state"]
    del planner["normalize_returns"]  # as a file written before the option
    old = MPPIAgent.load(write_archive(tmp_path / "older.npz", document, arrays))
    assert old.planner.normalize_returns is False
    planner["normalize_returns"] = "yes"
    with pytest.raises(ValueError, match="normalize_returns"):
        MPPIAgent.load(write_archive(tmp_path / "bad.npz", document, arrays))


@pytest.fixture
def no_rows(monkeypatch):
    """The settings table without rows (as for an environment nobody measured)."""
    monkeypatch.setattr(table, "ENV_SETTINGS", MappingProxyType({}))


def test_an_environment_without_a_row_gets_the_generic_defaults(no_rows):
    env = gym.make("InvertedPendulum-v5")  # actions in [-3, 3]
    with pytest.warns(UserWarning, match=r"no settings for InvertedPendulum-v5 .*horizon \(20\)"):
        agent = make_agent("mppi-bam", env, 0, reward="inverted-pendulum")
    generic = table.GENERIC_DEFAULTS
    assert (agent.planner.horizon, agent.planner.n_samples) == (
        generic["horizon"],
        generic["n_samples"],
    )
    assert agent.planner.temperature == generic["temperature"]
    assert agent.planner.normalize_returns is True
    np.testing.assert_array_equal(agent.planner.sampling_var, table.GENERIC_SAMPLING_VAR * 9.0)
    assert agent.model.planning_models == "mean"
    recorded = resolved_settings("mppi-bam", env, reward="inverted-pendulum")["settings"]
    assert recorded["horizon"] == {"value": generic["horizon"], "source": "generic"}
    assert recorded["normalize_returns"] == {"value": True, "source": "generic"}
    assert recorded["planning_models"] == {"value": "mean", "source": "generic"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        truth = GroundTruthMPPI(env, reward="inverted-pendulum", seed=0)
        same = MPPIAgent.from_env(env, seed=0, reward="inverted-pendulum")
    assert truth.planner.normalize_returns is True
    assert truth.planner.horizon == generic["horizon"]
    assert same.planner.normalize_returns and same.model.planning_models == "mean"


def test_a_temperature_given_keeps_the_papers_weights(no_rows):
    env = gym.make("InvertedPendulum-v5")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = make_agent("mppi-bam", env, 0, reward="inverted-pendulum", temperature=0.01)
        both = make_agent(
            "mppi-gt", env, 0, temperature=0.2, normalize_returns=True, reward="inverted-pendulum"
        )
    assert agent.planner.normalize_returns is False and agent.planner.temperature == 0.01
    assert both.planner.normalize_returns is True and both.planner.temperature == 0.2


def test_a_discrete_or_unbounded_action_space_gets_its_generic_defaults():
    cartpole = table.generic_defaults(gym.make("CartPole-v1"))
    assert "sampling_var" not in cartpole and cartpole["planning_models"] == "mean"
    box = gym.make("Pendulum-v1")
    box.action_space = gym.spaces.Box(
        np.array([-1.0, -np.inf]), np.array([1.0, np.inf]), dtype=np.float64
    )
    np.testing.assert_array_equal(
        table.generic_defaults(box, "gt")["sampling_var"], [table.GENERIC_SAMPLING_VAR, 0.4]
    )
    assert "planning_models" not in table.generic_defaults(box, "gt")


def test_a_row_keeps_the_agents_own_defaults():
    env = gym.make("MountainCarContinuous-v0")  # a row that leaves the planner to the defaults
    agent = make_agent("mppi-bam", env, 0)
    assert agent.planner.normalize_returns is False
    assert (agent.planner.horizon, agent.planner.temperature) == (50, 0.5)
