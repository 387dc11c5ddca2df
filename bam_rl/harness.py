"""Rollouts, a registry of named agents, and resumable parallel sweeps (DESIGN §8).

One run is one agent acting in one environment::

    import bam_rl
    from bam_rl.harness import make_agent, rollout

    env = gymnasium.make("bam_rl/SwitchingBandit-v0")
    agent = make_agent("thompson-bam", env, seed=1)
    frame = rollout(env, agent, n_steps=2_000, seed=0)   # tidy: one row per step

A sweep is a grid of (method × config × seed) runs, executed serially, with joblib/loky on
the local cores or on a Ray cluster; every finished run is written to its own file, so an
interrupted sweep resumes where it stopped::

    from bam_rl.harness import make_grid, run_many

    grid = make_grid(["ucb", "thompson-bam"],
                     {"cfg0": ("bam_rl/SwitchingBandit-v0", {"config_seed": 0})},
                     seeds=5, n_steps=10_000)
    frame = run_many(grid, backend="loky", n_jobs=2, out_dir="runs/bandits")

Seeds (common random numbers): the run with seed index ``i`` of config ``c`` under root seed
``r`` draws its environment and agent seeds from
``numpy.random.SeedSequence([r, zlib.crc32(c.encode()), i])``. They depend on the config
*label* (hashed with CRC-32, which, unlike Python's ``hash``, is the same in every process)
and not on the method, so every method faces exactly the same environment randomness — and
its agent starts from the same seed — for a given (config, seed index).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import operator
import os
import re
import uuid
import warnings
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd

import envs as _envs
from agents.base import BaseAgent

__all__ = [
    "AGENTS",
    "BACKENDS",
    "ENV_IDS",
    "INFO_FIELDS",
    "SORT_COLUMNS",
    "RandomAgent",
    "RunSpec",
    "check_agent_name",
    "check_env_id",
    "execute_run",
    "make_agent",
    "make_grid",
    "read_run",
    "rollout",
    "run_many",
]

#: Scalar ``info`` entries copied into the rollout frame (when the environment provides them).
INFO_FIELDS: tuple[str, ...] = (
    "regret", "optimal_action", "theta", "t", "gravity", "trial", "context_changed",
)

#: The environment ids this package registers.
ENV_IDS: tuple[str, ...] = tuple(_envs.ENV_IDS)

#: Execution backends of :func:`run_many`.
BACKENDS: tuple[str, ...] = ("serial", "loky", "ray")

#: Sort order of the frame :func:`run_many` returns.
SORT_COLUMNS: tuple[str, ...] = ("method", "config", "seed", "step")

_SUMMARY_PREFIX = "belief_"
_PROGRESS_CHUNK = 1024


# ----------------------------------------------------------------------------- rollout
def _check_count(name: str, value: Any) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a positive int (>= 1), got {value!r}")
    return int(value)


def _check_budget(n_steps: Any, n_episodes: Any) -> tuple[int | None, int | None]:
    if (n_steps is None) == (n_episodes is None):
        raise ValueError(
            "give exactly one of n_steps and n_episodes, got "
            f"n_steps={n_steps!r}, n_episodes={n_episodes!r}"
        )
    if n_steps is not None:
        return _check_count("n_steps", n_steps), None
    return None, _check_count("n_episodes", n_episodes)


def _is_scalar(value: Any) -> bool:
    if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        return True
    return isinstance(value, np.ndarray) and value.ndim == 0


def _column(values: list[Any]) -> np.ndarray:
    """A list of per-step scalars as an array; ``None`` entries become NaN."""
    try:
        array = np.asarray(values)
    except (TypeError, ValueError):
        array = np.empty(len(values), dtype=object)
        array[:] = values
    if array.dtype == object:
        with contextlib.suppress(TypeError, ValueError):
            array = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    return array


def _action_columns(actions: list[Any]) -> dict[str, np.ndarray]:
    """``action`` for one number per step, ``action_0, action_1, ...`` for vector actions."""
    try:
        array = np.asarray(actions)
    except ValueError:  # ragged
        array = np.empty(len(actions), dtype=object)
        array[:] = [json.dumps(np.asarray(a).tolist()) for a in actions]
        return {"action": array}
    if array.dtype == object:
        return {"action": _column(actions)}
    if array.ndim == 1:
        return {"action": array}
    flat = array.reshape(len(actions), -1)
    if flat.shape[1] == 1:
        return {"action": flat[:, 0]}
    return {f"action_{i}": flat[:, i] for i in range(flat.shape[1])}


def _default_config(env: Any) -> str:
    spec = getattr(env, "spec", None)
    return "" if spec is None or spec.id is None else str(spec.id)


def rollout(
    env: gym.Env | str,
    agent: Any,
    n_steps: int | None = None,
    n_episodes: int | None = None,
    seed: int | None = None,
    method: str | None = None,
    config: str | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """Runs ``agent`` in ``env`` and returns one tidy row per environment step.

    The environment is reset once with ``seed``; later episodes start with ``env.reset()``
    without a seed, so the environment's generator continues (the whole run is a function of
    ``seed`` and the agent's own seed). Each step is ``act → step → observe``; after a
    terminated or truncated step the next episode begins (``env.reset()``, ``agent.reset``)
    unless the budget is spent.

    Columns, in order:

    * ``method``, ``config``, ``seed`` — labels (``method`` defaults to the agent's class name,
      ``config`` to the environment id);
    * ``episode`` (0-based), ``step`` (0-based over the whole run), ``episode_step``;
    * the action: ``action`` when it is one number (a ``Discrete`` arm, a one-element ``Box``),
      otherwise ``action_0, action_1, ...`` (flattened);
    * ``reward``, ``terminated``, ``truncated``;
    * the scalar ``info`` entries of :data:`INFO_FIELDS` the environment reports (e.g.
      ``regret``, ``optimal_action`` for bandits, ``theta``, ``t`` for the stream, ``gravity``,
      ``trial``, ``context_changed`` for the cart-pole); the set is fixed by the first step's
      ``info`` and a later missing entry is NaN;
    * the agent's ``summary()`` entries, prefixed ``belief_``, read after ``observe`` (so they
      describe the belief *after* the step's data); the keys are fixed by the first call and an
      agent whose first summary is empty is not asked again.

    Args:
        env: An environment or a registered id (then made with ``gymnasium.make`` and closed
            afterwards).
        agent: Anything with ``reset(observation, info)``, ``act(observation)`` and
            ``observe(action, reward, next_observation, terminated, truncated, info)``.
        n_steps: Number of environment steps (across episodes).
        n_episodes: Number of whole episodes. Give exactly one of the two.
        seed: Seed of the first ``env.reset``.
        method: Label of the agent (column ``method``).
        config: Label of the environment configuration (column ``config``).
        progress: Show a tqdm progress bar.

    Returns:
        The rollout as a :class:`pandas.DataFrame`, one row per step.

    Raises:
        ValueError: Unless exactly one of ``n_steps``/``n_episodes`` is a positive int.
    """
    n_steps, n_episodes = _check_budget(n_steps, n_episodes)
    if seed is not None:
        if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
            raise ValueError(f"seed must be None or an int, got {seed!r}")
        seed = int(seed)
    for name, label in (("method", method), ("config", config)):
        if label is not None and not isinstance(label, str):
            raise ValueError(f"{name} must be a string or None, got {label!r}")
    owns_env = isinstance(env, str)
    if owns_env:
        env = gym.make(env)
    try:
        columns = _rollout_columns(env, agent, n_steps, n_episodes, seed, progress)
    finally:
        if owns_env:
            env.close()
    method = type(agent).__name__ if method is None else method
    config = _default_config(env) if config is None else config
    return _rollout_frame(columns, method, config, seed)


def _rollout_columns(
    env: gym.Env, agent: Any, n_steps: int | None, n_episodes: int | None, seed: int | None,
    progress: bool,
) -> dict[str, Any]:
    """The hot loop.

    Per step it only appends scalars to lists (flat lists for the ``info`` and summary values,
    reshaped afterwards): scalars are not tracked by the garbage collector, so a long rollout
    does not trigger ever longer collections, and no container is kept per step.
    """
    from tqdm.auto import tqdm

    act, observe, step, reset = agent.act, agent.observe, env.step, env.reset
    summary = getattr(agent, "summary", None)
    if not callable(summary):
        summary = None
    actions: list[Any] = []
    rewards: list[Any] = []
    terminateds: list[bool] = []
    truncateds: list[bool] = []
    info_flat: list[Any] = []
    summary_flat: list[Any] = []
    add_action, add_reward, add_terminated, add_truncated = (
        actions.append, rewards.append, terminateds.append, truncateds.append)
    add_info, add_summary = info_flat.extend, summary_flat.extend
    ends: list[int] = []  # global step indices that ended an episode
    info_keys: tuple[str, ...] | None = None
    summary_keys: tuple[str, ...] = ()
    get_info: Callable[[dict[str, Any]], tuple[Any, ...]] = _getter(())
    get_summary: Callable[[dict[str, Any]], tuple[Any, ...]] = _getter(())

    limit = n_steps if n_steps is not None else math.inf
    bar = tqdm(total=n_steps if n_steps is not None else n_episodes, disable=not progress,
               desc="steps" if n_steps is not None else "episodes", leave=False)
    observation, info = reset(seed=seed)
    agent.reset(observation, info)
    episodes = 0
    i = 0
    try:
        while i < limit:
            action = act(observation)
            add_action(action.copy() if type(action) is np.ndarray else action)
            next_observation, reward, terminated, truncated, info = step(action)
            observe(action, reward, next_observation, terminated, truncated, info)
            add_reward(reward)
            add_terminated(terminated)
            add_truncated(truncated)
            if info_keys is None:
                info_keys = tuple(k for k in INFO_FIELDS if k in info and _is_scalar(info[k]))
                get_info = _getter(info_keys)
            try:
                add_info(get_info(info))
            except KeyError:
                add_info([info.get(k) for k in info_keys])
            if summary is not None:
                belief = summary()
                if i == 0:
                    summary_keys = tuple(belief)
                    get_summary = _getter(summary_keys)
                    if not summary_keys:
                        summary = None
                try:
                    add_summary(get_summary(belief))
                except KeyError:
                    add_summary([belief.get(k, np.nan) for k in summary_keys])
            i += 1
            if progress and n_steps is not None and i % _PROGRESS_CHUNK == 0:
                bar.update(_PROGRESS_CHUNK)
            if terminated or truncated:
                ends.append(i - 1)
                episodes += 1
                if progress and n_episodes is not None:
                    bar.update(1)
                if (n_episodes is not None and episodes >= n_episodes) or i >= limit:
                    break
                observation, info = reset()
                agent.reset(observation, info)
            else:
                observation = next_observation
    finally:
        if progress and n_steps is not None:
            bar.update(i % _PROGRESS_CHUNK)
        bar.close()
    info_keys = info_keys or ()
    return {
        "actions": actions, "rewards": rewards, "terminated": terminateds,
        "truncated": truncateds, "ends": ends,
        "info": {k: info_flat[j::len(info_keys)] for j, k in enumerate(info_keys)},
        "summary": {k: summary_flat[j::len(summary_keys)] for j, k in enumerate(summary_keys)},
    }


def _getter(keys: tuple[str, ...]) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """``mapping -> tuple of the values at keys`` (``KeyError`` if one is missing)."""
    if not keys:
        return lambda mapping: ()
    if len(keys) == 1:
        key = keys[0]
        return lambda mapping: (mapping[key],)
    return operator.itemgetter(*keys)


def _rollout_frame(columns: dict[str, Any], method: str, config: str, seed: int | None
                   ) -> pd.DataFrame:
    n = len(columns["rewards"])
    step = np.arange(n, dtype=np.int64)
    episode = np.zeros(n, dtype=np.int64)
    ends = np.asarray(columns["ends"], dtype=np.int64)
    starts = np.concatenate(([0], ends + 1))
    starts = starts[starts < n]
    if ends.size:
        bumps = np.zeros(n + 1, dtype=np.int64)
        np.add.at(bumps, ends + 1, 1)
        episode = np.cumsum(bumps[:n])
    episode_step = step - starts[episode]
    data: dict[str, Any] = {
        "seed": (np.full(n, seed, dtype=np.int64) if seed is not None
                 else pd.array([None] * n, dtype="Int64")),
        "episode": episode,
        "step": step,
        "episode_step": episode_step,
    }
    data.update(_action_columns(columns["actions"]))
    data["reward"] = np.fromiter(columns["rewards"], dtype=np.float64, count=n)
    data["terminated"] = np.fromiter(columns["terminated"], dtype=bool, count=n)
    data["truncated"] = np.fromiter(columns["truncated"], dtype=bool, count=n)
    for key, values in columns["info"].items():
        data[key] = _column(values)
    for key, values in columns["summary"].items():
        data[_SUMMARY_PREFIX + key] = _column(values)
    frame = pd.DataFrame(data, index=pd.RangeIndex(n))
    # label columns broadcast from a scalar: far cheaper than converting n Python strings
    frame.insert(0, "config", config)
    frame.insert(0, "method", method)
    return frame


# ---------------------------------------------------------------------------- agents
class RandomAgent(BaseAgent):
    """Acts uniformly at random in a ``Discrete`` or ``Box`` action space (a baseline).

    ``Box`` dimensions with infinite bounds are drawn from a standard normal (shifted to the
    finite bound, if one is finite). The agent keeps only numbers and its generator, so it
    saves and loads like every :class:`~agents.base.BaseAgent`.

    Args:
        action_space: The environment's action space (``Discrete`` or ``Box``).
        seed: Seed of the agent's generator.

    Raises:
        ValueError: For other kinds of action space.
    """

    def __init__(self, action_space: gym.Space, seed: int | None = None):
        super().__init__(seed)
        if isinstance(action_space, gym.spaces.Discrete):
            self.kind = "discrete"
            self.n = int(action_space.n)
            self.start = int(action_space.start)
        elif isinstance(action_space, gym.spaces.Box):
            self.kind = "box"
            self.low = np.asarray(action_space.low, dtype=np.float64)
            self.high = np.asarray(action_space.high, dtype=np.float64)
            self.dtype = np.dtype(action_space.dtype).name
        else:
            raise ValueError(
                "RandomAgent supports Discrete and Box action spaces, got "
                f"{type(action_space).__name__}"
            )

    def act(self, observation: Any) -> Any:
        """Returns a uniformly random action (an ``np.int64`` arm or a ``Box`` array)."""
        if self.kind == "discrete":
            return np.int64(self.start + self.rng.integers(self.n))
        low, high = self.low, self.high
        bounded = np.isfinite(low) & np.isfinite(high)
        action = self.rng.standard_normal(low.shape)
        action = np.where(np.isfinite(low), low + np.abs(action), action)
        action = np.where(~np.isfinite(low) & np.isfinite(high), high - np.abs(action), action)
        uniform = self.rng.uniform(np.where(bounded, low, 0.0), np.where(bounded, high, 1.0))
        action = np.where(bounded, uniform, action)
        return np.clip(action, low, high).astype(self.dtype)

    def observe(self, action: Any, reward: float, next_observation: Any, terminated: bool,
                truncated: bool, info: dict[str, Any]) -> None:
        """Learns nothing."""


def _n_arms(env: gym.Env, name: str) -> int:
    space = env.action_space
    if not isinstance(space, gym.spaces.Discrete):
        raise ValueError(
            f"agent {name!r} needs a bandit with a Discrete action space, got {space!r}"
        )
    return int(space.n)


def _n_trials(env: gym.Env, name: str) -> int:
    n = getattr(env.unwrapped, "n", None)
    if n is None:
        space = env.observation_space
        if not isinstance(space, gym.spaces.Discrete):
            raise ValueError(
                f"agent {name!r} tracks a Binomial stream (Discrete counts 0..n), got "
                f"observation space {space!r}"
            )
        n = int(space.n) - 1
    return int(n)


def _bernoulli_arms(env: gym.Env) -> bool:
    """Whether the bandit pays 0/1 rewards (``PiecewiseBandit(reward="bernoulli")``)."""
    return getattr(env.unwrapped, "reward", None) == "bernoulli"


def _gaussian_kwargs(env: gym.Env, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Gaussian-arm defaults: the environment's reward noise (the paper's 0.25)."""
    noise_std = getattr(env.unwrapped, "noise_std", None)
    return {"noise_std": 0.25 if not noise_std else float(noise_std), **kwargs}


