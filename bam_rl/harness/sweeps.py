"""Resumable parallel sweeps (see ARCHITECTURE.md): grids of runs, serial, on local cores or on Ray.

A sweep is a grid of (method × config × seed) runs, executed serially, with joblib/loky on
the local cores or on a Ray cluster; every finished run is written to its own file, so an
interrupted sweep resumes where it stopped::

    from bam_rl.harness.sweeps import make_grid, run_many   # also importable from bam_rl.harness

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

Files and resuming: each finished run is ``out_dir/<key>.<fmt>`` plus its record
``out_dir/<key>.<fmt>.json`` (:data:`RECORD_FORMAT`: the run's row count, the file's size and
SHA-256, and ``settings``, what the agent was built with and where each setting came from:
:func:`~bam_rl.harness.registry.resolved_settings`), written after the data file, each
atomically. A resumed sweep trusts a run file
only if its record exists and the file matches it (size, checksum, and once read, row
count and labels); any other run — no file, no record, a truncated or edited file, a
Parquet file that no longer parses — is recomputed (with a warning naming it). Stale
temporary files of the grid's runs (``.<key>.<fmt>.<random>.tmp``, left by a kill
mid-write) are removed when the run is claimed again.

Sharing a folder: any number of processes, on one machine or several with a shared file
system, may run the same grid into one ``out_dir`` at once. Each takes a claim on a run
before computing it (:mod:`bam_rl.harness.claims`), skips runs that others finished or hold,
and at the end waits for the held ones, taking over the claims of holders that died; every
run is computed once, and every process returns the whole grid. :func:`shard` splits a grid
between processes that should not wait for each other (``bam-rl run --shard i/n``).

One module over the house's ~600 lines on purpose: the grid, its resumable files and the three
backends share the claim-compute-write protocol of a run, which is checked as a whole.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib
import json
import os
import re
import sys
import threading
import time
import warnings
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import gymnasium as gym
import numpy as np
import pandas as pd

from bam_rl._io import atomic_path
from bam_rl.checks import check_int
from bam_rl.harness.claims import ClaimBook
from bam_rl.harness.files import naming_write_failures
from bam_rl.harness.registry import (
    check_agent_name,
    check_env_id,
    make_agent,
    resolved_settings,
)
from bam_rl.harness.runner import check_budget, check_rows_memory, rollout

__all__ = [
    "BACKENDS",
    "SORT_COLUMNS",
    "AgentFactory",
    "RunSpec",
    "check_backend",
    "execute_run",
    "make_grid",
    "read_run",
    "run_many",
    "shard",
]

#: Execution backends of :func:`run_many`.
BACKENDS: tuple[str, ...] = ("serial", "loky", "ray")

#: Sort order of the frame :func:`run_many` returns.
SORT_COLUMNS: tuple[str, ...] = ("method", "config", "seed", "step")

#: ``format`` entry of the record written beside each finished run file.
RECORD_FORMAT = "bam-rl-run-record/1"
_FORMATS = ("parquet", "csv")


#: An agent of your own in a sweep: ``factory(observation_space, action_space, seed) -> agent``
#: (the environment's spaces and the run's agent seed, an int), called once per run in the
#: process that runs it (see :func:`make_grid`).
AgentFactory = Callable[[gym.Space, gym.Space, int], Any]


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
        factory: An agent of your own instead of a registered one:
            ``factory(observation_space, action_space, seed) -> agent`` (:data:`AgentFactory`);
            then ``agent`` and ``agent_kwargs`` stay unset (bind arguments with
            :func:`functools.partial`). The run's file key names ``method``, not the factory:
            give a changed factory a new label, or a resumed sweep loads the old one's runs.
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
    factory: AgentFactory | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.method, str) or not self.method:
            raise ValueError(f"method must be a non-empty string, got {self.method!r}")
        if self.factory is None:
            check_agent_name(self.agent_name)
        elif not callable(self.factory):
            raise ValueError(
                "factory must be None or a callable factory(observation_space, action_space, "
                f"seed) -> agent, got {self.factory!r}"
            )
        elif self.agent is not None or self.agent_kwargs:
            raise ValueError(
                f"a run with a factory takes neither agent nor agent_kwargs (bind the factory's "
                f"arguments with functools.partial), got agent={self.agent!r}, "
                f"agent_kwargs={dict(self.agent_kwargs)!r}"
            )
        check_env_id(self.env_id)
        if not isinstance(self.config, str):
            raise ValueError(f"config must be a string label, got {self.config!r}")
        check_budget(self.n_steps, self.n_episodes)
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
        """Stable file-name key: readable labels plus a digest of every setting of the run.

        A factory enters the digest only as "a factory" (its ``method`` label names it): a
        function's repr holds a memory address, which would change the key in every process.
        """
        settings = dataclasses.asdict(self)
        if self.factory is None:
            del settings["factory"]  # the keys of registry runs predate factories
        else:
            settings["factory"] = "factory"
        payload = json.dumps(_jsonable(settings), sort_keys=True)
        digest = hashlib.sha1(payload.encode("utf-8")).hexdigest()[:12]
        readable = f"{self.method}__{self.config}__s{self.seed_index}"
        readable = re.sub(r"[^A-Za-z0-9_.=-]+", "-", readable).strip("-.")[:120]
        return f"{readable}__{digest}"


def make_grid(
    methods: Sequence[str] | Mapping[str, tuple[str, Mapping[str, Any]] | AgentFactory],
    configs: Mapping[str, str | tuple[str, Mapping[str, Any]]],
    seeds: int,
    n_steps: int | None = None,
    n_episodes: int | None = None,
    root_seed: int = 0,
    agent_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[RunSpec]:
    """The (method × config × seed) grid of runs, in that nesting order.

    Agents of your own run beside registered ones: a ``methods`` entry ``label -> factory``
    is called as ``factory(observation_space, action_space, seed)`` in each run (the
    environment's spaces and the run's agent seed) and must return an agent (``reset``,
    ``act``, ``observe``), e.g.::

        def greedy(observation_space, action_space, seed):
            return MyGreedy(action_space.n, seed=seed)

        grid = make_grid({"greedy": greedy, "ucb": ("ucb", {})}, {"bandit": ENV_ID}, seeds=3,
                         n_steps=500)

    Its run files are keyed by the label (``greedy``), so a second :func:`run_many` into the
    same folder loads them. With ``backend="loky"`` or ``"ray"`` the factory travels to the
    workers by cloudpickle: module-level functions, :func:`functools.partial` objects and
    lambdas all work.

    Args:
        methods: Agent names, or a mapping ``label -> (agent name, agent kwargs)`` or
            ``label -> factory`` (:data:`AgentFactory`).
        configs: ``label -> (env_id, env_kwargs)`` (or ``label -> env_id``).
        seeds: Number of seeds per (method, config).
        n_steps: Steps per run, or
        n_episodes: episodes per run (exactly one).
        root_seed: Root seed of the sweep.
        agent_kwargs: Optional ``method -> kwargs`` for agent names given as a sequence.

    Returns:
        A list of :class:`RunSpec`.

    Raises:
        ValueError: For a bad ``seeds`` or budget, a ``methods`` entry that is neither a pair
            (agent name, kwargs) nor a callable factory, a ``configs`` entry that is neither
            an environment id nor a pair (env_id, env_kwargs), or an unknown agent or
            environment.
    """
    seeds = check_int("seeds", seeds)
    check_budget(n_steps, n_episodes)
    if isinstance(methods, str):
        methods = [methods]
    agents: dict[str, tuple[str, dict[str, Any]]] = {}
    factories: dict[str, AgentFactory] = {}
    if isinstance(methods, Mapping):
        for label, value in methods.items():
            if not isinstance(label, str) or not label:
                raise ValueError(f"methods' labels must be non-empty strings, got {label!r}")
            entry = cast(Any, value)
            if _is_pair(entry):
                agents[label] = (entry[0], dict(entry[1]))
            elif callable(entry):
                factories[label] = entry
                agents[label] = (label, {})
            else:
                raise ValueError(
                    f"methods[{label!r}] must be a pair (agent name, agent kwargs dict) or an "
                    f"agent factory (a callable factory(observation_space, action_space, seed) "
                    f"-> agent), got {value!r}"
                )
    elif isinstance(methods, Iterable):
        extra = {} if agent_kwargs is None else agent_kwargs
        if not isinstance(extra, Mapping):
            raise ValueError(
                f"agent_kwargs must be a mapping method -> kwargs dict, got {agent_kwargs!r}"
            )
        for name in methods:
            kwargs = extra.get(name, {}) if isinstance(name, str) else {}
            if not isinstance(kwargs, Mapping):
                raise ValueError(
                    f"agent_kwargs[{name!r}] must be a dict of keyword arguments, got {kwargs!r}"
                )
            agents[name] = (name, dict(kwargs))
    else:
        raise ValueError(
            f"methods must be agent names or a mapping label -> (agent name, "
            f"agent kwargs), got {methods!r}"
        )
    if not agents:
        raise ValueError("methods must name at least one agent")
    for label, (_, kwargs) in agents.items():
        if "seed" in kwargs:
            raise ValueError(
                f"agent kwargs of {label!r} must not set 'seed': each run's agent is seeded "
                "from the run's own seed (seeds and root_seed)"
            )
    if not isinstance(configs, Mapping):
        raise ValueError(
            f"configs must be a mapping label -> env_id or (env_id, env_kwargs), got {configs!r}"
        )
    if not configs:
        raise ValueError("configs must hold at least one environment configuration")
    environments: dict[str, tuple[str, dict[str, Any]]] = {}
    for config, entry in configs.items():
        value = cast(Any, entry)
        if isinstance(value, str):
            environments[str(config)] = (value, {})
        elif _is_pair(value):
            environments[str(config)] = (value[0], dict(value[1]))
        else:
            raise ValueError(
                f"configs[{config!r}] must be an environment id or a pair "
                f"(env_id, env_kwargs dict), got {value!r}"
            )
    n_runs = len(agents) * len(environments) * seeds
    steps = n_steps if n_steps is not None else n_episodes  # at least one step an episode
    assert steps is not None
    what = f"n_steps = {n_steps}" if n_steps is not None else f"n_episodes = {n_episodes}"
    if n_runs > 1:
        what += f" in a grid of {n_runs} runs (seeds = {seeds})"
    check_rows_memory(what, steps, n_runs)
    grid = []
    for label, (agent_name, kwargs) in agents.items():
        for config, (env_id, env_kwargs) in environments.items():
            for index in range(seeds):
                grid.append(
                    RunSpec(
                        method=label,
                        env_id=env_id,
                        env_kwargs=dict(env_kwargs),
                        agent_kwargs=kwargs,
                        config=str(config),
                        seed_index=index,
                        n_steps=n_steps,
                        n_episodes=n_episodes,
                        root_seed=root_seed,
                        agent=None if agent_name == label else agent_name,
                        factory=factories.get(label),
                    )
                )
    return grid


def _is_pair(value: Any) -> bool:
    """Whether ``value`` is ``(name, kwargs)``: a 2-sequence of a string and a mapping."""
    return (
        isinstance(value, (tuple, list))
        and len(value) == 2
        and isinstance(value[0], str)
        and isinstance(value[1], Mapping)
    )


def execute_run(spec: RunSpec) -> pd.DataFrame:
    """Runs one :class:`RunSpec` (in this process) and returns its rollout frame.

    The frame gets the extra column ``seed_index``; ``seed`` is the environment's reset seed.
    ``frame.attrs["settings"]`` holds the agent's resolved settings and their sources
    (:func:`~bam_rl.harness.registry.resolved_settings`; ``None`` for a factory's agent),
    which :func:`run_many` writes into the run's record.
    """
    env_seed, agent_seed = spec.seeds()
    env = gym.make(spec.env_id, **spec.env_kwargs)
    try:
        if spec.factory is not None:
            agent = spec.factory(env.observation_space, env.action_space, agent_seed)
            _check_built(spec, agent)
            settings = None
        else:
            agent = make_agent(
                spec.agent_name, env, agent_seed, n_steps=spec.n_steps, **spec.agent_kwargs
            )
            settings = resolved_settings(
                spec.agent_name, env, n_steps=spec.n_steps, **spec.agent_kwargs
            )
        frame = rollout(
            env,
            agent,
            n_steps=spec.n_steps,
            n_episodes=spec.n_episodes,
            seed=env_seed,
            method=spec.method,
            config=spec.config,
        )
    finally:
        env.close()
    frame.insert(frame.columns.get_loc("seed") + 1, "seed_index", np.int64(spec.seed_index))
    frame.attrs["settings"] = settings  # the run record's (run_many takes it off the frame)
    return frame


#: What a factory's agent must have: the methods :func:`~bam_rl.harness.rollout` calls.
AGENT_METHODS = ("reset", "act", "observe")


def _check_built(spec: RunSpec, agent: Any) -> None:
    """``ValueError`` naming the run's label unless the agent its factory built has callable
    :data:`AGENT_METHODS` (``None``, or a half-built agent, would fail deep in the rollout)."""
    missing = [name for name in AGENT_METHODS if not callable(getattr(agent, name, None))]
    if missing:
        raise ValueError(
            f"the agent factory of {spec.method!r} ({spec.factory!r}) returned {agent!r}, "
            f"which has no callable {', '.join(missing)}: a factory(observation_space, "
            "action_space, seed) must return an agent with reset, act and observe"
        )


def _import_modules(modules: Sequence[str], path: Sequence[str] = ()) -> None:
    """Imports ``modules`` (dotted names, in order), with the entries of ``path`` that
    ``sys.path`` lacks appended to it first.

    Raises:
        ValueError: For a name that is not a non-empty string.
        ImportError: (or whatever the module raises) when one cannot be imported.
    """
    for entry in path:
        if entry not in sys.path:
            sys.path.append(entry)
    for module in modules:
        if not isinstance(module, str) or not module:
            raise ValueError(f"module names must be non-empty strings, got {module!r}")
        importlib.import_module(module)


def _run_indexed(
    index: int,
    spec: RunSpec,
    parent: int | None = None,
    imports: Sequence[str] = (),
    path: Sequence[str] = (),
) -> tuple[int, pd.DataFrame]:
    if parent is not None:
        _exit_with_parent(parent)
    _import_modules(imports, path)  # a worker knows only what bam_rl registers
    return index, execute_run(spec)


_WATCHED_PARENT: list[int] = []  # the parent a worker process watches (at most one)


def _exit_with_parent(parent: int, interval: float = 1.0) -> None:
    """Ends this worker process once ``parent`` (the sweep's process) has died.

    loky keeps idle workers for minutes, and a worker whose sweep was killed (SIGKILL leaves
    no chance to shut the pool down) would otherwise outlive it; a daemon thread polls the
    parent every ``interval`` seconds and exits the worker when it is gone.
    """
    if _WATCHED_PARENT or parent == os.getpid():
        return
    _WATCHED_PARENT.append(parent)

    def watch() -> None:
        while True:
            time.sleep(interval)
            try:
                os.kill(parent, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:  # alive, another user's (a reused pid is not ours)
                pass

    threading.Thread(target=watch, name="bam-rl-parent-watch", daemon=True).start()


def _resolve_format(fmt: str) -> str:
    if fmt not in ("parquet", "csv"):
        raise ValueError(f"fmt must be 'parquet' or 'csv', got {fmt!r}")
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            warnings.warn("pyarrow is not installed; writing CSV instead of parquet", stacklevel=3)
            return "csv"
    return fmt


def read_run(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Reads one run file written by :func:`run_many` (``.parquet`` or ``.csv``)."""
    path = Path(path)
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    options = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
    frame = pd.read_csv(
        path, dtype={"method": str, "config": str}, keep_default_na=False, na_values=[""], **options
    )
    for column in ("method", "config"):
        frame[column] = frame[column].fillna("")
    return frame


def _existing(out_dir: Path, key: str) -> list[Path]:
    """The run files of ``key`` in ``out_dir`` (Parquet first)."""
    return [path for path in (out_dir / f"{key}.{fmt}" for fmt in _FORMATS) if path.is_file()]


def _record_path(path: Path) -> Path:
    """The record of a run file: ``<key>.<fmt>.json`` beside it."""
    return path.with_name(f"{path.name}.json")


def _digest(path: Path) -> tuple[int, str]:
    """``(size in bytes, SHA-256 hex digest)`` of a file."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def _write_run(
    frame: pd.DataFrame, path: Path, fmt: str, spec: RunSpec, settings: Any = None
) -> None:
    """Writes a run file and its record, so that the file never exists without its record.

    The record also holds ``settings``: what the run's agent was built with and where each
    setting came from (:func:`~bam_rl.harness.registry.resolved_settings`).

    The frame goes to a temporary file; its record (rows, size, checksum) is written next;
    only then is the temporary file renamed to ``path``. A kill at any point leaves either
    no file (recomputed), or a file with the record that matches it; so does a failed write
    (a full disk), which raises one ``OSError`` naming ``path``.
    """
    with naming_write_failures(path), atomic_path(path) as temporary:
        if fmt == "parquet":
            frame.to_parquet(temporary, index=False)
        else:
            frame.to_csv(temporary, index=False)
        size, digest = _digest(temporary)
        record = {
            "format": RECORD_FORMAT,
            "key": spec.key,
            "file": path.name,
            "rows": len(frame),
            "bytes": size,
            "sha256": digest,
            "settings": settings,
        }
        with atomic_path(_record_path(path)) as record_temporary:
            record_temporary.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def _verify(path: Path, spec: RunSpec) -> tuple[pd.DataFrame | None, str]:
    """The run file's frame if it matches its record and ``spec``, else ``(None, reason)``."""
    try:
        record = json.loads(_record_path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, "has no record (written by an interrupted or older sweep)"
    except (OSError, ValueError) as error:
        return None, f"has an unreadable record ({error})"
    if not (
        isinstance(record, dict)
        and record.get("format") == RECORD_FORMAT
        and record.get("key") == spec.key
        and record.get("file") == path.name
        and isinstance(record.get("rows"), int)
        and isinstance(record.get("bytes"), int)
        and isinstance(record.get("sha256"), str)
    ):
        return None, "has a record that does not describe it"
    size, digest = _digest(path)
    if size != record["bytes"] or digest != record["sha256"]:
        return None, (
            f"does not match its record ({size} bytes, expected {record['bytes']}; SHA-256 differs)"
            if size != record["bytes"]
            else "does not match its record (SHA-256 differs)"
        )
    try:
        frame = read_run(path)
    except Exception as error:  # any unreadable file is recomputed
        return None, f"cannot be read ({type(error).__name__}: {error})"
    expected_rows = spec.n_steps if spec.n_steps is not None else record["rows"]
    if len(frame) != record["rows"] or len(frame) != expected_rows:
        return None, f"holds {len(frame)} rows, expected {expected_rows}"
    labels = {"method": spec.method, "config": spec.config, "seed_index": spec.seed_index}
    for column, value in labels.items():
        if column not in frame.columns or not (frame[column] == value).all():
            return None, f"holds rows of another run (column {column!r})"
    return frame, ""


_TEMPORARY = re.compile(r"^\.(?P<key>.*__[0-9a-f]{12})\.(?:parquet|csv)(?:\.json)?\..*\.tmp$")


def _remove_stale_temporaries(directory: Path, keys: set[str]) -> int:
    """Removes the temporary files (``.<key>.<fmt>.<random>.tmp``) that a killed sweep of
    these ``keys`` left behind; returns how many."""
    removed = 0
    for path in directory.iterdir():
        match = _TEMPORARY.match(path.name)
        if match and match.group("key") in keys and path.is_file():
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += 1
    return removed


def _discard(paths: Iterable[Path]) -> None:
    """Removes run files (and their records) that failed verification or were superseded."""
    for path in paths:
        for stale in (_record_path(path), path):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()


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


#: Seconds between two looks at the runs other processes hold.
WAIT_INTERVAL = 1.0

#: Most parallel workers a sweep starts (each is a process with its own interpreter).
MAX_JOBS = 512


def check_jobs(n_jobs: Any) -> int:
    cores = os.cpu_count() or 1
    if (
        isinstance(n_jobs, bool)
        or not isinstance(n_jobs, (int, np.integer))
        or n_jobs == 0
        or not -cores <= n_jobs <= MAX_JOBS
    ):
        raise ValueError(
            f"n_jobs must be an int in [1, {MAX_JOBS}] or in [-{cores}, -1] (-1: all "
            f"{cores} cores, -2: all but one, …), got {n_jobs!r}"
        )
    return int(n_jobs)


def run_many(
    grid: Iterable[RunSpec],
    backend: str = "loky",
    n_jobs: int = 1,
    out_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
    fmt: str = "parquet",
    imports: Sequence[str] = (),
) -> pd.DataFrame:
    """Executes a grid of runs and returns all their rows, sorted by method, config, seed, step.

    With ``out_dir``, each finished run is written to ``out_dir/<RunSpec.key>.<fmt>``
    atomically (a hidden temporary file renamed into place), with its record
    ``<key>.<fmt>.json`` (rows, size, SHA-256) written before the rename, so a killed sweep
    leaves only whole, recorded files; rerunning the same grid loads the runs whose files
    match their records and computes the rest — including runs whose file was truncated,
    edited or has no record (a warning names each) — and removes the temporary files that a
    kill left behind. The returned frame is always read back from those files, so a resumed
    sweep returns exactly what an uninterrupted one does. Files are written by this process
    (so Ray workers need no shared file system); other files in ``out_dir`` are ignored.
    Several sweeps may share ``out_dir``: each run is claimed before it is computed (see the
    module docstring), so it is computed once, and each sweep returns the whole grid.
    ``frame.attrs["sweep"]`` says what this process did: the keys it ``computed``, how many
    runs it ``loaded`` from files at the start, how many others computed while it ran
    (``by_others``; the three add up to the grid) and which dead holders' claims it
    ``taken_over``.

    Args:
        grid: :class:`RunSpec` objects, e.g. from :func:`make_grid`.
        backend: ``"serial"`` (this process), ``"loky"`` (``joblib.Parallel`` worker
            processes) or ``"ray"`` (Ray tasks: on the cluster the environment variable
            ``RAY_ADDRESS`` names, e.g. ``auto`` after ``ray start --head``; else a local
            ``ray.init(num_cpus=n_jobs)``; or whatever Ray this process already joined).
        n_jobs: Parallel workers (``-1``: all cores).
        out_dir: Directory of the per-run files, or ``None`` to keep results in memory only.
        progress: Show a tqdm progress bar over runs.
        fmt: ``"parquet"`` (falls back to CSV with a warning if pyarrow is missing) or ``"csv"``.
        imports: Modules (dotted names) to import in this process and, before their first
            run, in every worker: ones that register planning rewards
            (:func:`~bam_rl.agents.rewards.register_reward`) or environments the runs name.
            loky and Ray workers are fresh processes that know only what ``bam_rl``
            registers; they search this process's ``sys.path`` too (on a Ray cluster the
            module must be importable on every node).

    Returns:
        The concatenated rollout frames (see :func:`~bam_rl.harness.rollout`, plus
        ``seed_index``).

    Raises:
        ValueError: For an unknown backend or format, a bad ``n_jobs``, duplicate runs, or
            ``backend="ray"`` without Ray installed.
        OSError: When a run file cannot be written (a full disk: the message names the file;
            the folder keeps only whole runs, and a rerun completes the rest), or when
            something else sits where a claim belongs (:class:`~bam_rl.harness.claims.ClaimError`).
        ImportError: When a module of ``imports`` cannot be imported (or whatever it raises).
    """
    from tqdm.auto import tqdm

    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; accepted backends: {', '.join(BACKENDS)}")
    n_jobs = check_jobs(n_jobs)
    fmt = _resolve_format(fmt)
    if isinstance(imports, str):
        imports = [imports]
    imports = tuple(imports)
    _import_modules(imports)
    specs = _check_grid(grid)
    directory = None if out_dir is None else Path(out_dir)
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)

    paths: list[Path | None] = [None] * len(specs)
    results: list[pd.DataFrame | None] = [None] * len(specs)
    todo: list[int] = []
    for index, spec in enumerate(specs):
        if directory is not None and _load_verified(directory, spec, index, paths, results):
            continue
        todo.append(index)

    book = None if directory is None else ClaimBook(directory)
    if book is not None and directory is not None:
        # temporaries of runs nobody is writing now (a live writer holds the run's claim)
        idle = {spec.key for spec in specs if not _held_elsewhere(book, spec.key)}
        _remove_stale_temporaries(directory, idle)
    computed: list[int] = []
    waited: list[int] = []
    by_others: list[int] = []  # runs other processes finished while this one ran

    def finished(index: int, frame: pd.DataFrame) -> None:
        computed.append(index)
        settings = frame.attrs.pop("settings", None)
        if directory is None:
            results[index] = frame
            return
        path = directory / f"{specs[index].key}.{fmt}"
        _discard([_record_path(path)])  # a stale record never vouches for the new file
        _write_run(frame, path, fmt, specs[index], settings)
        _discard(p for p in _existing(directory, specs[index].key) if p != path)
        paths[index] = path
        assert book is not None
        book.release(specs[index].key)

    def claimed(indices: Iterable[int]) -> Iterable[tuple[int, RunSpec]]:
        """The runs this process computes, claimed one by one as workers ask for work;
        the others (finished or held elsewhere) are left for the end."""
        for index in indices:
            spec = specs[index]
            if book is None:
                yield index, spec
                continue
            assert directory is not None
            if _load_verified(directory, spec, index, paths, results, warn=False):
                by_others.append(index)
                bar.update(1)
                continue
            if not book.try_claim(spec.key):
                waited.append(index)
                continue
            # ours now: a file written before we claimed is whole (or a writer's leftover)
            if _load_verified(directory, spec, index, paths, results, warn=False):
                by_others.append(index)
                book.release(spec.key)
                bar.update(1)
                continue
            _remove_stale_temporaries(directory, {spec.key})
            yield index, spec

    try:
        with tqdm(
            total=len(specs), initial=len(specs) - len(todo), desc="runs", disable=not progress
        ) as bar:
            for index, frame in _execute(backend, n_jobs, claimed(todo), imports):
                finished(index, frame)
                bar.update(1)
            # runs other processes held: wait for their files, or take over a dead holder's
            pending = list(waited)
            while pending:
                assert book is not None and directory is not None
                still = []
                for index in pending:
                    spec = specs[index]
                    if _load_verified(directory, spec, index, paths, results, warn=False):
                        by_others.append(index)
                        bar.update(1)
                    elif book.try_claim(spec.key):
                        if _load_verified(directory, spec, index, paths, results, warn=False):
                            by_others.append(index)
                            book.release(spec.key)
                        else:
                            _remove_stale_temporaries(directory, {spec.key})
                            finished(index, execute_run(spec))
                        bar.update(1)
                    else:
                        still.append(index)
                pending = still
                if pending:
                    time.sleep(WAIT_INTERVAL)
    finally:
        if book is not None:
            book.release_all()

    stats = {
        "computed": [specs[i].key for i in computed],
        "loaded": len(specs) - len(todo),
        "by_others": len(by_others),
        "taken_over": [] if book is None else list(book.taken_over),
    }
    if directory is None:
        frame = _finish(f for f in results if f is not None)
    else:
        # runs computed now are read back from their files, so a resumed sweep returns
        # exactly what an uninterrupted one does
        mine = set(computed)
        frame = _finish(
            f if f is not None and index not in mine else read_run(path)
            for index, (f, path) in enumerate(zip(results, paths, strict=True))
            if path is not None
        )
    frame.attrs["sweep"] = stats
    return frame


def _held_elsewhere(book: ClaimBook, key: str) -> bool:
    claim = book.read(key)
    return claim is not None and not book.is_stale(claim)


def _load_verified(
    directory: Path,
    spec: RunSpec,
    index: int,
    paths: list[Path | None],
    results: list[pd.DataFrame | None],
    warn: bool = True,
) -> bool:
    """Loads ``spec``'s run file into ``paths``/``results`` if one matches its record."""
    for path in _existing(directory, spec.key):
        frame, reason = _verify(path, spec)
        if frame is not None:
            paths[index], results[index] = path, frame
            return True
        if warn:
            warnings.warn(f"recomputing run {spec.key}: {path.name} {reason}", stacklevel=3)
    return False


def shard(grid: Iterable[RunSpec], index: int, count: int) -> list[RunSpec]:
    """Shard ``index`` of ``count`` of a grid: every ``count``-th run from ``index`` on, so
    ``count`` processes (a SLURM or job array) split a grid without a coordinator.

    Raises:
        ValueError: Unless ``0 <= index < count``.
    """
    count = check_int("count", count)
    index = check_int("index", index, minimum=0)
    if index >= count:
        raise ValueError(f"index must be in [0, {count}) for {count} shards, got {index}")
    return list(grid)[index::count]


def check_backend(backend: Any) -> str:
    """``backend`` if :func:`run_many` can run on it here: one of :data:`BACKENDS`, and for
    ``"ray"`` an installed Ray (``bam-rl reproduce`` checks it before anything runs;
    :func:`run_many` imports Ray only when a run is left to compute).

    Raises:
        ValueError: Naming ``backend`` and the accepted ones, or saying Ray is not installed
            (and how to install it).
    """
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; accepted backends: {', '.join(BACKENDS)}")
    if backend == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise ValueError(
                "backend='ray' needs Ray, which is not installed: pip install 'bam-rl[ray]'"
            ) from None
    return backend


def _execute(
    backend: str, n_jobs: int, jobs: Iterable[tuple[int, RunSpec]], imports: Sequence[str] = ()
) -> Iterable[tuple[int, pd.DataFrame]]:
    """Yields ``(index, frame)`` as runs finish; ``jobs`` is consumed as workers free up
    (serial and loky), so runs are claimed only when they are about to start. Workers import
    ``imports`` first (this process did, in :func:`run_many`)."""
    path = tuple(sys.path) if imports else ()
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
        parent = os.getpid()
        yield from parallel(
            delayed(_run_indexed)(index, spec, parent, imports, path) for index, spec in jobs
        )
    else:
        yield from _execute_ray(n_jobs, jobs, imports, path)


def _execute_ray(
    n_jobs: int,
    jobs: Iterable[tuple[int, RunSpec]],
    imports: Sequence[str] = (),
    path: Sequence[str] = (),
) -> Iterable[tuple[int, pd.DataFrame]]:
    check_backend("ray")  # Ray installed, or a ValueError saying how to install it
    import ray

    if not ray.is_initialized():
        if os.environ.get("RAY_ADDRESS"):  # a running cluster (`ray start --head` …)
            ray.init(address=os.environ["RAY_ADDRESS"], log_to_driver=False)
        else:
            ray.init(
                num_cpus=None if n_jobs < 0 else n_jobs,
                include_dashboard=False,
                ignore_reinit_error=True,
                log_to_driver=False,
            )
    remote = ray.remote(_run_indexed)
    pending = [remote.remote(index, spec, None, imports, path) for index, spec in jobs]
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for ref in done:
            yield ray.get(ref)
