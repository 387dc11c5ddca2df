"""A swing-up you can watch: BAM beside recursive Bayes on a revisited gravity (``bam-rl record``).

The animation replays runs of the episodic experiment (``bam-rl reproduce cartpole-episodic``)
exactly: for a seed index it builds the same run specifications (environment, agent options,
environment and agent seeds derived from the seed index) and runs BAM and recursive Bayes
through the paper's episodic schedule (:data:`envs.EPISODIC_SCHEDULE`: 9.81, 11.15, 3.72,
11.15, … m/s², 15 trials each, changes announced), so every trial starts from the same initial
state for both and each trial's reward is the one in the experiment's ``trials.csv``. In the
paper's protocol BAM chooses its readout *after the first trial* of an episode, so that first
trial is planned from the base prior by both agents; the animation therefore shows the
**second trial of a revisited episode** (by default the first revisit, trial 47 of 90, gravity
11.15 m/s²: Neptune again), where BAM plans with the trials it remembered and recursive Bayes
with one trial of data. Frames are rendered headless (``MUJOCO_GL=egl``), placed side by
side, labelled, and written as a GIF with imageio (by default ``./swingup.gif``; the docs'
figure is written only when asked, ``--out docs/figures/swingup.gif``). A ``--quick``
recording carries a red smoke-test line (:data:`SMOKE_LABEL`) in every frame.

``bam-rl record --recurring NAME`` does the same for an environment of the recurring-worlds
benchmark (:mod:`bam_rl.experiments.record_recurring`); both recordings share this module's run
loop (:func:`replay_trial`, through :func:`~bam_rl.harness.runner.rollout`, the loop the
experiments run), its labels and its GIF writing.
"""

from __future__ import annotations

import functools
import itertools
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_PATH",
    "LABELS",
    "MAX_SEED_INDEX",
    "RECORDED",
    "SMOKE_LABEL",
    "check_fps",
    "check_frame_size",
    "check_methods",
    "check_seed_index",
    "experiment_runs",
    "label_frame",
    "record_swingup",
    "replay_plan",
    "replay_trial",
    "revisited_trial",
    "run_until",
    "write_gif",
]

#: Where :func:`record_swingup` and ``bam-rl record`` write by default: the working directory.
DEFAULT_PATH = "swingup.gif"
#: The line every frame of a ``quick`` recording carries (red, above the caption).
SMOKE_LABEL = "SMOKE TEST (--quick): short runs, a small planner; not the experiment's result"
#: Colours of a frame's text lines: the captions, and the smoke-test label.
_TEXT, _WARNING = (0, 0, 0), (176, 0, 32)

#: The runs shown by default, left to right: (method of the episodic experiment, label).
RECORDED: tuple[tuple[str, str], ...] = (("bam", "BAM"), ("recursive", "recursive Bayes"))
#: Panel labels of the episodic experiment's methods (``methods=`` of :func:`record_swingup`).
LABELS = {
    "bam": "BAM (the paper's)",
    "recursive": "recursive Bayes",
    "bam_segments": "segment BAM (beyond the paper)",
    "gt": "ground-truth MPC",
}


def check_methods(
    methods: Any, labels: dict[str, str] | None = None
) -> tuple[tuple[str, str], ...]:
    """``methods`` (names of the experiment's methods, two to four; ``labels``: the accepted
    names and their panel labels, default the episodic experiment's :data:`LABELS`) as
    (method, label) panels, or ``ValueError`` naming the accepted ones."""
    labels = LABELS if labels is None else labels
    names = [methods] if isinstance(methods, str) else list(methods)
    if not 2 <= len(names) <= 4 or any(name not in labels for name in names):
        raise ValueError(
            f"methods must be two to four of {sorted(labels)} (left to right), got {methods!r}"
        )
    return tuple((name, labels[name]) for name in names)


def revisited_trial(gravities: Sequence[float], offset: int = 1, revisit: int = 1) -> int:
    """0-based index of trial ``offset`` (0: the first) of the ``revisit``-th episode (1: the
    first) whose gravity was seen in an earlier episode.

    >>> revisited_trial([9.81, 9.81, 3.72, 3.72, 9.81, 9.81])
    5
    >>> revisited_trial([9.81, 3.72, 9.81, 3.72], offset=0, revisit=2)
    3
    """
    if isinstance(revisit, bool) or not isinstance(revisit, int) or revisit < 1:
        raise ValueError(f"revisit must be an integer >= 1, got {revisit!r}")
    seen: set[float] = set()
    previous = None
    found = 0
    for index, gravity in enumerate(gravities):
        if gravity != previous:
            if gravity in seen:
                found += 1
                if found == revisit:
                    if index + offset >= len(gravities) or gravities[index + offset] != gravity:
                        raise ValueError(
                            f"the revisited episode at trial {index} is shorter "
                            f"than {offset + 1} trials"
                        )
                    return index + offset
            if previous is not None:
                seen.add(float(previous))
            previous = gravity
    if found:
        raise ValueError(f"the schedule revisits a gravity {found} times, not {revisit}")
    raise ValueError("no gravity is revisited in the schedule")