def build_random(env: gym.Env, seed: int | None = None, **kwargs: Any) -> RandomAgent:
    """Uniformly random actions (any ``Discrete``/``Box`` environment)."""
    if kwargs:
        raise ValueError(f"agent 'random' got unexpected keyword arguments {sorted(kwargs)}")
    return RandomAgent(env.action_space, seed=seed)


def build_ucb(env: gym.Env, seed: int | None = None, **kwargs: Any) -> Any:
    """UCB on a bandit (``n_arms`` from the action space)."""
    from agents.bandits import UCB

    return UCB(n_arms=_n_arms(env, "ucb"), seed=seed, **kwargs)


def _thompson(rule: str, name: str, env: gym.Env, seed: int | None,
              kwargs: dict[str, Any]) -> Any:
    from agents.bandits import ThompsonSampling

    n_arms = _n_arms(env, name)
    if _bernoulli_arms(env):
        return ThompsonSampling.bernoulli(n_arms, rule, seed=seed, **kwargs)
    return ThompsonSampling.gaussian(n_arms, rule, seed=seed, **_gaussian_kwargs(env, kwargs))


def build_thompson(env: gym.Env, seed: int | None = None, **kwargs: Any) -> Any:
    """Thompson sampling with recursive Bayes per arm.

    Gaussian arms with known noise (the environment's ``noise_std``, 0.25 in the paper;
    ``prior_mean``, ``prior_var`` as :meth:`agents.bandits.ThompsonSampling.gaussian`), or
    Beta-Bernoulli arms on a Bernoulli bandit.
    """
    return _thompson("recursive", "thompson", env, seed, kwargs)


