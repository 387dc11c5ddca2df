"""Fuzz of the math core's public boundary (issue 14, acceptance): rules × families × data —
finite, extreme and non-finite, through ``stats`` and as hand-built natural parameters.

Two properties: nothing but ``ValueError`` escapes the public calls, and a belief a rule
accepted never holds or reports NaN (its fields are finite, its mean and variance are never
NaN and the variance is never negative; reading them may raise ``ValueError`` instead).
"""

from __future__ import annotations

import numpy as np
from core_testutils import boundary_rules
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bam_rl import (
    BetaBinomial,
    GammaPoisson,
    NaturalParams,
    NormalGamma,
    NormalKnownVariance,
)
from bam_rl.families import DirichletCategorical
from bam_rl.readout import select

RULES = boundary_rules(capacity=3)

FAMILIES = {
    "beta-binomial": lambda: BetaBinomial(),
    "gamma-poisson": lambda: GammaPoisson(),
    "normal": lambda: NormalKnownVariance(),
    "normal-tight": lambda: NormalKnownVariance(noise_var=1e-10),
    "normal-gamma": lambda: NormalGamma(),
    "dirichlet": lambda: DirichletCategorical(1.0, n_categories=3),
}

EXTREME = [
    0.0,
    1.0,
    -1.0,
    0.5,
    3.0,
    1e-300,
    5e-324,
    1e8,
    1e8 + 1,
    1e150,
    1e154,
    1e200,
    1e300,
    1.7e308,
    -1e300,
    15.0,
    2.0**53,
]
NON_FINITE = [np.nan, np.inf, -np.inf]

numbers = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, min_value=-20, max_value=20),
    st.sampled_from(EXTREME),
    st.sampled_from(NON_FINITE),
    st.integers(0, 20).map(float),
)


def statistics(model, kind, values):
    """Statistics of one datum, through the family's ``stats`` or hand-built."""
    if kind == "raw":
        fields = {
            name: np.full(shape, values[i % len(values)])
            for i, (name, shape) in enumerate(model.field_shapes.items())
        }
        return NaturalParams(model, fields, values[-1] if len(values) > 2 else 0.0)
    if isinstance(model, BetaBinomial):
        k = np.abs(np.asarray(values[:2]))
        return model.stats(successes=k.min(), trials=k.max())
    if isinstance(model, GammaPoisson):
        return model.stats(np.abs(np.asarray(values)))
    if isinstance(model, DirichletCategorical):
        return model.stats(observations=np.abs(np.asarray(values)))
    return model.stats(values)


def assert_no_nan(model, rule):
    for name, value in rule.belief.fields.items():
        assert np.all(np.isfinite(value)), f"accepted belief has a non-finite {name!r}"
    for read in ("mean", "variance"):
        try:
            value = getattr(rule, read)
        except ValueError:
            continue
        parts = value if isinstance(value, tuple) else (value,)
        for part in parts:
            part = np.asarray(part, dtype=np.float64)
            assert not np.any(np.isnan(part)), f"{read} of an accepted belief is NaN"
            if read == "variance":
                assert np.all(part >= 0), "negative variance"


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    family=st.sampled_from(sorted(FAMILIES)),
    rule_name=st.sampled_from(sorted(RULES)),
    data=st.lists(
        st.tuples(
            st.sampled_from(["stats", "stats", "stats", "raw"]),
            st.lists(numbers, min_size=1, max_size=4),
        ),
        min_size=1,
        max_size=6,
    ),
    seed=st.integers(0, 2**16),
)
def test_no_nan_is_accepted_and_only_value_errors_escape(family, rule_name, data, seed):
    model = FAMILIES[family]()
    rule = RULES[rule_name](model)
    rng = np.random.default_rng(seed)
    for kind, values in data:
        try:
            s = statistics(model, kind, values)
        except ValueError:
            continue
        try:
            rule.update(s)
        except ValueError:
            pass
        assert_no_nan(model, rule)
        for probe in (
            lambda s=s: model.log_marginal(rule.prior_for_next(), s),
            lambda: model.kl(rule.belief, model.prior),
            lambda: rule.sample(rng),
        ):
            try:
                value = np.asarray(probe(), dtype=np.float64)
            except ValueError:
                continue
            assert not np.any(np.isnan(value))
        memory = getattr(rule, "memory", None)
        if memory is not None and s.batch_shape == ():
            try:
                result = select(model, memory, s, lam=0.1, method="greedy")
            except ValueError:
                continue
            assert np.isfinite(result.objective) and np.isfinite(result.base_objective)


@settings(max_examples=200, deadline=None)
@given(
    family=st.sampled_from(sorted(FAMILIES)),
    kwargs=st.dictionaries(
        st.sampled_from(["alpha", "beta", "mean", "var", "noise_var", "kappa", "n_categories"]),
        st.one_of(
            numbers, st.booleans(), st.text(max_size=3), st.lists(numbers, max_size=3), st.none()
        ),
        max_size=3,
    ),
)
def test_family_constructors_raise_only_value_errors(family, kwargs):
    classes = {
        "beta-binomial": BetaBinomial,
        "gamma-poisson": GammaPoisson,
        "normal": NormalKnownVariance,
        "normal-tight": NormalKnownVariance,
        "normal-gamma": NormalGamma,
        "dirichlet": DirichletCategorical,
    }
    cls = classes[family]
    try:
        model = cls(**kwargs)
    except TypeError as error:  # an argument the class does not have: Python's own check
        assert "unexpected keyword" in str(error)
        return
    except ValueError:
        return
    assert all(np.all(np.isfinite(v)) for v in model.prior.fields.values())
