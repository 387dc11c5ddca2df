"""The BOCD run-length recursion, compiled (Numba), for the scalar conjugate families.

One :func:`step` is what :meth:`bam_rl.bocd.ChangepointDetector.update` does with a constant
hazard: the predictive of every live run length (one log-normaliser each), growth and change
probabilities, the cap's tail row and threshold pruning, with the same formulas in the same
order, so it agrees with the NumPy path to rounding (tests compare them to 1e-10). The
families' log-normalisers are written out here for their natural-parameter fields:

======  ==========================  =============================================================
kind    family                      ``A(η)`` from the fields (columns in the family's order)
======  ==========================  =============================================================
0       ``NormalKnownVariance``     ``h1² / (2 h2) − log(h2) / 2 + log(2π) / 2``
1       ``NormalGamma``             ``lgamma(α) − α log β + log(2π) / 2 − log(κ) / 2``
2       ``BetaBinomial``            ``lgamma(a) + lgamma(b) − lgamma(a + b)``
3       ``GammaPoisson``            ``lgamma(a) − a log b``
======  ==========================  =============================================================

Beta-Binomial data of at most 64 trials (Bernoulli rewards, the tracking stream's counts) skip
the three ``lgamma`` of every run length: by ``Γ(z + 1) = z Γ(z)`` the predictive is a product of
ratios in (0, 1], ``a / (a + b)`` for a Bernoulli success, and the new row's ``A`` is the old
one plus its log (exact identities; the NumPy path's ``lgamma`` differences agree to rounding,
which the tests bound over thousands of live run lengths). Twice as fast a step.

A NormalGamma belief whose ``β`` lost its precision (``β <= 1e-11 · beta_shifted``) gives
``NaN``: the caller then replays the step on the NumPy path, which raises the family's
``ValueError``. Nothing here runs at import: Numba compiles :func:`step` on its first call and
caches the machine code in a user cache directory (:mod:`bam_rl.kernels._cache`).
"""

from __future__ import annotations

import math

import numpy as np

from bam_rl.kernels._cache import njit_cached

__all__ = ["FAMILY_KINDS", "run", "step"]

#: Family class name -> kernel kind.
FAMILY_KINDS = {"NormalKnownVariance": 0, "NormalGamma": 1, "BetaBinomial": 2, "GammaPoisson": 3}

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_BETA_RTOL = 1e-11


@njit_cached
def _log_partition(kind: int, row: np.ndarray) -> float:  # pragma: no cover - compiled
    if kind == 0:
        h1, h2 = row[0], row[1]
        return 0.5 * h1 * h1 / h2 - 0.5 * math.log(h2) + _HALF_LOG_2PI
    if kind == 1:
        kappa_mean, kappa, beta_shifted, alpha = row[0], row[1], row[2], row[3]
        m = kappa_mean / kappa
        beta = beta_shifted - 0.5 * kappa_mean * m
        if not beta > _BETA_RTOL * abs(beta_shifted):
            return np.nan
        return math.lgamma(alpha) - alpha * math.log(beta) + _HALF_LOG_2PI - 0.5 * math.log(kappa)
    if kind == 2:
        a, b = row[0], row[1]
        return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    a, b = row[0], row[1]
    return math.lgamma(a) - a * math.log(b)


#: Beta-Binomial data of at most this many trials take the ratio path of :func:`_log_ratio`.
_SMALL_COUNT = 64


@njit_cached
def _is_small_count(value: float) -> bool:  # pragma: no cover - compiled
    return 0.0 <= value <= _SMALL_COUNT and value == math.floor(value)


@njit_cached
def _beta_binomial_log_ratio(a: float, b: float, k: float, m: float) -> float:  # pragma: no cover
    """``A(a + k, b + m) − A(a, b)`` for small integer counts ``k, m``: the identity
    ``Γ(z + 1) = z Γ(z)`` turns the six ``lgamma`` into one product of ratios in (0, 1] and one
    log; NaN when the product underflows (the caller then takes the ``lgamma`` path)."""
    total = a + b
    if k + m == 1.0:  # a Bernoulli datum: the loops below, unrolled
        ratio = (a if k == 1.0 else b) / total
    else:
        ratio = 1.0
        for j in range(int(k)):
            ratio *= (a + j) / (total + j)
        for j in range(int(m)):
            ratio *= (b + j) / (total + k + j)
    if not ratio > 1e-280:
        return np.nan
    return math.log(ratio)


@njit_cached
def _logsumexp(values: np.ndarray) -> float:  # pragma: no cover - compiled
    top = -np.inf
    for v in values:
        if v > top:
            top = v
    if not np.isfinite(top):
        return top
    total = 0.0
    for v in values:
        total += math.exp(v - top)
    return top + math.log(total)


