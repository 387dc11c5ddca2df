"""A memory buffer of sufficient statistics, one record per past datum (BAM's ``D_<t``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from bam_rl.families.base import ConjugateFamily, NaturalParams


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
        if capacity is not None and (int(capacity) != capacity or capacity < 2):
            raise ValueError(f"capacity must be None or an integer >= 2, got {capacity!r}")
        self.capacity = None if capacity is None else int(capacity)
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
            ValueError: If ``s`` is batched or from a family unlike the stored ones.
        """
        if not isinstance(s, NaturalParams):
            raise ValueError(f"s must be a NaturalParams, got {type(s).__name__}")
        if s.batch_shape != ():
            raise ValueError(f"s must be a single datum (batch shape ()), got {s.batch_shape}")
        if self.family is None:
            self._allocate(s.family, 16)
        else:
            self.family.check_compatible(s.family)
        if time is None:
            time = self._next_time
        self._next_time = max(self._next_time, int(time)) + 1
        self._append(s, label, int(time), 1)
        if self.capacity is not None:
            self._update_distances()
            if self._size > self.capacity:
                self._merge_closest()

    def clear(self) -> None:
        """Forgets every record (keeps the capacity)."""
        Memory.__init__(self, self.capacity)

    def _allocate(self, family: ConjugateFamily, rows: int) -> None:
        self.family = family
        self._fields = {name: np.zeros((rows, *event))
                        for name, event in family.field_shapes.items()}
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
    def _family(self) -> ConjugateFamily:
        if self.family is None:
            raise ValueError("the memory is empty: it has no family yet")
        return self.family

    def _single_posteriors(self, stats: NaturalParams) -> NaturalParams:
        return self._family().prior + stats

    def _symmetric_kl(self, new: NaturalParams, others: NaturalParams) -> np.ndarray:
        family = self._family()
        kl_forward = np.atleast_1d(family.kl(new, others))
        kl_backward = np.atleast_1d(family.kl(others, new))
        return kl_forward + kl_backward

    def _update_distances(self) -> None:
        """Extends the cached distance matrix with the newest record's row."""
        size = self._size
        matrix = np.full((size, size), np.inf)
        if self._distances is not None and size > 1:
            matrix[: size - 1, : size - 1] = self._distances
        if size > 1:
            posteriors = self._single_posteriors(self.stats)
            row = self._symmetric_kl(posteriors[size - 1], posteriors[: size - 1])
            matrix[size - 1, : size - 1] = row
            matrix[: size - 1, size - 1] = row
        self._distances = matrix

    def _merge_closest(self) -> None:
        distances = self._distances
        assert distances is not None  # kept by _update_distances in capacity mode
        row, column = np.unravel_index(np.argmin(distances), distances.shape)
        first, second = sorted((int(row), int(column)))
        stats = self.stats
        merged = stats[first] + stats[second]
        label_a, label_b = self._labels[first], self._labels[second]
        label = label_a if label_a == label_b else None
        time = int(max(self._times[first], self._times[second]))
        count = int(self._counts[first] + self._counts[second])
        keep = [i for i in range(self._size) if i not in (first, second)]
        self._remove(second)
        self._remove(first)
        self._distances = distances[np.ix_(keep, keep)]
        self._append(merged, label, time, count)
        self._update_distances()
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
