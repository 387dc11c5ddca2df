"""SB3Agent.load constructs only allow-listed classes and keys (issue 14, item 5)."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from stable_baselines3 import DQN, PPO

import bam_rl  # noqa: F401
from bam_rl.agents import SB3Agent

RESULTS_WRITER = "stable_baselines3.common.monitor.ResultsWriter"


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    env = gym.make("bam_rl/GravityCartPole-v0")
    path = tmp_path_factory.mktemp("sb3") / "ppo.npz"
    SB3Agent(PPO("MlpPolicy", env, n_steps=64, policy_kwargs={"net_arch": [8]}, seed=0)).save(path)
    with np.load(path) as archive:
        arrays = {k: archive[k] for k in archive.files}
    document = json.loads(arrays.pop("__json__").tobytes())
    arrays.pop("__digest__", None)  # a crafted file: no digest, the allow-list decides
    return path, document, arrays


def tampered(tmp_path, saved, change) -> object:
    _, document, arrays = saved
    document = json.loads(json.dumps(document))
    change(document)
    path = tmp_path / "tampered.npz"
    np.savez(path, **arrays, __json__=np.frombuffer(json.dumps(document).encode(), dtype=np.uint8))
    return path


def test_results_writer_as_activation_is_refused_without_writing(tmp_path, saved, monkeypatch):
    def evil(document):
        document["policy_kwargs"]["__dict__"]["activation_fn"] = {"__class__": RESULTS_WRITER}

    path = tampered(tmp_path, saved, evil)
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    with pytest.raises(ValueError, match="allow-listed"):
        SB3Agent.load(path)
    assert list(workdir.iterdir()) == []  # no ./.monitor.csv


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("policy_kwargs", "activation_fn"), "torch.optim.adam.Adam"),  # right module, wrong role
        (("policy_kwargs", "optimizer_class"), "torch.nn.modules.activation.ReLU"),
        (("policy_kwargs", "activation_fn"), "torch.nn.modules.module.Module"),
        (("policy_kwargs", "features_extractor_class"), RESULTS_WRITER),
        (("policy_kwargs", "net_arch"), "torch.nn.modules.activation.ReLU"),
        (("hyperparameters", "gamma"), "torch.nn.modules.activation.ReLU"),
    ],
)
def test_classes_outside_their_allow_list_are_refused(tmp_path, saved, where, value):
    section, key = where

    def change(document):
        document[section]["__dict__" if section == "policy_kwargs" else key] = (
            {**document[section]["__dict__"], key: {"__class__": value}}
            if section == "policy_kwargs"
            else {"__class__": value}
        )

    with pytest.raises(ValueError, match="allow-listed"):
        SB3Agent.load(tampered(tmp_path, saved, change))


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("algorithm", "stable_baselines3.common.base_class.BaseAlgorithm"),
        ("algorithm", "stable_baselines3.common.on_policy_algorithm.OnPolicyAlgorithm"),
        ("policy", "stable_baselines3.common.policies.BasePolicy"),
        ("policy", "stable_baselines3.sac.policies.SACPolicy"),  # not one of PPO's policies
    ],
)
def test_algorithms_and_policies_are_exact_classes(tmp_path, saved, key, value):
    with pytest.raises(ValueError, match="refusing to construct"):
        SB3Agent.load(tampered(tmp_path, saved, lambda d: d.__setitem__(key, value)))


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.__setitem__("extra", 1),
        lambda d: d.pop("variables"),
        lambda d: d["hyperparameters"].__setitem__("tensorboard_log", "tb_logs"),
        lambda d: d["hyperparameters"].__setitem__("bogus", 1),
        lambda d: d["policy_kwargs"]["__dict__"].__setitem__("bogus", 1),
        lambda d: d["agent"].__setitem__("bogus", 1),
        lambda d: d["spaces"]["action"].__setitem__("bogus", 1),
        lambda d: d["spaces"]["action"].__setitem__("dtype", "object"),
        lambda d: d.__setitem__("variables", ["policy"]),
        lambda d: d.__setitem__("variables", "log_ent_coef"),
    ],
    ids=[
        "extra",
        "missing",
        "tensorboard",
        "hyper",
        "policy_kwargs",
        "agent",
        "space",
        "dtype",
        "variable",
        "variables-str",
    ],
)
def test_only_the_keys_save_writes_are_accepted(tmp_path, saved, change):
    with pytest.raises(ValueError):
        SB3Agent.load(tampered(tmp_path, saved, change))


def test_allow_listed_files_still_load(tmp_path, saved):
    path, _, _ = saved
    assert type(SB3Agent.load(path).algorithm) is PPO
    env = gym.make("bam_rl/SwitchingBandit-v0", n_arms=3)
    import torch

    dqn = DQN(
        "MlpPolicy",
        env,
        policy_kwargs={
            "net_arch": [8],
            "activation_fn": torch.nn.Tanh,
            "optimizer_class": torch.optim.RMSprop,
        },
        learning_starts=10,
        buffer_size=100,
    )
    SB3Agent(dqn).save(tmp_path / "dqn.npz")
    loaded = SB3Agent.load(tmp_path / "dqn.npz")
    assert loaded.algorithm.policy_kwargs["activation_fn"] is torch.nn.Tanh
    assert loaded.algorithm.policy_kwargs["optimizer_class"] is torch.optim.RMSprop


def test_save_refuses_what_load_would_refuse(tmp_path):
    import torch

    class Custom(torch.nn.ReLU):
        pass

    env = gym.make("bam_rl/SwitchingBandit-v0", n_arms=3)
    dqn = DQN(
        "MlpPolicy",
        env,
        policy_kwargs={"net_arch": [8], "activation_fn": Custom},
        learning_starts=10,
        buffer_size=100,
    )
    with pytest.raises(ValueError, match="cannot save"):
        SB3Agent(dqn).save(tmp_path / "custom.npz")
    assert not (tmp_path / "custom.npz").exists()
