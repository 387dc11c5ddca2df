"""The run loop: one agent acting in one environment, as one tidy row per step.

One run is one agent acting in one environment::

    import gymnasium
    import bam_rl
    from bam_rl.harness import make_agent, rollout

    env = gymnasium.make("bam_rl/SwitchingBandit-v0")
    agent = make_agent("thompson-bam", env, seed=1)
    frame = rollout(env, agent, n_steps=2_000, seed=0)   # tidy: one row per step

This module is the one run loop of the package: sweeps (:mod:`bam_rl.harness.sweeps`) and the
paper's experiments (:mod:`bam_rl.experiments`) run their agents through
:func:`rollout`.
"""

from __future__ import annotations

import contextlib
import json
import math
import operator
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd

from bam_rl.agents.base import Agent
from bam_rl.agents.random_agent import RandomAgent
from bam_rl.checks import check_int, check_memory

__all__ = ["INFO_FIELDS", "check_fit", "check_rows_memory", "rollout"]

#: Scalar ``info`` entries copied into the rollout frame (when the environment provides them).
INFO_FIELDS: tuple[str, ...] = (
    "regret",
    "optimal_action",
    "theta",
    "t",
    "gravity",
    "trial",
    "context_changed",
)

_SUMMARY_PREFIX = "belief_"
_PROGRESS_CHUNK = 1024
#: Bytes a step of a rollout holds until its frame is built (Python objects in lists, then
#: the columns) and what the agent grows by meanwhile: measured at the peak of 3,000 steps
#: 513 (UCB) to 786 (UCBAM) and 1,035 (Thompson-BAM, whose readout keeps its records sorted
#: between steps) on Python 3.10, 388 to 640 on 3.11.
ROW_BYTES = 1280
#: Bytes a row of a finished run keeps in a sweep's result, twice while frames are
#: concatenated (a frame row measured 110 to 155 bytes).
FRAME_ROW_BYTES = 320
#: Bytes a run of a sweep's grid takes before it runs (a ``RunSpec``: measured 330).
RUN_BYTES = 512


# ----------------------------------------------------------------------------- rollout
def check_budget(n_steps: Any, n_episodes: Any) -> tuple[int | None, int | None]:
    if (n_steps is None) == (n_episodes is None):
        raise ValueError(
            "give exactly one of n_steps and n_episodes, got "
            f"n_steps={n_steps!r}, n_episodes={n_episodes!r}"
        )
    if n_steps is not None:
        return check_int("n_steps", n_steps), None
    return None, check_int("n_episodes", n_episodes)


def check_rows_memory(what: str, rows_per_run: int, n_runs: int = 1) -> None:
    """``ValueError`` naming ``what`` (e.g. ``"n_steps = 10000000"``) unless ``n_runs`` runs
    of ``rows_per_run`` steps fit the memory budget (:func:`bam_rl.checks.check_memory`): one
    run's rows in flight and, for a sweep (``n_runs > 1``), every finished run's frame."""
    kept = 0 if n_runs == 1 else n_runs * (rows_per_run * FRAME_ROW_BYTES + RUN_BYTES)
    check_memory(what, rows_per_run * ROW_BYTES + kept)


def _check_rollout_memory(env: gym.Env, n_steps: int | None, n_episodes: int | None) -> None:
    if n_steps is not None:
        check_rows_memory(f"n_steps = {n_steps}", n_steps)
        return
    assert n_episodes is not None
    max_steps = getattr(getattr(env, "unwrapped", env), "max_steps", None)
    if isinstance(max_steps, (int, np.integer)) and not isinstance(max_steps, bool):
        what = f"n_episodes = {n_episodes} (of up to max_steps = {max_steps} steps)"
        check_rows_memory(what, n_episodes * max(int(max_steps), 1))
    else:
        check_rows_memory(f"n_episodes = {n_episodes}", n_episodes)


def _space_text(space: Any) -> str:
    return repr(space) if space is not None else "none"


