"""Bandit agents (paper §4.3, App. D.3–D.4): UCB, Thompson sampling with belief rules, UCBAM.

All three act on ``bam_rl/SwitchingBandit-v0``, ``bam_rl/SwitchingBandit50-v0`` and
``bam_rl/PiecewiseBandit-v0`` (or any environment whose actions are ``Discrete(n_arms)`` and
whose rewards are real numbers; the observation is ignored beyond a finiteness check).

A reward becomes the sufficient statistics of one datum of the arm's conjugate model through
:func:`reward_statistics` (Gaussian rewards for :class:`NormalKnownVariance` and
:class:`NormalGamma`, Bernoulli rewards 0/1 for :class:`BetaBinomial`, counts for
:class:`GammaPoisson`).

Episodes: ``reset`` starts the agent afresh for the new episode in each rule's own episodic
sense — UCB's counts are cleared, every arm's rule is ``reset()`` (recursive, forgetting and
BOCD beliefs return to the prior; BAM keeps its memory), UCBAM's beliefs return to the prior
and ``known`` to ``False`` while its per-arm memories are kept.

:class:`UCBAM` lives in :mod:`bam_rl.agents.ucbam`; the helpers both modules use (rewards as
statistics, UCB's counts) live in :mod:`bam_rl.agents.arms`, and the closed-form Gaussian readout in
the core, :mod:`bam_rl.readout.greedy`. This module holds UCB and Thompson sampling.
"""

from __future__ import annotations

import copy
import itertools
import math
import operator
from typing import Any

import numpy as np

from bam_rl import hyperparams
from bam_rl.beliefs import (
    RULES,
    BeliefRule,
    RecursiveBayes,
    make_rule,
)
from bam_rl.beliefs.rules import BELIEF_WRITES, proves_normal_datum
from bam_rl.checks import all_finite, check_int, check_memory, check_size
from bam_rl.families import (
    BetaBinomial,
    NaturalParams,
    NormalKnownVariance,
)
from bam_rl.readout.greedy import IdentityCache

from .arms import (
    UCBStatistics,
    check_reward_model,
    expected_reward,
    gaussian_model,
    reward_statistics,
)
from .base import BanditAgent, Transition, beta_draws, check_arm, check_observation

__all__ = [
    "RULES",
    "UCB",
    "ThompsonSampling",
]


#: Per noise variance σ²: ``½ · 1 · log(2πσ²)``, the float64 ``model.stats`` computes, as a
#: Python float (the same number; the subtraction below is the same IEEE operation on it).
_LOG_NORMALISERS: dict[float, float] = {}


def gaussian_reward_statistics(model: NormalKnownVariance, reward: float) -> NaturalParams:
    """``reward_statistics(model, reward)`` for one reward of a :class:`NormalKnownVariance`
    model (a Python float, as :meth:`BanditAgent.observe` passes it), bit for bit: the
    operations of ``model.stats`` on one observation ``y`` (``(0 + y) / σ²`` — its sum of
    one value turns −0.0 into 0.0 —, ``1 / σ²`` and ``−y² / (2σ²) − ½ · 1 · log(2πσ²)``, in
    that order, on float64 scalars) without the array checks and reductions of the general
    ``stats`` (which had cost a sixth of a ``thompson-bam`` step). Statistics that overflow
    take ``reward_statistics``, which refuses them."""
    found = _gaussian_datum(model, reward)
    return reward_statistics(model, reward) if found is None else found[0]


def _gaussian_datum(
    model: NormalKnownVariance, reward: float
) -> tuple[NaturalParams, float, float] | None:
    """:func:`gaussian_reward_statistics`' statistics with their ``precision_mean`` and
    ``precision`` as Python floats — float64 0-d arrays, all three finite — or ``None`` where
    they overflow (the caller then takes ``reward_statistics``, which refuses them)."""
    noise = model.noise_var
    precision_mean = (0.0 + reward) / noise
    precision = 1.0 / noise
    log_norm = _LOG_NORMALISERS.get(noise)
    if log_norm is None:
        if len(_LOG_NORMALISERS) >= 64:
            _LOG_NORMALISERS.clear()
        log_norm = _LOG_NORMALISERS[noise] = float(0.5 * 1.0 * np.log(2.0 * np.pi * noise))
    log_h = -(reward * reward) / (2.0 * noise) - log_norm
    if not (math.isfinite(precision_mean) and math.isfinite(precision) and math.isfinite(log_h)):
        return None
    s = NaturalParams._trusted(
        model,
        {"precision_mean": np.asarray(precision_mean), "precision": np.asarray(precision)},
        np.asarray(log_h),
        (),
    )
    return s, precision_mean, precision


