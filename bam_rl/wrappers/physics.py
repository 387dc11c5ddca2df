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
#: Any finite number: the range of ``attr:<name>`` and declared parameters.
ANY = Range(-math.inf, math.inf)


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
    """The :class:`World` of an unwrapped environment: a :class:`MujocoWorld`, an
    :class:`AttributeWorld` (:data:`CLASSIC_CONTROL`) or, for any other, a :class:`CustomWorld`
    without built-in parameters."""
    if isinstance(getattr(env, "model", None), mujoco.MjModel) and isinstance(
        getattr(env, "data", None), mujoco.MjData
    ):
        return MujocoWorld(env)
    name = type(env).__name__
    if name in CLASSIC_CONTROL:
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
