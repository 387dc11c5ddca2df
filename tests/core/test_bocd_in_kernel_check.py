"""Issue 50: the compiled BOCD step refuses an impossible datum in its own pass.

The detector used to check every datum with the family's ``_check_belief`` in NumPy before
the compiled step (a second pass that cost as much as the step); the step now makes the check
itself (:func:`bam_rl.kernels.bocd.possible`). Here: that check refuses exactly what the old
per-datum check refused (its literal reference below), the detector and its batch refuse those
data as before, and the refusal is the check's (the unchecked recursion would absorb the datum).
With it, the kernels the step gained against literal NumPy references (the cached
log-partition values, the column selection, the tuple entry point, the state kept between
steps), and the one-belief fast paths of the families' checks and of ``NaturalParams.__add__``
against their array paths.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bam_rl import (
    BetaBinomial,
    ChangepointDetector,
    DirichletCategorical,
    GammaPoisson,
    NaturalParams,
    NormalGamma,
    NormalKnownVariance,
)
from bam_rl import bocd as bocd_module
from bam_rl.families.base import stack
from bam_rl.kernels import bocd as kernel

MODELS: dict[int, Any] = {
    0: NormalKnownVariance(0.3, 2.0, 0.5),
    1: NormalGamma(0.2, 1.3, 0.7, 2.1),
    2: BetaBinomial(1.0, 1.0),
    3: GammaPoisson(1.5, 0.5),
}
IDS = {kind: type(model).__name__ for kind, model in MODELS.items()}


def old_check_refuses(model: Any, s: dict[str, float]) -> bool:
    """The detector's per-datum check before issue 50 (``ChangepointDetector._check_possible``
    at 3adc006), literally: the base prior plus the datum through the family's NumPy check."""
    prior = {
        name: np.asarray(value, dtype=np.float64) for name, value in model.prior.fields.items()
    }
    fields = {name: prior[name] + np.float64(s[name]) for name in prior}
    try:
        with np.errstate(all="ignore"):
            model._check_belief(fields)
    except ValueError:
        return True
    return False


def _prior_array(model: Any) -> np.ndarray:
    return np.array([float(model.prior.fields[name]) for name in model.field_shapes])


SPECIAL = [0.0, -0.0, 1e-300, -1e-300, 5e-324, 1e300, -1e300, math.inf, -math.inf, math.nan]
VALUES = st.one_of(
    st.floats(-10.0, 10.0), st.sampled_from(SPECIAL), st.floats(allow_nan=True, width=64)
)


@pytest.mark.parametrize("kind", sorted(MODELS), ids=IDS.get)
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_the_kernels_check_refuses_exactly_what_the_old_check_refused(kind: int, data: Any):
    model = MODELS[kind]
    names = list(model.field_shapes)
    s = {name: data.draw(VALUES, label=name) for name in names}
    if kind == 1 and data.draw(st.booleans(), label="near beta = 0"):
        # the prior plus s has beta = beta_shifted − kappa_mean² / (2 kappa) at the edge of
        # its precision (refused: improper or imprecise), or just above it (accepted)
        km = data.draw(st.floats(-1e6, 1e6), label="kappa_mean total")
        kappa = data.draw(st.floats(1e-3, 1e3), label="kappa total")
        scale = data.draw(st.sampled_from([-1e-9, 0.0, 1e-12, 1e-10, 1e-6]), label="beta")
        shifted = 0.5 * km * (km / kappa) * (1.0 + scale) + scale
        prior = model.prior.fields
        s["kappa_mean"] = km - float(prior["kappa_mean"])
        s["kappa"] = kappa - float(prior["kappa"])
        s["beta_shifted"] = shifted - float(prior["beta_shifted"])
    values = np.array([s[name] for name in names])
    assert kernel.possible(kind, _prior_array(model), values) is not old_check_refuses(model, s)


