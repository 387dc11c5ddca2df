"""MPPIAgent(memory="bam-segments") (beyond the paper): segment readouts at announced and
BOCD-detected changes, the in-trial readout, the registry entry, save/load and bad input.
Short trials and a tiny planner: behaviour only, the measured numbers are in the README."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from agents_testutils import Runner

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents import GroundTruthMPPI, MPPIAgent
from bam_rl.beliefs import SegmentBAM
from bam_rl.harness.registry import AGENTS, make_agent

CARTPOLE = "bam_rl/GravityCartPole-v0"
SMALL = {"horizon": 5, "n_samples": 4}


def short_env(schedule=(9.81,), announce=False, steps=12):
    return gym.make(
        CARTPOLE, gravity_schedule=list(schedule), announce_changes=announce, max_steps=steps
    )


def segment_agent(env, seed=0, **kwargs):
    return MPPIAgent(
        env.observation_space, env.action_space, memory="bam-segments", seed=seed, **SMALL, **kwargs
    )


def test_exported_from_agents():
    from bam_rl.agents import mppi

    assert MPPIAgent is mppi.MPPIAgent and GroundTruthMPPI is mppi.GroundTruthMPPI


def test_announced_changes_read_out_over_whole_segments():
    env = short_env(schedule=(9.81, 9.81, 3.72, 3.72, 9.81, 9.81), announce=True, steps=10)
    agent = segment_agent(env, announced=True)
    assert isinstance(agent.rule, SegmentBAM) and agent.rule.detector is None
    runner = Runner(env, agent).start(seed=0)
    counts = []
    for _ in range(6):
        runner.run(10)
        counts.append(agent.n_selections)
    # trials 2 and 4 begin episodes: one readout each, over the 1 then 2 closed segments
    assert counts == [0, 0, 1, 1, 2, 2]
    assert agent.rule.segment_sizes == [2, 2]
    assert agent.last_readout.weights.shape == (2,)
    np.testing.assert_array_equal(agent.readout_labels, [9.81, 3.72])
    # the summary's pick fraction: picked segments of the gravity that read out (9.81)
    picked = agent.readout_labels[agent.last_readout.weights > 0]
    expected = np.mean(picked == 9.81) if picked.size else np.nan
    np.testing.assert_equal(agent.segment_pick_fractions[-1], expected)
    assert len(agent.segment_pick_fractions) == 2
    np.testing.assert_equal(agent.summary()["readout_same_gravity"], expected)


def test_in_trial_readout_changes_the_belief_after_k_steps_only():
    env = short_env(schedule=(9.81, 9.81, 3.72), announce=True, steps=10)
    agent = segment_agent(env, announced=True, readout_after_steps=4)
    runner = Runner(env, agent).start(seed=0)
    runner.run(20)  # two trials of 9.81; the third (an announced change) has begun
    prior = agent.model.family.prior
    assert agent.model.belief.allclose(prior)
    runner.run(3)
    assert agent.model.belief.allclose(prior) and not agent.in_trial_readouts
    runner.run(1)  # the 4th transition of the trial: the readout
    assert len(agent.in_trial_readouts) == 1
    assert agent.in_trial_readouts[0].weights.shape == (1,)
    assert not agent.model.belief.allclose(prior)
    # the belief is η0 + w·(segment) + the 4 transitions, as SegmentBAM.preview gives it
    s = agent.model.stats(np.asarray(agent._trial.states), np.asarray(agent._trial.actions))
    expected = agent.rule.preview(s)[1]
    assert agent.model.belief.allclose(expected)
    runner.run(6)  # the end of the trial: the rule's own readout with the whole trial
    assert agent.n_selections == 1 and len(agent.in_trial_readouts) == 1


def test_in_trial_readout_repeats_at_each_listed_step_and_not_on_unannounced_trials():
    env = short_env(schedule=(9.81, 3.72, 3.72), announce=True, steps=10)
    agent = segment_agent(env, announced=True, readout_after_steps=(2, 6))
    runner = Runner(env, agent).start(seed=0)
    runner.run(30)
    assert len(agent.in_trial_readouts) == 2  # both in trial 1; trial 2 announced no change


def test_refresh_adds_the_trials_transitions_so_far_except_on_readout_trials():
    """refresh_every_steps: every k steps of a trial without in-trial readouts the planning
    belief is the rule's plus the trial so far; the trial's end leaves the rule's belief."""
    env = short_env(schedule=(9.81, 9.81, 3.72), announce=True, steps=10)
    agent = segment_agent(env, announced=True, readout_after_steps=6, refresh_every_steps=4)
    runner = Runner(env, agent).start(seed=0)

    def trial_so_far():
        states, actions = np.asarray(agent._trial.states), np.asarray(agent._trial.actions)
        return agent.model.stats(states, actions)

    runner.run(10)  # trial 1: the first of the schedule, no readout scheduled: refreshes
    assert agent.model.belief.allclose(agent.rule.belief)  # its end: the rule's belief
    runner.run(3)
    assert agent.model.belief.allclose(agent.rule.belief)  # not yet 4 steps
    runner.run(1)
    assert agent.model.belief.allclose(agent.rule.belief + trial_so_far())
    runner.run(4)
    assert agent.model.belief.allclose(agent.rule.belief + trial_so_far())
    runner.run(2)  # trial 3 begins: an announced change with an in-trial readout, no refresh
    runner.run(4)
    assert agent.model.belief.allclose(agent.model.family.prior)
    runner.run(2)  # the readout after 6 steps; the 8th step refreshes nothing
    assert len(agent.in_trial_readouts) == 1
    assert agent.model.belief.allclose(agent.rule.preview(trial_so_far())[1])
    with pytest.raises(AssertionError):  # (the readout's belief is not the refresh's)
        assert agent.model.belief.allclose(agent.rule.belief + trial_so_far())


