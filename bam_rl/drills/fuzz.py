"""Random mutations of saved agents' state files: refused at load, or a working agent.

Each case saves a small agent of one registered name (every key of the registry's ``AGENTS``:
the bandits, the klUCB family, the trackers, the MPPI agents with every memory rule, the
segment agents; after two episodes and part of a third), mutates one field of the file's JSON
document or one of its arrays (a value, a type, a shape, a dtype, a deletion), loads it, and
acts and observes for an episode. An outcome is one of:

* ``refused`` — :meth:`load` raises ``ValueError`` (the file is rejected before any use);
* ``identical`` — it loads and acts exactly as the unmutated file (the mutation touched
  nothing the agent uses, or wrote the same value back);
* ``valid`` — it loads and acts as a valid agent of other settings would (a mutated value
  the constructor also accepts, e.g. another temperature in (0, ∞));
* ``unfit`` — it loads as a valid agent built for another action space (e.g. a
  :class:`~bam_rl.agents.RandomAgent` of ``Discrete(10**9)``, whose state is its space),
  which the run loop refuses before any step (:func:`bam_rl.harness.runner.check_fit`, as
  :func:`~bam_rl.harness.runner.rollout` does);
* ``error`` — anything else: an exception other than ``ValueError`` at load, or any exception
  while acting. The process must never die (a segfault would end this script).

Files carry a SHA-256 digest of their content, so a random change of a saved file is refused at
load; by default the fuzz recomputes the digest of each mutated file, as a crafted file would,
which exercises the checks of every restored field (``--random-changes`` keeps the saved digest).

Usage::

    MUJOCO_GL=egl python -m bam_rl.drills.fuzz --cases 200 --seed 0
    MUJOCO_GL=egl python -m bam_rl.drills.fuzz --agents glr-klucb,ucbam --cases 40

(or ``bam-rl drill fuzz``). The counts are printed per agent class as well.
"""

from __future__ import annotations

import argparse
import collections
import copy
import json
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents.mppi import GroundTruthMPPI, MPPIAgent
from bam_rl.harness.argtypes import positive_int
from bam_rl.harness.runner import check_fit
from bam_rl.serialization import FORMAT, import_class, read_archive, write_archive

SMALL: dict[str, Any] = {"horizon": 4, "n_samples": 3}
STEPS = 6
MEMORIES = ("bam", "bam+bocd", "bocd", "recursive", "bam-segments")
ODD_VALUES: tuple[Any, ...] = (
    -1,
    0,
    1,
    10**9,
    -1.0,
    0.0,
    1e300,
    "nan",
    "inf",
    "x",
    None,
    True,
    [],
    {},
    [1, 2],
)


def _env() -> gym.Env:
    return gym.make("bam_rl/GravityCartPole-v0", max_steps=STEPS, announce_changes=True)


