"""The MPPI agents' state files and trial ends (issue 28, items 3, 4, 5 and 8's stale gravity).

Every reproducer here failed on main before the restored-state checks: the crafted files
loaded (and ``planner.n_samples = 0`` then crashed the process in ``mujoco.rollout``), a
refused trial end left the agent refusing every later ``reset``, a trial was stored twice
after a bad ``info["gravity"]``, and ground-truth MPC planned at a stale gravity.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import bam_rl  # registers the environments
from bam_rl.agents.mppi import GroundTruthMPPI, MPPIAgent
from bam_rl.beliefs import BAM
from bam_rl.families import NormalKnownVariance
from bam_rl.serialization import FORMAT, load_object, read_archive, save_object, write_archive

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "fuzz_state_files.py"
del bam_rl


def _fuzz_module():
    spec = importlib.util.spec_from_file_location("fuzz_state_files", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_state_files"] = module
    spec.loader.exec_module(module)
    return module


FUZZ = _fuzz_module()


def _edit(path: Path, out: Path, edit) -> Path:
    """Writes ``path``'s archive with ``edit(document, arrays)`` applied to ``out``."""
    document, arrays = read_archive(path, FORMAT, "bam-rl state")
    edit(document["root"]["state"], arrays)
    return write_archive(out, document, arrays)


@pytest.fixture
def gt_file(tmp_path):
    path = tmp_path / "gt.npz"
    FUZZ.build("gt").save(path)
    return path


@pytest.fixture
def mppi_file(tmp_path):
    path = tmp_path / "mppi.npz"
    FUZZ.build("mppi", "bam").save(path)
    return path


def _set(*keys, value):
    def edit(state, arrays):
        node = state
        for key in keys[:-1]:
            node = node[key]["state"] if "__object__" in node[key] else node[key]
        node[keys[-1]] = value

    return edit


def _set_array(*keys, value):
    def edit(state, arrays):
        node = state
        for key in keys:
            node = node[key]["state"] if "__object__" in node[key] else node[key]
        arrays[node["__array__"]] = np.asarray(value, dtype=np.float64)

    return edit


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_set("planner", "n_samples", value=0), "n_samples"),
        (_set("planner", "horizon", value=10**9), "horizon"),
        (_set("planner", "temperature", value=-1.0), "temperature"),
        (_set("dynamics", "n_threads", value=10**6), "n_threads"),
        (_set("dynamics", "model_path", value="/etc/passwd"), "model_path"),
        (_set("dynamics", "model_path", value="/nonexistent.xml"), "model_path"),
        (_set("dynamics", "gravity", value={"__float__": "nan"}), "gravity"),
        (_set("dynamics", "frame_skip", value=0), "frame_skip"),
        (_set("rng", value=1.5), "rng"),
        (_set_array("planner", "sampling_var", value=[-1.0]), "sampling_var"),
        (_set_array("planner", "plan_actions", value=np.full((4, 1), 7.0)), "plan_actions"),
    ],
)
def test_a_crafted_ground_truth_file_is_refused_at_load(gt_file, tmp_path, edit, message):
    bad = _edit(gt_file, tmp_path / "bad.npz", edit)
    with pytest.raises(ValueError, match=message):
        GroundTruthMPPI.load(bad)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_set("memory", value="bogus"), "memory"),
        (_set("announced", value=1), "announced"),
        (_set("planner", "n_samples", value=0), "n_samples"),
        (_set("planner", "temperature", value=-1.0), "temperature"),
        (_set("planner", "reward", "cos_index", value=99), "reward"),
        (_set("n_trials", value=7), "trial"),
        (_set("state_dim", value=4), "state_dim"),
        (_set("model", "planning_dtype", value="float16"), "planning_dtype"),
        (_set("model", "noise_var", value=2.0), "noise_var"),
        (_set_array("model", "features", "omega", value=np.zeros((8, 6))), "omega"),
        (_set("rule", "lam", value=-1.0), "lam"),
        (_set("rule", "t", value=-3), "t"),
    ],
)
def test_a_crafted_agent_file_is_refused_at_load(mppi_file, tmp_path, edit, message):
    bad = _edit(mppi_file, tmp_path / "bad.npz", edit)
    with pytest.raises(ValueError, match=message):
        MPPIAgent.load(bad)


def test_a_belief_that_is_not_the_rules_is_refused(mppi_file, tmp_path):
    def edit(state, arrays):
        key = state["model"]["state"]["belief"]["fields"]["__dict__"]["B"]["__array__"]
        arrays[key] = arrays[key] + 1.0

    with pytest.raises(ValueError, match="belief"):
        MPPIAgent.load(_edit(mppi_file, tmp_path / "bad.npz", edit))


def test_random_mutations_are_refused_or_give_a_working_agent():
    counts = FUZZ.fuzz(60, seed=1)
    assert sum(counts.values()) == 60
    assert not [key for key in counts if key.startswith("error")], counts
    assert counts["refused"] > 0 and counts["identical"] > 0


def _small_agent(env):
    return MPPIAgent(
        env.observation_space, env.action_space, memory="bam", seed=0, horizon=3, n_samples=2
    )


def _one_step(env, agent, observation):
    action = agent.act(observation)
    next_observation, reward, _, _, info = env.step(action)
    return action, reward, next_observation, info


