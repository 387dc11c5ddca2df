"""Planning rewards say what is wrong (issue 50, fifth round).

Both failed before: ``register_reward`` rounded ``angle_pairs`` with ``int()`` (``(0.9, 1.9)``
became ``(0, 1)``; ``True`` and ``"0"`` passed too), which ``MPPIAgent`` refuses when given
them itself; and a reward that returns NaN everywhere was accepted, so the planner weighed
every sequence alike and the agent acted at random.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from bam_rl.agents.mppi import MPPIAgent
from bam_rl.agents.planner import MPPI, CategoricalMPPI
from bam_rl.agents.rewards import REWARDS, register_reward

SMALL = {"horizon": 4, "n_samples": 8, "n_features": 20}


def _upright(states, actions):
    return states[..., 0]


@pytest.fixture
def registered():
    """Names this module registers, removed afterwards."""
    names: list[str] = []
    yield names
    for name in names:
        REWARDS.pop(name, None)


@pytest.mark.parametrize(
    "pairs",
    [((0.9, 1.9),), ((True, 1),), (("0", "1"),), ((0, 0),), ((-1, 1),), ((0, 1, 2),), (0, 1)],
)
def test_register_reward_checks_angle_pairs_as_the_agents_do(pairs, registered):
    spaces = (gym.spaces.Box(-1, 1, (3,)), gym.spaces.Box(-2, 2, (1,)))
    with pytest.raises(ValueError, match="angle_pairs"):  # what the agent says given them
        MPPIAgent(*spaces, reward=_upright, angle_pairs=pairs, **SMALL)
    with pytest.raises(
        ValueError,
        match=r"angle_pairs must be a sequence of \(cos index, sin index\) pairs of distinct "
        r"ints >= 0 below obs_dim = 3, got",
    ):
        register_reward("x-pairs", _upright, obs_dim=3, angle_pairs=pairs)
    assert "x-pairs" not in REWARDS


def test_register_reward_keeps_int_pairs_and_numpy_ints(registered):
    registered.append("x-pairs-ok")
    entry = register_reward(
        "x-pairs-ok", _upright, obs_dim=3, angle_pairs=[(np.int64(0), np.int32(1))]
    )
    assert entry.angle_pairs == ((0, 1),) and all(type(i) is int for i in entry.angle_pairs[0])
    with pytest.raises(ValueError, match="distinct ints >= 0, got"):  # no obs_dim: no bound
        register_reward("x-pairs-any", _upright, angle_pairs=((0.5, 1),))


def _nan_reward(states, actions):
    return np.full(states.shape[:2], np.nan)


def _still(state, actions, rng):
    """A finite model: every sequence stays at ``state``."""
    return np.broadcast_to(state, (*actions.shape[:2], state.shape[0])).copy()


def _diverged(state, actions, rng):
    """A diverged model: every predicted state is NaN."""
    return np.full((*actions.shape[:2], state.shape[0]), np.nan)


@pytest.mark.parametrize("reward", [_nan_reward, lambda s, a: np.full(s.shape[:2], np.inf)])
def test_the_planners_refuse_a_reward_with_no_finite_return(reward):
    state = np.zeros(3)
    with pytest.raises(ValueError, match=r"the planning reward .* gave no finite return"):
        MPPI(_still, reward, horizon=3, n_samples=5, seed=0).plan(state)
    with pytest.raises(ValueError, match=r"the planning reward .* gave no finite return"):
        CategoricalMPPI(3, reward, horizon=3, n_samples=5, seed=0).plan(state, dynamics=_still)


def test_a_diverged_model_or_a_few_bad_samples_still_plan():
    """Non-finite states (a diverging model) and some non-finite returns: no weight, as before."""
    state = np.zeros(3)
    planner = MPPI(_diverged, _nan_reward, horizon=3, n_samples=5, seed=0)
    assert np.isfinite(planner.plan(state)).all()
    assert np.all(planner.last_weights == 1 / 5)

    def some_nan(states, actions):
        out = np.zeros(states.shape[:2])
        out[0] = np.nan
        return out

    planner = MPPI(_still, some_nan, horizon=3, n_samples=5, seed=0)
    planner.plan(state)
    assert planner.last_weights[0] == 0.0 and planner.last_returns[0] == -np.inf
    discrete = CategoricalMPPI(3, some_nan, horizon=3, n_samples=5, seed=0)
    assert discrete.plan(state, dynamics=_still) in (0, 1, 2)
    assert discrete.last_weights[0] == 0.0


@pytest.mark.parametrize("env_id", ["Pendulum-v1", "CartPole-v1"])
def test_an_agent_with_an_all_nan_reward_refuses_to_act(env_id, registered):
    registered.append("x-nan")
    register_reward("x-nan", _nan_reward, description="NaN everywhere")
    for reward, named in ((_nan_reward, "_nan_reward"), ("x-nan", "NamedReward('x-nan')")):
        env = gym.make(env_id)
        agent = MPPIAgent(env.observation_space, env.action_space, seed=0, reward=reward, **SMALL)
        observation, info = env.reset(seed=0)
        agent.reset(observation, info)
        with pytest.raises(ValueError, match="no finite return") as refused:
            agent.act(observation)
        assert str(refused.value).startswith("the planning reward ") and named in str(refused.value)
        env.close()
