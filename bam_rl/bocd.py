"""Bayesian online changepoint detection (Adams & MacKay, 2007) for any conjugate family.

The run length ``r_t`` is the number of observations in the current segment *after* the
datum ``D_t`` has been absorbed, with the change (if any) happening after ``D_t``:

* start: ``P(r_0 = 0) = 1``, the run-length-0 belief is the base prior ``η0``;
* for a datum with statistics ``s_t`` and every live run length ``r`` the predictive
  ``π_r = p(D_t | η_r) = exp(A(η_r + s_t) − A(η_r) + log h(D_t))`` (one batched evaluation
  over a stack of natural parameters, one row per run length);
* growth ``P(r_t = r + 1, D_t) = P(r_{t−1} = r) · π_r · (1 − H(r))``;
* change ``P(r_t = 0, D_t) = Σ_r P(r_{t−1} = r) · π_r · H(r)``;
* the evidence increment ``p(D_t | D_<t)`` is the sum of that joint, which is then
  normalised; the beliefs become ``[η0] + [η_r + s_t]``.

Everything is carried in log space. Pruning drops run lengths whose posterior mass falls
below a threshold (never the run length 0 nor the most probable ones) and, optionally,
every run length beyond a maximum, so a step costs O(live run lengths).

One module over the house's ~600 lines on purpose: the detector's NumPy recursion is the
literal reference of the compiled one (:mod:`bam_rl.kernels.bocd`) and sits beside the code
that chooses between them, the cap's tail row and the restore checks that both paths share.
"""

from __future__ import annotations

import copy
import functools
import math
import numbers
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from bam_rl import hyperparams
from bam_rl.checks import all_finite, check_int, check_real
from bam_rl.families.base import ConjugateFamily, NaturalParams

HazardLike = float | Callable[[np.ndarray], Any]

#: Default bound on the live run lengths. On stationary data no run length falls below the
#: pruning threshold, so without a bound a step costs O(t) (Bernoulli data: ~0.2 ms per step
#: by t = 10⁴ and growing); with it a step costs at most ~0.2 ms for Bernoulli data, a few
#: tenths of a millisecond for the other scalar families.
#: Runs of up to 10⁴ data (the paper's experiments) never reach it, so it changes none of
#: their results.
DEFAULT_MAX_RUN_LENGTH = 10_000

#: Per detector: the run-length posterior array its sampling distribution was built from, and
#: that normalised cumulative sum. Updates replace ``_log_post`` (never change it in place), so
#: the identity check finds a stale entry; Thompson sampling over K arms then builds one
#: cumulative sum per step (the updated arm's), not K. Outside the detector: never saved.
_CUMULATIVE: weakref.WeakKeyDictionary[Any, tuple[np.ndarray, np.ndarray]] = (
    weakref.WeakKeyDictionary()
)


class _Compiled:
    """What a detector's compiled steps keep between steps (:data:`_COMPILED`): the plan built
    at its first step from its options, ``model`` and ``cap`` (``max_run_length``) the objects
    it was built from, ``step`` the kernel (``None``: the family takes the NumPy path), its
    ``kind`` and constant ``settings``; and the state ``matrix`` the last step returned, whose
    rows the detector's arrays are views of (``fields`` its fields dict, ``post`` its
    posterior), so the next step passes the matrix, with the log-partition values it caches,
    instead of stacking the arrays again (stale when they are not the detector's any more,
    found by identity like :data:`_CUMULATIVE`)."""

    __slots__ = ("cap", "fields", "kind", "matrix", "model", "post", "rows", "settings", "step")

    def __init__(
        self, model: Any, cap: Any, step: Any, kind: Any, settings: Any, names: tuple[str, ...]
    ) -> None:
        self.model, self.cap, self.step, self.kind, self.settings = model, cap, step, kind, settings
        #: each field's name and row in the state matrix
        self.rows = tuple((name, 4 + j) for j, name in enumerate(names))
        self.fields: dict[str, np.ndarray] | None = None
        self.post: np.ndarray | None = None
        self.matrix: np.ndarray | None = None


#: Per detector: its :class:`_Compiled` (one weak-dictionary look-up a step); rebuilt when its
#: model or ``max_run_length`` is no longer the object the plan was built from. Outside the
#: detector: never saved.
_COMPILED: weakref.WeakKeyDictionary[Any, _Compiled] = weakref.WeakKeyDictionary()

_HAZARD_MESSAGE = (
    "hazard must be a constant in the open interval (0, 1) or a callable "
    "mapping run lengths to probabilities in (0, 1)"
)


def _logsumexp(values: np.ndarray) -> float:
    """``log Σ exp(values)`` of a 1-d array (fast path for the small arrays of a step)."""
    peak = values.max()
    if not math.isfinite(peak):
        return float(peak)
    return float(peak + math.log(np.exp(values - peak).sum()))