def test_a_refused_observation_does_not_leave_the_agent_stuck():
    env = gym.make("bam_rl/GravityCartPole-v0", max_steps=5)
    agent = _small_agent(env)
    observation, info = env.reset(seed=0)
    agent.reset(observation, info)
    action, reward, observation, info = _one_step(env, agent, observation)
    agent.observe(action, reward, observation, False, False, info)
    with pytest.raises(ValueError, match="next_observation"):
        agent.observe(np.zeros(1), 0.0, np.full(5, 1e200), False, True, {})
    observation, info = env.reset(seed=1)
    agent.reset(observation, info)  # ends the pending trial: it was not refused
    agent.reset(observation, info)
    assert agent.n_trials == 1 == len(agent.rule.memory)


def test_a_bad_gravity_label_is_refused_before_the_trial_is_stored():
    env = gym.make("bam_rl/GravityCartPole-v0", max_steps=5)
    agent = _small_agent(env)
    observation, info = env.reset(seed=0)
    agent.reset(observation, info)
    action, reward, next_observation, info = _one_step(env, agent, observation)
    for label in ("heavy", float("nan"), -9.81, True):
        with pytest.raises(ValueError, match=r'info\["gravity"\]'):
            agent.observe(action, reward, next_observation, False, True, {"gravity": label})
    assert agent.n_trials == 0 and len(agent.rule.memory) == 0
    agent.observe(action, reward, next_observation, False, True, info)
    observation, info = env.reset(seed=1)
    agent.reset(observation, info)
    assert agent.n_trials == 1 == len(agent.rule.memory)
    assert agent.trial_gravities == [info["gravity"]]


def test_a_trial_the_rule_refuses_is_dropped_and_the_agent_goes_on():
    env = gym.make("bam_rl/GravityCartPole-v0", max_steps=5)
    agent = _small_agent(env)
    observation, info = env.reset(seed=0)
    agent.reset(observation, info)
    action, reward, next_observation, info = _one_step(env, agent, observation)
    agent.observe(action, reward, next_observation, False, False, info)
    agent._last_info = {"gravity": "heavy"}  # as a crafted state could hold
    with pytest.raises(ValueError, match="dropped"):
        agent.reset(observation, info)
    agent.reset(observation, info)  # not stuck
    assert agent.n_trials == 0 and len(agent.rule.memory) == 0


def test_ground_truth_needs_the_gravity_at_reset_and_follows_it():
    env = gym.make("bam_rl/GravityCartPole-v0", max_steps=5)
    agent = GroundTruthMPPI(env, seed=0, horizon=3, n_samples=2)
    observation, info = env.reset(seed=0)
    agent.reset(observation, {**info, "gravity": 5.0})
    assert agent.dynamics.gravity == 5.0
    with pytest.raises(ValueError, match=r'info\["gravity"\] is required'):
        agent.reset(observation, {})
    agent.reset(observation, info)
    action, reward, next_observation, _ = _one_step(env, agent, observation)
    agent.observe(action, reward, next_observation, False, False, {"gravity": 12.0})
    assert agent.dynamics.gravity == 12.0
    agent.observe(action, reward, next_observation, False, False, {})  # keeps the trial's
    assert agent.dynamics.gravity == 12.0


def _bounded_rule(tmp_path):
    rule = BAM(NormalKnownVariance(), capacity=3)
    rng = np.random.default_rng(0)
    for value in rng.normal(size=6):
        rule.update(rule.model.stats(np.full(4, value)))
    path = tmp_path / "rule.npz"
    save_object(rule, path)
    return rule, path


def test_a_bounded_memory_restores_identically_and_refuses_a_forged_distance(tmp_path):
    rule, path = _bounded_rule(tmp_path)
    loaded = load_object(path)
    datum = rule.model.stats(np.full(4, 0.3))
    assert np.array_equal(
        rule.update(datum).fields["precision_mean"],
        loaded.update(datum).fields["precision_mean"],
    )

    def forge(state, arrays):
        memory = state["memory"]["state"]
        key = memory["_distances"]["__array__"]
        arrays[key] = arrays[key].copy()
        arrays[key][0, 1] = arrays[key][1, 0] = 0.0

    with pytest.raises(ValueError, match="distance"):
        load_object(_edit(path, tmp_path / "bad.npz", forge))


def test_a_forged_run_length_posterior_is_refused(tmp_path):
    from bam_rl.bocd import ChangepointDetector

    detector = ChangepointDetector(NormalKnownVariance(), hazard=0.1)
    for value in (0.0, 0.1, 5.0, 5.1):
        detector.update(detector.model.stats(np.array([value])))
    path = tmp_path / "detector.npz"
    save_object(detector, path)
    assert np.array_equal(
        load_object(path).run_length_probabilities, detector.run_length_probabilities
    )

    def forge(state, arrays):
        key = state["_log_post"]["__array__"]
        arrays[key] = arrays[key] + 1.0

    with pytest.raises(ValueError, match="sum to 1"):
        load_object(_edit(path, tmp_path / "bad.npz", forge))


def test_a_planner_saved_with_the_old_noise_var_name_loads(gt_file, tmp_path):
    """Issue 25 renamed MPPI's ``noise_var`` (the action-sampling variance) ``sampling_var``;
    files written before keep loading, and act as they did."""

    def rename(state, arrays):
        planner = state["planner"]["state"]
        planner["noise_var"] = planner.pop("sampling_var")
        planner["noise_std"] = planner.pop("sampling_std")

    old = _edit(gt_file, tmp_path / "old.npz", rename)
    assert FUZZ.play(GroundTruthMPPI.load(old)) == FUZZ.play(GroundTruthMPPI.load(gt_file))
