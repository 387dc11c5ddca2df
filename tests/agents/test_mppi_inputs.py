"""The MPPI agents' inputs and NormalGamma's prior (issue 28, item 8).

Reproducers:

* ``MPPIAgent(..., sampling_var=-1)`` was refused as "noise_var must be > 0" (the agent's
  ``noise_var`` is another argument: its dynamics model's noise);
* an action of 5.0 on the cart-pole's [-1, 1] Box and observations of 1e300 were accepted
  silently by the MPPI agents (the environment's ``step`` already refuses the action);
* ``NormalGamma(mean=1e8)`` was accepted, but reading its prior mean raised.

Where a refusal belongs: the environment refuses an action outside its action space in
``step`` (Gymnasium leaves out-of-space actions undefined; ours raise rather than clip, which
would hide an agent's bug). An agent refuses, in ``reset``/``act``/``observe`` and before it
changes anything, inputs outside the spaces it was built for — actions outside its action
space, observations outside its observation space or beyond what its model computes
(``MAX_STATE_MAGNITUDE``) — as the tracker and bandit agents already refuse counts and arms
out of range: such a transition did not come from the environment the agent was built for.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents.mppi import GroundTruthMPPI, MPPIAgent
from bam_rl.families import NormalGamma
from bam_rl.serialization import _Encoder

SMALL = {"horizon": 4, "n_samples": 3}


def state_of(obj) -> tuple[str, list[bytes]]:
    """Everything an object holds, as the state-file codec sees it (JSON + array bytes)."""
    encoder = _Encoder()
    document = encoder.encode(obj, "root")
    arrays = [encoder.arrays[key].tobytes() for key in sorted(encoder.arrays)]
    return repr(document), arrays


def cartpole():
    return gym.make("bam_rl/GravityCartPole-v0", max_steps=10)


def agents():
    env = cartpole()
    yield MPPIAgent(env.observation_space, env.action_space, memory="bam", seed=0, **SMALL)
    yield GroundTruthMPPI(env, seed=0, **SMALL)


@pytest.mark.parametrize("build", [MPPIAgent, GroundTruthMPPI])
@pytest.mark.parametrize("value", [-1.0, 0.0, float("nan"), [0.4, 0.4]])
def test_sampling_var_is_named_sampling_var(build, value):
    env = cartpole()
    with pytest.raises(ValueError, match="sampling_var") as info:
        if build is MPPIAgent:
            MPPIAgent(env.observation_space, env.action_space, sampling_var=value)
        else:
            GroundTruthMPPI(env, sampling_var=value)
    assert "noise_var" not in str(info.value)


def test_the_environment_refuses_an_action_outside_its_box():
    env = cartpole()
    env.reset(seed=0)
    for action in (5.0, -1.5, np.array([np.nan])):
        with pytest.raises(ValueError, match=r"action.*\[-1, 1\]"):
            env.step(np.atleast_1d(np.asarray(action, dtype=np.float32)))


@pytest.mark.parametrize("index", [0, 1])
def test_agents_refuse_an_out_of_bounds_action_before_changing_anything(index):
    agent = list(agents())[index]
    env = cartpole()
    observation, info = env.reset(seed=0)
    agent.reset(observation, info)
    action = agent.act(observation)
    next_observation, reward, terminated, truncated, info = env.step(action)
    agent.observe(action, reward, next_observation, terminated, truncated, info)
    before = state_of(agent)
    for bad in (np.array([5.0]), np.array([-1.0001]), np.array([0.5, 0.5])):
        with pytest.raises(ValueError, match="action"):
            agent.observe(bad, reward, next_observation, False, False, info)
        with pytest.raises(ValueError, match="action"):  # also at a trial's end
            agent.observe(bad, reward, next_observation, False, True, info)
    assert state_of(agent) == before
    agent.observe(np.array([1.0], np.float32), reward, next_observation, False, False, info)


@pytest.mark.parametrize("index", [0, 1])
@pytest.mark.parametrize(
    "observation",
    [
        np.full(5, 1e300),
        np.array([1e11, 0.0, -1.0, 0.0, 0.0]),
        np.array([0.0, 0.0, 5.0, 0.0, 0.0]),  # cos θ = 5: outside the observation space
        np.array([0.0, 0.0, -1.0, -1.5, 0.0]),
    ],
)
def test_agents_refuse_observations_outside_the_space_or_the_model(index, observation):
    agent = list(agents())[index]
    env = cartpole()
    first, info = env.reset(seed=0)
    agent.reset(first, info)
    before = state_of(agent)
    with pytest.raises(ValueError, match="observation"):
        agent.act(observation)
    with pytest.raises(ValueError, match="observation"):
        agent.observe(np.array([0.0]), 0.0, observation, False, False, info)
    with pytest.raises(ValueError, match="observation"):
        agent.observe(np.array([0.0]), 0.0, observation, False, True, info)
    with pytest.raises(ValueError, match="observation"):
        agent.reset(observation, info)
    assert state_of(agent) == before
    agent.act(first)  # still usable


def test_the_magnitude_bound_is_mujocos_and_the_environment_stays_within_it():
    from bam_rl.agents.mppi import MAX_STATE_MAGNITUDE

    env = cartpole()
    observation, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    largest = 0.0
    for _ in range(10):
        observation, *_ = env.step(rng.uniform(-1, 1, 1).astype(np.float32))
        largest = max(largest, float(np.abs(observation).max()))
    assert largest < MAX_STATE_MAGNITUDE == 1e10


def test_normal_gamma_refuses_a_prior_whose_mean_it_cannot_read():
    with pytest.raises(ValueError, match=r"mean=100000000\.0 is too far from 0"):
        NormalGamma(mean=1e8)
    with pytest.raises(ValueError, match="mean"):
        NormalGamma(mean=-1e8, beta=1e-3)
    model = NormalGamma(mean=1e8, kappa=1e-6)  # the same mean with a weak prior is precise
    assert model.prior.mean[0] == pytest.approx(1e8)


@settings(max_examples=300, deadline=None)
@given(
    mean=st.floats(-1e12, 1e12),
    kappa=st.floats(1e-8, 1e8),
    beta=st.floats(1e-8, 1e8),
)
def test_a_normal_gamma_prior_is_refused_or_usable(mean, kappa, beta):
    """Accepted priors answer every question a belief is asked; the others are refused."""
    try:
        model = NormalGamma(mean=mean, kappa=kappa, alpha=2.0, beta=beta)
    except ValueError as error:
        assert "mean" in str(error)
        return
    prior = model.prior
    assert np.all(np.isfinite(prior.mean)) and np.all(prior.variance > 0)
    assert np.isfinite(model.log_partition(prior))
    assert model.kl(prior, prior) == pytest.approx(0.0, abs=1e-6)
    model.sample(prior, np.random.default_rng(0))
