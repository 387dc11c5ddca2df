"""The NS-Gym bridge against ns-gym 1.0.12 (skipped when ns-gym is not installed):
``from_nsgym`` gives a Box environment that passes Gymnasium's ``check_env`` and flags only
real changes; ``as_nsgym_agent`` drives bam-rl agents from NS-Gym competition-style loops."""

from __future__ import annotations

import time
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

ns_gym = pytest.importorskip("ns_gym")

from ns_gym.base import Agent as NSAgent  # noqa: E402
from ns_gym.schedulers import (  # noqa: E402
    ContinuousScheduler,
    CustomScheduler,
    DiscreteScheduler,
)
from ns_gym.update_functions import NoUpdate, StepWiseUpdate  # noqa: E402
from ns_gym.wrappers import MujocoWrapper, NSClassicControlWrapper  # noqa: E402

from bam_rl.agents import MPPIAgent, RandomAgent  # noqa: E402
from bam_rl.interop import NSGymBridge, as_nsgym_agent, from_nsgym  # noqa: E402


def heavy_pole_cartpole(**notification):
    """NS-Gym's CartPole-v1 with the pole mass 0.1 -> 1.5 at t = 3 and a ``NoUpdate`` on the
    pole length that fires at every step without changing it."""
    changes = {
        "masspole": StepWiseUpdate(DiscreteScheduler({3}), [1.5]),
        "length": NoUpdate(ContinuousScheduler()),
    }
    notification = notification or {"change_notification": True, "delta_change_notification": True}
    return NSClassicControlWrapper(gym.make("CartPole-v1"), changes, **notification)


def test_from_nsgym_gives_a_box_env_that_passes_check_env():
    env = from_nsgym(heavy_pole_cartpole())
    assert isinstance(env, NSGymBridge)
    assert isinstance(env.observation_space, gym.spaces.Box)
    assert env.observation_space == gym.make("CartPole-v1").observation_space
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env, skip_render_check=True)  # NS-Gym's own Dict env fails it
        with pytest.raises(ValueError, match="cannot be recreated"):
            check_env(heavy_pole_cartpole(), skip_render_check=True)
    observation, info = env.reset(seed=0)
    assert env.observation_space.contains(observation)
    assert info["context"] == {"masspole": 0.1, "length": 0.5} and not info["context_changed"]


def test_context_changed_flags_real_changes_only():
    env = from_nsgym(heavy_pole_cartpole())
    env.reset(seed=0)
    flagged, fired, masses = [], [], []
    for _ in range(6):
        observation, reward, _, _, info = env.step(0)
        assert isinstance(observation, np.ndarray) and isinstance(reward, float)
        flagged.append(info["context_changed"])
        fired.append(info["nsgym"]["env_change"]["length"])
        masses.append(info["context"]["masspole"])
    assert flagged == [False, False, False, True, False, False]
    assert fired == [1] * 6  # NS-Gym's flag: the no-op update "fired" at every step
    assert masses == [0.1, 0.1, 0.1, 1.5, 1.5, 1.5]
    assert env.unwrapped.masspole == 1.5 and env.get_wrapper_attr("context")["masspole"] == 1.5
    # NS-Gym restores the initial values at reset: reported, flagged at the first transition
    # that runs in them (never at the reset itself)
    _, info = env.reset()
    assert info["context"]["masspole"] == 0.1 and not info["context_changed"]
    *_, info = env.step(0)
    assert info["context"]["masspole"] == 0.1 and info["context_changed"]
    _, info = env.reset()
    *_, info = env.step(0)
    assert not info["context_changed"]


