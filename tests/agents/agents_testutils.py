"""Shared helpers for the agent tests (imported by the test modules of this directory)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents import UCB, UCBAM, BeliefTracker, ThompsonSampling
from bam_rl.agents.klucb import CUSUMKLUCB, GLRKLUCB, KLUCB, MonitoredKLUCB, OracleRestartKLUCB
from bam_rl.agents.passive import DiscountedKLUCB, DiscountedThompson, Exp3S, SlidingWindowKLUCB
from bam_rl.agents.ucbam import SegmentUCBAM
from bam_rl.beliefs import BAM, BOCD, BAMWithChangepoints, ExponentialForgetting, RecursiveBayes
from bam_rl.families import BetaBinomial, NormalKnownVariance
from bam_rl.serialization import FORMAT, read_archive, write_archive

STREAM = ("bam_rl/BinomialStream-v0", {"max_steps": 120})
SWITCHING = ("bam_rl/SwitchingBandit-v0", {"max_steps": 120})
SWITCHING_50 = ("bam_rl/SwitchingBandit50-v0", {"max_steps": 120})


def _piecewise(reward: str, **extra: float) -> tuple[str, dict]:
    """Three arms whose means reverse at step 60 of 120."""
    kwargs = {"means": [[0.2, 0.5, 0.8], [0.8, 0.5, 0.2]], "breakpoints": [60], "reward": reward}
    return "bam_rl/PiecewiseBandit-v0", {**kwargs, **extra, "max_steps": 120}


PIECEWISE_BERNOULLI = _piecewise("bernoulli")
PIECEWISE_GAUSSIAN = _piecewise("gaussian", noise_std=0.25)


def gaussian_model() -> NormalKnownVariance:
    return NormalKnownVariance(mean=0.5, var=0.25, noise_var=0.25**2)


def tracker(rule_name: str, seed: int = 0) -> BeliefTracker:
    model = BetaBinomial(1.0, 1.0)
    rules = {
        "recursive": lambda: RecursiveBayes(model),
        "forgetting": lambda: ExponentialForgetting(model, alpha=0.8),
        "bocd": lambda: BOCD(model, hazard=0.01),
        "bam": lambda: BAM(model, lam=0.0),
        "bam_reg": lambda: BAM(model, lam=0.1),
        "bam_bocd": lambda: BAMWithChangepoints(model, lam=0.0, hazard=0.01),
    }
    return BeliefTracker(rules[rule_name](), n_trials=15, seed=seed)


# name -> (agent factory given the number of arms, environments it supports)
AgentFactory = Callable[[int, int], Any]
BANDIT_AGENTS: dict[str, tuple[AgentFactory, tuple[tuple[str, dict], ...]]] = {
    "ucb": (
        lambda k, seed: UCB(k, seed=seed),
        (SWITCHING, SWITCHING_50, PIECEWISE_BERNOULLI, PIECEWISE_GAUSSIAN),
    ),
    "ucbam": (
        lambda k, seed: UCBAM(k, gaussian_model(), seed=seed),
        (SWITCHING, SWITCHING_50, PIECEWISE_GAUSSIAN),
    ),
    "ucbam_select": (
        lambda k, seed: UCBAM(k, gaussian_model(), seed=seed, fast_readout=False),
        (SWITCHING,),
    ),
    "ucbam_lam": (lambda k, seed: UCBAM(k, gaussian_model(), lam=0.1, seed=seed), (SWITCHING,)),
    "ucbam_capacity": (
        lambda k, seed: UCBAM(k, gaussian_model(), seed=seed, capacity=6),
        (SWITCHING,),
    ),
    "ucbam_bernoulli": (
        lambda k, seed: UCBAM(k, BetaBinomial(), seed=seed),
        (PIECEWISE_BERNOULLI,),
    ),
    "ucbam_segments": (
        lambda k, seed: SegmentUCBAM(k, BetaBinomial(), hazard=0.02, seed=seed),
        (PIECEWISE_BERNOULLI,),
    ),
    "ucbam_segments_gaussian": (
        lambda k, seed: SegmentUCBAM(k, gaussian_model(), hazard=0.02, seed=seed),
        (SWITCHING,),
    ),
}
for _rule in ("recursive", "forgetting", "bocd", "bam", "bam_bocd"):
    BANDIT_AGENTS[f"thompson_gaussian_{_rule}"] = (
        lambda k, seed, rule=_rule: ThompsonSampling.gaussian(k, rule, seed=seed),
        (SWITCHING, PIECEWISE_GAUSSIAN) + ((SWITCHING_50,) if _rule == "recursive" else ()),
    )
    BANDIT_AGENTS[f"thompson_bernoulli_{_rule}"] = (
        lambda k, seed, rule=_rule: ThompsonSampling.bernoulli(k, rule, seed=seed),
        (PIECEWISE_BERNOULLI,),
    )

# the piecewise benchmark's Bernoulli agents (tuned for the 120-step episodes of the test envs)
_TUNING = {"horizon": 120, "n_breakpoints": 2}
_PIECEWISE_AGENTS: dict[str, AgentFactory] = {
    "klucb": lambda k, seed: KLUCB(k, seed=seed),
    "glr_klucb": lambda k, seed: GLRKLUCB(k, **_TUNING, seed=seed),
    "glr_klucb_global": lambda k, seed: GLRKLUCB(k, **_TUNING, local=False, seed=seed),
    "cusum_klucb": lambda k, seed: CUSUMKLUCB(k, **_TUNING, warmup=10, seed=seed),
    "m_klucb": lambda k, seed: MonitoredKLUCB(k, horizon=120, seed=seed),
    "oracle_klucb": lambda k, seed: OracleRestartKLUCB(k, breakpoints=[40, 80], seed=seed),
    "d_klucb": lambda k, seed: DiscountedKLUCB(k, seed=seed),
    "d_klucb_ref": lambda k, seed: DiscountedKLUCB(k, variant="smpybandits-0.9.7", seed=seed),
    "sw_klucb": lambda k, seed: SlidingWindowKLUCB(k, **_TUNING, seed=seed),
    "dts": lambda k, seed: DiscountedThompson(k, seed=seed),
    "dts_ref": lambda k, seed: DiscountedThompson(k, variant="smpybandits-0.9.7", seed=seed),
    "exp3s": lambda k, seed: Exp3S(k, **_TUNING, seed=seed),
}
for _name, _factory in _PIECEWISE_AGENTS.items():
    BANDIT_AGENTS[_name] = (_factory, (PIECEWISE_BERNOULLI,))

TRACKER_RULES = ("recursive", "forgetting", "bocd", "bam", "bam_reg", "bam_bocd")


def make_env(spec: tuple[str, dict]) -> gym.Env:
    env_id, kwargs = spec
    return gym.make(env_id, **kwargs)


def make_agent(name: str, env: gym.Env, seed: int = 0) -> Any:
    """Builds the agent called ``name`` for ``env``."""
    if name.startswith("tracker_"):
        return tracker(name.removeprefix("tracker_"), seed=seed)
    factory, _ = BANDIT_AGENTS[name]
    return factory(int(env.action_space.n), seed)


class Runner:
    """The protocol loop, resumable: ``start`` once, then ``run`` any number of steps.

    At an episode end the environment is reset and (if there is one) the agent told so.
    ``agent=None`` replays given actions on the environment alone (to bring a fresh
    environment to a recorded state).
    """

    def __init__(self, env: gym.Env, agent: Any):
        self.env = env
        self.agent = agent
        self.observation: Any = None
        self.info: dict = {}

    def start(self, seed: int | None = 0) -> Runner:
        self.observation, self.info = self.env.reset(seed=seed)
        if self.agent is not None:
            self.agent.reset(self.observation, self.info)
        return self

    def run(self, steps: int, actions: list | None = None, check_space: bool = True) -> list:
        """Runs ``steps`` steps; returns the actions taken."""
        env, agent = self.env, self.agent
        taken = []
        for step in range(steps):
            action = agent.act(self.observation) if actions is None else actions[step]
            if check_space:
                assert env.action_space.contains(action), (action, env.action_space)
            next_observation, reward, terminated, truncated, info = env.step(action)
            if agent is not None:
                agent.observe(action, reward, next_observation, terminated, truncated, info)
            taken.append(np.copy(action) if isinstance(action, np.ndarray) else action)
            self.observation, self.info = next_observation, info
            if terminated or truncated:
                self.observation, self.info = env.reset()
                if agent is not None:
                    agent.reset(self.observation, self.info)
        return taken


def drive(env: gym.Env, agent: Any, steps: int, seed: int | None = 0) -> list:
    """Starts the environment with ``seed`` and runs the protocol loop for ``steps`` steps."""
    return Runner(env, agent).start(seed).run(steps)


def drive_trials(
    env: gym.Env, agent: Any, trials: int, seed: int | None = 0, each: Callable | None = None
) -> tuple[Any, dict]:
    """Runs ``trials`` whole episodes from ``env.reset(seed=seed)``, the agent reset at each
    start and after the last (``each(agent)`` after every step); returns the observation and
    info the last reset gave."""
    observation, info = env.reset(seed=seed)
    agent.reset(observation, info)
    for _ in range(trials):
        done = False
        while not done:
            action = agent.act(observation)
            observation, reward, terminated, truncated, info = env.step(action)
            agent.observe(action, reward, observation, terminated, truncated, info)
            done = terminated or truncated
            if each is not None:
                each(agent)
        observation, info = env.reset()
        agent.reset(observation, info)
    return observation, info


def assert_crafted_state_file_refused(tmp_path: Path, agent: Any, edit: Callable) -> None:
    """``agent`` saved loads and acts as it does; the same file with ``edit(state, arrays)``
    applied to its document is refused with ``ValueError``."""
    source = tmp_path / "agent.npz"
    agent.save(source)
    loaded = type(agent).load(source)  # the unedited file loads and continues identically
    assert np.array_equal(np.asarray(loaded.act(0)), np.asarray(agent.act(0)))
    document, arrays = read_archive(source, FORMAT, "bam-rl state")
    edit(document["root"]["state"], arrays)
    crafted = write_archive(tmp_path / "crafted.npz", document, arrays)
    with pytest.raises(ValueError):
        type(agent).load(crafted)
