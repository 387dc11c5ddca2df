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
"""

from __future__ import annotations

import bisect
import copy
import math
import numbers
from typing import Any

import numpy as np

from agents.base import BaseAgent, check_arm, check_finite_scalar, check_observation
from bam_rl.beliefs import (
    BAM,
    BOCD,
    BAMWithChangepoints,
    BeliefRule,
    ExponentialForgetting,
    PowerPrior,
    RecursiveBayes,
)
from bam_rl.families import (
    BetaBinomial,
    ConjugateFamily,
    GammaPoisson,
    NaturalParams,
    NormalGamma,
    NormalKnownVariance,
)
from bam_rl.memory import Memory
from bam_rl.readout import select

__all__ = [
    "RULES",
    "UCB",
    "UCBAM",
    "ThompsonSampling",
    "gaussian_greedy_readout",
    "make_rule",
    "reward_statistics",
    "ucb_confidence",
]

#: Names accepted by :func:`make_rule` and the :class:`ThompsonSampling` factories.
RULES = ("recursive", "forgetting", "bocd", "bam", "bam_bocd", "power")

#: The paper's hyperparameters (App. D.3): forgetting factor and BOCD hazard.
PAPER_FORGETTING = 0.8
PAPER_HAZARD = 0.016


# --------------------------------------------------------------------------- helpers
def _check_n_arms(n_arms: Any) -> int:
    if (isinstance(n_arms, (bool, np.bool_)) or not isinstance(n_arms, numbers.Integral)
            or n_arms < 1):
        raise ValueError(f"n_arms must be a positive integer, got {n_arms!r}")
    return int(n_arms)


def ucb_confidence(t: int) -> float:
    """``log f(t)`` for the confidence level ``f(t) = 1 + t · log²(t)`` (App. D.3)."""
    log_t = math.log(t)
    return math.log(1.0 + t * log_t * log_t)


def reward_statistics(model: ConjugateFamily, reward: float) -> NaturalParams:
    """Sufficient statistics of one reward as one datum of ``model``.

    Args:
        model: :class:`NormalKnownVariance` or :class:`NormalGamma` (real rewards),
            :class:`BetaBinomial` (Bernoulli rewards, exactly 0 or 1: one trial) or
            :class:`GammaPoisson` (count rewards).
        reward: The reward of one pull.

    Raises:
        ValueError: For another family, a non-finite reward, or a reward the family cannot
            take (a Bernoulli reward other than 0/1, a negative or fractional count).
    """
    value = check_finite_scalar("reward", reward)
    if isinstance(model, BetaBinomial):
        if value not in (0.0, 1.0):
            raise ValueError(f"reward must be 0 or 1 for Bernoulli arms (BetaBinomial), "
                             f"got {reward!r}")
        return model.stats(successes=value, trials=1)
    if isinstance(model, (NormalKnownVariance, NormalGamma)):
        return model.stats(value)
    if isinstance(model, GammaPoisson):
        return model.stats(value)
    raise ValueError(f"no reward model for {model!r}: use NormalKnownVariance, NormalGamma, "
                     "BetaBinomial or GammaPoisson")


def _reward_of(theta: Any) -> float:
    """The expected reward of a parameter draw or mean: θ itself for scalar θ (Gaussian mean,
    Bernoulli probability, Poisson rate), its first component μ for NormalGamma's (μ, τ)."""
    return float(np.asarray(theta).reshape(-1)[0])


def _check_reward_model(model: Any) -> None:
    if not isinstance(model, (BetaBinomial, NormalKnownVariance, NormalGamma, GammaPoisson)):
        raise ValueError(f"model must be NormalKnownVariance, NormalGamma, BetaBinomial or "
                         f"GammaPoisson for bandit rewards, got {model!r}")


