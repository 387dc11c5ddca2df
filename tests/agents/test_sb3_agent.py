"""SB3Agent: online SAC/DQN learning through the protocol, PPO evaluation, pickle-free files."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from agents_testutils import Runner
from stable_baselines3 import DQN, PPO, SAC

import bam_rl  # noqa: F401
from bam_rl.agents import SB3Agent


def _loop(env, agent, steps, seed=0):
    return Runner(env, agent).start(seed).run(steps)


def test_sac_learns_online_on_the_cartpole(small_sac):
    env = gym.make("bam_rl/GravityCartPole-v0", max_steps=150)
    sac = small_sac(env)
    agent = SB3Agent(sac, seed=0)
    assert agent.learn_online and agent.off_policy
    actions = _loop(env, agent, 300)  # crosses an episode end (150 steps)
    assert all(a.shape == (1,) and a.dtype == np.float32 for a in actions)
    assert sac.num_timesteps == 300
    assert sac.replay_buffer.size() == 300
    assert sac._n_updates == 200  # one gradient step per env step after learning_starts
    # the truncation at step 150 is stored as a timeout (bootstrapped), not a terminal
    assert sac.replay_buffer.dones[149, 0] == 1 and sac.replay_buffer.timeouts[149, 0] == 1
    agent.learn_online = False  # evaluation: deterministic actions
    observation = env.observation_space.sample()
    assert np.array_equal(agent.act(observation), agent.act(observation))


def test_replay_buffer_stores_scaled_box_actions(small_sac):
    env = gym.make("bam_rl/BinomialStream-v0", max_steps=100)  # actions in [0, 1]
    sac = small_sac(env, learning_starts=50, batch_size=16, buffer_size=500, seed=1)
    agent = SB3Agent(sac, seed=1)
    actions = _loop(env, agent, 80)
    stored = sac.replay_buffer.actions[:80, 0, 0]
    np.testing.assert_allclose(stored, 2.0 * np.array([a[0] for a in actions]) - 1.0, atol=1e-6)
    assert sac.replay_buffer.observations[1, 0, 0] == sac.replay_buffer.next_observations[0, 0, 0]


def test_dqn_on_a_discrete_bandit():
    env = gym.make("bam_rl/SwitchingBandit-v0", n_arms=4, max_steps=100)
    dqn = DQN(
        "MlpPolicy",
        env,
        learning_starts=50,
        batch_size=16,
        buffer_size=500,
        train_freq=4,
        target_update_interval=20,
        policy_kwargs={"net_arch": [16]},
        seed=0,
    )
    agent = SB3Agent(dqn, seed=0, total_timesteps=200)
    actions = _loop(env, agent, 200)
    assert all(type(a) is int and 0 <= a < 4 for a in actions)
    assert dqn._n_updates == 38  # as learn(): after rollouts of 4 steps ending at 52, ..., 200
    assert dqn.exploration_rate < 1.0  # the schedule advanced with total_timesteps


def test_on_policy_ppo_is_evaluated_only():
    env = gym.make("bam_rl/GravityCartPole-v0", max_steps=100)
    ppo = PPO("MlpPolicy", env, n_steps=64, batch_size=32, policy_kwargs={"net_arch": [16]}, seed=0)
    before = {k: v.clone() for k, v in ppo.policy.state_dict().items()}
    agent = SB3Agent(ppo)
    assert not agent.learn_online
    actions = _loop(env, agent, 150)
    assert all(env.action_space.contains(a) for a in actions)
    assert ppo.num_timesteps == 0
    assert all((before[k] == v).all() for k, v in ppo.policy.state_dict().items())
    with pytest.raises(ValueError, match="on-policy"):
        SB3Agent(ppo, learn_online=True)
    with pytest.raises(ValueError, match="Stable-Baselines3"):
        SB3Agent(object())


def test_invalid_inputs():
    env = gym.make("bam_rl/GravityCartPole-v0")
    agent = SB3Agent(PPO("MlpPolicy", env, n_steps=64, policy_kwargs={"net_arch": [8]}))
    observation, _ = env.reset(seed=0)
    with pytest.raises(ValueError, match="observation"):
        agent.act(np.full(5, np.nan))
    for action in (np.array([1.5], np.float32), np.array([np.nan]), np.zeros(2), "a"):
        with pytest.raises(ValueError, match="action"):
            agent.observe(action, 0.0, observation, False, False, {})
    with pytest.raises(ValueError, match="reward"):
        agent.observe(np.zeros(1, np.float32), np.nan, observation, False, False, {})
    with pytest.raises(ValueError, match="next_observation"):
        agent.observe(np.zeros(1, np.float32), 0.0, np.full(5, np.inf), False, False, {})


@pytest.mark.parametrize("with_env", [True, False])
def test_save_load_round_trip(tmp_path, with_env, small_sac):
    env = gym.make("bam_rl/GravityCartPole-v0", max_steps=100)
    sac = small_sac(
        env, learning_starts=50, buffer_size=500, policy_kwargs={"net_arch": [16, 16]}, seed=2
    )
    agent = SB3Agent(sac, seed=3)
    _loop(env, agent, 120)
    path = tmp_path / "sac.npz"
    agent.save(path)
    loaded = SB3Agent.load(path, env=env if with_env else None)
    assert type(loaded.algorithm) is SAC
    assert loaded.algorithm.num_timesteps == 120 and loaded.learn_online
    assert loaded.algorithm.batch_size == 32 and loaded.algorithm.learning_starts == 50
    assert loaded.rng.bit_generator.state == agent.rng.bit_generator.state
    for name, value in sac.policy.state_dict().items():
        assert np.array_equal(loaded.algorithm.policy.state_dict()[name].numpy(), value.numpy())
    assert loaded.algorithm.log_ent_coef.item() == sac.log_ent_coef.item()
    agent.learn_online = loaded.learn_online = False
    observations = [env.observation_space.sample() for _ in range(10)]
    assert all(np.array_equal(agent.act(o), loaded.act(o)) for o in observations)


def test_ppo_round_trip_without_env(tmp_path):
    env = gym.make("bam_rl/GravityCartPole-v0")
    ppo = PPO("MlpPolicy", env, n_steps=64, clip_range=0.1, policy_kwargs={"net_arch": [8]}, seed=0)
    agent = SB3Agent(ppo)
    agent.save(tmp_path / "ppo.npz")
    loaded = SB3Agent.load(tmp_path / "ppo.npz")
    assert loaded.algorithm.n_steps == 64
    assert loaded.algorithm.clip_range(1.0) == pytest.approx(0.1)
    observation = env.observation_space.sample()
    assert np.array_equal(agent.act(observation), loaded.act(observation))


class _Marker:
    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_load_rejects_bad_files_without_unpickling(tmp_path):
    marker = tmp_path / "unpickled.marker"
    env = gym.make("bam_rl/GravityCartPole-v0")
    good = tmp_path / "good.npz"
    SB3Agent(PPO("MlpPolicy", env, n_steps=64, policy_kwargs={"net_arch": [8]})).save(good)
    raw = good.read_bytes()
    (tmp_path / "truncated.npz").write_bytes(raw[: len(raw) // 2])
    (tmp_path / "text.npz").write_bytes(b"hello")
    (tmp_path / "pickle.npz").write_bytes(pickle.dumps(_Marker(marker)))
    np.savez(tmp_path / "foreign.npz", x=np.arange(4))
    np.savez(tmp_path / "objects.npz", __json__=np.array([_Marker(marker)], dtype=object))
    import json

    document = json.loads(np.load(good)["__json__"].tobytes())
    arrays = {k: v for k, v in np.load(good).items() if k not in ("__json__", "__digest__")}
    for key, value in {"algorithm": "os.system", "policy": "builtins.eval"}.items():
        tampered = dict(document, **{key: value})
        np.savez(
            tmp_path / f"tampered_{key}.npz",
            **arrays,
            __json__=np.frombuffer(json.dumps(tampered).encode(), dtype=np.uint8),
        )
    wrong_shape = dict(arrays)
    first = next(k for k in arrays if k.startswith("param:"))
    wrong_shape[first] = np.zeros((1, 1, 1), np.float32)
    np.savez(tmp_path / "wrong_shape.npz", **wrong_shape, __json__=np.load(good)["__json__"])
    from bam_rl.agents import UCB

    UCB(2).save(tmp_path / "other_agent.npz")
    names = [
        "truncated",
        "text",
        "pickle",
        "foreign",
        "objects",
        "tampered_algorithm",
        "tampered_policy",
        "wrong_shape",
        "other_agent",
        "missing",
    ]
    for name in names:
        with pytest.raises(ValueError):
            SB3Agent.load(tmp_path / f"{name}.npz", env=env)
    assert not marker.exists()
