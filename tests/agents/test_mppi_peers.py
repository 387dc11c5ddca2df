"""The peers of issue 52 (beyond the paper) as MPPI agents: the registry builds them, they
are fed one datum per block of steps inside a trial (the remainder at its end), the CRP
mixture reports its component as ``summary()["world"]``, and save → load continues the
same. Tiny planner: behaviour only."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from agents_testutils import drive, drive_trials

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents import MPPIAgent
from bam_rl.beliefs.peers import BLOCK_STEPS, CRPMixture, RecentWindow
from bam_rl.families import NaturalParams
from bam_rl.harness.registry import AGENTS, MPPI_AGENTS, make_agent

SMALL = {"horizon": 4, "n_samples": 3, "n_features": 12, "reward": "pendulum-swingup"}


def _env(steps=25):
    return gym.make("bam_rl/RecurringPendulumContinual-v0", trials_per_world=1, trial_steps=steps)


@pytest.mark.parametrize(
    ("name", "rule"), [("mppi-recent-window", RecentWindow), ("mppi-crp-mixture", CRPMixture)]
)
def test_registry_builds_the_peers(name, rule):
    assert name in AGENTS and MPPI_AGENTS[name][0] == "learned"
    agent = make_agent(name, _env(), seed=0, **SMALL)
    assert isinstance(agent, MPPIAgent) and isinstance(agent.rule, rule)
    assert not agent.announced  # a continual id announces nothing


def test_blocks_are_fed_inside_the_trial_and_the_rest_at_its_end():
    env = _env(steps=25)  # 2 blocks of 10 inside a trial, 5 transitions at its end
    agent = make_agent("mppi-crp-mixture", env, seed=0, **SMALL)
    data = []
    drive_trials(env, agent, trials=2, each=lambda a: data.append(a.rule.t))
    assert BLOCK_STEPS == 10
    assert data[:25] == [0] * 9 + [1] * 10 + [2] * 5 + [3]
    assert agent.rule.t == 6 and agent.n_trials == 2
    assert sum(agent.rule.counts) == 6
    summary = agent.summary()
    assert summary["world"] == agent.rule.world and summary["n_components"] >= 1
    # the model plans with the current component's posterior
    assert agent.model.belief.allclose(agent.rule.belief)


def test_recent_window_keeps_the_last_blocks_only():
    env = _env(steps=30)
    agent = make_agent("mppi-recent-window", env, seed=0, window_steps=20, **SMALL)
    assert agent.rule.window == 2
    drive_trials(env, agent, trials=2)
    assert len(agent.rule._kept) == 2


def test_peer_options_are_checked():
    with pytest.raises(ValueError, match="window_steps"):
        make_agent("mppi-recent-window", _env(), seed=0, window_steps=3, **SMALL)
    with pytest.raises(ValueError, match="concentration"):
        make_agent("mppi-crp-mixture", _env(), seed=0, concentration=-1.0, **SMALL)


@pytest.mark.parametrize("name", ["mppi-recent-window", "mppi-crp-mixture"])
def test_save_load_continues_identically(tmp_path, name):
    env = _env(steps=25)
    agent = make_agent(name, env, seed=0, **SMALL)
    drive_trials(env, agent, trials=1)
    path = agent.save(tmp_path / "peer.npz")
    loaded = MPPIAgent.load(path)
    actions = []
    for each in (agent, loaded):
        actions.append(drive(_env(steps=25), each, steps=15, seed=5))
    np.testing.assert_array_equal(actions[0], actions[1])
    np.testing.assert_equal(agent.summary(), loaded.summary())


@pytest.mark.parametrize(
    ("name", "where", "field", "value"),
    [
        ("mppi-crp-mixture", "rule", "world", 42),
        ("mppi-crp-mixture", "rule", "concentration", -1.0),
        ("mppi-crp-mixture", "rule", "counts", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]),
        ("mppi-recent-window", "rule", "window", 0),
        ("mppi-recent-window", "_trial", "fed", -7),
        ("mppi-recent-window", "agent", "window_steps", 3),
    ],
)
def test_a_tampered_state_file_is_refused(tmp_path, name, where, field, value):
    """Review of issue 52: the peers' restored fields are checked as their constructors check
    their arguments (each loaded and ran, or failed later, before)."""
    env = _env(steps=25)
    agent = make_agent(name, env, seed=0, **SMALL)
    drive_trials(env, agent, trials=1)
    target = {"rule": agent.rule, "_trial": agent._trial, "agent": agent}[where]
    setattr(target, field, value)
    path = agent.save(tmp_path / "tampered.npz")
    with pytest.raises(ValueError):
        MPPIAgent.load(path)


@pytest.mark.parametrize("name", ["mppi-recent-window", "mppi-crp-mixture"])
def test_a_kept_datum_no_data_could_give_is_refused_at_load(tmp_path, name):
    """``bam-rl drill fuzz`` (3000 cases): a recent window whose kept datum had a precision
    that is not symmetric loaded, then failed at the trial's end."""
    env = _env(steps=25)
    agent = make_agent(name, env, seed=0, **SMALL)
    drive_trials(env, agent, trials=1)
    rule = agent.rule
    kept = rule._kept if name == "mppi-recent-window" else rule._components
    fields = dict(kept[0].fields)
    precision = np.array(fields["precision"])
    precision[0, 1] += 1.0  # finite, but XᵀX is symmetric
    fields["precision"] = precision
    kept[0] = NaturalParams(kept[0].family, fields, kept[0].log_h)
    path = agent.save(tmp_path / "crafted.npz")
    with pytest.raises(ValueError, match="symmetric"):
        MPPIAgent.load(path)
