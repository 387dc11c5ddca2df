"""Random Fourier features: the literal formula, the kernel they approximate, the bandwidth
rule, dtypes and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bam_rl.features import CosineTable, RandomFourierFeatures, mean_pairwise_distance


def test_matches_literal_formula_on_random_inputs():
    rff = RandomFourierFeatures(dim_in=6, n_features=200, bandwidth=6.0, seed=3)
    z = np.random.default_rng(0).normal(scale=3.0, size=(7, 6))
    expected = np.empty((7, 200))
    for n in range(7):
        for i in range(200):
            dot = sum(rff.omega[i, j] * z[n, j] for j in range(6))
            expected[n, i] = math.sqrt(2.0 / 200) * math.cos(dot + rff.offset[i])
    np.testing.assert_allclose(rff(z), expected, rtol=1e-12, atol=1e-14)


def test_draws_follow_the_documented_convention():
    rff = RandomFourierFeatures(dim_in=3, n_features=50, bandwidth=2.5, seed=11)
    rng = np.random.default_rng(11)
    omega = rng.standard_normal((50, 3)) / 2.5
    offset = rng.uniform(-np.pi, np.pi, 50)
    np.testing.assert_array_equal(rff.omega, omega)
    np.testing.assert_array_equal(rff.offset, offset)
    assert rff.scale == math.sqrt(2.0 / 50)


def test_distribution_of_frequencies_and_offsets():
    rff = RandomFourierFeatures(dim_in=4, n_features=20000, bandwidth=6.0, seed=0)
    # N(0, 1/6²): standard deviation 1/6 within sampling error (80,000 draws)
    assert abs(rff.omega.std() - 1 / 6) < 0.005
    assert abs(rff.omega.mean()) < 0.003
    assert rff.offset.min() >= -np.pi and rff.offset.max() <= np.pi
    assert abs(rff.offset.mean()) < 0.05


def test_inner_products_approximate_the_gaussian_kernel():
    rff = RandomFourierFeatures(dim_in=5, n_features=20000, bandwidth=2.0, seed=1)
    z = np.random.default_rng(2).normal(size=(6, 5))
    phi = rff(z)
    distances = np.linalg.norm(z[:, None] - z[None], axis=-1)
    kernel = np.exp(-(distances**2) / (2 * 2.0**2))
    # Monte Carlo error of 20,000 features is about sqrt(2/20000) ≈ 0.01
    np.testing.assert_allclose(phi @ phi.T, kernel, atol=0.04)


def test_any_leading_batch_shape():
    rff = RandomFourierFeatures(dim_in=2, n_features=8, seed=0)
    z = np.random.default_rng(0).normal(size=(3, 4, 5, 2))
    out = rff(z)
    assert out.shape == (3, 4, 5, 8)
    np.testing.assert_array_equal(out[1, 2], rff(z[1, 2]))
    assert rff(np.zeros(2)).shape == (8,)


def test_float32_matches_float64():
    z = np.random.default_rng(0).normal(scale=3.0, size=(100, 6))
    f64 = RandomFourierFeatures(6, seed=4)(z)
    f32 = RandomFourierFeatures(6, seed=4, dtype=np.float32)(z)
    assert f32.dtype == np.float32 and f64.dtype == np.float64
    np.testing.assert_allclose(f32, f64, atol=1e-6)


def test_same_seed_same_features_and_different_seed_differs():
    a = RandomFourierFeatures(3, seed=5)
    b = RandomFourierFeatures(3, seed=5)
    c = RandomFourierFeatures(3, seed=6)
    np.testing.assert_array_equal(a.omega, b.omega)
    assert not np.array_equal(a.omega, c.omega)


def test_mean_pairwise_bandwidth_from_data():
    data = np.random.default_rng(0).normal(size=(40, 3))
    brute = np.mean(
        [np.linalg.norm(data[i] - data[j]) for i in range(40) for j in range(i + 1, 40)]
    )
    assert mean_pairwise_distance(data) == pytest.approx(brute, rel=1e-12)
    rff = RandomFourierFeatures(3, n_features=10, bandwidth="mean-pairwise", seed=0, data=data)
    assert rff.bandwidth == pytest.approx(brute, rel=1e-12)
    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(rff.omega, rng.standard_normal((10, 3)) / rff.bandwidth)


def test_mean_pairwise_subsample_is_seeded_and_close():
    data = np.random.default_rng(1).normal(size=(3000, 2))
    a = mean_pairwise_distance(data, max_points=500, seed=0)
    b = mean_pairwise_distance(data, max_points=500, seed=0)
    full = mean_pairwise_distance(data, max_points=None)
    assert a == b
    assert a == pytest.approx(full, rel=0.05)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"dim_in": 0}, "dim_in"),
        ({"dim_in": 2, "n_features": 0}, "n_features"),
        ({"dim_in": 2, "bandwidth": 0.0}, "bandwidth"),
        ({"dim_in": 2, "bandwidth": -1.0}, "bandwidth"),
        ({"dim_in": 2, "bandwidth": float("nan")}, "bandwidth"),
        ({"dim_in": 2, "bandwidth": "median"}, "bandwidth"),
        ({"dim_in": 2, "bandwidth": "mean-pairwise"}, "data"),
        ({"dim_in": 2, "bandwidth": "mean-pairwise", "data": np.zeros((5, 3))}, "data"),
        ({"dim_in": 2, "dtype": np.int64}, "dtype"),
        ({"dim_in": 2, "seed": -1}, "seed"),
    ],
)
def test_bad_constructor_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        RandomFourierFeatures(**kwargs)


def test_bad_inputs():
    rff = RandomFourierFeatures(2, n_features=4, seed=0)
    with pytest.raises(ValueError, match="z"):
        rff(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="z"):
        rff(np.array([np.nan, 0.0]))
    with pytest.raises(ValueError, match="data"):
        mean_pairwise_distance(np.zeros((1, 2)))


def test_cosine_table_is_cos_to_rounding():
    size = CosineTable.SIZE
    rng = np.random.default_rng(0)
    turns = np.concatenate(
        [
            rng.normal(scale=2000.0, size=5000),
            rng.uniform(-CosineTable.LIMIT, CosineTable.LIMIT, size=1000),
            rng.uniform(-0.6, 0.6, size=500),
            [0.0, 0.5, -0.5, 1.5, 2.5, size / 2 - 0.5, size / 4, -size / 4, CosineTable.LIMIT],
        ]
    )
    # the exact reduction of the argument to [−π, π], then one rounding of ≤ 4.4e-16
    reduced = turns - size * np.round(turns / size)
    expected = np.cos(reduced * (2 * np.pi / size))
    out = CosineTable(turns.shape)(turns.copy(), np.empty_like(turns))
    np.testing.assert_allclose(out, expected, rtol=0, atol=6e-16)


def test_cosine_table_gives_nan_for_non_finite_arguments():
    turns = np.array([np.nan, np.inf, -np.inf, 3.0])
    with np.errstate(invalid="ignore"):
        out = CosineTable((4,))(turns.copy(), np.empty(4))
    assert np.isnan(out[:3]).all()
    assert out[3] == pytest.approx(np.cos(6 * np.pi / CosineTable.SIZE), abs=1e-16)
