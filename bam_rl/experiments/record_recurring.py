"""A revisit of the recurring-worlds benchmark you can watch (``bam-rl record --recurring NAME``).

:func:`record_recurring` does for an environment of the recurring-worlds benchmark (``bam-rl
reproduce recurring-worlds``, :mod:`bam_rl.experiments.recurring`) what
:func:`~bam_rl.experiments.record.record_swingup` does for the cart-pole: it builds that
experiment's episodic runs of one seed with the experiment's own grid, replays them through the
schedule A → B → A → C → B up to the first trial of a world's return (A's by default) and
renders that trial side by side (segment BAM beside recursive Bayes by default). Only the
suite's MuJoCo environments (:data:`RECURRING_NAMES`) are rendered: the classic-control ones
draw with pygame, which bam-rl does not install. The run loop, the labels and the GIF writing
are :mod:`bam_rl.experiments.record`'s.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bam_rl.experiments.record import (
    check_fps,
    check_frame_size,
    check_methods,
    check_seed_index,
    label_frame,
    render_states,
    replay_trial,
    revisited_trial,
    write_gif,
)

__all__ = [
    "NOT_RENDERED",
    "RECURRING_METHODS",
    "RECURRING_NAMES",
    "RECURRING_REVISITS",
    "TRIALS_COLUMNS",
    "ReplayMismatch",
    "check_recurring",
    "expected_returns",
    "record_recurring",
    "recurring_labels",
    "recurring_path",
    "recurring_plan",
    "recurring_runs",
    "recurring_trial_steps",
]

#: The suite environments ``record --recurring`` renders: the MuJoCo ones (headless, EGL).
RECURRING_NAMES = ("InvertedPendulum", "InvertedDoublePendulum", "Reacher")
#: Why the suite's other environments are not rendered.
NOT_RENDERED = {
    "CartPoleSwingUp": "the cart-pole swing-up is 'bam-rl record' without --recurring",
    **{
        name: "its classic-control rendering needs pygame, which bam-rl does not install"
        for name in ("Pendulum", "MountainCar", "CartPole")
    },
}
#: The runs a recurring recording shows by default, left to right.
RECURRING_METHODS = ("bam_segments", "recursive")
#: ``revisit`` of a recurring recording: the world whose return is shown.
RECURRING_REVISITS = {1: "A", 2: "B"}


class ReplayMismatch(ValueError):
    """A replayed trial whose return is not the results folder's: not the same run."""


def recurring_path(name: str) -> str:
    """Where :func:`record_recurring` writes by default: ``recurring_<Name>.gif`` in the
    working directory."""
    return f"recurring_{name}.gif"


def check_recurring(name: Any) -> str:
    """``name`` if :func:`record_recurring` renders it (:data:`RECURRING_NAMES`), else a
    ``ValueError`` naming the accepted ones (and why ``name`` is not one)."""
    if name in RECURRING_NAMES:
        return str(name)
    why = f" ({name}: {NOT_RENDERED[name]})" if name in NOT_RENDERED else ""
    raise ValueError(f"NAME must be one of {', '.join(RECURRING_NAMES)}{why}, got {name!r}")


def recurring_labels() -> dict[str, str]:
    """Panel labels of the recurring experiment's methods (its ``LABELS``)."""
    from bam_rl.experiments.recurring import LABELS as labels

    return dict(labels)


def recurring_runs(
    name: str, seed_index: int, quick: bool = False, methods: Sequence[str] | None = None
) -> dict[str, Any]:
    """The recurring experiment's episodic runs (:class:`~bam_rl.harness.RunSpec`) of suite
    environment ``name`` and seed index ``seed_index``, by method, built by the experiment's
    own :func:`~bam_rl.experiments.recurring.grid` (``quick``: its ``--quick``
    settings: one 30-step trial per world, a short planner)."""
    from bam_rl.experiments.recurring import grid

    name = check_recurring(name)
    seed_index = check_seed_index(seed_index)
    specs = grid(seed_index + 1, quick, envs=[name], settings=("episodic",), methods=methods)
    return {spec.method: spec for spec in specs if spec.seed_index == seed_index}


def recurring_plan(
    name: str,
    seed: int,
    revisit: int = 1,
    quick: bool = False,
    episode_trial: int = 1,
    methods: Sequence[str] = RECURRING_METHODS,
) -> tuple[dict[str, Any], tuple[float, ...], int]:
    """What :func:`record_recurring` replays: the runs of ``methods`` (by method), the world's
    value in every trial and the 0-based trial shown (trial ``episode_trial`` of world A's
    return for ``revisit=1``, of B's for 2). ``ValueError`` for what the experiment lacks,
    before anything runs."""
    from bam_rl.wrappers.recurring import SUITE

    name = check_recurring(name)
    if revisit not in RECURRING_REVISITS or isinstance(revisit, bool):
        raise ValueError(
            f"revisit must be 1 (world A's return) or 2 (world B's) with a recurring "
            f"environment, got {revisit!r}"
        )
    if episode_trial not in (1, 2) or isinstance(episode_trial, bool):
        raise ValueError(f"episode_trial must be 1 or 2, got {episode_trial!r}")
    check_methods(methods, recurring_labels())
    runs = recurring_runs(name, seed, quick, methods)
    first = runs[methods[0]]
    per_world = first.env_kwargs.get("trials_per_world", SUITE[name].trials_per_world)
    values = SUITE[name].values(per_world)
    if len(values) != first.n_episodes:  # the experiment runs the whole schedule
        raise RuntimeError(
            f"{name}'s runs have {first.n_episodes} trials, its schedule {len(values)}"
        )
    return runs, values, revisited_trial(values, offset=episode_trial - 1, revisit=revisit)