def build_thompson_forgetting(env: gym.Env, seed: int | None = None, **kwargs: Any) -> Any:
    """Thompson sampling with exponential forgetting per arm (``forgetting`` 0.8)."""
    return _thompson("forgetting", "thompson-forgetting", env, seed,
                     {"forgetting": 0.8, **kwargs})


def build_thompson_bocd(env: gym.Env, seed: int | None = None, **kwargs: Any) -> Any:
    """Thompson sampling with BOCD per arm (Mellor & Shapiro; ``hazard`` 0.016)."""
    return _thompson("bocd", "thompson-bocd", env, seed, {"hazard": 0.016, **kwargs})


def build_thompson_bam(env: gym.Env, seed: int | None = None, **kwargs: Any) -> Any:
    """Thompson sampling with BAM per arm (``lam`` 0, greedy readout)."""
    return _thompson("bam", "thompson-bam", env, seed, {"lam": 0.0, **kwargs})


def build_ucbam(env: gym.Env, seed: int | None = None, **kwargs: Any) -> Any:
    """UCBAM (App. D.4, Alg. 3; ``lam`` 0): Gaussian arms, or Beta-Bernoulli arms."""
    from agents.bandits import UCBAM
    from bam_rl.families import BetaBinomial

    n_arms = _n_arms(env, "ucbam")
    if _bernoulli_arms(env):
        lam = kwargs.pop("lam", 0.0)
        model = BetaBinomial(alpha=kwargs.pop("prior_alpha", 1.0),
                             beta=kwargs.pop("prior_beta", 1.0))
        if kwargs:
            raise ValueError(f"agent 'ucbam' got unexpected keyword arguments {sorted(kwargs)}")
        return UCBAM(n_arms, model, lam=lam, seed=seed)
    return UCBAM.gaussian(n_arms, seed=seed, **_gaussian_kwargs(env, kwargs))


