"""A memory buffer of sufficient statistics, one record per past datum (BAM's ``D_<t``)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np

from bam_rl.checks import check_finite_params, check_int
from bam_rl.families.base import ConjugateFamily, Fields, NaturalParams


def _finite_scalars(s: NaturalParams) -> bool:
    """True when every field of ``s`` and its ``log_h`` are finite 0-d arrays (a scalar
    family's datum; ``check_finite_params`` then passes): the check without its reductions.
    ``False`` for anything else, which the caller checks the general way."""
    for value in s.fields.values():  # in the general check's order
        if type(value) is not np.ndarray or value.ndim or not math.isfinite(value.item()):
            return False
    log_h = s.log_h
    return type(log_h) is np.ndarray and not log_h.ndim and math.isfinite(log_h.item())


class _BoundedPlan(NamedTuple):
    """What a bounded ``add`` computed before committing (see ``Memory._plan_bounded_add``)."""

    row: np.ndarray  # symmetric KL of the new record to each stored one
    grads: Fields  # ∇A(prior + s) of the new record
    merge: tuple[int, int, NaturalParams, Fields, np.ndarray] | None  # i < j, merged record


class Memory:
    """Stores the sufficient statistics ``s_j`` of past data with a time index and a label.

    Statistics are kept in growable stacked arrays, so weighted sums for many readout
    vectors at once are one ``tensordot`` per field. With a ``capacity``, adding past it
    merges the two records whose single-datum posteriors ``p(θ | D_j) ∝ p(θ) p(D_j | θ)``
    are closest in symmetric KL; their statistics add, so the merged record is exactly the
    datum ``D_i ∪ D_j``. Pairwise distances are cached, and so are each record's mean
    parameters ``∇A(prior + s_j)`` (under the first record's family), so an addition costs one
    gradient (two when it merges), ``O(capacity)`` products
    (``KL(p‖q) + KL(q‖p) = ⟨η_p − η_q, ∇A(η_p) − ∇A(η_q)⟩``) and an
    ``O(capacity²)`` scan for the closest pair, with no KL call.

    Args:
        capacity: Maximum number of records (``None`` for unbounded); must be >= 2.

    Examples:
        >>> from bam_rl.families import BetaBinomial
        >>> model = BetaBinomial()
        >>> memory = Memory()
        >>> memory.add(model.stats(successes=3, trials=15), label="a")
        >>> memory.add(model.stats(successes=12, trials=15))
        >>> memory.weighted_sum([[1, 0], [1, 1]], base=model.prior).fields["alpha"]
        array([ 4., 16.])
    """

    def __init__(self, capacity: int | None = None):
        self.capacity = None if capacity is None else check_int("capacity", capacity, minimum=2)
        self.family: ConjugateFamily | None = None
        self._fields: dict[str, np.ndarray] = {}
        self._log_h = np.zeros(0)
        self._times = np.zeros(0, dtype=np.int64)
        self._counts = np.zeros(0, dtype=np.int64)
        self._labels: list[Any] = []
        self._size = 0
        self._next_time = 0
        # capacity mode only: ∇A(prior + s_j) per record and the symmetric-KL matrix buffer
        self._grads: dict[str, np.ndarray] = {}
        self._distances: np.ndarray | None = None
        self.n_merges = 0

    def _check_restored(self) -> None:
        """A restored memory must be one :meth:`add` could have built: a capacity as the
        constructor takes it, stacked arrays of one family's field shapes with at least
        ``len(self)`` rows, finite records, and (bounded memories) the cached mean parameters
        and distances those records give (to 1e-9 relative), so a state file cannot make it
        merge other records than the saved memory would. ``ValueError`` otherwise."""
        self.capacity = (
            None if self.capacity is None else check_int("capacity", self.capacity, minimum=2)
        )
        size = check_int("_size", self._size, minimum=0)
        check_int("_next_time", self._next_time, minimum=0)
        check_int("n_merges", self.n_merges, minimum=0)
        rows = self._log_h.shape[0] if isinstance(self._log_h, np.ndarray) else -1
        if rows < size or (self.capacity is not None and size > self.capacity):
            raise ValueError(f"restored memory: {size} records do not fit its arrays")
        if not isinstance(self._labels, list) or len(self._labels) != size:
            raise ValueError(f"restored memory: labels must be a list of {size} items")
        family = self.family
        if family is None:
            if size or self._fields:
                raise ValueError("restored memory: records without a family")
            return
        if set(self._fields) != set(family.field_shapes):
            raise ValueError(f"restored memory: fields must be {sorted(family.field_shapes)}")
        expected = {name: (rows, *event) for name, event in family.field_shapes.items()}
        for name, array in self._fields.items():
            if (
                not isinstance(array, np.ndarray)
                or array.shape != expected[name]
                or array.dtype != np.float64
            ):
                raise ValueError(
                    f"restored memory: field {name} must be float64 of shape {expected[name]}"
                )
        for name, array, dtype in (
            ("_log_h", self._log_h, np.float64),
            ("_times", self._times, np.int64),
            ("_counts", self._counts, np.int64),
        ):
            if not isinstance(array, np.ndarray) or array.shape != (rows,) or array.dtype != dtype:
                raise ValueError(f"restored memory: {name} must be {dtype.__name__} of ({rows},)")
        check_finite_params("memory records", self.stats)
        if np.any(self._times[:size] < 0) or np.any(self._counts[:size] < 1):
            raise ValueError("restored memory: times must be >= 0 and counts >= 1")
        if self.capacity is None:
            if self._grads or self._distances is not None:
                raise ValueError("restored memory: an unbounded memory caches no distances")
            return
        self._check_restored_caches(family, size, rows)

    def _check_restored_caches(self, family: ConjugateFamily, size: int, rows: int) -> None:
        """The bounded memory's cached mean parameters and distance matrix, recomputed."""
        fields = {name: array[:size] for name, array in self._fields.items()}
        grads = self._posterior_grads(family, fields) if size else {}
        for name, event in family.field_shapes.items():
            stored = self._grads.get(name)
            if not isinstance(stored, np.ndarray) or stored.shape != (rows, *event):
                raise ValueError(f"restored memory: cached {name} must have shape {(rows, *event)}")
            if size and not np.allclose(stored[:size], grads[name], rtol=1e-9, atol=1e-12):
                raise ValueError(f"restored memory: cached {name} is not its records'")
        if size == 0:
            return
        buffer = self._distances
        if (
            not isinstance(buffer, np.ndarray)
            or buffer.ndim != 2
            or buffer.shape[0] != buffer.shape[1]
            or not size <= buffer.shape[0] <= (self.capacity or 0) + 1
        ):
            raise ValueError("restored memory: the distance matrix does not fit its records")
        for index in range(size):
            one = {name: array[index] for name, array in fields.items()}
            one_grads = {name: array[index] for name, array in grads.items()}
            row = self._symmetric_kl(fields, grads, one, one_grads)
            row[index] = np.inf
            if not np.allclose(buffer[index, :size], row, rtol=1e-9, atol=1e-9):
                raise ValueError("restored memory: the distance matrix is not its records'")

    # ---------------------------------------------------------------- access
    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[NaturalParams]:
        for index in range(self._size):
            yield self.stats[index]

    @property
    def stats(self) -> NaturalParams:
        """All stored statistics stacked along a leading axis of length ``len(self)``."""
        if self.family is None:
            raise ValueError("memory is empty: add statistics first")
        fields = {name: array[: self._size] for name, array in self._fields.items()}
        # every record was checked when stored (add, merge, restore): no second check per read
        return NaturalParams._trusted(self.family, fields, self._log_h[: self._size], (self._size,))

    @property
    def times(self) -> np.ndarray:
        """Time index of each record (the latest datum's index for merged records)."""
        return self._times[: self._size].copy()

    @property
    def counts(self) -> np.ndarray:
        """How many original data each record summarises (> 1 after merges)."""
        return self._counts[: self._size].copy()

    @property
    def labels(self) -> list[Any]:
        """Label of each record (``None`` where absent or where merged records disagreed)."""
        return list(self._labels)

    # -------------------------------------------------------------- mutation
    def add(self, s: NaturalParams, label: Any = None, time: int | None = None) -> None:
        """Appends the statistics of one datum.

        Args:
            s: Unbatched sufficient statistics from a conjugate family.
            label: Optional tag (trial, arm, context).
            time: Time index; defaults to a counter of added data.

        Raises:
            ValueError: If ``s`` is batched, holds non-finite statistics or comes from a family
                unlike the stored ones, if ``time`` is not an integer >= 0, or if the distances
                of a bounded memory cannot be computed. A refused datum leaves the memory
                exactly as it was: every fallible step runs before anything is stored.
        """
        if not isinstance(s, NaturalParams):
            raise ValueError(f"s must be a NaturalParams, got {type(s).__name__}")
        if s.batch_shape != ():
            raise ValueError(f"s must be a single datum (batch shape ()), got {s.batch_shape}")
        if not _finite_scalars(s):  # else the general check, which names what is not finite
            check_finite_params("s", s)
        self._add_checked(s, label, time)

    def _add_checked(self, s: NaturalParams, label: Any = None, time: int | None = None) -> None:
        """:meth:`add` for statistics ``s`` a caller has already checked as :meth:`add` checks
        them (a :class:`NaturalParams` of batch shape ``()`` with finite fields and ``log h``:
        a belief rule's datum after ``BeliefRule.update``'s checks); the family and ``time``
        are still checked here, and a refused datum leaves the memory as it was."""
        family = self.family
        if family is not None and family is not s.family:  # the same family passes
            family.check_compatible(s.family)
        following = self._next_time
        if time is None:
            time = following
        elif type(time) is not int or time < 0:  # an int >= 0 is what check_int returns
            time = check_int("time", time, minimum=0)
        plan = self._plan_bounded_add(s) if self.capacity is not None else None
        # commit: nothing below can fail
        if family is None:
            self._allocate(s.family, 16)
        self._next_time = (following if following >= time else time) + 1  # max(…) + 1
        if plan is None:
            self._append(s, label, time, 1)
        else:
            self._commit_bounded_add(plan, s, label, time)

    def clear(self) -> None:
        """Forgets every record (keeps the capacity)."""
        Memory.__init__(self, self.capacity)

    def _allocate(self, family: ConjugateFamily, rows: int) -> None:
        self.family = family
        self._fields = {
            name: np.zeros((rows, *event)) for name, event in family.field_shapes.items()
        }
        self._grads = (
            {}
            if self.capacity is None
            else {name: np.zeros((rows, *event)) for name, event in family.field_shapes.items()}
        )
        self._log_h = np.zeros(rows)
        self._times = np.zeros(rows, dtype=np.int64)
        self._counts = np.zeros(rows, dtype=np.int64)

    def _append(
        self, s: NaturalParams, label: Any, time: int, count: int, grads: Fields | None = None
    ) -> None:
        rows = self._log_h.shape[0]
        if self._size == rows:  # amortised doubling keeps appends O(1)
            grow = max(16, rows)
            for store in (self._fields, getattr(self, "_grads", {})):
                for name, array in store.items():
                    store[name] = np.concatenate([array, np.zeros((grow, *array.shape[1:]))])
            self._log_h = np.concatenate([self._log_h, np.zeros(grow)])
            self._times = np.concatenate([self._times, np.zeros(grow, dtype=np.int64)])
            self._counts = np.concatenate([self._counts, np.zeros(grow, dtype=np.int64)])
        index = self._size
        fields = s.fields
        for name, array in self._fields.items():
            array[index] = fields[name]
        if grads is not None:  # bounded memories only
            for name, array in self._grads.items():
                array[index] = grads[name]
        self._log_h[index] = s.log_h
        self._times[index] = time
        self._counts[index] = count
        self._labels.append(label)
        self._size += 1

    def _remove(self, index: int) -> None:
        last = self._size - 1
        arrays = (*self._fields.values(), *getattr(self, "_grads", {}).values())
        for array in (*arrays, self._log_h, self._times, self._counts):
            array[index:last] = array[index + 1 : last + 1]
        del self._labels[index]
        self._size -= 1

    # --------------------------------------------------------- bounded memory
    # Distances are symmetric KLs between single-datum posteriors p_j = prior + s_j. For an
    # exponential family KL(p‖q) + KL(q‖p) = ⟨η_p − η_q, ∇A(η_p) − ∇A(η_q)⟩ (the log-partition
    # terms cancel, so there is no difference of large normalisers either), with η_p − η_q =
    # s_p − s_q. With ∇A(prior + s_j) cached per record, a new distance row costs O(capacity)
    # products and one gradient; the matrix lives in a buffer updated in place.
    @staticmethod
    def _posterior_grads(family: ConjugateFamily, fields: Fields) -> Fields:
        """``∇A(prior + s)`` (batched); ``ValueError`` unless a proper belief with finite
        mean parameters."""
        prior = family.prior.fields
        posterior = {name: prior[name] + fields[name] for name in prior}
        family._check_belief(posterior)
        with np.errstate(all="ignore"):
            raw = family.grad_log_partition_fields(posterior)
        grads = {name: np.asarray(raw[name], dtype=np.float64) for name in prior}
        if not all(np.all(np.isfinite(value)) for value in grads.values()):
            raise ValueError(
                "cannot store the datum in a bounded memory: the mean parameters of its "
                "single-datum posterior are not finite (extreme or degenerate data?)"
            )
        return grads

    @staticmethod
    def _symmetric_kl(fields: Fields, grads: Fields, one: Fields, one_grads: Fields) -> np.ndarray:
        """Symmetric KL between records ``(fields, grads)`` (stacked along axis 0) and one
        record; clipped at 0 against rounding; ``ValueError`` if any is not finite."""
        total: Any = 0.0
        with np.errstate(all="ignore"):
            for name in one:
                product = (fields[name] - one[name]) * (grads[name] - one_grads[name])
                if product.ndim > 1:
                    product = product.reshape(product.shape[0], -1).sum(axis=1)
                total = total + product
        row = np.maximum(np.asarray(total, dtype=np.float64), 0.0)
        if not np.all(np.isfinite(row)):
            raise ValueError(
                "cannot store the datum in a bounded memory: the symmetric KL "
                "to a stored record is not finite (extreme or degenerate data?)"
            )
        return row

    def _stored_grads(self) -> Fields:
        """The cached ``∇A(prior + s_j)`` of the stored records (rebuilt if absent, e.g. for
        a memory saved before the cache existed)."""
        grads = getattr(self, "_grads", None)
        if self.family is not None and not grads:
            computed = self._posterior_grads(
                self.family, {name: array[: self._size] for name, array in self._fields.items()}
            )
            rows = self._log_h.shape[0]
            grads = {}
            for name, value in computed.items():
                grads[name] = np.zeros((rows, *value.shape[1:]))
                grads[name][: self._size] = value
            self._grads = grads
        return {name: array[: self._size] for name, array in (grads or {}).items()}

    def _closest_pair(self, row: np.ndarray) -> tuple[int, int]:
        """The pair to merge once the new record (index ``len(self)``, distances ``row``)
        joins: the first minimum in row-major order of the full symmetric matrix (``inf`` on
        the diagonal), as ``np.argmin`` over it finds; sorted."""
        size = self._size
        stored = self._distance_buffer(size)[:size, :size]
        a, b = divmod(int(np.argmin(stored)), size)
        j = int(np.argmin(row))
        if row[j] < stored[a, b] or (row[j] == stored[a, b] and j < a):
            return j, size
        return a, b

    def _plan_bounded_add(self, s: NaturalParams) -> _BoundedPlan:
        """Everything a bounded ``add`` computes, before any state changes: the new record's
        mean parameters and distances and, when the memory overflows, the pair to merge, the
        merged statistics, their mean parameters and distances to the records that stay."""
        # every distance under one prior, the memory's (families with the same signature but
        # other hyperparameters may share a memory; their statistics are comparable)
        family, size = self.family or s.family, self._size
        grads = self._posterior_grads(family, s.fields)
        fields = {name: array[:size] for name, array in self._fields.items()}
        stored_grads = self._stored_grads()
        row = self._symmetric_kl(fields, stored_grads, s.fields, grads) if size else np.zeros(0)
        assert self.capacity is not None
        if size + 1 <= self.capacity:
            return _BoundedPlan(row, grads, None)
        pair = self._closest_pair(row)
        parts = [
            (s.fields, s.log_h)
            if i == size
            else ({k: v[i] for k, v in fields.items()}, self._log_h[i])
            for i in pair
        ]
        merged_fields = {name: parts[0][0][name] + parts[1][0][name] for name in s.fields}
        merged = NaturalParams(family, merged_fields, parts[0][1] + parts[1][1])
        merged_grads = self._posterior_grads(family, merged_fields)
        to_new = self._symmetric_kl(
            {k: v[None] for k, v in s.fields.items()},
            {k: v[None] for k, v in grads.items()},
            merged_fields,
            merged_grads,
        )
        to_stored = self._symmetric_kl(fields, stored_grads, merged_fields, merged_grads)
        merged_row = np.delete(np.concatenate([to_stored, to_new]), pair)
        return _BoundedPlan(row, grads, (pair[0], pair[1], merged, merged_grads, merged_row))

    def _distance_buffer(self, rows: int) -> np.ndarray:
        """The symmetric-KL matrix's buffer, grown (doubling, at most ``capacity + 1``) to
        hold ``rows`` records; the valid block is ``[:len(self), :len(self)]``."""
        buffer = self._distances
        if buffer is None or buffer.shape[0] < rows:
            assert self.capacity is not None
            old = 0 if buffer is None else buffer.shape[0]
            new_rows = min(self.capacity + 1, max(rows, 16, 2 * old))
            grown = np.full((new_rows, new_rows), np.inf)
            if buffer is not None:
                keep = min(old, self._size)
                grown[:keep, :keep] = buffer[:keep, :keep]
            self._distances = buffer = grown
        return buffer

    def _commit_bounded_add(self, plan: _BoundedPlan, s: NaturalParams, label: Any, time: int):
        """Stores the new record and performs the planned merge; nothing here can fail."""
        n = self._size
        buffer = self._distance_buffer(n + 1)
        buffer[n, :n] = buffer[:n, n] = plan.row
        buffer[n, n] = np.inf
        self._append(s, label, time, 1, plan.grads)
        if plan.merge is None:
            return
        first, second, merged, merged_grads, merged_row = plan.merge
        label_a, label_b = self._labels[first], self._labels[second]
        merged_label = label_a if label_a == label_b else None
        merged_time = int(max(self._times[first], self._times[second]))
        count = int(self._counts[first] + self._counts[second])
        self._remove(second)
        self._remove(first)
        size = n + 1  # rows and columns first < second leave the (n + 1)-square block
        buffer[first : second - 1, :size] = buffer[first + 1 : second, :size]
        buffer[second - 1 : size - 2, :size] = buffer[second + 1 : size, :size]
        buffer[: size - 2, first : second - 1] = buffer[: size - 2, first + 1 : second]
        buffer[: size - 2, second - 1 : size - 2] = buffer[: size - 2, second + 1 : size]
        last = size - 2
        buffer[last, :last] = buffer[:last, last] = merged_row
        buffer[last, last] = np.inf
        self._append(merged, merged_label, merged_time, count, merged_grads)
        self.n_merges += 1

    # -------------------------------------------------------------- readouts
    def weighted_sum(self, weights: Any, base: NaturalParams | None = None) -> NaturalParams:
        """``base + Σ_j w_j s_j`` for one weight vector or a batch of them.

        Args:
            weights: Shape ``(len(self),)`` or ``(k, len(self))``, entries in [0, 1].
            base: Belief to add the weighted statistics to (usually ``model.prior``);
                ``None`` returns the weighted statistics alone.

        Returns:
            NaturalParams with batch shape ``weights.shape[:-1]``.

        Raises:
            ValueError: If the weights have the wrong length or leave [0, 1].
        """
        if self._size == 0:
            weights = np.asarray(weights, dtype=np.float64)
            if weights.size:
                raise ValueError(f"weights must be empty for an empty memory, got {weights.shape}")
            if base is None:
                raise ValueError("memory is empty and no base belief was given")
            return base.broadcast_to(weights.shape[:-1]) if weights.ndim > 1 else base
        total = self.stats.weighted_sum(weights)
        return total if base is None else base + total
