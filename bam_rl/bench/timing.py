"""Timing helpers shared by the benchmark workloads of :mod:`bam_rl.bench`."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def header_line(*details: str) -> str:
    """The first line a workload's script prints: ``# machine, Python version, gymnasium
    version``, then ``details`` (what is timed), comma-separated."""
    import platform

    import gymnasium as gym

    return ", ".join(
        (
            f"# {platform.machine()}",
            f"Python {platform.python_version()}",
            f"gymnasium {gym.__version__}",
            *details,
        )
    )


def best_time(run: Callable[[], object], repeats: int = 3) -> float:
    """Shortest wall time of ``repeats`` calls."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def protocol_loop(
    env: Any, agent: Any, n_steps: int, seed: int, record: bool = False
) -> list[Any] | None:
    """The bare env + agent loop (the floor ``rollout`` is measured against); returns the
    actions when ``record``."""
    act, observe, step, reset = agent.act, agent.observe, env.step, env.reset
    observation, info = reset(seed=seed)
    agent.reset(observation, info)
    actions: list[Any] | None = [] if record else None
    for _ in range(n_steps):
        action = act(observation)
        next_observation, reward, terminated, truncated, info = step(action)
        observe(action, reward, next_observation, terminated, truncated, info)
        if actions is not None:
            actions.append(action)
        if terminated or truncated:
            observation, info = reset()
            agent.reset(observation, info)
        else:
            observation = next_observation
    return actions
