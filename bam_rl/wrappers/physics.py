"""What :class:`~bam_rl.wrappers.NonStationary` can change, per environment family.

A *world* reads and writes the parameters of one unwrapped environment:

* :class:`MujocoWorld` (any :class:`gymnasium.envs.mujoco.MujocoEnv`): ``gravity`` (magnitude
  in m/s², along the model's own gravity direction), ``mass:<body>`` (kg; the body's inertia
  scales with it, a uniformly denser body), ``friction:<geom>`` (sliding coefficient),
  ``damping:<joint>`` (N·m·s/rad or N·s/m), and the whole-model factors ``mass_scale``,
  ``friction_scale``, ``damping_scale``, ``gear_scale`` (1 = as built). A named value and a
  factor combine: body mass = ``mass:<body>`` (or the built mass) × ``mass_scale``. The
  derived constants (``mujoco.mj_setConst``) are recomputed only when a mass changed.
  bam-rl's cart-pole changes gravity through its own ``set_gravity``.
* :class:`AttributeWorld` (Gymnasium's classic control): the environment's own attributes,
  :data:`CLASSIC_CONTROL`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

__all__ = ["CLASSIC_CONTROL", "AttributeWorld", "MujocoWorld", "Range", "World", "world_of"]


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


POSITIVE = Range(0.0, math.inf, open_low=True)
NONNEGATIVE = Range(0.0, math.inf)

#: Classic-control parameters: class name → {attribute: accepted range}. Only attributes the
#: dynamics read (Acrobot's ``LINK_LENGTH_2`` is drawn but never enters the dynamics).
CLASSIC_CONTROL: dict[str, dict[str, Range]] = {
    "CartPoleEnv": {
        "gravity": NONNEGATIVE,
        "masscart": POSITIVE,
        "masspole": POSITIVE,
        "length": POSITIVE,
        "force_mag": NONNEGATIVE,
        "tau": POSITIVE,
    },
    "PendulumEnv": {"g": NONNEGATIVE, "m": POSITIVE, "l": POSITIVE, "dt": POSITIVE},
    "MountainCarEnv": {"gravity": NONNEGATIVE, "force": NONNEGATIVE},
    "Continuous_MountainCarEnv": {"power": NONNEGATIVE},
    "AcrobotEnv": {
        "dt": POSITIVE,
        "LINK_LENGTH_1": POSITIVE,
        "LINK_MASS_1": POSITIVE,
        "LINK_MASS_2": POSITIVE,
        "LINK_COM_POS_1": POSITIVE,
        "LINK_COM_POS_2": POSITIVE,
        "LINK_MOI": POSITIVE,
    },
}


class World:
    """Reads and writes the parameters of one unwrapped environment."""

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


class AttributeWorld(World):
    """Classic control: parameters are the environment's attributes."""

    def __init__(self, env: Any, ranges: Mapping[str, Range]) -> None:
        self.env = env
        self.ranges = dict(ranges)
        self._cartpole = type(env).__name__ == "CartPoleEnv"

    def current(self, name: str) -> float:
        return float(getattr(self.env, name))

    def apply(self, values: Mapping[str, float], names: Iterable[str], reset: bool) -> None:
        env = self.env
        for name in values if reset else names:
            setattr(env, name, values[name])
        if self._cartpole:  # the derived constants its step reads
            env.total_mass = env.masspole + env.masscart
            env.polemass_length = env.masspole * env.length

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
            "gravity": NONNEGATIVE if gravity_range is None else Range(*gravity_range),
            "mass_scale": POSITIVE,
            "friction_scale": NONNEGATIVE,
            "damping_scale": NONNEGATIVE,
            "gear_scale": NONNEGATIVE,
        }
        self._body: dict[str, int] = {}
        for i in range(1, model.nbody):  # body 0 is the world
            name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, i)
            if name and model.body_mass[i] > 0:  # a massless body has no inertia to scale
                self._body[name] = i
                ranges[f"mass:{name}"] = POSITIVE
        self._geom: dict[str, int] = {}
        for i in range(model.ngeom):
            name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, i)
            if name:
                self._geom[name] = i
                ranges[f"friction:{name}"] = NONNEGATIVE
        self._dof: dict[str, int] = {}
        for i in range(model.njnt):
            name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, i)
            # one damping per joint: hinges and slides (free and ball joints have several dofs)
            if name and model.jnt_type[i] in (
                mujoco.mjtJoint.mjJNT_HINGE,
                mujoco.mjtJoint.mjJNT_SLIDE,
            ):
                self._dof[name] = int(model.jnt_dofadr[i])
                ranges[f"damping:{name}"] = NONNEGATIVE
        self.ranges = ranges
        self._state_spec = mujoco.mjtState.mjSTATE_INTEGRATION
        self._state = np.empty(mujoco.mj_stateSize(model, self._state_spec))
        self._planning: tuple[int, Any] | None = None  # (world version, model copy)
        self._version = 0

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
        groups = {self._group(n) for n in (values if reset else names)}
        model = self._model
        if "gravity" in groups:
            g = values["gravity"]
            if self._set_gravity is not None:
                self._set_gravity(g)
            else:
                model.opt.gravity[:] = self._direction * g
        if "mass" in groups:
            mass = self._mass.copy()
            for name, i in self._body.items():
                if "mass:" + name in values:
                    mass[i] = values["mass:" + name]
            mass *= values.get("mass_scale", 1.0)
            if not np.array_equal(mass, model.body_mass):
                ratio = np.divide(mass, self._mass, out=np.ones_like(mass), where=self._mass > 0)
                model.body_mass[:] = mass
                model.body_inertia[:] = self._inertia * ratio[:, None]
                self._set_const()
        if "friction" in groups:
            friction = self._friction.copy()
            for name, i in self._geom.items():
                if "friction:" + name in values:
                    friction[i, 0] = values["friction:" + name]
            model.geom_friction[:] = friction * values.get("friction_scale", 1.0)
        if "damping" in groups:
            damping = self._damping.copy()
            for name, i in self._dof.items():
                if "damping:" + name in values:
                    damping[i] = values["damping:" + name]
            model.dof_damping[:] = damping * values.get("damping_scale", 1.0)
        if "gear" in groups:
            model.actuator_gear[:] = self._gear * values["gear_scale"]
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
    """The :class:`World` of an unwrapped environment.

    Raises:
        ValueError: If the environment is neither MuJoCo-based nor in :data:`CLASSIC_CONTROL`.
    """
    if isinstance(getattr(env, "model", None), mujoco.MjModel) and isinstance(
        getattr(env, "data", None), mujoco.MjData
    ):
        return MujocoWorld(env)
    name = type(env).__name__
    if name in CLASSIC_CONTROL:
        return AttributeWorld(env, CLASSIC_CONTROL[name])
    raise ValueError(
        f"env must be a MuJoCo environment (with model and data) or one of the classic-control "
        f"environments {sorted(CLASSIC_CONTROL)}, got {name}"
    )