# ------------------------------------------------------------------------------- UCB
class UCB(BanditAgent):
    """Upper confidence bound with confidence level ``f(t) = 1 + t log² t`` (App. D.3).

    ``index_i = μ̂_i + sqrt(2 log f(t) / N_i)`` with ``μ̂_i`` the empirical mean and ``N_i``
    the pull count of arm ``i`` and ``t`` the total number of pulls; arms never pulled come
    first (lowest index first); ties of the index go to the lowest index, so the agent is
    deterministic (it still owns a seeded :attr:`rng`).

    Args:
        n_arms: Number of arms.
        seed: Seed of :attr:`rng` (unused by UCB's choices).

    Attributes:
        counts: Pulls per arm (float array).
        means: Empirical mean reward per arm.
    """

    def __init__(self, n_arms: int, seed: int | None = None):
        super().__init__(seed)
        self.n_arms = check_size("n_arms", n_arms, 32)  # UCBStatistics: 24 bytes an arm
        self.stats = UCBStatistics(self.n_arms)

    def _check_restored(self) -> None:
        """An arm count the constructor takes and UCB statistics of as many arms."""
        super()._check_restored()
        self.n_arms = check_int("n_arms", self.n_arms)
        if not isinstance(self.stats, UCBStatistics) or self.stats.n_arms != self.n_arms:
            raise ValueError(f"stats must be UCB statistics of {self.n_arms} arms")

    @property
    def counts(self) -> np.ndarray:
        return self.stats.counts.copy()

    @property
    def means(self) -> np.ndarray:
        return self.stats.means.copy()

    @property
    def t(self) -> int:
        """Total number of pulls observed in this episode."""
        return self.stats.t

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        """Starts an episode: clears the counts and means."""
        self.stats.clear()

    def act(self, observation: Any) -> int:
        """The arm with the highest upper confidence bound (an unpulled arm first)."""
        check_observation(observation)
        return self.stats.choose()

    def _observe(self, step: Transition) -> None:
        """Adds the reward to the pulled arm's statistics."""
        self.stats.update(step.action, step.reward)

    def summary(self) -> dict[str, float]:
        return {"t": float(self.stats.t)}

    def __repr__(self) -> str:
        return f"UCB(n_arms={self.n_arms}, seed={self.seed!r})"


# -------------------------------------------------------------------- Thompson sampling
#: The native float64 dtype (a float64 belief's fields carry this very object).
_FLOAT64 = np.dtype(np.float64)

#: A rule's current belief (``rule.belief``, what the base ``prior_for_next`` returns).
_BELIEF = operator.attrgetter("belief")

#: Per Thompson agent with Gaussian per-arm rules: the beliefs its draw parameters were
#: computed from, those means and standard deviations (see ``_gaussian_draw_params``), and
#: the rules whose classes were last listed, with those classes.
_GAUSSIAN_DRAWS = IdentityCache()


