"""Argument checks shared by the math core, ``agents``, the environments and the wrappers: each
raises ``ValueError`` naming the argument and the accepted range.

A pure leaf module (numpy and the standard library only), so ``bam_rl.envs`` and
``bam_rl.wrappers`` may use it without reaching the rest of the core. The environments'
checks keep their own wording (``positive_int``, ``int_in_range``, ``float_in_range``,
``finite_float``, ``scalar_action``, ``gaussian_reward_bounds``; the last section); the memory
budget (:func:`check_memory`) is one for all.
"""

from __future__ import annotations

import math
import numbers
import os
from typing import Any

import numpy as np

#: Default ceiling, in bytes, on what one size argument may make an object allocate (4 GiB):
#: far above every paper setting (the largest allocates tens of MB), far below what takes a
#: shared machine down. :func:`memory_budget` lowers it to the machine's and the process's
#: limits; the environment variable :data:`MEMORY_BUDGET_ENV` replaces it.
DEFAULT_MEMORY_BUDGET = 4 * 2**30
#: Environment variable replacing :data:`DEFAULT_MEMORY_BUDGET` (a number of bytes).
MEMORY_BUDGET_ENV = "BAM_RL_MEMORY_BUDGET"
# requests below this many bytes are accepted without reading any limit (the hot paths)
_SMALL_REQUEST = 2**26


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


def format_bytes(nbytes: float) -> str:
    """``nbytes`` in binary units, e.g. ``"7.5 GiB"``."""
    value = float(nbytes)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(value) < 1024 or unit == "PiB":
            return f"{value:.0f} bytes" if unit == "bytes" else f"{value:.3g} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def _read_int(path: str) -> int | None:
    """The first whitespace-separated integer of a small system file, or ``None``."""
    try:
        with open(path, encoding="ascii") as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def memory_budget() -> tuple[int, str]:
    """The most bytes one size argument may ask for, and what sets that bound.

    The smallest of: :data:`DEFAULT_MEMORY_BUDGET` (4 GiB; ``$BAM_RL_MEMORY_BUDGET`` bytes
    when set), the machine's physical memory, a cgroup (container) memory limit, and the
    address space left under the process's ``RLIMIT_AS`` (``ulimit -v``).

    Raises:
        ValueError: If ``$BAM_RL_MEMORY_BUDGET`` is set but is not a positive integer.
    """
    text = os.environ.get(MEMORY_BUDGET_ENV, "").strip()
    if text:
        try:
            configured = int(text)
        except ValueError:
            configured = 0
        if configured < 1:
            raise ValueError(
                f"${MEMORY_BUDGET_ENV} must be a positive number of bytes, got {text!r}"
            )
        bounds = [(configured, f"${MEMORY_BUDGET_ENV}")]
    else:
        bounds = [
            (
                DEFAULT_MEMORY_BUDGET,
                f"the default memory budget; ${MEMORY_BUDGET_ENV}, in bytes, changes it",
            )
        ]
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        if physical > 0:
            bounds.append((physical, "the machine's physical memory"))
    except (AttributeError, OSError, ValueError):  # pragma: no cover - not POSIX
        pass
    cgroup = _read_int("/sys/fs/cgroup/memory.max")
    if cgroup is not None and cgroup > 0:
        bounds.append((cgroup, "the container's memory limit (cgroup memory.max)"))
    soft = _address_space_limit()
    if soft is not None:
        pages = _read_int("/proc/self/statm")
        used = 0 if pages is None else pages * os.sysconf("SC_PAGE_SIZE")
        bounds.append((max(soft - used, 0), "the address space left under RLIMIT_AS (ulimit -v)"))
    return min(bounds)


