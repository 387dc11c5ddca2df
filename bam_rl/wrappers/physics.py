"""What :class:`~bam_rl.wrappers.NonStationary` can change, per environment family.

A *world* reads and writes the parameters of one unwrapped environment:

* :class:`MujocoWorld` (any :class:`gymnasium.envs.mujoco.MujocoEnv`): ``gravity`` (magnitude
  in m/s², along the model's own gravity direction), ``mass:<body>`` (kg; the body's inertia
  scales with it, a uniformly denser body), ``friction:<geom>`` (sliding coefficient),
  ``damping:<joint>`` (N·m·s/rad or N·s/m), and the whole-model factors ``mass_scale``,
  ``friction_scale``, ``damping_scale``, ``gear_scale`` (1 = as built). A named value and a
  factor combine: body mass = ``mass:<body>`` (or the built mass) × ``mass_scale``. The
  derived constants (``mujoco.mj_setConst``) are recomputed only when a mass changed.
  bam-rl's cart-pole changes gravity through its own ``set_gravity``. The world reads the
  model of the environment it is bound to; :meth:`World.rebind` binds it again after the
  environment was copied (``copy.deepcopy`` or pickle rebuild a Gymnasium MuJoCo environment,
  and its model, from its constructor's arguments).
* :class:`AttributeWorld` (Gymnasium's classic control, recognised with ``isinstance``, so a
  subclass is one too): the environment's own attributes, :data:`CLASSIC_CONTROL`.

Accepted values (:class:`Range`; ``tests/wrappers/test_physical_bounds.py``). Every built-in
parameter is bounded, so what is written into a model is a finite number and one step of the
environment stays a finite computation: gravity up to :data:`MAX_GRAVITY` (1e4 m/s², a
thousand times Earth's), factors and named quantities up to :data:`MAX_QUANTITY` (a million
times the unit), masses and ``mass_scale`` at least a millionth (:data:`MIN_FACTOR`; a named
mass at least :data:`MIN_MASS`), time steps in (0, :data:`MAX_TIME_STEP`] (1 s: the classic
environments integrate with one explicit Euler or RK4 step of hundredths of a second).
Acrobot's link parameters are also checked together (:func:`acrobot_turn`): its one RK4 step
can turn the links by any amount for some combinations, and Gymnasium's angle wrapping then
loops once per turn. Within these bounds a simulation may still diverge (a large gear or
gravity makes MuJoCo's accelerations blow up); :class:`~bam_rl.wrappers.NonStationary`
detects that at run time instead.
* :class:`CustomWorld` (any other environment, a user's own included): no built-in
  parameters.

On every environment, :class:`DeclaredWorld` adds the parameters a user names or declares:

* ``attr:<name>``: the attribute ``<name>`` of the unwrapped environment, read with
  ``getattr`` and written with ``setattr`` (as a Python ``float``); its value must be a finite
  real number (an ``int`` or a ``float``, not a ``bool``). :func:`numeric_attributes` lists the
  candidates.
* a :class:`Parameter` ``(get, set)`` pair for anything else: ``get(env) -> float`` reads it,
  ``set(env, value)`` writes it (``env`` the unwrapped environment).

Both accept any finite number (the environment decides what it accepts).
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import mujoco
import numpy as np

__all__ = [
    "ATTR",
    "CLASSIC_CONTROL",
    "AttributeWorld",
    "CustomWorld",
    "DeclaredWorld",
    "MujocoWorld",
    "Parameter",
    "Range",
    "World",
    "declared_parameters",
    "numeric_attributes",
    "world_of",
]

#: Prefix of a parameter naming an attribute of the unwrapped environment: ``attr:<name>``.
ATTR = "attr:"
#: MuJoCo's warnings of a bad state (a non-finite or huge position, velocity or acceleration),
#: after which it resets the state silently: their counters mean the simulation diverged.
BAD_STATE_WARNINGS = slice(
    int(mujoco.mjtWarning.mjWARN_BADQPOS), int(mujoco.mjtWarning.mjWARN_BADQACC) + 1
)


@dataclass(frozen=True)
class Range:
    """Accepted values of a parameter: ``low < x`` (``open_low``) or ``low <= x``, ``x <= high``."""

    low: float = 0.0
    high: float = math.inf
    open_low: bool = False

    def contains(self, low: float, high: float) -> bool:
        """Whether the closed interval ``[low, high]`` lies inside this range."""
        above = low > self.low if self.open_low else low >= self.low
        return above and high <= self.high

    def __str__(self) -> str:
        left = "(" if self.open_low else "["
        return (
            f"{left}{self.low:g}, {self.high:g}]"
            if math.isfinite(self.high)
            else (f"{left}{self.low:g}, inf)")
        )


#: Largest gravity (m/s²): a thousand times Earth's, beyond any planet's surface (the Sun's is
#: 274); far above it MuJoCo's accelerations leave the float range (1e300 gave NaN states).
MAX_GRAVITY = 1e4
#: Largest factor (``*_scale``) and named quantity (mass, friction, damping, a classic
#: environment's length, mass or force): a million times the unit. A named value times its
#: factor, and the built inertia times the mass ratio, stay far inside float64 (1e308).
MAX_QUANTITY = 1e6
#: Smallest mass factor and classic mass or length: a millionth (a product of two of them is
#: still a normal positive float, never 0).
MIN_FACTOR = 1e-6
#: Smallest named MuJoCo mass (kg): below Pusher's lightest built body (4e-10 kg, its goal
#: marker), and times :data:`MIN_FACTOR` still a normal positive float.
MIN_MASS = 1e-12
#: Largest time step (s) of a classic environment (``tau``, ``dt``): their explicit Euler or
#: single RK4 step is meant for hundredths of a second; at 1e300 the cart-pole's state was
#: inf, and at 1000 one Acrobot step never returned.
MAX_TIME_STEP = 1.0

POSITIVE = Range(0.0, math.inf, open_low=True)
NONNEGATIVE = Range(0.0, math.inf)
#: Any finite number: the range of ``attr:<name>`` and declared parameters.
ANY = Range(-math.inf, math.inf)
#: The built-in parameters' ranges (see the module's docstring).
GRAVITY = Range(0.0, MAX_GRAVITY)
QUANTITY = Range(0.0, MAX_QUANTITY)
FACTOR = Range(0.0, MAX_QUANTITY)
MASS_FACTOR = Range(MIN_FACTOR, MAX_QUANTITY)
MASS = Range(MIN_MASS, MAX_QUANTITY)
#: A classic environment's mass or length (kg or m).
PHYSICAL = Range(MIN_FACTOR, MAX_QUANTITY)
TIME_STEP = Range(0.0, MAX_TIME_STEP, open_low=True)


class Parameter(NamedTuple):
    """A parameter the user declares, :class:`~bam_rl.wrappers.NonStationary`'s
    ``parameters={name: Parameter(get, set)}`` (a plain ``(get, set)`` tuple works alike).

    Attributes:
        get: ``get(env) -> float``, the parameter's value in the unwrapped environment ``env``
            (a finite real number).
        set: ``set(env, value) -> None``, writes ``value`` (a ``float``) into ``env``.
    """

    get: Callable[[Any], Any]
    set: Callable[[Any, float], Any]


def _finite_number(value: Any) -> float | None:
    """``value`` as a float when it is a finite real number (not a bool), else ``None``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def numeric_attributes(env: Any) -> list[str]:
    """The public attributes of ``env`` (instance or class data, not properties or methods)
    whose value is a finite ``int`` or ``float`` (not a ``bool``), sorted: the candidates for
    ``attr:<name>``. Properties are not evaluated (an ``attr:`` parameter may still name one)."""
    names = set(vars(env)) if hasattr(env, "__dict__") else set()
    for klass in type(env).__mro__:
        names.update(vars(klass))
    found = []
    for name in sorted(names):
        if name.startswith("_"):
            continue
        try:
            value = inspect.getattr_static(env, name)
        except AttributeError:
            continue
        if _finite_number(value) is not None:
            found.append(name)
    return found


