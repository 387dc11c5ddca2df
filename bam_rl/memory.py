"""A memory buffer of sufficient statistics, one record per past datum (BAM's ``D_<t``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from bam_rl.checks import check_finite_params, check_int
from bam_rl.families.base import ConjugateFamily, NaturalParams, concatenate, stack


class Memory:
    """Stores the sufficient statistics ``s_j`` of past data with a time index and a label.

    Statistics are kept in growable stacked arrays, so weighted sums for many readout
    vectors at once are one ``tensordot`` per field. With a ``capacity``, adding past it
    merges the two records whose single-datum posteriors ``p(θ | D_j) ∝ p(θ) p(D_j | θ)``
    are closest in symmetric KL; their statistics add, so the merged record is exactly the
    datum ``D_i ∪ D_j``. Pairwise distances are cached, so an addition costs ``O(capacity)``
    KL evaluations (one batched call), not ``O(capacity²)``.

    Args:
        capacity: Maximum number of records (``None`` for unbounded); must be >= 2.

    Example:
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
        self._distances: np.ndarray | None = None  # symmetric-KL cache, capacity mode only
        self.n_merges = 0

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
        return NaturalParams(self.family, fields, self._log_h[: self._size])

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
        check_finite_params("s", s)
        if self.family is not None:
            self.family.check_compatible(s.family)
        time = self._next_time if time is None else check_int("time", time, minimum=0)
        plan = self._plan_bounded_add(s) if self.capacity is not None else None
        # commit: nothing below can fail
        if self.family is None:
            self._allocate(s.family, 16)
        self._next_time = max(self._next_time, time) + 1
        self._append(s, label, time, 1)
        if plan is not None:
            self._commit_bounded_add(*plan)

    def clear(self) -> None:
        """Forgets every record (keeps the capacity)."""
        Memory.__init__(self, self.capacity)

    def _allocate(self, family: ConjugateFamily, rows: int) -> None:
        self.family = family
        self._fields = {
            name: np.zeros((rows, *event)) for name, event in family.field_shapes.items()
        }
        self._log_h = np.zeros(rows)
        self._times = np.zeros(rows, dtype=np.int64)
        self._counts = np.zeros(rows, dtype=np.int64)

    def _append(self, s: NaturalParams, label: Any, time: int, count: int) -> None:
        rows = self._log_h.shape[0]
        if self._size == rows:  # amortised doubling keeps appends O(1)
            grow = max(16, rows)
            for name, array in self._fields.items():
                self._fields[name] = np.concatenate([array, np.zeros((grow, *array.shape[1:]))])
            self._log_h = np.concatenate([self._log_h, np.zeros(grow)])
            self._times = np.concatenate([self._times, np.zeros(grow, dtype=np.int64)])
            self._counts = np.concatenate([self._counts, np.zeros(grow, dtype=np.int64)])
        index = self._size
        for name, array in self._fields.items():
            array[index] = s.fields[name]
        self._log_h[index] = s.log_h
        self._times[index] = time
        self._counts[index] = count
        self._labels.append(label)
        self._size += 1

    def _remove(self, index: int) -> None:
        last = self._size - 1
        for array in (*self._fields.values(), self._log_h, self._times, self._counts):
            array[index:last] = array[index + 1 : last + 1]
        del self._labels[index]
        self._size -= 1

    # --------------------------------------------------------- bounded memory
    def _distance_row(self, s: NaturalParams, others: NaturalParams) -> np.ndarray:
        """Symmetric KL between the single-datum posteriors of ``s`` and of each of
        ``others``; raises ``ValueError`` if any is not a finite number >= 0."""
        family = s.family
        posterior, other_posteriors = family.prior + s, family.prior + others
        with np.errstate(all="ignore"):
            row = np.atleast_1d(family.kl(posterior, other_posteriors)) + np.atleast_1d(
                family.kl(other_posteriors, posterior)
            )
        if not np.all(np.isfinite(row)):
            raise ValueError(
                "cannot store the datum in a bounded memory: the symmetric KL "
                "to a stored record is not finite (extreme or degenerate data?)"
            )
        return row

    def _plan_bounded_add(
        self, s: NaturalParams
    ) -> tuple[np.ndarray, tuple[int, int, NaturalParams, np.ndarray] | None]:
        """Everything a bounded ``add`` computes, before any state changes: the new record's
        distance row and, when the memory overflows, the pair to merge, the merged statistics
        and the merged record's distances to the records that stay."""
        size = self._size
        # the first record has no distances yet; its own KL to the prior checks that its
        # single-datum posterior is a proper belief, as every later distance will need
        others = self.stats if size else s.family.zeros()
        row = self._distance_row(s, others)[:size]
        matrix = np.full((size + 1, size + 1), np.inf)
        if size:
            assert self._distances is not None  # kept in capacity mode
            matrix[:size, :size] = self._distances
            matrix[size, :size] = matrix[:size, size] = row
        merge = None
        assert self.capacity is not None
        if size + 1 > self.capacity:
            a, b = np.unravel_index(np.argmin(matrix), matrix.shape)
            first, second = sorted((int(a), int(b)))
            stats = concatenate([self.stats, stack([s])])  # the records with the new one last
            merged = stats[first] + stats[second]
            keep = np.array(
                [i for i in range(size + 1) if i not in (first, second)], dtype=np.int64
            )
            merged_row = self._distance_row(merged, stats[keep]) if keep.size else np.zeros(0)
            merge = (first, second, merged, merged_row)
        return matrix, merge

    def _commit_bounded_add(
        self, matrix: np.ndarray, merge: tuple[int, int, NaturalParams, np.ndarray] | None
    ) -> None:
        self._distances = matrix
        if merge is None:
            return
        first, second, merged, merged_row = merge
        label_a, label_b = self._labels[first], self._labels[second]
        label = label_a if label_a == label_b else None
        time = int(max(self._times[first], self._times[second]))
        count = int(self._counts[first] + self._counts[second])
        keep = [i for i in range(self._size) if i not in (first, second)]
        self._remove(second)
        self._remove(first)
        size = len(keep) + 1
        distances = np.full((size, size), np.inf)
        distances[: size - 1, : size - 1] = matrix[np.ix_(keep, keep)]
        distances[size - 1, : size - 1] = distances[: size - 1, size - 1] = merged_row
        self._distances = distances
        self._append(merged, label, time, count)
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
