"""UCBAM (paper App. D.4, Algorithm 3): UCB combined with BAM, for non-stationary bandits.

:class:`UCBAM` acts like :class:`~bam_rl.agents.bandits.UCB` until a reward is better explained by
an arm's BAM belief than by the base prior, then samples like Thompson sampling over the
arm beliefs. Its greedy readout is :func:`bam_rl.readout.select`, which uses the closed-form
path of :mod:`bam_rl.readout.gaussian` for Gaussian arms.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bam_rl import hyperparams
from bam_rl.beliefs import SegmentBAM, warn_if_unbounded_growth
from bam_rl.checks import (
    check_finite_params,
    check_finite_scalar,
    check_int,
    check_real,
    check_size,
)
from bam_rl.families import ConjugateFamily, NaturalParams
from bam_rl.memory import Memory
from bam_rl.readout import select

from .arms import (
    UCBStatistics,
    check_reward_model,
    expected_reward,
    gaussian_model,
    reward_statistics,
)
from .base import BanditAgent, Transition, check_observation

__all__ = ["UCBAM", "SegmentUCBAM"]


# ------------------------------------------------------------------------------ UCBAM
class UCBAM(BanditAgent):
    """UCB combined with BAM (App. D.4, Algorithm 3).

    State: a belief ``b_i`` (initially the base prior ``p``) and a memory ``D^i`` per arm and
    one flag ``known`` (initially ``False``). Each step:

    1. if ``known``: Thompson over ``b_1..K`` — draw θ_i from every ``b_i`` (in arm order,
       from :attr:`rng`) and pull the argmax (ties: lowest index); otherwise the UCB choice
       (as :class:`~bam_rl.agents.bandits.UCB`: an unpulled arm first, then the largest
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
    so the number of greedy rounds grows with the arm's memory; the generic loop (O(memory)
    per round) makes a 10,000-step run take minutes. :func:`~bam_rl.readout.select` therefore
    computes the same readout with a fast path unless ``fast_readout=False``: a closed form
    for :class:`NormalKnownVariance` arms (:mod:`bam_rl.readout.gaussian`, O(log memory) per
    round), one score per distinct reward for discrete ones (:mod:`bam_rl.readout.greedy`).
    Each round is still one Python iteration per record kept, so without a ``capacity`` a
    step costs O(pulls of the arm): about 1 ms of CPU per readout at 10³ pulls, 5 ms at 10⁴
    and 45 ms at 10⁵ (rewards of a two-valued arm with noise 0.25). The agent warns once per
    arm (:class:`~bam_rl.beliefs.PerformanceWarning`) when a memory passes 10⁴ records.
    ``capacity`` bounds every arm's memory (:class:`~bam_rl.memory.Memory` merges the two
    closest records), which keeps the per-step cost flat but leaves the one-point fast path
    (merged records hold several rewards): about 4 ms per step at a capacity of 256.

    Args:
        n_arms: Number of arms.
        model: The conjugate family of one arm's value (e.g.
            ``NormalKnownVariance(0.5, 0.25, 0.25**2)`` or ``BetaBinomial()``); its prior is
            ``p``.
        lam: BAM's complexity penalty ``λ >= 0`` (0 by default).
        seed: Seed of :attr:`rng` (the Thompson draws).
        fast_readout: Let :func:`bam_rl.readout.select` use its fast greedy paths (default);
            ``False`` runs its generic loop (``select(..., fast=False)``).
        capacity: Records kept per arm (``None``, the paper's setting: all of them; an
            integer >= 2 bounds each memory, see above).

    Attributes:
        beliefs: ``b_1..K`` (one :class:`NaturalParams` per arm).
        memories: ``D^1..K`` (one :class:`Memory` per arm).
        known: The flag of Algorithm 3.
        capacity: Records kept per arm (``None``: all).
    """

    def __init__(
        self,
        n_arms: int,
        model: ConjugateFamily,
        lam: float = 0.0,
        seed: int | None = None,
        fast_readout: bool = True,
        capacity: int | None = None,
    ):
        super().__init__(seed)
        # per arm: a belief, a memory and the UCB statistics (measured 740 bytes; 1250 on
        # Python 3.10 once a restored state file has unshared Memory's instance dicts, which
        # then take 576 bytes each instead of sharing their keys)
        self.n_arms = check_size("n_arms", n_arms, 1536)
        check_reward_model(model)
        if not isinstance(fast_readout, (bool, np.bool_)):
            raise ValueError(f"fast_readout must be a bool, got {fast_readout!r}")
        lam = check_finite_scalar("lam", lam)
        if lam < 0:
            raise ValueError(f"lam must be >= 0, got {lam!r}")
        self.model = model
        self.lam = lam
        self.beliefs: list[NaturalParams] = [model.prior for _ in range(self.n_arms)]
        self.memories = [Memory(capacity) for _ in range(self.n_arms)]
        self.known = False
        self.stats = UCBStatistics(self.n_arms)
        self.last_readout_size = 0
        self.fast_readout = bool(fast_readout)

    def _check_restored(self) -> None:
        """A restored agent holds what the constructor builds: a reward model, ``lam >= 0``,
        one finite, proper belief and one memory per arm, and UCB statistics of as many
        arms."""
        super()._check_restored()
        self.n_arms = check_int("n_arms", self.n_arms)
        check_reward_model(self.model)
        self.lam = check_real("lam", self.lam, lower=0.0)
        for name in ("known", "fast_readout"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool")
        self.last_readout_size = check_int("last_readout_size", self.last_readout_size, minimum=0)
        for name in ("beliefs", "memories"):
            value = getattr(self, name)
            if not isinstance(value, list) or len(value) != self.n_arms:
                raise ValueError(f"{name} must be a list of one entry per arm ({self.n_arms})")
        for belief in self.beliefs:
            self.model.check_params(belief, "beliefs")
            if belief.batch_shape != ():
                raise ValueError("beliefs must be unbatched")
            check_finite_params("beliefs", belief)
            self.model._check_belief(belief.fields)
        for memory in self.memories:
            if not isinstance(memory, Memory):
                raise ValueError("memories must hold Memory objects")
            if memory.family is not None:
                self.model.check_compatible(memory.family, "memories")
        if not isinstance(self.stats, UCBStatistics) or self.stats.n_arms != self.n_arms:
            raise ValueError(f"stats must be UCB statistics of {self.n_arms} arms")

    @classmethod
    def gaussian(
        cls,
        n_arms: int,
        *,
        noise_std: float = hyperparams.BANDIT_NOISE_STD,
        prior_mean: float = 0.5,
        prior_var: float = 0.25,
        lam: float = 0.0,
        seed: int | None = None,
        fast_readout: bool = True,
        capacity: int | None = None,
    ) -> UCBAM:
        """UCBAM with Gaussian arms of known noise (defaults as
        :meth:`~bam_rl.agents.bandits.ThompsonSampling.gaussian`)."""
        model = gaussian_model(noise_std, prior_mean, prior_var)
        return cls(n_arms, model, lam=lam, seed=seed, fast_readout=fast_readout, capacity=capacity)

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
            draws = [
                expected_reward(self.model.sample(belief, self.rng)) for belief in self.beliefs
            ]
            return int(np.argmax(draws))
        return self.stats.choose()

    def _observe(self, step: Transition) -> None:
        """The ``known`` test, the BAM update of the pulled arm and its memory (Alg. 3).

        Raises:
            ValueError: For a reward the model cannot take.
        """
        arm, reward = step.action, step.reward
        value = reward
        s_v = reward_statistics(self.model, reward)
        model = self.model
        belief = self.beliefs[arm]
        self.known = not (model.log_marginal(model.prior, s_v) >= model.log_marginal(belief, s_v))
        memory = self.memories[arm]
        if len(memory):
            weights = select(
                model, memory, s_v, lam=self.lam, method="greedy", fast=self.fast_readout
            ).weights
            prior = memory.weighted_sum(weights, base=model.prior)
            self.last_readout_size = int(np.count_nonzero(weights))
        else:
            prior = model.prior
            self.last_readout_size = 0
        self.beliefs[arm] = prior + s_v
        memory.add(s_v)
        self.stats.update(arm, value)
        warn_if_unbounded_growth(
            memory, f"UCBAM arm {arm}", "O(rewards of the pulled arm)", stacklevel=2
        )

    @property
    def capacity(self) -> int | None:
        """Records kept per arm (``None``: all), as the memories hold it."""
        return self.memories[0].capacity

    @property
    def means(self) -> np.ndarray:
        """Mean of every arm's belief ``b_i``."""
        return np.array([expected_reward(b.mean) for b in self.beliefs])

    def summary(self) -> dict[str, float]:
        """``known`` (0/1), ``n_memories`` (records stored over all arms: every pull, or
        merged pulls with a ``capacity``) and ``readout_size`` (how many
        memories the latest BAM update selected)."""
        return {
            "known": float(self.known),
            "n_memories": float(sum(len(m) for m in self.memories)),
            "readout_size": float(self.last_readout_size),
        }

    def __repr__(self) -> str:
        bound = "" if self.capacity is None else f", capacity={self.capacity}"
        return f"UCBAM(n_arms={self.n_arms}, model={self.model!r}, lam={self.lam:g}{bound})"


