"""MPPI planner, the RFF dynamics model, the simulator dynamics and the two MPPI agents.

Short horizons, few samples and short trials keep this file fast; the paper-scale runs
(swing-up, memory on the episodic schedule, latency) live in
``bam_rl.experiments.mppi_checks`` and ``bam_rl/bench/mppi.py``.
"""

from __future__ import annotations

import copy
import math

import gymnasium as gym
import numpy as np
import pytest
from agents_testutils import Runner

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents.dynamics import RFFDynamicsModel
from bam_rl.agents.mppi import (
    MPPI,
    AngleCosineReward,
    GroundTruthMPPI,
    MPPIAgent,
    StateReward,
)
from bam_rl.agents.simulator import SimulatorDynamics
from bam_rl.beliefs import BAM, BOCD, BAMWithChangepoints, EpisodicBAM, RecursiveBayes

CARTPOLE = "bam_rl/GravityCartPole-v0"


class Integrator:
    """``x_{t+1} = x_t + a_t`` (1-D), recording the shapes it is called with."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, ...]] = []

    def __call__(self, state, actions, rng):
        self.calls.append(actions.shape)
        return state + np.cumsum(actions, axis=1)


def negative_distance(target: float):
    return lambda states, actions: -np.abs(states[..., 0] - target)


def random_trial(env, rng, steps=200, seed=None, options=None):
    observation, _ = env.reset(seed=seed, options=options)
    states, actions = [observation], []
    for _ in range(steps):
        action = rng.uniform(-1, 1, size=1)
        observation, *_ = env.step(action)
        states.append(observation)
        actions.append(action)
    return np.array(states), np.array(actions)


# --------------------------------------------------------------------------------- planner
def test_one_plan_is_the_weighted_mean_of_clamped_samples_then_shifted():
    dynamics = Integrator()
    reward = negative_distance(2.0)
    planner = MPPI(
        dynamics,
        reward,
        horizon=4,
        n_samples=6,
        sampling_var=0.4,
        temperature=0.5,
        action_low=-0.5,
        action_high=0.5,
    )
    planner.plan_actions[:] = 0.3
    state = np.array([0.0])
    rng = np.random.default_rng(0)
    action = planner.plan(state, np.random.default_rng(0))
    # the same computation written out
    samples = np.clip(0.3 + np.sqrt(0.4) * rng.standard_normal((6, 4, 1)), -0.5, 0.5)
    returns = reward(state + np.cumsum(samples, axis=1), samples).sum(axis=1)
    weights = np.exp((returns - returns.max()) / 0.5)
    weights /= weights.sum()
    mean = np.einsum("k,khu->hu", weights, samples)
    np.testing.assert_allclose(action, mean[0])
    np.testing.assert_allclose(planner.plan_actions[:-1], mean[1:])
    np.testing.assert_array_equal(planner.plan_actions[-1], 0.0)
    np.testing.assert_allclose(planner.last_weights, weights)
    assert dynamics.calls == [(6, 4, 1)]  # all samples in one call
    assert np.all(np.abs(mean) <= 0.5)


@pytest.mark.parametrize("seed", range(4))
def test_planner_drives_an_integrator_to_a_target(seed):
    planner = MPPI(
        Integrator(),
        negative_distance(3.0),
        horizon=10,
        n_samples=64,
        sampling_var=0.05,
        temperature=0.05,
        seed=seed,
    )
    x = np.array([0.0])
    for _ in range(30):
        x = x + planner.plan(x)
    assert abs(x[0] - 3.0) < 0.3  # from 3.0 away; a random walk of 30 steps ends ~1.2 away


def test_planner_same_seed_same_actions():
    def run(seed):
        planner = MPPI(Integrator(), negative_distance(1.0), horizon=5, n_samples=8, seed=seed)
        return [planner.plan(np.array([0.0])) for _ in range(5)]

    np.testing.assert_array_equal(run(1), run(1))
    assert not np.array_equal(run(1), run(2))


def test_non_finite_returns_get_no_weight():
    def dynamics(state, actions, rng):
        out = state + np.cumsum(actions, axis=1)
        out[0] = np.nan
        return out

    planner = MPPI(dynamics, negative_distance(1.0), horizon=3, n_samples=4, seed=0)
    planner.plan(np.array([0.0]))
    assert planner.last_weights[0] == 0 and np.isclose(planner.last_weights.sum(), 1)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"horizon": 0}, "horizon"),
        ({"n_samples": 0}, "n_samples"),
        ({"temperature": 0.0}, "temperature"),
        ({"temperature": -1.0}, "temperature"),
        ({"sampling_var": 0.0}, "sampling_var"),
        ({"sampling_var": -0.4}, "sampling_var"),
        ({"action_low": 1.0}, "action_low"),
        ({"reward": 3}, "reward"),
        ({"dynamics": "model"}, "dynamics"),
    ],
)
def test_planner_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        MPPI(**{"dynamics": Integrator(), **kwargs})


@pytest.mark.parametrize("state", [np.array([np.nan]), np.zeros((1, 1)), "x"])
def test_planner_bad_state(state):
    with pytest.raises(ValueError, match="state"):
        MPPI(Integrator()).plan(state)


def test_rewards():
    states = np.array([[0.6, 0.0, 1.2, 1.6, 0.0]])  # (cos, sin) off the unit circle
    assert AngleCosineReward()(states, None)[0] == pytest.approx(0.6)
    assert StateReward(2)(states, None)[0] == 1.2


# ---------------------------------------------------------------------------- RFF model
@pytest.fixture(scope="module")
def cartpole_data():
    """Three random-action trials at 9.81, one at 3.72 and one at 11.15."""
    env = gym.make(CARTPOLE)
    rng = np.random.default_rng(0)
    trials = {9.81: [random_trial(env, rng, seed=i) for i in range(3)]}
    for g in (3.72, 11.15):
        trials[g] = [random_trial(env, rng, seed=10, options={"gravity": g})]
    return trials


def test_sample_matches_the_family_sampler(cartpole_data):
    model = RFFDynamicsModel(5, 1, n_features=30, seed=0)
    states, actions = cartpole_data[9.81][0]
    model.set_belief(model.family.prior + model.stats(states, actions))
    ours = model.sample(4, np.random.default_rng(3))
    theirs = model.family.sample(model.belief, np.random.default_rng(3), 4)
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-9)
    assert ours.shape == (4, 5, 30)


def test_stats_are_the_regression_on_features_of_state_and_action(cartpole_data):
    model = RFFDynamicsModel(5, 1, n_features=20, seed=1)
    states, actions = cartpole_data[9.81][0]
    s = model.stats(states, actions)
    phi = model.features(np.concatenate([states[:-1], actions], axis=1))
    expected = model.family.stats(phi, np.diff(states, axis=0))
    assert s.allclose(expected, rtol=1e-12)


def test_rollout_uses_one_model_per_trajectory_with_noise(cartpole_data):
    model = RFFDynamicsModel(5, 1, n_features=40, seed=2, planning_dtype="float64")
    states, actions = cartpole_data[9.81][0]
    model.set_belief(model.family.prior + model.stats(states, actions))
    plan = np.random.default_rng(0).uniform(-1, 1, size=(3, 4, 1))
    out = model(states[0], plan, np.random.default_rng(5))
    rng = np.random.default_rng(5)
    models = model.sample(3, rng)
    noise = np.sqrt(model.noise_var) * rng.standard_normal((4, 3, 5))
    for k in range(3):
        x = states[0]
        for t in range(4):
            x = model.predict(x, plan[k, t], models[k]) + noise[t, k]
            np.testing.assert_allclose(out[k, t], x, rtol=1e-10, atol=1e-12)


def test_mean_planning_rolls_out_the_posterior_mean_without_noise(cartpole_data):
    model = RFFDynamicsModel(
        5, 1, n_features=40, seed=2, planning_dtype="float64", planning_models="mean"
    )
    states, actions = cartpole_data[9.81][0]
    model.set_belief(model.family.prior + model.stats(states, actions))
    plan = np.random.default_rng(0).uniform(-1, 1, size=(3, 4, 1))
    rng = np.random.default_rng(5)
    out = model(states[0], plan, rng)
    # nothing is drawn: another generator gives the same rollouts, and this one is untouched
    np.testing.assert_array_equal(out, model(states[0], plan, np.random.default_rng(6)))
    assert rng.random() == np.random.default_rng(5).random()
    mean = np.broadcast_to(model.mean_model(), (3, 5, 40))
    expected = loop_rollout(model, states[0], plan, mean, np.zeros((4, 3, 5)))
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)
    # the float32 rollouts (the agents' default) draw nothing either and agree to rounding
    fast = copy.deepcopy(model)
    fast.planning_dtype = "float32"
    single = fast(states[0], plan, np.random.default_rng(7))
    assert single.dtype == np.float32
    np.testing.assert_array_equal(single, fast(states[0], plan, np.random.default_rng(8)))
    np.testing.assert_allclose(single, out, rtol=0, atol=1e-3)
    # a model saved before the option plans with draws, as the paper does
    del vars(model)["planning_models"]
    model._check_restored()
    assert model.planning_models == "draws"


def loop_rollout(model, state, actions, models, noise):
    """The planning rollout written out: per trajectory, per step, with ``predict``."""
    k, h, _ = actions.shape
    out = np.empty((k, h, model.state_dim))
    for i in range(k):
        x = np.array(state, dtype=np.float64)
        for t in range(h):
            x = model.predict(x, actions[i, t], models[i]) + noise[t, i]
            for a, b in model.angle_pairs:
                norm = math.hypot(x[a], x[b])
                if norm > 0:
                    x[a], x[b] = x[a] / norm, x[b] / norm
            out[i, t] = x
    return out


@pytest.mark.parametrize(
    ("angle_pairs", "feature_states"),
    [((), None), (((2, 3),), None), (((2, 3),), (1, 2, 3, 4))],
)
def test_fast_rollout_equals_the_loop_by_loop_rollout(cartpole_data, angle_pairs, feature_states):
    model = RFFDynamicsModel(
        5,
        1,
        seed=3,
        angle_pairs=angle_pairs,
        feature_states=feature_states,
        planning_dtype="float64",
    )
    model.set_belief(
        model.family.prior
        + model.stats(*cartpole_data[9.81][0])
        + model.stats(*cartpole_data[9.81][1])
    )
    rng = np.random.default_rng(7)
    state = cartpole_data[9.81][2][0][60]
    actions = np.clip(rng.normal(0.0, 0.6, size=(8, 50, 1)), -1, 1)
    noise = math.sqrt(model.noise_var) * rng.standard_normal((50, 8, 5))
    # the posterior mean for every trajectory: the paper's horizon
    mean = np.broadcast_to(model.mean_model(), (8, 5, model.n_features))
    fast = model.simulate(state, actions, mean, noise)
    np.testing.assert_allclose(fast, loop_rollout(model, state, actions, mean, noise), atol=1e-10)
    # sampled models have entries of ~100 along directions the data leave open, which
    # amplify rounding ~10× a step (as in any float64 evaluation): a short horizon
    models = model.sample(8, rng)
    fast = model.simulate(state, actions[:, :6], models, noise[:6])
    expected = loop_rollout(model, state, actions[:, :6], models, noise[:6])
    np.testing.assert_allclose(fast, expected, atol=1e-10)
    # a call draws the models first, then the noise, and runs the same rollout
    draws = np.random.default_rng(11)
    models, noise = (
        model.sample(8, draws),
        math.sqrt(model.noise_var) * draws.standard_normal((50, 8, 5)),
    )
    np.testing.assert_array_equal(
        model(state, actions, np.random.default_rng(11)),
        model.simulate(state, actions, models, noise),
    )


def test_rollout_of_a_diverging_model_falls_back_to_numpy_cos(cartpole_data):
    model = RFFDynamicsModel(5, 1, n_features=20, seed=0, planning_dtype="float64")
    rng = np.random.default_rng(0)
    models = 1e12 * rng.standard_normal((3, 5, 20))  # states pass 1e12: beyond the table
    noise = np.zeros((6, 3, 5))
    actions = rng.uniform(-1, 1, size=(3, 6, 1))
    state = cartpole_data[9.81][0][0][0]
    out = model.simulate(state, actions, models, noise)
    np.testing.assert_array_equal(out, model._simulate_exact(state, actions, models, noise))
    assert np.abs(out).max() > 1e12
    np.testing.assert_allclose(
        out[:, 0], loop_rollout(model, state, actions[:, :1], models, noise)[:, 0], rtol=1e-12
    )


def test_planner_skips_the_dynamics_checks_with_the_same_result(cartpole_data):
    model = RFFDynamicsModel(5, 1, n_features=30, seed=0, angle_pairs=((2, 3),))
    model.set_belief(model.family.prior + model.stats(*cartpole_data[9.81][0]))
    state = cartpole_data[9.81][0][0][20]
    fast = MPPI(model, horizon=6, n_samples=5, seed=0)
    checked = MPPI(lambda s, a, rng: model(s, a, rng), horizon=6, n_samples=5, seed=0)
    for _ in range(3):
        np.testing.assert_array_equal(fast.plan(state), checked.plan(state))
    with pytest.raises(ValueError, match="state"):
        fast.plan(np.zeros(4))  # a wrong shape goes to the checked call


def test_float32_planning_rollouts_agree_with_float64_for_one_step(cartpole_data):
    train = cartpole_data[9.81]
    states, actions = train[0]
    plan = np.broadcast_to(actions[:1], (8, 1, 1))
    outs = {}
    for dtype in ("float32", "float64"):
        model = RFFDynamicsModel(5, 1, seed=0, planning_dtype=dtype)
        model.set_belief(model.family.prior + model.stats(*train[0]) + model.stats(*train[1]))
        outs[dtype] = model(states[0], plan, np.random.default_rng(1))
    assert outs["float32"].dtype == np.float32
    # one step: float32 rounding is a tenth of the model noise σ = 1e-3 the rollout adds (over
    # many steps sampled models with large entries amplify it: bam_rl/bench/mppi.py)
    np.testing.assert_allclose(outs["float32"], outs["float64"], atol=1e-4)


def test_model_learns_the_cartpole_from_random_trials(cartpole_data):
    model = RFFDynamicsModel(5, 1, seed=0)
    train, test = cartpole_data[9.81][:2], cartpole_data[9.81][2]
    assert model.one_step_error(*test) > 0.99  # the prior mean predicts no change
    belief = model.family.prior
    for trial in train:
        belief = belief + model.stats(*trial)
    model.set_belief(belief)
    assert model.one_step_error(*test) < 0.05


def test_model_of_one_gravity_predicts_another_worse(cartpole_data):
    def fitted(g):
        model = RFFDynamicsModel(5, 1, seed=0)
        model.set_belief(model.family.prior + model.stats(*cartpole_data[g][0]))
        return model

    mars, neptune = fitted(3.72), fitted(11.15)
    held_out = cartpole_data[11.15][0]
    # in-sample error for Neptune's own model against Mars's model on Neptune's data
    assert mars.one_step_error(*held_out) > 3 * neptune.one_step_error(*held_out)


def test_feature_states_restricts_the_inputs(cartpole_data):
    states, actions = cartpole_data[9.81][0]
    model = RFFDynamicsModel(
        5, 1, n_features=20, seed=0, feature_states=(1, 2, 3, 4), planning_dtype="float64"
    )
    assert model.features.dim_in == 5
    model.set_belief(model.family.prior + model.stats(states, actions))
    shifted = states[0] + np.array([7.0, 0, 0, 0, 0])  # the cart position is not an input
    np.testing.assert_allclose(
        model.predict(shifted, actions[0]) - shifted,
        model.predict(states[0], actions[0]) - states[0],
    )
    plan = np.zeros((2, 3, 1))
    a = model(states[0], plan, np.random.default_rng(0))
    b = model(shifted, plan, np.random.default_rng(0))
    np.testing.assert_allclose(b - a, np.broadcast_to([7.0, 0, 0, 0, 0], a.shape), atol=1e-9)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda m: m(np.zeros(4), np.zeros((2, 3, 1)), np.random.default_rng(0)), "state"),
        (lambda m: m(np.full(5, np.nan), np.zeros((2, 3, 1)), np.random.default_rng(0)), "state"),
        (lambda m: m(np.zeros(5), np.zeros((2, 3)), np.random.default_rng(0)), "actions"),
        (lambda m: m(np.zeros(5), np.full((2, 3, 1), np.nan), np.random.default_rng(0)), "actions"),
        (lambda m: m.stats(np.zeros((4, 5)), np.zeros((4, 1))), "actions"),
        (lambda m: m.stats(np.zeros((4, 6)), np.zeros((3, 1))), "states"),
        (lambda m: m.predict(np.zeros(5), np.zeros(2)), "actions"),
        (lambda m: m.predict(np.zeros(5), np.zeros(1), np.zeros((5, 3))), "models"),
    ],
)
def test_model_bad_inputs(call, name):
    with pytest.raises(ValueError, match=name):
        call(RFFDynamicsModel(5, 1, n_features=10, seed=0))


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"noise_var": 0.0}, "noise_var"),
        ({"prior_precision": -1.0}, "prior_precision"),
        ({"planning_dtype": "float16"}, "planning_dtype"),
        ({"feature_states": (0, 9)}, "feature_states"),
        ({"bandwidth": 0.0}, "bandwidth"),
        ({"planning_models": "median"}, "planning_models"),
    ],
)
def test_model_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        RFFDynamicsModel(5, 1, **kwargs)


# ------------------------------------------------------------------------------ simulator
@pytest.mark.parametrize("gravity", [3.72, 11.15])
def test_simulator_dynamics_reproduce_the_environment(gravity):
    env = gym.make(CARTPOLE)
    observation, _ = env.reset(seed=4, options={"gravity": gravity})
    for _ in range(7):  # start from a state away from the reset
        observation, *_ = env.step(np.array([0.5], dtype=np.float32))
    sim = SimulatorDynamics(env.unwrapped.fullpath, env.unwrapped.frame_skip, gravity)
    plan = np.random.default_rng(0).uniform(-1, 1, size=(1, 20, 1)).astype(np.float32)
    predicted = sim(observation, plan)
    for t in range(20):
        observation, *_ = env.step(plan[0, t])
        np.testing.assert_allclose(predicted[0, t], observation, rtol=1e-9, atol=1e-9)


# ----------------------------------------------------------------------------------- agents
SMALL = {"horizon": 5, "n_samples": 4}


def short_env(schedule=(9.81,), announce=False, steps=12):
    return gym.make(
        CARTPOLE, gravity_schedule=list(schedule), announce_changes=announce, max_steps=steps
    )


def test_agent_updates_its_belief_once_per_trial():
    env = short_env()
    agent = MPPIAgent(env.observation_space, env.action_space, memory="recursive", seed=0, **SMALL)
    Runner(env, agent).start(seed=0).run(30)
    assert agent.n_trials == 2  # two finished 12-step trials, a third under way
    prior = agent.model.family.prior.fields["precision"]
    assert not np.allclose(agent.model.belief.fields["precision"], prior)
    assert agent.trial_gravities == [9.81, 9.81]


@pytest.mark.parametrize(
    ("memory", "announced", "rule"),
    [
        ("bam", True, EpisodicBAM),
        ("bam", False, BAM),
        ("bam+bocd", False, BAMWithChangepoints),
        ("bocd", False, BOCD),
        ("recursive", False, RecursiveBayes),
    ],
)
def test_memory_rules(memory, announced, rule):
    env = short_env()
    agent = MPPIAgent(
        env.observation_space, env.action_space, memory=memory, seed=0, announced=announced, **SMALL
    )
    assert type(agent.rule) is rule


def test_episodic_bam_selects_at_the_first_trial_of_each_episode_only():
    env = short_env(schedule=(9.81, 9.81, 3.72, 3.72, 9.81), announce=True, steps=10)
    agent = MPPIAgent(
        env.observation_space, env.action_space, memory="bam", seed=1, announced=True, **SMALL
    )
    runner = Runner(env, agent).start(seed=0)
    counts = []
    for _ in range(5):
        runner.run(10)
        counts.append(agent.n_selections)
    # trial 0: empty memory; trials 2 and 4 begin episodes (a change was announced)
    assert counts == [0, 0, 1, 1, 2]
    np.testing.assert_array_equal(agent.readout_labels, [9.81, 9.81, 3.72, 3.72])
    assert agent.last_readout.weights.shape == (4,)


def test_recursive_resets_to_the_prior_when_told_of_a_change():
    env = short_env(schedule=(9.81, 3.72), announce=True, steps=10)
    agent = MPPIAgent(env.observation_space, env.action_space, memory="recursive", seed=1, **SMALL)
    runner = Runner(env, agent).start(seed=0)
    runner.run(10)  # trial 0 ends, trial 1 (announced change) begins
    assert agent.model.belief.allclose(agent.model.family.prior)


def test_unannounced_bam_selects_after_every_trial():
    env = short_env(steps=8)
    agent = MPPIAgent(env.observation_space, env.action_space, memory="bam", seed=2, **SMALL)
    Runner(env, agent).start(seed=0).run(24)
    assert agent.n_selections == 3


def test_agent_same_seed_same_actions():
    def actions(seed):
        env = short_env()
        agent = MPPIAgent(env.observation_space, env.action_space, seed=seed, **SMALL)
        return Runner(env, agent).start(seed=0).run(30)

    np.testing.assert_array_equal(actions(3), actions(3))
    assert not np.array_equal(actions(3), actions(4))


@pytest.mark.parametrize(
    ("memory", "options"),
    [
        ("bam", {}),
        ("bam+bocd", {}),
        ("bocd", {}),
        ("recursive", {}),
        ("bam_segments", {"planning_models": "mean", "feature_states": (1, 2, 3, 4)}),
    ],
)
def test_agent_save_load_continues_identically(tmp_path, memory, options):
    spec = {"schedule": (9.81, 3.72), "announce": True, "steps": 8}
    env = short_env(**spec)
    agent = MPPIAgent(
        env.observation_space,
        env.action_space,
        memory=memory,
        seed=5,
        announced=True,
        **SMALL,
        **options,
    )
    runner = Runner(env, agent).start(seed=2)
    before = runner.run(20)
    agent.save(tmp_path / "agent.npz")
    uninterrupted = runner.run(20)
    replay = Runner(short_env(**spec), None).start(seed=2)
    replay.run(20, actions=before)
    replay.agent = MPPIAgent.load(tmp_path / "agent.npz")
    resumed = replay.run(20)
    np.testing.assert_array_equal(uninterrupted, resumed)
    assert replay.agent.summary() == agent.summary()


def test_ground_truth_reads_gravity_and_saves(tmp_path):
    env = short_env(schedule=(3.72,), steps=5)
    agent = GroundTruthMPPI(env, seed=0, horizon=5, n_samples=4)
    runner = Runner(env, agent).start(seed=0)
    before = runner.run(3)
    assert agent.dynamics.gravity == 3.72
    agent.save(tmp_path / "gt.npz")
    uninterrupted = runner.run(4)
    replay = Runner(short_env(schedule=(3.72,), steps=5), None).start(seed=0)
    replay.run(3, actions=before)
    replay.agent = GroundTruthMPPI.load(tmp_path / "gt.npz")
    np.testing.assert_array_equal(uninterrupted, replay.run(4))


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"memory": "forgotten"}, "memory"),
        ({"temperature": 0.0}, "temperature"),
        ({"sampling_var": -1.0}, "sampling_var"),
        ({"horizon": 0}, "horizon"),
        ({"n_samples": 0}, "n_samples"),
        ({"hazard": 1.5, "memory": "bocd"}, "hazard"),
        ({"announced": "yes"}, "announced"),
        ({"gamma": 0.9}, "planner options"),
        ({"planning_models": None}, "planning_models"),
    ],
)
def test_agent_bad_arguments(kwargs, name):
    env = short_env()
    with pytest.raises(ValueError, match=name):
        MPPIAgent(env.observation_space, env.action_space, **kwargs)


def test_agent_bad_observations_and_actions():
    env = short_env()
    agent = MPPIAgent(env.observation_space, env.action_space, seed=0, **SMALL)
    observation, info = env.reset(seed=0)
    with pytest.raises(ValueError, match="observation"):
        agent.reset(np.zeros(4), info)
    agent.reset(observation, info)
    with pytest.raises(ValueError, match="observation"):
        agent.act(np.full(5, np.nan))
    with pytest.raises(ValueError, match="action"):
        agent.observe(np.array([np.nan]), 0.0, observation, False, False, info)
    with pytest.raises(ValueError, match="next_observation"):
        agent.observe(np.array([0.1]), 0.0, np.zeros(3), False, False, info)
