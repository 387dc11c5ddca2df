"""Segment-tied BAM: readout weights shared by every datum of a segment (beyond the paper).

A *segment* is the data between two changes (announced by :meth:`SegmentBAM.reset`, or
detected by BOCD over the data). For a conjugate family the statistics of a segment are the
sum of its data's, so a readout over segments,

    η(W) = η0 + Σ_k w_k Σ_{j ∈ segment k} s_j,

is exactly BAM's readout over the data with the weights *tied* inside each segment, i.e. an
untied readout over merged records. On a revisit the candidates are whole earlier visits,
and the objective ``J`` cannot keep only a favourable part of one (the cart-pole's
pole-down early trials, README "Why one-shot recovery does not reproduce").

:class:`SegmentBAM` keeps the *open* segment's data (recursive updates inside it) and a
:class:`~bam_rl.memory.Memory` of closed segments (one record each; a ``capacity`` merges the
closest segments). At a change it closes the open segment, selects readout weights over the
closed segments against the new segment's data so far, and updates recursively from there.

This is an extension beyond the paper; :class:`~bam_rl.beliefs.BAM` and its relatives are the
paper's rules and are unchanged.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from bam_rl.beliefs.bam import BAM
from bam_rl.beliefs.rules import check_possible_datum, check_posterior, check_restored_detector
from bam_rl.bocd import ChangepointDetector
from bam_rl.checks import check_finite_params, check_int
from bam_rl.families.base import ConjugateFamily, NaturalParams
from bam_rl.memory import Memory
from bam_rl.readout import ReadoutResult, select

__all__ = ["SegmentBAM"]


class SegmentBAM(BAM):
    """BAM whose readout weights are tied within segments (beyond the paper).

    The first datum after :meth:`reset` (an announced change), or a datum after which BOCD
    moves the start of its most probable segment later (when ``hazard`` is given), closes the
    open segment and selects readout weights over the closed segments; the new segment then
    updates recursively from ``η(W)``. When BOCD places the change some data back, the open
    segment is split there: the earlier data close, the later ones start the new segment and
    are the evidence of the readout together with the new datum.

    Args:
        model: The conjugate family.
        lam: Complexity penalty ``λ >= 0`` of the readout.
        method: Readout selector (``greedy``, ``parallel``, ``exhaustive``, ``continuous``).
        hazard: BOCD hazard in (0, 1) to detect changes over the data, or ``None`` (default)
            for announced changes only.
        capacity: Bound on the closed segments kept (the closest merge); ``None`` keeps all.
        bocd_options: Extra keyword arguments for :class:`~bam_rl.bocd.ChangepointDetector`.
        **select_options: Passed to :func:`~bam_rl.readout.select`.

    Attributes:
        memory: The closed segments, one record each (``counts`` > 1 after merges).
        segment_sizes: Data in each segment closed so far, in closing order (aligned with
            the memory's records until a bounded memory merges two).
        changepoints: Data indices (of the current episode) at which detected changes began.
    """

    def __init__(
        self,
        model: ConjugateFamily,
        lam: float = 0.0,
        method: str = "greedy",
        hazard: Any = None,
        capacity: int | None = None,
        bocd_options: dict[str, Any] | None = None,
        **select_options: Any,
    ):
        super().__init__(model, lam=lam, method=method, capacity=capacity, **select_options)
        self.detector: ChangepointDetector | None = (
            None if hazard is None else ChangepointDetector(model, hazard, **(bocd_options or {}))
        )
        self._open: list[NaturalParams] = []
        self._open_start = 0
        self._pending_change = False
        self._evidence: NaturalParams | None = None
        self.segment_sizes: list[int] = []
        self.changepoints: list[int] = []

    def _check_restored(self) -> None:
        """BAM's checks, then the segments' own state: a detector of the rule's family (or
        none), an open segment of finite single-datum statistics of the family, whole
        segment sizes >= 1, change points and the open segment's start within the step
        count, and no evidence override left over from an update."""
        super()._check_restored()
        if self.detector is not None:
            check_restored_detector(self)
        if not isinstance(self._open, list):
            raise ValueError("_open must be a list of statistics")
        for s in self._open:
            self.model.check_params(s, "_open")
            if s.batch_shape != ():
                raise ValueError("_open must hold single-datum statistics")
            check_finite_params("_open", s)
            check_possible_datum(self.model, s.fields, "_open", finite_partition=True)
        if not isinstance(self._pending_change, bool):
            raise ValueError(f"_pending_change must be a bool, got {self._pending_change!r}")
        if self._evidence is not None:
            raise ValueError("_evidence must be None between updates")
        self._open_start = check_int("_open_start", self._open_start, minimum=0)
        if self._open_start > self.t:
            raise ValueError(f"_open_start must be at most t = {self.t}")
        for name, minimum in (("segment_sizes", 1), ("changepoints", 0)):
            value = getattr(self, name)
            if not isinstance(value, list):
                raise ValueError(f"{name} must be a list of ints")
            setattr(self, name, [check_int(name, item, minimum=minimum) for item in value])
        if any(point > self.t for point in self.changepoints):
            raise ValueError(f"changepoints must be at most t = {self.t}")
        if len(self.memory) > len(self.segment_sizes):
            raise ValueError("the memory holds more segments than were closed (segment_sizes)")

    # ------------------------------------------------------------------ update
    def update_with_evidence(self, s: NaturalParams, evidence: NaturalParams) -> NaturalParams:
        """:meth:`update` with ``s``, except that a readout this datum triggers scores the
        segments against ``evidence`` (e.g. the first steps of a trial, part of ``s``) in place
        of ``s``; the belief still absorbs all of ``s``.

        Raises:
            ValueError: As :meth:`update`, for either argument.
        """
        self.model.check_params(evidence, "evidence")
        if evidence.batch_shape != ():
            raise ValueError(f"evidence must be unbatched, got batch shape {evidence.batch_shape}")
        self._evidence = evidence
        try:
            return self.update(s)
        finally:
            self._evidence = None

    def _update(self, s: NaturalParams) -> NaturalParams:
        detector = None
        split: int | None = None
        if self.detector is not None:
            detector = self.detector.snapshot()  # kept only if the whole update succeeds
            detector.update(s)
            run = int(detector.filtered_run_lengths[np.argmax(detector.filtered_weights)])
            start = self.t + 1 - run
            if self.t > 0 and start > self._open_start:
                split = min(max(start - self._open_start, 0), len(self._open))
        if self._pending_change and (self._open or len(self.memory)):
            split = len(self._open)  # an announced change closes the whole open segment
        if split is None:
            belief = self.belief + s
            check_posterior(self.model, belief)
            self._open.append(s)
            if detector is not None:
                self.detector = detector
            self._pending_change = False
            return belief
        closing, keeping = self._open[:split], [*self._open[split:], s]
        closed = _total(self.model, closing)
        memory = copy.deepcopy(self.memory)  # a refused segment leaves the rule unchanged
        if closed is not None:
            memory.add(closed, label=len(self.segment_sizes), time=None)
        evidence = _total(self.model, keeping)
        assert evidence is not None
        override = getattr(self, "_evidence", None)
        scored = evidence if override is None else _total(self.model, [*keeping[:-1], override])
        assert scored is not None
        readout, prior = _readout(self, memory, scored)
        belief = prior + evidence
        check_posterior(self.model, belief)
        # commit: nothing below can fail
        self.memory = memory
        if closed is not None:
            self.segment_sizes.append(len(closing))
        self._open = keeping
        self._open_start = self.t + 1 - len(keeping)
        if detector is not None:
            self.detector = detector
            if not self._pending_change:
                self.changepoints.append(self._open_start)
        self._pending_change = False
        self._record(readout)
        return belief

    def preview(self, s: NaturalParams) -> tuple[ReadoutResult | None, NaturalParams]:
        """The readout and belief a change whose new segment so far is ``s`` would give,
        with the open segment closed (``None`` and the base prior plus ``s`` for an empty
        memory); changes nothing (the in-trial readout of
        :class:`~bam_rl.agents.mppi.MPPIAgent` plans with it).

        Raises:
            ValueError: For statistics of another family or a batched datum.
        """
        self.model.check_params(s, "s")
        if s.batch_shape != ():
            raise ValueError(f"s must be a single datum (batch shape ()), got {s.batch_shape}")
        memory = copy.deepcopy(self.memory)
        closed = _total(self.model, self._open)
        if closed is not None:
            memory.add(closed, time=None)
        readout, prior = _readout(self, memory, s)
        return readout, prior + s

    # ------------------------------------------------------------------- state
    def reset(self) -> None:
        """An announced change: the next datum closes the open segment and selects a readout
        over the closed ones; until then the belief is the base prior."""
        super().reset()
        self._pending_change = True
        self.changepoints = []
        if self.detector is not None:
            self.detector.reset()
        self._open_start = 0

    def clear_memory(self) -> None:
        """Forgets every closed segment and the open one."""
        super().clear_memory()
        self._open = []
        self.segment_sizes = []

    @property
    def open_segment(self) -> NaturalParams | None:
        """Summed statistics of the open segment (``None`` before any datum)."""
        return _total(self.model, self._open)

    @property
    def n_open(self) -> int:
        """Data in the open segment."""
        return len(self._open)

    def __repr__(self) -> str:
        hazard = None if self.detector is None else self.detector.hazard
        return (
            f"SegmentBAM({self.model!r}, lam={self.lam:g}, method={self.method!r}, "
            f"hazard={hazard!r}, capacity={self.memory.capacity!r})"
        )


def _total(model: ConjugateFamily, data: list[NaturalParams]) -> NaturalParams | None:
    """The summed statistics of ``data`` (a segment), ``None`` for none."""
    if not data:
        return None
    total = data[0]
    for s in data[1:]:
        total = total + s
    return total


def _readout(
    rule: SegmentBAM, memory: Memory, evidence: NaturalParams
) -> tuple[ReadoutResult | None, NaturalParams]:
    """Readout over ``memory``'s segments against ``evidence``: the result (``None`` for an
    empty memory) and the prior ``η(W)``."""
    if len(memory) == 0:
        return None, rule.model.prior
    result = select(
        rule.model, memory, evidence, lam=rule.lam, method=rule.method, **rule.select_options
    )
    return result, memory.weighted_sum(result.weights, base=rule.model.prior)