@njit_cached
def step(  # pragma: no cover - compiled
    kind: int, state: tuple, s: np.ndarray, s_log_h: float, settings: tuple
) -> tuple:
    """One BOCD update with a constant hazard. ``state`` is the belief ``(fields, log_post,
    log_partition, belief_log_h, run_lengths)``; ``settings`` the constants ``(prior,
    prior_log_partition, prior_log_h, log_h, log_1mh, cap, log_threshold)``. Returns the new
    state and the evidence increment ``(fields, log_post, log_partition, belief_log_h,
    run_lengths, log_filtered, total)``; ``total`` is NaN when a NormalGamma belief lost its
    precision (replay on the NumPy path) and not finite when the datum has zero probability."""
    fields, log_post, log_partition, belief_log_h, run_lengths = state
    prior, prior_log_partition, prior_log_h, log_h, log_1mh, cap, log_threshold = settings
    n_old, width = fields.shape
    n = n_old + 1
    new_fields = np.empty((n, width))
    new_lp = np.empty(n)
    joint = np.empty(n_old)
    top = -np.inf
    # Bernoulli and small Binomial data: the log-partition's increment without lgamma
    counts = kind == 2 and _is_small_count(s[0]) and _is_small_count(s[1])
    for i in range(n_old):
        for j in range(width):
            new_fields[i + 1, j] = fields[i, j] + s[j]
        value = np.nan
        if counts:
            value = log_partition[i] + _beta_binomial_log_ratio(
                fields[i, 0], fields[i, 1], s[0], s[1]
            )
        if np.isnan(value):
            value = _log_partition(kind, new_fields[i + 1])
        if np.isnan(value):
            return fields, log_post, log_partition, belief_log_h, run_lengths, joint, np.nan
        new_lp[i + 1] = value
        joint[i] = log_post[i] + (value - log_partition[i] + s_log_h)
        if joint[i] > top:
            top = joint[i]
    if not np.isfinite(top):
        return fields, log_post, log_partition, belief_log_h, run_lengths, joint, top
    acc = 0.0
    for i in range(n_old):
        acc += math.exp(joint[i] - top)
    total = top + math.log(acc)
    if not np.isfinite(total):
        return fields, log_post, log_partition, belief_log_h, run_lengths, joint, total
    new_post = np.empty(n)
    new_post[0] = total + log_h - total
    new_runs = np.empty(n, dtype=np.int64)
    new_runs[0] = 0
    new_h = np.empty(n)
    new_h[0] = prior_log_h
    for i in range(n_old):
        new_post[i + 1] = joint[i] + log_1mh - total
        new_runs[i + 1] = run_lengths[i] + 1
        new_h[i + 1] = belief_log_h[i] + s_log_h
    new_fields[0] = prior
    new_lp[0] = prior_log_partition
    filtered = joint

    # the cap: the run lengths >= cap share one row (the most probable one's belief)
    tail, best = -1, -1
    if cap >= 0 and n > 1 and new_runs[n - 2] >= cap:
        tail = 0
        while new_runs[tail] < cap:
            tail += 1
        best = tail
        for i in range(tail, n):
            if new_post[i] > new_post[best]:
                best = i
        new_post[best] = _logsumexp(new_post[tail:])
        filtered[best - 1] = _logsumexp(filtered[tail - 1 :])
    if tail >= 0 and tail == n - 2:
        # the usual case, two tail rows: keep the best in row n - 2 and drop the last (views)
        if best == n - 1:
            new_post[n - 2] = new_post[n - 1]
            filtered[n - 3] = filtered[n - 2]
            new_runs[n - 2] = new_runs[n - 1]
            new_fields[n - 2] = new_fields[n - 1]
            new_h[n - 2] = new_h[n - 1]
            new_lp[n - 2] = new_lp[n - 1]
        n -= 1
        new_post, new_runs, new_fields = new_post[:n], new_runs[:n], new_fields[:n]
        new_h, new_lp, filtered = new_h[:n], new_lp[:n], filtered[: n - 1]
    elif tail >= 0:
        keep = np.ones(n, dtype=np.bool_)
        for i in range(tail, n):
            keep[i] = i == best
        index = np.flatnonzero(keep)
        new_post, new_runs, new_fields = new_post[index], new_runs[index], new_fields[index]
        new_h, new_lp, filtered = new_h[index], new_lp[index], filtered[index[1:] - 1]
        n = new_post.shape[0]
    # pruning: small masses go, never r = 0, the MAP, nor the filtered MAP; then renormalise
    below = False  # any run length to drop (a scan, no mask, in the usual case of none)
    if log_threshold > -np.inf:
        for i in range(n):
            if not new_post[i] >= log_threshold:
                below = True
                break
    if below:
        keep = new_post >= log_threshold
        keep[0] = True
        keep[int(np.argmax(new_post))] = True
        keep[1 + int(np.argmax(filtered))] = True
        index = np.flatnonzero(keep)
        new_post = new_post[index]
        new_post = new_post - _logsumexp(new_post)
        new_runs, new_fields = new_runs[index], new_fields[index]
        new_h, new_lp, filtered = new_h[index], new_lp[index], filtered[index[1:] - 1]
    return new_fields, new_post, new_lp, new_h, new_runs, filtered, total


@njit_cached
def run(  # pragma: no cover - compiled
    kind: int, state: tuple, stats: np.ndarray, stats_log_h: np.ndarray, settings: tuple
) -> tuple:
    """:func:`step` over a whole stream (``stats`` ``(T, width)``, ``state`` and ``settings``
    as there); returns the final state, the MAP run length and the evidence increment of every
    step, and how many steps ran (fewer than ``T`` when a step needs the NumPy path: its
    increment is not finite)."""
    fields, log_post, log_partition, belief_log_h, run_lengths = state
    steps = stats.shape[0]
    map_runs = np.empty(steps, dtype=np.int64)
    increments = np.empty(steps)
    filtered = np.empty(0)
    ran = steps
    for t in range(steps):
        out = step(
            kind, (fields, log_post, log_partition, belief_log_h, run_lengths), stats[t],
            stats_log_h[t], settings,
        )  # fmt: skip
        total = out[6]
        if not np.isfinite(total):
            ran = t
            break
        fields, log_post, log_partition, belief_log_h, run_lengths, filtered = (
            out[0], out[1], out[2], out[3], out[4], out[5],
        )  # fmt: skip
        map_runs[t] = run_lengths[int(np.argmax(log_post))]
        increments[t] = total
    state = (fields, log_post, log_partition, belief_log_h, run_lengths)
    return (*state, filtered, map_runs[:ran], increments[:ran], ran)
