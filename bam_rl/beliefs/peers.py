"""Peers of segment BAM on unannounced recurring worlds (issue 52, beyond the paper).

Two memory rules from the literature BAM is measured against, written as
:class:`~bam_rl.beliefs.BeliefRule` s so they plan with the same MPPI and the same Bayesian
model as every other learned agent (:class:`bam_rl.agents.mppi.MPPIAgent` feeds them one datum
per block of :data:`BLOCK_STEPS` transitions, inside a trial too):

* :class:`RecentWindow` (GrBAL-style; Nagabandi, Clavera et al., ICLR 2019): the posterior of
  the last ``window`` data only, so it follows the newest world and keeps no memory of the
  old ones.
* :class:`CRPMixture` (MOLe / DPGP-style; Nagabandi, Finn, Levine, ICLR 2019; Xu et al.,
  NeurIPS 2020): a mixture of posteriors of the family with a Chinese-restaurant-process
  prior over their assignments. Each datum joins the component with the largest posterior
  predictive × CRP weight (:func:`crp_assignment_log_probs`), or opens a new one when the
  CRP's new-table term (the prior predictive × ``concentration / (n + concentration)``) wins.
  The belief is the current component's posterior, and :attr:`CRPMixture.world` names it
  (learned without labels, so it can be scored against the hidden world).

Both assign greedily (the most probable table, no resampling of past data): MOLe's online
EM keeps past assignments fixed in the same way.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import logsumexp

from bam_rl.beliefs.rules import BeliefRule, check_possible_datum, check_posterior
from bam_rl.checks import as_float_array, check_finite_params, check_int, check_real
from bam_rl.families.base import ConjugateFamily, NaturalParams, stack

__all__ = [
    "BLOCK_STEPS",
    "CONCENTRATION",
    "MAX_COMPONENTS",
    "PEER_MEMORIES",
    "WINDOW_STEPS",
    "CRPMixture",
    "RecentWindow",
    "crp_assignment_log_probs",
    "crp_log_weights",
    "make_peer_rule",
]

#: Transitions per datum the MPPI agent feeds these rules (inside a trial as well).
BLOCK_STEPS = 10
#: The recent-window peer's window, in transitions (a whole number of blocks): of 50, 100, 200
#: and 400, the lowest mean regret per visit against GT MPC on seeds 0-4 of the continual
#: Pendulum (docs/recurring.md, "Peers").
WINDOW_STEPS = 200
#: The memory names of the peers (:data:`bam_rl.agents.mppi.MEMORY_RULES`).
PEER_MEMORIES = ("recent_window", "crp_mixture")
#: The CRP's concentration α (the new-table weight α / (n + α)).
CONCENTRATION = 1.0
#: The mixture's most components (a new table is not offered beyond it), bounding the cost of
#: a datum's assignment (one predictive per component).
MAX_COMPONENTS = 20


def crp_log_weights(counts: Any, concentration: float) -> np.ndarray:
    """The CRP prior of the next datum's table: ``log(n_k / (n + α))`` for every existing
    table ``k`` (``counts[k] = n_k``, ``n = Σ n_k``), then ``log(α / (n + α))`` for a new one.

    Raises:
        ValueError: For negative or non-integer counts, or ``concentration`` not > 0.
    """
    alpha = check_real("concentration", concentration, lower=0.0)
    if not alpha > 0.0 or not math.isfinite(alpha):
        raise ValueError(f"concentration must be a finite number > 0, got {concentration!r}")
    n_k = as_float_array("counts", counts)
    if n_k.ndim != 1 or np.any(n_k < 1) or np.any(n_k != np.round(n_k)):
        raise ValueError(f"counts must be a 1-D array of whole numbers >= 1, got {counts!r}")
    total = float(n_k.sum()) + alpha
    return np.log(np.append(n_k, alpha)) - math.log(total)


def crp_assignment_log_probs(log_predictive: Any, counts: Any, concentration: float) -> np.ndarray:
    """The posterior of a datum's table, in log space: ``log_predictive[k]`` (the datum's log
    posterior predictive under table ``k``'s data; the last entry under the prior, for a new
    table) plus :func:`crp_log_weights`, normalised.

    Raises:
        ValueError: For ``log_predictive`` not of length ``len(counts) + 1`` or with NaN or
            +inf entries, and the checks of :func:`crp_log_weights`.
    """
    weights = crp_log_weights(counts, concentration)
    predictive = np.asarray(log_predictive, dtype=np.float64)
    if predictive.shape != weights.shape:
        raise ValueError(
            f"log_predictive must have shape {weights.shape} (one per table, then the new "
            f"table's), got {predictive.shape}"
        )
    if np.any(np.isnan(predictive)) or np.any(predictive == np.inf):
        raise ValueError(f"log_predictive must be finite or -inf, got {predictive!r}")
    joint = predictive + weights
    return joint - logsumexp(joint)


def _check_statistics(model: ConjugateFamily, items: Any, name: str) -> None:
    """``items`` is a list of finite, unbatched statistics of ``model`` (a restored file's),
    each one a datum could give: the base prior plus it is a proper belief (a crafted file
    whose regression precision is not symmetric loaded, then failed at the trial's end)."""
    if not isinstance(items, list):
        raise ValueError(f"{name} must be a list of statistics, got {type(items).__name__}")
    for item in items:
        if not isinstance(item, NaturalParams) or item.batch_shape != ():
            raise ValueError(f"{name} must hold unbatched NaturalParams, got {item!r}")
        model.check_params(item, name)
        check_finite_params(name, item)
        check_possible_datum(model, item.fields, name)


class RecentWindow(BeliefRule):
    """Beyond the paper (GrBAL-style peer): the posterior of the last ``window`` data,
    ``η0 + Σ_{j > t − window} s_j``, re-summed from the kept data at every update (no
    subtraction, so no rounding drift).

    Args:
        model: The conjugate family.
        window: Data kept (>= 1); 1 plans with the newest datum alone.
    """

    def __init__(self, model: ConjugateFamily, window: int = WINDOW_STEPS // BLOCK_STEPS):
        super().__init__(model)
        self.window = check_int("window", window, minimum=1)
        self._kept: list[NaturalParams] = []

    def _check_restored(self) -> None:
        """The rule's checks, then the window (>= 1) and the kept data: at most ``window``
        finite, unbatched statistics of the family."""
        super()._check_restored()
        self.window = check_int("window", self.window, minimum=1)
        _check_statistics(self.model, self._kept, "_kept")
        if len(self._kept) > self.window:
            raise ValueError(f"_kept must hold at most window = {self.window} data")

    def _update(self, s: NaturalParams) -> NaturalParams:
        kept = [*self._kept[max(0, len(self._kept) + 1 - self.window) :], s]
        belief = self.model.prior
        for datum in kept:
            belief = belief + datum
        check_posterior(self.model, belief)
        self._kept = kept
        return belief

    def reset(self) -> None:
        super().reset()
        self._kept = []

    def __repr__(self) -> str:
        return f"RecentWindow({self.model!r}, window={self.window})"


class CRPMixture(BeliefRule):
    """Beyond the paper (MOLe / DPGP-style peer): a CRP mixture of posteriors, each datum
    assigned greedily to its most probable table (module docstring).

    Args:
        model: The conjugate family; each component's belief is its prior plus its data.
        concentration: The CRP's α > 0 (larger opens new components more readily).
        max_components: Most components (>= 1); once reached, every datum joins an existing
            one.

    Attributes:
        world: Index of the component the newest datum joined (``-1`` before any datum, and
            after :meth:`reset`): the world the rule believes the data come from.
        counts: Data per component.
        last_log_probs: The newest datum's table posterior (:func:`crp_assignment_log_probs`;
            the last entry is the new table, ``-inf`` when ``max_components`` were reached).
    """

    def __init__(
        self,
        model: ConjugateFamily,
        concentration: float = CONCENTRATION,
        max_components: int = MAX_COMPONENTS,
    ):
        super().__init__(model)
        crp_log_weights([], concentration)  # checks it
        self.concentration = float(concentration)
        self.max_components = check_int("max_components", max_components, minimum=1)
        self._components: list[NaturalParams] = []  # each component's summed statistics
        self.counts: list[int] = []
        self.world = -1
        self.last_log_probs = np.zeros(1)

    def _check_restored(self) -> None:
        """The rule's checks, then the options as the constructor checks them and the
        components: finite, unbatched statistics, one count (>= 1) each, at most
        ``max_components``, and ``world`` one of them (``-1`` before the first datum)."""
        super()._check_restored()
        crp_log_weights([], self.concentration)  # checks it
        self.max_components = check_int("max_components", self.max_components, minimum=1)
        _check_statistics(self.model, self._components, "_components")
        if not isinstance(self.counts, list) or len(self.counts) != len(self._components):
            raise ValueError("counts must be a list with one count per component")
        self.counts = [check_int("counts", count, minimum=1) for count in self.counts]
        if len(self._components) > self.max_components:
            raise ValueError(f"at most max_components = {self.max_components} components")
        self.world = check_int("world", self.world, minimum=-1)
        if self.world >= len(self._components):
            raise ValueError(f"world must be below n_components = {len(self._components)}")

    @property
    def n_components(self) -> int:
        """Components opened so far."""
        return len(self.counts)

    def component_beliefs(self) -> NaturalParams | None:
        """Every component's posterior, stacked (``None`` before the first datum)."""
        if not self._components:
            return None
        return self.model.prior + stack(self._components)

    def _update(self, s: NaturalParams) -> NaturalParams:
        beliefs = self.component_beliefs()
        predictive = (
            [] if beliefs is None else list(np.atleast_1d(self.model.log_marginal(beliefs, s)))
        )
        if len(self.counts) < self.max_components:
            predictive.append(float(self.model.log_marginal(self.model.prior, s)))
        else:
            predictive.append(-np.inf)
        log_probs = crp_assignment_log_probs(predictive, self.counts, self.concentration)
        k = int(np.argmax(log_probs))
        joined = s if k == len(self.counts) else self._components[k] + s
        belief = self.model.prior + joined
        check_posterior(self.model, belief)
        if k == len(self.counts):
            self._components.append(joined)
            self.counts.append(1)
        else:
            self._components[k] = joined
            self.counts[k] += 1
        self.world = k
        self.last_log_probs = log_probs
        return belief

    def reset(self) -> None:
        """Back to the base prior for the next datum; the components are kept (a memory, as
        BAM's), and the next datum is assigned among them afresh."""
        super().reset()
        self.world = -1

    def __repr__(self) -> str:
        return (
            f"CRPMixture({self.model!r}, concentration={self.concentration:g}, "
            f"max_components={self.max_components})"
        )


def make_peer_rule(
    model: ConjugateFamily,
    memory: str,
    window_steps: int = WINDOW_STEPS,
    concentration: float = CONCENTRATION,
) -> BeliefRule:
    """The peer rule of ``memory`` (one of :data:`PEER_MEMORIES`) for data of
    :data:`BLOCK_STEPS` transitions each: a :class:`RecentWindow` of the
    ``ceil(window_steps / BLOCK_STEPS)`` newest blocks, or a :class:`CRPMixture` with
    ``concentration``.

    Raises:
        ValueError: For an unknown ``memory`` or a bad option.
    """
    if memory == "recent_window":
        steps = check_int("window_steps", window_steps, minimum=1)
        return RecentWindow(model, window=-(-steps // BLOCK_STEPS))
    if memory == "crp_mixture":
        return CRPMixture(model, concentration=concentration)
    raise ValueError(f"memory must be one of {PEER_MEMORIES}, got {memory!r}")