#: Classic-control parameters: class name (of :mod:`gymnasium.envs.classic_control`) →
#: {attribute: accepted range}. Only attributes the dynamics read (Acrobot's
#: ``LINK_LENGTH_2`` is drawn but never enters the dynamics). MountainCar's ``gravity``,
#: ``force`` and ``power`` are velocity changes per step (the speed is clipped after them).
CLASSIC_CONTROL: dict[str, dict[str, Range]] = {
    "CartPoleEnv": {
        "gravity": GRAVITY,
        "masscart": PHYSICAL,
        "masspole": PHYSICAL,
        "length": PHYSICAL,
        "force_mag": QUANTITY,
        "tau": TIME_STEP,
    },
    "PendulumEnv": {"g": GRAVITY, "m": PHYSICAL, "l": PHYSICAL, "dt": TIME_STEP},
    "MountainCarEnv": {"gravity": GRAVITY, "force": QUANTITY},
    "Continuous_MountainCarEnv": {"power": QUANTITY},
    "AcrobotEnv": {
        "dt": TIME_STEP,
        "LINK_LENGTH_1": PHYSICAL,
        "LINK_MASS_1": PHYSICAL,
        "LINK_MASS_2": PHYSICAL,
        "LINK_COM_POS_1": PHYSICAL,
        "LINK_COM_POS_2": PHYSICAL,
        "LINK_MOI": PHYSICAL,
    },
}