#: bandit episodes of this many steps (a change after the first half)
BANDIT_STEPS = 16
_PIECEWISE_ENV = (
    "bam_rl/PiecewiseBandit-v0",
    {
        "means": [[0.2, 0.5, 0.8], [0.8, 0.5, 0.2]],
        "breakpoints": [BANDIT_STEPS // 2],
        "reward": "bernoulli",
        "max_steps": BANDIT_STEPS,
    },
)
_TUNED = {"horizon": 40, "n_breakpoints": 1}
#: small settings of the agents whose constructors need them
AGENT_KWARGS: dict[str, dict[str, Any]] = {
    "glr-klucb": {**_TUNED, "check_every": 2, "split_every": 1},
    "glr-klucb-global": {**_TUNED, "check_every": 2, "split_every": 1},
    "cusum-klucb": {**_TUNED, "warmup": 2, "check_every": 4},
    "m-klucb": {"horizon": 40, "window": 4},
    "oracle-restart-klucb": {"breakpoints": [BANDIT_STEPS // 2]},
    "sw-klucb": {"tau": 6},
    "exp3s": _TUNED,
}


def _target(name: str) -> tuple[str, dict[str, Any], dict[str, Any], int]:
    """(environment id, its arguments, the agent's arguments, steps of an episode) of a
    registered agent ``name``."""
    if name.startswith("mppi"):
        extra = {} if name == "mppi-gt" else {"n_features": 8}
        return ("bam_rl/GravityCartPole-v0", {"max_steps": STEPS, "announce_changes": True},
                {**SMALL, **extra}, STEPS)  # fmt: skip
    if name.startswith("tracker"):
        return "bam_rl/BinomialStream-v0", {"max_steps": BANDIT_STEPS}, {}, BANDIT_STEPS
    from bam_rl.harness.registry import _PIECEWISE

    if name in _PIECEWISE:
        return (*_PIECEWISE_ENV, AGENT_KWARGS.get(name, {}), BANDIT_STEPS)
    return "bam_rl/SwitchingBandit-v0", {"max_steps": BANDIT_STEPS}, {}, BANDIT_STEPS


def build_named(name: str) -> Any:
    """A small agent registered as ``name`` after two episodes and part of a third."""
    from bam_rl.harness.registry import make_agent

    env_id, env_kwargs, kwargs, steps = _target(name)
    env = gym.make(env_id, **env_kwargs)
    agent = make_agent(name, env, 0, **kwargs)
    for episode in range(3):
        observation, info = env.reset(seed=episode)
        agent.reset(observation, info)
        for _ in range(steps if episode < 2 else steps // 3):
            action = agent.act(observation)
            observation, reward, terminated, truncated, info = env.step(action)
            agent.observe(action, reward, observation, terminated, truncated, info)
    return agent


def build(kind: str, memory: str = "bam") -> Any:
    """A small agent of ``kind`` (``"mppi"`` or ``"gt"``) after two trials and a pending one."""
    env = _env()
    if kind == "gt":
        agent: Any = GroundTruthMPPI(env, seed=0, **SMALL)
    else:
        agent = MPPIAgent(
            env.observation_space,
            env.action_space,
            memory=memory,
            seed=0,
            announced=True,
            n_features=8,
            **SMALL,
        )
    for trial in range(3):
        observation, info = env.reset(seed=trial)
        agent.reset(observation, info)
        for _ in range(STEPS if trial < 2 else 2):
            action = agent.act(observation)
            observation, reward, terminated, truncated, info = env.step(action)
            agent.observe(action, reward, observation, terminated, truncated, info)
    return agent


def play(agent: Any, name: str = "mppi-bam") -> list[bytes]:
    """Actions of ``agent`` (registered as ``name``) over a fixed episode (with observe), and
    its first action of the next, as bytes."""
    env_id, env_kwargs, _, steps = _target(name)
    env = gym.make(env_id, **env_kwargs)
    actions = []
    observation, info = env.reset(seed=7)
    agent.reset(observation, info)
    for _ in range(steps):
        action = agent.act(observation)
        actions.append(np.asarray(action).tobytes())
        observation, reward, terminated, truncated, info = env.step(action)
        agent.observe(action, reward, observation, terminated, truncated, info)
        if terminated or truncated:
            break
    observation, info = env.reset(seed=8)
    agent.reset(observation, info)  # the trial's end: the memory rule's update
    actions.append(np.asarray(agent.act(observation)).tobytes())
    agent.summary()
    return actions


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths of every entry of the JSON document (dict keys and list indices)."""
    found = [path] if path else []
    if isinstance(node, dict):
        for key, value in node.items():
            found += _leaves(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _leaves(value, (*path, index))
    return found


def _parent(document: Any, path: tuple[Any, ...]) -> Any:
    node = document
    for key in path[:-1]:
        node = node[key]
    return node


def _odd(rng: np.random.Generator) -> Any:
    value = ODD_VALUES[int(rng.integers(len(ODD_VALUES)))]
    if value == "nan":
        return {"__float__": "nan"}
    if value == "inf":
        return {"__float__": "inf"}
    return copy.deepcopy(value)


def mutate_document(document: Any, rng: np.random.Generator) -> str:
    """Mutates one entry of ``document`` in place; returns a description."""
    paths = [p for p in _leaves(document) if p[0] == "root"]
    path = paths[int(rng.integers(len(paths)))]
    parent, key = _parent(document, path), path[-1]
    old = parent[key]
    choice = rng.integers(4)
    if choice == 0 and isinstance(parent, dict):
        del parent[key]
        return f"delete {'/'.join(map(str, path))}"
    if choice == 1 and isinstance(old, (int, float)) and not isinstance(old, bool):
        new: Any = old * float(rng.choice([-1.0, 0.0, 2.0, 1e6, 1e-9]))
        new = int(new) if isinstance(old, int) else new
    else:
        new = _odd(rng)
    parent[key] = new
    return f"set {'/'.join(map(str, path))} = {json.dumps(new)[:40]}"


def mutate_array(arrays: dict[str, np.ndarray], rng: np.random.Generator) -> str:
    """Mutates one array in place (shape, dtype or values); returns a description."""
    names = sorted(arrays)
    name = names[int(rng.integers(len(names)))]
    array = arrays[name]
    choice = int(rng.integers(5))
    if choice == 0:
        arrays[name] = array.reshape(-1)[: max(array.size - 1, 0)]
        return f"truncate {name}"
    if choice == 1:
        arrays[name] = np.concatenate([array.reshape(-1), array.reshape(-1)[:1]])
        return f"extend {name}"
    if choice == 2:
        arrays[name] = array.astype(np.float32 if array.dtype != np.float32 else np.int64)
        return f"retype {name}"
    changed = array.copy()
    if changed.size:
        flat = changed.reshape(-1)
        odd = (np.nan, 1e300)[choice - 3] if changed.dtype.kind in "fc" else -1
        flat[int(rng.integers(flat.size))] = odd
    arrays[name] = changed
    return f"poke {name}"


def keep_digest(path: Path, source: Path) -> None:
    """Puts ``source``'s digest entry into the archive ``path``, as a random change of the
    file's bytes (rather than a crafted file, whose digest is recomputed) would leave it."""
    with zipfile.ZipFile(source) as original:
        digest = original.read("__digest__.npy")
    with zipfile.ZipFile(path) as mutated:
        members = {name: mutated.read(name) for name in mutated.namelist()}
    members["__digest__.npy"] = digest
    with zipfile.ZipFile(path, "w") as rewritten:
        for name, data in members.items():
            rewritten.writestr(name, data)


def run_case(
    name: str, source: Path, reference: list[bytes], seed: int, crafted: bool = True
) -> tuple[str, str]:
    """One mutation of the saved file ``source`` of an agent registered as ``name``; returns
    ``(outcome, description)``. With ``crafted`` the file's digest is recomputed (a crafted
    file), else the original digest is kept (a random change of the saved file)."""
    rng = np.random.default_rng(seed)
    document, arrays = read_archive(source, FORMAT, "bam-rl state")
    cls: Any = import_class(document["root"]["__object__"])  # the saved class, before mutating
    if rng.random() < 0.6 or not arrays:
        description = mutate_document(document, rng)
    else:
        description = mutate_array(arrays, rng)
    with tempfile.TemporaryDirectory() as folder:
        path = write_archive(Path(folder) / "mutated.npz", document, arrays)
        if not crafted:
            keep_digest(path, source)
        try:
            agent = cls.load(path)
        except ValueError:
            return "refused", description
        except Exception as error:  # the fuzz's finding
            return f"error at load: {error!r}", description
    env_id, env_kwargs, _, _ = _target(name)
    try:
        check_fit(gym.make(env_id, **env_kwargs), agent)
    except ValueError:
        return "unfit", description
    except Exception as error:  # the fuzz's finding
        return f"error at load: {error!r}", description
    try:
        actions = play(agent, name)
    except Exception as error:  # the fuzz's finding
        return f"error when acting: {error!r}", description
    return ("identical" if actions == reference else "valid"), description


#: the outcomes per agent class of the latest :func:`fuzz` (class name -> counts)
BY_CLASS: dict[str, collections.Counter] = {}


def fuzz(
    cases: int,
    seed: int = 0,
    verbose: bool = False,
    crafted: bool = True,
    agents: list[str] | None = None,
) -> collections.Counter:
    """``cases`` mutations spread over the registered agents (``agents``: these names only);
    the counts per agent class are left in :data:`BY_CLASS`."""
    from bam_rl.harness.registry import AGENTS

    names = list(AGENTS) if agents is None else list(agents)
    counts: collections.Counter = collections.Counter()
    BY_CLASS.clear()
    with tempfile.TemporaryDirectory() as folder:
        sources = {}
        for name in names:
            path = Path(folder) / f"{name}.npz"
            agent = build_named(name)
            agent.save(path)
            reference = play(type(agent).load(path), name)
            sources[name] = (path, reference, _class_label(agent))
        for case in range(cases):
            name = names[case % len(names)]
            path, reference, label = sources[name]
            outcome, description = run_case(name, path, reference, seed * 100_000 + case, crafted)
            counts[outcome.split(":")[0]] += 1
            BY_CLASS.setdefault(label, collections.Counter())[outcome.split(":")[0]] += 1
            if outcome.startswith("error") or (verbose and outcome == "valid"):
                print(f"{name}: {description}: {outcome}", file=sys.stderr)
    return counts


def _class_label(agent: Any) -> str:
    """The agent's class, with its rule's for the agents that hold one (Thompson, MPPI)."""
    label = type(agent).__name__
    rule = getattr(agent, "rule", None) or (getattr(agent, "rules", None) or [None])[0]
    name = getattr(agent, "rule_name", None) or (type(rule).__name__ if rule else None)
    return f"{label}[{name}]" if name else label


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--cases", type=positive_int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", action="store_true", help="also list the valid mutations")
    parser.add_argument(
        "--random-changes",
        action="store_true",
        help="keep the saved digest (random changes of the file) instead of recomputing it "
        "(crafted files, which exercise the field checks)",
    )
    parser.add_argument(
        "--agents", default=None, help="comma-separated registry names (default: every one)"
    )
    args = parser.parse_args(argv)
    names = None if args.agents is None else [n for n in args.agents.split(",") if n]
    counts = fuzz(
        args.cases, args.seed, args.verbose, crafted=not args.random_changes, agents=names
    )
    kind = "randomly changed" if args.random_changes else "crafted (digest recomputed)"
    for label, by_class in sorted(BY_CLASS.items()):
        print(f"  {label:<40} {dict(sorted(by_class.items()))}")
    print(f"{args.cases} {kind} state files: {dict(counts)}")
    return 1 if any(key.startswith("error") for key in counts) else 0


if __name__ == "__main__":
    sys.exit(main())