_TRIAL_STEPS = 200  # steps of a cart-pole trial (the environment's max_steps)

#: Largest seed index ``record`` replays (the paper's experiment has 0–4).
MAX_SEED_INDEX = 999


def check_seed_index(seed_index: Any) -> int:
    """``seed_index`` as an int in [0, :data:`MAX_SEED_INDEX`], else a ``ValueError`` naming
    ``seed``."""
    from bam_rl.checks import check_int

    seed_index = check_int("seed", seed_index, minimum=0)
    if seed_index > MAX_SEED_INDEX:
        raise ValueError(f"seed must be a seed index in [0, {MAX_SEED_INDEX}], got {seed_index}")
    return seed_index


def experiment_runs(seed_index: int, quick: bool = False) -> dict[str, Any]:
    """The episodic experiment's run specifications (:class:`~bam_rl.harness.RunSpec`) of
    seed index ``seed_index`` (0 … :data:`MAX_SEED_INDEX`), by method (``quick``: those of
    ``reproduce --quick``)."""
    from bam_rl.experiments.cartpole import cartpole_grid

    seed_index = check_seed_index(seed_index)
    grid = cartpole_grid("episodic", seeds=seed_index + 1, quick=quick)
    return {spec.method: spec for spec in grid if spec.seed_index == seed_index}


def replay_plan(
    seed: int, revisit: int = 1, quick: bool = False, episode_trial: int = 2
) -> tuple[dict[str, Any], tuple[float, ...], int]:
    """What :func:`record_swingup` replays: the runs of seed index ``seed`` (by method), the
    gravity of every trial and the 0-based trial shown (trial ``episode_trial``, 1 or 2, of the
    ``revisit``-th revisited episode). Raises ``ValueError`` for a seed index, revisit or
    episode trial the experiment lacks, before anything runs."""
    from bam_rl import envs

    if episode_trial not in (1, 2) or isinstance(episode_trial, bool):
        raise ValueError(f"episode_trial must be 1 or 2, got {episode_trial!r}")
    runs = experiment_runs(seed, quick)
    first = runs[RECORDED[0][0]]
    gravities = tuple(first.env_kwargs.get("gravity_schedule", envs.EPISODIC_SCHEDULE))
    return runs, gravities, revisited_trial(gravities, offset=episode_trial - 1, revisit=revisit)


