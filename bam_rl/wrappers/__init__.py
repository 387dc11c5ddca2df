"""Gymnasium wrappers: any environment, non-stationary (:class:`NonStationary`).

This layer imports gymnasium, mujoco, numpy and, of ours, only :mod:`bam_rl.schedules`,
:mod:`bam_rl.checks` and :mod:`bam_rl._io` (``tests/test_architecture.py``).
"""

from __future__ import annotations

from .nonstationary import NOTIFY, NonStationary, make_nonstationary, schedule_from_spec
from .physics import CLASSIC_CONTROL, world_of

__all__ = [
    "CLASSIC_CONTROL",
    "NOTIFY",
    "NonStationary",
    "make_nonstationary",
    "parameters",
    "schedule_from_spec",
]


def parameters(env: object) -> list[str]:
    """The parameters :class:`NonStationary` can change on ``env`` (wrapped or not).

    Raises:
        ValueError: If ``env`` is neither a MuJoCo nor a classic-control environment.
    """
    return sorted(world_of(getattr(env, "unwrapped", env)).ranges)