def test_a_change_at_t0_of_every_episode_is_one_world_not_two_changes():
    """NS-Gym's published CartPole problems set the mass to m at t = 0 of every episode (after
    reset restored 0.1): every transition runs at m, so nothing is flagged after the first
    episode's step 0 (where the world first differs from none: not flagged either)."""
    ns_env = NSClassicControlWrapper(
        gym.make("CartPole-v1"),
        {"masspole": StepWiseUpdate(DiscreteScheduler({0}), [1.5])},
        change_notification=True,
        delta_change_notification=True,
    )
    env = from_nsgym(ns_env)
    flags, masses = [], []
    for seed in range(3):
        _, info = env.reset(seed=seed)
        flags.append(info["context_changed"])
        for _ in range(3):
            *_, info = env.step(0)
            flags.append(info["context_changed"])
            masses.append(info["context"]["masspole"])
    assert flags == [False] * 12 and masses == [1.5] * 9


def test_a_world_held_for_episodes_is_announced_once_at_its_first_step():
    """Between-episode worlds in NS-Gym (scripts/any_env/any_env_acceptance.py --nsgym): with
    ``persistent_params`` and an update at each episode's t = 0, Pendulum-v1's g is 10 for two
    episodes, then 3.72 for two; only the first step of episode 2 is flagged, and the values
    survive the resets."""
    per_episode = [10.0, 10.0, 3.72, 3.72]
    ns_env = NSClassicControlWrapper(
        gym.make("Pendulum-v1"),
        {"g": StepWiseUpdate(CustomScheduler(lambda t: t == 0), list(per_episode))},
        change_notification=True,
        delta_change_notification=True,
        persistent_params=True,
    )
    env = from_nsgym(ns_env)
    flags, worlds = [], []
    for episode in range(4):
        _, info = env.reset(seed=0 if episode == 0 else None)
        flags.append(info["context_changed"])
        for _ in range(2):
            *_, info = env.step(np.zeros(1, dtype=np.float32))
            flags.append(info["context_changed"])
        worlds.append(info["context"]["g"])
    assert worlds == per_episode
    # three flags an episode (the reset, two steps): only the first step of episode 2
    assert [i for i, flag in enumerate(flags) if flag] == [7]


def test_notification_follows_nsgym_levels_unless_chosen():
    basic = from_nsgym(heavy_pole_cartpole(change_notification=True))
    silent = from_nsgym(heavy_pole_cartpole())
    silent_ns = from_nsgym(heavy_pole_cartpole(change_notification=False))
    assert (basic.notify, silent.notify, silent_ns.notify) == ("flag", "value", "none")
    _, info = basic.reset(seed=0)
    assert "context" not in info and info["context_changed"] is False
    _, info = silent_ns.reset(seed=0)
    assert "context" not in info and "context_changed" not in info
    for _ in range(4):
        *_, info = silent_ns.step(1)
    assert "context_changed" not in info
    assert silent_ns.get_wrapper_attr("context")["masspole"] == 1.5  # ground truth anyway
    forced = from_nsgym(heavy_pole_cartpole(change_notification=False), notify="value")
    _, info = forced.reset(seed=0)
    assert info["context"]["masspole"] == 0.1


def test_mujoco_gravity_is_read_from_the_model_as_a_magnitude():
    changes = {
        "gravity": StepWiseUpdate(DiscreteScheduler({2}), [-3.72]),
        "pole_mass": NoUpdate(ContinuousScheduler()),
    }
    ns_env = MujocoWrapper(gym.make("InvertedPendulum-v5"), changes, change_notification=True)
    env = from_nsgym(ns_env, notify="value")
    _, info = env.reset(seed=1)
    assert info["context"]["gravity"] == pytest.approx(9.81)
    flags = []
    for _ in range(4):
        *_, info = env.step(np.zeros(1, dtype=np.float32))
        flags.append(info["context_changed"])
    assert flags == [False, False, True, False]
    assert info["context"]["gravity"] == pytest.approx(3.72)
    assert env.unwrapped.model.opt.gravity[2] == pytest.approx(-3.72)


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="env must be an NS-Gym environment"):
        from_nsgym(gym.make("CartPole-v1"))
    with pytest.raises(ValueError, match="notify must be one of"):
        from_nsgym(heavy_pole_cartpole(), notify="loud")
    with pytest.raises(ValueError, match="agent must be a bam-rl agent"):
        as_nsgym_agent(object())
    with pytest.raises(ValueError, match="base must be a class"):
        as_nsgym_agent(RandomAgent(gym.spaces.Discrete(2), seed=0), base="ModelBasedAgent")