@functools.cache
def _kernel_kind_of(family_type: type, scalar: bool) -> int | None:
    if not scalar or not family_type.__module__.startswith("bam_rl.families"):
        return None
    try:
        from bam_rl.kernels.bocd import FAMILY_KINDS
    except ImportError:  # without Numba every family takes the NumPy path
        return None
    return FAMILY_KINDS.get(family_type.__name__)


def _kernel_kind(model: ConjugateFamily) -> int | None:
    """The compiled recursion's kind of ``model``'s family (``None``: NumPy only)."""
    scalar = all(tuple(event) == () for event in model.field_shapes.values())
    return _kernel_kind_of(type(model), scalar)


def _mixture_moments(weights: np.ndarray, means: Any, variances: Any) -> tuple[Any, Any]:
    """Mean and element-wise variance of a mixture, per component of a tuple-valued θ."""
    if isinstance(means, (tuple, list)):
        parts = [_mixture_moments(weights, m, v) for m, v in zip(means, variances, strict=True)]
        return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
    means = np.asarray(means, dtype=np.float64)
    variances = np.asarray(variances, dtype=np.float64)
    w = weights.reshape(weights.shape + (1,) * (means.ndim - 1))
    with np.errstate(invalid="ignore", over="ignore"):  # a weight that underflowed to 0 × inf
        mean = np.where(w > 0, w * means, 0.0).sum(axis=0)
        second = np.where(w > 0, w * (variances + means * means), 0.0).sum(axis=0)
        variance = np.maximum(second - mean * mean, 0.0)
        if not np.all(np.isfinite(variance)):
            # huge means: E[θ²] − E[θ]² overflows to inf − inf; the centred form does not
            spread = np.where(w > 0, w * (variances + (means - mean) ** 2), 0.0).sum(axis=0)
            variance = np.where(np.isfinite(variance), variance, spread)
    return mean[()], variance[()]


