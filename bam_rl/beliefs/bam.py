"""The rules with a memory of past data: :class:`BAM` (a readout for every datum, paper
§2.1), :class:`BAMWithChangepoints` (a readout when BOCD signals a change, §4.2) and
:class:`EpisodicBAM` (a readout at an announced change, the episodic cart-pole's)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from bam_rl import hyperparams
from bam_rl.beliefs.rules import (
    BELIEF_WRITES,
    BeliefRule,
    check_possible_datum,
    check_posterior,
    check_restored_detector,
    warn_if_unbounded_growth,
)
from bam_rl.bocd import ChangepointDetector
from bam_rl.checks import as_float_array, check_int
from bam_rl.families.base import ConjugateFamily, NaturalParams
from bam_rl.memory import Memory
from bam_rl.readout import (
    MAX_EXHAUSTIVE_ITEMS,
    METHODS,
    ReadoutResult,
    check_select_options,
)
from bam_rl.readout.select import (
    one_point_posterior,
    one_point_select,
    readout_prior,
    select_checked,
)


class BAM(BeliefRule):
    """Bayes with Adaptive Memory: selects readout weights over past data for every datum.

    At time t: choose ``W`` against ``D_t`` (:func:`bam_rl.readout.select`), form the
    posterior ``η(W) + s_t``, then store ``D_t`` in memory.

    Args:
        model: The conjugate family.
        lam: Complexity-penalty strength ``λ >= 0`` (0 in most of the paper, 0.1 regularised).
        method: Readout selector, one of ``greedy``, ``parallel``, ``exhaustive``,
            ``continuous``.
        capacity: Optional memory bound (records merge when exceeded). ``None`` (the
            default, the paper's BAM) keeps every datum, so a step costs O(t) and a run
            O(t²): on the Binomial stream (Beta-Binomial, 15 trials, θ switching every 100
            steps) the greedy readout takes ~10 ms per step at 2,000 records, ~20 ms at
            4,000 and ~80 ms at 10⁴; a :class:`PerformanceWarning` is issued once when an
            unbounded memory passes :data:`UNBOUNDED_MEMORY_WARNING` (10⁴) records, a size
            the paper's experiments (at most 10⁴ data per rule) never exceed. A capacity
            keeps the cost flat — ~3 ms per step at 64 records, ~6–10 ms at 256 on the same
            stream, a bounded memory too — so pass one for runs of 10⁵ steps or more.
        **select_options: Passed to :func:`~bam_rl.readout.select` (e.g. ``q``).
    """

    def __init__(
        self,
        model: ConjugateFamily,
        lam: float = 0.0,
        method: str = "greedy",
        capacity: int | None = None,
        **select_options: Any,
    ):
        super().__init__(model)
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        lam_value = float(as_float_array("lam", lam)) if np.ndim(lam) == 0 else -1.0
        if lam_value < 0:
            raise ValueError(f"lam must be a finite number >= 0, got {lam!r}")
        self.memory = Memory(capacity=capacity)
        if method == "exhaustive" and (capacity is None or capacity > MAX_EXHAUSTIVE_ITEMS):
            raise ValueError(
                f"method='exhaustive' enumerates 2^m readouts and needs a capacity "
                f"of at most {MAX_EXHAUSTIVE_ITEMS}, got capacity={capacity!r}"
            )
        self.lam = lam_value
        self.method = method
        self.select_options = check_select_options(method, select_options)
        self.last_readout: ReadoutResult | None = None
        self.n_selections = 0

    _keeps_records = True  # every datum becomes a record the readout scores

    def _check_restored(self) -> None:
        """The rule's belief and step count (:class:`BeliefRule`), and its options as the
        constructor checks them."""
        super()._check_restored()
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        lam = float(as_float_array("lam", self.lam)) if np.ndim(self.lam) == 0 else -1.0
        if lam < 0:
            raise ValueError(f"lam must be a finite number >= 0, got {self.lam!r}")
        self.lam = lam
        capacity = self.memory.capacity
        if self.method == "exhaustive" and (capacity is None or capacity > MAX_EXHAUSTIVE_ITEMS):
            raise ValueError(
                f"method='exhaustive' needs a memory capacity of at most {MAX_EXHAUSTIVE_ITEMS}"
            )
        if not isinstance(self.select_options, dict):
            raise ValueError("select_options must be a dict")
        self.select_options = check_select_options(self.method, self.select_options)
        check_int("n_selections", self.n_selections, minimum=0)
        if self.memory.family is not None:
            self.model.check_compatible(self.memory.family, "memory")
            size = len(self.memory)
            records = {k: v[:size] for k, v in self.memory._fields.items()}
            # what update() checks of every datum before storing it
            check_possible_datum(self.model, records, "memory", finite_partition=True)

    def choose_readout(self, s: NaturalParams) -> tuple[ReadoutResult, NaturalParams]:
        """Chooses readout weights for ``s``; returns them with the BAM prior ``η(W)``.

        Changes nothing: the rule's update records the readout once the datum is stored.
        """
        found = self._one_point_readout(s)
        if found is not None:
            lazy, stats = found
            return lazy, readout_prior(self.memory, lazy.weights, self.model.prior, stats)
        return self._general_readout(s)

    def _one_point_readout(self, s: NaturalParams) -> tuple[ReadoutResult, NaturalParams] | None:
        """The readout and ``memory.stats`` when :func:`~bam_rl.readout.select.
        one_point_select` takes ``s`` (one-point Gaussian records at λ = 0), else ``None``."""
        model, memory = self._checked_memory()
        # lam, method and options were checked at construction (or restore), s by update
        return one_point_select(model, memory, s, self.lam, self.method, self.select_options)

    def _checked_memory(self) -> tuple[ConjugateFamily, Memory]:
        """``(model, memory)``, the memory's family checked against the model (a memory
        swapped in by hand)."""
        model, memory = self.model, self.memory
        if memory.family is not None:
            model.check_compatible(memory.family)
        return model, memory

    def _general_readout(self, s: NaturalParams) -> tuple[ReadoutResult, NaturalParams]:
        """:meth:`choose_readout` by :func:`~bam_rl.readout.select.select_checked`."""
        model, memory = self.model, self.memory
        result = select_checked(model, memory, s, self.lam, self.method, self.select_options)
        if len(memory) == 0:
            return result, model.prior
        return result, readout_prior(memory, result.weights, model.prior)

    def _record(self, readout: ReadoutResult | None) -> None:
        if readout is not None:
            self.last_readout = readout
            self.n_selections += 1

    def _update(self, s: NaturalParams) -> NaturalParams:
        # the common Gaussian case forms the posterior in one pass (unless a subclass chooses
        # its readouts otherwise)
        model, memory = self.model, self.memory
        plain = type(self).choose_readout is BAM.choose_readout
        found = None
        if plain:
            family = memory.family  # _checked_memory's check (the same family passes it)
            if family is not None and family is not model:
                model.check_compatible(family)
            options = self.select_options
            found = one_point_posterior(model, memory, s, self.lam, self.method, options)
        readout: ReadoutResult
        if found is not None:
            readout, belief = found  # readout_prior(memory, weights, prior, stats, s)
            # the model is a NormalKnownVariance (one_point_posterior's case): its class's
            # _check_belief tests the posterior's one finite precision for > 0
            proper = float(belief.fields["precision"]) > 0
            if not (proper and "_check_belief" not in vars(model)):
                check_posterior(model, belief)
        else:
            readout, prior = self._general_readout(s) if plain else self.choose_readout(s)
            belief = prior + s
            check_posterior(model, belief)
            memory = self.memory  # as a subclass's readout left it
        if type(memory).add is Memory.add:  # s passed update's checks (_update's contract)
            memory._add_checked(s, None, self.t)  # the last step that can refuse the datum
        else:
            memory.add(s, time=self.t)
        self._record(readout)
        self._warn_if_unbounded_growth()
        return belief

    def _warn_if_unbounded_growth(self) -> None:
        warn_if_unbounded_growth(
            self.memory,
            type(self).__name__,
            "O(records) (about 80 ms per step at 10^4 Beta-Binomial records)",
            stacklevel=4,
        )

    def reset(self) -> None:
        """Back to the base prior for a new episode; the memory is kept (that is the point)."""
        super().reset()
        self.last_readout = None

    def clear_memory(self) -> None:
        """Forgets every stored datum."""
        self.memory.clear()

    @property
    def weights(self) -> np.ndarray | None:
        return None if self.last_readout is None else self.last_readout.weights

    def __repr__(self) -> str:
        return f"BAM({self.model!r}, lam={self.lam:g}, method={self.method!r})"


#: BAM's beliefs are numbered (``rules._NumberedBelief``); set outside the class body, where
#: the type checkers read ``belief`` as the annotated attribute of ``BeliefRule.__init__``.
setattr(BAM, "belief", BELIEF_WRITES)  # noqa: B010


class BAMWithChangepoints(BAM):
    """BAM that re-selects readout weights only when BOCD signals a change (paper §4.2).

    Between signals it updates recursively from its current belief. A change is signalled
    when the start of the most probable segment containing ``D_t`` moves later than the
    start it had before, i.e. BOCD now prefers a run that began after the previous one; the
    first datum after :meth:`reset` (an announced change) selects too, when the memory holds
    data. Every datum is stored in memory either way. :attr:`n_selections` counts selections
    and :attr:`changepoints` the detected changes of the current episode.

    Args:
        model: The conjugate family.
        lam: Complexity penalty ``λ >= 0``.
        method: Readout selector.
        hazard: BOCD hazard in (0, 1) or a callable of run lengths.
        capacity: Optional memory bound.
        bocd_options: Extra keyword arguments for :class:`bam_rl.bocd.ChangepointDetector`.
        **select_options: Passed to :func:`~bam_rl.readout.select`.
    """

    def __init__(
        self,
        model: ConjugateFamily,
        lam: float = 0.0,
        method: str = "greedy",
        hazard: Any = hyperparams.BOCD_HAZARD,
        capacity: int | None = None,
        bocd_options: dict[str, Any] | None = None,
        **select_options: Any,
    ):
        super().__init__(model, lam=lam, method=method, capacity=capacity, **select_options)
        self.detector = ChangepointDetector(model, hazard, **(bocd_options or {}))
        self._segment_start = 0
        self.changepoints: list[int] = []

    def _check_restored(self) -> None:
        super()._check_restored()
        check_restored_detector(self)
        start = check_int("_segment_start", self._segment_start, minimum=0)
        if start > self.t or not isinstance(self.changepoints, list):
            raise ValueError("restored rule: its segment must start by its step count")

    def _update(self, s: NaturalParams) -> NaturalParams:
        # the detector is advanced on a copy, kept only when the whole update succeeds
        detector = copy.deepcopy(self.detector)  # families are immutable and shared
        detector.update(s)
        run = int(detector.filtered_run_lengths[np.argmax(detector.filtered_weights)])
        start = self.t + 1 - run
        changed = self.t > 0 and start > self._segment_start
        readout: ReadoutResult | None = None
        # a new episode (after reset) is an announced change: select if there is a memory
        if changed or (self.t == 0 and len(self.memory) > 0):
            readout, prior = self.choose_readout(s)
        elif self.t == 0:
            prior = self.model.prior
        else:
            prior = self.belief
        belief = prior + s
        check_posterior(self.model, belief)
        self.memory.add(s, time=self.t)  # the last step that can refuse the datum
        self._warn_if_unbounded_growth()
        self.detector = detector
        self._segment_start = start
        if changed:
            self.changepoints.append(self.t)
        self._record(readout)
        return belief

    def reset(self) -> None:
        """New episode: base prior, fresh detector, changepoints of this episode only; the
        memory is kept and the episode's first datum selects a readout over it."""
        super().reset()
        self.detector.reset()
        self._segment_start = 0
        self.changepoints = []

    def __repr__(self) -> str:
        return (
            f"BAMWithChangepoints({self.model!r}, lam={self.lam:g}, "
            f"method={self.method!r}, hazard={self.detector.hazard!r})"
        )


class EpisodicBAM(BAM):
    """BAM for announced changes (the paper's episodic setting, §4.2).

    The first datum after :meth:`reset` (an announced change) selects readout weights over
    the memory (when it holds data); later data of the episode update recursively. Every
    datum is stored in memory.
    """

    def _update(self, s: NaturalParams) -> NaturalParams:
        readout = None
        if self.t == 0 and len(self.memory) > 0:
            readout, prior = self.choose_readout(s)
        else:
            prior = self.belief
        belief = prior + s
        check_posterior(self.model, belief)
        self.memory.add(s, time=self.t)  # the last step that can refuse the datum
        self._record(readout)
        return belief