@functools.cache
def classic_control_classes() -> dict[type, str]:
    """Gymnasium's classic-control classes → their :data:`CLASSIC_CONTROL` name (imported
    when first needed)."""
    from gymnasium.envs.classic_control import (
        AcrobotEnv,
        CartPoleEnv,
        Continuous_MountainCarEnv,
        MountainCarEnv,
        PendulumEnv,
    )

    return {
        CartPoleEnv: "CartPoleEnv",
        PendulumEnv: "PendulumEnv",
        MountainCarEnv: "MountainCarEnv",
        Continuous_MountainCarEnv: "Continuous_MountainCarEnv",
        AcrobotEnv: "AcrobotEnv",
    }


def classic_control_name(env: Any) -> str | None:
    """The :data:`CLASSIC_CONTROL` name of ``env`` when it is an instance of one of
    Gymnasium's classic-control classes (a subclass included), else ``None``: recognised by
    class, not by name, so a user's class that is merely called ``CartPoleEnv`` is not one."""
    for klass, name in classic_control_classes().items():
        if isinstance(env, klass):
            return name
    return None


#: Largest angle (rad) one Acrobot step may reach on :func:`acrobot_turn`'s grid before
#: Gymnasium wraps it into [-π, π] (its wrapping loop runs once per turn). The grid may miss
#: the true worst state: over 300 random sets of values (each factor 0.05–20 of its default,
#: ``dt`` 0.02–1 s), whenever the grid's worst stayed within 1e4 rad, 400 000 random states
#: never went beyond 2e5 rad (30 000 turns, milliseconds); above 1e4 the grid's worst grows
#: fast (1e5 on the grid gave 6e8 in the random states). Not an accuracy bound: the defaults
#: at ``dt`` 0.2 already reach 27 rad from the grid's fastest states and ``LINK_MASS_2`` 3
#: reaches 600 rad (accepted), while ``LINK_MASS_2`` 10 (2e4 rad), ``dt`` 1 (5e5 rad) and
#: ``LINK_LENGTH_1`` 1e6 (1e20 rad) are refused.
ACROBOT_MAX_TURN = 1e4