IMPOSSIBLE: dict[int, list[dict[str, float]]] = {
    0: [
        {"precision_mean": 0.0, "precision": -3.0},
        {"precision_mean": 1.0, "precision": -0.5},  # prior precision 0.5: exactly 0
    ],
    1: [
        {"kappa_mean": 0.0, "kappa": -2.0, "beta_shifted": 0.0, "alpha": 0.5},
        {"kappa_mean": 0.0, "kappa": 1.0, "beta_shifted": 0.0, "alpha": -1.0},
        # beta_shifted = kappa_mean² / (2 kappa) for the prior plus s: beta = 0 (imprecise)
        {"kappa_mean": 2.6 - 0.26, "kappa": 0.0, "beta_shifted": 2.6 - 2.1 - 0.026, "alpha": 0.0},
    ],
    2: [
        {"alpha": -5.0, "beta": 1.0},
        {"alpha": -1.5, "beta": 0.0},  # Beta(−0.5, 1): a finite log-partition
        {"alpha": 2.0, "beta": -1.0},  # Beta(3, 0)
    ],
    3: [
        {"alpha": -2.0, "beta": 0.0},  # Gamma(−0.5, 0.5): a finite log-partition
        {"alpha": 1.0, "beta": -0.5},  # rate exactly 0
        {"alpha": 1.0, "beta": -1.0},
    ],
}
#: Impossible data whose predictive the unchecked recursion would find finite under the
#: prior (and every later row): only the check refuses them.
UNCHECKED_FINITE = [(2, 1), (3, 0), (1, 1)]


def _valid(model: Any, rng: np.random.Generator) -> NaturalParams:
    if isinstance(model, BetaBinomial):
        return model.stats(successes=int(rng.integers(0, 3)), trials=2)
    if isinstance(model, GammaPoisson):
        return model.stats(int(rng.integers(0, 4)))
    return model.stats([float(rng.normal(0.0, 1.0))])


def _state(detector: ChangepointDetector) -> tuple:
    fields = detector.beliefs.fields
    return (
        detector.t,
        detector.run_lengths.tobytes(),
        detector.log_run_length_probabilities.tobytes(),
        tuple(fields[name].tobytes() for name in sorted(fields)),
        detector.log_evidence,
    )


@pytest.mark.parametrize(
    ("kind", "index"),
    [(kind, i) for kind, data in IMPOSSIBLE.items() for i in range(len(data))],
    ids=lambda v: str(v),
)
@pytest.mark.parametrize("before", [0, 3])
def test_the_detector_refuses_the_old_checks_impossible_data(kind: int, index: int, before: int):
    model = MODELS[kind]
    s = IMPOSSIBLE[kind][index]
    assert old_check_refuses(model, s)
    datum = NaturalParams(model, s)
    rng = np.random.default_rng(before)
    detector = ChangepointDetector(model, 0.1, max_run_length=4)
    for _ in range(before):
        detector.update(_valid(model, rng))
    state = _state(detector)
    with pytest.raises(ValueError, match="impossible datum"):
        detector.update(datum)
    assert _state(detector) == state
    detector.update(_valid(model, rng))  # still usable
    # the batch: absorbs the data before the impossible one, then refuses it
    batch = ChangepointDetector(model, 0.1, max_run_length=4)
    with pytest.raises(ValueError, match="impossible datum"):
        batch.run(stack([_valid(model, rng), _valid(model, rng), datum]))
    assert batch.t == 2


@pytest.mark.parametrize(("kind", "index"), UNCHECKED_FINITE, ids=str)
def test_the_refusal_is_the_kernels_check(kind: int, index: int):
    """The unchecked recursion would absorb these data (their predictive under the prior,
    the literal NumPy formula, is finite); the step refuses them (NaN, the state returned
    unchanged), so removing :func:`possible` from it fails here."""
    model = MODELS[kind]
    s = IMPOSSIBLE[kind][index]
    prior = model.prior.fields
    total = {name: prior[name] + s[name] for name in prior}
    predictive = model.log_partition_fields(total) - model.log_partition_fields(prior)
    assert np.isfinite(predictive)
    detector = ChangepointDetector(model, 0.1)
    detector.update(_valid(model, np.random.default_rng(0)))
    plan = detector._current_plan()
    state = detector._state_matrix(plan)
    values = tuple(float(s[name]) for name in model.field_shapes)
    out = kernel.step_datum(kind, state, detector._run_lengths, values, 0.0, plan.settings)
    assert math.isnan(out[2])
    assert out[0] is state and out[1] is detector._run_lengths
    out = kernel.step(kind, state, detector._run_lengths, np.array(values), 0.0, plan.settings)
    assert math.isnan(out[2])


# ----------------------------------------------------------------- the kernels it added
def _formula(kind: int, fields: np.ndarray) -> float:
    """``A(η)`` of kinds 0 and 1, the literal NumPy formulas of the families (scipy's
    ``gammaln`` for ``lgamma``)."""
    from scipy.special import gammaln

    if kind == 0:
        h1, h2 = fields
        return float(0.5 * h1 * h1 / h2 - 0.5 * np.log(h2) + 0.5 * np.log(2 * np.pi))
    km, kappa, shifted, alpha = fields
    beta = shifted - 0.5 * km * (km / kappa)
    return float(
        gammaln(alpha) - alpha * np.log(beta) + 0.5 * np.log(2 * np.pi) - 0.5 * np.log(kappa)
    )


