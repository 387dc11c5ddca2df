"""MuJoCo cart-pole swing-up whose gravity follows a per-trial schedule (paper §4.2, App. D.1)."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from ._gl import choose_platform, platform_advice, preload_mujoco, window_advice

choose_platform()  # before MuJoCo is imported: it reads MUJOCO_GL once
# a platform MuJoCo cannot load (MUJOCO_GL=garbage, osmesa without OSMesa) disables rendering
# only: the simulation needs no OpenGL (render() raises this message)
_PLATFORM_FAILURE = preload_mujoco()

import mujoco  # noqa: E402
import numpy as np  # noqa: E402
from gymnasium import utils  # noqa: E402
from gymnasium.envs.mujoco import MujocoEnv  # noqa: E402
from gymnasium.spaces import Box  # noqa: E402

from bam_rl.checks import float_in_range, int_in_range, scalar_action  # noqa: E402

#: Why rendering failed in this process: MuJoCo aborts the interpreter if a renderer is
#: created again after a failed one, so every later render() raises this instead.
_RENDER_FAILURE: list[str] = [] if _PLATFORM_FAILURE is None else [_PLATFORM_FAILURE]

__all__ = ["GRAVITY_RANGE", "MAX_FRAME_SIDE", "GravityCartPoleEnv", "analytic_hanging_period"]

#: Absolute path of the MuJoCo model (package data).
ASSET_PATH = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "assets", "gravity_cartpole.xml"
)

#: Masses, centre-of-mass distance and pole inertia (about its centre of mass) in the XML.
CART_MASS, POLE_MASS, POLE_COM, POLE_INERTIA = 1.0, 0.1, 0.5, 0.1 * 1.0**2 / 12.0

DEFAULT_CAMERA_CONFIG: dict[str, Any] = {
    "trackbodyid": 1,
    "distance": 5.0,
    "azimuth": 90.0,
    "elevation": 0.0,
    "lookat": np.array([0.0, 0.0, 0.0]),
}

#: Accepted gravities (m/s²): from small moons (Ceres 0.28, Pluto 0.62) to about the Sun's
#: surface (274). Within it the 0.01 s RK4 step resolves the pole's motion; far beyond it
#: (g >= 1e5) MuJoCo's integrator diverges and resets the state.
GRAVITY_RANGE = (0.1, 300.0)
#: Largest accepted frame width or height in pixels.
MAX_FRAME_SIDE = 8192

_MODES = ("cycle", "hold")
_ACTUATIONS = ("continuous", "bang_bang")
_OPTIONS = ("gravity", "trial")


def analytic_hanging_period(gravity: float) -> float:
    """Small-oscillation period (s) of the hanging pole with the cart free and no force.

    ``ω² = m g l (M + m) / ((I + m l²)(M + m) − m² l²)`` for cart mass ``M``, pole mass ``m``,
    centre-of-mass distance ``l`` and pole inertia ``I`` about its centre of mass.
    """
    m, big_m, length, inertia = POLE_MASS, CART_MASS, POLE_COM, POLE_INERTIA
    omega2 = (m * gravity * length * (big_m + m)) / (
        (inertia + m * length**2) * (big_m + m) - (m * length) ** 2
    )
    return 2.0 * math.pi / math.sqrt(omega2)


class GravityCartPoleEnv(MujocoEnv, utils.EzPickle):
    r"""Cart-pole swing-up under gravity that changes between trials.

    ## Description
    The control task of the BAM paper (Nassar et al., ICLR 2022, §4.2 and App. D.1): swing a
    pole, hinged on a cart that slides on a frictionless rail, from hanging down to upright and
    keep it there. The simulated cart-pole "moves between planets": the gravity of each trial
    (one `reset` to the next) comes from `gravity_schedule`. MuJoCo model
    (`envs/assets/gravity_cartpole.xml`) with the classic Barto/Sutton/Anderson (Gymnasium
    `CartPole`) constants: cart 1.0 kg; pole 0.1 kg, 1.0 m long, centre of mass 0.5 m from the
    hinge, uniform-rod inertia $m L^2/12$ about its centre of mass; force ±10 N (gear 10,
    control range ±1). RK4 with a 0.01 s timestep and `frame_skip` 2, so one step is 0.02 s
    (two substeps keep the integration accurate during fast swings at the cost of Gymnasium's
    own `InvertedPendulum-v5`, which also runs two RK4 substeps per step). No joint damping,
    armature, friction loss or contacts; the hinge is unlimited and so is the slider: a
    swing-up has no termination and a rail limit would add non-smooth constraint forces that a
    learned smooth dynamics model (the paper's RFF regression) cannot represent; the cart
    position is observed, so an agent may keep the cart near the origin if it wishes.

    ## Action Space
    `Box(-1.0, 1.0, (1,), float32)`: force on the cart in units of 10 N. With
    `actuation="bang_bang"` only the sign counts: positive → +10 N, negative → −10 N, exactly
    0 → no force. Out-of-range, NaN or wrongly shaped actions raise `ValueError`.

    ## Observation Space
    `Box(-inf, inf, (5,), float64)` (cos/sin bounded by ±1):

    | Num | Observation                       | Unit  |
    |-----|-----------------------------------|-------|
    | 0   | cart position                     | m     |
    | 1   | cart velocity                     | m/s   |
    | 2   | cos(pole angle), 0 = upright      |       |
    | 3   | sin(pole angle), + = tip toward +x|       |
    | 4   | pole angular velocity             | rad/s |

    ## Rewards
    `cos(angle)` after the step, a Python `float` in [−1, 1] (1 = upright).

    ## Starting State
    Pole hanging down (angle exactly π); cart position, cart velocity and angular velocity
    uniform in (−`reset_noise_scale`, `reset_noise_scale`) = (−0.05, 0.05), from `np_random`.

    ## Episode End
    One episode is one *trial*: no termination; truncation after `max_steps` (200) steps.

    ## Arguments
    ```python
    import gymnasium as gym
    import bam_rl  # registers the environments
    env = gym.make("bam_rl/GravityCartPole-v0", gravity_schedule=[9.81, 3.72])
    env = gym.make("bam_rl/GravityCartPoleEpisodic-v0")   # paper schedule, changes announced
    env = gym.make("bam_rl/GravityCartPoleContinual-v0")  # 60 trials, unannounced changes
    ```

    | Parameter           | Type            | Default        | Description                        |
    |---------------------|-----------------|----------------|------------------------------------|
    | `gravity_schedule`  | sequence[float] | `(9.81,)`      | gravity (m/s²) of trials 0, 1…     |
    | `schedule_mode`     | str             | `"cycle"`      | past the end: `"cycle"`, `"hold"`  |
    | `announce_changes`  | bool            | `False`        | report `context_changed`           |
    | `actuation`         | str             | `"continuous"` | or `"bang_bang"`                   |
    | `max_steps`         | int             | 200            | steps per trial (>= 1)             |
    | `reset_noise_scale` | float           | 0.05           | half-width of initial noise (>= 0) |
    | `render_mode`       | str or None     | None           | `"rgb_array"` or `"human"`         |
    | `width`, `height`   | int             | 480            | frame size in pixels, [1, 8192]    |

    Gravities (schedule, `reset` option, `set_gravity`) must lie in `GRAVITY_RANGE`, 0.1 to
    300 m/s² (small moons to about the Sun's surface gravity); outside it the integration is
    not physical.

    `reset(options=...)` accepts `{"gravity": g}` (this trial's gravity instead of the
    schedule's) and `{"trial": k}` (jump to trial `k` of the schedule). `info` (after `reset`
    and every step) holds `gravity`, `trial` (0-based) and `context_changed`.

    ## Non-stationarity
    Each `reset` starts the next trial and sets `model.opt.gravity` (in place) to its gravity;
    gravity never changes within a trial unless `set_gravity` is called. `reset(seed=...)`
    (any non-`None` seed) restarts the schedule at trial 0, so a seed fixes the whole
    sequence of trials. `context_changed` is `True` throughout a trial whose gravity differs
    from the previous trial's, only when `announce_changes=True` (the paper's episodic
    setting); it is always `False` for trial 0 and when changes are unannounced (continual).
    Registered: `GravityCartPole-v0` (constant 9.81), `GravityCartPoleEpisodic-v0` (9.81,
    11.15, 3.72, 11.15, 3.72, 9.81, 15 trials each, then held; announced) and
    `GravityCartPoleContinual-v0` (9.81, 3.72, 9.81, 11.15, 15 trials each: 60 trials, 3
    changes, then held; unannounced).

    ## Simulation warnings
    After every step the env reads MuJoCo's warning counters (`data.warning`): a warning
    (e.g. `mjWARN_BADQACC`, an unstable simulation that MuJoCo answers by resetting the
    state) raises `RuntimeError` naming it, the trial and the gravity, instead of returning a
    transition that did not happen; `reset()` starts a clean trial.

    ## Version History
    * v0: Initial version.
    """

    metadata: dict[str, Any] = {"render_modes": ["human", "rgb_array"], "render_fps": 50}
    #: Accepted gravities (m/s²), :data:`GRAVITY_RANGE` (read by ``bam_rl.wrappers``).
    gravity_range: tuple[float, float] = GRAVITY_RANGE

    def __init__(
        self,
        gravity_schedule: Sequence[float] = (9.81,),
        schedule_mode: str = "cycle",
        announce_changes: bool = False,
        actuation: str = "continuous",
        max_steps: int = 200,
        reset_noise_scale: float = 0.05,
        render_mode: str | None = None,
        width: int = 480,
        height: int = 480,
        default_camera_config: dict[str, Any] | None = None,
    ) -> None:
        """Create the cart-pole.

        Args:
            gravity_schedule: Non-empty sequence of gravities in ``GRAVITY_RANGE`` (0.1 to
                300 m/s²), one per trial.
            schedule_mode: ``"cycle"`` (repeat the schedule) or ``"hold"`` (keep the last).
            announce_changes: Whether ``info["context_changed"]`` reports gravity changes.
            actuation: ``"continuous"`` or ``"bang_bang"`` (full force with the action's sign).
            max_steps: Steps per trial before truncation, a positive int.
            reset_noise_scale: Half-width (>= 0) of the uniform initial-state noise.
            render_mode: ``None``, ``"rgb_array"`` or ``"human"`` (needs a display).
            width: Width of rendered frames in pixels, an int in [1, 8192].
            height: Height of rendered frames in pixels, an int in [1, 8192].
            default_camera_config: Free-camera settings (default: side view tracking the cart).

        Raises:
            ValueError: If an argument is outside its accepted range.
        """
        self.gravity_schedule = _schedule(gravity_schedule)
        if schedule_mode not in _MODES:
            raise ValueError(f"schedule_mode must be one of {_MODES}, got {schedule_mode!r}")
        if actuation not in _ACTUATIONS:
            raise ValueError(f"actuation must be one of {_ACTUATIONS}, got {actuation!r}")
        if not isinstance(announce_changes, bool | np.bool_):
            raise ValueError(f"announce_changes must be a bool, got {announce_changes!r}")
        if isinstance(max_steps, bool) or not isinstance(max_steps, int | np.integer):
            raise ValueError(f"max_steps must be a positive int (>= 1), got {max_steps!r}")
        if max_steps < 1:
            raise ValueError(f"max_steps must be a positive int (>= 1), got {max_steps!r}")
        noise = _positive_float("reset_noise_scale", reset_noise_scale, allow_zero=True)
        width = int_in_range("width", width, 1, MAX_FRAME_SIDE)
        height = int_in_range("height", height, 1, MAX_FRAME_SIDE)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be None or one of {self.metadata['render_modes']}, "
                f"got {render_mode!r}"
            )
        utils.EzPickle.__init__(
            self,
            gravity_schedule=gravity_schedule,
            schedule_mode=schedule_mode,
            announce_changes=announce_changes,
            actuation=actuation,
            max_steps=max_steps,
            reset_noise_scale=reset_noise_scale,
            render_mode=render_mode,
            width=width,
            height=height,
            default_camera_config=default_camera_config,
        )
        self.schedule_mode = schedule_mode
        self.announce_changes = bool(announce_changes)
        self.actuation = actuation
        self.max_steps = int(max_steps)
        self.reset_noise_scale = noise
        high = np.array([np.inf, np.inf, 1.0, 1.0, np.inf])
        MujocoEnv.__init__(
            self,
            ASSET_PATH,
            frame_skip=2,
            observation_space=Box(-high, high, dtype=np.float64),
            render_mode=render_mode,
            width=width,
            height=height,
            default_camera_config=(
                DEFAULT_CAMERA_CONFIG if default_camera_config is None else default_camera_config
            ),
        )
        self._bang_bang = actuation == "bang_bang"
        self._trial = -1
        self._steps = 0
        self._context_changed = False
        self._gravity = self.gravity_schedule[0]
        self._set_model_gravity(self._gravity)

    # ----------------------------------------------------------------------------- gravity
    @property
    def gravity(self) -> float:
        """Magnitude of the current gravity (m/s²)."""
        return self._gravity

    @property
    def trial(self) -> int:
        """0-based index of the current trial (-1 before the first ``reset``)."""
        return self._trial

    def scheduled_gravity(self, trial: int) -> float:
        """Gravity the schedule assigns to 0-based ``trial`` (cycled or held past the end)."""
        n = len(self.gravity_schedule)
        index = trial % n if self.schedule_mode == "cycle" else min(trial, n - 1)
        return self.gravity_schedule[index]

    def set_gravity(self, gravity: float) -> None:
        """Change gravity immediately, mid-trial (the schedule applies again at next reset).

        Raises:
            ValueError: If ``gravity`` is not a number in ``GRAVITY_RANGE``.
        """
        self._gravity = _gravity("gravity", gravity)
        self._set_model_gravity(self._gravity)

    def _set_model_gravity(self, gravity: float) -> None:
        self.model.opt.gravity[2] = -gravity

    # ----------------------------------------------------------------------------- API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start the next trial (trial 0 after a seeded reset) with its scheduled gravity.

        Args:
            seed: Seed for ``self.np_random``; a non-``None`` seed also restarts the schedule.
            options: Optional ``{"gravity": g}`` (g in ``GRAVITY_RANGE``) overriding this
                trial's gravity and ``{"trial": k}`` (int >= 0) selecting the trial index.

        Returns:
            The initial observation and ``info`` with ``gravity``, ``trial``, ``context_changed``.

        Raises:
            ValueError: On unknown option keys, a gravity outside ``GRAVITY_RANGE`` or a
                negative trial.
        """
        options = {} if options is None else options
        if not isinstance(options, dict):
            raise ValueError(f"options must be a dict or None, got {options!r}")
        unknown = set(options) - set(_OPTIONS)
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}; accepted: {_OPTIONS}")
        if "trial" in options:
            trial = options["trial"]
            if isinstance(trial, bool) or not isinstance(trial, int | np.integer) or trial < 0:
                raise ValueError(f"options['trial'] must be an int >= 0, got {trial!r}")
            trial = int(trial)
        else:
            trial = 0 if seed is not None or self._trial < 0 else self._trial + 1
        if "gravity" in options:
            gravity = _gravity("options['gravity']", options["gravity"])
        else:
            gravity = self.scheduled_gravity(trial)
        previous = self._gravity if self._trial >= 0 and trial > 0 else None
        self._context_changed = (
            self.announce_changes and previous is not None and gravity != previous
        )
        self._trial = trial
        self._steps = 0
        self._gravity = gravity
        self._set_model_gravity(gravity)
        return super().reset(seed=seed)

    def reset_model(self) -> np.ndarray:
        """Hang the pole down; cart position and both velocities ~ U(−s, s)."""
        s = self.reset_noise_scale
        x, xdot, thdot = self.np_random.uniform(-s, s, size=3)
        qpos = np.array([x, math.pi])
        qvel = np.array([xdot, thdot])
        self.set_state(qpos, qvel)
        return self._get_obs()

    def _get_reset_info(self) -> dict[str, Any]:
        return self._info()

    def _info(self) -> dict[str, Any]:
        return {
            "gravity": self._gravity,
            "trial": self._trial,
            "context_changed": self._context_changed,
        }

    def _get_obs(self) -> np.ndarray:
        qpos, qvel = self.data.qpos, self.data.qvel
        angle = qpos[1]
        return np.array([qpos[0], qvel[0], math.cos(angle), math.sin(angle), qvel[1]])

    def step(  # type: ignore[override]  # Python float reward and bool flags, as SB3 checks
        self, action: Any
    ) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Apply the force for 0.02 s.

        Args:
            action: Force in [-1, 1] (×10 N), shape ``(1,)`` (a scalar is also accepted).

        Returns:
            ``(observation, cos(angle), False, truncated, info)``.

        Raises:
            ValueError: If the action is not a single number in [-1, 1].
            RuntimeError: If called after truncation without ``reset`` (or before any reset),
                or if MuJoCo reports a warning during the step (an unstable simulation).
        """
        u = scalar_action(action, -1.0, 1.0, "force")
        if self._bang_bang:
            u = 1.0 if u > 0.0 else (-1.0 if u < 0.0 else 0.0)
        if not 0 <= self._steps < self.max_steps or self._trial < 0:
            raise RuntimeError("step() called before reset() or after truncation; call reset()")
        self.data.ctrl[0] = u
        mujoco.mj_step(self.model, self.data, nstep=self.frame_skip)
        self._steps += 1
        if self.data.warning.number.any():
            self._raise_simulation_warning()
        if self.render_mode == "human":
            self.render()
        obs = self._get_obs()
        return obs, float(obs[2]), False, self._steps == self.max_steps, self._info()

    def render(self) -> np.ndarray | None:
        """Renders a frame (``"rgb_array"``) or the window (``"human"``).

        Without a display the platform is EGL or OSMesa, chosen when this module was imported
        (``bam_rl.envs._gl``). If no OpenGL platform works, a ``RuntimeError`` says what was
        tried and what to install; MuJoCo is not asked again in this process (a second attempt
        after a failure aborts the interpreter).

        ``"human"`` needs a window: without a display, or with ``MUJOCO_GL`` set to a headless
        platform, a ``RuntimeError`` says so before GLFW is touched (GLFW would abort the
        interpreter). ``reset`` and ``step`` render in ``"human"`` mode, so they raise it too.

        Raises:
            RuntimeError: If rendering is impossible on this machine.
        """
        if _RENDER_FAILURE:
            raise RuntimeError(_RENDER_FAILURE[0])
        if self.render_mode == "human":
            advice = window_advice()
            if advice is not None:
                raise RuntimeError(advice)
        try:
            return super().render()
        except mujoco.FatalError as error:
            _RENDER_FAILURE.append(platform_advice(error))
            self.mujoco_renderer._viewers.clear()  # never closed: MuJoCo has no context
            raise RuntimeError(_RENDER_FAILURE[0]) from None

    def close(self) -> None:
        if _RENDER_FAILURE:  # the failed renderer holds no context to free
            self.mujoco_renderer._viewers.clear()
            self.mujoco_renderer.viewer = None
        super().close()

    def _raise_simulation_warning(self) -> None:
        counts = self.data.warning.number
        names = [mujoco.mjtWarning(int(i)).name for i in np.flatnonzero(counts)]
        step = self._steps
        self._steps = self.max_steps  # the trial is over: step() now asks for reset()
        raise RuntimeError(
            f"MuJoCo warned {', '.join(names)} at step {step} of trial {self._trial} (gravity "
            f"{self._gravity:g} m/s²): the simulation became unstable and MuJoCo reset its "
            "state, so this transition is not physical; call reset() to start a new trial"
        )


def _gravity(name: str, value: Any) -> float:
    return float_in_range(name, value, *GRAVITY_RANGE, unit="m/s²")


def _positive_float(name: str, value: Any, allow_zero: bool = False) -> float:
    bound = ">= 0" if allow_zero else "> 0"
    try:
        if isinstance(value, str | bytes | bool):
            raise TypeError
        out = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}") from exc
    if not math.isfinite(out) or out < 0.0 or (out == 0.0 and not allow_zero):
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}")
    return out


def _schedule(schedule: Any) -> tuple[float, ...]:
    message = (
        f"gravity_schedule must be a non-empty sequence of gravities in "
        f"[{GRAVITY_RANGE[0]:g}, {GRAVITY_RANGE[1]:g}] m/s²"
    )
    if isinstance(schedule, str | bytes | dict):
        raise ValueError(f"{message}, got {schedule!r}")
    try:
        items = list(schedule)
    except TypeError as exc:
        raise ValueError(f"{message}, got {schedule!r}") from exc
    if not items:
        raise ValueError(f"{message}, got an empty schedule")
    return tuple(_gravity("gravity_schedule entries", g) for g in items)
