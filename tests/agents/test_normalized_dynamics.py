"""The normalised RFF dynamics model (issue 53, beyond the paper): its standardisation against a
NumPy reference, the per-dimension length-scale heuristic, planning rollouts against
step-by-step predictions, save → load, refusals, and the paper's model left as it was."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from agents_testutils import drive_trials

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents import MPPIAgent
from bam_rl.agents.dynamics import RFFDynamicsModel
from bam_rl.agents.normalized_dynamics import (
    NORMALIZED_DEFAULTS,
    NormalizedRFFDynamicsModel,
    per_dimension_scales,
)
from bam_rl.features import RandomFourierFeatures


def _trial(seed=0, steps=40, dx=3, du=2):
    """A made-up trial whose components have very different scales."""
    rng = np.random.default_rng(seed)
    scale = np.array([0.01, 1.0, 100.0])[:dx]
    states = np.cumsum(rng.standard_normal((steps + 1, dx)) * scale, axis=0) + 5.0
    return states, rng.uniform(-1.0, 1.0, (steps, du))


def _model(**options):
    defaults = {"n_features": 16, "seed": 3, "bandwidth": 2.0, "noise_var": 1e-2}
    return NormalizedRFFDynamicsModel(3, 2, **{**defaults, **options})


def test_standardisation_matches_a_numpy_reference():
    states, actions = _trial()
    model = _model(lengthscales="std", planning_models="mean")
    s = model.stats(states, actions)
    z = np.c_[states[:-1], actions]
    delta = np.diff(states, axis=0)
    mu, sd = z.mean(0), z.std(0)
    assert model.normalized
    np.testing.assert_allclose(model.input_mean, mu, rtol=1e-12)
    np.testing.assert_allclose(model.input_scales, sd, rtol=1e-12)
    np.testing.assert_allclose(model.target_mean, delta.mean(0), rtol=1e-12)
    np.testing.assert_allclose(model.target_scale, delta.std(0), rtol=1e-12)
    # the features: the seed's draws (Ω first, then b), Ω scaled by 1 / (bandwidth · s_d)
    rng = np.random.default_rng(3)
    omega = rng.standard_normal((16, 5)) / 2.0
    offset = rng.uniform(-np.pi, np.pi, 16)
    phi = math.sqrt(2 / 16) * np.cos(((z - mu) / sd) @ omega.T + offset)
    np.testing.assert_allclose(model.features(z), phi, atol=1e-12)
    # the statistics regress standardised changes; the mean solves the ridge equations
    y = (delta - delta.mean(0)) / delta.std(0)
    precision = phi.T @ phi / 1e-2 + model.family.prior.fields["precision"]
    np.testing.assert_allclose(s.fields["precision"], phi.T @ phi / 1e-2, rtol=1e-10)
    model.set_belief(model.family.prior + s)
    mean = np.linalg.solve(precision, phi.T @ y / 1e-2).T  # (dx, D), standardised units
    expected = states[:-1] + delta.mean(0) + (phi @ mean.T) * delta.std(0)
    np.testing.assert_allclose(model.predict(states[:-1], actions), expected, rtol=1e-9)
    np.testing.assert_allclose(model.raw_model(), mean * delta.std(0)[:, None], rtol=1e-9)


def test_moments_are_fixed_by_the_first_data_and_never_move():
    states, actions = _trial(0)
    model = _model()
    model.stats(states, actions)
    fixed = (model.input_mean.copy(), model.input_scales.copy(), model.target_scale.copy())
    model.stats(*_trial(1))  # later data are standardised with the same moments
    for before, after in zip(
        fixed, (model.input_mean, model.input_scales, model.target_scale), strict=True
    ):
        np.testing.assert_array_equal(before, after)
    with pytest.raises(ValueError, match="already fixed"):
        model.fit_normalization(np.c_[states[:-1], actions], np.diff(states, axis=0))


def test_an_unnormalised_model_predicts_no_change():
    states, actions = _trial()
    model = _model()
    np.testing.assert_array_equal(model.predict(states[:-1], actions), states[:-1])


def test_median_heuristic_per_dimension():
    rng = np.random.default_rng(1)
    data = rng.standard_normal((30, 3)) * np.array([0.1, 1.0, 10.0])
    data[:, 1] = 4.0  # a constant dimension gets 1
    pairs = [(i, j) for i in range(30) for j in range(i + 1, 30)]
    brute = np.median([np.abs(data[i] - data[j]) for i, j in pairs], axis=0)
    scales = per_dimension_scales(data)
    np.testing.assert_allclose(scales[[0, 2]], brute[[0, 2]], rtol=1e-12)
    assert scales[1] == 1.0
    np.testing.assert_allclose(per_dimension_scales(data, "std")[[0, 2]], data.std(0)[[0, 2]])
    # more than 1000 rows: 1000 evenly spaced ones, no random draw
    many = rng.standard_normal((2500, 2))
    rows = many[np.linspace(0, 2499, 1000).astype(int)]
    np.testing.assert_array_equal(per_dimension_scales(many), per_dimension_scales(rows))


@pytest.mark.parametrize("planning_models", ["mean", "draws"])
def test_float64_rollouts_match_step_by_step_predictions(planning_models):
    states, actions = _trial()
    model = _model(planning_dtype="float64", planning_models=planning_models)
    model.set_belief(model.family.prior + model.stats(states, actions))
    plan = np.random.default_rng(2).uniform(-1, 1, (4, 6, 2))
    out = model(states[0], plan, np.random.default_rng(5))
    rng = np.random.default_rng(5)
    if planning_models == "mean":
        models, noise = None, np.zeros((6, 4, 3))
    else:
        models = model.sample(4, rng)
        noise = rng.standard_normal((6, 4, 3)) * math.sqrt(model.noise_var) * model.target_scale
    x = np.broadcast_to(states[0], (4, 3))
    for t in range(6):
        x = model.predict(x, plan[:, t], models) + noise[t]
        np.testing.assert_allclose(out[:, t], x, rtol=1e-9, atol=1e-9)


def test_the_default_features_and_model_are_the_papers():
    plain = RandomFourierFeatures(5, 20, 6.0, seed=1)
    explicit = RandomFourierFeatures(5, 20, 6.0, seed=1, scales=np.ones(5), center=np.zeros(5))
    np.testing.assert_array_equal(plain.omega, explicit.omega)
    np.testing.assert_array_equal(plain.offset, explicit.offset)
    assert plain.scales is None and plain.center is None
    space = gym.spaces.Box(-np.inf, np.inf, (5,))
    agent = MPPIAgent(space, gym.spaces.Box(-1.0, 1.0, (1,)), seed=0)
    assert type(agent.model) is RFFDynamicsModel
    assert agent.model.features.bandwidth == 6.0 and agent.model.noise_var == 1e-6


def _normalized_agent(env: gym.Env) -> MPPIAgent:
    """A small announced segment-BAM agent with the normalised model on Pendulum-v1."""
    return MPPIAgent(
        env.observation_space,
        env.action_space,
        memory="bam_segments",
        seed=0,
        announced=True,
        reward="pendulum-swingup",
        dynamics_model="normalized",
        n_features=12,
        horizon=3,
        n_samples=4,
    )


def test_the_agent_option_builds_the_normalised_model():
    env = gym.make("Pendulum-v1", max_episode_steps=8)
    agent = _normalized_agent(env)
    assert isinstance(agent.model, NormalizedRFFDynamicsModel)
    assert agent.model.features.bandwidth == NORMALIZED_DEFAULTS["bandwidth"]
    assert agent.model.noise_var == NORMALIZED_DEFAULTS["noise_var"]
    with pytest.raises(ValueError, match="dynamics_model"):
        MPPIAgent(
            env.observation_space, env.action_space, reward="pendulum-swingup", dynamics_model="x"
        )


def test_save_load_round_trip(tmp_path):
    env = gym.make("Pendulum-v1", max_episode_steps=8)
    agent = _normalized_agent(env)
    obs, _ = drive_trials(env, agent, trials=2)
    assert agent.model.normalized
    path = agent.save(tmp_path / "agent")
    loaded = MPPIAgent.load(path)
    for name in ("input_mean", "input_scales", "target_mean", "target_scale"):
        np.testing.assert_array_equal(getattr(loaded.model, name), getattr(agent.model, name))
    np.testing.assert_array_equal(loaded.model.features.omega, agent.model.features.omega)
    np.testing.assert_array_equal(loaded.act(obs), agent.act(obs))  # both reset at obs


def test_a_restored_model_with_mismatched_features_is_refused():
    states, actions = _trial()
    model = _model()
    model.set_belief(model.family.prior + model.stats(states, actions))
    model.input_mean = model.input_mean + 1.0  # features no longer match the moments
    with pytest.raises(ValueError, match="normalisation"):
        model._check_restored()
    fresh = _model()
    fresh.target_scale = -np.ones(3)
    with pytest.raises(ValueError, match="target_scale"):
        fresh._check_restored()
    unfitted = _model()  # moments a fit never set: predictions would read them
    unfitted.target_mean = np.full(3, 0.5)
    with pytest.raises(ValueError, match="normalisation"):
        unfitted._check_restored()


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"memory": "bam_segments"}, "announced=False with the change detector"),
        ({"memory": "recent_window", "announced": True}, "memory='recent_window'"),
        ({"memory": "bam_segments", "announced": True, "readout_after_steps": 5}, "readout_"),
        ({"memory": "bam_segments", "announced": True, "refresh_every_steps": 10}, "refresh_"),
    ],
)
def test_the_normalised_model_refuses_what_feeds_it_part_of_a_trial(options, named):
    """Review: its moments are fixed by its first datum; the detector and the peers fed it
    10 transitions, and the detector scored raw state changes against standardised ones."""
    env = gym.make("Pendulum-v1", max_episode_steps=8)
    with pytest.raises(ValueError, match=named):
        MPPIAgent(
            env.observation_space,
            env.action_space,
            reward="pendulum-swingup",
            dynamics_model="normalized",
            **options,
        )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"lengthscales": "mad"}, "lengthscales"),
        ({"bandwidth": "mean-pairwise"}, "bandwidth"),
        ({"bandwidth": -1.0}, "bandwidth"),
    ],
)
def test_bad_options_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        _model(**options)


def test_bad_feature_scales_are_refused():
    with pytest.raises(ValueError, match="scales"):
        RandomFourierFeatures(2, 4, 1.0, seed=0, scales=[1.0, 0.0])
    with pytest.raises(ValueError, match="center"):
        RandomFourierFeatures(2, 4, 1.0, seed=0, center=[1.0])