@pytest.mark.parametrize("kind", [0, 1], ids=IDS.get)
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_cached_log_partition_values_give_the_formula_bit_for_bit(kind: int, data: Any):
    """The step's log-partition of kinds 0 and 1 with its values taken from the old column
    (a hit) or computed (a miss) is the uncached kernel's bit for bit, the literal NumPy
    formula's to rounding, and leaves each column's cached values its own."""
    width = 2 if kind == 0 else 4
    positive = st.floats(0.05, 50.0)
    if kind == 0:
        row = [data.draw(st.floats(-20.0, 20.0)), data.draw(positive)]
    else:
        km, kappa, alpha = data.draw(st.floats(-20, 20)), data.draw(positive), data.draw(positive)
        row = [km, kappa, 0.5 * km * km / kappa + data.draw(positive), alpha]
    rows = kernel.FIELDS + width + (1 if kind == 0 else 2)
    new = np.full((rows, 2), np.nan)
    new[kernel.FIELDS : kernel.FIELDS + width, 1] = row
    first = kernel.FIELDS + width
    cold = np.full((rows, 2), np.nan)  # no column 1: a miss
    miss = kernel._log_partition_cached(kind, new, first, cold, 0, 0)
    cached = new[first:, 1].copy()
    expected = kernel._log_partition(kind, np.array(row))
    assert miss == expected
    assert miss == pytest.approx(_formula(kind, np.array(row)), rel=1e-12, abs=1e-12)
    old = new.copy()  # an old column 1 with the same arguments: a hit
    again = np.full((rows, 2), np.nan)
    again[kernel.FIELDS : kernel.FIELDS + width, 1] = row
    assert kernel._log_partition_cached(kind, again, first, old, 0, 2) == expected
    np.testing.assert_array_equal(again[first:, 1], cached)
    if kind == 1:  # a different alpha in the old column: recomputed, not taken
        old[kernel.FIELDS + 3, 1] = row[3] + 0.5
        old[first, 1] = 123.0
        again[first:, 1] = np.nan
        assert kernel._log_partition_cached(kind, again, first, old, 0, 2) == expected


def test_columns_is_numpy_take():
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(7, 12))
    for index in ([0], [0, 3, 4, 11], list(range(12)), [2, 5]):
        got = kernel._columns(matrix, np.array(index))
        np.testing.assert_array_equal(got, matrix[:, index])
        assert got.flags.c_contiguous


@pytest.mark.parametrize("kind", sorted(MODELS), ids=IDS.get)
def test_step_datum_is_step(kind: int):
    model = MODELS[kind]
    rng = np.random.default_rng(kind)
    detector = ChangepointDetector(model, 0.05, max_run_length=6)
    for _ in range(9):
        detector.update(_valid(model, rng))
    plan = detector._current_plan()
    s = _valid(model, rng)
    values = tuple(float(s.fields[name]) for name in model.field_shapes)
    args = (detector._state_matrix(plan), detector._run_lengths)
    one = kernel.step_datum(kind, *args, values, float(s.log_h), plan.settings)
    two = kernel.step(kind, *args, np.array(values), float(s.log_h), plan.settings)
    n = one[1].shape[0]
    np.testing.assert_array_equal(one[0][:, :n], two[0][:, :n])
    np.testing.assert_array_equal(one[1], two[1])
    assert one[2] == two[2]


