"""Changes announced inside a trial (issue 41): ``observe`` acts on ``info["context_changed"]``
as ``reset`` does on an announced change (the trial so far becomes a datum, the rule resets,
``mppi-bam-segments`` reads out ``readout_after_steps`` steps later), unless
``in_trial_changes=False``; a world that flags every step of a changed trial (the paper's
announced cart-pole) announces one change, at ``reset``. Tiny planner: behaviour only."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents import MPPIAgent
from bam_rl.harness.registry import make_agent
from bam_rl.schedules import piecewise
from bam_rl.wrappers import NonStationary

SMALL = {"horizon": 4, "n_samples": 3, "n_features": 12}
STEPS = 20
SWITCH = 8  # the step of trial 1 at which gravity goes 9.81 -> 3.72


def run_trials(agent, env, schedule, switch=SWITCH, after_step=None):
    """One trial per ``(gravity, announced_at_reset, new_gravity)`` of ``schedule``: the trial
    starts at ``gravity`` (``context_changed`` at ``reset`` as ``announced_at_reset``); with a
    ``new_gravity`` it is set before step ``switch``, and that step's ``info`` announces it
    (``context_changed`` True on that step only). ``after_step(trial, done)`` runs after each
    ``observe``. Returns ``(n_trials, in-trial readouts)`` after each step."""
    counts = []
    for trial, (gravity, announced, new_gravity) in enumerate(schedule):
        env.unwrapped.set_gravity(gravity)
        obs, info = env.reset(seed=trial)
        agent.reset(obs, {**info, "context_changed": announced})
        for t in range(STEPS):
            changed = new_gravity is not None and t == switch
            if changed:
                env.unwrapped.set_gravity(new_gravity)
            action = agent.act(obs)
            obs, reward, terminated, truncated, info = env.step(action)
            info = {**info, "context_changed": changed}
            agent.observe(action, reward, obs, terminated, truncated, info)
            counts.append((agent.n_trials, len(agent.in_trial_readouts)))
            if after_step is not None:
                after_step(trial, terminated or truncated)
    return counts


def run_switch(agent, env, switch=SWITCH):
    """Trial 0 at 9.81; in trial 1 the gravity is set to 3.72 before step ``switch``, and that
    step's ``info`` announces it (``context_changed`` True on that step only)."""
    return run_trials(agent, env, [(9.81, False, None), (9.81, False, 3.72)], switch)


def segments_agent(env, **kwargs):
    return make_agent(
        "mppi-bam-segments",
        env,
        seed=0,
        readout_after_steps=(5,),
        announced=True,
        **SMALL,
        **kwargs,
    )


def test_segments_read_out_inside_the_trial_after_a_notice():
    env = gym.make("bam_rl/GravityCartPole-v0", max_steps=STEPS)
    agent = segments_agent(env)
    counts = run_switch(agent, env)
    assert agent.n_in_trial_changes == 1
    # trial 1's first SWITCH transitions became a datum at the notice (step SWITCH + 1) ...
    assert counts[STEPS + SWITCH - 1] == (1, 0) and counts[STEPS + SWITCH][0] == 2
    # ... closing the segment [trial 0, trial 1's first part]; 5 steps of 3.72 later, a readout
    assert agent.rule.segment_sizes == [2]
    before, after = counts[STEPS + SWITCH + 3], counts[STEPS + SWITCH + 4]
    assert before[1] == 0 and after[1] == 1
    assert agent.n_trials == 3  # trial 0, trial 1 before and after the change
    np.testing.assert_array_equal(agent.trial_gravities, [9.81, 9.81, 3.72])
    assert agent.summary()["in_trial_readouts"] == 1.0


