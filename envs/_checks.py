"""Argument checks shared by the environments (``envs`` imports nothing of ``bam_rl``)."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

#: Default ceiling, in bytes, on what one size argument may make an environment allocate
#: (4 GiB), as ``bam_rl.checks.DEFAULT_MEMORY_BUDGET`` (``envs`` imports nothing of ours, so
#: the budget is read here too; both honour ``$BAM_RL_MEMORY_BUDGET``).
DEFAULT_MEMORY_BUDGET = 4 * 2**30
MEMORY_BUDGET_ENV = "BAM_RL_MEMORY_BUDGET"
_SMALL_REQUEST = 2**26


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


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def memory_budget() -> tuple[int, str]:
    """The most bytes one size argument may ask for, and what sets that bound: the smallest
    of 4 GiB (``$BAM_RL_MEMORY_BUDGET`` bytes when set), physical memory, a cgroup memory
    limit and the address space left under ``RLIMIT_AS``."""
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
    is allocated; ``what`` names the argument(s) responsible (``"n_arms = 1000000"``)."""
    try:
        nbytes = float(nbytes)
    except OverflowError:  # an int beyond float64
        nbytes = math.inf
    if nbytes <= _SMALL_REQUEST:
        return
    budget, source = memory_budget()
    if nbytes > budget:
        raise ValueError(
            f"{what} would need about {_format_bytes(nbytes)} ({nbytes:,.0f} bytes) of "
            f"memory, more than {_format_bytes(budget)} ({source}); choose a smaller size"
        )


def _format_bytes(nbytes: float) -> str:
    value = float(nbytes)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024:
            return f"{value:.0f} bytes" if unit == "bytes" else f"{value:.3g} {unit}"
        value /= 1024
    return f"{value:.3g} PiB"
