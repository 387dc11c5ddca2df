"""The peers of issue 52 (beyond the paper): the CRP's assignment probabilities against a
direct enumeration and scipy's Normal predictive, the mixture's greedy assignment, the recent
window against recursive Bayes on the window's data, and bad input."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln

from bam_rl.beliefs import RecursiveBayes
from bam_rl.beliefs.peers import (
    CRPMixture,
    RecentWindow,
    crp_assignment_log_probs,
    crp_log_weights,
    make_peer_rule,
)
from bam_rl.families import NormalKnownVariance


def _partitions(n):
    """Every sequential table assignment of ``n`` customers (restricted growth strings)."""

    def grow(prefix):
        if len(prefix) == n:
            yield prefix
            return
        for table in range(max(prefix, default=-1) + 2):
            yield from grow([*prefix, table])

    yield from grow([])


@pytest.mark.parametrize("alpha", [0.3, 1.0, 4.0])
def test_crp_weights_multiply_to_the_eppf_and_sum_to_one(alpha):
    """The sequential weights of every assignment of 5 customers multiply to the CRP's
    exchangeable partition probability α^K Γ(α) / Γ(α + n) Π (n_k − 1)!, and sum to 1."""
    n, total = 5, 0.0
    for tables in _partitions(n):
        log_p, counts = 0.0, []
        for table in tables:
            log_p += crp_log_weights(counts, alpha)[table]
            if table == len(counts):
                counts.append(1)
            else:
                counts[table] += 1
        eppf = (
            len(counts) * math.log(alpha)
            + gammaln(alpha)
            - gammaln(alpha + n)
            + sum(gammaln(c) for c in counts)
        )
        assert log_p == pytest.approx(eppf, abs=1e-12)
        total += math.exp(log_p)
    assert total == pytest.approx(1.0, abs=1e-12)


def test_assignment_posterior_matches_scipy_normal_predictive():
    """A Normal datum's table posterior: n_k / (n + α) × N(y; m_k, σ² + v_k), the new table
    α / (n + α) × N(y; m0, σ² + v0), normalised, as scipy computes them."""
    model = NormalKnownVariance(mean=0.0, var=4.0, noise_var=0.5)
    tables = [[1.0, 1.4, 0.8], [-2.0], [3.0, 2.5]]
    y, alpha = 1.1, 0.7
    dens, beliefs = [], []
    for data in tables:
        precision = 1 / 4.0 + len(data) / 0.5
        mean = (sum(data) / 0.5) / precision
        n_k = len(data)
        dens.append(n_k * stats.norm.pdf(y, mean, math.sqrt(0.5 + 1 / precision)))
        beliefs.append(model.prior + model.stats(data))
    dens.append(alpha * stats.norm.pdf(y, 0.0, math.sqrt(0.5 + 4.0)))
    expected = np.log(np.asarray(dens) / sum(dens))
    s = model.stats([y])
    predictive = [model.log_marginal(b, s) for b in beliefs] + [model.log_marginal(model.prior, s)]
    got = crp_assignment_log_probs(predictive, [len(d) for d in tables], alpha)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_mixture_assigns_by_brute_force_and_reports_its_world():
    """Each datum joins the argmax of the enumerated (predictive × CRP weight) over the
    components so far and a new one; the belief is that component's posterior."""
    model = NormalKnownVariance(mean=0.0, var=25.0, noise_var=0.25)
    rng = np.random.default_rng(0)
    data = [rng.normal(mu, 0.5, size=3) for mu in (0, 0, 8, 8, 0, -8, 8)]
    rule = CRPMixture(model, concentration=1.0)
    members: list[list[float]] = []
    for block in data:
        scores = []
        for table in [*members, []]:
            prior = model.prior + (model.stats(table) if table else model.zeros())
            weight = len(table) if table else 1.0
            scores.append(model.log_marginal(prior, model.stats(block)) + math.log(weight))
        k = int(np.argmax(scores))
        if k == len(members):
            members.append([])
        members[k].extend(block.tolist())
        rule.update(model.stats(block))
        assert rule.world == k
        assert rule.belief.allclose(model.prior + model.stats(members[k]))
    assert rule.n_components == 3  # worlds 0, 8 and −8, the revisits recognised
    assert rule.counts == [3, 3, 1]


def test_mixture_caps_components_and_reset_keeps_them():
    model = NormalKnownVariance(mean=0.0, var=25.0, noise_var=0.01)
    rule = CRPMixture(model, max_components=2)
    for mu in (0.0, 10.0, -10.0):
        rule.update(model.stats([mu, mu]))
    assert rule.n_components == 2 and rule.last_log_probs[-1] == -np.inf
    rule.reset()
    assert rule.world == -1 and rule.n_components == 2
    assert rule.belief.allclose(model.prior)
    rule.update(model.stats([10.0]))
    assert rule.world == 1


@pytest.mark.parametrize("window", [1, 2, 5])
def test_recent_window_is_recursive_bayes_on_the_last_data(window):
    model = NormalKnownVariance(mean=0.0, var=1.0, noise_var=1.0)
    data = [model.stats([float(v)]) for v in np.random.default_rng(1).normal(size=8)]
    rule = RecentWindow(model, window=window)
    for t, s in enumerate(data):
        rule.update(s)
        reference = RecursiveBayes(model)
        for kept in data[max(0, t + 1 - window) : t + 1]:
            reference.update(kept)
        assert rule.belief.allclose(reference.belief)
    rule.reset()
    assert rule.belief.allclose(model.prior)


def test_make_peer_rule_and_bad_input():
    model = NormalKnownVariance()
    assert make_peer_rule(model, "recent_window", window_steps=25).window == 3
    assert isinstance(make_peer_rule(model, "crp_mixture"), CRPMixture)
    with pytest.raises(ValueError, match="memory must be one of"):
        make_peer_rule(model, "nosuch")
    with pytest.raises(ValueError, match="concentration"):
        CRPMixture(model, concentration=0.0)
    with pytest.raises(ValueError, match="window"):
        RecentWindow(model, window=0)
    with pytest.raises(ValueError, match="counts"):
        crp_log_weights([1, 0], 1.0)
    with pytest.raises(ValueError, match="log_predictive"):
        crp_assignment_log_probs([0.0], [1], 1.0)
    with pytest.raises(ValueError, match="log_predictive"):
        crp_assignment_log_probs([np.nan, 0.0], [1], 1.0)


def test_every_partition_is_enumerated():
    """The enumeration above covers the Bell number of partitions (52 for 5)."""
    assert sum(1 for _ in _partitions(5)) == 52
    assert len(set(map(tuple, _partitions(4)))) == 15
    assert all(p[0] == 0 for p in itertools.islice(_partitions(3), 5))