def recurring_trial_steps(spec: Any, name: str) -> int:
    """Steps of a trial of run ``spec``: its ``trial_steps``, ``max_steps`` or
    ``max_episode_steps`` (the recurring ids accept each, agreeing), else the suite's, else the
    environment's own limit."""
    import gymnasium as gym

    from bam_rl.wrappers.recurring import SUITE

    given = (spec.env_kwargs.get(k) for k in ("trial_steps", "max_steps", "max_episode_steps"))
    steps = next((s for s in given if s), None) or SUITE[name].max_episode_steps
    return int(steps or gym.spec(SUITE[name].env_id).max_episode_steps or 1000)


def expected_returns(
    folder: str | Path, name: str, seed: int, trial: int, methods: Sequence[str], value: float
) -> dict[str, float]:
    """The returns of trial ``trial`` (0-based) of seed index ``seed`` of ``methods`` on
    ``name`` (episodic) in ``folder/trials.csv`` of ``bam-rl reproduce recurring-worlds``
    (``folder``: the experiment's folder or the ``--out`` of ``reproduce``, which holds it as
    ``recurring-worlds/``), by method. ``ValueError`` when the file, one of its columns
    (:data:`TRIALS_COLUMNS`: a ``trials.csv`` of another experiment) or a row is missing, when
    a row is there more than once, or when the row's world value is not ``value`` (a folder of
    another size of the experiment)."""
    from bam_rl.experiments.recurring import EXPERIMENT
    from bam_rl.harness.files import read_results

    if not (Path(folder) / "trials.csv").is_file() and (Path(folder) / EXPERIMENT).is_dir():
        folder = Path(folder) / EXPERIMENT
    trials = read_results(folder, "trials.csv")
    if trials is None:
        raise ValueError(
            f"no trials.csv in {str(folder)!r} nor in its {EXPERIMENT}/ "
            "(of 'reproduce recurring-worlds')"
        )
    missing = [column for column in TRIALS_COLUMNS if column not in trials.columns]
    if missing:
        raise ValueError(
            f"{str(folder)!r}/trials.csv is not one of 'reproduce {EXPERIMENT}': it lacks the "
            f"columns {', '.join(missing)} (expected {', '.join(TRIALS_COLUMNS)}; it has "
            f"{', '.join(map(str, trials.columns))}){_written_by(Path(folder), EXPERIMENT)}"
        )
    rows = trials[
        (trials["env"] == name)
        & (trials["setting"] == "episodic")
        & (trials["seed_index"] == seed)
        & (trials["trial"] == trial)
    ]
    found = {}
    for method in methods:
        row = rows[rows["method"] == method]
        what = f"{name} (episodic), method {method}, seed {seed}, trial {trial} (0-based)"
        if len(row) > 1:
            raise ValueError(
                f"{str(folder)!r}/trials.csv has {len(row)} rows of {what}, not one: a damaged "
                f"or merged file (rerun 'bam-rl reproduce {EXPERIMENT}')"
            )
        if len(row) != 1:
            raise ValueError(f"{str(folder)!r}/trials.csv has no row of {what}")
        world = float(row["world_value"].iloc[0])
        if not np.isclose(world, value):
            raise ValueError(
                f"{str(folder)!r}/trials.csv has {name}'s trial {trial} in a world of value "
                f"{world:g}, not {value:g}: a run of another size (--quick?)"
            )
        found[method] = float(row["score"].iloc[0])
    return found


#: The columns :func:`expected_returns` reads from a ``trials.csv`` of the experiment.
TRIALS_COLUMNS = ("env", "setting", "method", "seed_index", "trial", "world_value", "score")


def _written_by(folder: Path, expected: str) -> str:
    """Which experiment wrote ``folder``, when its name is another experiment's than
    ``expected`` (``reproduce`` writes each into ``--out/NAME``), else ``""``."""
    from bam_rl.experiments import REPRODUCTIONS

    name = folder.resolve().name
    if name in REPRODUCTIONS and name != expected:
        return f": its folder is named after 'reproduce {name}', which wrote it"
    return ""


def _pad(frames: list[np.ndarray], length: int) -> list[np.ndarray]:
    """``frames`` held on the last one up to ``length`` (a trial that ended early)."""
    return frames + [frames[-1]] * (length - len(frames))


