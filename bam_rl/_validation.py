"""Argument checks shared by the core: each raises ``ValueError`` naming the argument."""

from __future__ import annotations

from typing import Any

import numpy as np


def as_float_array(name: str, value: Any) -> np.ndarray:
    """Converts ``value`` to a float64 array and rejects NaN or infinite entries.

    Strings are refused although numpy would parse ``"1.5"``: a string where a number is
    expected is a caller's mistake, not data.
    """
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be numeric, got {value!r}")
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be numeric, got {value!r}") from error
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite (no NaN or inf), got {value!r}")
    return array


def check_positive(name: str, value: Any) -> np.ndarray:
    """Returns ``value`` as a float64 array after checking every entry is finite and > 0."""
    array = as_float_array(name, value)
    if np.any(array <= 0):
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return array


def check_nonnegative(name: str, value: Any) -> np.ndarray:
    """Returns ``value`` as a float64 array after checking every entry is finite and >= 0."""
    array = as_float_array(name, value)
    if np.any(array < 0):
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return array


def check_unit_interval(name: str, value: Any, *, open_: bool = False) -> np.ndarray:
    """Checks every entry lies in [0, 1] (or (0, 1) when ``open_``)."""
    array = as_float_array(name, value)
    if open_:
        if np.any((array <= 0) | (array >= 1)):
            raise ValueError(f"{name} must lie in the open interval (0, 1), got {value!r}")
    elif np.any((array < 0) | (array > 1)):
        raise ValueError(f"{name} must lie in [0, 1], got {value!r}")
    return array


def check_integer_valued(name: str, value: Any, *, minimum: int | None = 0) -> np.ndarray:
    """Checks entries are whole numbers (stored as float64) no smaller than ``minimum``."""
    array = as_float_array(name, value)
    if np.any(array != np.round(array)):
        raise ValueError(f"{name} must contain whole numbers, got {value!r}")
    if minimum is not None and np.any(array < minimum):
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return array
