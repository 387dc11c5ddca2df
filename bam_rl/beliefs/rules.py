"""The belief rules without a memory: the base class :class:`BeliefRule` (one ``update`` per
datum), recursive Bayes, exponential forgetting, the power prior and BOCD (paper §2–§3)."""

from __future__ import annotations

import itertools
import math
import warnings
import weakref
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from bam_rl import hyperparams
from bam_rl.bocd import ChangepointDetector
from bam_rl.checks import all_finite, check_finite_params, check_int, check_real
from bam_rl.families.base import ConjugateFamily, Fields, NaturalParams, Theta
from bam_rl.families.beta_binomial import BetaBinomial
from bam_rl.families.normal import NormalKnownVariance
from bam_rl.memory import Memory

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


def check_possible_datum(
    model: ConjugateFamily, fields: Fields, name: str = "s", finite_partition: bool = False
) -> None:
    """Raises ``ValueError`` naming ``name`` unless the base prior plus the statistics
    ``fields`` (one datum, or records stacked along a first axis) is a proper belief of
    ``model``: a datum no data could give (e.g. a negative count, which makes a Beta(1, 1)
    prior Beta(−4, 2)) is refused, with the message of the changepoint detector's check.
    With ``finite_partition`` (a datum a memory keeps as a record, scored by the readout)
    the belief's log partition must be finite too."""
    prior = model.prior.fields
    total = {key: prior[key] + fields[key] for key in prior}
    try:
        model._check_belief(total)
    except ValueError as error:
        raise ValueError(
            f"{name}: an impossible datum: the base prior plus its statistics is no "
            f"distribution ({error})"
        ) from error
    if finite_partition:
        with np.errstate(over="ignore", invalid="ignore"):
            finite = all_finite(np.asarray(model.log_partition_fields(total)))
        if not finite:
            raise ValueError(
                f"{name}: the base prior plus its statistics overflows float64 (data too "
                "large in magnitude for the family; rescale them)"
            )


#: Largest Beta-Binomial pseudo-counts for which ``betaln`` (the family's log partition) is
#: finite for every pair in ``[_BETA_SAFE_LOW, _BETA_SAFE_HIGH]²`` (tested on a grid and at
#: random; outside it, e.g. at subnormal or very unequal huge counts, it can be ``inf`` or NaN).
_BETA_SAFE_LOW, _BETA_SAFE_HIGH = 1e-200, 1e50
_LOG_2PI = float(np.log(2.0 * np.pi))
_FLOAT64 = np.dtype(np.float64)  # the dtype of float64 arrays (another equal one: general path)
#: Instance attributes by which a family replaces the calls the datum checks make.
_CHECK_HOOKS = frozenset(("_check_belief", "log_partition_fields"))


def _normal_datum(prior: Fields, h1: float, h2: float, finite_partition: bool) -> bool:
    """:class:`NormalKnownVariance`: the belief check (``precision > 0``) and the log
    partition ``½ η₁² / η₂ − ½ log η₂ + ½ log 2π`` of the prior plus the datum, on Python
    floats (the same IEEE operations, in the same order, as on the family's 0-d arrays)."""
    eta1 = float(prior["precision_mean"]) + h1
    eta2 = float(prior["precision"]) + h2
    if not eta2 > 0:
        return False
    if not finite_partition:
        return True
    return math.isfinite(0.5 * eta1 * eta1 / eta2 - 0.5 * math.log(eta2) + 0.5 * _LOG_2PI)


def _beta_datum(prior: Fields, a: float, b: float, finite_partition: bool) -> bool:
    """:class:`BetaBinomial`: the belief check (``alpha, beta > 0``) and, for a kept record,
    pseudo-counts inside the box where ``betaln`` is known finite (outside it the caller's
    general check decides)."""
    alpha = float(prior["alpha"]) + a
    beta = float(prior["beta"]) + b
    if not (alpha > 0 and beta > 0):
        return False
    if not finite_partition:
        return True
    return _BETA_SAFE_LOW <= alpha <= _BETA_SAFE_HIGH and _BETA_SAFE_LOW <= beta <= _BETA_SAFE_HIGH


#: Per family class: its two scalar fields, in order, and the scalar form of its datum checks.
_SCALAR_DATA: dict[type, tuple[str, str, Any]] = {
    NormalKnownVariance: ("precision_mean", "precision", _normal_datum),
    BetaBinomial: ("alpha", "beta", _beta_datum),
}