def replay_trial(
    spec: Any, trial: int, progress: Callable[[str], None] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Runs the experiment's run ``spec`` through trial ``trial`` (0-based) as
    :func:`~bam_rl.harness.execute_run` does (the same environment, agent and seeds, through
    the same loop, :func:`~bam_rl.harness.runner.rollout`), stops after that trial and keeps
    its simulator states.

    Returns:
        The ``(qpos, qvel)`` of every step of trial ``trial`` (the initial state first, the
        state after the last step last), one row per state, and the trial's rewards.
    """
    import gymnasium as gym

    import bam_rl  # noqa: F401  (registers the environments)
    from bam_rl.harness.registry import make_agent
    from bam_rl.harness.runner import rollout

    env = gym.make(spec.env_id, **spec.env_kwargs)
    env_seed, agent_seed = spec.seeds()
    try:
        agent = make_agent(
            spec.agent_name, env, agent_seed, n_steps=spec.n_steps, **spec.agent_kwargs
        )
        watched = _watch_class()(env, trial, spec.agent_name, progress)
        rollout(watched, agent, n_episodes=trial + 1, seed=env_seed)
    finally:
        env.close()
    return np.asarray(watched.states), np.asarray(watched.rewards, dtype=np.float64)


@functools.cache
def _watch_class() -> Any:
    """The pass-through wrapper :func:`replay_trial` runs: it keeps the simulator state of
    every step of one trial and that trial's rewards, and reports a line per finished trial
    (a :class:`gymnasium.Wrapper`, defined when first used: importing this module loads no
    gymnasium)."""
    import gymnasium as gym

    class TrialWatch(gym.Wrapper):
        def __init__(
            self, env: Any, trial: int, name: str, progress: Callable[[str], None] | None
        ) -> None:
            super().__init__(env)
            self.trial, self.name, self.progress = trial, name, progress
            self.data: Any = env.unwrapped.data
            self.episode = -1
            self.states: list[np.ndarray] = []
            self.rewards: list[float] = []
            self.started = time.perf_counter()

        def keep(self) -> None:
            if self.episode == self.trial:
                self.states.append(np.concatenate([self.data.qpos, self.data.qvel]))

        def reset(self, **kwargs: Any) -> Any:
            result = self.env.reset(**kwargs)
            self.episode += 1
            self.started = time.perf_counter()
            self.keep()
            return result

        def step(self, action: Any) -> Any:
            result = self.env.step(action)
            if self.episode == self.trial:
                self.rewards.append(float(result[1]))
            self.keep()
            if (result[2] or result[3]) and self.progress is not None:
                # the trial's 0-based index, as the result's "trial" and trials.csv have it
                self.progress(
                    f"{self.name}: trial {self.episode} (0-based; {self.episode + 1} of "
                    f"{self.trial + 1} replayed), {_world_text(self.env, result[4])}, "
                    f"{time.perf_counter() - self.started:.1f} s"
                )
            return result

    return TrialWatch


def _world_text(env: Any, info: dict[str, Any]) -> str:
    """The world of a step: the cart-pole's ``g = …`` or a non-stationary world's context."""
    if "gravity" in info:
        return f"g = {float(info['gravity']):.2f}"
    try:
        context = env.get_wrapper_attr("context")
    except AttributeError:
        return "?"
    return ", ".join(f"{key} = {value:g}" for key, value in context.items())


def run_until(
    spec: Any, trial: int, progress: Callable[[str], None] | None = None
) -> tuple[np.ndarray, float]:
    """:func:`replay_trial` of a cart-pole run: trial ``trial``'s states and its mean reward
    ``cos(angle)``."""
    states, rewards = replay_trial(spec, trial, progress)
    return states, float(np.mean(rewards))


def render_states(
    states: np.ndarray,
    size: tuple[int, int] = (320, 240),
    distance: float = 3.6,
    env_id: str | None = None,
) -> list[np.ndarray]:
    """Renders simulator states (rows of ``qpos, qvel``) headless (``MUJOCO_GL=egl`` on
    machines without a display): the cart-pole's with a side camera that follows the cart, or,
    given ``env_id`` (a Gymnasium MuJoCo environment, e.g. ``"Reacher-v5"``), that
    environment's own ``rgb_array`` rendering."""
    import gymnasium as gym
    import mujoco

    import bam_rl  # noqa: F401

    if env_id is not None:
        return _render_gymnasium(states, size, env_id)
    # positions only: gravity does not matter; the frame size sets the offscreen buffer
    env = gym.make("bam_rl/GravityCartPole-v0", width=size[0], height=size[1])
    try:
        unwrapped: Any = env.unwrapped
        model, data = unwrapped.model, unwrapped.data
        camera = mujoco.MjvCamera()
        camera.type = mujoco.mjtCamera.mjCAMERA_TRACKING
        camera.trackbodyid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "cart")
        camera.distance, camera.azimuth, camera.elevation = distance, 90.0, -8.0
        frames = []
        with mujoco.Renderer(model, height=size[1], width=size[0]) as renderer:
            for state in states:
                data.qpos[:], data.qvel[:] = state[: model.nq], state[model.nq :]
                mujoco.mj_forward(model, data)
                renderer.update_scene(data, camera=camera)
                frames.append(renderer.render().copy())
    finally:
        env.close()
    return frames


def _render_gymnasium(states: np.ndarray, size: tuple[int, int], env_id: str) -> list[np.ndarray]:
    """:func:`render_states` of a Gymnasium MuJoCo environment: each state set with
    ``set_state`` and drawn by the environment's ``render()`` (its own camera). The world's
    parameter (a gravity, a mass) changes no geometry, so the plain environment draws it."""
    import gymnasium as gym

    env = gym.make(env_id, render_mode="rgb_array", width=size[0], height=size[1])
    try:
        env.reset(seed=0)
        unwrapped: Any = env.unwrapped
        nq = unwrapped.model.nq
        frames = []
        for state in states:
            unwrapped.set_state(state[:nq], state[nq:])
            frame: Any = env.render()
            frames.append(np.asarray(frame).copy())
    finally:
        env.close()
    return frames


