"""Argument checks shared by the environments (``envs`` imports nothing of ``bam_rl``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def positive_int(name: str, value: Any) -> int:
    """Return ``value`` as an int >= 1 or raise ``ValueError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value <= 0:
        raise ValueError(f"{name} must be a positive int (>= 1), got {value!r}")
    return int(value)


def int_in_range(name: str, value: Any, low: int, high: int) -> int:
    """Return ``value`` as an int in ``[low, high]`` or raise ``ValueError`` naming ``name``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | np.integer)
        or not low <= value <= high
    ):
        raise ValueError(f"{name} must be an int in [{low}, {high}], got {value!r}")
    return int(value)


def float_in_range(name: str, value: Any, low: float, high: float, unit: str = "") -> float:
    """Return ``value`` as a float in ``[low, high]`` or raise ``ValueError`` naming ``name``.

    The message reads ``"<name> must be a finite number > 0 in [low, high] <unit>"`` when
    ``low > 0`` (so callers that promised "> 0" keep their wording).
    """
    sign = "> 0 " if low > 0 else ""
    suffix = f" {unit}" if unit else ""
    message = f"{name} must be a finite number {sign}in [{low:g}, {high:g}]{suffix}"
    if isinstance(value, str | bytes | bool):
        raise ValueError(f"{message}, got {value!r}")
    try:
        out = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{message}, got {value!r}") from exc
    if not low <= out <= high:  # also rejects NaN
        raise ValueError(f"{message}, got {value!r}")
    return out


def finite_float(name: str, value: Any) -> float:
    """Return ``value`` as a finite float or raise ``ValueError`` naming ``name``."""
    if isinstance(value, str | bytes | bool):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    try:
        out = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a finite number, got {value!r}") from exc
    if not math.isfinite(out):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return out


def scalar_action(action: Any, low: float, high: float, meaning: str) -> float:
    """Return a one-element action as a float in ``[low, high]`` or raise ``ValueError``.

    Args:
        action: An array of shape ``(1,)`` (the fast path) or anything with one number.
        low: Lower bound of the action space.
        high: Upper bound of the action space.
        meaning: What the action is, for the error message (e.g. "estimate of theta").
    """
    if type(action) is np.ndarray and action.shape == (1,):
        value = float(action[0])
    else:
        try:
            if isinstance(action, str | bytes):
                raise TypeError(type(action))
            arr = np.asarray(action, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"action must be a number in [{low:g}, {high:g}], got {action!r}"
            ) from exc
        if arr.size != 1:
            raise ValueError(
                f"action must have exactly one element in [{low:g}, {high:g}], got {action!r}"
            )
        value = float(arr.reshape(-1)[0])
    if not low <= value <= high:  # also rejects NaN
        raise ValueError(f"action must be a finite {meaning} in [{low:g}, {high:g}], got {value!r}")
    return value