def _tracker(rule: str, name: str, env: gym.Env, seed: int | None,
             kwargs: dict[str, Any]) -> Any:
    from agents.bandits import make_rule
    from agents.tracking import BeliefTracker
    from bam_rl.families import BetaBinomial

    n_trials = _n_trials(env, name)
    model = BetaBinomial(alpha=kwargs.pop("prior_alpha", 1.0), beta=kwargs.pop("prior_beta", 1.0))
    return BeliefTracker(make_rule(model, rule, **kwargs), n_trials=n_trials, seed=seed)


def build_tracker_recursive(env: gym.Env, seed: int | None = None, **kwargs: Any) -> Any:
    """Beta-Binomial(1, 1) tracker of the stream (``n`` trials from the env), recursive Bayes."""
    return _tracker("recursive", "tracker-recursive", env, seed, dict(kwargs))


def build_tracker_forgetting(env: gym.Env, seed: int | None = None, **kwargs: Any) -> Any:
    """Beta-Binomial(1, 1) tracker with exponential forgetting (``forgetting`` 0.8)."""
    return _tracker("forgetting", "tracker-forgetting", env, seed,
                    {"forgetting": 0.8, **kwargs})


def build_tracker_bocd(env: gym.Env, seed: int | None = None, **kwargs: Any) -> Any:
    """Beta-Binomial(1, 1) tracker with BOCD (``hazard`` 1/100)."""
    return _tracker("bocd", "tracker-bocd", env, seed, {"hazard": 1 / 100, **kwargs})