def check_frame_size(
    size: Any, every: Any, steps: int = _TRIAL_STEPS
) -> tuple[tuple[int, int], int]:
    """Checks a recording's frame ``size`` (width, height) and ``every`` before anything
    runs: sides in ``[1, MAX_FRAME_SIDE]`` (the cart-pole's renderer), ``every`` in ``[1,
    steps]`` (a larger one keeps the first frame only, and would make a frame too long for a
    GIF) and the frames of a trial of ``steps`` steps (default the cart-pole's 200) of every
    panel within the memory budget (:func:`bam_rl.checks.check_memory`).

    Returns:
        ``((width, height), every)`` as ints.

    Raises:
        ValueError: Naming ``width``, ``height`` or ``every``.
    """
    from bam_rl.checks import check_int, check_memory
    from bam_rl.envs.gravity_cartpole import MAX_FRAME_SIDE

    width, height = check_int("width", size[0]), check_int("height", size[1])
    for name, side in (("width", width), ("height", height)):
        if side > MAX_FRAME_SIDE:
            raise ValueError(f"{name} must be an int in [1, {MAX_FRAME_SIDE}], got {side}")
    every = check_int("every", every)
    if every > steps:
        raise ValueError(
            f"every must be an int in [1, {steps}] (a trial has {steps} steps; a larger every "
            f"keeps its first frame only), got {every}"
        )
    frames = steps // every + 1
    # each panel's frames with their text band, then the combined frames (RGB bytes)
    check_memory(
        f"width = {width}, height = {height} with every = {every} ({frames} frames)",
        frames * 18 * width * (height + 64),
    )
    return (width, height), every


def label_frame(frame: np.ndarray, lines: Sequence[str], warning: str | None = None) -> np.ndarray:
    """``frame`` with ``lines`` of text on a white band above it; ``warning`` (e.g.
    :data:`SMOKE_LABEL`) first, in red."""
    from PIL import Image, ImageDraw, ImageFont

    try:
        font: Any = ImageFont.load_default(size=13)
    except TypeError:  # pragma: no cover - Pillow < 10.1
        font = ImageFont.load_default()
    texts = [(warning, _WARNING)] if warning else []
    texts += [(line, _TEXT) for line in lines]
    band = 18 * len(texts) + 4
    image = Image.new("RGB", (frame.shape[1], frame.shape[0] + band), "white")
    image.paste(Image.fromarray(frame), (0, band))
    draw = ImageDraw.Draw(image)
    for row, (text, colour) in enumerate(texts):
        draw.text((6, 3 + 18 * row), text, fill=colour, font=font)
    return np.asarray(image)


def write_gif(
    path: str | Path,
    panels: Sequence[Sequence[np.ndarray]],
    caption: Sequence[str],
    quick: bool,
    fps: float,
) -> Path:
    """Writes the labelled ``panels`` (one list of frames per run, of equal lengths) side by
    side as a looping GIF at ``path`` (parents created), every frame under the ``caption``
    lines and, when ``quick``, :data:`SMOKE_LABEL`; written atomically (an existing file is
    replaced whole or left as it was). ``ValueError`` naming ``fps`` (and nothing written) when
    a frame would last longer than a GIF holds (:data:`MAX_GIF_FRAME_MS`)."""
    import imageio.v2 as imageio

    from bam_rl._io import atomic_path

    gap = np.full((panels[0][0].shape[0], 6, 3), 255, dtype=np.uint8)
    combined: list[Any] = []
    for frames in zip(*panels, strict=True):
        row = [frames[0]]
        for frame in frames[1:]:
            row += [gap, frame]
        combined.append(
            label_frame(np.concatenate(row, axis=1), caption, SMOKE_LABEL if quick else None)
        )
    duration = _frame_duration(fps, combined)
    path = Path(path)
    with atomic_path(path) as temporary:  # a temporary name: the format is given
        imageio.mimsave(temporary, combined, format="GIF", duration=duration, loop=0)
    return path


#: The longest a GIF frame lasts, in milliseconds: its delay is a 16-bit count of 1/100 s.
MAX_GIF_FRAME_MS = 655_350


def check_fps(fps: Any) -> float:
    """``fps`` as a float, checked before anything renders: a finite number > 0 whose frames
    a GIF can hold (each within :data:`MAX_GIF_FRAME_MS`); ``ValueError`` naming ``fps``."""
    return 1000.0 / _frame_duration(fps, ())


