"""Terminal values solved from the model (issue 53): the Riccati solution of a known linear
system, the MuJoCo models' linearisation through the observation mapping, the planning
rewards that add ``-sᵀPs`` at the last step, and the ground truth solving ``P`` again from the
live model only when the world changes."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from scipy.linalg import solve_discrete_are

import bam_rl  # noqa: F401
from bam_rl.agents import GroundTruthMPPI, MPPIAgent
from bam_rl.agents.rewards import (
    IDP_TERMINAL,
    IDP_TERMINAL_COST,
    IP_TERMINAL,
    NamedReward,
    get_reward,
)
from bam_rl.agents.terminal import solve_terminal_value
from bam_rl.schedules import piecewise
from bam_rl.wrappers import NonStationary


def test_solve_terminal_value_is_the_riccati_solution_of_a_linear_model():
    a = np.array([[1.0, 0.1], [0.5, 1.0]])
    b = np.array([[0.0], [0.1]])
    q, r = np.diag([1.0, 0.5]), np.array([[0.2]])
    shift = np.array([0.3, -0.2])  # an equilibrium away from 0, with its action

    def step(states, actions):
        return (states - shift) @ a.T + (actions - 0.5) @ b.T + shift

    p = solve_terminal_value(step, shift, q, r, action=[0.5])
    np.testing.assert_allclose(p, solve_discrete_are(a, b, q, r), rtol=1e-7)


def test_bad_terminal_value_inputs_are_refused():
    def step(states, actions):
        return 2.0 * states  # unstable and uncontrollable: no finite cost-to-go

    with pytest.raises(ValueError, match=r"not stabilisable|no finite"):
        solve_terminal_value(step, np.zeros(2), np.eye(2), np.eye(1))
    with pytest.raises(ValueError, match="R must be positive definite"):
        solve_terminal_value(step, np.zeros(2), np.eye(2), np.zeros((1, 1)))
    with pytest.raises(ValueError, match="Q must be"):
        solve_terminal_value(step, np.zeros(2), np.eye(3), np.eye(1))
    with pytest.raises(ValueError, match="step must return"):
        solve_terminal_value(lambda s, u: s[:, :1], np.zeros(2), np.eye(2), np.eye(1))


def test_the_double_pendulums_nominal_value_is_the_registrys_fixed_one():
    # the same weights as IDP_TERMINAL_COST, solved here from Gymnasium's model
    np.testing.assert_allclose(IDP_TERMINAL.nominal_cost(), IDP_TERMINAL_COST, rtol=1e-4, atol=1e-3)


def test_an_observation_model_is_linearised_through_the_physics_state():
    """A model of observations (what a learned agent has) gives the physics model's ``P``:
    ``from_state`` and ``to_state`` map InvertedDoublePendulum's sines and cosines."""
    import mujoco

    base = gym.make("InvertedDoublePendulum-v5").unwrapped
    model, data = base.model, base.data  # _get_obs reads the environment's own data

    def observation_step(observations, actions):
        out = np.empty_like(observations)
        for i, (ob, action) in enumerate(zip(observations, actions, strict=True)):
            mujoco.mj_resetData(model, data)
            state = IDP_TERMINAL.to_state(ob)
            data.qpos[:], data.qvel[:], data.ctrl[:] = state[:3], state[3:], action
            mujoco.mj_step(model, data, nstep=base.frame_skip)
            out[i] = base._get_obs()
        return out

    expected = IDP_TERMINAL.solve_mujoco(model, base.frame_skip)
    np.testing.assert_allclose(IDP_TERMINAL.solve(observation_step), expected, rtol=1e-5)


def test_terminal_rewards_add_the_cost_to_go_at_the_last_step_only():
    rng = np.random.default_rng(0)
    states = rng.normal(0, 0.1, size=(3, 4, 9))
    states[..., 3:5] = np.sqrt(1 - states[..., 1:3] ** 2)  # (cos, sin) on the circle
    actions = rng.normal(size=(3, 4, 1))
    plain = NamedReward("inverted-double-pendulum")(states, actions)
    fixed = NamedReward("inverted-double-pendulum-lqr")(states, actions)
    solved = NamedReward("inverted-double-pendulum-lqr-terminal")(states, actions)
    np.testing.assert_array_equal(solved[:, :-1], plain[:, :-1])
    assert np.all(solved[:, -1] < plain[:, -1])
    np.testing.assert_allclose(solved[:, -1], fixed[:, -1], rtol=1e-4)
    reward = NamedReward("inverted-pendulum-lqr-terminal")
    reward.set_cost_to_go(np.diag([2.0, 0, 0, 0]))
    ip_states = np.zeros((1, 2, 4))
    ip_states[0, -1, 0] = 0.5
    np.testing.assert_allclose(
        reward(ip_states, np.zeros((1, 2, 1))),
        NamedReward("inverted-pendulum")(ip_states, np.zeros((1, 2, 1))) - [[0.0, 0.5]],
    )
    assert get_reward("inverted-pendulum-lqr-terminal").terminal is IP_TERMINAL


def test_set_cost_to_go_is_checked():
    reward = NamedReward("inverted-pendulum-lqr-terminal")
    with pytest.raises(ValueError, match="cost_to_go"):
        reward.set_cost_to_go(np.eye(3))
    with pytest.raises(ValueError, match="cost_to_go"):
        reward.set_cost_to_go(-np.eye(4))
    with pytest.raises(ValueError, match="declares no terminal value"):
        NamedReward("inverted-pendulum").set_cost_to_go(np.eye(4))