def _mixed_stream(model: Any, n: int, seed: int) -> list[NaturalParams]:
    """Mostly one observation a datum, sometimes two (the cached values then miss)."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n):
        size = 2 if rng.random() < 0.15 else 1
        if isinstance(model, BetaBinomial):
            out.append(model.stats(successes=int(rng.integers(0, size + 1)), trials=size))
        elif isinstance(model, GammaPoisson):
            out.append(model.stats(rng.poisson(2.0 + (t // 40) % 3, size=size)))
        else:
            out.append(model.stats(rng.normal((t // 40) % 3, 1.0, size=size)))
    return out


@pytest.mark.parametrize("kind", sorted(MODELS), ids=IDS.get)
@pytest.mark.parametrize(("cap", "threshold"), [(None, 0.0), (25, 0.0), (25, 1e-6), (None, 1e-4)])
def test_the_state_kept_between_steps_changes_nothing(kind: int, cap: Any, threshold: float):
    """A detector whose kept state matrix (and its cached values) is dropped before every
    step, so each step starts from its arrays, ends bit for bit where the usual one does, and
    so does the batch ``run``."""
    model = MODELS[kind]
    data = _mixed_stream(model, 160, kind)
    kept = ChangepointDetector(model, 1 / 30, prune_threshold=threshold, max_run_length=cap)
    cold = ChangepointDetector(model, 1 / 30, prune_threshold=threshold, max_run_length=cap)
    batch = ChangepointDetector(model, 1 / 30, prune_threshold=threshold, max_run_length=cap)
    for s in data:
        kept.update(s)
        bocd_module._COMPILED.pop(cold, None)
        cold.update(s)
        assert _state(kept) == _state(cold)
    batch.run(stack(data))
    assert _state(batch) == _state(kept)
    np.testing.assert_array_equal(batch.filtered_weights, kept.filtered_weights)


def test_a_changed_cap_is_taken_as_the_numpy_path_takes_it(monkeypatch):
    model = MODELS[1]
    data = _mixed_stream(model, 60, 3)

    def cap_changed_midway() -> ChangepointDetector:
        detector = ChangepointDetector(model, 0.1, max_run_length=20)
        for i, s in enumerate(data):
            if i == 30:
                detector.max_run_length = 5
            detector.update(s)
        return detector

    compiled = cap_changed_midway()
    monkeypatch.setattr(bocd_module, "_kernel_kind", lambda model: None)
    reference = cap_changed_midway()
    np.testing.assert_array_equal(compiled.run_lengths, reference.run_lengths)
    np.testing.assert_allclose(
        compiled.log_run_length_probabilities, reference.log_run_length_probabilities, rtol=1e-9
    )


# ------------------------------------------------ the one-belief fast paths of the families
def _outcome(model: Any, fields: dict[str, Any]) -> str | None:
    try:
        with np.errstate(all="ignore"):
            model._check_belief(fields)
    except ValueError as error:
        return str(error)
    return None


@pytest.mark.parametrize("kind", sorted(MODELS), ids=IDS.get)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_one_beliefs_check_is_the_array_check(kind: int, data: Any):
    """A belief of 0-d fields (or NumPy floats) takes the families' Python-float comparisons;
    it passes or fails, with the same message, as the same values in arrays do."""
    model = MODELS[kind]
    values = {name: data.draw(VALUES, label=name) for name in model.field_shapes}
    if kind == 1 and data.draw(st.booleans()):  # beta = 0 to rounding: the precision check
        km, kappa = np.float64(values["kappa_mean"]), np.float64(values["kappa"])
        with np.errstate(all="ignore"):
            values["beta_shifted"] = float(0.5 * km * (km / kappa))
    arrays = {name: np.array([value]) for name, value in values.items()}
    expected = _outcome(model, arrays)
    assert _outcome(model, {k: np.array(v) for k, v in values.items()}) == expected
    assert _outcome(model, {k: np.float64(v) for k, v in values.items()}) == expected


@pytest.mark.parametrize("kind", sorted(MODELS), ids=IDS.get)
def test_one_belief_plus_one_datum_is_the_general_sum(kind: int):
    model = MODELS[kind]
    rng = np.random.default_rng(kind)
    belief = model.prior
    for _ in range(20):
        s = _valid(model, rng)
        fast = belief + s
        general = NaturalParams(
            model,
            {name: belief.fields[name] + s.fields[name] for name in belief.fields},
            belief.log_h + s.log_h,
        )
        assert fast.batch_shape == general.batch_shape == ()
        for name in general.fields:
            assert type(fast.fields[name]) is np.ndarray
            assert fast.fields[name].dtype == general.fields[name].dtype
            assert fast.fields[name].tobytes() == general.fields[name].tobytes()
            assert fast.fields[name].shape == general.fields[name].shape
        assert fast.log_h.tobytes() == general.log_h.tobytes()
        belief = fast


def test_the_sums_fast_path_refuses_an_overflow_and_keeps_vector_fields():
    model = NormalKnownVariance()
    big = NaturalParams(model, {"precision_mean": 1.5e308, "precision": 1.0})
    with pytest.raises(ValueError, match="must be finite"):
        big + big
    dirichlet = DirichletCategorical(np.ones(3))
    s = dirichlet.stats(np.array([0, 2, 2]))
    total = dirichlet.prior + s
    np.testing.assert_array_equal(total.fields["alpha"], [2.0, 1.0, 3.0])
    assert total.fields["alpha"].shape == (3,) and total.batch_shape == ()
    batched = stack([s, s]) + s  # batched: the general path
    assert batched.batch_shape == (2,)
