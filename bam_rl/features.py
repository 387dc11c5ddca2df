"""Random Fourier features (Rahimi & Recht, 2007) for the BAM dynamics model (App. D.1).

The features approximate a Gaussian (RBF) kernel of length scale ``bandwidth``::

    φ(z) = sqrt(2 / D) · cos(Ω z + b),   Ω_ij ~ N(0, 1 / bandwidth²),   b_i ~ U[−π, π],

so that ``E[φ(z)ᵀ φ(z')] = exp(−‖z − z'‖² / (2 · bandwidth²))``. ``D`` is ``n_features``,
``Ω`` has shape ``(D, dim_in)``. Inputs ``z`` of shape ``(..., dim_in)`` map to features of
shape ``(..., D)``: any leading batch shape is evaluated in one vectorised call.

Convention for the random draws: one :class:`numpy.random.Generator` seeded with ``seed``
draws ``Ω`` first (``standard_normal((D, dim_in)) / bandwidth``), then ``b``
(``uniform(−π, π, D)``), so the same seed and bandwidth give the same features.

The paper (App. D.1) sets the bandwidth to "the mean pairwise distance of the inputs (states
and actions)", reported as 6.0; ``bandwidth="mean-pairwise"`` computes that rule
(:func:`mean_pairwise_distance`) from ``data``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.spatial.distance import pdist

from bam_rl import hyperparams
from bam_rl.checks import as_float_array, check_int, check_memory, check_seed

__all__ = ["CosineTable", "RandomFourierFeatures", "mean_pairwise_distance"]

_DTYPES = ("float32", "float64")


def _cosine_table(size: int) -> tuple[np.ndarray, np.ndarray]:
    """``cos`` and ``sin`` of ``2π i / size``, ``i < size``, to about half an ulp.

    ``θ_i = 2π i / size`` is rounded to ``fl(θ_i)``; its rounding error ``e_i`` is recovered
    with ``2π = h1 + h2`` (``h1`` of 24 significant bits, so ``i·h1`` is exact) and
    ``cos θ_i = cos fl(θ_i) − e_i sin fl(θ_i)`` to first order (``|e_i| < 1e-15``).
    """
    two_pi_tail = 2.4492935982947064e-16  # 2π − fl(2π)
    h1 = float(np.float32(2.0 * math.pi))
    h2 = (2.0 * math.pi - h1) + two_pi_tail
    index = np.arange(size, dtype=np.float64) / size  # exact (size is a power of 2)
    angle = index * (2.0 * math.pi)
    error = (index * h1 - angle) + index * h2  # index·h1 exact, the difference exact
    cos, sin = np.cos(angle), np.sin(angle)
    return cos - error * sin, sin + error * cos


class CosineTable:
    """A branch-free float64 ``cos`` for the planning rollouts' hot loop.

    NumPy's float64 ``cos`` calls the C library once per element (no SIMD on AVX2
    machines), about 10–17 ns an element; the planner evaluates 32 × 50 × 200 of them per
    control step. This evaluates ``cos(2π t / N)`` (``N`` = :attr:`SIZE` = 1024) for an
    argument ``t`` given in units of ``2π / N`` ("turns"), with a handful of vectorised
    passes over preallocated buffers::

        k = rint(t),  u = t − k  (exact),  i = k mod N,
        cos(2π t / N) = C_i · cos(δ) − S_i · sin(δ),   δ = 2π u / N,  |δ| ≤ π / N,

    where ``C_i, S_i`` are ``cos, sin(2π i / N)`` from a table and ``cos δ − 1``, ``sin δ``
    are short Taylor polynomials (truncation below 2e-18). The absolute error is at most a
    few units of 1e-16 (NumPy's own ``cos`` is within about 1e-16): the result is ``cos`` of
    the same argument up to rounding, not bit-identical to ``numpy.cos``.

    The error bound holds for ``|t| ≤`` :attr:`LIMIT` (2⁴⁰); non-finite ``t`` give ``nan``
    (with NumPy's invalid-value warning). Callers check the range and fall back to
    ``numpy.cos`` outside it.

    Args:
        shape: Shape of the arrays it will be called on (buffers are allocated once).

    Examples:
        >>> table = CosineTable((3,))
        >>> turns = np.array([0.0, 256.0, -100.5])  # 0, π/2, −2π·100.5/1024
        >>> out = table(turns.copy(), np.empty(3))
        >>> bool(np.allclose(out, np.cos(2 * np.pi * turns / 1024), rtol=0, atol=1e-15))
        True
    """

    SIZE = 1024
    LIMIT = 2.0**40
    _COS, _SIN = _cosine_table(SIZE)
    _D = 2.0 * math.pi / SIZE
    # cos δ − 1 = u²(a1 + a2 u²) and sin δ = u(b0 + u²(b1 + b2 u²)), δ = D·u, |u| ≤ 1/2
    # (the first terms left out, δ⁶/720 and δ⁷/5040, are below 2e-18)
    _A1, _A2 = -(_D**2) / 2.0, _D**4 / 24.0
    _B0, _B1, _B2 = _D, -(_D**3) / 6.0, _D**5 / 120.0
    # adding 1.5·2⁵² rounds to an integer k (ties to even, as rint) kept in the low mantissa
    # bits: (t + MAGIC) − MAGIC = rint(t), and the bits give k mod SIZE (|t| < 2⁵¹)
    _MAGIC = 1.5 * 2.0**52

    def __init__(self, shape: tuple[int, ...]):
        self.shape = tuple(shape)
        self._k = np.empty(self.shape)
        self._index = np.empty(self.shape, dtype=np.int64)
        self._u2 = np.empty(self.shape)
        self._poly = np.empty(self.shape)
        self._c = np.empty(self.shape)
        self._s = np.empty(self.shape)

    def __call__(self, turns: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Writes ``cos(2π · turns / N)`` into ``out`` (``turns`` is overwritten)."""
        k, index, u2, poly, c, s = self._k, self._index, self._u2, self._poly, self._c, self._s
        np.add(turns, self._MAGIC, out=k)
        np.bitwise_and(k.view(np.int64), self.SIZE - 1, out=index)
        k -= self._MAGIC  # rint(turns)
        turns -= k  # u, exact
        np.take(self._COS, index, out=c)
        np.take(self._SIN, index, out=s)
        np.multiply(turns, turns, out=u2)
        np.multiply(u2, self._B2, out=poly)  # sin δ
        poly += self._B1
        poly *= u2
        poly += self._B0
        poly *= turns
        s *= poly
        np.multiply(u2, self._A2, out=poly)  # cos δ − 1
        poly += self._A1
        poly *= u2
        np.multiply(c, poly, out=out)
        out -= s
        out += c
        return out


def mean_pairwise_distance(data: Any, max_points: int | None = 2000, seed: int | None = 0) -> float:
    """Mean Euclidean distance over all pairs of distinct rows of ``data`` (the paper's rule).

    Args:
        data: Inputs, shape ``(n, dim_in)`` with ``n >= 2``.
        max_points: When ``n`` exceeds it, the mean is taken over a uniform random subset of
            this many rows (drawn without replacement with ``seed``), which keeps the cost at
            ``O(max_points²)``; ``None`` always uses every row.
        seed: Seed of the subset draw.

    Returns:
        The mean pairwise distance (a Python float).

    Raises:
        ValueError: For data that is not a finite ``(n, dim_in)`` array with ``n >= 2``.
    """
    data = as_float_array("data", data)
    if data.ndim != 2 or data.shape[0] < 2:
        raise ValueError(f"data must have shape (n, dim_in) with n >= 2, got {data.shape}")
    if max_points is not None:
        max_points = check_int("max_points", max_points, minimum=2)
    points = data.shape[0] if max_points is None else min(data.shape[0], max_points)
    # pdist holds one float64 distance per pair
    check_memory(f"{points} points (max_points = {max_points})", 4 * points * (points - 1))
    if max_points is not None and data.shape[0] > max_points:
        rng = np.random.default_rng(check_seed(seed))
        data = data[rng.choice(data.shape[0], size=max_points, replace=False)]
    return float(np.mean(pdist(data)))


def _input_vector(name: str, value: Any, dim_in: int, positive: bool) -> np.ndarray | None:
    """``value`` as a finite float64 ``(dim_in,)`` array (entries > 0 when ``positive``), or
    ``None``; ``ValueError`` naming ``name`` otherwise."""
    if value is None:
        return None
    array = as_float_array(name, value)
    rule = "finite entries > 0" if positive else "finite entries"
    if array.shape != (dim_in,) or (positive and not np.all(array > 0)):
        raise ValueError(f"{name} must be None or shape ({dim_in},) = (dim_in,) with {rule}")
    return array.copy()


class RandomFourierFeatures:
    """The random Fourier feature map ``φ(z) = sqrt(2/D) · cos(Ω z + b)``.

    Args:
        dim_in: Dimension of the inputs ``z``.
        n_features: Number of features ``D`` (200 in the paper).
        bandwidth: Kernel length scale ``> 0`` (6.0 in the paper), or ``"mean-pairwise"`` to
            set it to :func:`mean_pairwise_distance` of ``data``.
        seed: Seed of the draws of ``Ω`` and ``b`` (see the module docstring).
        dtype: ``numpy.float64`` (default) or ``numpy.float32``: the dtype of the features
            returned (inputs are cast to it).
        data: Inputs ``(n, dim_in)`` for ``bandwidth="mean-pairwise"``.
        scales: Beyond the paper: per-input scales ``s > 0`` (shape ``(dim_in,)``), so the
            kernel is ``exp(−Σ_d (z_d − z'_d)² / (2 · bandwidth² · s_d²))`` (per-dimension
            length scales ``bandwidth · s_d``): ``Ω``'s column ``d`` is divided by ``s_d``.
            ``None`` (default): all 1, the paper's isotropic kernel, bit for bit.
        center: Beyond the paper: an input shift ``c`` (shape ``(dim_in,)``) so the features
            are ``cos(Ω (z − c) + b)`` (``b − Ω c`` is stored as :attr:`offset`); ``None``
            (default): no shift, bit for bit the paper's.

    Attributes:
        dtype: ``"float32"`` or ``"float64"``.
        omega: ``Ω``, shape ``(n_features, dim_in)``, in ``dtype``.
        offset: ``b``, shape ``(n_features,)``, in ``dtype``.
        bandwidth: The bandwidth used (a float, also when computed from data).
        scales: The per-input scales (``None``: all 1, the paper's kernel).
        center: The input shift (``None``: none).

    Examples:
        >>> rff = RandomFourierFeatures(dim_in=2, n_features=4, bandwidth=1.0, seed=0)
        >>> rff(np.zeros((3, 2))).shape
        (3, 4)
    """

    def __init__(
        self,
        dim_in: int,
        n_features: int = hyperparams.RFF_FEATURES,
        bandwidth: float | str = hyperparams.RFF_BANDWIDTH,
        seed: int | None = None,
        dtype: Any = np.float64,
        data: Any = None,
        *,
        scales: Any = None,
        center: Any = None,
    ):
        self.dim_in = check_int("dim_in", dim_in)
        self.n_features = check_int("n_features", n_features)
        # Ω is drawn, scaled, cast and transposed: measured 24 bytes an entry at the peak
        check_memory(
            f"n_features = {self.n_features} with dim_in = {self.dim_in}",
            32 * self.n_features * (self.dim_in + 1),
        )
        self.seed = check_seed(seed)
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
        if name not in _DTYPES:
            raise ValueError(f"dtype must be numpy.float32 or numpy.float64, got {dtype!r}")
        #: dtype name of the features (a string, so the map saves without pickle)
        self.dtype = name
        if isinstance(bandwidth, str):
            if bandwidth != "mean-pairwise":
                raise ValueError(
                    f"bandwidth must be a number > 0 or 'mean-pairwise', got {bandwidth!r}"
                )
            if data is None:
                raise ValueError("data must be given when bandwidth='mean-pairwise'")
            data = as_float_array("data", data)
            if data.ndim != 2 or data.shape[1] != self.dim_in:
                raise ValueError(
                    f"data must have shape (n, {self.dim_in}) = (n, dim_in), got {data.shape}"
                )
            value = mean_pairwise_distance(data)
        else:
            given = as_float_array("bandwidth", bandwidth)
            value = float(given) if given.ndim == 0 else math.nan
        if not value > 0:
            raise ValueError(
                f"bandwidth must be a finite number > 0 or 'mean-pairwise', got {bandwidth!r}"
            )
        self.bandwidth = value
        self.scales = _input_vector("scales", scales, self.dim_in, positive=True)
        self.center = _input_vector("center", center, self.dim_in, positive=False)
        rng = np.random.default_rng(self.seed)
        omega = rng.standard_normal((self.n_features, self.dim_in)) / self.bandwidth
        offset = rng.uniform(-np.pi, np.pi, self.n_features)
        if self.scales is not None:
            omega = omega / self.scales
        if self.center is not None:
            offset = offset - omega @ self.center
        self.scale = float(np.sqrt(2.0 / self.n_features))
        self.omega = omega.astype(self.dtype)
        self.offset = offset.astype(self.dtype)
        self._scale_cast = np.dtype(self.dtype).type(self.scale)
        # Ωᵀ, contiguous, for the (..., dim_in) @ (dim_in, D) product of __call__
        self._omega_t = np.ascontiguousarray(self.omega.T)

    def _check_restored(self) -> None:
        """A restored map is checked as the constructor checks its arguments, and its ``Ω``
        and offsets must be the ones its seed and bandwidth draw (or, without a seed, finite
        arrays of the right shapes), so a state file cannot change the features silently."""
        # files written before the options have neither (the paper's kernel)
        fresh = RandomFourierFeatures(
            self.dim_in,
            self.n_features,
            self.bandwidth,
            seed=self.seed,
            dtype=self.dtype,
            scales=vars(self).get("scales"),
            center=vars(self).get("center"),
        )
        self.scales, self.center = fresh.scales, fresh.center
        for name in ("omega", "offset", "_omega_t"):
            value, expected = getattr(self, name), getattr(fresh, name)
            if not isinstance(value, np.ndarray) or value.dtype != expected.dtype:
                raise ValueError(f"restored features: {name} must be a {expected.dtype} array")
            if value.shape != expected.shape or not np.all(np.isfinite(value)):
                raise ValueError(
                    f"restored features: {name} must be finite with shape {expected.shape}"
                )
            if self.seed is not None and not np.array_equal(value, expected):
                raise ValueError(f"restored features: {name} is not the one seed {self.seed} draws")
        if not np.array_equal(self._omega_t, self.omega.T):
            raise ValueError("restored features: _omega_t must be omega transposed")
        self._omega_t = np.ascontiguousarray(self._omega_t)
        self.scale, self._scale_cast = fresh.scale, fresh._scale_cast

    def __call__(self, z: Any, *, check: bool = True) -> np.ndarray:
        """Features of ``z``: shape ``(..., dim_in)`` → ``(..., n_features)`` in ``dtype``.

        Args:
            z: Inputs with trailing dimension ``dim_in``.
            check: Validate shape and finiteness (the planner's hot loop passes ``False``
                for inputs it built itself).

        Raises:
            ValueError: For a wrong trailing dimension or non-finite inputs.
        """
        if check:
            z = as_float_array("z", z)
            if z.ndim == 0 or z.shape[-1] != self.dim_in:
                raise ValueError(
                    f"z must have shape (..., {self.dim_in}) = (..., dim_in), got {z.shape}"
                )
        z = np.asarray(z, dtype=self.dtype)
        out = z @ self._omega_t
        out += self.offset
        np.cos(out, out=out)
        out *= self._scale_cast
        return out

    def __repr__(self) -> str:
        extra = "" if self.scales is None else ", scales=[...]"
        extra += "" if self.center is None else ", center=[...]"
        return (
            f"RandomFourierFeatures(dim_in={self.dim_in}, n_features={self.n_features}, "
            f"bandwidth={self.bandwidth:g}, seed={self.seed!r}, "
            f"dtype={self.dtype}{extra})"
        )