@pytest.mark.parametrize("method", ["greedy", "continuous"])
def test_the_in_trial_readout_plans_with_its_belief(method):
    """The rest of a trial after an in-trial readout is planned with that readout's belief.

    Trial 0 at 9.81; trial 1 at 3.72, announced at its reset; in trial 2 gravity returns to
    9.81 at step ``SWITCH``, announced in that step's ``info``. The readout 5 steps later
    weighs two segments (trial 0; trial 1 with trial 2's first part): the belief planned with
    until the trial ends is the base prior plus each segment times its weight (in [0, 1],
    binary for ``greedy``) plus the transitions since the change.
    """
    env = gym.make("bam_rl/GravityCartPole-v0", max_steps=STEPS)
    agent = segments_agent(env, method=method)
    assert agent.rule.method == method
    readouts: list[tuple[int, object]] = []  # (transitions seen, expected belief)
    original = agent._read_out_in_trial

    def read_out():
        # the segments a readout now weighs (the open one closes in it) and the transitions
        # since the change, taken before the readout updates the model
        records = [*agent.rule.memory, agent.rule.open_segment]
        s = agent.model.stats(np.asarray(agent._trial.states), np.asarray(agent._trial.actions))
        original()
        weights = agent.in_trial_readouts[-1].weights
        assert weights.shape == (len(records),) and np.all((weights >= 0) & (weights <= 1))
        if method == "greedy":
            assert set(weights.tolist()) <= {0.0, 1.0}
        expected = agent.rule.model.prior + s
        for weight, record in zip(weights, records, strict=True):
            expected = expected + record * float(weight)
        readouts.append((len(agent._trial.actions), expected))

    def planned_with_the_readout(trial, done):
        if trial == 2 and len(readouts) == 2 and not done:
            # from the readout to the trial's end the model plans with its belief
            for key, value in readouts[-1][1].fields.items():
                np.testing.assert_allclose(agent.model.belief.fields[key], value, rtol=1e-12)

    agent._read_out_in_trial = read_out
    schedule = [(9.81, False, None), (3.72, True, None), (3.72, False, 9.81)]
    run_trials(agent, env, schedule, after_step=planned_with_the_readout)
    # one readout in trial 1 (announced at reset), one in trial 2 over two segments
    assert [seen for seen, _ in readouts] == [5, 5]
    assert agent.in_trial_readouts[-1].weights.shape == (2,)


def test_ignoring_notices_waits_for_the_next_trial():
    env = gym.make("bam_rl/GravityCartPole-v0", max_steps=STEPS)
    agent = segments_agent(env, in_trial_changes=False)
    run_switch(agent, env)
    assert agent.n_in_trial_changes == 0 and agent.n_trials == 2
    assert agent.in_trial_readouts == [] and agent.rule.segment_sizes == []
    obs, info = env.reset(seed=2)
    agent.reset(obs, {**info, "context_changed": False})  # the notice, one trial late
    assert agent._readouts_due == [5] and not agent._pending_change


@pytest.mark.parametrize("memory", ["bam", "recursive", "bocd", "bam_bocd"])
def test_every_rule_resets_at_a_notice(memory):
    env = gym.make("bam_rl/GravityCartPole-v0", max_steps=STEPS)
    agent = MPPIAgent(
        env.observation_space, env.action_space, memory=memory, seed=0, announced=True, **SMALL
    )
    resets = []
    original = agent.rule.reset
    agent.rule.reset = lambda: (resets.append(agent.n_trials), original())[1]
    run_switch(agent, env)
    assert agent.n_in_trial_changes == 1 and agent.n_trials == 3
    assert resets == [2]  # after the first part of trial 1 was counted


def test_flags_on_every_step_of_a_changed_trial_are_one_change():
    env = gym.make(
        "bam_rl/GravityCartPoleEpisodic-v0", max_steps=10, gravity_schedule=[9.81, 3.72, 3.72]
    )
    agent = make_agent("mppi-bam-segments", env, seed=0, readout_after_steps=(5,), **SMALL)
    obs, info = env.reset(seed=0)
    agent.reset(obs, info)
    for _ in range(3):
        for _ in range(10):
            action = agent.act(obs)
            obs, reward, terminated, truncated, info = env.step(action)
            agent.observe(action, reward, obs, terminated, truncated, info)
        obs, info = env.reset()
        agent.reset(obs, info)
    assert agent.n_in_trial_changes == 0 and agent.n_trials == 3


def test_the_wrappers_step_schedule_is_followed_and_saved(tmp_path):
    env = NonStationary(
        gym.make("bam_rl/GravityCartPole-v0", max_steps=STEPS),
        {"gravity": piecewise({0: 9.81, STEPS + SWITCH: 3.72}, unit="step")},
    )
    agent = segments_agent(env)
    for trial in range(2):
        obs, info = env.reset(seed=0 if trial == 0 else None)
        agent.reset(obs, info)
        for t in range(STEPS):
            action = agent.act(obs)
            obs, reward, terminated, truncated, info = env.step(action)
            agent.observe(action, reward, obs, terminated, truncated, info)
            if trial == 1 and t == SWITCH + 1:
                path = agent.save(tmp_path / "mid")
    assert agent.n_in_trial_changes == 1 and len(agent.in_trial_readouts) == 1
    restored = MPPIAgent.load(path)
    assert restored.n_in_trial_changes == 1 and restored.n_trials == 2


