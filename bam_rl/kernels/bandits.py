"""The klUCB family's hot loops, compiled (Numba): the Bernoulli-KL index and two change tests.

Each kernel has a literal NumPy or Python reference in the tests
(``tests/agents/test_piecewise_kernels.py``): :func:`klucb_indices` repeats, element by element,
the bisection of :func:`bam_rl.agents.klucb.klucb_index`; :func:`glr_first_split` is the loop of
SMPyBandits' ``GLR_IndexPolicy.detect_change`` (Besson et al., arXiv:1902.01575) and fires
exactly where the brute-force statistic :func:`bam_rl.agents.klucb.glr_statistic` of the same
prefix first crosses the threshold; :func:`cusum_first_alarm` is the two-sided CUSUM of
SMPyBandits' ``CUSUM_IndexPolicy.detect_change`` (Liu, Lee & Shroff, AAAI 2018). Compiled on
first use and cached on disk.
"""

from __future__ import annotations

import math

import numpy as np

from bam_rl.kernels._cache import njit_cached

__all__ = ["cusum_first_alarm", "glr_first_split", "kl_bernoulli", "klucb_indices"]

_EPS = 1e-15


@njit_cached
def kl_bernoulli(p: float, q: float) -> float:  # pragma: no cover - compiled
    """KL(Bernoulli(p) || Bernoulli(q)) with both clipped to [1e-15, 1 - 1e-15], >= 0."""
    p = min(max(p, _EPS), 1.0 - _EPS)
    q = min(max(q, _EPS), 1.0 - _EPS)
    return max(p * math.log(p / q) + (1.0 - p) * math.log((1.0 - p) / (1.0 - q)), 0.0)


@njit_cached
def _bisection_root(mean: float, bound: float) -> float:  # pragma: no cover - compiled
    """``sup {q in [mean, 1] : kl(mean, q) <= bound}`` by 50 halvings of [mean, 1]."""
    low, high = mean, 1.0
    for _ in range(50):
        mid = 0.5 * (low + high)
        if kl_bernoulli(mean, mid) <= bound:
            low = mid
        else:
            high = mid
    return low


@njit_cached
def klucb_root(mean: float, bound: float) -> float:  # pragma: no cover - compiled
    """``sup {q in [mean, 1] : kl(mean, q) <= bound}`` for a mean in [0, 1].

    Newton's method from above: ``f(q) = kl(mean, q) - bound`` is convex and increasing on
    (mean, 1), so from a point right of the root every Newton step stays right of it and the
    iterates fall to it, quadratically once close (a handful of steps, where 50 halvings cost
    fifty KL evaluations). The start is the smaller of two upper bounds on the root: Pinsker's
    ``mean + sqrt(bound / 2)`` and ``1 - exp(-(bound + H(mean)) / (1 - mean))`` (from
    ``kl(p, q) >= -H(p) - (1 - p) log(1 - q)``, ``H`` the entropy). Agrees with the bisection
    to ~1e-15; the edge cases (a mean of 0 or 1, a bound of 0, infinite or NaN, a root within
    1e-12 of 1 where the KL's clipping decides) take the bisection itself.
    """
    if not (0.0 < mean < 1.0 and 0.0 < bound < np.inf):
        return _bisection_root(mean, bound)
    entropy = -(mean * math.log(mean) + (1.0 - mean) * math.log(1.0 - mean))
    q = min(mean + math.sqrt(0.5 * bound), 1.0 - math.exp(-(bound + entropy) / (1.0 - mean)))
    if not q < 1.0 - 1e-12:
        return _bisection_root(mean, bound)
    for _ in range(100):
        excess = kl_bernoulli(mean, q) - bound
        if excess <= 0.0:
            return q
        step = excess * q * (1.0 - q) / (q - mean)  # f / f', f'(q) = (q - p) / (q (1 - q))
        if not step < q - mean:  # only the KL's rounding can say so (a root at the mean)
            return _bisection_root(mean, bound)
        if step <= 1e-16 * q:
            return q - step
        q -= step
    return q


@njit_cached
def klucb_indices(  # pragma: no cover - compiled
    sums: np.ndarray, pulls: np.ndarray, log_times: np.ndarray, out: np.ndarray
) -> tuple[int, int]:
    """Writes every arm's klUCB index into ``out``; returns (first best arm, number of ties).

    Arm ``k``'s index is ``sup {q : kl(sums_k / pulls_k, q) <= log_times_k / pulls_k}``
    (:func:`klucb_root`; ``inf`` for an arm with ``pulls_k < 1``, as SMPyBandits has it).
    """
    n_arms = sums.shape[0]
    for k in range(n_arms):
        if pulls[k] < 1.0:
            out[k] = np.inf
            continue
        mean = min(max(sums[k] / pulls[k], 0.0), 1.0)
        out[k] = klucb_root(mean, log_times[k] / pulls[k])
    best = 0
    ties = 1
    for k in range(1, n_arms):
        if out[k] > out[best]:
            best = k
            ties = 1
        elif out[k] == out[best]:
            ties += 1
    return best, ties


@njit_cached
def _isclose(a: float, b: float) -> bool:  # pragma: no cover - compiled
    return abs(a - b) <= 1e-8 + 1e-5 * abs(b)  # numpy.isclose's defaults, as the reference


@njit_cached
def glr_first_split(  # pragma: no cover - compiled
    data: np.ndarray, n: int, split_every: int, threshold: float
) -> int:
    """First split whose Bernoulli GLR reaches ``threshold`` over ``data[:n]``, else -1.

    Split ``s`` (0-based; tried when ``s % split_every == 0``) compares the means of
    ``data[:s+1]`` and ``data[s+1:n]`` with the mean of all: ``(s+1) kl(before, all) +
    (n-1-s) kl(after, all)``. Returns ``s + 1``, the number of observations before the change
    (SMPyBandits' localisation position), or -1 when no split reaches the threshold.
    """
    if n < 2:
        return -1
    t = n - 1
    total = 0.0
    for i in range(n):
        total += data[i]
    mean_all = total / n
    mean_before = 0.0
    mean_after = mean_all
    for s in range(t):
        y = data[s]
        mean_before = (s * mean_before + y) / (s + 1)
        mean_after = ((t + 1 - s) * mean_after - y) / (t - s)
        if s % split_every != 0:
            continue
        if _isclose(mean_before, mean_all) and _isclose(mean_after, mean_all):
            continue
        glr = (s + 1) * kl_bernoulli(mean_before, mean_all) + (t - s) * kl_bernoulli(
            mean_after, mean_all
        )
        if glr >= threshold:
            return s + 1
    return -1


@njit_cached
def cusum_first_alarm(  # pragma: no cover - compiled
    data: np.ndarray, n: int, warmup: int, epsilon: float, threshold: float
) -> int:
    """Index of the first observation where the two-sided CUSUM of ``data[:n]`` alarms, else -1.

    The reference mean is that of the first ``warmup`` (M) observations; no test before more
    than M. ``g+ = max(0, g+ + u0 - y - eps)``, ``g- = max(0, g- + y - u0 - eps)``, run over
    every observation (the first M included, as in SMPyBandits), alarm at ``>= threshold``.
    """
    if n <= warmup:
        return -1
    u0 = 0.0
    for i in range(warmup):
        u0 += data[i]
    u0 /= warmup
    g_plus = 0.0
    g_minus = 0.0
    for i in range(n):
        y = data[i]
        g_plus = max(0.0, g_plus + (u0 - y - epsilon))
        g_minus = max(0.0, g_minus + (y - u0 - epsilon))
        if g_plus >= threshold or g_minus >= threshold:
            return i
    return -1