class Spy:
    """A bam-rl agent that records the calls the adapter makes, forwarding to ``inner``."""

    def __init__(self, inner):
        self.inner = inner
        self.calls: list[tuple] = []

    def reset(self, observation, info):
        self.calls.append(("reset", np.array(observation), dict(info)))
        self.inner.reset(observation, info)

    def act(self, observation):
        return self.inner.act(observation)

    def observe(self, action, reward, next_observation, terminated, truncated, info):
        self.calls.append(
            ("observe", action, reward, np.array(next_observation), terminated, dict(info))
        )
        self.inner.observe(action, reward, next_observation, terminated, truncated, info)


class ModelBasedAgent(NSAgent):
    """The NS-Gym competition's model-based interface (its ``base_agent.py``): the evaluator
    times ``validate_and_get_action``, which calls ``get_action(obs, planning_env, reward=,
    done=)`` and checks the action against ``planning_env.action_space``."""

    def get_action(self, obs, planning_env, **kwargs):
        raise NotImplementedError

    def validate_and_get_action(self, obs, planning_env, reward=None, done=None):
        start = time.perf_counter()
        action = self.get_action(obs, planning_env, reward=reward, done=done)
        if not isinstance(action, (np.ndarray, int, np.integer)):
            raise TypeError(f"Action must be a numpy array or int, got {type(action)}")
        if not planning_env.action_space.contains(action):
            raise ValueError(f"Action {action} is outside {planning_env.action_space}")
        return action, time.perf_counter() - start


def competition_loop(env, agent, seeds, max_steps=None):
    """NS-Gym's competition evaluator, with the reward and ``done`` of the last step passed
    along, and one more call when the episode ends; returns the real transitions."""
    transitions, starts = [], []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        starts.append(np.array(obs["state"]))
        reward, done, truncated, steps = None, False, False, 0
        while not (done or truncated):
            planning_env = env.get_planning_env()
            action, _ = agent.validate_and_get_action(obs, planning_env, reward, done)
            obs, reward, done, truncated, _ = env.step(action)
            steps += 1
            truncated = truncated or (max_steps is not None and steps >= max_steps)
            transitions.append((float(reward), np.array(obs["state"]), bool(done)))
        agent.validate_and_get_action(obs, env.get_planning_env(), reward, True)
    return transitions, starts


def test_a_competition_loop_drives_a_random_agent_through_the_adapter():
    env = heavy_pole_cartpole()
    spy = Spy(RandomAgent(env.action_space, seed=0))
    agent = as_nsgym_agent(spy, base=ModelBasedAgent)
    assert isinstance(agent, ModelBasedAgent) and isinstance(agent, NSAgent)
    transitions, starts = competition_loop(env, agent, seeds=[1, 2, 3])
    resets = [c for c in spy.calls if c[0] == "reset"]
    observed = [c for c in spy.calls if c[0] == "observe"]
    assert len(resets) == 3 and agent.episodes == 3
    assert [np.array_equal(r[1], s) for r, s in zip(resets, starts, strict=True)] == [True] * 3
    # every transition exactly once, in order, with its reward, next state and end
    assert len(observed) == len(transitions) == agent.transitions and agent.unobserved == 0
    for call, (reward, state, done) in zip(observed, transitions, strict=True):
        assert call[2] == reward and np.array_equal(call[3], state) and call[4] == done
    # each reset comes right after the previous episode's terminal transition
    kinds = [c[0] for c in spy.calls]
    ends = [i for i, c in enumerate(spy.calls) if c[0] == "observe" and c[4]]
    assert kinds[0] == "reset" and all(kinds[i + 1] == "reset" for i in ends[:-1])
    # detailed notification: the planning copy carries the world; a real change is announced
    # at the first transition that runs in it (episode 2's first, back at the initial 0.1),
    # never at the reset
    assert all(not r[2]["context_changed"] for r in resets)
    assert resets[1][2]["context"]["masspole"] == 0.1
    episodes, flags = [], []
    for call in spy.calls:
        if call[0] == "reset":
            flags = []
            episodes.append(flags)
        else:
            flags.append(call[5]["context_changed"])
    assert min(len(f) for f in episodes) > 4  # each episode reaches the change at t = 3
    for k, flags in enumerate(episodes):
        # 0.1 -> 1.5 at t = 3; later episodes start back at 0.1 (after 1.5): flagged at step 0
        assert flags[:4] == [k > 0, False, False, True] and not any(flags[4:])