def build_tracker_bam(env: gym.Env, seed: int | None = None, **kwargs: Any) -> Any:
    """Beta-Binomial(1, 1) tracker with BAM (``lam`` 0, greedy readout)."""
    return _tracker("bam", "tracker-bam", env, seed, {"lam": 0.0, **kwargs})


def build_tracker_bam_reg(env: gym.Env, seed: int | None = None, **kwargs: Any) -> Any:
    """Beta-Binomial(1, 1) tracker with regularised BAM (``lam`` 0.1)."""
    return _tracker("bam", "tracker-bam-reg", env, seed, {"lam": 0.1, **kwargs})


#: Named agent builders: ``AGENTS[name](env, seed, **kwargs) -> agent``. Module-level
#: functions, so they pickle (loky, Ray). Keyword arguments override the paper's defaults:
#: ``forgetting`` (0.8), ``hazard`` (0.016 bandits, 1/100 stream), ``lam`` (0; 0.1 for
#: ``tracker-bam-reg``), ``method`` (``"greedy"``), ``noise_std`` (the env's, 0.25),
#: ``prior_mean``/``prior_var`` (Gaussian arms), ``prior_alpha``/``prior_beta`` (Beta priors).
AGENTS: dict[str, Callable[..., Any]] = {
    "ucb": build_ucb,
    "thompson": build_thompson,
    "thompson-forgetting": build_thompson_forgetting,
    "thompson-bocd": build_thompson_bocd,
    "thompson-bam": build_thompson_bam,
    "ucbam": build_ucbam,
    "tracker-recursive": build_tracker_recursive,
    "tracker-forgetting": build_tracker_forgetting,
    "tracker-bocd": build_tracker_bocd,
    "tracker-bam": build_tracker_bam,
    "tracker-bam-reg": build_tracker_bam_reg,
    "random": build_random,
}