class SegmentUCBAM(UCBAM):
    """Beyond the paper: UCBAM whose arm beliefs come from segment-tied BAM.

    Algorithm 3 with its third step replaced: instead of a readout over the arm's past rewards
    for every new reward, each arm keeps a :class:`~bam_rl.beliefs.SegmentBAM` rule whose BOCD
    over that arm's rewards (``hazard``) closes segments; at a detected change it reads out over
    the arm's closed segments (a whole earlier stretch of the arm at once), and between changes
    it updates recursively. The ``known`` test, the Thompson/UCB choice and the UCB statistics
    are UCBAM's. ``reset`` announces a change to every arm's rule (its closed segments stay).

    Args:
        n_arms: Number of arms.
        model: The reward model (``BetaBinomial`` for Bernoulli arms, ``NormalKnownVariance``
            for Gaussian ones).
        hazard: BOCD's hazard over each arm's rewards, in (0, 1).
        seed: Seed of :attr:`rng`.
        capacity: Bound on each arm's closed segments (``None``: all).
    """

    def __init__(
        self,
        n_arms: int,
        model: ConjugateFamily,
        hazard: float = hyperparams.BANDIT_HAZARD,
        seed: int | None = None,
        capacity: int | None = None,
    ):
        super().__init__(n_arms, model, lam=0.0, seed=seed)
        self.hazard = check_finite_scalar("hazard", hazard)
        self.rules = [
            SegmentBAM(model, hazard=self.hazard, capacity=capacity) for _ in range(self.n_arms)
        ]

    def _check_restored(self) -> None:
        """UCBAM's checks, a hazard in (0, 1) and one segment rule of the model per arm."""
        super()._check_restored()
        self.hazard = check_real(
            "hazard", self.hazard, lower=0.0, upper=1.0, open_lower=True, open_upper=True
        )
        if not isinstance(self.rules, list) or len(self.rules) != self.n_arms:
            raise ValueError(f"rules must hold one SegmentBAM rule per arm ({self.n_arms})")
        for rule in self.rules:
            if not isinstance(rule, SegmentBAM) or rule.detector is None:
                raise ValueError("rules must be SegmentBAM rules with a change detector")
            self.model.check_compatible(rule.model, "rules")

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        """Starts an episode: UCBAM's reset, and a change announced to every arm's rule."""
        super().reset(observation, info)
        for rule in self.rules:
            rule.reset()

    def _observe(self, step: Transition) -> None:
        """The ``known`` test, then the pulled arm's segment rule takes the reward."""
        arm, reward = step.action, step.reward
        s_v = reward_statistics(self.model, reward)
        model = self.model
        belief = self.beliefs[arm]
        self.known = not (model.log_marginal(model.prior, s_v) >= model.log_marginal(belief, s_v))
        rule = self.rules[arm]
        rule.update(s_v)
        self.beliefs[arm] = rule.belief
        readout = rule.last_readout
        self.last_readout_size = 0 if readout is None else int(np.count_nonzero(readout.weights))
        self.stats.update(arm, reward)

    @property
    def capacity(self) -> int | None:
        """Closed segments kept per arm (``None``: all)."""
        return self.rules[0].memory.capacity

    def summary(self) -> dict[str, float]:
        """``known`` (0/1), ``n_segments`` (closed segments over all arms) and
        ``readout_size`` (segments the latest readout of the pulled arm kept)."""
        return {
            "known": float(self.known),
            "n_segments": float(sum(len(rule.segment_sizes) for rule in self.rules)),
            "readout_size": float(self.last_readout_size),
        }

    def __repr__(self) -> str:
        return f"SegmentUCBAM(n_arms={self.n_arms}, model={self.model!r}, hazard={self.hazard:g})"
