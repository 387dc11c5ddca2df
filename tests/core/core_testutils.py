"""Shared helpers for the math-core tests (imported by the test modules of this directory)."""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate

from bam_rl import (
    BAM,
    BOCD,
    BAMWithChangepoints,
    ExponentialForgetting,
    PowerPrior,
    RecursiveBayes,
)
from bam_rl.families import ConjugateFamily, NaturalParams


def alpha_beta_kl(model: ConjugateFamily, ap: float, bp: float, aq: float, bq: float) -> float:
    """``model.kl(p, q)`` between the beliefs with fields ``alpha = ap, beta = bp`` and
    ``alpha = aq, beta = bq`` (the Beta and Gamma families)."""
    p = NaturalParams(model, {"alpha": ap, "beta": bp})
    q = NaturalParams(model, {"alpha": aq, "beta": bq})
    return model.kl(p, q)


def assert_alpha_beta_kl(model: ConjugateFamily, oracle, ap, bp, aq, bq, **tolerance) -> None:
    """Asserts :func:`alpha_beta_kl` equals ``oracle(ap, bp, aq, bq)`` (the family's own
    closed form or integral) within ``tolerance`` (``rtol``, ``atol``)."""
    np.testing.assert_allclose(
        alpha_beta_kl(model, ap, bp, aq, bq), oracle(ap, bp, aq, bq), **tolerance
    )


def log_quadrature(log_f, low: float, high: float, peak: float, **options) -> float:
    """``log ∫ exp(log_f)`` over ``[low, high]`` by adaptive quadrature of
    ``exp(log_f − log_f(peak))``, so nothing underflows (``peak``, near the mode, is also the
    integrator's hint; ``options`` go to :func:`scipy.integrate.quad`)."""
    c = log_f(peak)
    value, _ = integrate.quad(
        lambda t: math.exp(log_f(t) - c), low, high, points=[peak], limit=200, **options
    )
    return c + math.log(value)


def kl_by_quadrature(p, q, low: float, high: float, **options) -> float:
    """``KL(p ‖ q) = ∫ p log(p / q)`` over ``[low, high]`` for two frozen scipy densities, by
    adaptive quadrature (``options`` go to :func:`scipy.integrate.quad`): an oracle that knows
    nothing of the families."""

    def f(t):
        lp = p.logpdf(t)
        return math.exp(lp) * (lp - q.logpdf(t))

    value, _ = integrate.quad(f, low, high, limit=200, **options)
    return value


def boundary_rules(capacity: int) -> dict:
    """Every belief rule at default settings, by name, as ``model -> rule``; the bounded BAM
    rules hold at most ``capacity`` beliefs (the fuzz and refusal properties)."""
    return {
        "recursive": lambda m: RecursiveBayes(m),
        "forgetting": lambda m: ExponentialForgetting(m, alpha=0.8),
        "power": lambda m: PowerPrior(m, alpha=0.5),
        "bocd": lambda m: BOCD(m, hazard=0.1),
        "bam": lambda m: BAM(m),
        "bam-bounded": lambda m: BAM(m, capacity=capacity),
        "bam-parallel": lambda m: BAM(m, method="parallel", lam=0.1),
        "bam-bocd": lambda m: BAMWithChangepoints(m, hazard=0.1, capacity=capacity),
    }