def make_rule(model: ConjugateFamily, rule: str = "recursive", *,
              forgetting: float = PAPER_FORGETTING, hazard: float = PAPER_HAZARD,
              lam: float = 0.0, method: str = "greedy", power: float = 0.5) -> BeliefRule:
    """Builds a belief rule by name with the paper's bandit hyperparameters as defaults.

    Args:
        model: The conjugate family of one arm.
        rule: ``"recursive"`` (:class:`RecursiveBayes`), ``"forgetting"``
            (:class:`ExponentialForgetting`, factor ``forgetting``), ``"bocd"``
            (:class:`BOCD`, constant ``hazard``), ``"bam"`` (:class:`BAM`, ``lam``,
            ``method``), ``"bam_bocd"`` (:class:`BAMWithChangepoints`) or ``"power"``
            (:class:`PowerPrior`, exponent ``power``).
        forgetting: Exponential-forgetting factor (0.8 in the paper).
        hazard: BOCD hazard (0.016 in the paper, the expected switch rate).
        lam: BAM's complexity penalty.
        method: BAM's readout selector.
        power: Power-prior exponent.

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
        return BAM(model, lam=lam, method=method)
    if rule == "bam_bocd":
        return BAMWithChangepoints(model, lam=lam, method=method, hazard=hazard)
    if rule == "power":
        return PowerPrior(model, alpha=power)
    raise ValueError(f"rule must be one of {RULES}, got {rule!r}")


def _find(parent: list[int], x: int) -> int:
    """Union-find root of ``x`` with path compression (iterative)."""
    root = x
    while parent[root] != root:
        root = parent[root]
    while parent[x] != root:
        parent[x], x = root, parent[x]
    return root


def _greedy_parabola(values: list[float], order: list[int], v: float, r: float, h0: float,
                     s2: float, right: list[int], left: list[int], weights: np.ndarray) -> None:
    """The λ = 0 loop of :func:`gaussian_greedy_readout` (the hot path of UCBAM).

    With ``λ = 0``, ``J(k, r) = c_k − g_k r²`` is a parabola in the added observation peaked at
    ``v + r``, so the best candidate is the unselected neighbour nearest to ``v + r``; the
    per-round constants ``c_k``, ``g_k`` are tabulated once.
    """
    m = len(values)
    k_all = np.arange(m + 1, dtype=np.float64)
    x = h0 + k_all / s2
    a = s2 + 1.0 / x
    c = (-0.5 * np.log(2.0 * np.pi * a)).tolist()
    g = (1.0 / (2.0 * s2 * s2 * x * x * a)).tolist()
    best = c[0] - g[0] * r * r
    bisect_left = bisect.bisect_left
    # (lo, hi): last unselected position with value < target, first with value >= target;
    # everything between them is selected. Targets move little between rounds, so the
    # bracket of the previous round is usually still valid and no search is needed.
    lo, hi = -2, m
    chosen: list[int] = []
    k = 0
    while k < m:
        target = v + r
        if lo == -2 or not ((lo < 0 or values[lo] < target)
                            and (hi == m or target <= values[hi])):
            p = bisect_left(values, target)
            hi = right[p]
            if right[hi] != hi:
                hi = _find(right, hi)
            lo = left[p]
            if left[lo] != lo:
                lo = _find(left, lo)
            lo -= 1  # previous unselected position <= p - 1 (-1: none)
        if hi == m:
            pick = lo
        elif lo < 0:
            pick = hi
        else:
            d_lo = target - values[lo]
            d_hi = values[hi] - target
            if d_lo < d_hi:
                pick = lo
            elif d_hi < d_lo:
                pick = hi
            else:  # equal J: the lower memory index (lo's lowest unselected duplicate)
                first = lo
                while True:
                    prev = _find(left, first) - 1
                    if prev < 0 or values[prev] != values[lo]:
                        break
                    first = prev
                pick = first if order[first] < order[hi] else hi
        if pick == lo:  # lowest memory index among unselected duplicates of the pick
            while True:
                prev = _find(left, pick) - 1
                if prev < 0 or values[prev] != values[pick]:
                    break
                pick = prev
        rr = target - values[pick]
        k += 1
        value = c[k] - g[k] * rr * rr
        if not value > best:
            break
        best = value
        r = rr
        chosen.append(pick)
        right[pick] = pick + 1
        left[pick + 1] = pick
        if pick == hi:  # the next unselected position to the right
            hi += 1
            if hi < m and right[hi] != hi:
                hi = _find(right, hi)
        elif pick == lo:  # the previous unselected position to the left
            if left[lo] != lo:
                lo = _find(left, lo)
            lo -= 1
    if chosen:
        weights[np.asarray(order)[chosen]] = 1.0


def gaussian_greedy_readout(values: list[float], order: list[int], v: float,
                            model: NormalKnownVariance, lam: float = 0.0) -> np.ndarray:
    """Algorithm 1 (greedy readout) in closed form for memories of single Gaussian observations.

    Computes the same readout as ``select(model, memory, model.stats(v), lam, "greedy")`` for
    a memory whose records are single observations ``y_j`` of a :class:`NormalKnownVariance`
    model, in O(log m) per greedy round instead of O(m). With ``k`` records selected whose
    deviations ``y_j − v`` sum to ``D``, the candidate prior is N(m_k, 1/x_k) with
    ``x_k = h0 + k/σ²`` and ``v − m_k = r/(σ² x_k)``, ``r = σ² h0 (v − m0) − D``, so

    ``J = −½ log(2π A_k) − r² / (2 σ⁴ x_k² A_k) − λ sqrt(2 KL)``, ``A_k = σ² + 1/x_k``,
    ``2 KL = q − 1 − log q + h0 (v − m0 − r/(σ² x_k))²``, ``q = h0 / x_k``.

    Every candidate of a round shares ``k + 1``, and ``J`` is concave in the added ``y`` (for
    ``λ = 0`` a parabola with its peak at ``y = v + r``), so the best unselected record is
    found from the two unselected neighbours of ``v + r`` in sorted order (climbing further
    while ``J`` strictly increases when ``λ > 0``). Ties go to the lowest memory index, and a
    round is accepted only if ``J`` strictly improves, as in :func:`bam_rl.readout.select`.
    The objective is evaluated in this well-conditioned form rather than as the difference
    of log-normalisers, so decisions can differ from ``select`` only where two values of
    ``J`` agree to rounding error.

    Args:
        values: The observations ``y_j`` sorted ascending (ties in memory-index order).
        order: Memory index of each entry of ``values``.
        v: The new observation ``D_t``.
        model: The Gaussian model with known noise variance (its prior is the base prior).
        lam: Complexity penalty ``λ >= 0``.

    Returns:
        Readout weights (0/1) indexed by memory record.
    """
    m = len(values)
    weights = np.zeros(m)
    if m == 0:
        return weights
    s2 = model.noise_var
    inv_s2 = 1.0 / s2
    h0 = 1.0 / model.prior_var
    dv = v - model.prior_mean
    two_pi = 2.0 * math.pi
    log = math.log

    def objective(k: int, r: float) -> float:
        x = h0 + k * inv_s2
        a = s2 + 1.0 / x
        value = -0.5 * log(two_pi * a) - r * r / (2.0 * s2 * s2 * x * x * a)
        if lam:
            q = h0 / x
            e = dv - r / (s2 * x)
            value -= lam * math.sqrt(max(q - 1.0 - log(q) + h0 * e * e, 0.0))
        return value

    right = list(range(m + 1))  # right[p]: next unselected position >= p (m: none)
    left = list(range(m + 1))  # left[p + 1]: previous unselected position <= p, shifted by 1
    r = s2 * h0 * dv
    if lam == 0.0:
        _greedy_parabola(values, order, v, r, h0, s2, right, left, weights)
        return weights
    best = objective(0, r)
    k = 0
    while k < m:
        target = v + r
        p = bisect.bisect_left(values, target)
        hi = _find(right, p)
        lo = _find(left, p) - 1  # previous unselected position <= p - 1
        j_lo = objective(k + 1, target - values[lo]) if lo >= 0 else -math.inf
        j_hi = objective(k + 1, target - values[hi]) if hi < m else -math.inf
        if j_lo > j_hi or (j_lo == j_hi and order[lo] < order[hi]):
            pick, value, step = lo, j_lo, -1
        else:
            pick, value, step = hi, j_hi, 1
        if j_lo != j_hi:  # climb while J strictly increases (J is concave in y)
            while True:
                nxt = pick
                while True:  # the next unselected position with a different value
                    nxt = _find(left, nxt) - 1 if step < 0 else _find(right, nxt + 1)
                    if nxt < 0 or nxt >= m or values[nxt] != values[pick]:
                        break
                if nxt < 0 or nxt >= m:
                    break
                j_next = objective(k + 1, target - values[nxt])
                if not j_next > value:
                    break
                pick, value = nxt, j_next
        while True:  # lowest memory index among unselected duplicates of the pick
            prev = _find(left, pick) - 1
            if prev < 0 or values[prev] != values[pick]:
                break
            pick = prev
        if not value > best:
            break
        best = value
        r = target - values[pick]
        k += 1
        weights[order[pick]] = 1.0
        right[pick] = pick + 1
        left[pick + 1] = pick
    return weights


class _UCBStatistics:
    """Per-arm pull counts and empirical means, and the UCB choice over them.

    ``choose`` returns the lowest-index arm never pulled if there is one, otherwise
    ``argmax_i  mean_i + sqrt(2 log f(t) / N_i)`` with ``t = Σ N_i`` and
    ``f(t) = 1 + t log² t``; ties go to the lowest index (deterministic: no random draw).
    """

    def __init__(self, n_arms: int):
        self.n_arms = n_arms
        self.clear()

    def clear(self) -> None:
        self.counts = np.zeros(self.n_arms)
        self.sums = np.zeros(self.n_arms)
        self.means = np.zeros(self.n_arms)
        self.t = 0
        self.n_unpulled = self.n_arms

    def choose(self) -> int:
        if self.n_unpulled:
            return int(np.argmin(self.counts))  # first arm with a zero count
        bonus = np.sqrt(2.0 * ucb_confidence(self.t) / self.counts)
        return int(np.argmax(self.means + bonus))

    def update(self, arm: int, reward: float) -> None:
        counts, sums = self.counts, self.sums
        if counts[arm] == 0:
            self.n_unpulled -= 1
        counts[arm] += 1.0
        sums[arm] += reward
        self.means[arm] = sums[arm] / counts[arm]
        self.t += 1


# ------------------------------------------------------------------------------- UCB
class UCB(BaseAgent):
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
        self.n_arms = _check_n_arms(n_arms)
        self.stats = _UCBStatistics(self.n_arms)

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

    def observe(self, action: Any, reward: float, next_observation: Any, terminated: bool,
                truncated: bool, info: dict[str, Any]) -> None:
        """Adds the reward to the pulled arm's statistics.

        Raises:
            ValueError: For an action outside ``[0, n_arms)``, a non-finite reward or
                observation.
        """
        arm = check_arm("action", action, self.n_arms)
        value = check_finite_scalar("reward", reward)
        check_observation(next_observation)
        self.stats.update(arm, value)

    def summary(self) -> dict[str, float]:
        return {"t": float(self.stats.t)}

    def __repr__(self) -> str:
        return f"UCB(n_arms={self.n_arms}, seed={self.seed!r})"


# -------------------------------------------------------------------- Thompson sampling
class ThompsonSampling(BaseAgent):
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
        self.n_arms = _check_n_arms(n_arms)
        if not isinstance(rule, BeliefRule):
            raise ValueError(f"rule must be a belief rule from bam_rl.beliefs, got {rule!r}")
        _check_reward_model(rule.model)
        self.model = rule.model
        self.fast = type(rule) is RecursiveBayes and type(rule.model) in (
            BetaBinomial, NormalKnownVariance)
        if self.fast:
            self.rule_name = "RecursiveBayes"
            self.rules: list[BeliefRule] = []
            self._fields = {name: np.full(self.n_arms, float(value))
                            for name, value in rule.belief.fields.items()}
            self._refresh_all()
        else:
            self.rule_name = type(rule).__name__
            self.rules = [copy.deepcopy(rule) for _ in range(self.n_arms)]

    # -------------------------------------------------------------- factories
    @classmethod
    def gaussian(cls, n_arms: int, rule: str = "recursive", *, noise_std: float = 0.25,
                 prior_mean: float = 0.5, prior_var: float = 0.25, seed: int | None = None,
                 **rule_options: Any) -> ThompsonSampling:
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
                ``hazard=0.016``, ``lam=0.0``, ``method="greedy"``).
        """
        noise_std = check_finite_scalar("noise_std", noise_std)
        if noise_std <= 0:
            raise ValueError(f"noise_std must be > 0, got {noise_std!r}")
        model = NormalKnownVariance(mean=prior_mean, var=prior_var, noise_var=noise_std ** 2)
        return cls(n_arms, make_rule(model, rule, **rule_options), seed=seed)

    @classmethod
    def bernoulli(cls, n_arms: int, rule: str = "recursive", *, prior_alpha: float = 1.0,
                  prior_beta: float = 1.0, seed: int | None = None,
                  **rule_options: Any) -> ThompsonSampling:
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
            return self.rng.beta(self._fields["alpha"], self._fields["beta"])
        rng = self.rng
        return np.array([_reward_of(rule.sample(rng)) for rule in self.rules])

    def act(self, observation: Any) -> int:
        """The arm with the largest Thompson draw."""
        check_observation(observation)
        return int(np.argmax(self.sample_arms()))

    def observe(self, action: Any, reward: float, next_observation: Any, terminated: bool,
                truncated: bool, info: dict[str, Any]) -> None:
        """Updates the pulled arm's rule with the reward's statistics.

        Raises:
            ValueError: For an action outside ``[0, n_arms)``, a non-finite reward or
                observation, or a reward the model cannot take.
        """
        arm = check_arm("action", action, self.n_arms)
        check_observation(next_observation)
        if not self.fast:
            self.rules[arm].update(reward_statistics(self.model, reward))
            return
        value = check_finite_scalar("reward", reward)
        fields = self._fields
        if isinstance(self.model, NormalKnownVariance):
            noise = self.model.noise_var
            fields["precision_mean"][arm] += value / noise  # Σy / σ² of one observation
            fields["precision"][arm] += 1.0 / noise  # n / σ² with n = 1
            self._refresh(arm)
        else:
            if value not in (0.0, 1.0):
                raise ValueError(f"reward must be 0 or 1 for Bernoulli arms (BetaBinomial), "
                                 f"got {reward!r}")
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
        return np.array([_reward_of(rule.mean) for rule in self.rules])

    def summary(self) -> dict[str, float]:
        """``n_memories`` (total stored data) for rules with a memory, else nothing."""
        if not self.rules or getattr(self.rules[0], "memory", None) is None:
            return {}
        return {"n_memories": float(sum(len(rule.memory) for rule in self.rules))}

    def __repr__(self) -> str:
        return (f"ThompsonSampling(n_arms={self.n_arms}, rule={self.rule_name}"
                f"({self.model!r}), seed={self.seed!r})")