@pytest.mark.parametrize("in_trial_changes", [True, False])
def test_a_notice_on_a_trials_first_transition_is_a_change_at_its_start(in_trial_changes):
    """NS-Gym's bridge announces a world that differs at a trial's start on the trial's first
    transition, never at ``reset``: acted on at once as at ``reset`` (segment closed, readout
    scheduled), with or without ``in_trial_changes``; no empty part is ended."""
    env = gym.make("bam_rl/GravityCartPole-v0", max_steps=STEPS)
    agent = segments_agent(env, in_trial_changes=in_trial_changes)
    counts = run_switch(agent, env, switch=0)
    assert agent.n_in_trial_changes == 1 and not agent._pending_change
    assert agent.n_trials == 2 and agent.rule.segment_sizes == [1]  # trial 0 closed
    # the readout 5 steps into trial 1 (3.72 from its first transition)
    assert counts[STEPS + 3][1] == 0 and counts[STEPS + 4][1] == 1
    np.testing.assert_array_equal(agent.trial_gravities, [9.81, 3.72])


def every_step_run(min_change_interval, steps=STEPS):
    """Announced MPPI-BAM on a world whose gravity changes at every step (a step-level
    schedule through the wrapper); returns the agent after ``steps`` steps of one trial."""
    from bam_rl.schedules import cycle

    env = NonStationary(
        gym.make("bam_rl/GravityCartPole-v0", max_steps=steps + 5),
        {"gravity": cycle([9.81, 3.72], every=1, unit="step")},
    )
    kwargs = {} if min_change_interval is None else {"min_change_interval": min_change_interval}
    agent = make_agent("mppi-bam", env, seed=0, announced=True, **SMALL, **kwargs)
    obs, info = env.reset(seed=0)
    agent.reset(obs, info)
    for t in range(steps):
        action = agent.act(obs)
        obs, reward, terminated, truncated, info = env.step(action)
        assert info["context_changed"] == (t > 0)  # step 0 keeps the reset's value
        agent.observe(action, reward, obs, terminated, truncated, info)
    return agent


def test_changes_at_every_step_merge_so_the_memory_grows_once_per_interval():
    """Issue 50: a world that changes at every step made every step a trial (each trial's
    readout scans the whole memory, so the cost per step grew without bound); notices closer
    than ``min_change_interval`` transitions merge into one, acted on at that distance."""
    merged = every_step_run(None)  # the default, 5
    assert merged.min_change_interval == 5
    # a part ends as a trial once it holds 5 transitions: after transitions 5, 10, 15, 20
    assert merged.n_trials == STEPS // 5 == len(merged.rule.memory)
    assert merged.n_in_trial_changes == STEPS // 5  # each merged change acted on once
    every = every_step_run(1)  # each notice acted on at once, as before this option
    assert every.n_trials == every.n_in_trial_changes == STEPS - 1  # steps 1..19 each end one
    assert every_step_run(STEPS + 1).n_trials == 0  # every notice merged into one, pending


def test_a_merged_change_pending_at_the_trials_end_is_acted_on_at_the_next_reset():
    env = gym.make("bam_rl/GravityCartPole-v0", max_steps=STEPS)
    agent = make_agent(
        "mppi-bam", env, seed=0, announced=True, min_change_interval=STEPS + 1, **SMALL
    )
    resets = []
    original = agent.rule.reset
    agent.rule.reset = lambda: (resets.append(agent.n_trials), original())[1]
    run_switch(agent, env)  # the notice at step SWITCH of trial 1 is too close to split
    assert agent.n_in_trial_changes == 0 and agent._merged_change
    obs, info = env.reset(seed=5)
    agent.reset(obs, {**info, "context_changed": False})
    assert resets == [2] and not agent._merged_change  # acted on at the reset after trial 1


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "5"])
def test_min_change_interval_is_checked(bad):
    env = gym.make("bam_rl/GravityCartPole-v0", max_steps=STEPS)
    with pytest.raises(ValueError, match="min_change_interval"):
        make_agent("mppi-bam", env, seed=0, min_change_interval=bad, **SMALL)