def check_fit(env: gym.Env, agent: Any) -> None:
    """Raises ``ValueError`` if ``agent`` is built for other actions than ``env`` takes.

    Checked when the agent says what it acts on: ``n_arms`` (the bandit agents) must equal
    the size of a ``Discrete`` action space; the action space of an agent that has one
    (:class:`~agents.RandomAgent`, :class:`~agents.SB3Agent`, ``agent.action_space``) must
    be of the same kind and shape (and size, for ``Discrete``) as the environment's. Agents
    that say neither are not checked. ``UCB(3)`` in a 10-armed bandit would otherwise run and
    never try 7 arms.
    """
    space = getattr(env, "action_space", None)
    name = type(agent).__name__
    n_arms = getattr(agent, "n_arms", None)
    if isinstance(n_arms, (int, np.integer)) and not isinstance(n_arms, (bool, np.bool_)):
        if not isinstance(space, gym.spaces.Discrete):
            raise ValueError(
                f"agent {name} chooses among {n_arms} arms, but the environment's "
                f"action space is {_space_text(space)}, not Discrete"
            )
        if int(space.n) != int(n_arms) or int(space.start) != 0:
            raise ValueError(
                f"agent {name} chooses among {n_arms} arms (0..{n_arms - 1}), but "
                f"the environment's action space is {space!r}: build the agent "
                f"for this environment (e.g. make_agent(name, env))"
            )
    agent_space = getattr(agent, "action_space", None)
    if isinstance(agent, RandomAgent):  # keeps its space as plain data (n/start, low/high)
        if agent.kind == "discrete":
            agent_space = gym.spaces.Discrete(agent.n, start=agent.start)
        else:
            # bounds in the space's own dtype: float64 bounds of a float32 space would make
            # Gymnasium warn that their precision is lowered (the bounds came from that space)
            dtype = np.dtype(agent.dtype)
            low, high = np.asarray(agent.low, dtype=dtype), np.asarray(agent.high, dtype=dtype)
            agent_space = gym.spaces.Box(low, high, dtype=dtype)
    if isinstance(agent_space, gym.spaces.Space) and isinstance(space, gym.spaces.Space):
        same = type(agent_space) is type(space) and agent_space.shape == space.shape
        if (
            same
            and isinstance(space, gym.spaces.Discrete)
            and isinstance(agent_space, gym.spaces.Discrete)
        ):
            same = (int(agent_space.n), int(agent_space.start)) == (int(space.n), int(space.start))
        if not same:
            raise ValueError(
                f"agent {name} acts in {agent_space!r}, but the environment's "
                f"action space is {space!r}"
            )


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
    agent: Agent,
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
    * with a non-stationary world (``bam_rl.wrappers.NonStationary``), its ground truth
      ``env.get_wrapper_attr("context")`` during each step, one column ``context_<parameter>``
      each, at every notification level;
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
        ValueError: Unless exactly one of ``n_steps``/``n_episodes`` is a positive int, if
            the agent's actions do not fit the environment (see :func:`check_fit`), or if the
            run's rows would not fit the memory budget (:func:`check_rows_memory`).
    """
    n_steps, n_episodes = check_budget(n_steps, n_episodes)
    if seed is not None:
        if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
            raise ValueError(f"seed must be None or an int, got {seed!r}")
        seed = int(seed)
    for name, label in (("method", method), ("config", config)):
        if label is not None and not isinstance(label, str):
            raise ValueError(f"{name} must be a string or None, got {label!r}")
    owns_env = isinstance(env, str)
    environment = gym.make(env) if isinstance(env, str) else env
    try:
        check_fit(environment, agent)
        _check_rollout_memory(environment, n_steps, n_episodes)
        columns = _rollout_columns(environment, agent, n_steps, n_episodes, seed, progress)
    finally:
        if owns_env:
            environment.close()
    method = type(agent).__name__ if method is None else method
    config = _default_config(environment) if config is None else config
    return _rollout_frame(columns, method, config, seed)


def _rollout_columns(
    env: gym.Env,
    agent: Agent,
    n_steps: int | None,
    n_episodes: int | None,
    seed: int | None,
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
        actions.append,
        rewards.append,
        terminateds.append,
        truncateds.append,
    )
    add_info, add_summary = info_flat.extend, summary_flat.extend
    ends: list[int] = []  # global step indices that ended an episode
    info_keys: tuple[str, ...] | None = None
    summary_keys: tuple[str, ...] = ()
    get_info: Callable[[dict[str, Any]], tuple[Any, ...]] = _getter(())
    get_summary: Callable[[dict[str, Any]], tuple[Any, ...]] = _getter(())

    # a world's ground truth (bam_rl.wrappers.NonStationary), whatever it tells in info
    context_of = _context_source(env)
    context_keys = tuple(context_of()) if context_of is not None else ()
    context_flat: list[Any] = []

    limit = n_steps if n_steps is not None else math.inf
    bar = tqdm(
        total=n_steps if n_steps is not None else n_episodes,
        disable=not progress,
        desc="steps" if n_steps is not None else "episodes",
        leave=False,
    )
    observation, info = reset(seed=seed)
    agent.reset(observation, info)
    episodes = 0
    i = 0
    try:
        while i < limit:
            action = act(observation)
            add_action(action.copy() if type(action) is np.ndarray else action)
            next_observation, reward, terminated, truncated, info = step(action)
            # Gymnasium types rewards as SupportsFloat; every env here returns a Python float
            observe(action, reward, next_observation, terminated, truncated, info)  # type: ignore[arg-type]
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
            if context_of is not None:
                context_flat.extend(context_of().values())
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
        "actions": actions,
        "rewards": rewards,
        "terminated": terminateds,
        "truncated": truncateds,
        "ends": ends,
        "info": {k: info_flat[j :: len(info_keys)] for j, k in enumerate(info_keys)},
        "summary": {k: summary_flat[j :: len(summary_keys)] for j, k in enumerate(summary_keys)},
        "context": {k: context_flat[j :: len(context_keys)] for j, k in enumerate(context_keys)},
    }


def _context_source(env: gym.Env) -> Callable[[], dict[str, Any]] | None:
    """``env.get_wrapper_attr("context")`` as a function when the environment has a world's
    ground truth (``bam_rl.wrappers.NonStationary``), else ``None``."""
    try:
        context = env.get_wrapper_attr("context")
    except AttributeError:
        return None
    if not isinstance(context, dict) or not context:
        return None
    return lambda: env.get_wrapper_attr("context")


def _getter(keys: tuple[str, ...]) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """``mapping -> tuple of the values at keys`` (``KeyError`` if one is missing)."""
    if not keys:
        return lambda mapping: ()
    if len(keys) == 1:
        key = keys[0]
        return lambda mapping: (mapping[key],)
    return operator.itemgetter(*keys)


def _rollout_frame(
    columns: dict[str, Any], method: str, config: str, seed: int | None
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
        "seed": (
            np.full(n, seed, dtype=np.int64)
            if seed is not None
            else pd.array([None] * n, dtype="Int64")
        ),
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
    for key, values in columns.get("context", {}).items():
        data["context_" + key] = _column(values)
    for key, values in columns["summary"].items():
        data[_SUMMARY_PREFIX + key] = _column(values)
    frame = pd.DataFrame(data, index=pd.RangeIndex(n))
    # label columns broadcast from a scalar: far cheaper than converting n Python strings
    frame.insert(0, "config", config)
    frame.insert(0, "method", method)
    return frame
