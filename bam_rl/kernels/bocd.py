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

The belief travels as one matrix (:data:`POST` …: a row a quantity, a column a run length),
which the step returns whole and the detector keeps between steps, its arrays being views of
the rows: two arrays cross into Python a step instead of six, and the matrix carries the
costly part of each run length's ``A`` (``lgamma(α)``, ``log κ``; ``log h2``), which the next
step takes instead of recomputing whenever the argument is the same (on single observations,
every run length but the new one): equal arguments, equal values, the same result bit for bit.
The small helpers are inlined into the step (:func:`~bam_rl.kernels._cache.njit_inline`).

A datum no data could give is refused inside the step, in the same pass (issue 50): before
anything else :func:`possible` checks that the base prior plus the datum is a proper belief,
the family's ``_check_belief`` written out for one row (the detector's per-datum check before,
a second NumPy pass that cost as much as the step); a refused datum gives ``NaN``. So does a
NormalGamma belief whose ``β`` lost its precision (``β <= 1e-11 · beta_shifted``). The caller
then replays the step on the NumPy path, which raises the family's ``ValueError`` (for a
refused datum: the detector's "impossible datum"). Nothing here runs at import: Numba
compiles :func:`step` on its first call and caches the machine code in a user cache directory
(:mod:`bam_rl.kernels._cache`).
"""

from __future__ import annotations

import math

import numpy as np

from bam_rl.kernels._cache import njit_cached, njit_inline

__all__ = ["FAMILY_KINDS", "possible", "run", "step", "step_datum"]

#: Family class name -> kernel kind.
FAMILY_KINDS = {"NormalKnownVariance": 0, "NormalGamma": 1, "BetaBinomial": 2, "GammaPoisson": 3}

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_BETA_RTOL = 1e-11


@njit_inline
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


@njit_inline
def possible(kind: int, prior: np.ndarray, s: np.ndarray) -> bool:  # pragma: no cover - compiled
    """Whether the base prior plus the datum ``s`` is a proper belief of the family: exactly
    what its ``_check_belief`` accepts of the one row ``prior + s`` (the same sums, the same
    comparisons, so NaN fails too). Kinds 0: ``precision > 0``; 1: ``kappa > 0``, ``alpha >
    0`` and ``β > 1e-11 · |beta_shifted|`` (improper or imprecise, ``_precise_beta``); 2 and
    3: both fields ``> 0``."""
    if kind == 0:
        return prior[1] + s[1] > 0.0
    if kind == 1:
        kappa_mean, kappa = prior[0] + s[0], prior[1] + s[1]
        beta_shifted, alpha = prior[2] + s[2], prior[3] + s[3]
        if not (kappa > 0.0 and alpha > 0.0):
            return False
        m = kappa_mean / kappa
        beta = beta_shifted - 0.5 * kappa_mean * m
        return beta > _BETA_RTOL * abs(beta_shifted)
    return prior[0] + s[0] > 0.0 and prior[1] + s[1] > 0.0


#: Beta-Binomial data of at most this many trials take the ratio path of :func:`_log_ratio`.
_SMALL_COUNT = 64


@njit_inline
def _is_small_count(value: float) -> bool:  # pragma: no cover - compiled
    return 0.0 <= value <= _SMALL_COUNT and value == math.floor(value)


@njit_inline
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


#: Rows of the state matrix the compiled step takes and returns, one column per live run length
#: (ascending; the first ``len(run_lengths)`` columns count, the matrix may hold more, unused):
#: the log run-length posterior, the log-partition ``A(η_r)``, the beliefs' ``log h``, the
#: filtered log weight (column ``r`` holds the weight of the segment holding ``D_t`` that run
#: length ``r`` continues, ``log P(r_{t−1} = r − 1) π``; column 0 none: unused), then the
#: family's fields (in its order), then the kind's cached values (:func:`_cache_rows`). One
#: row a quantity: the loops run along contiguous memory, as over the separate arrays before.
POST, PARTITION, LOG_H, FILTERED, FIELDS = 0, 1, 2, 3, 4


@njit_cached
def _cache_rows(kind: int) -> int:  # pragma: no cover - compiled
    """How many values of each run length's log-partition the state keeps, to reuse them:
    kind 0 ``log h2``; kind 1 ``lgamma(α)`` and ``log κ``; none for the others."""
    if kind == 0:
        return 1
    if kind == 1:
        return 2
    return 0


@njit_inline
def _log_partition_cached(  # pragma: no cover - compiled
    kind: int, new: np.ndarray, first: int, state: np.ndarray, i: int, cached: int
) -> float:
    """:func:`_log_partition` of kinds 0 and 1 for the new column ``i + 1`` of ``new`` (fields
    from row :data:`FIELDS`), the same floating-point operations in the same order, with its
    costly values — ``log h2``; ``lgamma(α)`` and ``log κ`` — stored in the column's cache rows
    (from ``first``) and taken from the old column ``i + 1`` of ``state`` when it has the same
    argument (``i + 1 < cached``: the columns of ``state`` that carry their cached values). On
    a stream of single observations
    run length ``r + 1`` continues ``r`` with the argument the old ``r + 1`` had, so each step
    computes these for the new run length alone; equal arguments give equal values, so the
    result is bit for bit the formula's."""
    c = i + 1
    reuse = c < cached
    if kind == 0:
        h1, h2 = new[FIELDS, c], new[FIELDS + 1, c]
        if reuse and state[FIELDS + 1, c] == h2:
            log_h2 = state[first, c]
        else:
            log_h2 = math.log(h2)
        new[first, c] = log_h2
        return 0.5 * h1 * h1 / h2 - 0.5 * log_h2 + _HALF_LOG_2PI
    kappa_mean, kappa = new[FIELDS, c], new[FIELDS + 1, c]
    beta_shifted, alpha = new[FIELDS + 2, c], new[FIELDS + 3, c]
    m = kappa_mean / kappa
    beta = beta_shifted - 0.5 * kappa_mean * m
    if not beta > _BETA_RTOL * abs(beta_shifted):
        return np.nan
    if reuse and state[FIELDS + 3, c] == alpha:
        lgamma_alpha = state[first, c]
    else:
        lgamma_alpha = math.lgamma(alpha)
    if reuse and state[FIELDS + 1, c] == kappa:
        log_kappa = state[first + 1, c]
    else:
        log_kappa = math.log(kappa)
    new[first, c], new[first + 1, c] = lgamma_alpha, log_kappa
    return lgamma_alpha - alpha * math.log(beta) + _HALF_LOG_2PI - 0.5 * log_kappa