def acrobot_turn(env: Any, values: Mapping[str, float]) -> float:
    """The largest angle (rad, ``inf`` when not finite) one step of the Acrobot ``env`` reaches
    with its attributes set to ``values`` (the others as they are), over a grid of states:
    both angles at 12 values in [-π, π), each velocity at its clip bound, 0 or minus the bound,
    every torque (the noise's extremes added).

    The environment's own ``_dsdt`` (book or NIPS equations) is evaluated on the whole grid at
    once through one RK4 step of ``dt``, as its ``step`` does for one state. One step of
    Gymnasium's Acrobot can turn a link by any amount: its RK4 step is explicit, and the
    accelerations grow with the mass and length ratios (link 2 ten times heavier and longer,
    link 1 and the inertia ten times smaller turned a link by 1e13 rad in one step of 0.2 s,
    from fast states), and ``wrap`` then loops once per turn (forever on ``inf``). A few
    milliseconds (remembered per set of values by :class:`AttributeWorld`).
    """
    saved = {name: getattr(env, name) for name in values}
    try:
        for name, value in values.items():
            setattr(env, name, value)
        angles = np.linspace(-math.pi, math.pi, 12, endpoint=False)
        v1 = float(env.MAX_VEL_1) * np.array([-1.0, 0.0, 1.0])
        v2 = float(env.MAX_VEL_2) * np.array([-1.0, 0.0, 1.0])
        torques = np.asarray(env.AVAIL_TORQUE, dtype=np.float64)
        noise = float(getattr(env, "torque_noise_max", 0.0) or 0.0)
        if noise > 0:
            torques = np.concatenate([torques - noise, torques, torques + noise])
        grid = np.stack(
            [a.ravel() for a in np.meshgrid(angles, angles, v1, v2, torques, indexing="ij")]
        )
        dt = float(env.dt)

        def derivative(y: np.ndarray) -> np.ndarray:
            out = np.zeros_like(y)
            for i, row in enumerate(env._dsdt(y)[:4]):
                out[i] = row
            return out

        with np.errstate(all="ignore"):
            k1 = derivative(grid)
            k2 = derivative(grid + dt / 2 * k1)
            k3 = derivative(grid + dt / 2 * k2)
            k4 = derivative(grid + dt * k3)
            angles_after = (grid + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4))[:2]
            turn = float(np.max(np.abs(angles_after)))
    finally:
        for name, value in saved.items():
            setattr(env, name, value)
    return turn if math.isfinite(turn) else math.inf


class World:
    """Reads and writes the parameters of one unwrapped environment."""

    #: the unwrapped environment
    env: Any
    #: name → accepted range, for every parameter of this environment
    ranges: dict[str, Range]

    def current(self, name: str) -> float:
        """The parameter's value in the environment now."""
        raise NotImplementedError

    def apply(self, values: Mapping[str, float], names: Iterable[str], reset: bool) -> None:
        """Write ``values`` (the whole context) for the parameters ``names`` that changed; at
        a ``reset`` every parameter is written (the environment's reset may have set some)."""
        raise NotImplementedError

    def planning_copy(self) -> Any:
        """An independent copy of the environment in the current world and state."""
        raise NotImplementedError

    def rebind(self, env: Any) -> None:
        """Read and write ``env`` from now on: the unwrapped environment after a copy of the
        wrapper (``copy.deepcopy``, pickle), which may hold new objects (a MuJoCo model)."""
        self.env = env

    def bad_state_counts(self) -> Any:
        """A live view of the counters of the simulator's silent state resets (MuJoCo's
        ``mjWARN_BADQPOS``, ``mjWARN_BADQVEL``, ``mjWARN_BADQACC``), or ``None``."""
        return None

    @property
    def physical(self) -> bool:
        """Whether the environment is a built-in physics one (MuJoCo or classic control),
        whose observations are finite whenever its simulation is."""
        return False