def _address_space_limit() -> int | None:
    """The soft ``RLIMIT_AS`` in bytes, or ``None`` when unlimited (or not POSIX)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft < 0 or soft == resource.RLIM_INFINITY else int(soft)


def check_memory(what: str, nbytes: float) -> None:
    """Raises ``ValueError`` when ``nbytes`` exceeds :func:`memory_budget`, before anything
    is allocated.

    Args:
        what: The argument(s) and value(s) responsible, e.g. ``"n_arms = 1000000"``; the
            message reads ``"<what> would need about 7.5 GiB (8053063680 bytes) ..."``.
        nbytes: What they would make the object allocate (an estimate that errs high).
    """
    try:
        nbytes = float(nbytes)
    except OverflowError:  # an int beyond float64
        nbytes = math.inf
    if nbytes <= _SMALL_REQUEST:
        return
    budget, source = memory_budget()
    if nbytes > budget:
        raise ValueError(
            f"{what} would need about {format_bytes(nbytes)} ({nbytes:,.0f} bytes) of "
            f"memory, more than {format_bytes(budget)} ({source}); choose a smaller size"
        )


def check_size(
    name: str, value: Any, bytes_each: float, *, minimum: int = 1, extra: float = 0.0
) -> int:
    """Returns ``value`` as an int after :func:`check_int` and :func:`check_memory`: an
    integer ``>= minimum`` whose ``value * bytes_each + extra`` bytes fit the budget."""
    count = check_int(name, value, minimum=minimum)
    check_memory(f"{name} = {count}", count * bytes_each + extra)
    return count


def check_seed(seed: Any) -> int | None:
    """Returns ``seed`` as a Python int (or ``None``) after checking it is a whole number >= 0."""
    if seed is None:
        return None
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be None or an integer >= 0, got {seed!r}")
    return int(seed)


def _one_number(name: str, value: Any, expected: str, single: str, *, nested: bool) -> float:
    """Returns ``value``, anything but a plain int or float, as a Python float if it is one
    number (a scalar or a one-element array, nested in several dimensions only if ``nested``);
    the ``ValueError`` says it ``must be {expected}``, or ``must be {single}`` when it is an
    array of another size or nesting. Finiteness and bounds are the caller's."""
    if isinstance(value, (str, bytes, bool, np.bool_)):
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be {expected}, got {value!r}") from error
    if array.size != 1 or (array.ndim > 1 and not nested):
        raise ValueError(f"{name} must be {single}, got {value!r}")
    return float(array.reshape(-1)[0])


def check_finite_scalar(name: str, value: Any) -> float:
    """Returns ``value`` as a Python float, raising ``ValueError`` naming ``name`` and the value
    unless it is one finite real number (a scalar or a one-element array)."""
    if type(value) is float or type(value) is int:  # fast path for the per-step hot loop
        if math.isfinite(value):
            return float(value)
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    number = _one_number(name, value, "a finite number", "a single number", nested=True)
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
    if not all_finite(array):
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
        if not all_finite(np.asarray(value)):
            raise ValueError(f"{name} must hold finite statistics, got non-finite {field!r}")
    if not all_finite(np.asarray(params.log_h)):
        raise ValueError(f"{name} must hold finite statistics, got a non-finite log_h")


def check_real(
    name: str,
    value: Any,
    *,
    lower: float | None = None,
    upper: float | None = None,
    open_lower: bool = False,
    open_upper: bool = False,
) -> float:
    """Returns ``value`` as a Python float after checking it is one finite real number (not a
    bool, a string or an array of several numbers) within the given bounds; the
    ``ValueError`` names ``name`` and the accepted range."""
    low = "" if lower is None else ("(" if open_lower else "[") + f"{lower:g}"
    high = "" if upper is None else f"{upper:g}" + (")" if open_upper else "]")
    if lower is not None and upper is not None:
        expected = f"a finite number in {low}, {high}"
    elif lower is not None:
        expected = f"a finite number {'>' if open_lower else '>='} {lower:g}"
    elif upper is not None:
        expected = f"a finite number {'<' if open_upper else '<='} {upper:g}"
    else:
        expected = "a finite number"
    if type(value) is not float and type(value) is not int:
        number = _one_number(name, value, expected, f"a single number ({expected})", nested=False)
    else:
        number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    if lower is not None and (number < lower or (open_lower and number == lower)):
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    if upper is not None and (number > upper or (open_upper and number == upper)):
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    return number


def check_positive_real(name: str, value: Any) -> float:
    """One finite real number > 0 (see :func:`check_real`)."""
    return check_real(name, value, lower=0.0, open_lower=True)