@njit_cached
def _prior_column(  # pragma: no cover - compiled
    kind: int, new: np.ndarray, prior: np.ndarray, prior_log_partition: float, first: int
) -> None:
    """Column 0 of a new state (run length 0): the base prior's fields, ``A`` and cached
    values; no filtered weight."""
    for j in range(prior.shape[0]):
        new[FIELDS + j, 0] = prior[j]
    new[PARTITION, 0] = prior_log_partition
    new[FILTERED, 0] = -np.inf
    if kind == 0:
        new[first, 0] = math.log(prior[1])
    elif kind == 1:
        new[first, 0], new[first + 1, 0] = math.lgamma(prior[3]), math.log(prior[1])


#: The columns of a new state matrix are a multiple of this (the ones past the live run lengths
#: unused): a growing belief then asks for the same size of memory for many steps, which the
#: allocator hands back from its free list, instead of a size one column larger every step,
#: which past its mapping threshold (128 KiB) it maps afresh, faulting in every page.
_COLUMN_BLOCK = 64


@njit_inline
def _capacity(n: int) -> int:  # pragma: no cover - compiled
    return (n + _COLUMN_BLOCK - 1) // _COLUMN_BLOCK * _COLUMN_BLOCK


@njit_cached
def step(  # pragma: no cover - compiled
    kind: int,
    state: np.ndarray,
    run_lengths: np.ndarray,
    s: np.ndarray,
    s_log_h: float,
    settings: tuple,
) -> tuple:
    """One BOCD update with a constant hazard. ``state`` is the belief as a matrix, one column
    per live run length of ``run_lengths`` (rows :data:`POST` … :data:`FIELDS` and the fields;
    without the cache rows every column's values are computed); ``settings`` the constants
    ``(prior, prior_log_partition, prior_log_h, log_h, log_1mh, cap, log_threshold)``. Returns
    ``(state, run_lengths, total)``: the new state (every row) and the evidence increment
    ``total``, NaN when the datum is impossible (:func:`possible`) or a NormalGamma belief lost
    its precision (replay on the NumPy path, which raises) and not finite when the datum has
    zero probability; the old state when ``total`` is not finite."""
    prior, prior_log_partition, prior_log_h, log_h, log_1mh, cap, log_threshold = settings
    if not possible(kind, prior, s):
        return state, run_lengths, np.nan
    n_old = run_lengths.shape[0]
    width = prior.shape[0]
    first = FIELDS + width  # the first cache row
    rows = first + _cache_rows(kind)
    cached = n_old if state.shape[0] == rows else 0  # columns whose cached values count
    n = n_old + 1
    new = np.empty((rows, _capacity(n)))
    new_runs = np.empty(n, dtype=np.int64)
    top = -np.inf
    # Bernoulli and small Binomial data: the log-partition's increment without lgamma
    counts = kind == 2 and _is_small_count(s[0]) and _is_small_count(s[1])
    for i in range(n_old):
        c = i + 1
        for j in range(width):
            new[FIELDS + j, c] = state[FIELDS + j, i] + s[j]
        value = np.nan
        if counts:
            value = state[PARTITION, i] + _beta_binomial_log_ratio(
                state[FIELDS, i], state[FIELDS + 1, i], s[0], s[1]
            )
        if np.isnan(value):
            if kind <= 1:
                value = _log_partition_cached(kind, new, first, state, i, cached)
            else:
                value = _log_partition(kind, new[FIELDS:first, c])
        if np.isnan(value):
            return state, run_lengths, np.nan
        new[PARTITION, c] = value
        joint = state[POST, i] + (value - state[PARTITION, i] + s_log_h)
        new[FILTERED, c] = joint
        if joint > top:
            top = joint
    if not np.isfinite(top):
        return state, run_lengths, top
    acc = 0.0
    for c in range(1, n):
        acc += math.exp(new[FILTERED, c] - top)
    total = top + math.log(acc)
    if not np.isfinite(total):
        return state, run_lengths, total
    new[POST, 0] = total + log_h - total
    new_runs[0] = 0
    new[LOG_H, 0] = prior_log_h
    for c in range(1, n):
        new[POST, c] = new[FILTERED, c] + log_1mh - total
        new_runs[c] = run_lengths[c - 1] + 1
        new[LOG_H, c] = state[LOG_H, c - 1] + s_log_h
    _prior_column(kind, new, prior, prior_log_partition, first)

    # the cap: the run lengths >= cap share one column (the most probable one's belief)
    tail, best = -1, -1
    if cap >= 0 and n > 1 and new_runs[n - 2] >= cap:
        tail = 0
        while new_runs[tail] < cap:
            tail += 1
        best = tail
        for c in range(tail, n):
            if new[POST, c] > new[POST, best]:
                best = c
        merged_post = _logsumexp(new[POST, tail:n])
        merged_filtered = _logsumexp(new[FILTERED, tail:n])
        new[POST, best] = merged_post
        new[FILTERED, best] = merged_filtered
    if tail >= 0 and tail == n - 2:
        # the usual case, two tail columns: keep the best in column n - 2 and drop the last
        # (the matrix keeps it, unused: no copy)
        if best == n - 1:
            new[:, n - 2] = new[:, n - 1]
            new_runs[n - 2] = new_runs[n - 1]
        n -= 1
        new_runs = new_runs[:n]
    elif tail >= 0:
        keep = np.ones(n, dtype=np.bool_)
        for c in range(tail, n):
            keep[c] = c == best
        index = np.flatnonzero(keep)
        new, new_runs = _columns(new, index), new_runs[index]
        n = new_runs.shape[0]
    # pruning: small masses go, never r = 0, the MAP, nor the filtered MAP; then renormalise
    below = False  # any run length to drop (a scan, no mask, in the usual case of none)
    if log_threshold > -np.inf:
        for c in range(n):
            if not new[POST, c] >= log_threshold:
                below = True
                break
    if below:
        keep = new[POST, :n] >= log_threshold
        keep[0] = True
        keep[int(np.argmax(new[POST, :n]))] = True
        keep[1 + int(np.argmax(new[FILTERED, 1:n]))] = True
        index = np.flatnonzero(keep)
        new, new_runs = _columns(new, index), new_runs[index]
        norm = _logsumexp(new[POST])
        for c in range(new.shape[1]):
            new[POST, c] = new[POST, c] - norm
    return new, new_runs, total


