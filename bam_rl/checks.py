"""Argument checks shared by the math core and ``agents``: each raises ``ValueError`` naming
the argument and the accepted range. (``envs`` keeps its own, so it depends on nothing of ours.)
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np


def check_int(name: str, value: Any, *, minimum: int | None = 1) -> int:
    """Returns ``value`` as a Python int after checking it is an integer ``>= minimum``.

    Booleans and integral floats (``2.0``) are refused: a count is not a truth value, and a
    float where an int is expected usually hides a computation gone wrong.
    """
    if minimum is None:
        expected = "an integer"
    elif minimum == 1:
        expected = "a positive integer (>= 1)"
    else:
        expected = f"an integer >= {minimum}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    return int(value)


def check_seed(seed: Any) -> int | None:
    """Returns ``seed`` as a Python int (or ``None``) after checking it is a whole number >= 0."""
    if seed is None:
        return None
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be None or an integer >= 0, got {seed!r}")
    return int(seed)


def check_finite_scalar(name: str, value: Any) -> float:
    """Returns ``value`` as a Python float, raising ``ValueError`` naming ``name`` and the value
    unless it is one finite real number (a scalar or a one-element array)."""
    if type(value) is float or type(value) is int:  # fast path for the per-step hot loop
        if math.isfinite(value):
            return float(value)
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if isinstance(value, (str, bytes, bool, np.bool_)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be a finite number, got {value!r}") from error
    if array.size != 1:
        raise ValueError(f"{name} must be a single number, got {value!r}")
    number = float(array.reshape(-1)[0])
    if not math.isfinite(number):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return number


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


def check_finite_params(name: str, params: Any) -> None:
    """Raises ``ValueError`` naming ``name`` unless every natural-parameter field and the
    base measure of ``params`` (a ``NaturalParams``) are finite: one NaN datum would
    otherwise poison every later belief built from it."""
    for field, value in params.fields.items():
        if not np.all(np.isfinite(value)):
            raise ValueError(f"{name} must hold finite statistics, got non-finite {field!r}")
    if not np.all(np.isfinite(params.log_h)):
        raise ValueError(f"{name} must hold finite statistics, got a non-finite log_h")
