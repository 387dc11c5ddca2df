"""Belief-update rules behind one interface (paper §2, §3, §4.1–4.2).

Every rule turns a stream of data statistics into beliefs over θ::

    rule = BAM(BetaBinomial(), lam=0.0)
    for k in counts:
        belief = rule.update(model.stats(successes=k, trials=15))
    rule.mean, rule.variance, rule.weights
    rule.reset()                                  # back to the base prior (episodic setting)

``update(s)`` returns the posterior after the datum ``D_t`` (which informs the estimate of
θ_t); ``belief`` is that posterior; ``mean``/``variance`` are the moments of θ_t (for BOCD the
run-length mixture, which is not itself a conjugate belief); ``weights`` are the readout
weights over past data where a rule has them. All rules validate that statistics come from
their model's family.
"""

from __future__ import annotations

import copy
import warnings
import weakref
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from bam_rl import hyperparams
from bam_rl.bocd import ChangepointDetector
from bam_rl.checks import as_float_array, check_finite_params, check_int, check_real
from bam_rl.families.base import ConjugateFamily, NaturalParams, Theta
from bam_rl.memory import Memory
from bam_rl.readout import (
    MAX_EXHAUSTIVE_ITEMS,
    METHODS,
    ReadoutResult,
    check_select_options,
    select,
)

#: Records an unbounded BAM memory may hold before :class:`BAM` warns (once) that every
#: step costs O(records); the paper's experiments stay below it (at most 10⁴ data per rule).
UNBOUNDED_MEMORY_WARNING = 10_000


class PerformanceWarning(UserWarning):
    """A default that keeps every datum makes each step slower than the last."""


def warn_if_unbounded_growth(memory: Memory, owner: str, cost: str, stacklevel: int = 1) -> None:
    """Warns once, as an unbounded ``memory`` passes :data:`UNBOUNDED_MEMORY_WARNING` records,
    that every later step of ``owner`` costs ``cost`` and keeps growing (see ``capacity``);
    ``stacklevel`` counts from the caller, as in :func:`warnings.warn`."""
    if memory.capacity is None and len(memory) == UNBOUNDED_MEMORY_WARNING + 1:
        warnings.warn(
            f"{owner}: the unbounded memory now holds more than {UNBOUNDED_MEMORY_WARNING} "
            f"records; each step costs {cost} and keeps growing. Pass capacity= (e.g. 256) "
            f"for long runs.",
            PerformanceWarning,
            stacklevel=stacklevel + 1,
        )


class BeliefRule(ABC):
    """Base class: a belief over θ updated one datum (batch of observations) at a time.

    Args:
        model: The conjugate family; its ``prior`` is the base prior.
    """

    def __init__(self, model: ConjugateFamily):
        if not isinstance(model, ConjugateFamily):
            raise ValueError(f"model must be a ConjugateFamily, got {type(model).__name__}")
        self.model = model
        self.belief: NaturalParams = model.prior
        self.t = 0

    def _check_restored(self) -> None:
        """A restored rule's belief must be a finite, unbatched belief of its family and its
        step count a whole number (subclasses check their own options too)."""
        self.model.check_params(self.belief)
        if self.belief.batch_shape != ():
            raise ValueError(f"belief must be unbatched, got batch shape {self.belief.batch_shape}")
        check_finite_params("belief", self.belief)
        self.model._check_belief(self.belief.fields)
        self.t = check_int("t", self.t, minimum=0)

    def update(self, s: NaturalParams) -> NaturalParams:
        """Absorbs the statistics of the newest datum and returns the posterior.

        Raises:
            ValueError: For statistics of another family, batched or non-finite statistics,
                or a datum the rule cannot absorb; a refused datum leaves the rule as it was.
        """
        self.model.check_params(s, "s")
        if s.batch_shape != ():
            raise ValueError(f"s must be a single datum (batch shape ()), got {s.batch_shape}")
        check_finite_params("s", s)
        self.belief = self._update(s)
        self.t += 1
        return self.belief

    @abstractmethod
    def _update(self, s: NaturalParams) -> NaturalParams:
        """Rule-specific update; ``s`` is already validated."""

    def reset(self) -> None:
        """Returns to the base prior (the start of a new episode)."""
        self.belief = self.model.prior
        self.t = 0

    @property
    def mean(self) -> Theta:
        """Posterior mean of θ_t."""
        return self.belief.mean

    @property
    def variance(self) -> Theta:
        """Posterior variance of θ_t (element-wise)."""
        return self.belief.variance

    @property
    def weights(self) -> np.ndarray | None:
        """Readout weights over past data used for the latest update, where meaningful."""
        return None

    def prior_for_next(self) -> NaturalParams:
        """The belief this rule would use as the prior for the next datum."""
        return self.belief

    def sample(self, rng: np.random.Generator) -> Theta:
        """Draws θ for the next datum (Thompson sampling) from :meth:`prior_for_next`."""
        return self.model.sample(self.prior_for_next(), rng)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r})"