def test_ground_truth_solves_again_only_when_the_world_changes():
    mass = float(gym.make("InvertedDoublePendulum-v5").unwrapped.model.body("pole2").mass[0])
    env = NonStationary(
        gym.make("InvertedDoublePendulum-v5"),
        {
            "gravity": piecewise({0: 9.81, 3: 14.0}, unit="step"),
            "mass:pole2": piecewise({0: mass, 6: 2 * mass}, unit="step"),
        },
    )
    obs, info = env.reset(seed=0)
    agent = GroundTruthMPPI(
        env, seed=0, reward="inverted-double-pendulum-lqr-terminal", n_samples=4, horizon=2
    )
    agent.reset(obs, info)
    costs = []
    for _ in range(8):
        action = agent.act(obs)
        costs.append(agent.planner.reward.cost_to_go.copy())
        obs, reward, terminated, truncated, info = env.step(action)
        agent.observe(action, reward, obs, terminated, truncated, info)
    assert agent.dynamics.terminal_solves == 3  # 9.81; 14; 14 and the heavier pole
    np.testing.assert_allclose(costs[0], IDP_TERMINAL_COST, rtol=1e-4, atol=1e-3)
    # the wrapper's step-3 change is in place from the 5th act on, its step-6 one from the 8th
    assert np.array_equal(costs[0], costs[3]) and not np.array_equal(costs[3], costs[4])
    assert np.array_equal(costs[4], costs[6]) and not np.array_equal(costs[6], costs[7])
    np.testing.assert_allclose(
        costs[-1], IDP_TERMINAL.solve_mujoco(env.unwrapped.model, 5), rtol=1e-12
    )


def test_a_learned_agents_cost_to_go_is_saved_with_it(tmp_path):
    env = gym.make("InvertedPendulum-v5")
    agent = MPPIAgent(
        env.observation_space,
        env.action_space,
        reward="inverted-pendulum-lqr-terminal",
        seed=0,
        horizon=3,
        n_samples=4,
        n_features=10,
    )
    cost = IP_TERMINAL.nominal_cost() * 2.0
    agent.planner.reward.set_cost_to_go(cost)
    restored = MPPIAgent.load(agent.save(tmp_path / "terminal"))
    np.testing.assert_array_equal(restored.planner.reward.cost_to_go, cost)


def test_a_learned_model_solves_the_cost_to_go_or_keeps_the_current_one():
    reward = NamedReward("inverted-pendulum-lqr-terminal")
    a = np.eye(4) + 0.02 * np.array(
        [[0, 0, 1, 0], [0, 0, 0, 1], [0, -1.0, 0, 0], [0, 10.0, 0, 0]]
    )  # a cart-pole-like linear model
    b = 0.02 * np.array([[0.0], [0.0], [1.0], [-1.0]])
    assert reward.solve_cost_to_go(lambda obs, u: obs @ a.T + u @ b.T)
    solved = reward.cost_to_go
    np.testing.assert_allclose(solved, solve_discrete_are(a, b, IP_TERMINAL.Q, IP_TERMINAL.R))
    assert not reward.solve_cost_to_go(lambda obs, u: 1.5 * obs)  # nothing learned: kept
    assert reward.cost_to_go is solved


def test_pendulum_value_is_the_riccati_solution_of_its_equations_at_the_current_g():
    """Pendulum-v1's semi-implicit Euler step, linearised by hand about upright; the ground
    truth solves ``P`` again at the gravity the wrapper set."""
    from bam_rl.agents.rewards import PENDULUM_TERMINAL

    def analytic(g, m=1.0, length=1.0, dt=0.05):
        a_acc, b_acc = 3 * g / (2 * length), 3.0 / (m * length**2)
        a = np.array([[1 + a_acc * dt**2, dt], [a_acc * dt, 1.0]])
        b = np.array([[b_acc * dt**2], [b_acc * dt]])
        return solve_discrete_are(a, b, PENDULUM_TERMINAL.Q, PENDULUM_TERMINAL.R)

    np.testing.assert_allclose(PENDULUM_TERMINAL.nominal_cost(), analytic(10.0), rtol=1e-6)
    env = NonStationary(gym.make("Pendulum-v1"), {"g": piecewise({0: 3.72}, unit="step")})
    obs, info = env.reset(seed=0)
    agent = GroundTruthMPPI(
        env, seed=0, reward="pendulum-swingup-lqr-terminal", n_samples=4, horizon=3
    )
    agent.reset(obs, info)
    agent.act(obs)
    np.testing.assert_allclose(agent.planner.reward.cost_to_go, analytic(3.72), rtol=1e-6)


def test_the_nominal_cost_is_cached_per_terminal_value_not_per_environment():
    """Review of issue 53: a value with another equilibrium on the same environment and costs
    gets its own ``P``, not the cached one of the first."""
    import dataclasses

    from bam_rl.agents.rewards import PENDULUM_TERMINAL

    upright = PENDULUM_TERMINAL.nominal_cost()
    moved = dataclasses.replace(PENDULUM_TERMINAL, equilibrium=np.array([3.0, 0.0]))
    assert moved.cache_key() != PENDULUM_TERMINAL.cache_key()
    assert not np.allclose(moved.nominal_cost(), upright)
    np.testing.assert_array_equal(PENDULUM_TERMINAL.nominal_cost(), upright)  # still cached
