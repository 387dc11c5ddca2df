"""Schedules: how a parameter of a non-stationary world changes over time.

A schedule is a small immutable object with ``value(t, rng)``: the parameter's value at time
``t`` (0, 1, 2, … counted in steps or in episodes, its ``unit``), drawing any randomness from
``rng``, a seeded :class:`numpy.random.Generator` that belongs to this one parameter.
:class:`bam_rl.wrappers.NonStationary` calls it once per ``t``, in order, and derives the
generator from ``reset(seed=...)``, so the same seed gives the same sequence of values in any
process. Schedules hold no state: one object can drive many environments (a vector env).

The path-dependent schedules (:class:`Markov`, :class:`RandomWalk`) need the value at
``t - 1``; they set ``uses_previous = True`` and take it as a third argument,
``value(t, rng, previous)`` (``previous`` is ``None`` at ``t = 0``).

============================================  ================================================
schedule                                      value at ``t``
============================================  ================================================
``piecewise({0: a, 50: b})``                  ``a`` for ``t < 50``, then ``b``
``cycle([a, b, c], every=k)``                 ``a`` for ``k`` units, ``b``, ``c``, ``a``, …
``markov([a, b], p_switch)``                  switches to another value with probability
                                              ``p_switch`` per unit (geometric durations)
``random_walk(start, std, low, high)``        ``previous + N(0, std²)``, clipped to [low, high]
``drift(start, rate, low, high)``             ``start + rate·t``, clipped to [low, high]
``sinusoid(mean, amplitude, period, phase)``  ``mean + amplitude·sin(2π t / period + phase)``
============================================  ================================================

Each takes ``unit="episode"`` (the default: the value changes only at ``reset``) or
``unit="step"``. ``bounds`` is the closed interval every value lies in (used to check a
schedule against the parameter's accepted range before anything is changed).

Writing your own::

    >>> import numpy as np
    >>> class Doubling(Schedule):
    ...     def value(self, t, rng):
    ...         return 2.0 ** min(t, 3)
    >>> [Doubling().value(t, np.random.default_rng(0)) for t in range(5)]
    [1.0, 2.0, 4.0, 8.0, 8.0]
"""

from __future__ import annotations

import abc
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bam_rl.checks import check_int, check_real

__all__ = [
    "UNITS",
    "Cycle",
    "Drift",
    "Markov",
    "Piecewise",
    "RandomWalk",
    "Schedule",
    "Sinusoid",
    "check_schedule",
    "cycle",
    "drift",
    "markov",
    "piecewise",
    "random_walk",
    "sinusoid",
]

#: The time units a schedule may count in.
UNITS = ("episode", "step")

#: The largest time ``t`` a schedule is evaluated at that :class:`Sinusoid` guards: the
#: integers a float holds exactly (2**53).
MAX_TIME = 2**53
#: The smallest ``period`` of a :class:`Sinusoid`: with a shorter one its phase
#: ``2π t / period`` overflows to ``inf`` before ``t`` reaches :data:`MAX_TIME`.
MIN_PERIOD = 1e-290


def _unit(unit: Any) -> str:
    if not isinstance(unit, str) or unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
    return unit


def _values(name: str, values: Any) -> tuple[float, ...]:
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Sequence | np.ndarray):
        raise ValueError(f"{name} must be a non-empty sequence of finite numbers, got {values!r}")
    out = tuple(check_real(f"{name}[{i}]", v) for i, v in enumerate(values))
    if not out:
        raise ValueError(f"{name} must be a non-empty sequence of finite numbers, got []")
    return out