def passes_datum_checks(model: ConjugateFamily, s: NaturalParams, finite_partition: bool) -> bool:
    """True when plain float comparisons prove that ``check_finite_params("s", s)`` and
    :func:`check_possible_datum` (with ``finite_partition``) both pass for the unbatched
    datum ``s`` of ``model``; ``False`` when they do not prove it (the caller then runs the
    general checks, which raise what they raise). An accept-only fast path for the datum of a
    bandit arm (Gaussian or Bernoulli) on every update: its conditions are the general
    checks' own, on Python floats, so it never accepts what they refuse (tested)."""
    spec = _SCALAR_DATA.get(type(model))
    if spec is None or not _CHECK_HOOKS.isdisjoint(vars(model)):
        return False
    first_name, second_name, check = spec
    fields = s.fields
    first, second, log_h = fields[first_name], fields[second_name], s.log_h
    if not (
        type(first) is np.ndarray
        and type(second) is np.ndarray
        and type(log_h) is np.ndarray
        and first.shape == second.shape == log_h.shape == ()
        and first.dtype is second.dtype is log_h.dtype is _FLOAT64
    ):
        return False
    a, b = float(first), float(second)
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(float(log_h))):
        return False
    return bool(check(model.prior.fields, a, b, finite_partition))


def proves_normal_datum(
    model: ConjugateFamily, precision_mean: float, precision: float, finite_partition: bool
) -> bool:
    """:func:`passes_datum_checks` for a datum whose form the caller built itself: float64 0-d
    arrays ``precision_mean``, ``precision`` and a ``log h``, all three finite (the bandit
    agents' :func:`~bam_rl.agents.bandits.gaussian_reward_statistics`), given as the two
    fields' Python floats. True when ``model`` is a :class:`NormalKnownVariance` keeping its
    class's checks and :func:`_normal_datum` proves the datum possible; else ``False`` (the
    caller then takes ``BeliefRule.update``, whose checks raise what they raise)."""
    if type(model) is not NormalKnownVariance or not _CHECK_HOOKS.isdisjoint(vars(model)):
        return False
    return _normal_datum(model.prior.fields, precision_mean, precision, finite_partition)