def check_agent_name(name: Any) -> str:
    """Returns ``name`` if it is a key of :data:`AGENTS`, else raises ``ValueError``."""
    if not isinstance(name, str) or name not in AGENTS:
        raise ValueError(f"unknown agent {name!r}; accepted agents: {', '.join(AGENTS)}")
    return name


def check_env_id(env_id: Any) -> str:
    """Returns ``env_id`` if Gymnasium knows it, else raises ``ValueError`` listing ours."""
    if not isinstance(env_id, str) or env_id not in gym.registry:
        raise ValueError(
            f"unknown environment {env_id!r}; accepted environments: {', '.join(ENV_IDS)} "
            "(or any other registered Gymnasium id)"
        )
    return env_id


def make_agent(name: str, env: gym.Env, seed: int | None = None, **kwargs: Any) -> Any:
    """Builds the agent registered as ``name`` for ``env``.

    Args:
        name: A key of :data:`AGENTS`.
        env: The environment the agent will act in (sizes are read from its spaces).
        seed: The agent's seed.
        **kwargs: Overrides of the builder's defaults.

    Raises:
        ValueError: For an unknown name (the message lists the accepted ones), or an agent
            that does not fit the environment.
    """
    return AGENTS[check_agent_name(name)](env, seed, **kwargs)


