"""MPPIAgent(memory="bam_segments") without announcements (issue 52, beyond the paper): the
change detector is on by default, a signal splits the trial where the change began and the
readout names the world, the summary reports it, save/load continues, and the announced
agent is untouched. Tiny planner and short trials: behaviour only (the measured numbers are
in docs/recurring.md)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from agents_testutils import Runner

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents import MPPIAgent
from bam_rl.beliefs import SegmentBAM
from bam_rl.beliefs.worlds import PredictiveCusum, WorldSegmentBAM
from bam_rl.harness.registry import make_agent

SMALL = {"horizon": 5, "n_samples": 4}


def pendulum(steps=20):
    return gym.make("Pendulum-v1", max_episode_steps=steps)


def agent_for(env, **kwargs):
    return MPPIAgent(
        env.observation_space,
        env.action_space,
        memory="bam_segments",
        seed=0,
        reward="pendulum-swingup",
        **SMALL,
        **kwargs,
    )


def test_unannounced_segment_bam_detects_by_default_and_announced_does_not():
    env = gym.make("bam_rl/RecurringPendulumContinual-v0", trial_steps=20)
    agent = make_agent("mppi-bam-segments", env, seed=0, **SMALL)
    assert isinstance(agent.rule, WorldSegmentBAM)
    assert isinstance(agent._detector, PredictiveCusum)
    Runner(env, agent).start(seed=0).run(25)
    summary = agent.summary()
    assert summary["world"] == agent.rule.world and "n_worlds" in summary
    episodic = gym.make("bam_rl/RecurringPendulum-v0", trial_steps=20)
    told = make_agent("mppi-bam-segments", episodic, seed=0, **SMALL)
    assert type(told.rule) is SegmentBAM and told._detector is None
    Runner(episodic, told).start(seed=0).run(25)
    assert "world" not in told.summary()  # the announced agent's summary is as before


def test_a_signal_splits_the_part_where_the_change_began(monkeypatch):
    env = pendulum()
    agent = agent_for(env)
    runner = Runner(env, agent).start(seed=0)
    runner.run(40)  # two trials of world 0
    assert agent.n_trials == 2 and agent.rule.world == 0
    calls = []
    original = agent._detector.step

    def signal(x, y):
        calls.append(1)
        result = original(x, y)
        return (-1, 4) if len(calls) == 10 else result

    monkeypatch.setattr(agent._detector, "step", signal)
    runner.run(10)
    # the 10th transition signals a new world that began 4 transitions back: the first 6
    # ended as a datum of world 0, the last 4 are the evidence the new world plans with
    assert agent.n_detected_changes == 1 and agent.n_trials == 3
    assert len(agent._trial.actions) == 4 and agent._world_evidence == 4
    rule = agent.rule
    assert rule.n_worlds == 1  # world 0 stored when its segment closed
    states, actions = np.asarray(agent._trial.states), np.asarray(agent._trial.actions)
    expected = rule.belief + agent.model.stats(states, actions)
    assert agent.model.belief.allclose(expected)
    assert agent.summary()["world"] == rule.world


def test_save_load_after_a_detected_change_continues_identically(tmp_path, monkeypatch):
    env = pendulum()
    agent = agent_for(env)
    runner = Runner(env, agent).start(seed=0)
    runner.run(30)
    monkeypatch.setattr(agent._detector, "step", lambda x, y: (-1, 3))
    runner.run(1)
    monkeypatch.undo()
    assert agent.n_detected_changes == 1
    path = agent.save(tmp_path / "agent")
    copy = MPPIAgent.load(path)
    assert copy.rule.world == agent.rule.world and copy._world_evidence == 3
    observation = runner.observation
    np.testing.assert_array_equal(copy.act(observation), agent.act(observation))


@pytest.mark.parametrize("value", [0.0, -5.0, float("inf")])
def test_bad_change_threshold(value):
    with pytest.raises(ValueError, match="threshold"):
        agent_for(pendulum(), change_threshold=value)


def test_a_change_found_on_a_trials_last_step_saves_before_the_next_reset(tmp_path, monkeypatch):
    env = pendulum()
    agent = agent_for(env)
    runner = Runner(env, agent).start(seed=0)
    runner.run(39)  # one trial, and all but the last step of the next
    monkeypatch.setattr(agent._detector, "step", lambda x, y: (-1, 2))
    action = agent.act(runner.observation)
    observation, reward, terminated, truncated, info = env.step(action)
    assert truncated
    agent.observe(action, reward, observation, terminated, truncated, info)
    monkeypatch.undo()
    assert agent.n_detected_changes == 1 and agent._world_evidence == 0
    copy = MPPIAgent.load(agent.save(tmp_path / "agent"))  # a consistent state between trials
    assert copy.model.belief.allclose(agent.rule.belief)


def test_the_part_refreshes_its_belief_and_a_new_world_is_an_alternative_in_the_first_trial():
    """Issue 52, second round: every REFRESH_STEPS transitions of a part without a change join
    the belief the agent plans with (the named world's plus the part's), the detector weighs
    it, and from the first refresh of the run's first trial a new world is an alternative
    (before, a change in the first trial could not be found: nothing to weigh against)."""
    from bam_rl.beliefs.worlds import REFRESH_STEPS

    env = pendulum(steps=40)
    agent = agent_for(env)
    runner = Runner(env, agent).start(seed=0)
    runner.run(REFRESH_STEPS - 1)
    assert agent.model.belief.allclose(agent.rule.belief) and not agent._detector.sums
    runner.run(1)
    assert agent.n_detected_changes == 0 and agent._world_evidence == REFRESH_STEPS
    states, actions = np.asarray(agent._trial.states), np.asarray(agent._trial.actions)
    expected = agent.rule.belief + agent.model.stats(states, actions)
    assert agent.model.belief.allclose(expected)
    assert -1 in agent._detector.sums
    assert agent.rule.noise_scale == agent._detector.noise_scale() >= 1.0
    factor = agent._detector._current.factor  # the detector weighs the refreshed belief
    np.testing.assert_allclose(factor @ factor.T, expected.fields["precision"], rtol=1e-9)


def test_the_refresh_sums_only_the_new_transitions_and_equals_the_full_sum(monkeypatch):
    """Issue 52, third round: a part's refreshes add the statistics of the transitions since
    the last one (running sums), equal to the whole part summed from scratch up to round-off;
    each refresh sums REFRESH_STEPS transitions, not the part so far (quadratic before)."""
    from bam_rl.beliefs.worlds import REFRESH_STEPS

    env = pendulum(steps=200)
    agent = agent_for(env, change_threshold=1e12)  # no signal: one long part
    sizes = []
    original = agent.model.stats

    def counted(states, actions):
        sizes.append(len(actions))
        return original(states, actions)

    monkeypatch.setattr(agent.model, "stats", counted)
    runner = Runner(env, agent).start(seed=0)
    runner.run(6 * REFRESH_STEPS)
    assert sizes == [REFRESH_STEPS] * 6
    monkeypatch.undo()
    states, actions = np.asarray(agent._trial.states), np.asarray(agent._trial.actions)
    full = agent.rule.belief + agent.model.stats(states, actions)
    for name, value in agent.model.belief.fields.items():
        scale = float(np.max(np.abs(full.fields[name])))  # round-off relative to the sums
        np.testing.assert_allclose(value, full.fields[name], rtol=0, atol=1e-12 * scale)


def test_a_saved_part_checks_its_running_sums(tmp_path):
    env = pendulum(steps=100)
    agent = agent_for(env)
    runner = Runner(env, agent).start(seed=0)
    runner.run(35)
    assert agent._world_evidence == 30 and agent._world_stats is not None
    copy = MPPIAgent.load(agent.save(tmp_path / "agent"))
    np.testing.assert_array_equal(copy.act(runner.observation), agent.act(runner.observation))
    good = agent._world_stats
    agent._world_stats = good * 2.0  # not the part's statistics
    with pytest.raises(ValueError, match="_world_stats"):
        MPPIAgent.load(agent.save(tmp_path / "broken"))
    shifted = np.asarray(good.log_h) + 1.0  # the right fields, a wrong log h
    agent._world_stats = type(good)._trusted(good.family, dict(good.fields), shifted, ())
    with pytest.raises(ValueError, match="_world_stats"):
        MPPIAgent.load(agent.save(tmp_path / "broken_log_h"))


def test_the_readout_reads_the_newest_noise_level_when_it_names_a_world(monkeypatch):
    """Issue 52, third round: the noise level the readout names a world at is the detector's
    estimate at that step, not the one of the detector's last arming (stale before)."""
    env = pendulum(steps=200)
    agent = agent_for(env)
    runner = Runner(env, agent).start(seed=0)
    runner.run(45)
    used = []
    original = agent.rule.change

    def change(evidence=None, transitions=None):
        used.append((agent.rule.noise_scale, agent._detector.noise_scale()))
        return original(evidence, transitions)

    monkeypatch.setattr(agent.rule, "change", change)
    # inflate the residuals kept since the arming: the estimate moves between two armings
    agent._detector._squares.extend([50.0] * 200)
    monkeypatch.setattr(agent._detector, "step", lambda x, y: (-1, 2))
    runner.run(1)
    assert used and used[0][0] == used[0][1] > 1.0


def test_a_detector_saved_before_the_calibration_is_refused_clearly(tmp_path):
    env = pendulum()
    agent = agent_for(env)
    Runner(env, agent).start(seed=0).run(25)
    del agent._detector.calibrate  # as a file of issue 52's first round
    del agent._detector._squares
    with pytest.raises(ValueError, match="saved before the noise calibration"):
        MPPIAgent.load(agent.save(tmp_path / "old"))