class ChangepointDetector:
    """Bayesian online changepoint detection with a conjugate-exponential-family model.

    Adams & MacKay (2007) run-length filtering, in log space, with one natural-parameter row
    per live run length so that the predictive of every run length is one batched
    evaluation of the family's log-normaliser.

    Conventions:
        ``r_t`` counts the observations of the current segment after ``D_t``; ``r_t = 0``
        means a change happened right after ``D_t`` (the next datum starts a segment from the
        base prior). The hazard ``H(r) = P(r_t = 0 | r_{t−1} = r)`` is read at the run length
        *before* ``D_t``.

        With a constant hazard the posterior ``P(r_t = 0 | D_1..t)`` is exactly the hazard,
        whatever the data: a change right after the latest datum cannot be seen in the data
        yet. Detection is therefore read at a lag: ``changepoint_probability(lag)`` is
        ``P(r_t = lag)``, the probability that the current segment began exactly ``lag``
        observations ago (its first datum being ``D_{t−lag+1}``), and ``map_run_length``
        drops to a small value shortly after a change.

    The cap:
        With ``max_run_length = R`` the run lengths ``r >= R`` share one row, the *tail*: it
        carries their whole posterior mass (and filtered mass), and the belief and run length
        of the most probable of them. So the detector keeps at most ``R + 1`` rows, and on a
        stationary stream longer than ``R`` the tail is the whole stream, as without a cap
        (its run length keeps counting past ``R``): the posterior of θ agrees with the
        uncapped detector's (``bam-rl drill bocd-cap``). The tail's belief
        stands for every segment it absorbed; after a change, a new segment reaches the tail
        ``R`` steps later and takes it over once it is the most probable.

    Pruning:
        After each step the run lengths whose posterior probability is below
        ``prune_threshold`` are dropped and the remaining posterior renormalised. Never dropped:
        ``r = 0``, the most probable run length (within the maximum) and the most probable
        segment holding ``D_t`` (the :attr:`map_belief`), so the filtered mixture is never
        empty. ``log_evidence`` accumulates the exact evidence increment
        of each step as computed from the (pruned) posterior of the previous step. Within a
        long stationary segment every shorter run length keeps a mass of about the hazard
        times an Occam factor, so at tiny thresholds the number of live run lengths grows
        with the segment length — on stationary data with ``t`` — until ``max_run_length``
        (10⁴ by default) bounds it; larger thresholds prune earlier.

    Args:
        model: The conjugate family; its ``prior`` is the belief at the start of a segment.
        hazard: A constant in (0, 1), or a callable ``hazard(run_lengths) -> probabilities``
            in (0, 1) evaluated element-wise on an integer array of run lengths ``r_{t−1}``.
        prune_threshold: Posterior mass in [0, 1) below which a run length is dropped
            (0 disables threshold pruning).
        max_run_length: Run lengths longer than this integer >= 1 are dropped; ``None``
            disables the bound. Default :data:`DEFAULT_MAX_RUN_LENGTH` (10⁴): on stationary
            data the threshold prunes nothing, so a step costs O(min(t, max_run_length)) —
            Bernoulli data ~30 µs per step at 10³ live run lengths, ~0.22 ms at 10⁴ (a
            10⁵-step run: about 20 s; measured 2026-11-25); unbounded it grows as O(t).
            Streams of at most 10⁴ data never reach the default bound.

    Raises:
        ValueError: For a model that is not a :class:`ConjugateFamily`, a hazard outside
            (0, 1), a threshold outside [0, 1) or a maximum run length below 1.

    Examples:
        >>> from bam_rl.families import BetaBinomial
        >>> model = BetaBinomial(1.0, 1.0)
        >>> bocd = ChangepointDetector(model, hazard=0.5)
        >>> for _ in range(2):
        ...     _ = bocd.update(model.stats(successes=1, trials=1))
        >>> bocd.run_length_posterior.round(4)  # [1/2, 3/14, 2/7]
        array([0.5   , 0.2143, 0.2857])
        >>> round(float(np.exp(bocd.log_evidence)), 6)  # 7/24
        0.291667
    """

    def __init__(
        self,
        model: ConjugateFamily,
        hazard: HazardLike = hyperparams.BOCD_HAZARD,
        *,
        prune_threshold: float = 1e-10,
        max_run_length: int | None = DEFAULT_MAX_RUN_LENGTH,
    ):
        if not isinstance(model, ConjugateFamily):
            raise ValueError(f"model must be a ConjugateFamily, got {type(model).__name__}")
        self.model = model
        if callable(hazard):
            self._hazard_fn: Callable[[np.ndarray], Any] | None = hazard
            self._log_h = self._log_1mh = 0.0
        else:
            try:  # one number, not a bool, a string or an array
                value = check_real(
                    "hazard", hazard, lower=0.0, upper=1.0, open_lower=True, open_upper=True
                )
            except ValueError as error:
                raise ValueError(f"{_HAZARD_MESSAGE}, got {hazard!r}") from error
            self._hazard_fn = None
            self._log_h = math.log(value)
            self._log_1mh = math.log1p(-value)
            hazard = value
        self.hazard = hazard
        threshold = check_real(
            "prune_threshold", prune_threshold, lower=0.0, upper=1.0, open_upper=True
        )
        self.prune_threshold = threshold
        self._log_threshold = math.log(threshold) if threshold > 0 else -math.inf
        if max_run_length is not None:
            if (
                isinstance(max_run_length, (bool, np.bool_))
                or not isinstance(max_run_length, numbers.Integral)
                or max_run_length < 1
            ):
                raise ValueError(
                    f"max_run_length must be None or an integer >= 1, got {max_run_length!r}"
                )
            max_run_length = int(max_run_length)
        self.max_run_length = max_run_length

        prior = model.prior
        self._names = tuple(model.field_shapes)
        self._event_shapes = tuple(
            (name, tuple(event)) for name, event in model.field_shapes.items()
        )
        self._prior_fields = {
            name: np.broadcast_to(prior.fields[name], tuple(event)).astype(np.float64)
            for name, event in model.field_shapes.items()
        }
        self._prior_log_h = float(prior.log_h)
        self._prior_log_partition = float(model.log_partition_fields(self._prior_fields))
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> ChangepointDetector:
        """Forgets all data: back to ``P(r_0 = 0) = 1`` with the base prior. Returns self."""
        self._t = 0
        self._run_lengths = np.zeros(1, dtype=np.int64)
        self._log_post = np.zeros(1)
        self._fields = {
            name: value[np.newaxis].copy() for name, value in self._prior_fields.items()
        }
        self._belief_log_h = np.full(1, self._prior_log_h)
        self._log_partition = np.full(1, self._prior_log_partition)
        # log P(r_{t-1} = r) π_r for the rows 1: (the segments containing D_t); None at t = 0
        self._log_filtered: np.ndarray | None = None
        self._log_evidence = 0.0
        self._last_log_predictive = math.nan
        return self

    def _check_restored(self) -> None:
        """A restored detector is checked against one built from its options (which the
        constructor checks): the same derived constants, and a run-length posterior of
        consistent, finite arrays (one row per run length, ascending distinct run lengths
        at most ``t``, one row past the cap, log probabilities that sum to 1). ``ValueError``
        otherwise."""
        if self._hazard_fn is not None:
            raise ValueError("a detector with a hazard function is not saved state")
        fresh = ChangepointDetector(
            self.model,
            self.hazard,
            prune_threshold=self.prune_threshold,
            max_run_length=self.max_run_length,
        )
        dynamic = {
            "_t", "_run_lengths", "_log_post", "_fields", "_belief_log_h", "_log_partition",
            "_log_filtered", "_log_evidence", "_last_log_predictive",
        }  # fmt: skip
        if set(vars(self)) != set(vars(fresh)):
            raise ValueError("restored detector: its attributes are not a detector's")
        for name, expected in vars(fresh).items():
            if name in dynamic or name == "model":
                continue
            value = getattr(self, name)
            same = (
                all(
                    type(value[k]) is type(expected[k]) and np.array_equal(value[k], expected[k])
                    for k in expected
                )
                if isinstance(expected, dict)
                and isinstance(value, dict)
                and set(value) == set(expected)
                else type(value) is type(expected) and bool(np.all(value == expected))
            )
            if not same:
                raise ValueError(f"restored detector: {name} is not the one its options give")
        t = check_int("_t", self._t, minimum=0)
        runs = self._run_lengths
        if not isinstance(runs, np.ndarray) or runs.dtype != np.int64 or runs.ndim != 1:
            raise ValueError("restored detector: run lengths must be a 1-D int64 array")
        n = runs.shape[0]
        live = t if self.max_run_length is None else min(t, self.max_run_length)
        if not 1 <= n <= live + 1 or np.any(runs < 0) or np.any(runs > t):
            raise ValueError(f"restored detector: {n} run lengths do not fit t = {t}")
        if self.max_run_length is not None and np.count_nonzero(runs >= self.max_run_length) > 1:
            raise ValueError("restored detector: one row holds the run lengths past the cap")
        if n > 1 and np.any(np.diff(runs) <= 0):
            raise ValueError("restored detector: run lengths must be ascending and distinct")
        rows = {"_log_post": self._log_post, "_belief_log_h": self._belief_log_h}
        rows["_log_partition"] = self._log_partition
        if not isinstance(self._fields, dict) or set(self._fields) != set(self._names):
            raise ValueError(f"restored detector: fields must be {list(self._names)}")
        shapes = dict(self._event_shapes)
        for name, array in self._fields.items():
            if not isinstance(array, np.ndarray) or array.shape != (n, *shapes[name]):
                raise ValueError(f"restored detector: field {name} must have shape (n, ...)")
            rows[name] = array
        for name, array in rows.items():
            if not isinstance(array, np.ndarray) or array.shape[:1] != (n,):
                raise ValueError(f"restored detector: {name} must have {n} rows")
            if array.dtype != np.float64 or not np.all(np.isfinite(array)):
                raise ValueError(f"restored detector: {name} must be finite float64")
        self.model._check_belief(self._fields)  # every run length's belief a distribution
        if abs(float(np.logaddexp.reduce(self._log_post))) > 1e-6:
            raise ValueError("restored detector: the run-length posterior must sum to 1")
        filtered = self._log_filtered
        if filtered is not None and (
            not isinstance(filtered, np.ndarray)
            or filtered.ndim != 1
            or filtered.dtype != np.float64
            or np.any(np.isnan(filtered))
        ):
            raise ValueError("restored detector: filtered weights must be a float64 vector")
        self._t = t
        self._log_evidence = check_real("_log_evidence", self._log_evidence)

    def run(self, stats: NaturalParams) -> tuple[np.ndarray, np.ndarray]:
        """Absorbs a whole stream: ``stats`` with batch shape ``(T,)`` (e.g.
        ``model.stats(y[:, None], axis=...)`` or stacked single-datum statistics), one
        :meth:`update` per datum, in one compiled loop for the scalar families with a
        constant hazard.

        Returns:
            The MAP run length after every datum and every datum's log evidence increment
            ``log p(D_t | D_<t)``, both of shape ``(T,)``.

        Raises:
            ValueError: As :meth:`update`; the data before the refused one stay absorbed.
        """
        self.model.check_params(stats, "stats")
        if len(stats.batch_shape) != 1:
            raise ValueError(f"stats must have batch shape (T,), got {stats.batch_shape}")
        steps = stats.batch_shape[0]
        map_runs = np.empty(steps, dtype=np.int64)
        increments = np.empty(steps)
        start = 0
        plan = self._current_plan() if self._hazard_fn is None else None
        # an impossible datum stops the compiled loop (its step refuses it, :func:`possible`);
        # the per-step path below then refuses it, the data before it absorbed
        if plan is not None and plan.step is not None and steps:
            from bam_rl.kernels.bocd import run

            names = self._names
            try:
                out = run(
                    plan.kind,
                    self._state_matrix(plan),
                    self._run_lengths,
                    np.column_stack(
                        [np.asarray(stats.fields[name], dtype=np.float64) for name in names]
                    ),
                    np.asarray(stats.log_h, dtype=np.float64),
                    plan.settings,
                )
            except ZeroDivisionError:  # a zero precision on the way: the NumPy path's error
                out = None
            start = 0 if out is None else int(out[4])
            if out is not None and start:
                self._adopt(plan, out[0], out[1])
                self._t += start
                for increment in out[3]:  # in order, as update() adds them
                    self._log_evidence += float(increment)
                self._last_log_predictive = float(out[3][-1])
                map_runs[:start], increments[:start] = out[2], out[3]
        for t in range(start, steps):  # the rest (or everything) on the per-step path
            self.update(stats[t])
            map_runs[t], increments[t] = self.map_run_length, self._last_log_predictive
        return map_runs, increments

    def _kernel_settings(self) -> tuple:
        """The compiled recursion's constants: ``(prior, prior_log_partition, prior_log_h,
        log_h, log_1mh, cap, log_threshold)`` (``cap`` -1: no cap)."""
        return (
            np.array([float(self._prior_fields[name]) for name in self._names]),
            self._prior_log_partition,
            self._prior_log_h,
            float(self._log_h),
            float(self._log_1mh),
            -1 if self.max_run_length is None else self.max_run_length,
            self._log_threshold,
        )

    def _current_plan(self) -> _Compiled:
        """The detector's :class:`_Compiled` from :data:`_COMPILED`, (re)built from its options
        when it has none or its model or ``max_run_length`` changed."""
        plan = _COMPILED.get(self)
        if plan is None or plan.model is not self.model or plan.cap is not self.max_run_length:
            kind = _kernel_kind(self.model)
            plan = _Compiled(self.model, self.max_run_length, None, None, None, ())
            if kind is not None:
                from bam_rl.kernels.bocd import step_datum as step

                settings = self._kernel_settings()
                plan = _Compiled(self.model, self.max_run_length, step, kind, settings, self._names)
            _COMPILED[self] = plan
        return plan

    def _state_matrix(self, plan: _Compiled) -> np.ndarray:
        """The belief as the compiled recursion takes it, one column per live run length (rows
        ``bam_rl.kernels.bocd.POST`` …): the matrix the last compiled step returned while the
        detector's arrays are still its rows (with the cached log-partition values), else
        stacked from the arrays (the filtered row, which the step does not read, holds a copy
        of the posterior)."""
        if plan.fields is self._fields and plan.post is self._log_post and plan.matrix is not None:
            return plan.matrix
        return np.stack(
            [
                self._log_post,
                self._log_partition,
                self._belief_log_h,
                self._log_post,
                *(self._fields[name] for name in self._names),
            ]
        )

    def _adopt(self, plan: _Compiled, state: np.ndarray, run_lengths: np.ndarray) -> None:
        """Takes the compiled recursion's new belief: the first ``len(run_lengths)`` entries
        of its rows become the detector's arrays (views) and ``plan`` keeps the matrix for the
        next step."""
        n = run_lengths.shape[0]
        self._log_post = post = state[0, :n]
        self._log_partition, self._belief_log_h = state[1, :n], state[2, :n]
        self._log_filtered = state[3, 1:n]
        self._run_lengths = run_lengths
        self._fields = plan.fields = {name: state[j, :n] for name, j in plan.rows}
        plan.matrix, plan.post = state, post

    def _compiled_step(self, s: NaturalParams) -> bool:
        """:meth:`update` through the compiled recursion (:mod:`bam_rl.kernels.bocd`) of the
        scalar families with a constant hazard; ``False`` (nothing changed) when the step
        needs the NumPy path: a family without a kernel, or a non-finite result (an impossible
        datum included, which the step refuses), whose error that path raises."""
        plan = _COMPILED.get(self)
        if plan is None or plan.model is not self.model or plan.cap is not self.max_run_length:
            plan = self._current_plan()
        step = plan.step
        if step is None:
            return False
        state = plan.matrix  # _state_matrix, its usual case inline
        if state is None or plan.fields is not self._fields or plan.post is not self._log_post:
            state = self._state_matrix(plan)
        datum = tuple(map(float, map(s.fields.__getitem__, self._names)))
        try:
            out = step(plan.kind, state, self._run_lengths, datum, float(s.log_h), plan.settings)
        except ZeroDivisionError:  # compiled code raises where NumPy gives inf: its path
            return False
        total = out[2]
        if not math.isfinite(total):
            return False
        self._adopt(plan, out[0], out[1])
        self._t += 1
        self._log_evidence += total
        self._last_log_predictive = total
        return True

    def _hazard_logs(
        self, run_lengths: np.ndarray
    ) -> tuple[np.ndarray | float, np.ndarray | float]:
        """``(log H(r), log(1 − H(r)))`` for the live run lengths."""
        if self._hazard_fn is None:
            return self._log_h, self._log_1mh
        raw = self._hazard_fn(run_lengths.copy())
        try:
            values = np.asarray(raw, dtype=np.float64)
            values = np.broadcast_to(values, run_lengths.shape)
        except (TypeError, ValueError) as error:
            raise ValueError(
                f"hazard must return one probability in (0, 1) per run length "
                f"(shape {run_lengths.shape}), got {raw!r}"
            ) from error
        if not np.all((values > 0.0) & (values < 1.0)):
            raise ValueError(f"hazard returned values outside the open interval (0, 1): {values!r}")
        return np.log(values), np.log1p(-values)

    def _check_possible(self, s: NaturalParams) -> None:
        """Raises ``ValueError`` unless the base prior plus ``s`` is a proper belief (a datum
        no data could give, e.g. a negative count, is refused at every step, the first
        included, where the one run length's predictive may still be finite)."""
        prior = self._prior_fields
        fields = {name: prior[name] + s.fields[name] for name in self._names}
        try:
            self.model._check_belief(fields)
        except ValueError as error:
            raise ValueError(
                f"s: an impossible datum: the base prior plus its statistics is no "
                f"distribution ({error})"
            ) from error

    def update(self, s: NaturalParams) -> ChangepointDetector:
        """Absorbs one datum.

        Args:
            s: Sufficient statistics of the datum (unbatched), e.g. ``model.stats(...)``.

        Returns:
            self, so calls can be chained.

        Raises:
            ValueError: If ``s`` is not an unbatched statistic of this model's family, the
                base prior plus ``s`` is no distribution (an impossible datum), or the datum
                has zero (or undefined) probability under every run length.
        """
        model = self.model
        if not isinstance(s, NaturalParams):
            raise ValueError(f"s must be a NaturalParams of {model!r}, got {type(s).__name__}")
        if s.family is not model:
            try:
                model.check_params(s, "s")
            except ValueError as error:
                raise ValueError(f"s must be statistics of {model!r}: {error}") from error
        if s.log_h.ndim or any(s.fields[name].shape != event for name, event in self._event_shapes):
            raise ValueError(
                f"s must be the statistics of a single datum (unbatched), got "
                f"{s!r}; sum a batch into one datum with .sum() first"
            )
        if self._hazard_fn is None and self._compiled_step(s):
            return self  # the compiled step checked the datum in its own pass
        self._check_possible(s)
        s_log_h = float(s.log_h)

        # predictive of every live run length: one batched log-partition evaluation
        post = {name: self._fields[name] + s.fields[name] for name in self._names}
        for name in self._names:
            if not all_finite(post[name]):
                raise ValueError(
                    f"s: adding the datum to a run-length belief overflows float64 "
                    f"(field {name!r}); the data are too large in magnitude"
                )
        post_log_partition = np.asarray(model.log_partition_fields(post), dtype=np.float64)
        log_pred = post_log_partition - self._log_partition + s_log_h
        joint = self._log_post + log_pred  # log P(r_{t-1} = r, D_t | D_<t)
        log_h, log_1mh = self._hazard_logs(self._run_lengths)
        growth = joint + log_1mh
        if self._hazard_fn is None:
            total = _logsumexp(joint)  # H + (1 − H) = 1 exactly
            change = total + log_h
        else:
            change = _logsumexp(joint + log_h)
            growth_total = _logsumexp(growth)
            total = float(np.logaddexp(change, growth_total))
        if not math.isfinite(total):
            raise ValueError(
                f"s: the datum has zero or undefined probability under every run "
                f"length (log evidence increment {total})"
            )

        n = joint.shape[0] + 1
        log_post = np.empty(n)
        log_post[0] = change - total
        np.subtract(growth, total, out=log_post[1:])
        run_lengths = np.empty(n, dtype=np.int64)
        run_lengths[0] = 0
        np.add(self._run_lengths, 1, out=run_lengths[1:])
        fields = {}
        for name in self._names:
            old = post[name]
            new = np.empty((n, *old.shape[1:]))
            new[0] = self._prior_fields[name]
            new[1:] = old
            fields[name] = new
        belief_log_h = np.empty(n)
        belief_log_h[0] = self._prior_log_h
        np.add(self._belief_log_h, s_log_h, out=belief_log_h[1:])
        log_partition = np.empty(n)
        log_partition[0] = self._prior_log_partition
        log_partition[1:] = post_log_partition
        log_filtered = joint

        # the cap: the run lengths >= max_run_length share one row (see the class docstring)
        cap = self.max_run_length
        if cap is not None and n > 1 and run_lengths[-2] >= cap:
            tail = int(np.searchsorted(run_lengths, cap))  # first row of the tail (ascending)
            best = tail + int(log_post[tail:].argmax())
            log_post[best] = _logsumexp(log_post[tail:])
            log_filtered[best - 1] = _logsumexp(log_filtered[tail - 1 :])
            merged = np.ones(n, dtype=bool)
            merged[tail:] = False
            merged[best] = True
            log_post, run_lengths = log_post[merged], run_lengths[merged]
            fields = {name: value[merged] for name, value in fields.items()}
            belief_log_h, log_partition = belief_log_h[merged], log_partition[merged]
            log_filtered = log_filtered[merged[1:]]
            n = log_post.shape[0]

        # pruning: drop small masses, but never r = 0, the MAP, nor the most probable segment
        # holding D_t (so the filtered belief survives)
        keep = None
        if self.prune_threshold > 0.0:
            mask = log_post >= self._log_threshold
            if not mask.all():
                mask[0] = True
                mask[int(log_post.argmax())] = True
                mask[1 + int(log_filtered.argmax())] = True
                keep = mask
        if keep is not None:
            log_post = log_post[keep]
            log_post -= _logsumexp(log_post)
            run_lengths = run_lengths[keep]
            fields = {name: value[keep] for name, value in fields.items()}
            belief_log_h = belief_log_h[keep]
            log_partition = log_partition[keep]
            log_filtered = log_filtered[keep[1:]]

        self._t += 1
        self._log_post = log_post
        self._run_lengths = run_lengths
        self._fields = fields
        self._belief_log_h = belief_log_h
        self._log_partition = log_partition
        self._log_filtered = log_filtered
        self._log_evidence += total
        self._last_log_predictive = total
        return self

    # ------------------------------------------------------------- run lengths
    @property
    def t(self) -> int:
        """Number of data absorbed since construction or the last :meth:`reset`."""
        return self._t

    @property
    def run_lengths(self) -> np.ndarray:
        """Live run lengths, ascending (``run_lengths[0] == 0``), aligned with :attr:`beliefs`."""
        return self._run_lengths.copy()

    @property
    def run_length_probabilities(self) -> np.ndarray:
        """``P(r_t = r | D_1..t)`` for each live run length ``r`` (aligned, sums to 1)."""
        return np.exp(self._log_post)

    @property
    def log_run_length_probabilities(self) -> np.ndarray:
        """Log of :attr:`run_length_probabilities`."""
        return self._log_post.copy()

    @property
    def run_length_posterior_sparse(self) -> tuple[np.ndarray, np.ndarray]:
        """The sparse posterior: ``(run_lengths, probabilities)`` over the live run lengths."""
        return self.run_lengths, self.run_length_probabilities

    @property
    def run_length_posterior(self) -> np.ndarray:
        """Dense ``P(r_t = r | D_1..t)`` for ``r = 0 .. max live run length`` (0 if pruned)."""
        dense = np.zeros(int(self._run_lengths[-1]) + 1)
        dense[self._run_lengths] = np.exp(self._log_post)
        return dense

    @property
    def map_run_length(self) -> int:
        """The most probable run length (the smallest one on ties)."""
        return int(self._run_lengths[int(self._log_post.argmax())])

    def changepoint_probability(self, lag: int = 1) -> float:
        """Posterior probability that the current segment began exactly ``lag`` data ago.

        This is ``P(r_t = lag | D_1..t)``: the current segment consists of the last ``lag``
        observations, i.e. a change happened right before ``D_{t−lag+1}``. ``lag = 0`` gives
        ``P(r_t = 0)``, which equals the hazard when the hazard is constant, so a change is
        read at ``lag >= 1``.

        Args:
            lag: Integer >= 0.

        Returns:
            The probability (0.0 for run lengths that were pruned or exceed ``t``).

        Raises:
            ValueError: If ``lag`` is not an integer >= 0.
        """
        if isinstance(lag, (bool, np.bool_)) or not isinstance(lag, numbers.Integral) or lag < 0:
            raise ValueError(f"lag must be an integer >= 0, got {lag!r}")
        index = int(np.searchsorted(self._run_lengths, int(lag)))
        if index < len(self._run_lengths) and self._run_lengths[index] == lag:
            return float(np.exp(self._log_post[index]))
        return 0.0

    @property
    def log_evidence(self) -> float:
        """``log p(D_1..t)``, the sum of the per-step log evidence increments."""
        return float(self._log_evidence)

    @property
    def last_log_predictive(self) -> float:
        """``log p(D_t | D_<t)`` of the latest datum (NaN before any data)."""
        return float(self._last_log_predictive)

    # ----------------------------------------------------------------- beliefs
    def _params(self, rows: int | slice | np.ndarray | None = None) -> NaturalParams:
        if rows is None:
            rows = slice(None)
        log_h = np.array(self._belief_log_h[rows])
        # rows of the detector's own beliefs: checked as they were formed (and on restore)
        return NaturalParams._trusted(
            self.model,
            {name: np.array(value[rows]) for name, value in self._fields.items()},
            log_h,
            log_h.shape,
        )

    def belief_at(self, index: int) -> NaturalParams:
        """The belief of the live run length ``run_lengths[index]`` (one row of
        :attr:`beliefs`, without stacking the others)."""
        return self._params(int(index))

    def sample_index(self, rng: np.random.Generator) -> int:
        """An index of :attr:`run_lengths` drawn from the run-length posterior.

        Consumes ``rng`` exactly as ``rng.choice(n, p=run_length_probabilities)`` does — one
        uniform, placed in the normalised cumulative sum — and returns the same index, without
        ``choice``'s argument checks (the posterior is a distribution by construction).
        """
        cached = _CUMULATIVE.get(self)
        if cached is None or cached[0] is not self._log_post:
            cumulative = np.cumsum(np.exp(self._log_post))
            cumulative /= cumulative[-1]
            cached = (self._log_post, cumulative)
            _CUMULATIVE[self] = cached
        return int(cached[1].searchsorted(rng.random(), side="right"))

    def snapshot(self) -> ChangepointDetector:
        """A copy that later updates of either detector leave unchanged, in O(1): an update
        replaces the state's arrays and never writes into them, so the copy shares them
        (``copy.deepcopy`` would copy every live run length's row)."""
        twin = copy.copy(self)
        plan = _COMPILED.get(self)
        if plan is not None:  # the same fields: the same matrix (a copy each steps on its own)
            _COMPILED[twin] = copy.copy(plan)
        return twin

    @property
    def beliefs(self) -> NaturalParams:
        """Stacked beliefs, one row per live run length (aligned with :attr:`run_lengths`).

        Row ``r`` is the base prior plus the statistics of the last ``r`` data.
        """
        return self._params()

    @property
    def filtered_weights(self) -> np.ndarray:
        """Mixture weights of :attr:`filtered_beliefs` (sum to 1).

        The weight of the segment that started ``r + 1`` data ago (``r_{t−1} = r``) is
        ``∝ P(r_{t−1} = r | D_<t) · p(D_t | r)``, the joint before the hazard splits it into a
        continuation and a change. Before any data: ``[1.0]`` (the base prior).
        """
        if self._log_filtered is None:
            return np.ones(1)
        logw = self._log_filtered
        return np.exp(logw - _logsumexp(logw))

    @property
    def filtered_beliefs(self) -> NaturalParams:
        """Beliefs about ``θ_t`` given ``D_1..t``, one per segment containing ``D_t``.

        These are the rows of :attr:`beliefs` with run length >= 1 (aligned with
        ``run_lengths[1:]``); before any data it is the base prior as a batch of one.
        """
        if self._log_filtered is None:
            return self._params(slice(0, 1))
        return self._params(slice(1, None))

    @property
    def filtered_run_lengths(self) -> np.ndarray:
        """Run lengths of :attr:`filtered_beliefs` (``run_lengths[1:]``; ``[0]`` at t = 0)."""
        if self._log_filtered is None:
            return self._run_lengths[:1].copy()
        return self._run_lengths[1:].copy()

    @property
    def map_belief(self) -> NaturalParams:
        """The filtered belief of the most probable segment containing ``D_t`` (unbatched)."""
        if self._log_filtered is None:
            return self._params(0)
        return self._params(1 + int(np.argmax(self._log_filtered)))

    def theta_moments(self, kind: str = "filtered") -> tuple[Any, Any]:
        """Mean and element-wise variance of a run-length mixture of beliefs about θ.

        Args:
            kind: ``"filtered"`` — the belief about ``θ_t`` given ``D_1..t``, the mixture of
                :attr:`filtered_beliefs` with :attr:`filtered_weights`; ``"predictive"`` — the
                belief about ``θ_{t+1}``, the mixture of :attr:`beliefs` (including the base
                prior at ``r = 0``) with the run-length posterior.

        Returns:
            ``(mean, variance)`` with the shape of θ (NumPy scalars for scalar θ; tuples when
            the family's moments are tuples, e.g. ``(M, σ²)``); the variance is
            ``Σ w (Var + E²) − mean²`` element-wise.

        Raises:
            ValueError: For an unknown ``kind``.
        """
        if kind == "filtered":
            weights, beliefs = self.filtered_weights, self.filtered_beliefs
        elif kind == "predictive":
            weights, beliefs = self.run_length_probabilities, self.beliefs
        else:
            raise ValueError(f"kind must be 'filtered' or 'predictive', got {kind!r}")
        return _mixture_moments(weights, self.model.mean(beliefs), self.model.variance(beliefs))

    def __repr__(self) -> str:
        return (
            f"ChangepointDetector({self.model!r}, hazard={self.hazard!r}, prune_threshold="
            f"{self.prune_threshold:g}, max_run_length={self.max_run_length!r}, t={self._t}, "
            f"live={len(self._run_lengths)})"
        )
