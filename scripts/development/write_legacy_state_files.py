"""docs/development.md: Writes one small state file per registered agent, and what each does next,
with the ``bam_rl`` found on ``PYTHONPATH`` — so the code of any checkout writes the set:

    old=$(mktemp -d) && git archive 034ed49 | tar -x -C "$old"
    PYTHONPATH="$old" python scripts/development/write_legacy_state_files.py \\
        tests/data/legacy_034ed49

Each agent (``bam_rl.harness.make_agent``, small options: MPPI with a short horizon, few
samples and features on 6-step cart-pole trials, the piecewise bandits with a horizon of 200)
runs a few steps from ``env.reset(seed=0)``, is saved to ``<out>/<name>.npz`` and then, still
in the same process, continues :data:`CONTINUE` steps. ``<out>/expected.json`` holds for each
agent its class, environment and every continued step as the agent saw it (observation,
action, reward, next observation, ends, info, and a reset's observation and info), so
``tests/agents/test_state_files_from_034ed49.py`` replays them into the loaded agent without
the environment and compares its actions with the recorded ones.

Older code stores a packaged MJCF model by its absolute path (``<folder>/bam_rl/envs/assets/
gravity_cartpole.xml``), which would commit a path of the machine that wrote the set: each such
path is rewritten to the packaged name ``bam_rl.envs:assets/…`` (:func:`make_portable`, the
digest recomputed), and ``tests/agents/test_portable_state_files.py`` puts an absolute path
back at test time to check that old files with one still load.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import bam_rl
from bam_rl.harness import AGENTS, make_agent

#: steps continued after the save (recorded)
CONTINUE = 10
#: the cart-pole's trial length: the run before the save crosses two trial ends
CARTPOLE_STEPS = 6
MPPI_OPTIONS: dict[str, Any] = {"horizon": 5, "n_samples": 8}
BANDIT_TUNING: dict[str, dict[str, Any]] = {
    "glr-klucb": {"horizon": 200, "n_breakpoints": 2},
    "glr-klucb-global": {"horizon": 200, "n_breakpoints": 2},
    "cusum-klucb": {"horizon": 200, "n_breakpoints": 2},
    "exp3s": {"horizon": 200, "n_breakpoints": 2},
    "sw-klucb": {"horizon": 200, "n_breakpoints": 2},
    "m-klucb": {"horizon": 200},
    "oracle-restart-klucb": {"breakpoints": [15, 35]},  # one before the save, one after
}


def case(name: str) -> tuple[str, dict[str, Any], dict[str, Any], int]:
    """(environment id, its arguments, the agent's arguments, steps before the save)."""
    if name.startswith("mppi"):
        options = dict(MPPI_OPTIONS)
        if name != "mppi-gt":
            options["n_features"] = 20
        env = {"max_steps": CARTPOLE_STEPS}
        return "bam_rl/GravityCartPoleEpisodic-v0", env, options, 2 * CARTPOLE_STEPS + 2
    if name.startswith("tracker"):
        return "bam_rl/BinomialStream-v0", {}, {}, 30
    if name == "random" or name.startswith(("ucb", "thompson")):
        return "bam_rl/SwitchingBandit-v0", {}, {}, 30
    if name.endswith(("klucb", "dts", "exp3s")) or name in BANDIT_TUNING:
        return "bam_rl/PiecewiseBandit-v0", {}, dict(BANDIT_TUNING.get(name, {})), 30
    raise SystemExit(f"no case for the agent {name!r}: add one to {__file__}")


def encode(value: Any) -> Any:
    """JSON for observations, actions and infos, read back exactly by the test's ``decode``."""
    if isinstance(value, np.ndarray):
        return {"ndarray": encode(value.tolist()), "dtype": value.dtype.name}
    if isinstance(value, np.generic):
        return {"scalar": encode(value.item()), "dtype": value.dtype.name}
    if isinstance(value, dict):
        return {"dict": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"cannot record a {type(value).__name__}: {value!r}")


def run(name: str, out: Path) -> dict[str, Any]:
    env_id, env_kwargs, kwargs, steps = case(name)
    env = gym.make(env_id, **env_kwargs)
    agent = make_agent(name, env, seed=0, **kwargs)
    observation, info = env.reset(seed=0)
    agent.reset(observation, info)

    def step(record: list[dict[str, Any]] | None) -> None:
        nonlocal observation, info
        before = observation
        action = agent.act(observation)
        observation, reward, terminated, truncated, info = env.step(action)
        agent.observe(action, reward, observation, terminated, truncated, info)
        event: dict[str, Any] = {
            "observation": encode(before),
            "action": encode(action),
            "reward": encode(reward),
            "next_observation": encode(observation),
            "terminated": bool(terminated),
            "truncated": bool(truncated),
            "info": encode(info),
        }
        if terminated or truncated:
            observation, info = env.reset()
            agent.reset(observation, info)
            event["reset"] = {"observation": encode(observation), "info": encode(info)}
        if record is not None:
            record.append(event)

    for _ in range(steps):
        step(None)
    path = out / f"{name}.npz"  # the suffix given: older save()s append none and return None
    agent.save(path)
    continued: list[dict[str, Any]] = []
    for _ in range(CONTINUE):
        step(continued)
    return {
        "class": f"{type(agent).__module__}.{type(agent).__qualname__}",
        "file": path.name,
        "env": env_id,
        "env_kwargs": env_kwargs,
        "agent_kwargs": kwargs,
        "steps_before_save": steps,
        "continued": continued,
    }


def make_portable(path: Path) -> None:
    """Rewrites every absolute ``…/bam_rl/envs/<file>`` string of the state file ``path`` as
    ``bam_rl.envs:<file>`` (the packaged name), recomputing the archive's digest."""
    from bam_rl.serialization import write_archive

    with np.load(path, allow_pickle=False) as archive:
        entries = {key: archive[key] for key in archive.files}
    text = bytes(entries["__json__"]).decode()
    portable = re.sub(r'"(?:[^"\\]|\\.)*?/bam_rl/envs/([^"]+)"', r'"bam_rl.envs:\1"', text)
    if portable == text:
        return
    arrays = {k: v for k, v in entries.items() if k not in ("__json__", "__digest__")}
    write_archive(path, json.loads(portable), arrays)  # atomically, with a new digest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the folder to write (created if missing)")
    parser.add_argument("--label", default="", help="recorded in expected.json (e.g. a commit)")
    args = parser.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    args.out.mkdir(parents=True, exist_ok=True)
    agents = {name: run(name, args.out) for name in AGENTS}
    for record in agents.values():
        make_portable(args.out / record["file"])
    document = {"label": args.label, "agents": agents}  # no path of the writing machine
    (args.out / "expected.json").write_text(json.dumps(document, separators=(",", ":")) + "\n")
    total = sum(f.stat().st_size for f in args.out.iterdir())
    source = Path(bam_rl.__file__).parent
    print(f"{len(agents)} agents from {source}: {total / 1e6:.2f} MB in {args.out}")


if __name__ == "__main__":
    main()