def check_axis(axis: Any, ndim: int, name: str = "axis") -> tuple[int, ...] | None:
    """Normalises the ``axis`` argument of a family's ``stats``: ``None`` (every axis), an
    integer or a tuple of distinct integers, each in ``[-ndim, ndim)``; returns ``None`` or
    a tuple of non-negative axes. ``ValueError`` names the argument and the accepted range."""
    if axis is None:
        return None
    items = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for item in items:
        if isinstance(item, (bool, np.bool_)) or not isinstance(item, numbers.Integral):
            raise ValueError(
                f"{name} must be None, an integer or a tuple of integers in "
                f"[{-ndim}, {ndim}) for data with {ndim} axes, got {axis!r}"
            )
        index = int(item)
        if not -ndim <= index < ndim:
            raise ValueError(
                f"{name} {index} is out of range: the data have {ndim} axes, "
                f"so {name} must lie in [{-ndim}, {ndim}) (got {axis!r})"
            )
        out.append(index % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{name} contains repeated entries: {axis!r}")
    return tuple(out)


def all_finite(array: np.ndarray) -> bool:
    """True when every entry of ``array`` is finite (a cheap reduction first: a finite sum
    implies finite entries; only an overflowing sum needs the element-wise test)."""
    if array.ndim == 0:
        return math.isfinite(array.item())
    return math.isfinite(array.sum()) or bool(np.isfinite(array).all())


def check_arm(name: str, action: Any, n_arms: int, *, flat: bool = False) -> int:
    """Returns an arm index as an int in ``[0, n_arms)`` or raises ``ValueError`` naming it.

    Accepts Python and NumPy integers, integral floats are refused (an arm is not a number on
    a line), as are booleans and arrays with more than one element; with ``flat`` (the
    environments' rule) a one-element array must also have at most one dimension.
    """
    if type(action) is int or (isinstance(action, np.integer)):
        arm = int(action)
    elif (
        isinstance(action, np.ndarray)
        and action.size == 1
        and (not flat or action.ndim <= 1)
        and np.issubdtype(action.dtype, np.integer)
    ):
        arm = int(action.reshape(-1)[0])
    else:
        raise ValueError(f"{name} must be an integer arm index in [0, {n_arms}), got {action!r}")
    if not 0 <= arm < n_arms:
        raise ValueError(f"{name} must be an integer arm index in [0, {n_arms}), got {arm!r}")
    return arm


# --- the environments' checks (their messages, as the environments have always worded them) ---

#: Largest magnitude a Gaussian bandit's rewards may reach: ``|mean| + NOISE_REACH ·
#: noise_std`` must stay within it, so rewards, their sums over any horizon and their squares
#: stay finite.
MAX_REWARD_MAGNITUDE = 1e150
#: Standard deviations of the noise counted in that bound (float64 normal draws stay far
#: below 40).
NOISE_REACH = 40.0


def gaussian_reward_bounds(noise_std: float, largest_mean: float, means_name: str) -> None:
    """``ValueError`` unless Gaussian rewards ``mean + noise_std · N(0, 1)`` stay finite:
    every ``|mean| <= MAX_REWARD_MAGNITUDE`` (``largest_mean`` is the largest ``|mean|``,
    ``means_name`` the argument that sets the means) and ``noise_std <= (MAX_REWARD_MAGNITUDE -
    largest_mean) / NOISE_REACH``."""
    rule = (
        f"|mean| + {NOISE_REACH:g}·noise_std <= {MAX_REWARD_MAGNITUDE:g} keeps Gaussian rewards "
        "and their squares finite"
    )
    if not largest_mean <= MAX_REWARD_MAGNITUDE:
        raise ValueError(
            f"{means_name} must lie within ±{MAX_REWARD_MAGNITUDE:g} for reward='gaussian' "
            f"({rule}), got a mean of magnitude {largest_mean:g}"
        )
    limit = (MAX_REWARD_MAGNITUDE - largest_mean) / NOISE_REACH
    if not noise_std <= limit:
        raise ValueError(
            f"noise_std must be in [0, {limit:.6g}] for reward='gaussian' with these "
            f"{means_name} ({rule}), got {noise_std!r}"
        )


def _int_within(value: Any, low: int, high: float = math.inf) -> bool:
    """True when ``value`` is an int (not a bool; numpy integers count) in ``[low, high]``."""
    return (
        not isinstance(value, bool)
        and isinstance(value, int | np.integer)
        and bool(low <= value <= high)
    )


def positive_int(name: str, value: Any) -> int:
    """Return ``value`` as an int >= 1 or raise ``ValueError`` naming ``name``."""
    if not _int_within(value, 1):
        raise ValueError(f"{name} must be a positive int (>= 1), got {value!r}")
    return int(value)


def int_in_range(name: str, value: Any, low: int, high: int) -> int:
    """Return ``value`` as an int in ``[low, high]`` or raise ``ValueError`` naming ``name``."""
    if not _int_within(value, low, high):
        raise ValueError(f"{name} must be an int in [{low}, {high}], got {value!r}")
    return int(value)


def _as_float(message: str, value: Any) -> float:
    """``float(value)``, refusing strings, bytes and bools with ``f"{message}, got {value!r}"``."""
    if isinstance(value, str | bytes | bool):
        raise ValueError(f"{message}, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{message}, got {value!r}") from exc


def float_in_range(name: str, value: Any, low: float, high: float, unit: str = "") -> float:
    """Return ``value`` as a float in ``[low, high]`` or raise ``ValueError`` naming ``name``.

    The message reads ``"<name> must be a finite number > 0 in [low, high] <unit>"`` when
    ``low > 0`` (so callers that promised "> 0" keep their wording).
    """
    sign = "> 0 " if low > 0 else ""
    suffix = f" {unit}" if unit else ""
    message = f"{name} must be a finite number {sign}in [{low:g}, {high:g}]{suffix}"
    out = _as_float(message, value)
    if not low <= out <= high:  # also rejects NaN
        raise ValueError(f"{message}, got {value!r}")
    return out


def finite_float(name: str, value: Any) -> float:
    """Return ``value`` as a finite float or raise ``ValueError`` naming ``name``."""
    message = f"{name} must be a finite number"
    out = _as_float(message, value)
    if not math.isfinite(out):
        raise ValueError(f"{message}, got {value!r}")
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