# ---------------------------------------------------------------------------- sweeps
def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: an agent, an environment configuration and a seed index.

    Args:
        method: Label of the method (column ``method``); also the agent name unless ``agent``
            is given.
        env_id: Registered environment id.
        env_kwargs: Keyword arguments of ``gymnasium.make``.
        agent_kwargs: Keyword arguments of the agent builder.
        config: Label of the environment configuration (column ``config``); it seeds the run.
        seed_index: Index of the seed, ``0, 1, ...`` (column ``seed_index``).
        n_steps: Steps to run, or
        n_episodes: episodes to run (exactly one).
        root_seed: Root of every seed of the sweep.
        agent: Registered agent name when it differs from ``method`` (e.g. two settings of
            one agent under two labels).
    """

    method: str
    env_id: str
    env_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    agent_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    config: str = ""
    seed_index: int = 0
    n_steps: int | None = None
    n_episodes: int | None = None
    root_seed: int = 0
    agent: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.method, str) or not self.method:
            raise ValueError(f"method must be a non-empty string, got {self.method!r}")
        check_agent_name(self.agent_name)
        check_env_id(self.env_id)
        if not isinstance(self.config, str):
            raise ValueError(f"config must be a string label, got {self.config!r}")
        _check_budget(self.n_steps, self.n_episodes)
        for name in ("seed_index", "root_seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        object.__setattr__(self, "env_kwargs", dict(self.env_kwargs))
        object.__setattr__(self, "agent_kwargs", dict(self.agent_kwargs))

    @property
    def agent_name(self) -> str:
        """The registered agent name (``agent`` if given, else ``method``)."""
        return self.method if self.agent is None else self.agent

    def seeds(self) -> tuple[int, int]:
        """``(env_seed, agent_seed)``, from ``SeedSequence([root_seed, crc32(config),
        seed_index])`` — independent of the method (common random numbers)."""
        sequence = np.random.SeedSequence(
            [int(self.root_seed), zlib.crc32(self.config.encode("utf-8")), int(self.seed_index)]
        )
        env_seed, agent_seed = sequence.generate_state(2, dtype=np.uint32)
        return int(env_seed), int(agent_seed)

    @property
    def key(self) -> str:
        """Stable file-name key: readable labels plus a digest of every setting of the run."""
        payload = json.dumps(_jsonable(dataclasses.asdict(self)), sort_keys=True)
        digest = hashlib.sha1(payload.encode("utf-8")).hexdigest()[:12]
        readable = f"{self.method}__{self.config}__s{self.seed_index}"
        readable = re.sub(r"[^A-Za-z0-9_.=-]+", "-", readable).strip("-.")[:120]
        return f"{readable}__{digest}"


def make_grid(
    methods: Sequence[str] | Mapping[str, tuple[str, Mapping[str, Any]]],
    configs: Mapping[str, str | tuple[str, Mapping[str, Any]]],
    seeds: int,
    n_steps: int | None = None,
    n_episodes: int | None = None,
    root_seed: int = 0,
    agent_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[RunSpec]:
    """The (method × config × seed) grid of runs, in that nesting order.

    Args:
        methods: Agent names, or a mapping ``label -> (agent name, agent kwargs)``.
        configs: ``label -> (env_id, env_kwargs)`` (or ``label -> env_id``).
        seeds: Number of seeds per (method, config).
        n_steps: Steps per run, or
        n_episodes: episodes per run (exactly one).
        root_seed: Root seed of the sweep.
        agent_kwargs: Optional ``method -> kwargs`` for agent names given as a sequence.

    Returns:
        A list of :class:`RunSpec`.
    """
    seeds = _check_count("seeds", seeds)
    _check_budget(n_steps, n_episodes)
    if isinstance(methods, str):
        methods = [methods]
    if isinstance(methods, Mapping):
        agents = {label: (name, dict(kw)) for label, (name, kw) in methods.items()}
    else:
        extra = agent_kwargs or {}
        agents = {name: (name, dict(extra.get(name, {}))) for name in methods}
    if not agents:
        raise ValueError("methods must name at least one agent")
    if not configs:
        raise ValueError("configs must hold at least one environment configuration")
    grid = []
    for label, (agent_name, kwargs) in agents.items():
        for config, value in configs.items():
            env_id, env_kwargs = (value, {}) if isinstance(value, str) else value
            for index in range(seeds):
                grid.append(RunSpec(
                    method=label, env_id=env_id, env_kwargs=dict(env_kwargs),
                    agent_kwargs=kwargs, config=str(config), seed_index=index,
                    n_steps=n_steps, n_episodes=n_episodes, root_seed=root_seed,
                    agent=None if agent_name == label else agent_name,
                ))
    return grid


def execute_run(spec: RunSpec) -> pd.DataFrame:
    """Runs one :class:`RunSpec` (in this process) and returns its rollout frame.

    The frame gets the extra column ``seed_index``; ``seed`` is the environment's reset seed.
    """
    env_seed, agent_seed = spec.seeds()
    env = gym.make(spec.env_id, **spec.env_kwargs)
    try:
        agent = make_agent(spec.agent_name, env, agent_seed, **spec.agent_kwargs)
        frame = rollout(env, agent, n_steps=spec.n_steps, n_episodes=spec.n_episodes,
                        seed=env_seed, method=spec.method, config=spec.config)
    finally:
        env.close()
    frame.insert(frame.columns.get_loc("seed") + 1, "seed_index", np.int64(spec.seed_index))
    return frame


def _run_indexed(index: int, spec: RunSpec) -> tuple[int, pd.DataFrame]:
    return index, execute_run(spec)


def _resolve_format(fmt: str) -> str:
    if fmt not in ("parquet", "csv"):
        raise ValueError(f"fmt must be 'parquet' or 'csv', got {fmt!r}")
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            warnings.warn("pyarrow is not installed; writing CSV instead of parquet",
                          stacklevel=3)
            return "csv"
    return fmt


def _write_atomic(frame: pd.DataFrame, path: Path, fmt: str) -> None:
    """Writes ``frame`` next to ``path`` under a hidden temporary name, then renames it."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        if fmt == "parquet":
            frame.to_parquet(tmp, index=False)
        else:
            frame.to_csv(tmp, index=False)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def read_run(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Reads one run file written by :func:`run_many` (``.parquet`` or ``.csv``)."""
    path = Path(path)
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    options = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
    frame = pd.read_csv(path, dtype={"method": str, "config": str}, keep_default_na=False,
                        na_values=[""], **options)
    for column in ("method", "config"):
        frame[column] = frame[column].fillna("")
    return frame


def _existing(out_dir: Path, key: str) -> Path | None:
    for suffix in (".parquet", ".csv"):
        path = out_dir / f"{key}{suffix}"
        if path.is_file():
            return path
    return None


def _finish(frames: Iterable[pd.DataFrame]) -> pd.DataFrame:
    frames = list(frames)
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if frame.empty:
        return frame
    return frame.sort_values(list(SORT_COLUMNS), kind="stable").reset_index(drop=True)


def _check_grid(grid: Iterable[RunSpec]) -> list[RunSpec]:
    specs = list(grid)
    for spec in specs:
        if not isinstance(spec, RunSpec):
            raise ValueError(f"grid must hold RunSpec objects, got {spec!r}")
    keys = [spec.key for spec in specs]
    if len(set(keys)) != len(keys):
        duplicates = sorted({k for k in keys if keys.count(k) > 1})
        raise ValueError(f"grid holds duplicate runs: {duplicates}")
    return specs


def _check_jobs(n_jobs: Any) -> int:
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0:
        raise ValueError(f"n_jobs must be a non-zero int (-1: all cores), got {n_jobs!r}")
    return int(n_jobs)


def run_many(
    grid: Iterable[RunSpec],
    backend: str = "loky",
    n_jobs: int = 1,
    out_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
    fmt: str = "parquet",
) -> pd.DataFrame:
    """Executes a grid of runs and returns all their rows, sorted by method, config, seed, step.

    With ``out_dir``, each finished run is written to ``out_dir/<RunSpec.key>.<fmt>``
    atomically (a hidden temporary file renamed into place), so a killed sweep leaves only
    whole files; rerunning the same grid skips (and loads) the runs whose files exist and
    computes the rest. The returned frame is always read back from those files, so a resumed
    sweep returns exactly what an uninterrupted one does. Files are written by this process
    (so Ray workers need no shared file system); other files in ``out_dir`` are ignored.

    Args:
        grid: :class:`RunSpec` objects, e.g. from :func:`make_grid`.
        backend: ``"serial"`` (this process), ``"loky"`` (``joblib.Parallel`` worker
            processes) or ``"ray"`` (Ray tasks; ``ray.init(num_cpus=n_jobs)`` unless Ray is
            already initialised, e.g. connected to a cluster).
        n_jobs: Parallel workers (``-1``: all cores).
        out_dir: Directory of the per-run files, or ``None`` to keep results in memory only.
        progress: Show a tqdm progress bar over runs.
        fmt: ``"parquet"`` (falls back to CSV with a warning if pyarrow is missing) or ``"csv"``.

    Returns:
        The concatenated rollout frames (see :func:`rollout`, plus ``seed_index``).

    Raises:
        ValueError: For an unknown backend or format, a bad ``n_jobs``, duplicate runs, or
            ``backend="ray"`` without Ray installed.
    """
    from tqdm.auto import tqdm

    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; accepted backends: {', '.join(BACKENDS)}")
    n_jobs = _check_jobs(n_jobs)
    fmt = _resolve_format(fmt)
    specs = _check_grid(grid)
    directory = None if out_dir is None else Path(out_dir)
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)

    paths: list[Path | None] = [None] * len(specs)
    results: list[pd.DataFrame | None] = [None] * len(specs)
    todo: list[int] = []
    for index, spec in enumerate(specs):
        found = None if directory is None else _existing(directory, spec.key)
        if found is None:
            todo.append(index)
        else:
            paths[index] = found

    def finished(index: int, frame: pd.DataFrame) -> None:
        if directory is None:
            results[index] = frame
        else:
            path = directory / f"{specs[index].key}.{fmt}"
            _write_atomic(frame, path, fmt)
            paths[index] = path

    with tqdm(total=len(specs), initial=len(specs) - len(todo), desc="runs",
              disable=not progress) as bar:
        if todo:
            for index, frame in _execute(backend, n_jobs, [(i, specs[i]) for i in todo]):
                finished(index, frame)
                bar.update(1)

    if directory is None:
        return _finish(f for f in results if f is not None)
    return _finish(read_run(path) for path in paths if path is not None)


def _execute(backend: str, n_jobs: int, jobs: list[tuple[int, RunSpec]]
             ) -> Iterable[tuple[int, pd.DataFrame]]:
    """Yields ``(index, frame)`` as runs finish."""
    if backend == "serial":
        for index, spec in jobs:
            yield index, execute_run(spec)
    elif backend == "loky":
        import joblib
        from joblib import Parallel, delayed

        version = tuple(int(p) for p in re.findall(r"\d+", joblib.__version__)[:2])
        # joblib < 1.4 has no unordered generator: results then arrive in submission order
        order = "generator_unordered" if version >= (1, 4) else "generator"
        parallel = Parallel(n_jobs=n_jobs, backend="loky", return_as=order)
        yield from parallel(delayed(_run_indexed)(index, spec) for index, spec in jobs)
    else:
        yield from _execute_ray(n_jobs, jobs)


def _execute_ray(n_jobs: int, jobs: list[tuple[int, RunSpec]]
                 ) -> Iterable[tuple[int, pd.DataFrame]]:
    try:
        import ray
    except ImportError as error:
        raise ValueError(
            "backend='ray' needs Ray, which is not installed: pip install 'bam-rl[ray]'"
        ) from error
    if not ray.is_initialized():
        ray.init(num_cpus=None if n_jobs < 0 else n_jobs, include_dashboard=False,
                 ignore_reinit_error=True, log_to_driver=False)
    remote = ray.remote(_run_indexed)
    pending = [remote.remote(index, spec) for index, spec in jobs]
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for ref in done:
            yield ray.get(ref)