class RecursiveBayes(BeliefRule):
    """Every past datum fully remembered: ``η_t = η0 + Σ_{j<=t} s_j``."""

    def _update(self, s: NaturalParams) -> NaturalParams:
        return self.belief + s


#: Per forgetting or power-prior rule: the statistics its last ``prior_for_next`` was built
#: from, the rule's alpha, and that prior. Statistics objects are replaced, never changed in
#: place, so the same object gives the same prior: a Thompson agent asks every arm for it on
#: every step, and only the pulled arm's changed. Kept outside the rule, so never saved.
_NEXT_PRIORS: weakref.WeakKeyDictionary[BeliefRule, tuple[NaturalParams, float, NaturalParams]] = (
    weakref.WeakKeyDictionary()
)


def _next_prior(
    rule: BeliefRule, past: NaturalParams, alpha: float, scale: bool = False
) -> NaturalParams:
    """``prior + past`` (``prior + alpha · past`` with ``scale``), reused while ``past`` is the
    same object and ``alpha`` the same number."""
    cached = _NEXT_PRIORS.get(rule)
    if cached is not None and cached[0] is past and cached[1] == alpha:
        return cached[2]
    prior = rule.model.prior + (alpha * past if scale else past)
    _NEXT_PRIORS[rule] = (past, alpha, prior)
    return prior


class ExponentialForgetting(BeliefRule):
    """Bayesian exponential forgetting with the paper's readout ``w_{t,j} = alpha^(t−1−j)``.

    The prior for ``D_t`` is ``η0 + S_t`` with the decayed statistics
    ``S_t = Σ_{j<t} alpha^(t−1−j) s_j``, kept by the recursion ``S_{t+1} = alpha·S_t + s_t``
    (the newest past datum has weight 1, older ones decay geometrically); the posterior after
    ``D_t`` is ``η0 + S_t + s_t``.

    Args:
        model: The conjugate family.
        alpha: Forgetting factor in [0, 1] (the paper uses 0.8); 1 is recursive Bayes.
    """

    def __init__(self, model: ConjugateFamily, alpha: float = hyperparams.FORGETTING):
        super().__init__(model)
        self.alpha = check_real("alpha", alpha, lower=0.0, upper=1.0)
        self._decayed = model.zeros()

    def _update(self, s: NaturalParams) -> NaturalParams:
        belief = self.model.prior + self._decayed + s
        self._decayed = self.alpha * self._decayed + s
        return belief

    def prior_for_next(self) -> NaturalParams:
        return _next_prior(self, self._decayed, self.alpha)

    def reset(self) -> None:
        super().reset()
        self._decayed = self.model.zeros()

    def __repr__(self) -> str:
        return f"ExponentialForgetting({self.model!r}, alpha={self.alpha:g})"


class PowerPrior(BeliefRule):
    """Power prior (Ibrahim et al.): every past datum tempered by the same ``alpha``.

    The posterior after ``D_t`` is ``η0 + alpha · Σ_{j<t} s_j + s_t``.

    Args:
        model: The conjugate family.
        alpha: Tempering exponent in [0, 1].
    """

    def __init__(self, model: ConjugateFamily, alpha: float = 0.5):
        super().__init__(model)
        self.alpha = check_real("alpha", alpha, lower=0.0, upper=1.0)
        self._past = model.zeros()

    def _update(self, s: NaturalParams) -> NaturalParams:
        belief = self.model.prior + self.alpha * self._past + s
        self._past = self._past + s
        return belief

    def prior_for_next(self) -> NaturalParams:
        return _next_prior(self, self._past, self.alpha, scale=True)

    def reset(self) -> None:
        super().reset()
        self._past = self.model.zeros()

    def __repr__(self) -> str:
        return f"PowerPrior({self.model!r}, alpha={self.alpha:g})"


def _check_restored_detector(rule: BeliefRule) -> None:
    """A restored BOCD rule's detector is a :class:`ChangepointDetector` of the rule's family
    (it checks its own run-length posterior when restored)."""
    detector = getattr(rule, "detector", None)
    if not isinstance(detector, ChangepointDetector):
        raise ValueError("the rule's detector must be a ChangepointDetector")
    rule.model.check_compatible(detector.model, "detector")