def test_unannounced_changes_use_bocd_over_trials_without_the_detector():
    env = short_env(steps=8)
    agent = segment_agent(env, hazard=0.3, change_threshold=None)  # before issue 52
    assert agent.rule.detector is not None
    Runner(env, agent).start(seed=0).run(40)
    assert agent.n_trials == 5
    assert sum(agent.rule.segment_sizes) + agent.rule.n_open == 5


@pytest.mark.parametrize(
    ("schedule", "saved_at"),
    [
        ((9.81, 3.72, 9.81), 12),  # inside trial 2, an announced change, after its readout
        ((9.81, 3.72, 9.81), 17),  # inside trial 3, an announced change, before its readout
        ((9.81, 9.81, 9.81), 13),  # inside trial 2, which refreshes its belief every 2 steps
    ],
)
def test_save_load_continues_identically(tmp_path, schedule, saved_at):
    spec = {"schedule": schedule, "announce": True, "steps": 8}
    env = short_env(**spec)
    agent = segment_agent(env, seed=5, announced=True, readout_after_steps=3, refresh_every_steps=2)
    runner = Runner(env, agent).start(seed=2)
    before = runner.run(saved_at)
    assert agent._trial_readouts == (saved_at == 12)
    agent.save(tmp_path / "agent.npz")
    uninterrupted = runner.run(7)
    replay = Runner(short_env(**spec), None).start(seed=2)
    replay.run(saved_at, actions=before)
    replay.agent = MPPIAgent.load(tmp_path / "agent.npz")
    np.testing.assert_array_equal(uninterrupted, replay.run(7))
    assert replay.agent.summary() == agent.summary()


def test_save_load_between_trials_after_an_in_trial_readout(tmp_path):
    """Saved after a trial's last step and before the next reset (a save after each episode)
    the agent loads and plans the next trial as it would have."""
    spec = {"schedule": (9.81, 3.72, 9.81), "announce": True, "steps": 8}

    def to_trial_boundary():
        env = short_env(**spec)
        agent = segment_agent(
            env, seed=5, announced=True, readout_after_steps=3, refresh_every_steps=2
        )
        observation, info = env.reset(seed=2)
        agent.reset(observation, info)
        for step in range(16):  # trials 1 and 2; trial 2 (a change) reads out after 3 steps
            action = agent.act(observation)
            observation, reward, terminated, truncated, info = env.step(action)
            agent.observe(action, reward, observation, terminated, truncated, info)
            if truncated and step < 15:
                observation, info = env.reset()
                agent.reset(observation, info)
        return env, agent

    def next_trial(env, agent):
        observation, info = env.reset()
        agent.reset(observation, info)
        actions = []
        for _ in range(8):
            actions.append(agent.act(observation))
            observation, reward, terminated, truncated, info = env.step(actions[-1])
            agent.observe(actions[-1], reward, observation, terminated, truncated, info)
        return np.array(actions)

    env, agent = to_trial_boundary()
    assert not agent._trial.actions and len(agent.in_trial_readouts) == 1
    agent.save(tmp_path / "agent.npz")
    loaded = MPPIAgent.load(tmp_path / "agent.npz")
    replay_env, _ = to_trial_boundary()
    np.testing.assert_array_equal(next_trial(env, agent), next_trial(replay_env, loaded))