class ThompsonSampling(BanditAgent):
    """Thompson sampling with one belief rule per arm.

    Each step draws θ_i for every arm from its rule (``rule.sample(rng)``, the belief the rule
    would use as the prior for the next datum — for BOCD a run length from the run-length
    posterior, then θ from that segment, as in Mellor & Shapiro 2013) and pulls the arm with
    the largest draw (ties: lowest index). The pulled arm's rule alone absorbs the reward's
    statistics (:func:`reward_statistics`).

    Per-arm rules update only when their arm is pulled, so exponential forgetting flattens an
    arm's belief once per *pull* of that arm, not once per time step, and BOCD's hazard is
    per pull; an arm left alone keeps its belief. (A per-time-step variant would flatten
    every arm each step; we keep the rule interface, which counts data.)

    Fast path: with :class:`RecursiveBayes` and a :class:`BetaBinomial` or
    :class:`NormalKnownVariance` model the natural parameters of all arms are kept in numpy
    arrays and updated in closed form with the same floating-point operations the rule uses
    (``η ← η + s``), and θ is drawn with one vectorised call that consumes the generator
    exactly like per-arm calls — choices are bit-identical to per-arm rules (tested); the
    beliefs carry no base measure ``log h`` (it does not affect θ).

    Args:
        n_arms: Number of arms.
        rule: A belief rule (:mod:`bam_rl.beliefs`); it is copied per arm (``copy.deepcopy``).
        seed: Seed of :attr:`rng`.

    Raises:
        ValueError: For a non-rule, a model without a reward mapping, or a bad ``n_arms``.
    """

    def __init__(self, n_arms: int, rule: BeliefRule, seed: int | None = None):
        super().__init__(seed)
        self.n_arms = check_int("n_arms", n_arms)
        if not isinstance(rule, BeliefRule):
            raise ValueError(f"rule must be a belief rule from bam_rl.beliefs, got {rule!r}")
        check_reward_model(rule.model)
        self.model = rule.model
        self.fast = type(rule) is RecursiveBayes and type(rule.model) in (
            BetaBinomial,
            NormalKnownVariance,
        )
        # per arm: the fast path's belief fields, else a copy of the rule (a fresh rule's copy
        # measured at most 3.0 KB, BOCD's)
        check_memory(f"n_arms = {self.n_arms}", self.n_arms * (64 if self.fast else 4096))
        if self.fast:
            self.rule_name = "RecursiveBayes"
            self.rules: list[BeliefRule] = []
            self._fields = {
                name: np.full(self.n_arms, float(value))
                for name, value in rule.belief.fields.items()
            }
            self._refresh_all()
        else:
            self.rule_name = type(rule).__name__
            self.rules = [copy.deepcopy(rule) for _ in range(self.n_arms)]

    def _check_restored(self) -> None:
        """A restored agent holds what the constructor builds: a reward model, and either the
        fast path's finite, proper per-arm fields or one belief rule of its kind per arm (a
        rule short, an arm would never be pulled)."""
        super()._check_restored()
        self.n_arms = check_int("n_arms", self.n_arms)
        check_reward_model(self.model)
        if not isinstance(self.fast, bool) or not isinstance(self.rules, list):
            raise ValueError("fast must be a bool and rules a list")
        if self.fast:
            if self.rules or self.rule_name != "RecursiveBayes":
                raise ValueError("the fast path holds no rules (recursive Bayes in arrays)")
            if type(self.model) not in (BetaBinomial, NormalKnownVariance):
                raise ValueError(f"the fast path has no arrays for {self.model!r}")
            fields = self._fields
            if not isinstance(fields, dict) or set(fields) != set(self.model.field_shapes):
                raise ValueError(f"_fields must hold {sorted(self.model.field_shapes)}")
            for name, value in fields.items():
                if (
                    not isinstance(value, np.ndarray)
                    or value.dtype != np.float64
                    or value.shape != (self.n_arms,)
                    or not all_finite(value)
                ):
                    raise ValueError(
                        f"_fields[{name!r}] must be a finite float64 array of shape "
                        f"({self.n_arms},)"
                    )
            self.model._check_belief(fields)
            self._refresh_all()
            return
        if len(self.rules) != self.n_arms:
            raise ValueError(
                f"rules must hold one belief rule per arm (n_arms = {self.n_arms}), got "
                f"{len(self.rules)}"
            )
        for rule in self.rules:
            if not isinstance(rule, BeliefRule) or type(rule).__name__ != self.rule_name:
                raise ValueError(f"rules must all be {self.rule_name} rules")
            self.model.check_compatible(rule.model, "rules")

    # -------------------------------------------------------------- factories
    @classmethod
    def gaussian(
        cls,
        n_arms: int,
        rule: str = "recursive",
        *,
        noise_std: float = hyperparams.BANDIT_NOISE_STD,
        prior_mean: float = 0.5,
        prior_var: float = 0.25,
        seed: int | None = None,
        **rule_options: Any,
    ) -> ThompsonSampling:
        """Gaussian arms with known noise (the paper's switching bandit, σ = 0.25).

        The model is ``NormalKnownVariance(prior_mean, prior_var, noise_std²)``. The paper
        gives no prior; the defaults N(0.5, 0.5²) cover the arm values' range [0, 1].

        Args:
            n_arms: Number of arms.
            rule: A name of :data:`RULES`.
            noise_std: Reward noise standard deviation (known).
            prior_mean: Prior mean of every arm's value.
            prior_var: Prior variance of every arm's value.
            seed: Seed of the agent's generator.
            **rule_options: Passed to :func:`make_rule` (``forgetting=0.8``,
                ``hazard=1/100``, ``lam=0.0``, ``method="greedy"``; the registry's
                ``thompson-bocd`` passes the bandit experiment's 0.016).
        """
        model = gaussian_model(noise_std, prior_mean, prior_var)
        return cls(n_arms, make_rule(model, rule, **rule_options), seed=seed)

    @classmethod
    def bernoulli(
        cls,
        n_arms: int,
        rule: str = "recursive",
        *,
        prior_alpha: float = 1.0,
        prior_beta: float = 1.0,
        seed: int | None = None,
        **rule_options: Any,
    ) -> ThompsonSampling:
        """Bernoulli arms (rewards 0/1) with a ``Beta(prior_alpha, prior_beta)`` prior.

        Args:
            n_arms: Number of arms.
            rule: A name of :data:`RULES`.
            prior_alpha: Prior pseudo-successes.
            prior_beta: Prior pseudo-failures.
            seed: Seed of the agent's generator.
            **rule_options: Passed to :func:`make_rule`.
        """
        model = BetaBinomial(alpha=prior_alpha, beta=prior_beta)
        return cls(n_arms, make_rule(model, rule, **rule_options), seed=seed)

    # -------------------------------------------------------------- fast path
    def _refresh(self, arm: int) -> None:
        """Recomputes the sampling parameters of one arm from its natural parameters."""
        if isinstance(self.model, NormalKnownVariance):
            h1, h2 = self._fields["precision_mean"][arm], self._fields["precision"][arm]
            self._loc[arm] = h1 / h2  # model.mean
            self._scale[arm] = math.sqrt(1.0 / h2)  # sqrt(model.variance)

    def _refresh_all(self) -> None:
        if isinstance(self.model, NormalKnownVariance):
            self._loc = np.zeros(self.n_arms)
            self._scale = np.zeros(self.n_arms)
            for arm in range(self.n_arms):
                self._refresh(arm)

    # -------------------------------------------------------------- protocol
    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        """Starts an episode: every arm's rule is ``reset()`` (BAM keeps its memory)."""
        if self.fast:
            for name, value in self.model.prior.fields.items():
                self._fields[name][:] = float(value)
            self._refresh_all()
        else:
            for rule in self.rules:
                rule.reset()

    def sample_arms(self) -> np.ndarray:
        """One Thompson draw of θ for every arm (consumes :attr:`rng`)."""
        if self.fast:
            if isinstance(self.model, NormalKnownVariance):
                return self.rng.normal(self._loc, self._scale)
            return beta_draws(self.rng, self._fields["alpha"], self._fields["beta"])
        if type(self.model) is NormalKnownVariance:
            params = self._gaussian_draw_params()
            if params is not None:
                return self.rng.normal(*params)
        rng = self.rng
        return np.array([expected_reward(rule.sample(rng)) for rule in self.rules])

    def _gaussian_draw_params(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Every arm's ``(mean, std)`` of θ under ``rule.prior_for_next()``, for one vectorised
        draw that consumes the generator exactly like the per-arm ``rule.sample`` calls (the
        same mean and square root of the variance, so the same draws); ``None`` when a rule
        draws its own way (overrides ``sample``).

        Kept between steps per belief object (beliefs are replaced, never changed in place, on
        update), so only the pulled arm's parameters are recomputed; the cache lives outside
        the agent and is never saved. While no rule's belief was assigned since the last pass
        (``BELIEF_WRITES``, for rules whose ``prior_for_next`` is their belief) the pass is
        skipped: :meth:`_observe` keeps the pulled arm's parameters in step itself. (Beliefs
        are read as immutable values, as everywhere in bam-rl: a belief written straight into
        a rule's ``__dict__``, or a field array changed in place, is not seen by the skip.)
        """
        writes = BELIEF_WRITES.writes  # first: an assignment from here on is seen next time
        cached = _GAUSSIAN_DRAWS.get(self)
        rules = self.rules
        if cached is None or len(cached[0]) != self.n_arms:
            cached = (
                [None] * self.n_arms,
                np.zeros(self.n_arms),
                np.zeros(self.n_arms),
                [],
                [],
                [-1],
            )
            _GAUSSIAN_DRAWS.set(self, cached)
        beliefs, loc, scale, seen_rules, kinds, synced = cached
        if len(seen_rules) != len(rules) or any(map(operator.is_not, rules, seen_rules)):
            seen_rules[:] = rules  # the classes of the rules, found again when a rule is replaced
            kinds[:] = {type(rule) for rule in rules}
            synced[0] = -1
        custom_prior = False
        numbered = True
        for kind in kinds:  # their methods are read on every call (they may be patched)
            if kind.sample is not BeliefRule.sample:
                return None
            custom_prior = custom_prior or kind.prior_for_next is not BeliefRule.prior_for_next
            # numbered: every assignment of ``belief`` goes through BELIEF_WRITES (a class
            # whose __setattr__ writes __dict__ itself would bypass it)
            numbered = (
                numbered
                and getattr(kind, "belief", None) is BELIEF_WRITES
                and kind.__setattr__ is object.__setattr__
            )
        if custom_prior:
            current = [rule.prior_for_next() for rule in rules]
        else:  # the base prior_for_next: the rule's belief
            if numbered and synced[0] == writes:
                return loc, scale  # no belief assigned since the last pass
            current = [*map(_BELIEF, rules)]
        if len(current) != len(beliefs):
            changed: Any = range(len(current))
        else:  # the arms whose belief object was replaced (usually the one pulled)
            replaced = map(operator.is_not, current, beliefs)
            changed = itertools.compress(range(len(current)), replaced)
        model = self.model
        for arm in changed:
            belief = current[arm]
            moments = _float_moments(model, belief)
            if moments is None:
                loc[arm] = model.mean(belief)
                scale[arm] = np.sqrt(model.variance(belief))
            else:
                loc[arm], scale[arm] = moments
            beliefs[arm] = belief
        synced[0] = writes if numbered and not custom_prior else -1
        return loc, scale

    def _keep_draw_params(self, arm: int, writes: int) -> None:
        """After the rule of ``arm`` absorbed a datum: when the kept draw parameters were in step
        with every rule's belief at ``writes`` (the number of the last assignment before the
        update) and the update was the one assignment since, recomputes that arm's parameters
        from its new belief and keeps the cache in step (else the next draw passes over every
        arm, as it does after any other assignment)."""
        cached = _GAUSSIAN_DRAWS.get(self)
        if cached is None or cached[5][0] != writes or BELIEF_WRITES.writes != writes + 1:
            return
        beliefs, loc, scale, seen_rules, _, synced = cached
        rule = self.rules[arm]
        if arm >= len(seen_rules) or seen_rules[arm] is not rule:
            return
        belief = rule.belief
        moments = _float_moments(self.model, belief)
        if moments is None:  # the next draw's pass computes them (and raises what it raises)
            return
        loc[arm], scale[arm] = moments
        beliefs[arm] = belief
        synced[0] = writes + 1

    def act(self, observation: Any) -> int:
        """The arm with the largest Thompson draw."""
        check_observation(observation)
        return int(np.argmax(self.sample_arms()))

    def _observe(self, step: Transition) -> None:
        """Updates the pulled arm's rule with the reward's statistics.

        Raises:
            ValueError: For a reward the model cannot take (e.g. not 0/1 for Bernoulli arms).
        """
        arm, reward = step.action, step.reward
        if not self.fast:
            model = self.model
            if type(model) is NormalKnownVariance:
                rule = self.rules[arm]
                found = _gaussian_datum(model, reward)
                if found is None:
                    rule.update(reward_statistics(model, reward))  # refuses the overflow
                    return
                s, precision_mean, precision = found
                writes = BELIEF_WRITES.writes
                if (  # the statistics built here are what update checks: only the datum's
                    type(rule).update is BeliefRule.update  # possibility is left to prove
                    and rule.model is model
                    and proves_normal_datum(
                        model, precision_mean, precision, type(rule)._keeps_records
                    )
                ):
                    rule._absorb_proven(s)
                else:
                    rule.update(s)
                self._keep_draw_params(arm, writes)
            else:
                self.rules[arm].update(reward_statistics(model, reward))
            return
        value = reward
        fields = self._fields
        if isinstance(self.model, NormalKnownVariance):
            noise = self.model.noise_var
            eta = value / noise  # Σy / σ² of one observation
            if not math.isfinite(value * eta):  # y² / σ² overflows: the rule path refuses
                reward_statistics(self.model, reward)  # it (the same ValueError)
            precision_mean = float(fields["precision_mean"][arm]) + eta
            if not math.isfinite(precision_mean):
                raise ValueError(
                    f"reward {reward!r}: adding it to arm {arm}'s belief overflows float64; "
                    "the data are too large in magnitude for this family, rescale them"
                )
            fields["precision_mean"][arm] = precision_mean
            fields["precision"][arm] += 1.0 / noise  # n / σ² with n = 1
            self._refresh(arm)
        else:
            if value not in (0.0, 1.0):
                raise ValueError(
                    f"reward must be 0 or 1 for Bernoulli arms (BetaBinomial), got {reward!r}"
                )
            fields["alpha"][arm] += value
            fields["beta"][arm] += 1.0 - value

    # ---------------------------------------------------------------- beliefs
    def arm_belief(self, arm: int) -> NaturalParams:
        """The current belief (last posterior) of one arm."""
        arm = check_arm("arm", arm, self.n_arms)
        if self.fast:
            return NaturalParams(self.model, {k: v[arm] for k, v in self._fields.items()})
        return self.rules[arm].belief

    @property
    def means(self) -> np.ndarray:
        """Posterior mean of every arm's value (the rules' ``mean``)."""
        if self.fast:
            return np.asarray(self.model.mean(NaturalParams(self.model, self._fields)))
        return np.array([expected_reward(rule.mean) for rule in self.rules])

    def summary(self) -> dict[str, float]:
        """``n_memories`` (total stored data) for rules with a memory, else nothing."""
        memories = [
            memory for rule in self.rules if (memory := getattr(rule, "memory", None)) is not None
        ]
        if not memories:
            return {}
        return {"n_memories": float(sum(len(memory) for memory in memories))}

    def __repr__(self) -> str:
        return (
            f"ThompsonSampling(n_arms={self.n_arms}, rule={self.rule_name}"
            f"({self.model!r}), seed={self.seed!r})"
        )


def _float_moments(model: Any, belief: NaturalParams) -> tuple[float, float] | None:
    """``model.mean(belief)`` and ``sqrt(model.variance(belief))`` of a
    :class:`NormalKnownVariance` belief with float64 0-d fields and a positive precision: ``h1
    / h2`` and ``sqrt(1 / h2)`` on Python floats (the same IEEE operations, after the same
    check); ``None`` otherwise (the caller asks the model)."""
    fields = belief.fields
    h1, h2 = fields["precision_mean"], fields["precision"]
    if (
        type(model) is NormalKnownVariance
        and type(h1) is np.ndarray
        and type(h2) is np.ndarray
        and h1.dtype is _FLOAT64  # another float64 dtype (byte order): the model
        and h2.dtype is _FLOAT64
        and not (h1.ndim or h2.ndim)
    ):
        precision = float(h2)
        if precision > 0:
            return float(h1) / precision, math.sqrt(1.0 / precision)
    return None


# ------------------------------------------------------------------------ re-exports
#: Public names that live in :mod:`bam_rl.agents.ucbam`, importable from here as well (resolved on
#: first access: :mod:`bam_rl.agents.ucbam` imports this module's helpers).
