"""Classic-control environments are recognised by class, not by name (issue 50): a user's class
that happens to be called ``CartPoleEnv`` is a custom environment (its attributes, no
AttributeError), and a subclass of Gymnasium's CartPole is one (its built-in parameters, and
the ground truth's equations)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.envs.classic_control import CartPoleEnv as GymnasiumCartPole

from bam_rl.agents import GroundTruthMPPI
from bam_rl.agents.classic_models import CartPoleModel, classic_model_for
from bam_rl.schedules import cycle
from bam_rl.wrappers import NonStationary, parameters


class CartPoleEnv(gym.Env):
    """A user's own environment that happens to have a classic-control class name."""

    metadata = {"render_modes": []}

    def __init__(self):
        self.weight = 2.0
        self.observation_space = spaces.Box(-np.inf, np.inf, (1,), np.float64)
        self.action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1), {}

    def step(self, action):
        return np.full(1, self.weight), 0.0, False, False, {}


class LongCartPole(GymnasiumCartPole):
    """A subclass of Gymnasium's CartPole: a longer pole."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.length = 1.0
        self.polemass_length = self.masspole * self.length


def test_a_user_class_named_like_a_classic_one_is_a_custom_environment():
    env = CartPoleEnv()
    assert parameters(env) == ["attr:weight"]
    with pytest.raises(ValueError, match=r"unknown parameter 'gravity'.*no built-in"):
        NonStationary(env, {"gravity": cycle([3.0])})
    wrapped = NonStationary(env, {"attr:weight": cycle([5.0])})
    wrapped.reset(seed=0)
    assert wrapped.step(np.zeros(1, np.float32))[0][0] == 5.0
    assert classic_model_for(env) is None


def test_a_subclass_of_gymnasiums_cartpole_is_classic_control():
    assert "masspole" in parameters(LongCartPole())
    env = NonStationary(LongCartPole(), {"masspole": cycle([0.5])})
    env.reset(seed=0)
    base = env.unwrapped
    assert base.total_mass == base.masscart + 0.5 and base.polemass_length == 0.5 * 1.0
    model = classic_model_for(env)
    assert isinstance(model, CartPoleModel) and model.parameters["polemass_length"] == 0.5
    agent = GroundTruthMPPI(env, seed=0, reward="cartpole-balance", horizon=3, n_samples=4)
    observation, info = env.reset()
    agent.reset(observation, info)
    assert agent.act(observation) in (0, 1)