@njit_cached
def step_datum(  # pragma: no cover - compiled
    kind: int,
    state: np.ndarray,
    run_lengths: np.ndarray,
    datum: tuple,
    s_log_h: float,
    settings: tuple,
) -> tuple:
    """:func:`step` with the datum's fields as a tuple of floats, which a caller holding them
    as numbers builds for less than an array."""
    s = np.empty(len(datum))
    for j in range(len(datum)):
        s[j] = datum[j]
    return step(kind, state, run_lengths, s, s_log_h, settings)


@njit_cached
def _columns(matrix: np.ndarray, index: np.ndarray) -> np.ndarray:  # pragma: no cover
    """``matrix[:, index]`` (the columns ``index``, in order) as a new C-contiguous matrix."""
    out = np.empty((matrix.shape[0], index.shape[0]))
    for k in range(matrix.shape[0]):
        for c in range(index.shape[0]):
            out[k, c] = matrix[k, index[c]]
    return out


@njit_cached
def run(  # pragma: no cover - compiled
    kind: int,
    state: np.ndarray,
    run_lengths: np.ndarray,
    stats: np.ndarray,
    stats_log_h: np.ndarray,
    settings: tuple,
) -> tuple:
    """:func:`step` over a whole stream (``stats`` ``(T, width)``, ``state`` and ``settings``
    as there); returns the final ``(state, run_lengths)``, the MAP run length and the evidence
    increment of every step, and how many steps ran (fewer than ``T`` when a step needs the
    NumPy path: its increment is not finite)."""
    steps = stats.shape[0]
    map_runs = np.empty(steps, dtype=np.int64)
    increments = np.empty(steps)
    ran = steps
    for t in range(steps):
        out = step(kind, state, run_lengths, stats[t], stats_log_h[t], settings)
        total = out[2]
        if not np.isfinite(total):
            ran = t
            break
        state, run_lengths = out[0], out[1]
        map_runs[t] = run_lengths[int(np.argmax(state[POST, : run_lengths.shape[0]]))]
        increments[t] = total
    return state, run_lengths, map_runs[:ran], increments[:ran], ran