class Schedule(abc.ABC):
    """Base class of schedules: a pure ``value(t, rng)`` and a time ``unit``.

    It is abstract: a subclass defines :meth:`value` (``Schedule()`` itself, or a subclass
    without ``value``, raises ``TypeError``).

    Attributes:
        unit: ``"episode"`` (``t`` counts resets) or ``"step"`` (``t`` counts steps).
        uses_previous: Whether :meth:`value` takes the value at ``t - 1`` as a third argument.
        bounds: Closed interval ``(low, high)`` containing every value (may be infinite), or
            ``None`` when unknown.
    """

    uses_previous = False

    def __new__(cls, *args: Any, **kwargs: Any) -> Schedule:
        if cls is Schedule:
            raise TypeError(
                "Schedule is the abstract base class of schedules: build one of "
                "piecewise, cycle, markov, random_walk, drift or sinusoid, or subclass "
                "Schedule and define value(t, rng)"
            )
        return super().__new__(cls)

    def __init__(self, unit: str = "episode") -> None:
        """Args:
        unit: ``"episode"`` or ``"step"``.

        Raises:
            ValueError: If ``unit`` is not one of :data:`UNITS`.
        """
        self.unit = _unit(unit)

    @property
    def bounds(self) -> tuple[float, float] | None:
        """Closed interval ``(low, high)`` containing every value of the schedule, or ``None``
        when unknown (then the wrapper checks each value as it comes)."""
        return None

    @abc.abstractmethod
    def value(self, t: int, rng: np.random.Generator) -> float:
        """The value at time ``t`` (``t`` = 0, 1, … in ``unit``), drawing from ``rng``."""

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(vars(self).items()))))


class Piecewise(Schedule):
    """A value from time ``t`` on: ``{0: 9.81, 100: 3.72}`` is 9.81 until 99, then 3.72."""

    def __init__(self, points: Mapping[int, float], unit: str = "episode") -> None:
        """Args:
        points: Map from a start time (an int >= 0; 0 must be one of them) to the value
            from then on. A time may also be a string of an integer (a JSON object's key,
            ``{"0": 9.81, "100": 3.72}``).
        unit: ``"episode"`` or ``"step"``.

        Raises:
            ValueError: If ``points`` is not such a map (a time that is no integer, two keys
                of the same time such as ``"0"`` and ``"00"``) or ``unit`` is unknown.
        """
        super().__init__(unit)
        if not isinstance(points, Mapping) or not points:
            raise ValueError(
                f"points must be a non-empty dict {{time: value}} with time 0, got {points!r}"
            )
        keys: dict[int, Any] = {}
        for key in points:
            time = _time_key(key)
            if time in keys:
                raise ValueError(
                    f"piecewise time keys {keys[time]!r} and {key!r} are the same time {time}: "
                    "give each time once"
                )
            keys[time] = key
        items = sorted((t, check_real(f"points[{key!r}]", points[key])) for t, key in keys.items())
        if items[0][0] != 0:
            raise ValueError(
                f"points must give the value at time 0 (its smallest time is {items[0][0]})"
            )
        self.times = tuple(t for t, _ in items)
        self.values = tuple(v for _, v in items)

    @property
    def bounds(self) -> tuple[float, float]:
        return (min(self.values), max(self.values))

    def value(self, t: int, rng: np.random.Generator) -> float:
        times = self.times
        i = len(times) - 1
        while times[i] > t:
            i -= 1
        return self.values[i]