class AttributeWorld(World):
    """Classic control: parameters are the environment's attributes."""

    def __init__(self, env: Any, ranges: Mapping[str, Range]) -> None:
        self.env = env
        self.ranges = dict(ranges)
        self._kind = classic_control_name(env)
        self._turns: dict[tuple[float, ...], float] = {}  # Acrobot: values → acrobot_turn

    @property
    def physical(self) -> bool:
        return True

    def current(self, name: str) -> float:
        return float(getattr(self.env, name))

    def apply(self, values: Mapping[str, float], names: Iterable[str], reset: bool) -> None:
        env = self.env
        targets = list(values if reset else names)
        if self._kind == "AcrobotEnv":
            self._check_acrobot({name: values[name] for name in targets})
        for name in targets:
            setattr(env, name, values[name])
        if self._kind == "CartPoleEnv":  # the derived constants its step reads
            env.total_mass = env.masspole + env.masscart
            env.polemass_length = env.masspole * env.length

    def _check_acrobot(self, values: Mapping[str, float]) -> None:
        """``ValueError`` (nothing written) when one Acrobot step with ``values`` could reach
        an angle beyond :data:`ACROBOT_MAX_TURN` (:func:`acrobot_turn`; remembered per set of
        values, so a schedule that comes back costs nothing)."""
        names = CLASSIC_CONTROL["AcrobotEnv"]
        merged = {name: float(values.get(name, getattr(self.env, name))) for name in names}
        key = tuple(merged.values())
        turn = self._turns.get(key)
        if turn is None:
            turn = acrobot_turn(self.env, merged)
            if len(self._turns) >= 256:
                self._turns.clear()
            self._turns[key] = turn
        if not turn <= ACROBOT_MAX_TURN:
            shown = ", ".join(f"{name}={value:g}" for name, value in merged.items())
            raise ValueError(
                f"Acrobot with {shown}: one step of dt={merged['dt']:g} s could turn a link "
                f"by {turn:.3g} rad (its single explicit RK4 step diverges for these "
                f"values; Gymnasium's angle wrapping would then loop once per turn); the "
                f"accepted largest is {ACROBOT_MAX_TURN:g} rad: use a smaller dt, or masses, "
                f"lengths and LINK_MOI closer to each other"
            )

    def planning_copy(self) -> Any:
        import copy

        return copy.deepcopy(self.env)


