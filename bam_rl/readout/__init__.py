"""Readout-weight selection: which past data BAM remembers for the new datum (paper §2.1).

For readout weights ``W`` the BAM prior is ``η(W) = η0 + Σ_j w_j s_j`` and the selection
objective (the log posterior of ``W`` under the penalised-complexity prior, eq. 16) is::

    J(W) = log p(D_t | η(W)) − λ · sqrt(2 · KL(p(θ | η(W)) ‖ p(θ)))

with the KL clamped at 0 before the square root. Methods:

* ``"greedy"`` — Algorithm 1 (bottom-up): from ``W = 0`` each round scores every *unselected*
  item added to the current set (the paper's pseudo-code tests the condition the wrong way
  round), adds the best while ``J`` strictly improves; ties go to the lowest index.
* ``"parallel"`` — Algorithm 2: scores every item alone, keeps those scoring above the base
  prior, and selects the kept items scoring at or above the ``q`` quantile of the kept
  scores. (The pseudo-code's strict ``>`` selects nothing when, as is common with discrete
  data, the kept scores tie at the quantile; with ``>=``, ``q = 0`` selects every item that
  beats the base prior and ``q = 1`` the best ones.)
* ``"exhaustive"`` — all ``2^m`` binary readouts (``m <= 16``), for verification.
* ``"continuous"`` — weights in ``[0, 1]`` by L-BFGS-B from an initial readout (the greedy
  answer by default); the result is never worse than its start.

Every candidate scored in a round is evaluated in one batched family call. Greedy selection
first tries the structure-exploiting paths of :mod:`bam_rl.readout.greedy` (one-point Gaussian
records, repeated records, Bayesian linear regression), which return the same readout;
``fast=False`` forces the generic loop.

Modules: :mod:`~bam_rl.readout.select` (``select``, ``objective``, the four methods),
:mod:`~bam_rl.readout.rule` (Algorithm 1's acceptance rule, the fast paths' result and its
lazy audit trail), :mod:`~bam_rl.readout.greedy` (which fast path applies; repeated records),
:mod:`~bam_rl.readout.gaussian` (one-point Gaussian records in closed form) and
:mod:`~bam_rl.readout.regression` (Bayesian linear regression, :class:`FactorCache`).
"""

from bam_rl.readout.gaussian import gaussian_greedy_readout
from bam_rl.readout.regression import FactorCache
from bam_rl.readout.rule import FastGreedy, LazyRounds, accept
from bam_rl.readout.select import (
    MAX_EXHAUSTIVE_ITEMS,
    METHODS,
    OPTIONS,
    ReadoutResult,
    check_select_options,
    objective,
    select,
)

__all__ = [
    "MAX_EXHAUSTIVE_ITEMS",
    "METHODS",
    "OPTIONS",
    "FactorCache",
    "FastGreedy",
    "LazyRounds",
    "ReadoutResult",
    "accept",
    "check_select_options",
    "gaussian_greedy_readout",
    "objective",
    "select",
]