class BOCD(BeliefRule):
    """Bayesian online changepoint detection (Adams & MacKay, 2007) as a belief rule.

    ``belief`` is the posterior of the most probable segment containing ``D_t``;
    ``mean``/``variance`` are the moments of the run-length mixture (the filtered belief
    about θ_t). The detector is available as :attr:`detector`.

    Args:
        model: The conjugate family.
        hazard: Constant changepoint probability in (0, 1) or a callable of run lengths.
        **options: Passed to :class:`bam_rl.bocd.ChangepointDetector` (``prune_threshold``,
            default 1e-10, and ``max_run_length``, default 10⁴). A step costs O(live run
            lengths); on stationary data the threshold prunes nothing, so the default bound
            is what keeps it flat: ~36 µs per step at the start, ~1 ms once 10⁴ run lengths
            are live (Beta-Binomial), i.e. about two minutes for 10⁵ steps; with
            ``max_run_length=None`` it grows as O(t) (~8 ms per step by t = 4·10⁴).
    """

    def __init__(
        self, model: ConjugateFamily, hazard: Any = hyperparams.BOCD_HAZARD, **options: Any
    ):
        super().__init__(model)
        self.detector = ChangepointDetector(model, hazard, **options)

    def _check_restored(self) -> None:
        super()._check_restored()
        _check_restored_detector(self)

    def _update(self, s: NaturalParams) -> NaturalParams:
        self.detector.update(s)
        return self.detector.map_belief

    def sample(self, rng: np.random.Generator) -> Theta:
        """Draws a run length from the predictive run-length posterior (a fresh segment with
        the hazard's probability), then θ from that segment's belief (Mellor & Shapiro)."""
        index = self.detector.sample_index(rng)  # as rng.choice(n, p=...) draws it
        return self.model.sample(self.detector.belief_at(index), rng)

    def reset(self) -> None:
        super().reset()
        self.detector.reset()

    @property
    def mean(self) -> Theta:
        if self.t == 0:
            return self.model.prior.mean
        return self.detector.theta_moments("filtered")[0]

    @property
    def variance(self) -> Theta:
        if self.t == 0:
            return self.model.prior.variance
        return self.detector.theta_moments("filtered")[1]

    def __repr__(self) -> str:
        return f"BOCD({self.model!r}, hazard={self.detector.hazard!r})"


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

    def choose_readout(self, s: NaturalParams) -> tuple[ReadoutResult, NaturalParams]:
        """Chooses readout weights for ``s``; returns them with the BAM prior ``η(W)``.

        Changes nothing: the rule's update records the readout once the datum is stored.
        """
        result = select(
            self.model, self.memory, s, lam=self.lam, method=self.method, **self.select_options
        )
        if len(self.memory) == 0:
            return result, self.model.prior
        return result, self.memory.weighted_sum(result.weights, base=self.model.prior)

    def _record(self, readout: ReadoutResult | None) -> None:
        if readout is not None:
            self.last_readout = readout
            self.n_selections += 1

    def _update(self, s: NaturalParams) -> NaturalParams:
        readout, prior = self.choose_readout(s)
        belief = prior + s
        self.memory.add(s, time=self.t)  # the last step that can refuse the datum
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
        _check_restored_detector(self)
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


__all__ = [
    "BAM",
    "BOCD",
    "RULES",
    "UNBOUNDED_MEMORY_WARNING",
    "BAMWithChangepoints",
    "BeliefRule",
    "ExponentialForgetting",
    "PerformanceWarning",
    "PowerPrior",
    "RecursiveBayes",
    "make_rule",
    "warn_if_unbounded_growth",
]


#: Names accepted by :func:`make_rule`.
RULES = ("recursive", "forgetting", "bocd", "bam", "bam_bocd", "power")


def make_rule(
    model: ConjugateFamily,
    rule: str = "recursive",
    *,
    forgetting: float = hyperparams.FORGETTING,
    hazard: float = hyperparams.BOCD_HAZARD,
    lam: float = 0.0,
    method: str = "greedy",
    power: float = 0.5,
    capacity: int | None = None,
) -> BeliefRule:
    """Builds a belief rule by name (the one place rules are built by name).

    Defaults are the paper's (:mod:`bam_rl.hyperparams`): forgetting 0.8 and the BOCD hazard
    1/100 that every BOCD detector and rule defaults to (:data:`~bam_rl.hyperparams.BOCD_HAZARD`);
    the bandit experiment's 0.016 is chosen in the registry.

    Args:
        model: The conjugate family of one arm.
        rule: ``"recursive"`` (:class:`RecursiveBayes`), ``"forgetting"``
            (:class:`ExponentialForgetting`, factor ``forgetting``), ``"bocd"``
            (:class:`BOCD`, constant ``hazard``), ``"bam"`` (:class:`BAM`, ``lam``,
            ``method``), ``"bam_bocd"`` (:class:`BAMWithChangepoints`) or ``"power"``
            (:class:`PowerPrior`, exponent ``power``).
        forgetting: Exponential-forgetting factor (0.8 in the paper).
        hazard: BOCD hazard (default 1/100, as :class:`BOCD`'s).
        lam: BAM's complexity penalty.
        method: BAM's readout selector.
        power: Power-prior exponent.
        capacity: Memory bound of the BAM rules (``None``: unbounded, as in the paper).

    Raises:
        ValueError: For an unknown rule name (and the rules' own argument checks).
    """
    if rule == "recursive":
        return RecursiveBayes(model)
    if rule == "forgetting":
        return ExponentialForgetting(model, alpha=forgetting)
    if rule == "bocd":
        return BOCD(model, hazard=hazard)
    if rule == "bam":
        return BAM(model, lam=lam, method=method, capacity=capacity)
    if rule == "bam_bocd":
        return BAMWithChangepoints(model, lam=lam, method=method, hazard=hazard, capacity=capacity)
    if rule == "power":
        return PowerPrior(model, alpha=power)
    raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