def record_recurring(
    name: str,
    path: str | Path | None = None,
    seed: int = 0,
    revisit: int = 1,
    size: tuple[int, int] = (320, 240),
    every: int = 3,
    fps: float | None = None,
    quick: bool = False,
    progress: Callable[[str], None] | None = print,
    methods: Sequence[str] = RECURRING_METHODS,
    episode_trial: int = 1,
    results: str | Path | None = None,
) -> dict[str, Any]:
    """Renders the recurring experiment's episodic runs of ``methods`` (default segment BAM
    and recursive Bayes) on suite environment ``name`` side by side on trial
    ``episode_trial`` (default the first) of a world's return (``revisit`` 1: A's, 2: B's) of
    seed ``seed``, and writes a looping GIF to ``path``.

    Args:
        name: One of :data:`RECURRING_NAMES`.
        path: The GIF's path (default ``recurring_<name>.gif`` in the working directory).
        seed: Seed index of the experiment (0–4 in ``bam-rl reproduce recurring-worlds``).
        revisit: 1 (world A again, visit 3 of A B A C B) or 2 (world B again, visit 5).
        size: Width and height of each run's frames in pixels.
        every: Keep every ``every``-th step's frame.
        fps: Frames per second of the GIF (default: real time).
        quick: The experiment's ``--quick`` runs (one 30-step trial per world, a short
            planner); every frame then carries :data:`~bam_rl.experiments.record.SMOKE_LABEL`.
        progress: Called with a line per trial (``None``: silent).
        methods: Two to four methods of the recurring experiment, left to right.
        episode_trial: Which trial of the world's return: 1 or 2.
        results: A folder of ``bam-rl reproduce recurring-worlds``: each replayed return is
            checked against its ``trials.csv`` (``ValueError`` when one differs).

    Returns:
        ``path``, ``env``, ``seed``, ``trial`` (0-based), ``world``, ``parameter``, ``value``,
        each run's return and steps on the trial, ``checked`` (whether ``results`` confirmed
        them), the GIF's size in bytes and the wall time.
    """
    import gymnasium as gym

    from bam_rl.wrappers.recurring import SUITE, recurring_id

    name = check_recurring(name)
    shown = check_methods(methods, recurring_labels())
    runs, values, trial = recurring_plan(name, seed, revisit, quick, episode_trial, methods)
    suite = SUITE[name]
    steps = recurring_trial_steps(runs[methods[0]], name)
    size, every = check_frame_size(size, every, steps)
    if fps is not None:  # before minutes of rendering
        check_fps(fps)
    value = float(values[trial])
    expected = (
        None
        if results is None
        else expected_returns(results, name, seed, trial, list(methods), value)
    )
    os.environ.setdefault("MUJOCO_GL", "egl")
    started = time.perf_counter()
    world = RECURRING_REVISITS[revisit]
    replayed = {}
    for method, _ in shown:
        states, rewards = replay_trial(runs[method], trial, progress=progress)
        total = float(np.sum(rewards))
        if expected is not None and not np.isclose(total, expected[method], rtol=1e-9):
            raise ReplayMismatch(
                f"the replayed return of {method} on trial {trial} ({total!r}) differs from "
                f"{str(results)!r}/trials.csv ({expected[method]!r}): not the same run"
            )
        replayed[method] = (states, rewards, total)
    panels = []
    for method, label in shown:
        states, rewards, total = replayed[method]
        frames = render_states(states[:-1:every], size, env_id=suite.env_id)
        lines = [
            label,
            f"return {total:+.2f} in {len(rewards)} steps",
            f"world {world}: {suite.parameter} = {value:g}",
        ]
        panels.append([label_frame(frame, lines) for frame in frames])
    length = max(len(frames) for frames in panels)
    panels = [_pad(frames, length) for frames in panels]
    ordinal = {1: "1st", 2: "2nd"}[episode_trial]
    caption = [
        f"{name} ({recurring_id(name)}), seed {seed}, episodic",
        f"trial {trial + 1} of {len(values)}: {ordinal} trial back in world {world} "
        f"(A B A C B), {suite.parameter} = {value:g}",
    ]
    env = gym.make(suite.env_id)
    dt = float(env.unwrapped.dt)  # type: ignore[attr-defined]
    env.close()
    written = write_gif(
        recurring_path(name) if path is None else path,
        panels,
        caption,
        quick,
        fps or 1.0 / (dt * every),
    )
    return {
        "path": str(written),
        "env": name,
        "seed": seed,
        "trial": trial,
        "world": world,
        "parameter": suite.parameter,
        "value": value,
        **{f"return_{m}": replayed[m][2] for m, _ in shown},
        **{f"steps_{m}": len(replayed[m][1]) for m, _ in shown},
        "checked": expected is not None,
        "bytes": written.stat().st_size,
        "seconds": time.perf_counter() - started,
    }