class Cycle(Schedule):
    """``values[0]`` for ``every`` units, then ``values[1]``, …, and round again."""

    def __init__(self, values: Sequence[float], every: int = 1, unit: str = "episode") -> None:
        """Args:
        values: Non-empty sequence of finite numbers (repeats allowed: ``[10, 10, 3.72]``).
        every: Units each value lasts, an int >= 1.
        unit: ``"episode"`` or ``"step"``.

        Raises:
            ValueError: If ``values`` is empty or not finite, ``every < 1``, ``unit`` unknown.
        """
        super().__init__(unit)
        self.values = _values("values", values)
        self.every = check_int("every", every, minimum=1)

    @property
    def bounds(self) -> tuple[float, float]:
        return (min(self.values), max(self.values))

    def value(self, t: int, rng: np.random.Generator) -> float:
        values = self.values
        return values[(t // self.every) % len(values)]


class Markov(Schedule):
    """A random switch between ``values``: each unit, with probability ``p_switch``, a jump to
    one of the *other* values chosen uniformly, so each value lasts a geometric number of
    units with mean ``1 / p_switch`` (the semi-Markov model of non-stationary MDPs). Starts at
    ``values[start]``. One uniform draw per unit (and one more at a switch)."""

    uses_previous = True

    def __init__(
        self, values: Sequence[float], p_switch: float, start: int = 0, unit: str = "episode"
    ) -> None:
        """Args:
        values: At least two distinct finite numbers.
        p_switch: Probability of a switch per unit, in [0, 1].
        start: Index of the first value.
        unit: ``"episode"`` or ``"step"``.

        Raises:
            ValueError: If an argument is outside its accepted range.
        """
        super().__init__(unit)
        self.values = _values("values", values)
        if len(set(self.values)) < 2 or len(set(self.values)) != len(self.values):
            raise ValueError(f"values must hold at least two distinct numbers, got {values!r}")
        self.p_switch = check_real("p_switch", p_switch, lower=0.0, upper=1.0)
        self.start = check_int("start", start, minimum=0)
        if self.start >= len(self.values):
            raise ValueError(
                f"start must be an index into values, in [0, {len(self.values) - 1}], got {start!r}"
            )

    @property
    def bounds(self) -> tuple[float, float]:
        return (min(self.values), max(self.values))

    def value(self, t: int, rng: np.random.Generator, previous: float | None = None) -> float:
        if previous is None:
            return self.values[self.start]
        if rng.random() >= self.p_switch:
            return previous
        others = [v for v in self.values if v != previous]
        return others[int(rng.integers(len(others)))]


class RandomWalk(Schedule):
    """``previous + N(0, std²)`` clipped to ``[low, high]``, from ``start``."""

    uses_previous = True

    def __init__(
        self,
        start: float,
        std: float,
        low: float = -math.inf,
        high: float = math.inf,
        unit: str = "episode",
    ) -> None:
        """Args:
        start: Value at ``t = 0``, in ``[low, high]``.
        std: Standard deviation of each increment, a finite number >= 0.
        low: Lower clip (may be ``-inf``).
        high: Upper clip (may be ``inf``), > ``low``.
        unit: ``"episode"`` or ``"step"``.

        Raises:
            ValueError: If an argument is outside its accepted range.
        """
        super().__init__(unit)
        self.low, self.high, self.start = _clipped_start(start, low, high)
        self.std = check_real("std", std, lower=0.0)

    @property
    def bounds(self) -> tuple[float, float]:
        return (self.low, self.high)

    def value(self, t: int, rng: np.random.Generator, previous: float | None = None) -> float:
        if previous is None:
            return self.start
        x = previous + self.std * float(rng.standard_normal())
        return min(max(x, self.low), self.high)


class Drift(Schedule):
    """``start + rate * t`` clipped to ``[low, high]``."""

    def __init__(
        self,
        start: float,
        rate: float,
        low: float = -math.inf,
        high: float = math.inf,
        unit: str = "episode",
    ) -> None:
        """Args:
        start: Value at ``t = 0``, in ``[low, high]``.
        rate: Change per unit, a finite number.
        low: Lower clip (may be ``-inf``).
        high: Upper clip (may be ``inf``), > ``low``.
        unit: ``"episode"`` or ``"step"``.

        Raises:
            ValueError: If an argument is outside its accepted range.
        """
        super().__init__(unit)
        self.low, self.high, self.start = _clipped_start(start, low, high)
        self.rate = check_real("rate", rate)

    @property
    def bounds(self) -> tuple[float, float]:
        low = self.start if self.rate >= 0 else self.low
        high = self.start if self.rate <= 0 else self.high
        return (low, high)

    def value(self, t: int, rng: np.random.Generator) -> float:
        return min(max(self.start + self.rate * t, self.low), self.high)


class Sinusoid(Schedule):
    """``mean + amplitude * sin(2π t / period + phase)``."""

    def __init__(
        self,
        mean: float,
        amplitude: float,
        period: float,
        phase: float = 0.0,
        unit: str = "episode",
    ) -> None:
        """Args:
        mean: Centre value.
        amplitude: Half the peak-to-peak swing, >= 0.
        period: Units per cycle, >= :data:`MIN_PERIOD` (1e-290).
        phase: Phase at ``t = 0`` in radians.
        unit: ``"episode"`` or ``"step"``.

        Raises:
            ValueError: If an argument is outside its accepted range (``period`` below
                :data:`MIN_PERIOD`, where the phase ``2π t / period`` would overflow).
        """
        super().__init__(unit)
        self.mean = check_real("mean", mean)
        self.amplitude = check_real("amplitude", amplitude, lower=0.0)
        self.period = check_real("period", period, lower=MIN_PERIOD)
        self.phase = check_real("phase", phase)
        if not math.isfinite(2.0 * math.pi * MAX_TIME / self.period + abs(self.phase)):
            raise ValueError(
                f"phase must be a finite number small enough that the phase 2π t / period + "
                f"phase stays finite up to t = 2**53 with period = {self.period:g}, got {phase!r}"
            )

    @property
    def bounds(self) -> tuple[float, float]:
        return (self.mean - self.amplitude, self.mean + self.amplitude)

    def value(self, t: int, rng: np.random.Generator) -> float:
        return self.mean + self.amplitude * math.sin(2.0 * math.pi * t / self.period + self.phase)


def _time_key(key: Any) -> int:
    """A :class:`Piecewise` time: an int >= 0, or a string of one (a JSON object's key)."""
    if isinstance(key, str):
        digits = key[1:] if key.startswith("-") else key
        if not (digits.isascii() and digits.isdigit()):
            raise ValueError(f"piecewise time keys must be integers, got {key!r}")
        if key.startswith("-"):
            raise ValueError(f"piecewise time keys must be integers >= 0, got {key!r}")
        return int(key)
    if isinstance(key, (bool, np.bool_)) or not isinstance(key, (int, np.integer)):
        raise ValueError(f"piecewise time keys must be integers, got {key!r}")
    return check_int("points (a time)", key, minimum=0)


def check_schedule(name: Any, value: Any) -> Any:
    """``value`` if it is a schedule: an *instance* (of :class:`Schedule`, or any object with
    ``value(t, rng)``) whose ``unit`` is one of :data:`UNITS` and whose ``bounds``, if any, is
    a pair ``(low, high)`` of numbers; ``name`` (the parameter) labels the error.

    :class:`bam_rl.wrappers.NonStationary` calls it on each schedule of ``changes``.

    Raises:
        ValueError: Naming ``name`` when ``value`` is a class or a function (``cycle`` for
            ``cycle([...], every=...)``), has no callable ``value``, or an unknown ``unit``
            or malformed ``bounds``.
    """
    if isinstance(value, type) or not callable(getattr(value, "value", None)):
        hint = " (the class itself: call it with its arguments)" if isinstance(value, type) else ""
        raise ValueError(
            f"the schedule for {name!r} must be a Schedule instance such as "
            f"cycle([...], every=...) (an object with value(t, rng)), got {value!r}{hint}"
        )
    unit = getattr(value, "unit", "episode")
    if not isinstance(unit, str) or unit not in UNITS:
        raise ValueError(
            f"the schedule for {name!r} must count in a unit of {UNITS}, got unit={unit!r}"
        )
    bounds = getattr(value, "bounds", None)
    if bounds is not None:
        try:
            low, high = (float(b) for b in bounds)
        except (TypeError, ValueError):
            low, high = math.nan, math.nan
        if not low <= high:
            raise ValueError(
                f"the schedule for {name!r} must give bounds as None or a pair (low, high) of "
                f"numbers with low <= high, got {bounds!r}"
            )
    return value


def _clipped_start(start: Any, low: Any, high: Any) -> tuple[float, float, float]:
    """``(low, high, start)`` checked: a clip interval and a start inside it."""
    lo = -math.inf if low == -math.inf else check_real("low", low)
    hi = math.inf if high == math.inf else check_real("high", high)
    if not lo < hi:
        raise ValueError(f"low must be below high, got low={low!r}, high={high!r}")
    return lo, hi, check_real("start", start, lower=lo, upper=hi)


# The lower-case names build the same objects: each is its class (one constructor, the same
# arguments), kept so that specs and call sites read ``cycle([9.81, 3.72], every=100)``.
piecewise = Piecewise
"""The class :class:`Piecewise` under its lower-case name: ``piecewise({0: a, 50: b})``."""
cycle = Cycle
"""The class :class:`Cycle` under its lower-case name: ``cycle([a, b, c], every=k)``."""
markov = Markov
"""The class :class:`Markov` under its lower-case name: ``markov([a, b], p_switch)``."""
random_walk = RandomWalk
"""The class :class:`RandomWalk` under its lower-case name:
``random_walk(start, std, low, high)``."""
drift = Drift
"""The class :class:`Drift` under its lower-case name: ``drift(start, rate, low, high)``."""
sinusoid = Sinusoid
"""The class :class:`Sinusoid` under its lower-case name:
``sinusoid(mean, amplitude, period, phase)``."""