def test_registry_defaults_and_trial_length_check():
    assert "mppi-bam-segments" in AGENTS
    env = gym.make("bam_rl/GravityCartPoleEpisodic-v0")
    agent = make_agent("mppi-bam-segments", env, seed=0, **SMALL)
    assert agent.memory == "bam_segments" and agent.readout_after_steps == (5, 10, 25)
    assert agent.announced and agent.rule.detector is None
    # beyond the paper: features blind to the cart position, planning with the mean model
    assert agent.model.feature_states == (1, 2, 3, 4)
    assert agent.model.planning_models == "mean"
    assert agent.model.features.dim_in == 5  # four state components and the action
    paper = make_agent(
        "mppi-bam-segments", env, seed=0, feature_states=None, planning_models="draws", **SMALL
    )
    assert paper.model.feature_states == (0, 1, 2, 3, 4)
    assert paper.model.planning_models == "draws"
    with pytest.raises(ValueError, match="readout_after_steps"):
        make_agent("mppi-bam-segments", env, seed=0, readout_after_steps=200, **SMALL)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"memory": "segments"}, "memory"),
        *(
            ({"readout_after_steps": value}, "readout_after_steps")
            for value in (0, -3, 2.5, True, (5, 3), ())
        ),
        ({"readout_after_steps": 5, "memory": "bam"}, "readout_after_steps"),
        ({"hazard": 0.0}, "hazard"),
        *(({"refresh_every_steps": value}, "refresh_every_steps") for value in (0, 2.5, True)),
        ({"refresh_every_steps": 5, "memory": "bam"}, "refresh_every_steps"),
    ],
)
def test_bad_arguments(kwargs, name):
    env = short_env()
    options = {"memory": "bam-segments", **kwargs}
    with pytest.raises(ValueError, match=name):
        MPPIAgent(env.observation_space, env.action_space, seed=0, **SMALL, **options)


def test_unannounced_detected_change_is_read_out_with_the_first_k_steps(monkeypatch):
    env = short_env(steps=8)
    agent = segment_agent(env, hazard=0.3, readout_after_steps=3, change_threshold=None)
    seen = []
    original = agent.rule.update_with_evidence

    def spy(s, evidence):
        seen.append(evidence)
        return original(s, evidence)

    monkeypatch.setattr(agent.rule, "update_with_evidence", spy)
    Runner(env, agent).start(seed=0).run(16)
    assert len(seen) == 2  # every trial passes its first 3 steps as the readout's evidence
    states, actions = np.asarray(agent._trial.states), np.asarray(agent._trial.actions)
    assert actions.shape[0] == 0 and states.shape[0] == 1  # a new trial has begun
    assert not agent.in_trial_readouts  # no in-trial readout without announcements


def test_memory_names_are_make_rules_and_the_older_spellings_still_read():
    """Issue 25: one spelling per rule; ``"bam+bocd"``/``"bam-segments"`` (older files, user
    code) read as ``make_rule``'s ``"bam_bocd"``/``"bam_segments"``."""
    env = gym.make("bam_rl/GravityCartPoleEpisodic-v0")
    for old, new in (("bam+bocd", "bam_bocd"), ("bam-segments", "bam_segments")):
        agent = MPPIAgent(env.observation_space, env.action_space, memory=old, seed=0, **SMALL)
        assert agent.memory == new
    with pytest.raises(ValueError, match="memory must be one of"):
        MPPIAgent(env.observation_space, env.action_space, memory="bam+", seed=0, **SMALL)