def test_episode_starts_are_found_without_done_and_missing_rewards_are_counted():
    """NS-Gym's published evaluator passes no reward and never says ``done``: the adapter
    still resets at each episode (``relative_time`` back at 0) and counts what it missed."""
    env = heavy_pole_cartpole()
    spy = Spy(RandomAgent(env.action_space, seed=0))
    agent = as_nsgym_agent(spy)
    steps = 0
    for seed in (4, 5):
        obs, _ = env.reset(seed=seed)
        done = truncated = False
        while not (done or truncated):
            action = agent.act(obs, env.get_planning_env())
            obs, _, done, truncated, _ = env.step(action)
            steps += 1
    assert [c[0] for c in spy.calls] == ["reset", "reset"]
    # the first episode's last transition never came; the second's is still pending
    assert agent.transitions == 0 and agent.unobserved == steps - 1
    agent.end_episode(obs, 1.0, terminated=True)  # for harnesses that can report it
    assert spy.calls[-1][0] == "observe" and spy.calls[-1][4] is True
    assert agent.transitions == 1


def test_a_small_mppi_agent_learns_through_the_adapter_on_nsgym_pendulum():
    changes = {"m": StepWiseUpdate(DiscreteScheduler({10}), [1.5])}
    env = NSClassicControlWrapper(
        gym.make("Pendulum-v1"), changes, change_notification=True, delta_change_notification=True
    )
    mppi = MPPIAgent(
        env.observation_space["state"],
        env.action_space,
        memory="bam",
        seed=0,
        reward="pendulum-swingup",
        n_features=20,
        horizon=5,
        n_samples=8,
    )
    spy = Spy(mppi)
    agent = as_nsgym_agent(spy, base=ModelBasedAgent)
    transitions, _ = competition_loop(env, agent, seeds=[0, 1], max_steps=15)
    observed = [c for c in spy.calls if c[0] == "observe"]
    assert len(observed) == len(transitions) == 30 and agent.unobserved == 0
    assert [c[0] for c in spy.calls].count("reset") == 2
    for call, (reward, state, _) in zip(observed, transitions, strict=True):
        assert call[2] == reward and np.array_equal(call[3], state)


def test_nsgym_cannot_wrap_our_cartpole_so_nothing_can_desync():
    """docs/nsgym.md: NS-Gym 1.0.12 accepts only the classes of its own tables; if a later
    version accepts ours, its direct model writes would bypass ``set_gravity`` (revisit)."""
    import bam_rl  # noqa: F401  (registers bam_rl/GravityCartPole-v0)

    update = StepWiseUpdate(DiscreteScheduler({2}), [3.72])
    with pytest.raises(AssertionError, match="GravityCartPoleEnv"):
        MujocoWrapper(gym.make("bam_rl/GravityCartPole-v0"), {"gravity": update})
    with pytest.raises(AssertionError, match="GravityCartPoleEnv"):
        NSClassicControlWrapper(gym.make("bam_rl/GravityCartPole-v0"), {"gravity": update})