def check_posterior(model: ConjugateFamily, belief: NaturalParams, name: str = "s") -> None:
    """Raises ``ValueError`` naming ``name`` unless ``belief``, the posterior a rule would
    take after absorbing the datum ``name``, is a proper belief of ``model`` (checked before
    the rule changes anything, so a refused datum leaves it as it was)."""
    try:
        model._check_belief(belief.fields)
    except ValueError as error:
        raise ValueError(
            f"{name}: an impossible datum: the belief plus its statistics is no "
            f"distribution ({error})"
        ) from error


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

    #: Whether the rule keeps data as records of a memory that a readout scores (BAM and its
    #: relatives): their base prior plus each datum must then have a finite log partition.
    _keeps_records = False

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
                an impossible datum (the base prior plus ``s``, or the posterior, is no
                distribution of the family, :func:`check_possible_datum`) or a datum the
                rule cannot absorb otherwise; a refused datum leaves the rule as it was.
        """
        self.model.check_params(s, "s")
        if s.batch_shape != ():
            raise ValueError(f"s must be a single datum (batch shape ()), got {s.batch_shape}")
        keeps = type(self)._keeps_records
        if not passes_datum_checks(self.model, s, keeps):  # the general checks raise
            check_finite_params("s", s)
            check_possible_datum(self.model, s.fields, finite_partition=keeps)
        return self._absorb_proven(s)

    def _absorb_proven(self, s: NaturalParams) -> NaturalParams:
        """:meth:`update` for a datum the caller proved passes its checks (one unbatched,
        finite datum of this rule's family that is possible, :func:`proves_normal_datum`);
        only for rules that keep :meth:`update` as it is here."""
        self.belief = self._update(s)
        self.t += 1
        return self.belief

    @abstractmethod
    def _update(self, s: NaturalParams) -> NaturalParams:
        """Rule-specific update; ``s`` is already validated (a possible datum). It checks the
        posterior it computes (:func:`check_posterior`) before changing the rule."""

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


class _NumberedBelief:
    """The ``belief`` of the rules with a memory (:class:`~bam_rl.beliefs.BAM` and its
    subclasses): an ordinary instance attribute — read from the rule's ``__dict__`` as before
    (no ``__get__``) and saved, copied and restored with it — whose every assignment is
    numbered: :attr:`writes` is the number of the latest assignment of any such rule's belief.
    A value computed from those beliefs then stays valid while ``writes`` is unchanged (a
    Thompson agent's draw parameters: one comparison instead of reading every arm's belief on
    every step). Only a write into ``__dict__`` itself goes unnumbered. The memoryless rules
    keep a plain attribute: their updates take a few µs, of which the numbering's Python call
    (~0.2 µs) would be a visible part. Having no ``__get__`` (the read it would cost is what it
    saves), it makes ``rule.belief`` on a rule that holds none (deleted, or built without
    ``__init__``) return this descriptor rather than raise ``AttributeError``."""

    __slots__ = ("_numbers", "writes")

    def __init__(self) -> None:
        self._numbers = itertools.count(1)
        self.writes = 0

    def __set__(self, rule: BeliefRule, value: NaturalParams) -> None:
        rule.__dict__["belief"] = value
        self.writes = next(self._numbers)

    def __delete__(self, rule: BeliefRule) -> None:
        if rule.__dict__.pop("belief", None) is None:
            raise AttributeError(f"{type(rule).__name__!r} object has no attribute 'belief'")
        self.writes = next(self._numbers)


#: The numbered ``belief`` of the rules with a memory (:class:`_NumberedBelief`).
BELIEF_WRITES = _NumberedBelief()


class RecursiveBayes(BeliefRule):
    """Every past datum fully remembered: ``η_t = η0 + Σ_{j<=t} s_j``."""

    def _update(self, s: NaturalParams) -> NaturalParams:
        belief = self.belief + s
        check_posterior(self.model, belief)
        return belief


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


def _check_restored_past(rule: BeliefRule, name: str) -> None:
    """A restored forgetting or power-prior rule's past statistics ``name`` are finite,
    unbatched statistics of its family, and its prior for the next datum is a proper belief
    (what its updates keep so)."""
    past = getattr(rule, name, None)
    if not isinstance(past, NaturalParams):
        raise ValueError(f"{name} must be a NaturalParams, got {type(past).__name__}")
    rule.model.check_params(past, name)
    if past.batch_shape != ():
        raise ValueError(f"{name} must be unbatched, got batch shape {past.batch_shape}")
    check_finite_params(name, past)
    check_posterior(rule.model, rule.prior_for_next(), name)


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

    def _check_restored(self) -> None:
        super()._check_restored()
        self.alpha = check_real("alpha", self.alpha, lower=0.0, upper=1.0)
        _check_restored_past(self, "_decayed")

    def _update(self, s: NaturalParams) -> NaturalParams:
        belief = self.model.prior + self._decayed + s
        check_posterior(self.model, belief)
        # the next prior η0 + alpha·S_t + s_t = alpha·belief + (1 − alpha)·(η0 + s_t) is
        # then proper too: natural parameter spaces are convex
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

    def _check_restored(self) -> None:
        super()._check_restored()
        self.alpha = check_real("alpha", self.alpha, lower=0.0, upper=1.0)
        _check_restored_past(self, "_past")

    def _update(self, s: NaturalParams) -> NaturalParams:
        belief = self.model.prior + self.alpha * self._past + s
        check_posterior(self.model, belief)
        # the next prior η0 + alpha·(past + s) = alpha·belief + (1 − alpha)·(η0 + alpha·past)
        # is then proper too, the previous one being so (natural parameter spaces are convex)
        self._past = self._past + s
        return belief

    def prior_for_next(self) -> NaturalParams:
        return _next_prior(self, self._past, self.alpha, scale=True)

    def reset(self) -> None:
        super().reset()
        self._past = self.model.zeros()

    def __repr__(self) -> str:
        return f"PowerPrior({self.model!r}, alpha={self.alpha:g})"


def check_restored_detector(rule: BeliefRule) -> None:
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
            is what keeps it flat: ~30 µs per step at 10³ live run lengths, ~0.22 ms once
            10⁴ are live (Bernoulli data), i.e. about 20 s for 10⁵ steps; with
            ``max_run_length=None`` it grows as O(t).
    """

    def __init__(
        self, model: ConjugateFamily, hazard: Any = hyperparams.BOCD_HAZARD, **options: Any
    ):
        super().__init__(model)
        self.detector = ChangepointDetector(model, hazard, **options)

    def _check_restored(self) -> None:
        super()._check_restored()
        check_restored_detector(self)

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