def _frame_duration(fps: Any, frames: Sequence[np.ndarray]) -> float:
    """A GIF frame's duration in milliseconds at ``fps``, or ``ValueError`` naming ``fps``
    when the GIF cannot hold it: the writer merges a run of identical frames into one whose
    delay (a 16-bit count of centiseconds) must stay within :data:`MAX_GIF_FRAME_MS`."""
    from bam_rl.checks import check_real

    fps = check_real("fps", fps, lower=0.0, open_lower=True)
    duration = 1000.0 / fps
    limit = MAX_GIF_FRAME_MS + 10  # the writer keeps whole centiseconds
    longest = run = 1
    if duration * len(frames) >= limit:  # else no run of frames, however long, reaches it
        for previous, frame in itertools.pairwise(frames):
            run = run + 1 if np.array_equal(previous, frame) else 1
            longest = max(longest, run)
    if not duration * longest < limit:
        merged = f", and here {longest} identical frames in a row merge into one" * (longest > 1)
        raise ValueError(
            f"fps must be >= {1000.0 * longest / MAX_GIF_FRAME_MS:.4g} (a GIF frame lasts at "
            f"most {MAX_GIF_FRAME_MS / 1000:g} s{merged}), got {fps:g}"
        )
    return duration


def record_swingup(
    path: str | Path = DEFAULT_PATH,
    seed: int = 0,
    revisit: int = 1,
    size: tuple[int, int] = (320, 240),
    every: int = 3,
    fps: float | None = None,
    quick: bool = False,
    progress: Callable[[str], None] | None = print,
    methods: Sequence[str] = ("bam", "recursive"),
    episode_trial: int = 2,
) -> dict[str, Any]:
    """Renders the episodic experiment's runs of ``methods`` (default BAM and recursive Bayes)
    side by side on trial ``episode_trial`` (default the second) of a revisited episode of seed
    ``seed`` and writes a looping GIF to ``path``. ``methods=("bam_segments", "bam")`` with
    ``episode_trial=1`` shows segment BAM's in-trial readout (beyond the paper) beside the
    paper's BAM, which plans that trial from the base prior.

    Args:
        path: The GIF's path (parents created; default ``swingup.gif`` in the working
            directory).
        seed: Seed index of the experiment (0–4 in ``bam-rl reproduce cartpole-episodic``);
            the runs are that experiment's runs, trial for trial.
        revisit: Which revisited episode (1: the first; the paper's schedule revisits 11.15,
            3.72 and 9.81 m/s² in episodes 4, 5 and 6).
        size: Width and height of each agent's frames in pixels.
        every: Keep every ``every``-th step's frame (the simulator runs at 50 steps/s).
        fps: Frames per second of the GIF (default ``50 / every``: real time).
        quick: The runs of ``reproduce --quick`` (two trials per episode, a short planner);
            every frame then carries :data:`SMOKE_LABEL`.
        progress: Called with a line per trial (``None``: silent).
        methods: Two to four methods of the episodic experiment (:data:`LABELS`), left to
            right.
        episode_trial: Which trial of the revisited episode: 1 (the first, after a change
            announced at its start) or 2 (the first after the paper's readout).

    Returns:
        ``path``, ``seed``, ``trial`` (0-based), ``gravity``, each run's mean reward on the
        trial, the GIF's size in bytes and the wall time.
    """
    size, every = check_frame_size(size, every)
    if fps is not None:  # before minutes of rendering
        check_fps(fps)
    os.environ.setdefault("MUJOCO_GL", "egl")
    shown = check_methods(methods)
    started = time.perf_counter()
    runs, gravities, trial = replay_plan(seed, revisit, quick, episode_trial)
    gravity = float(gravities[trial])
    panels, rewards = [], {}
    for method, label in shown:
        spec = runs[method]
        name = spec.agent_name
        states, reward = run_until(spec, trial, progress=progress)
        rewards[name] = reward
        upright = np.cos(states[:-1, 1])  # hinge angle 0 = up: the per-step reward
        held = int(np.sum(upright > 0.9))
        frames = render_states(states[:-1:every], size)
        panels.append(
            [
                label_frame(
                    frame,
                    [
                        label,
                        f"{name}: cos {reward:+.2f}, upright {held * 0.02:.1f}/4.0 s",
                    ],
                )
                for frame in frames
            ]
        )
    ordinal = {1: "1st", 2: "2nd"}[episode_trial]
    caption = (
        f"seed {seed}, trial {trial + 1} of {len(gravities)}: {ordinal} trial of a revisited "
        f"episode, g = {gravity:.2f} m/s^2"
    )
    path = write_gif(path, panels, [caption], quick, fps or 50.0 / every)
    return {
        "path": str(path),
        "seed": seed,
        "trial": trial,
        "gravity": gravity,
        **{f"reward_{name}": value for name, value in rewards.items()},
        "bytes": path.stat().st_size,
        "seconds": time.perf_counter() - started,
    }