# ------------------------------------------------------------------------------ UCBAM
class UCBAM(BaseAgent):
    """UCB combined with BAM (App. D.4, Algorithm 3).

    State: a belief ``b_i`` (initially the base prior ``p``) and a memory ``D^i`` per arm and
    one flag ``known`` (initially ``False``). Each step:

    1. if ``known``: Thompson over ``b_1..K`` — draw θ_i from every ``b_i`` (in arm order,
       from :attr:`rng`) and pull the argmax (ties: lowest index); otherwise the UCB choice
       (as :class:`UCB`: an unpulled arm first, then the largest
       ``μ̂_i + sqrt(2 log f(t) / N_i)``, ``f(t) = 1 + t log² t``);
    2. after pulling ``a`` with value ``v``: ``known ← not (log p(v) >= log b_a(v))`` where
       both are log marginal likelihoods of the datum ``v`` (``model.log_marginal``) under
       the base prior and under ``b_a``;
    3. ``b_a ← η(W) + s_v`` with readout weights ``W`` chosen greedily over ``D^a`` against
       ``v`` (:func:`bam_rl.readout.select`, ``lam``, ``method="greedy"``) and
       ``η(W) = η0 + Σ_j w_j s_j``;
    4. ``v`` is appended to ``D^a``.

    Interpretations of the algorithm table: the UCB statistics (``μ̂_i``, ``N_i``, ``t``) are
    the empirical means and counts of *all* pulls so far, whichever branch chose them; the
    memory appended to in the last line is the pulled arm's ``D^a`` (the table's data are
    per arm); ``known`` is one flag for the whole agent, updated after every pull; a tie
    ``log p(v) = log b_a(v)`` makes ``known`` false, as in the table.

    Readout cost: with λ = 0 the greedy readout keeps selecting past rewards close to ``v``,
    so the number of greedy rounds grows with the arm's memory and the generic
    :func:`~bam_rl.readout.select` (O(memory) per round) makes a 10,000-step run take
    minutes. For :class:`NormalKnownVariance` arms the agent therefore computes the same
    greedy readout in closed form (:func:`gaussian_greedy_readout`, O(log memory) per round)
    unless ``fast_readout=False``; every other family uses ``select``.

    Args:
        n_arms: Number of arms.
        model: The conjugate family of one arm's value (e.g.
            ``NormalKnownVariance(0.5, 0.25, 0.25**2)`` or ``BetaBinomial()``); its prior is
            ``p``.
        lam: BAM's complexity penalty ``λ >= 0`` (0 by default).
        seed: Seed of :attr:`rng` (the Thompson draws).
        fast_readout: Use the closed-form greedy readout for Gaussian arms (default); ``False``
            always calls :func:`bam_rl.readout.select`.

    Attributes:
        beliefs: ``b_1..K`` (one :class:`NaturalParams` per arm).
        memories: ``D^1..K`` (one :class:`Memory` per arm).
        known: The flag of Algorithm 3.
    """

    def __init__(self, n_arms: int, model: ConjugateFamily, lam: float = 0.0,
                 seed: int | None = None, fast_readout: bool = True):
        super().__init__(seed)
        self.n_arms = _check_n_arms(n_arms)
        _check_reward_model(model)
        if not isinstance(fast_readout, (bool, np.bool_)):
            raise ValueError(f"fast_readout must be a bool, got {fast_readout!r}")
        lam = check_finite_scalar("lam", lam)
        if lam < 0:
            raise ValueError(f"lam must be >= 0, got {lam!r}")
        self.model = model
        self.lam = lam
        self.beliefs: list[NaturalParams] = [model.prior for _ in range(self.n_arms)]
        self.memories = [Memory() for _ in range(self.n_arms)]
        self.known = False
        self.stats = _UCBStatistics(self.n_arms)
        self.last_readout_size = 0
        self.fast_readout = bool(fast_readout) and isinstance(model, NormalKnownVariance)
        # per arm: the stored rewards sorted ascending and their memory indices (fast readout)
        self.sorted_values: list[list[float]] = [[] for _ in range(self.n_arms)]
        self.sorted_order: list[list[int]] = [[] for _ in range(self.n_arms)]

    @classmethod
    def gaussian(cls, n_arms: int, *, noise_std: float = 0.25, prior_mean: float = 0.5,
                 prior_var: float = 0.25, lam: float = 0.0, seed: int | None = None,
                 fast_readout: bool = True) -> UCBAM:
        """UCBAM with Gaussian arms of known noise (defaults as
        :meth:`ThompsonSampling.gaussian`)."""
        noise_std = check_finite_scalar("noise_std", noise_std)
        if noise_std <= 0:
            raise ValueError(f"noise_std must be > 0, got {noise_std!r}")
        model = NormalKnownVariance(mean=prior_mean, var=prior_var, noise_var=noise_std ** 2)
        return cls(n_arms, model, lam=lam, seed=seed, fast_readout=fast_readout)

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        """Starts an episode: beliefs back to the prior, ``known = False``, UCB statistics
        cleared; the per-arm memories are kept (BAM's episodic setting)."""
        self.beliefs = [self.model.prior for _ in range(self.n_arms)]
        self.known = False
        self.stats.clear()

    def act(self, observation: Any) -> int:
        """Thompson over the arm beliefs if ``known``, else the UCB choice."""
        check_observation(observation)
        if self.known:
            draws = [_reward_of(self.model.sample(belief, self.rng)) for belief in self.beliefs]
            return int(np.argmax(draws))
        return self.stats.choose()

    def observe(self, action: Any, reward: float, next_observation: Any, terminated: bool,
                truncated: bool, info: dict[str, Any]) -> None:
        """The ``known`` test, the BAM update of the pulled arm and its memory (Alg. 3).

        Raises:
            ValueError: For an action outside ``[0, n_arms)``, a non-finite reward or
                observation, or a reward the model cannot take.
        """
        arm = check_arm("action", action, self.n_arms)
        check_observation(next_observation)
        s_v = reward_statistics(self.model, reward)
        model = self.model
        belief = self.beliefs[arm]
        self.known = not (model.log_marginal(model.prior, s_v) >= model.log_marginal(belief, s_v))
        value = check_finite_scalar("reward", reward)
        memory = self.memories[arm]
        if len(memory):
            if self.fast_readout:
                weights = gaussian_greedy_readout(self.sorted_values[arm], self.sorted_order[arm],
                                                  value, model, self.lam)
            else:
                weights = select(model, memory, s_v, lam=self.lam, method="greedy").weights
            prior = memory.weighted_sum(weights, base=model.prior)
            self.last_readout_size = int(np.count_nonzero(weights))
        else:
            prior = model.prior
            self.last_readout_size = 0
        self.beliefs[arm] = prior + s_v
        if self.fast_readout:  # keep the arm's rewards sorted (ties in memory-index order)
            position = bisect.bisect_right(self.sorted_values[arm], value)
            self.sorted_values[arm].insert(position, value)
            self.sorted_order[arm].insert(position, len(memory))
        memory.add(s_v)
        self.stats.update(arm, value)

    @property
    def means(self) -> np.ndarray:
        """Mean of every arm's belief ``b_i``."""
        return np.array([_reward_of(b.mean) for b in self.beliefs])

    def summary(self) -> dict[str, float]:
        """``known`` (0/1), ``n_memories`` (total stored pulls) and ``readout_size`` (how many
        memories the latest BAM update selected)."""
        return {"known": float(self.known),
                "n_memories": float(sum(len(m) for m in self.memories)),
                "readout_size": float(self.last_readout_size)}

    def __repr__(self) -> str:
        return f"UCBAM(n_arms={self.n_arms}, model={self.model!r}, lam={self.lam:g})"
