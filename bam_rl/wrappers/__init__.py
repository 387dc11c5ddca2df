"""Gymnasium wrappers: any environment, non-stationary (:class:`NonStationary`).

This layer imports gymnasium, mujoco, numpy and, of ours, only :mod:`bam_rl.schedules`,
:mod:`bam_rl.checks` and :mod:`bam_rl._io` (``tests/test_architecture.py``).
"""

from __future__ import annotations

from .nonstationary import NOTIFY, NonStationary, make_nonstationary, schedule_from_spec
from .physics import CLASSIC_CONTROL, CustomWorld, Parameter, numeric_attributes, world_of

__all__ = [
    "CLASSIC_CONTROL",
    "NOTIFY",
    "NonStationary",
    "Parameter",
    "make_nonstationary",
    "parameters",
    "schedule_from_spec",
]


def parameters(env: object) -> list[str]:
    """The parameters :class:`NonStationary` can change on ``env`` (wrapped or not), sorted.

    A MuJoCo or classic-control environment lists its built-in parameters (``gravity``,
    ``mass:<body>``, …, ``g``, ``masspole``, …). Any other environment, a user's own, has none
    and lists its public numeric attributes instead, as ``attr:<name>`` (instance or class data
    whose value is a finite ``int`` or ``float``, not a ``bool``, a method or a property).
    ``attr:<name>`` works on every environment, listed or not, and so do the ``(get, set)``
    pairs declared with ``NonStationary(..., parameters=...)``.
    """
    base = getattr(env, "unwrapped", env)
    world = world_of(base)
    if isinstance(world, CustomWorld):
        return ["attr:" + name for name in numeric_attributes(base)]
    return sorted(world.ranges)
