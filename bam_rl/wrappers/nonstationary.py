"""``NonStationary``: any Gymnasium environment, non-stationary in two lines."""

from __future__ import annotations

import inspect
import math
import zlib
from collections.abc import Mapping
from typing import Any, SupportsFloat

import gymnasium
import numpy as np
from gymnasium import spaces

from bam_rl import schedules as _schedules
from bam_rl.schedules import UNITS

from .physics import (
    ATTR,
    CLASSIC_CONTROL,
    CustomWorld,
    DeclaredWorld,
    World,
    declared_parameters,
    numeric_attributes,
    world_of,
)

__all__ = ["NOTIFY", "NonStationary", "make_nonstationary", "schedule_from_spec"]

#: Notification levels: what ``info`` says about the world.
NOTIFY = ("value", "flag", "none")
#: Spawn key separating the schedules' random streams from the environment's own.
_SPAWN_KEY = 0xBA4


def _steady_until(schedules: list[Any], items: list[int], t: int) -> float:
    """The first step after ``t`` at which one of the step-level ``schedules`` (``items``)
    may take another value than at ``t``: known for :class:`~bam_rl.schedules.Cycle` and
    :class:`~bam_rl.schedules.Piecewise` (exactly those classes: pure, piecewise-constant
    functions of ``t``), ``t + 1`` if any other schedule is among them (evaluated every
    step); ``inf`` when none changes again. Until then ``step`` skips their evaluation, which
    would find every value unchanged."""
    until = math.inf
    for i in items:
        schedule = schedules[i]
        kind = type(schedule)
        if kind is _schedules.Cycle:
            every = schedule.every
            until = min(until, (t // every + 1) * every)
        elif kind is _schedules.Piecewise:
            until = min(until, next((time for time in schedule.times if time > t), math.inf))
        else:
            return t + 1
    return until


def _self_dot(observation: np.ndarray) -> float:
    """The dot product of ``observation``'s entries with themselves, any shape: finite iff
    every entry is (barring an overflow, which the caller checks entry by entry)."""
    flat = observation.reshape(-1)
    return float(flat.dot(flat))


class NonStationary(gymnasium.Wrapper, gymnasium.utils.RecordConstructorArgs):
    """Change an environment's physics over time, following schedules.

    ```python
    import gymnasium as gym
    from bam_rl.schedules import cycle
    from bam_rl.wrappers import NonStationary

    env = NonStationary(gym.make("InvertedPendulum-v5"), {"gravity": cycle([9.81, 3.72])})
    ```

    Any environment, a user's own included (``docs/any_env.md``, "Your own environment"):

    ```python
    env = NonStationary(
        PointMass(),
        {"attr:mass": cycle([1.0, 5.0], every=2), "drag": cycle([0.0, 0.5])},
        parameters={"drag": (get_drag, set_drag)},  # get(env) -> float, set(env, value)
    )
    ```

    ``changes`` maps a parameter of the environment to a schedule (:mod:`bam_rl.schedules`).
    The parameters:

    * MuJoCo (:mod:`bam_rl.wrappers.physics`): ``gravity``, ``mass:<body>``,
      ``friction:<geom>``, ``damping:<joint>`` and the factors ``mass_scale``,
      ``friction_scale``, ``damping_scale``, ``gear_scale``;
    * classic control: the attributes of :data:`~bam_rl.wrappers.CLASSIC_CONTROL` (``g``,
      ``masspole``, …; what is derived from them follows);
    * any environment, a user's own included: ``attr:<name>``, the attribute
      ``env.unwrapped.<name>`` (a finite ``int`` or ``float``, written as a ``float``), and the
      names declared in ``parameters``, whose ``(get, set)`` pair reads and writes them.

    :func:`bam_rl.wrappers.parameters` lists the built-in ones (a user's environment, which has
    none, lists its numeric attributes as ``attr:<name>``). ``attr:<name>`` and declared
    parameters accept any finite number and behave as the built-in ones: read once here (a
    missing attribute, or a value that is not a finite number, is a ``ValueError`` naming the
    parameter), written at every ``reset`` and at the step boundaries of a step-level schedule,
    reported in ``info``. An episode-level schedule takes its value ``t`` at the ``t``-th
    ``reset``; a step-level one takes value ``t`` just before the ``t``-th step (value 0 at
    the seeded reset), so its changes are flagged at the step where they act. Both counters
    survive ``reset`` (and the vector envs' autoreset); ``reset(seed=s)`` restarts them at 0
    and reseeds each parameter's generator from ``s`` and the parameter's name, so a seed
    gives the same schedule in any process, independently of the environment's own
    ``np_random``.

    Notification (``notify``): ``"value"`` puts ``info["context"]`` (the current values) and
    ``info["context_changed"]`` (True at the step or reset where a value actually changed) in
    every ``info``; ``"flag"`` only ``context_changed``; ``"none"`` nothing. What the wrapped
    environment announces itself is kept, not overwritten: ``context_changed`` is True when this
    layer or the environment (bam-rl's announced cart-pole, an inner ``NonStationary``) says
    so, and ``context`` holds the inner values with this layer's added (its own keys win). The
    ground truth is always :attr:`context` (``env.get_wrapper_attr("context")``, every nested
    layer's values too). ``observe_context=True`` appends the values, in the order of
    ``changes``, to a flat ``Box`` observation (a value beyond the observation dtype's finite
    range is refused, so float32 never turns it into ``inf``).

    Divergence (MuJoCo and classic control): the built-in parameters are bounded
    (:mod:`bam_rl.wrappers.physics`), yet some values in range still make a simulation
    diverge (a large gear or gravity). After every step the wrapper checks that the
    observation is finite and, on MuJoCo, that MuJoCo did not reset a bad state (its
    ``mjWARN_BADQPOS``/``BADQVEL``/``BADQACC`` counters, which it raises when it resets the
    state silently); either raises ``RuntimeError`` naming the values in force, instead of
    returning a transition that did not happen. Call ``reset()`` to go on.

    Copies: ``copy.deepcopy`` and pickle (joblib, Ray) rebuild a Gymnasium MuJoCo environment,
    and its model, from its arguments; the copy of this wrapper binds to the new model and
    writes the current values into it, so the copy steps in the world its :attr:`context` says.

    Attributes:
        changes: The parameter → schedule map.
        notify: The notification level.
        observe_context: Whether the observation carries the values.
    """

    def __init__(
        self,
        env: gymnasium.Env,
        changes: Mapping[str, Any],
        notify: str = "value",
        observe_context: bool = False,
        parameters: Mapping[str, Any] | None = None,
    ) -> None:
        """Wrap ``env``; nothing is changed on it until the first ``reset``.

        Args:
            env: Any Gymnasium environment (possibly wrapped). MuJoCo and classic-control ones
                have built-in parameters; every one has ``attr:<name>`` and declared ones.
            changes: Non-empty map from parameter name to schedule.
            notify: ``"value"``, ``"flag"`` or ``"none"``.
            observe_context: Append the values to the (flat ``Box``) observation.
            parameters: Parameters declared for anything an attribute cannot reach: a map
                name → ``(get, set)`` (or :class:`~bam_rl.wrappers.Parameter`), ``get(env)
                -> float`` and ``set(env, value) -> None`` called on the unwrapped
                environment. A name must not be a built-in one or start with ``attr:``.

        Raises:
            ValueError: On an unknown parameter (the message lists the environment's and says
                how to name an attribute), an ``attr:<name>`` the environment lacks or whose
                value is not a finite number, a declared parameter that is not a pair of
                callables or whose ``get`` gives no finite number, a schedule whose values leave
                the parameter's accepted range, an object that is not a schedule, an unknown
                ``notify`` or ``unit``, or ``observe_context`` with a non-flat-``Box``
                observation or with a value beyond its dtype's finite range. The environment
                is left untouched (a declared ``get`` is called).
        """
        if not isinstance(notify, str) or notify not in NOTIFY:
            raise ValueError(f"notify must be one of {NOTIFY}, got {notify!r}")
        if not isinstance(observe_context, bool | np.bool_):
            raise ValueError(f"observe_context must be a bool, got {observe_context!r}")
        if not isinstance(changes, Mapping) or not changes:
            raise ValueError(
                f"changes must be a non-empty dict {{parameter: schedule}}, got {changes!r}"
            )
        names = list(changes)
        base_space = env.observation_space
        limit = _observed_limit(base_space) if observe_context else math.inf
        world = world_of(env.unwrapped)
        declared = declared_parameters(parameters, world.ranges)
        if declared or any(isinstance(n, str) and n.startswith(ATTR) for n in names):
            world = DeclaredWorld(world, [n for n in names if n not in world.ranges], declared)
        for name in names:
            _check(world, env, name, changes[name], limit)
        if observe_context and not (
            isinstance(base_space, spaces.Box) and len(base_space.shape) == 1
        ):
            raise ValueError(
                f"observe_context=True needs a flat Box observation space, got {base_space}"
            )
        gymnasium.utils.RecordConstructorArgs.__init__(
            self,
            changes=dict(changes),
            notify=notify,
            observe_context=bool(observe_context),
            parameters=None if parameters is None else dict(parameters),
        )
        gymnasium.Wrapper.__init__(self, env)
        self.changes = dict(changes)
        self.notify = notify
        self.observe_context = bool(observe_context)
        self._world: World = world
        self._names = names
        self._schedules = [changes[n] for n in names]
        self._previous = [bool(getattr(s, "uses_previous", False)) for s in self._schedules]
        units = [getattr(s, "unit", "episode") for s in self._schedules]
        self._episode_items = [i for i, u in enumerate(units) if u == "episode"]
        self._step_items = [i for i, u in enumerate(units) if u == "step"]
        self._values = [world.current(n) for n in names]
        self._limit = limit
        for name, value in zip(names, self._values, strict=True):
            if abs(value) > limit:
                raise ValueError(_observed_message(name, value, limit, base_space))
        self._context = dict(zip(names, self._values, strict=True))
        self._inner = _inner_layer(env)  # a NonStationary inside this one, whose values add
        self._watch_bad_states()
        # the cheapest finiteness test of a float observation: 1, the sum of its entries as
        # Python floats (up to 64 entries, 0.4–1 µs); 2, its dot product with itself (~1 µs
        # at any size); 0, none (not a built-in physics environment, or no float Box)
        self._finite = 0
        if (
            world.physical
            and isinstance(base_space, spaces.Box)
            and np.issubdtype(base_space.dtype, np.floating)
        ):
            shape = base_space.shape or ()
            # a flat Box of at most 64 entries sums fastest; any other shape (stacked frames,
            # images) is flattened first, since sum() and dot() read only a 1-D array so
            self._finite = 1 if len(shape) == 1 and shape[0] <= 64 else 2
        self._rngs: list[np.random.Generator] = []
        self._episode = -1  # index of the current episode (-1 before the first reset)
        self._step = 0  # steps since the last seeded reset
        self._evaluated = -1  # step index the step-level values were last evaluated at
        # first step index at which a step-level value may change (0: evaluate at every step
        # until known; inf: there are none), see _steady_until
        self._steady = 0 if self._step_items else math.inf
        self._last_changed = False
        if observe_context:
            assert isinstance(base_space, spaces.Box)
            unknown = (-math.inf, math.inf)
            low, high = zip(*(_bounds(s) or unknown for s in self._schedules), strict=True)
            self.observation_space = spaces.Box(
                np.concatenate([base_space.low, np.asarray(low, dtype=base_space.dtype)]),
                np.concatenate([base_space.high, np.asarray(high, dtype=base_space.dtype)]),
                dtype=base_space.dtype,
            )
            self._dtype = base_space.dtype
            self._context_array = np.asarray(self._values, dtype=self._dtype)

    # ------------------------------------------------------------------------ the context
    @property
    def context(self) -> dict[str, float]:
        """The parameters' current values (a fresh dict): the ground truth at every ``notify``;
        with a ``NonStationary`` inside this one, its values too (this layer's win)."""
        if self._inner is not None:
            return {**self._inner.context, **self._context}
        return dict(self._context)

    @property
    def context_changed(self) -> bool:
        """Whether the last ``reset`` or ``step`` changed a value."""
        return self._last_changed

    @property
    def counters(self) -> dict[str, int]:
        """``episode`` (resets since the last seeded one, 0-based) and ``step`` (steps since)."""
        return {"episode": self._episode, "step": self._step}

    def planning_copy(self) -> gymnasium.Env:
        """An independent copy of the unwrapped environment, frozen in the current world and
        state (no schedule): a model to plan with. MuJoCo: a copy of ``MjData`` and a copy of
        the model shared by the planning copies of one world (treat it as read-only)."""
        return self._world.planning_copy()

    def _advance(self, items: list[int], t: int) -> list[str]:
        """Evaluate the schedules ``items`` at time ``t``; the names whose value changed."""
        changed: list[str] = []
        values, schedules, rngs, previous = (
            self._values,
            self._schedules,
            self._rngs,
            self._previous,
        )
        for i in items:
            old = values[i]
            if previous[i]:
                new = schedules[i].value(t, rngs[i], None if t == 0 else old)
            else:
                new = schedules[i].value(t, rngs[i])
            if new != old:
                changed.append(self._names[i])
                values[i] = _checked(self._world, self._names[i], new, self._limit)
        return changed

    def _publish(self, changed: bool, flag: bool) -> None:
        """Record whether values ``changed`` and the flag to report (False at the first
        reset: there is no earlier world to differ from)."""
        self._last_changed = flag
        if changed:
            self._context = dict(zip(self._names, self._values, strict=True))
            if self.observe_context:
                self._context_array = np.asarray(self._values, dtype=self._dtype)

    def _annotate(self, observation: Any, info: dict[str, Any]) -> Any:
        """Add this layer's notification to ``info``, keeping what the environment announced
        itself (its ``context_changed`` or'ed in, its ``context`` values under this layer's)."""
        if self.notify == "value":
            self._tell_values(info)
        elif self.notify == "flag":
            info["context_changed"] = self._last_changed or bool(info.get("context_changed", False))
        if self.observe_context:
            return np.concatenate((observation, self._context_array))
        return observation

    def _tell_values(self, info: dict[str, Any]) -> None:
        """The "value" notification in ``info``: this layer's values (under a ``context`` the
        environment announced itself) and whether they changed (or'ed with its own flag)."""
        inner = info.get("context")
        if inner is None:
            info["context"] = self._context.copy()  # callers keep infos: never shared
        else:
            info["context"] = {**_mapping(inner), **self._context}
        info["context_changed"] = self._last_changed or bool(info.get("context_changed", False))

    # ------------------------------------------------------------------------ Gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset the environment, then apply this episode's values.

        A non-``None`` ``seed`` also restarts the schedules (episode 0, step 0) and reseeds
        their generators; without one the counters continue.
        """
        observation, info = self.env.reset(seed=seed, options=options)
        first = self._episode < 0
        if seed is not None or not self._rngs:
            root = np.random.SeedSequence(seed)
            self._rngs = [
                np.random.Generator(
                    np.random.PCG64(
                        np.random.SeedSequence(
                            root.entropy, spawn_key=(_SPAWN_KEY, zlib.crc32(name.encode()))
                        )
                    )
                )
                for name in self._names
            ]
        if seed is not None or first:
            self._episode, self._step, self._evaluated = 0, 0, -1
        else:
            self._episode += 1
        before = list(self._values)
        if seed is not None or first:  # a restart: path-dependent schedules begin again
            for i in range(len(self._values)):
                self._values[i] = math.nan
        self._advance(self._episode_items, self._episode)
        if self._evaluated < 0:  # a restart: step 0's values are the reset's world
            self._advance(self._step_items, 0)
            self._evaluated = 0
            self._steady = _steady_until(self._schedules, self._step_items, 0)
        changed = [n for n, a, b in zip(self._names, before, self._values, strict=True) if a != b]
        self._world.apply(dict(zip(self._names, self._values, strict=True)), changed, reset=True)
        self._publish(bool(changed), bool(changed) and not first)
        if "gravity" in info and "gravity" in self._context and hasattr(self.unwrapped, "gravity"):
            info["gravity"] = self.unwrapped.gravity  # bam-rl's cart-pole: its info stays true
        return self._annotate(observation, info), info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Apply this step's values (step-level schedules), then step the environment.

        Raises:
            RuntimeError: If the simulation diverged in this step (MuJoCo or classic control):
                a non-finite observation, or MuJoCo met a bad state and reset it; the message
                names the values in force. Call ``reset()`` to go on.
            ValueError: If a schedule gives a value outside its parameter's range (or, for
                Acrobot, values whose one step could turn a link without bound).
        """
        t = self._step
        self._last_changed = False  # what _publish(False, False) records, without the call
        # step-level values: evaluated unless known unchanged until a later step (_steady)
        if t >= self._steady and self._evaluated != t:
            names = self._advance(self._step_items, t)
            self._evaluated = t
            self._steady = _steady_until(self._schedules, self._step_items, t)
            if names:
                self._world.apply(dict(zip(self._names, self._values, strict=True)), names, False)
                self._publish(True, True)
        try:
            observation, reward, terminated, truncated, info = self.env.step(action)
        except RuntimeError as error:  # bam-rl's cart-pole checks MuJoCo's warnings itself
            bad = self._bad
            if bad is not None and bad.any():
                raise RuntimeError(f"{error} (values in force: {self.context})") from error
            raise
        self._step = t + 1
        # MuJoCo's counters of silent state resets, all zero (a memoryview comparison: 30 ns)
        if self._bad_view is not None and self._bad_view != self._no_bad:
            self._diverged(
                t,
                "MuJoCo found a bad state and reset it silently ("
                + ", ".join(
                    f"{name} × {int(n)}" for name, n in zip(_BAD_NAMES, self._bad, strict=True) if n
                )
                + ")",
            )
        finite = self._finite
        if finite and not math.isfinite(
            sum(observation.tolist()) if finite == 1 else _self_dot(observation)
        ):
            if not np.isfinite(observation).all():  # not only an overflow of the sum
                self._diverged(t, "the observation holds non-finite entries")
        if self.notify != "value" or self.observe_context:
            return self._annotate(observation, info), reward, terminated, truncated, info
        self._tell_values(info)  # _annotate's "value" notification (the default's every step)
        return observation, reward, terminated, truncated, info

    def _watch_bad_states(self) -> None:
        """Bind the live view of MuJoCo's counters of silent state resets (``_bad``, ``None``
        without them), a memoryview of it and one of zeros to compare it with."""
        bad = self._world.bad_state_counts()
        self._bad = bad
        self._bad_view = None if bad is None else memoryview(bad)
        self._no_bad = None if bad is None else memoryview(np.zeros_like(bad))

    def _diverged(self, step: int, what: str) -> None:
        """``RuntimeError``: the simulation diverged at ``step`` under the values in force."""
        env = self.env
        name = env.spec.id if env.spec is not None else type(env.unwrapped).__name__
        raise RuntimeError(
            f"{name} diverged at step {step} (counted from the seeded reset; episode "
            f"{self._episode}) with the values in force {self.context}: {what}. These values "
            "make the simulation unstable, so this transition is not physical; call reset(), "
            "and use milder values"
        )

    # ------------------------------------------------------------------------ copies
    def __getstate__(self) -> dict[str, Any]:
        """The attributes, less the memoryviews of MuJoCo's counters (bound again by
        ``__setstate__``; a memoryview does not pickle)."""
        state = self.__dict__.copy()
        state["_bad_view"] = state["_no_bad"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """After ``copy.deepcopy`` or unpickling: bind the world to the copied environment
        (a Gymnasium MuJoCo environment comes back rebuilt, with a new model) and, once a
        ``reset`` applied the values, write them into it again."""
        self.__dict__.update(state)
        self.__dict__.setdefault("_steady", 0)  # a state from before it: evaluate every step
        world = self._world
        world.rebind(self.env.unwrapped)
        self._watch_bad_states()
        if self._episode >= 0:
            world.apply(dict(zip(self._names, self._values, strict=True)), self._names, True)


#: Names of the counters of ``World.bad_state_counts``, in order.
_BAD_NAMES = ("mjWARN_BADQPOS", "mjWARN_BADQVEL", "mjWARN_BADQACC")


def _mapping(value: Any) -> Mapping[str, Any]:
    """An inner ``info["context"]`` as a mapping (anything else is kept under ``"inner"``)."""
    return value if isinstance(value, Mapping) else {"inner": value}


def _inner_layer(env: Any) -> NonStationary | None:
    """The outermost :class:`NonStationary` inside ``env``'s wrappers, if any."""
    while isinstance(env, gymnasium.Wrapper):
        if isinstance(env, NonStationary):
            return env
        env = env.env
    return None


def _observed_limit(space: Any) -> float:
    """The largest magnitude an observation of ``space``'s dtype holds finitely."""
    dtype = getattr(space, "dtype", None)
    if dtype is not None and np.issubdtype(dtype, np.floating):
        return float(np.finfo(dtype).max)
    return math.inf


def _observed_message(name: str, value: float, limit: float, space: Any) -> str:
    return (
        f"changes[{name!r}]: observe_context=True puts the value in the {space.dtype} "
        f"observation, which holds magnitudes up to {limit:g}; got {value:g} (it would read "
        f"inf): use values within ±{limit:g} or observe_context=False"
    )


def _bounds(schedule: Any) -> tuple[float, float] | None:
    bounds = getattr(schedule, "bounds", None)
    return None if bounds is None else (float(bounds[0]), float(bounds[1]))


def _check(
    world: World, env: gymnasium.Env, name: Any, schedule: Any, limit: float = math.inf
) -> None:
    ranges = world.ranges
    if name not in ranges:
        raise ValueError(_unknown_message(world, env, name))
    if not callable(getattr(schedule, "value", None)):
        raise ValueError(
            f"changes[{name!r}] must be a schedule (an object with value(t, rng), e.g. "
            f"bam_rl.schedules.cycle), got {schedule!r}"
        )
    unit = getattr(schedule, "unit", "episode")
    if unit not in UNITS:
        raise ValueError(f"changes[{name!r}].unit must be one of {UNITS}, got {unit!r}")
    _schedules.check_schedule(name, schedule)  # a class for an instance, bad unit or bounds
    bounds = _bounds(schedule)
    if bounds is None:  # unknown: every value is checked as it comes
        return
    low, high = bounds
    accepted = ranges[name]
    if not accepted.contains(low, high):
        raise ValueError(
            f"changes[{name!r}]: the schedule's values span [{low:g}, {high:g}], outside the "
            f"accepted range of {name}, {accepted} (a finite number in it)"
        )
    if max(abs(low), abs(high)) > limit:
        raise ValueError(
            _observed_message(
                name, high if abs(high) > abs(low) else low, limit, env.observation_space
            )
        )


def _unknown_message(world: World, env: gymnasium.Env, name: Any) -> str:
    """Why ``name`` is no parameter of ``env``: what it has, and how to name others."""
    env_name = env.spec.id if env.spec is not None else type(env.unwrapped).__name__
    others = (
        "any attribute of env.unwrapped is a parameter as 'attr:<name>', anything else a "
        "(get, set) pair declared with parameters={name: (get, set)}"
    )
    if isinstance(getattr(world, "base", world), CustomWorld):
        attributes = [ATTR + a for a in numeric_attributes(env.unwrapped)]
        declared = sorted(n for n in world.ranges if not n.startswith(ATTR))
        return (
            f"changes: unknown parameter {name!r} for {env_name}, which has no built-in "
            f"parameters (env must be a MuJoCo environment (with model and data) or one of the "
            f"classic-control environments {sorted(CLASSIC_CONTROL)} for those); {others}. "
            f"Available: {attributes + declared}"
        )
    return (
        f"changes: unknown parameter {name!r} for {env_name}; its parameters are "
        f"{sorted(n for n in world.ranges if not n.startswith(ATTR))}; {others}"
    )


def _checked(world: World, name: str, value: Any, limit: float = math.inf) -> float:
    """A schedule's value as a float inside the parameter's range and, when observed, the
    observation's (ValueError otherwise)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    accepted = world.ranges[name]
    if not (math.isfinite(number) and accepted.contains(number, number)):
        raise ValueError(
            f"the schedule of {name!r} gave {value!r}, outside the accepted range {accepted}"
        )
    if abs(number) > limit:
        raise ValueError(
            f"the schedule of {name!r} gave {value!r}: the observation's dtype "
            f"holds magnitudes up to {limit:g} (observe_context=True)"
        )
    return number


#: Schedules a JSON spec may name (:func:`schedule_from_spec`).
SPEC_NAMES = ("piecewise", "cycle", "markov", "random_walk", "drift", "sinusoid")


def schedule_from_spec(name: str, spec: Any) -> Any:
    """A schedule from a JSON-able spec ``{"cycle": {"values": [9.81, 3.72], "every": 100,
    "unit": "step"}}`` (one key, a lower-case name of :mod:`bam_rl.schedules`, and its keyword
    arguments); a schedule object is returned as is. ``name`` labels errors.

    Raises:
        ValueError: If the spec is not one such key with a dict of arguments.
    """
    if callable(getattr(spec, "value", None)):
        return spec
    if not (isinstance(spec, Mapping) and len(spec) == 1):
        raise ValueError(
            f"changes[{name!r}] must be a schedule or a one-key dict naming one of "
            f"{SPEC_NAMES} with its arguments, got {spec!r}"
        )
    ((kind, kwargs),) = spec.items()
    if kind not in SPEC_NAMES or not isinstance(kwargs, Mapping):
        raise ValueError(
            f"changes[{name!r}] must name one of {SPEC_NAMES} with a dict of arguments, "
            f"got {spec!r}"
        )
    factory = getattr(_schedules, kind)
    accepted = [p for p in inspect.signature(factory).parameters if p != "self"]
    unknown = sorted(set(kwargs) - set(accepted))
    if unknown:  # a misspelt key is the spec's error, not a TypeError from a constructor
        raise ValueError(
            f"changes[{name!r}]: {kind} takes {', '.join(accepted)}, got unknown {unknown}"
        )
    return factory(**kwargs)


def make_nonstationary(
    env: str | None = None,
    changes: Mapping[str, Any] | None = None,
    notify: str = "value",
    observe_context: bool = False,
    **env_kwargs: Any,
) -> NonStationary:
    """``gym.make("bam_rl/NonStationary-v0", env="InvertedPendulum-v5", changes={...})``:
    the registered form (so ``bam-rl run --env-kwargs`` and sweeps can build one); schedules
    may be JSON specs (:func:`schedule_from_spec`).

    Raises:
        ValueError: As :class:`NonStationary`, on a bad spec, or when ``env`` or ``changes``
            is missing, or ``env`` is not a registered Gymnasium id.
    """
    if env is None or changes is None:
        missing = " and ".join(
            name for name, value in (("env", env), ("changes", changes)) if value is None
        )
        raise ValueError(
            f"bam_rl/NonStationary-v0 needs {missing}: give env (a Gymnasium id) and changes "
            '(a dict {parameter: schedule}), e.g. {"env": "Pendulum-v1", "changes": '
            '{"g": {"cycle": {"values": [9.81, 3.72]}}}}'
        )
    if not isinstance(changes, Mapping):
        raise ValueError(f"changes must be a dict {{parameter: schedule}}, got {changes!r}")
    built = {name: schedule_from_spec(name, spec) for name, spec in changes.items()}
    try:
        base = gymnasium.make(env, **env_kwargs)
    except gymnasium.error.UnregisteredEnv as error:
        raise ValueError(
            f"env={env!r} is not a registered Gymnasium environment: {error}"
        ) from None
    return NonStationary(base, built, notify, observe_context)
