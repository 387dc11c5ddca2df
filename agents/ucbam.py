"""UCBAM (paper App. D.4, Algorithm 3): UCB combined with BAM, for non-stationary bandits.

:class:`UCBAM` acts like :class:`~agents.bandits.UCB` until a reward is better explained by
an arm's BAM belief than by the base prior, then samples like Thompson sampling over the
arm beliefs. :func:`gaussian_greedy_readout` is the closed-form greedy readout it uses for
Gaussian arms.
"""

from __future__ import annotations

import bisect
import math
from typing import Any

import numpy as np

from agents.arms import (
    UCBStatistics,
    check_reward_model,
    expected_reward,
    gaussian_model,
    reward_statistics,
)
from agents.base import BaseAgent, check_arm, check_observation
from bam_rl import hyperparams
from bam_rl.checks import check_finite_scalar, check_int
from bam_rl.families import ConjugateFamily, NaturalParams, NormalKnownVariance
from bam_rl.memory import Memory
from bam_rl.readout import select

__all__ = ["UCBAM", "gaussian_greedy_readout"]


# ------------------------------------------------------------------ greedy readout
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


# ------------------------------------------------------------------------------ UCBAM
class UCBAM(BaseAgent):
    """UCB combined with BAM (App. D.4, Algorithm 3).

    State: a belief ``b_i`` (initially the base prior ``p``) and a memory ``D^i`` per arm and
    one flag ``known`` (initially ``False``). Each step:

    1. if ``known``: Thompson over ``b_1..K`` — draw θ_i from every ``b_i`` (in arm order,
       from :attr:`rng`) and pull the argmax (ties: lowest index); otherwise the UCB choice
       (as :class:`~agents.bandits.UCB`: an unpulled arm first, then the largest
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
        self.n_arms = check_int("n_arms", n_arms)
        check_reward_model(model)
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
        self.stats = UCBStatistics(self.n_arms)
        self.last_readout_size = 0
        self.fast_readout = bool(fast_readout) and isinstance(model, NormalKnownVariance)
        # per arm: the stored rewards sorted ascending and their memory indices (fast readout)
        self.sorted_values: list[list[float]] = [[] for _ in range(self.n_arms)]
        self.sorted_order: list[list[int]] = [[] for _ in range(self.n_arms)]

    @classmethod
    def gaussian(cls, n_arms: int, *, noise_std: float = hyperparams.BANDIT_NOISE_STD, prior_mean: float = 0.5,
                 prior_var: float = 0.25, lam: float = 0.0, seed: int | None = None,
                 fast_readout: bool = True) -> UCBAM:
        """UCBAM with Gaussian arms of known noise (defaults as
        :meth:`~agents.bandits.ThompsonSampling.gaussian`)."""
        model = gaussian_model(noise_std, prior_mean, prior_var)
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
            draws = [expected_reward(self.model.sample(belief, self.rng)) for belief in self.beliefs]
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
        return np.array([expected_reward(b.mean) for b in self.beliefs])

    def summary(self) -> dict[str, float]:
        """``known`` (0/1), ``n_memories`` (total stored pulls) and ``readout_size`` (how many
        memories the latest BAM update selected)."""
        return {"known": float(self.known),
                "n_memories": float(sum(len(m) for m in self.memories)),
                "readout_size": float(self.last_readout_size)}

    def __repr__(self) -> str:
        return f"UCBAM(n_arms={self.n_arms}, model={self.model!r}, lam={self.lam:g})"
