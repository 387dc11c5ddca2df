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
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import warnings
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd

from bam_rl.harness.files import write_frame
from bam_rl.checks import check_int
from bam_rl.harness.registry import check_agent_name, check_env_id, make_agent
from bam_rl.harness.runner import check_budget, rollout

__all__ = [
    "BACKENDS",
    "SORT_COLUMNS",
    "RunSpec",
    "execute_run",
    "make_grid",
    "read_run",
    "run_many",
]

#: Execution backends of :func:`run_many`.
BACKENDS: tuple[str, ...] = ("serial", "loky", "ray")

#: Sort order of the frame :func:`run_many` returns.
SORT_COLUMNS: tuple[str, ...] = ("method", "config", "seed", "step")


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
    seeds = check_int("seeds", seeds)
    check_budget(n_steps, n_episodes)
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
        The concatenated rollout frames (see :func:`~bam_rl.harness.rollout`, plus
        ``seed_index``).

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
            write_frame(frame, path, fmt)
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