class CustomWorld(World):
    """Any other environment (a user's own): no built-in parameters, only ``attr:<name>`` and
    declared ones (:class:`DeclaredWorld`)."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.ranges = {}

    def current(self, name: str) -> float:
        raise KeyError(name)

    def apply(self, values: Mapping[str, float], names: Iterable[str], reset: bool) -> None:
        return None

    def planning_copy(self) -> Any:
        import copy

        return copy.deepcopy(self.env)


class MujocoWorld(World):
    """MuJoCo: gravity, masses, friction, damping and gear of ``env.model``."""

    def __init__(self, env: Any) -> None:
        self.env = env
        model = env.model
        self._model = model
        self._gravity = np.array(model.opt.gravity, dtype=np.float64)
        norm = float(np.linalg.norm(self._gravity))
        self._direction = self._gravity / norm if norm > 0 else np.array([0.0, 0.0, -1.0])
        self._mass = np.array(model.body_mass, dtype=np.float64)
        self._inertia = np.array(model.body_inertia, dtype=np.float64)
        self._friction = np.array(model.geom_friction, dtype=np.float64)
        self._damping = np.array(model.dof_damping, dtype=np.float64)
        self._gear = np.array(model.actuator_gear, dtype=np.float64)
        self._set_gravity: Callable[[float], None] | None = getattr(env, "set_gravity", None)
        gravity_range = getattr(env, "gravity_range", None)
        ranges: dict[str, Range] = {
            "gravity": GRAVITY if gravity_range is None else Range(*gravity_range),
            "mass_scale": MASS_FACTOR,
            "friction_scale": FACTOR,
            "damping_scale": FACTOR,
            "gear_scale": FACTOR,
        }
        self._body: dict[str, int] = {}
        for i in range(1, model.nbody):  # body 0 is the world
            name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, i)
            if name and model.body_mass[i] > 0:  # a massless body has no inertia to scale
                self._body[name] = i
                ranges[f"mass:{name}"] = MASS
        self._geom: dict[str, int] = {}
        for i in range(model.ngeom):
            name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, i)
            if name:
                self._geom[name] = i
                ranges[f"friction:{name}"] = QUANTITY
        self._dof: dict[str, int] = {}
        for i in range(model.njnt):
            name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, i)
            # one damping per joint: hinges and slides (free and ball joints have several dofs);
            # compared as ints: MuJoCo 4's enum never equals a NumPy integer on its side
            if name and int(model.jnt_type[i]) in (
                int(mujoco.mjtJoint.mjJNT_HINGE),
                int(mujoco.mjtJoint.mjJNT_SLIDE),
            ):
                self._dof[name] = int(model.jnt_dofadr[i])
                ranges[f"damping:{name}"] = QUANTITY
        self.ranges = ranges
        self._state_spec = mujoco.mjtState.mjSTATE_INTEGRATION
        self._state = np.empty(mujoco.mj_stateSize(model, self._state_spec))
        self._planning: tuple[int, Any] | None = None  # (world version, model copy)
        self._version = 0

    @property
    def physical(self) -> bool:
        return True

    def rebind(self, env: Any) -> None:
        """Bind to ``env`` and its current model (a copy of the environment has its own:
        Gymnasium's MuJoCo environments are rebuilt from their arguments by ``deepcopy`` and
        pickle). The built values read at construction stay the reference of the factors."""
        self.env = env
        self._model = env.model
        self._set_gravity = getattr(env, "set_gravity", None)
        self._state = np.empty(mujoco.mj_stateSize(env.model, self._state_spec))
        self._planning = None

    def bad_state_counts(self) -> Any:
        return self.env.data.warning.number[BAD_STATE_WARNINGS]

    def _group(self, name: str) -> str:
        return name.split(":", 1)[0].removesuffix("_scale")

    def current(self, name: str) -> float:
        model = self._model
        group, _, key = name.partition(":")
        if name == "gravity":
            return float(np.linalg.norm(model.opt.gravity))
        if name.endswith("_scale"):
            return 1.0
        if group == "mass":
            return float(model.body_mass[self._body[key]])
        if group == "friction":
            return float(model.geom_friction[self._geom[key], 0])
        return float(model.dof_damping[self._dof[key]])

    def apply(self, values: Mapping[str, float], names: Iterable[str], reset: bool) -> None:
        """Write the changed groups; every array is computed and checked finite before any
        is written (``ValueError`` naming the values otherwise: nothing is changed)."""
        groups = {self._group(n) for n in (values if reset else names)}
        model = self._model
        writes: list[tuple[str, Any, np.ndarray]] = []  # (group, model field, new value)
        if "gravity" in groups and self._set_gravity is None:
            writes.append(("gravity", model.opt.gravity, self._direction * values["gravity"]))
        if "mass" in groups:
            mass = self._mass.copy()
            for name, i in self._body.items():
                if "mass:" + name in values:
                    mass[i] = values["mass:" + name]
            mass *= values.get("mass_scale", 1.0)
            if not np.array_equal(mass, model.body_mass):
                ratio = np.divide(mass, self._mass, out=np.ones_like(mass), where=self._mass > 0)
                writes.append(("mass", model.body_mass, mass))
                writes.append(("mass", model.body_inertia, self._inertia * ratio[:, None]))
        if "friction" in groups:
            friction = self._friction.copy()
            for name, i in self._geom.items():
                if "friction:" + name in values:
                    friction[i, 0] = values["friction:" + name]
            writes.append(
                ("friction", model.geom_friction, friction * values.get("friction_scale", 1.0))
            )
        if "damping" in groups:
            damping = self._damping.copy()
            for name, i in self._dof.items():
                if "damping:" + name in values:
                    damping[i] = values["damping:" + name]
            writes.append(
                ("damping", model.dof_damping, damping * values.get("damping_scale", 1.0))
            )
        if "gear" in groups:
            writes.append(("gear", model.actuator_gear, self._gear * values["gear_scale"]))
        for group, _, value in writes:
            if not np.isfinite(value).all():
                shown = {n: v for n, v in values.items() if self._group(n) == group}
                raise ValueError(
                    f"the {group} values {shown} give non-finite entries in the model (the "
                    f"built values times the factors overflow); use smaller values"
                )
        if "gravity" in groups and self._set_gravity is not None:
            self._set_gravity(values["gravity"])
        for _, field, value in writes:
            field[:] = value
        if any(group == "mass" for group, _, _ in writes):
            self._set_const()
        self._version += 1

    def _set_const(self) -> None:
        """Recompute the derived constants after a mass change, keeping the simulation state
        (``mj_setConst`` works at ``qpos0``)."""
        model, data, spec, state = self._model, self.env.data, self._state_spec, self._state
        mujoco.mj_getState(model, data, state, spec)
        mujoco.mj_setConst(model, data)
        mujoco.mj_setState(model, data, state, spec)
        mujoco.mj_forward(model, data)

    def planning_copy(self) -> Any:
        """A copy of the unwrapped environment in the current world and state: its own
        ``MjData`` (a copy), a model copy shared by the copies of one world (read-only for the
        planner), no renderer (``render_mode`` None) and a copy of ``np_random``."""
        import copy

        env = self.env
        if self._planning is None or self._planning[0] != self._version:
            self._planning = (self._version, copy.copy(self._model))
        model = self._planning[1]
        clone = object.__new__(type(env))
        clone.__dict__.update(env.__dict__)
        clone.model = model
        clone.data = copy.copy(env.data)
        clone.render_mode = None
        clone.mujoco_renderer = None
        clone._np_random = copy.deepcopy(env.np_random)
        return clone


def world_of(env: Any) -> World:
    """The :class:`World` of an unwrapped environment: a :class:`MujocoWorld`, an
    :class:`AttributeWorld` (an instance of one of Gymnasium's classic-control classes,
    :data:`CLASSIC_CONTROL`) or, for any other, a :class:`CustomWorld` without built-in
    parameters."""
    if isinstance(getattr(env, "model", None), mujoco.MjModel) and isinstance(
        getattr(env, "data", None), mujoco.MjData
    ):
        return MujocoWorld(env)
    name = classic_control_name(env)
    if name is not None:
        return AttributeWorld(env, CLASSIC_CONTROL[name])
    return CustomWorld(env)


def declared_parameters(parameters: Any, builtin: Iterable[str]) -> dict[str, Parameter]:
    """``parameters`` (``None`` or a map name → ``(get, set)``), each as a :class:`Parameter`.

    Raises:
        ValueError: Unless each name is a non-empty ``str``, neither a built-in parameter
            (``builtin``) nor an ``attr:<name>``, and each value a pair of callables.
    """
    if parameters is None:
        return {}
    if not isinstance(parameters, Mapping):
        raise ValueError(
            f"parameters must be a dict {{name: (get, set)}}, get(env) -> float and "
            f"set(env, value) -> None, got {parameters!r}"
        )
    builtin = set(builtin)
    declared: dict[str, Parameter] = {}
    for name, pair in parameters.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"parameters: a name must be a non-empty str, got {name!r}")
        if name in builtin or name.startswith(ATTR):
            raise ValueError(
                f"parameters: {name!r} is already a parameter of the environment "
                f"({'an attribute' if name.startswith(ATTR) else 'a built-in one'}); give the "
                f"declared one another name"
            )
        if not (
            isinstance(pair, (tuple, list))
            and len(pair) == 2
            and callable(pair[0])
            and callable(pair[1])
        ):
            raise ValueError(
                f"parameters[{name!r}] must be a (get, set) pair of callables, get(env) -> float "
                f"and set(env, value) -> None (bam_rl.wrappers.Parameter), got {pair!r}"
            )
        declared[name] = Parameter(pair[0], pair[1])
    return declared


class DeclaredWorld(World):
    """A world with the ``attr:<name>`` parameters of ``names`` and the ``declared`` ones added
    (the others are ``base``'s): each is read once here, so a missing attribute or a value that
    is not a finite number is a ``ValueError`` naming the parameter.

    Args:
        base: The environment's own world (:func:`world_of`).
        names: The parameters to change (those starting with ``attr:`` are added).
        declared: User-declared parameters (:func:`declared_parameters`).
    """

    def __init__(
        self, base: World, names: Iterable[Any], declared: Mapping[str, Parameter]
    ) -> None:
        self.base = base
        self.env = env = base.env
        own: dict[str, Parameter] = dict(declared)
        self._attributes: set[str] = set()
        for name in names:
            if isinstance(name, str) and name.startswith(ATTR) and name not in own:
                attribute = name[len(ATTR) :]
                if not attribute or not hasattr(env, attribute):
                    raise ValueError(
                        f"changes: parameter {name!r}: {type(env).__name__} has no attribute "
                        f"{attribute!r}; its numeric attributes are "
                        f"{[ATTR + a for a in numeric_attributes(env)]}"
                    )
                own[name] = Parameter(_AttributeGetter(attribute), _AttributeSetter(attribute))
                self._attributes.add(name)
        self._own = own
        self.ranges = {**base.ranges, **dict.fromkeys(own, ANY)}
        for name in own:
            self.current(name)

    def current(self, name: str) -> float:
        parameter = self._own.get(name)
        if parameter is None:
            return self.base.current(name)
        attribute = name in self._attributes
        try:
            value = parameter.get(self.env)
        except Exception as error:  # a user's callable (or property): a refused parameter
            where = f"reading {name!r}" if attribute else f"parameters[{name!r}]: get(env)"
            raise ValueError(f"{where} raised {type(error).__name__}: {error}") from error
        number = _finite_number(value)
        if number is None:
            shown = f"{value!r} ({type(value).__name__}), not a finite number"
            if attribute:
                raise ValueError(
                    f"changes: parameter {name!r}: {type(self.env).__name__}."
                    f"{name[len(ATTR) :]} is {shown} (an int or a float, not a bool)"
                )
            raise ValueError(f"parameters[{name!r}]: get(env) returned {shown}")
        return number

    def apply(self, values: Mapping[str, float], names: Iterable[str], reset: bool) -> None:
        own = self._own
        targets = list(values if reset else names)
        if any(name not in own for name in targets):
            base_values = {name: v for name, v in values.items() if name not in own}
            base_names = [name for name in targets if name not in own]
            self.base.apply(base_values, base_names, reset)
        env = self.env
        for name in targets:
            parameter = own.get(name)
            if parameter is not None:
                parameter.set(env, values[name])

    def planning_copy(self) -> Any:
        return self.base.planning_copy()

    def rebind(self, env: Any) -> None:
        self.env = env
        self.base.rebind(env)

    def bad_state_counts(self) -> Any:
        return self.base.bad_state_counts()

    @property
    def physical(self) -> bool:
        return self.base.physical


class _AttributeGetter:
    """``getattr(env, name)``, by name (a named object rather than a closure: it pickles)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, env: Any) -> Any:
        return getattr(env, self.name)


class _AttributeSetter:
    """``setattr(env, name, value)``, by name."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, env: Any, value: float) -> None:
        setattr(env, self.name, value)
