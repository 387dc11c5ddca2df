"""Planning rewards (issue 41): the registry against the environments' own rewards, the
agents' ``reward=`` and ``angle_pairs`` checks at construction, and saving by name."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents import GroundTruthMPPI, MPPIAgent
from bam_rl.agents.planner import AngleCosineReward
from bam_rl.agents.rewards import REWARDS, NamedReward, get_reward, register_reward

SMALL = {"horizon": 4, "n_samples": 3, "n_features": 10}
NAMES = (
    "cartpole-swingup",
    "pendulum-swingup",
    "inverted-pendulum",
    "inverted-double-pendulum",
    "inverted-double-pendulum-lqr",
    "reacher",
    "mountain-car",
    "mountain-car-shaped",
    "cartpole-balance",
    "half-cheetah",
)


def box(dim, bound=np.inf):
    return gym.spaces.Box(-bound, bound, shape=(dim,), dtype=np.float64)


def test_registry_names_and_declarations():
    assert set(NAMES) <= set(REWARDS)
    for name in NAMES:
        entry = get_reward(name)
        assert entry.description and entry.obs_dim is not None
        assert all(0 <= i < entry.obs_dim for pair in entry.angle_pairs for i in pair)
    assert get_reward("cartpole-swingup").angle_pairs == ((2, 3),)


def _env_rewards(env_id, steps, seed=0, **kwargs):
    """(observations after each step, actions, the environment's rewards) of random actions."""
    env = gym.make(env_id, **kwargs)
    env.reset(seed=seed)
    env.action_space.seed(seed)
    obs, acts, rewards = [], [], []
    for _ in range(steps):
        action = env.action_space.sample()
        ob, reward, terminated, truncated, _ = env.step(action)
        obs.append(ob)
        acts.append(np.atleast_1d(action).astype(np.float64))
        rewards.append(reward)
        if terminated or truncated:
            break
    env.close()
    return np.asarray(obs, dtype=np.float64)[None], np.asarray(acts)[None], np.asarray(rewards)


def test_pendulum_swingup_is_pendulum_v1s_reward():
    # Pendulum-v1 pays for the state *before* the step; the planner's states are the ones after
    env = gym.make("Pendulum-v1")
    ob, _ = env.reset(seed=3)
    env.action_space.seed(3)
    fn = get_reward("pendulum-swingup").fn
    for _ in range(20):
        action = env.action_space.sample()
        expected = fn(ob[None, None].astype(np.float64), action[None, None].astype(np.float64))
        ob, reward, *_ = env.step(action)
        np.testing.assert_allclose(expected[0, 0], reward, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("name", "env_id"),
    [("reacher", "Reacher-v5"), ("inverted-double-pendulum", "InvertedDoublePendulum-v5")],
)
def test_mujoco_rewards_match_the_environment(name, env_id):
    states, actions, rewards = _env_rewards(env_id, 15)
    planned = get_reward(name).fn(states, actions)[0]
    np.testing.assert_allclose(planned, rewards, rtol=1e-4, atol=1e-4)


def test_double_pendulum_terminal_cost_is_the_models_lqr_solution():
    """IDP_TERMINAL_COST solves the discrete Riccati equation of Gymnasium's model, linearised
    here again about upright by central differences over one environment step."""
    import mujoco
    from scipy.linalg import solve_discrete_are

    from bam_rl.agents.rewards import IDP_TERMINAL_COST

    base = gym.make("InvertedDoublePendulum-v5").unwrapped
    model, data = base.model, mujoco.MjData(base.model)

    def step(state, control):
        mujoco.mj_resetData(model, data)
        data.qpos[:], data.qvel[:], data.ctrl[:] = state[:3], state[3:], control
        mujoco.mj_step(model, data, nstep=base.frame_skip)
        return np.concatenate([data.qpos, data.qvel])

    eps, zero = 1e-5, np.zeros(6)
    a = np.stack([(step(e * eps, 0.0) - step(-e * eps, 0.0)) / (2 * eps) for e in np.eye(6)], 1)
    b = ((step(zero, eps) - step(zero, -eps)) / (2 * eps))[:, None]
    expected = solve_discrete_are(a, b, np.diag([1, 10, 10, 0.1, 0.1, 0.1]), np.eye(1))
    np.testing.assert_allclose(IDP_TERMINAL_COST, expected, rtol=1e-4, atol=1e-3)


def test_double_pendulum_lqr_reward_adds_the_cost_to_go_at_the_last_step():
    from bam_rl.agents.rewards import IDP_TERMINAL_COST

    states, actions, _ = _env_rewards("InvertedDoublePendulum-v5", 6, seed=2)
    plain = get_reward("inverted-double-pendulum").fn(states, actions)
    lqr = get_reward("inverted-double-pendulum-lqr").fn(states, actions)
    np.testing.assert_array_equal(lqr[..., :-1], plain[..., :-1])
    # a hand-built last state: pole 1 at 0.1 rad, pole 2 straight on it, at rest, cart centred
    upright = np.zeros((1, 2, 9))
    upright[..., 3:5] = 1.0  # cos θ1, cos θ2
    tilted = upright.copy()
    tilted[0, -1, 1], tilted[0, -1, 3] = np.sin(0.1), np.cos(0.1)
    zero = np.zeros((1, 2, 1))
    fn = get_reward("inverted-double-pendulum-lqr").fn
    base = get_reward("inverted-double-pendulum").fn
    np.testing.assert_allclose(fn(upright, zero), base(upright, zero))
    np.testing.assert_allclose(
        fn(tilted, zero)[0, -1], base(tilted, zero)[0, -1] - IDP_TERMINAL_COST[1, 1] * 0.01
    )


def test_alive_rewards_end_at_the_first_unhealthy_state():
    states = np.zeros((1, 4, 4))
    states[0, 1, 2] = 1.0  # CartPole-v1: the pole past 12 degrees at step 1
    np.testing.assert_array_equal(
        get_reward("cartpole-balance").fn(states, np.zeros((1, 4, 1)))[0], [1, 0, 0, 0]
    )
    states = np.zeros((1, 4, 4))
    states[0, 1, 1] = 0.3  # InvertedPendulum-v5: |θ| > 0.2 ends it
    planned = get_reward("inverted-pendulum").fn(states, np.zeros((1, 4, 1)))[0]
    np.testing.assert_allclose(planned, [1, -0.09, 0, 0])
    car = np.array([[[0.4, 0.1], [0.46, 0.01], [0.5, 0.02]]])
    np.testing.assert_allclose(
        get_reward("mountain-car").fn(car, np.ones((1, 3, 1)))[0], [-0.1, 99.9, -0.1]
    )


def test_cartpole_default_is_the_named_swingup():
    env = gym.make("bam_rl/GravityCartPole-v0")
    agent = MPPIAgent(env.observation_space, env.action_space, seed=0, **SMALL)
    assert isinstance(agent.planner.reward, NamedReward)
    assert agent.planner.reward.name == "cartpole-swingup"
    assert agent.model.angle_pairs == ((2, 3),)
    assert isinstance(REWARDS["cartpole-swingup"].fn, AngleCosineReward)
    gt = GroundTruthMPPI(env, seed=0, horizon=4, n_samples=3)
    assert gt.planner.reward.name == "cartpole-swingup"


def test_named_reward_on_another_environment_and_angle_pairs():
    env = gym.make("Pendulum-v1")
    agent = MPPIAgent(
        env.observation_space, env.action_space, reward="pendulum-swingup", seed=0, **SMALL
    )
    assert agent.model.angle_pairs == ((0, 1),)
    ob, info = env.reset(seed=0)
    agent.reset(ob, info)
    action = agent.act(ob)
    assert env.action_space.contains(action)
    # a callable: no angle pairs unless given
    plain = MPPIAgent(
        env.observation_space, env.action_space, reward=lambda s, a: -(s[..., 2] ** 2)
    )
    assert plain.model.angle_pairs == ()


def test_bad_rewards_and_angle_pairs_are_refused_at_construction():
    pendulum = gym.make("Pendulum-v1")
    spaces = (pendulum.observation_space, pendulum.action_space)
    with pytest.raises(ValueError, match=r"reward must be one of .*pendulum-swingup"):
        MPPIAgent(*spaces, reward="pendulum", **SMALL)
    with pytest.raises(ValueError, match=r"reward 'reacher' reads a 10-D observation"):
        MPPIAgent(*spaces, reward="reacher", **SMALL)
    with pytest.raises(ValueError, match=r"reward must return .* shape \(K, H\) = \(2, 3\)"):
        MPPIAgent(*spaces, reward=lambda s, a: s.sum(axis=(1, 2)), **SMALL)
    with pytest.raises(ValueError, match="reward must accept states"):
        MPPIAgent(*spaces, reward=lambda s, a: s[..., 7], **SMALL)
    with pytest.raises(ValueError, match="reward must be given for a 3-D observation"):
        MPPIAgent(*spaces, **SMALL)
    with pytest.raises(ValueError, match="angle_pairs"):
        MPPIAgent(*spaces, reward="pendulum-swingup", angle_pairs=((0, 3),), **SMALL)
    with pytest.raises(ValueError, match="reward must be one of"):
        MPPIAgent(*spaces, reward=3, **SMALL)
    cartpole = gym.make("bam_rl/GravityCartPole-v0")
    with pytest.raises(ValueError, match="reads a 3-D observation"):
        GroundTruthMPPI(cartpole, reward="pendulum-swingup", horizon=4, n_samples=3)
    # an environment without a row in the settings table (InvertedPendulum-v5's gives its
    # reward: docs/env_settings.md)
    with pytest.raises(ValueError, match="reward must be given for a 8-D observation"):
        GroundTruthMPPI(gym.make("Swimmer-v5"), horizon=4, n_samples=3)


def test_named_rewards_save_by_name_and_callables_refuse(tmp_path):
    env = gym.make("Pendulum-v1")
    spaces = (env.observation_space, env.action_space)
    agent = MPPIAgent(*spaces, reward="pendulum-swingup", seed=1, **SMALL)
    ob, info = env.reset(seed=1)
    agent.reset(ob, info)
    agent.act(ob)
    path = agent.save(tmp_path / "named")
    restored = MPPIAgent.load(path)
    assert restored.planner.reward.name == "pendulum-swingup"
    np.testing.assert_array_equal(restored.act(ob), agent.act(ob))

    def swing(states, actions):
        return -(states[..., 2] ** 2)

    unnamed = MPPIAgent(*spaces, reward=swing, seed=1, **SMALL)
    with pytest.raises(ValueError, match=r"register_reward\('my-reward', fn"):
        unnamed.save(tmp_path / "unnamed")
    assert not list(tmp_path.glob("unnamed*"))  # nothing written
    gt = GroundTruthMPPI(
        gym.make("bam_rl/GravityCartPole-v0"), reward=lambda s, a: s[..., 2], horizon=4
    )
    with pytest.raises(ValueError, match="register_reward"):
        gt.save(tmp_path / "gt")
    assert not list(tmp_path.glob("gt*"))


def test_registered_callable_saves_and_needs_registering_to_load(tmp_path):
    env = gym.make("Pendulum-v1")
    register_reward("test-spin", lambda s, a: s[..., 2], obs_dim=3, replace=True)
    try:
        agent = MPPIAgent(
            env.observation_space, env.action_space, reward="test-spin", seed=0, **SMALL
        )
        path = agent.save(tmp_path / "spin")
        assert MPPIAgent.load(path).planner.reward.name == "test-spin"
    finally:
        del REWARDS["test-spin"]
    with pytest.raises(ValueError, match="test-spin"):
        MPPIAgent.load(path)


def test_register_reward_checks_its_arguments():
    with pytest.raises(ValueError, match=r"name .* registered already"):
        register_reward("pendulum-swingup", lambda s, a: s[..., 0])
    with pytest.raises(ValueError, match="fn must be callable"):
        register_reward("x-test", 3)
    with pytest.raises(ValueError, match="angle_pairs must index"):
        register_reward("x-test", lambda s, a: s[..., 0], obs_dim=2, angle_pairs=((0, 2),))
    assert "x-test" not in REWARDS


def test_mountain_car_shaped_adds_energy_progress_to_the_environments_reward():
    """``mountain-car-shaped`` = ``mountain-car`` + the energy's share of the way from rest in
    the valley to rest at the goal (clipped to [0, 1]), and 1 from the goal on."""
    shaped, sparse = get_reward("mountain-car-shaped").fn, get_reward("mountain-car").fn
    valley = -np.pi / 6  # sin 3x = -1
    car = np.array([[[valley, 0.0], [0.0, 0.0], [0.46, 0.01], [-1.0, 0.0]]])
    actions = np.ones((1, 4, 1))
    bonus = shaped(car, actions) - sparse(car, actions)
    half = 1 / (1 + np.sin(3 * 0.45))  # x = 0 at rest: U = 0, between -1 and sin 1.35 (× 0.0025/3)
    np.testing.assert_allclose(bonus[0], [0.0, half, 1.0, 1.0], atol=1e-12)
    # the engine pushing along the velocity raises the energy: a later, faster state earns more
    moving = np.array([[[-0.5, 0.01], [-0.5, 0.03]]])
    assert np.diff(shaped(moving, np.zeros((1, 2, 1)))[0]) > 0
    # its real dynamics: GT MPC's simulator with a 50-step horizon reaches the goal
    env = gym.make("MountainCarContinuous-v0")
    agent = GroundTruthMPPI(env, seed=0, reward="mountain-car-shaped", n_samples=32)
    observation, info = env.reset(seed=0)
    agent.reset(observation, info)
    for _ in range(400):
        action = agent.act(observation)
        observation, reward, terminated, truncated, info = env.step(action)
        agent.observe(action, reward, observation, terminated, truncated, info)
        if terminated:
            break
    assert terminated and observation[0] >= 0.45
