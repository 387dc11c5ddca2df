"""Online tracking of a drifting success probability (paper §4.1, ``bam_rl/BinomialStream-v0``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bam_rl.beliefs import BAM, BeliefRule
from bam_rl.checks import as_float_array, check_finite_scalar, check_int
from bam_rl.families.beta_binomial import BetaBinomial

from .base import BaseAgent, Transition

__all__ = ["DEFAULT_N_TRIALS", "BeliefTracker"]

#: Trials per datum of the paper's stream (``Binomial(15, θ_t)``), used when neither the
#: constructor nor the environment's ``info`` says otherwise.
DEFAULT_N_TRIALS = 15


class BeliefTracker(BaseAgent):
    """Reports the posterior mean of θ under a belief-update rule with a Beta-Binomial model.

    At every step the action is the estimate of θ_t made *before* the count ``k_t`` is
    revealed: the rule's current posterior mean ``E[θ | D_<t]`` (``rule.mean``; for BOCD the
    run-length mixture) as a float32 array of shape ``(1,)`` clipped to [0, 1]. ``observe``
    then absorbs the revealed count (``next_observation``) as the statistics of ``k_t``
    successes in ``n_trials`` trials.

    Number of trials: ``n_trials`` if given; otherwise ``info["n_trials"]`` (or ``info["n"]``)
    at :meth:`reset` if the environment reports it; otherwise :data:`DEFAULT_N_TRIALS` (15,
    the paper's and the stream's default). :meth:`from_env` reads it from the environment
    itself. A count above ``n_trials`` raises ``ValueError``, so a mismatch cannot go unseen.

    Episodes: :meth:`reset` calls ``rule.reset()`` — the rule's episodic semantics (recursive
    Bayes, forgetting and BOCD return to the base prior; BAM returns to the base prior but
    keeps its memory of past data).

    The agent makes no random draws; it still owns a seeded :attr:`rng` like every agent.

    Args:
        rule: A belief rule (:mod:`bam_rl.beliefs`) whose model is a :class:`BetaBinomial`.
        n_trials: Trials per datum (the stream's ``n``), or ``None`` (see above).
        seed: Seed of :attr:`rng`.

    Raises:
        ValueError: If ``rule`` is not a belief rule over a Beta-Binomial model or ``n_trials``
            is not a positive integer.

    Examples:
        >>> import gymnasium as gym, bam_rl
        >>> from bam_rl.beliefs import BAM
        >>> env = gym.make("bam_rl/BinomialStream-v0")
        >>> agent = BeliefTracker(BAM(BetaBinomial(), lam=0.1))
        >>> observation, info = env.reset(seed=0)
        >>> agent.reset(observation, info)
        >>> action = agent.act(observation)
    """

    def __init__(self, rule: BeliefRule, n_trials: int | None = None, seed: int | None = None):
        super().__init__(seed)
        self.rule = rule
        self.n_trials_given = n_trials
        self.n_trials: int = DEFAULT_N_TRIALS if n_trials is None else n_trials
        self.last_count = math.nan  # the count absorbed last (none yet)
        self._check_settings()

    def _check_settings(self) -> None:
        """The rule and the number of trials, as given to the constructor or restored
        (``ValueError`` naming the argument): a belief rule over a Beta-Binomial model,
        ``n_trials`` a positive integer (the given one, if one was), and the count absorbed
        last NaN (none yet) or a whole number >= 0."""
        rule = self.rule
        if not isinstance(rule, BeliefRule):
            raise ValueError(f"rule must be a belief rule from bam_rl.beliefs, got {rule!r}")
        if not isinstance(rule.model, BetaBinomial):
            raise ValueError(
                f"rule.model must be a BetaBinomial for the Binomial stream, got {rule.model!r}"
            )
        if self.n_trials_given is not None:
            self.n_trials_given = check_int("n_trials", self.n_trials_given)
            if self.n_trials != self.n_trials_given:
                raise ValueError(
                    f"n_trials must be the n_trials given ({self.n_trials_given}), got "
                    f"{self.n_trials!r}"
                )
        self.n_trials = check_int("n_trials", self.n_trials)
        count = self.last_count
        if (
            isinstance(count, bool)
            or not isinstance(count, (int, float))
            or not (math.isnan(count) or (count >= 0 and count == round(count)))
        ):
            raise ValueError(
                f"last_count must be NaN (no count yet) or a count >= 0, got {count!r}"
            )

    def _check_restored(self) -> None:
        """A restored tracker's rule and trials are checked as the constructor checks them
        (the rule checks its own belief), then its seed and generator."""
        for name in ("rule", "n_trials", "n_trials_given", "last_count"):
            if not hasattr(self, name):
                raise ValueError(f"the file has no {name} of the tracker")
        self._check_settings()
        super()._check_restored()

    @classmethod
    def from_env(cls, env: Any, rule: BeliefRule, seed: int | None = None) -> BeliefTracker:
        """Builds a tracker whose ``n_trials`` is the stream's ``n`` (``env.unwrapped.n``)."""
        n = getattr(getattr(env, "unwrapped", env), "n", None)
        if n is None:
            raise ValueError(f"{env!r} has no attribute n (trials per datum)")
        return cls(rule, n_trials=int(n), seed=seed)

    # ------------------------------------------------------------ protocol
    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        """Starts an episode: ``rule.reset()``; reads ``n_trials`` from ``info`` if not given.

        The first observation (the stream's placeholder count) carries no datum and is ignored.
        """
        if self.n_trials_given is None and isinstance(info, dict):
            for key in ("n_trials", "n"):
                if key in info:
                    self.n_trials = check_int("n_trials", info[key])
                    break
        self.rule.reset()

    def act(self, observation: Any) -> np.ndarray:
        """The posterior mean of θ_t given the data so far, shape ``(1,)``, float32, in [0, 1].

        Raises:
            ValueError: If ``observation`` is not a finite number.
        """
        as_float_array("observation", observation)
        return np.clip(np.asarray([self.mean], dtype=np.float32), 0.0, 1.0)

    def _check_action(self, action: Any) -> float:
        estimate = check_finite_scalar("action", action)
        if not 0.0 <= estimate <= 1.0:
            raise ValueError(f"action must lie in [0, 1], got {action!r}")
        return estimate

    def _check_next_observation(self, observation: Any) -> float:
        count = check_finite_scalar("next_observation", observation)
        if count != round(count) or not 0 <= count <= self.n_trials:
            raise ValueError(
                f"next_observation must be a count in [0, {self.n_trials}], got {observation!r}"
            )
        return count

    def _observe(self, step: Transition) -> None:
        """Absorbs the revealed count ``next_observation`` (``k_t`` of ``n_trials``); the
        action must be an estimate in [0, 1] and the count a whole number in
        ``[0, n_trials]`` (``ValueError`` naming the argument otherwise)."""
        count = step.next_observation
        self.rule.update(self.rule.model.stats(successes=count, trials=self.n_trials))
        self.last_count = count

    # ------------------------------------------------------------- beliefs
    @property
    def mean(self) -> float:
        """Posterior mean of θ given the data so far."""
        return float(np.asarray(self.rule.mean))  # a Beta belief: θ is one number

    @property
    def variance(self) -> float:
        """Posterior variance of θ given the data so far."""
        return float(np.asarray(self.rule.variance))

    def summary(self) -> dict[str, float]:
        """``mean`` and ``variance`` of θ, the ``count`` absorbed last; for BAM rules also
        ``remembered`` (the total readout weight of the latest selection, 0 before any) and
        ``n_memories``."""
        out = {"mean": self.mean, "variance": self.variance, "count": self.last_count}
        if isinstance(self.rule, BAM):
            weights = self.rule.weights
            out["remembered"] = 0.0 if weights is None else float(np.sum(weights))
        memory = getattr(self.rule, "memory", None)
        if memory is not None:
            out["n_memories"] = float(len(memory))
        return out

    def __repr__(self) -> str:
        return f"BeliefTracker({self.rule!r}, n_trials={self.n_trials})"
