"""Dynamics for the MPPI planner (paper §4.2, App. D.1): a Bayesian random-Fourier-feature
model learned from trials, and the MuJoCo simulator itself (the "GT MPC" reference).

Both are *dynamics callables* for :class:`bam_rl.agents.mppi.MPPI`::

    next_states = dynamics(state, actions, rng)   # (dx,), (K, H, du) -> (K, H, dx)

``next_states[k, t]`` is the state after applying ``actions[k, :t + 1]`` from ``state``.
They hold only numbers, arrays and project objects, so agents holding them save and load
without pickle.
"""

from __future__ import annotations

import contextlib
import math
import weakref
from typing import Any

import numpy as np
from scipy.linalg import cho_solve, solve_triangular

from bam_rl import hyperparams
from bam_rl.checks import as_float_array, check_int, check_memory, check_positive
from bam_rl.families import BayesianLinearRegression, NaturalParams
from bam_rl.features import CosineTable, RandomFourierFeatures

__all__ = ["PLANNING_MODELS", "RFFDynamicsModel", "check_rollout_inputs"]

_HOT_DTYPES = ("float32", "float64")
#: How planning rollouts use the belief: one draw of ``M`` per trajectory with noise (the
#: paper's), or the posterior mean for every trajectory without noise (beyond the paper).
PLANNING_MODELS = ("draws", "mean")
_TINY = 5e-324  # the smallest subnormal: max(norm, _TINY) is norm unless norm is 0


def check_rollout_inputs(
    state: Any, actions: Any, state_dim: int, action_dim: int
) -> tuple[np.ndarray, np.ndarray]:
    """Validates a planning query: ``state (state_dim,)`` and ``actions (K, H, action_dim)``.

    Raises:
        ValueError: Naming ``state`` or ``actions`` for a wrong shape or non-finite entries.
    """
    state = as_float_array("state", state)
    if state.shape != (state_dim,):
        raise ValueError(f"state must have shape ({state_dim},), got {state.shape}")
    actions = as_float_array("actions", actions)
    if actions.ndim != 3 or actions.shape[-1] != action_dim or 0 in actions.shape:
        raise ValueError(
            f"actions must have shape (K, H, {action_dim}) with K, H >= 1, got {actions.shape}"
        )
    return state, actions


def _transitions(
    states: Any, actions: Any, state_dim: int, action_dim: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(states (T+1, dx), actions (T, du))`` → inputs ``[x_{j−1}, a_j]`` and deltas."""
    states = as_float_array("states", states)
    actions = as_float_array("actions", actions)
    if states.ndim != 2 or states.shape[1] != state_dim or states.shape[0] < 2:
        raise ValueError(
            f"states must have shape (T + 1, {state_dim}) with T >= 1, got {states.shape}"
        )
    if actions.ndim == 1 and action_dim == 1:
        actions = actions[:, None]
    if actions.shape != (states.shape[0] - 1, action_dim):
        raise ValueError(
            f"actions must have shape ({states.shape[0] - 1}, {action_dim}) "
            f"= (T, action_dim) for {states.shape[0]} states, got {actions.shape}"
        )
    inputs = np.concatenate([states[:-1], actions], axis=1)
    return inputs, np.diff(states, axis=0)


def _check_planning_models(value: Any) -> str:
    """``value`` if it is one of :data:`PLANNING_MODELS`, else a ``ValueError`` naming it."""
    if not isinstance(value, str) or value not in PLANNING_MODELS:
        raise ValueError(f"planning_models must be one of {PLANNING_MODELS}, got {value!r}")
    return value


def _feature_states(value: Any, state_dim: int) -> tuple[int, ...]:
    if value is None:
        return tuple(range(state_dim))
    try:
        indices = tuple(int(check_int("feature_states", i, minimum=0)) for i in value)
    except TypeError:
        raise ValueError(
            f"feature_states must be None or a sequence of state indices, got {value!r}"
        ) from None
    if len(set(indices)) != len(indices) or any(i >= state_dim for i in indices):
        raise ValueError(
            f"feature_states must hold distinct indices in [0, {state_dim}), got {value!r}"
        )
    return indices


def _angle_pairs(value: Any, state_dim: int) -> tuple[tuple[int, int], ...]:
    message = (
        f"angle_pairs must be a sequence of (cos index, sin index) pairs in "
        f"[0, {state_dim}), got {value!r}"
    )
    try:
        pairs = tuple(
            (
                int(check_int("angle_pairs", i, minimum=0)),
                int(check_int("angle_pairs", j, minimum=0)),
            )
            for i, j in value
        )
    except (TypeError, ValueError):
        raise ValueError(message) from None
    flat = [i for pair in pairs for i in pair]
    if len(set(flat)) != len(flat) or any(i >= state_dim for i in flat):
        raise ValueError(message)
    return pairs


class _PlanningCache:
    """Derived planning data of one model: projections and cosine buffers (never saved)."""

    def __init__(self) -> None:
        self.weights: dict[str, np.ndarray] = {}
        self.tables: dict[int, CosineTable] = {}


# kept outside the models' __dict__ so that agents save only their state
_PLANNING_CACHES: weakref.WeakKeyDictionary[Any, _PlanningCache] = weakref.WeakKeyDictionary()


def _planning_cache(model: Any) -> _PlanningCache:
    cache = _PLANNING_CACHES.get(model)
    if cache is None:
        cache = _PLANNING_CACHES[model] = _PlanningCache()
    return cache


class RFFDynamicsModel:
    """``x_t = x_{t−1} + M φ([x_{t−1}, a_t]) + ε``, ``ε ~ N(0, σ² I)``, with a Bayesian ``M``.

    ``φ`` are :class:`~bam_rl.features.RandomFourierFeatures` of the concatenated state and
    action; ``M`` (``state_dim × n_features``) has independent rows with prior mean 0 and
    prior precision ``prior_precision · I`` and known noise variance ``σ²``: a
    :class:`~bam_rl.families.BayesianLinearRegression` over the features (:attr:`family`).
    One datum is one trial, ``D = {([x_{j−1}, a_j], x_j − x_{j−1})}_j``, summarised as
    sufficient statistics by :meth:`stats`; the current belief is :attr:`belief` (set by the
    agent's memory rule through :meth:`set_belief`).

    Planning (:meth:`__call__`) draws one ``M`` per trajectory from the belief and rolls the
    model out *with* the noise ``ε``, as the paper does (``planning_models="draws"``); with
    ``planning_models="mean"`` every trajectory rolls out the posterior mean without noise.
    The planner's hot loop runs in ``planning_dtype``: ``"float32"`` by default, about 2×
    faster than ``"float64"`` (whose ``cos`` is the table-based
    :class:`~bam_rl.features.CosineTable`, accurate to rounding).
    One float32 step agrees with float64 to within 1e-4, a tenth of the model noise
    ``σ = 1e-3`` every planning step adds, so the two dtypes plan equally well (same swing-up
    learning curves, ``python -m bam_rl.experiments.mppi_checks learn``) but not
    identically: draws of
    ``M`` have large entries along directions the data do not determine, which amplify any
    rounding difference over the 50-step horizon. Two float64 evaluations that round
    differently (another order of the sums, another ``cos``) drift apart the same way, so
    float64 buys no fidelity to the model, only agreement with :meth:`predict` to rounding.
    Statistics, beliefs and draws of ``M`` are always float64.

    Args:
        state_dim: Dimension of the state ``x`` (5 for the cart-pole observation).
        action_dim: Dimension of the action ``a``.
        n_features: Number of random Fourier features (200).
        bandwidth: RFF bandwidth (6.0) or ``"mean-pairwise"`` with ``bandwidth_data``.
        noise_var: ``σ²`` (1e-6).
        prior_precision: Prior precision of every row of ``M`` (1e-4).
        seed: Seed of the random features (``Ω``, ``b``).
        planning_dtype: ``"float32"`` or ``"float64"`` for the planning rollouts.
        bandwidth_data: Inputs ``(n, len(feature_states) + action_dim)`` for
            ``"mean-pairwise"``.
        feature_states: Indices of the state components the features see (``None``: all,
            the paper's ``φ(x, a)``). The model still predicts every component.
        angle_pairs: Pairs ``(i, j)`` of state components holding ``(cos θ, sin θ)`` of an
            angle; planning rollouts project each predicted pair back onto the unit circle
            (``()``: none, the paper's plain rollout).
        planning_models: ``"draws"`` (default, the paper's): every planning trajectory rolls
            out its own draw of ``M`` with the noise ``ε``; ``"mean"`` (beyond the paper):
            every trajectory rolls out the posterior mean of ``M`` without noise
            (certainty-equivalent planning; the planner's action noise still explores).

    Attributes:
        features: The float64 feature map (used for statistics and :meth:`predict`).
        family: The Bayesian linear regression over ``M``.
        belief: The current belief over ``M`` (initially ``family.prior``).
    """

    def __init__(
        self,
        state_dim: int,
        action_dim: int = 1,
        n_features: int = hyperparams.RFF_FEATURES,
        bandwidth: float | str = hyperparams.RFF_BANDWIDTH,
        noise_var: float = hyperparams.BLR_NOISE_VAR,
        prior_precision: float = hyperparams.BLR_PRIOR_PRECISION,
        seed: int | None = None,
        planning_dtype: str = "float32",
        bandwidth_data: Any = None,
        feature_states: Any = None,
        angle_pairs: Any = (),
        planning_models: str = "draws",
    ):
        self.state_dim = check_int("state_dim", state_dim)
        self.action_dim = check_int("action_dim", action_dim)
        features = check_int("n_features", n_features)
        # the state indices, the features' Ω (n_features × inputs) and the regression's
        # precision and B (the features and the family check their own parts again)
        inputs = self.state_dim + self.action_dim
        check_memory(
            f"state_dim = {self.state_dim} with action_dim = {self.action_dim} and "
            f"n_features = {features}",
            64 * inputs + 32 * features * (inputs + 1) + 24 * features * (features + inputs),
        )
        self.feature_states = _feature_states(feature_states, self.state_dim)
        self.angle_pairs = _angle_pairs(angle_pairs, self.state_dim)
        if planning_dtype not in _HOT_DTYPES:
            raise ValueError(f"planning_dtype must be one of {_HOT_DTYPES}, got {planning_dtype!r}")
        self.planning_dtype = planning_dtype
        self.planning_models = _check_planning_models(planning_models)
        dim_in = len(self.feature_states) + self.action_dim
        self.features = RandomFourierFeatures(
            dim_in, n_features, bandwidth, seed=seed, data=bandwidth_data
        )
        self.noise_var = float(check_positive("noise_var", noise_var))
        self.family = BayesianLinearRegression(
            self.features.n_features,
            self.state_dim,
            prior_precision=prior_precision,
            noise_var=self.noise_var,
        )
        self.belief: NaturalParams = self.family.prior
        self._factor: np.ndarray | None = None  # Cholesky factor of the belief's precision
        self._mean: np.ndarray | None = None  # posterior mean of M, (dx, D)

    def _check_restored(self) -> None:
        """A restored model is checked as the constructor checks its arguments: sizes within
        the memory budget, its features and family those the sizes and noise make, and a
        finite belief of that family with a positive-definite precision. Cached solves are
        dropped (recomputed from the belief, bit for bit)."""
        self.state_dim = check_int("state_dim", self.state_dim)
        self.action_dim = check_int("action_dim", self.action_dim)
        self.feature_states = _feature_states(self.feature_states, self.state_dim)
        self.angle_pairs = _angle_pairs(self.angle_pairs, self.state_dim)
        if self.planning_dtype not in _HOT_DTYPES:
            raise ValueError(
                f"planning_dtype must be one of {_HOT_DTYPES}, got {self.planning_dtype!r}"
            )
        # files written before the option plan with draws, as the paper does
        self.planning_models = _check_planning_models(vars(self).get("planning_models", "draws"))
        features = self.features
        if not isinstance(features, RandomFourierFeatures) or features.dtype != "float64":
            raise ValueError("features must be float64 RandomFourierFeatures")
        if features.dim_in != len(self.feature_states) + self.action_dim:
            raise ValueError(
                f"features must take {len(self.feature_states) + self.action_dim} inputs "
                f"(the feature states and the action), got {features.dim_in}"
            )
        self.noise_var = float(check_positive("noise_var", self.noise_var))
        family = self.family
        if (
            not isinstance(family, BayesianLinearRegression)
            or family.dim_in != features.n_features
            or family.dim_out != self.state_dim
            or family.noise_var != self.noise_var
        ):
            raise ValueError(
                f"family must be a BayesianLinearRegression over {features.n_features} "
                f"features with {self.state_dim} outputs and noise_var {self.noise_var:g}"
            )
        self.set_belief(self.belief)
        if not all(np.all(np.isfinite(field)) for field in self.belief.fields.values()):
            raise ValueError("belief must be finite")
        self._solved()  # refuses a precision that is not positive definite

    # ------------------------------------------------------------------ belief
    @property
    def n_features(self) -> int:
        return self.features.n_features

    def inputs(self, states: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Feature inputs ``[x[feature_states], a]`` (leading axes must match)."""
        return np.concatenate([states[..., list(self.feature_states)], actions], axis=-1)

    def set_belief(self, belief: NaturalParams) -> None:
        """Makes ``belief`` (a belief of :attr:`family`) the one planning samples from."""
        self.family.check_params(belief)
        if belief.batch_shape != ():
            raise ValueError(
                f"belief must be a single belief, got batch shape {belief.batch_shape}"
            )
        self.belief = belief
        self._factor = None
        self._mean = None

    def _solved(self) -> tuple[np.ndarray, np.ndarray]:
        """Cholesky factor ``L`` of the precision and the mean ``M̄`` (cached per belief)."""
        if self._factor is None or self._mean is None:
            fields = self.belief.fields
            try:
                factor = np.linalg.cholesky(fields["precision"])
            except np.linalg.LinAlgError as error:
                raise ValueError("belief precision must be positive definite") from error
            mean = cho_solve((factor, True), fields["B"], check_finite=False)
            self._factor, self._mean = factor, np.ascontiguousarray(mean.T)
        return self._factor, self._mean

    def mean_model(self) -> np.ndarray:
        """Posterior mean of ``M``, shape ``(state_dim, n_features)``."""
        return self._solved()[1].copy()

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draws ``n`` models ``M`` from :attr:`belief`: shape ``(n, state_dim, n_features)``.

        Same draws as ``family.sample(belief, rng, n)`` (``M̄ + (L⁻ᵀ Z)ᵀ`` with ``Z`` standard
        normal of shape ``(n, n_features, state_dim)``), with the factor cached per belief.
        """
        n = check_int("n", n)
        factor, mean = self._solved()
        d, p = self.n_features, self.state_dim
        z = rng.standard_normal((n, d, p))
        stacked = np.moveaxis(z, 1, 0).reshape(d, n * p)
        solved = solve_triangular(factor, stacked, lower=True, trans=1, check_finite=False)
        draws = np.moveaxis(solved.reshape(d, n, p), 0, 1)  # (n, d, p)
        return mean + np.swapaxes(draws, -1, -2)

    # -------------------------------------------------------------------- data
    def transition_data(self, states: Any, actions: Any) -> tuple[np.ndarray, np.ndarray]:
        """Feature inputs ``[x_{j−1}[feature_states], a_j]`` and state changes ``x_j − x_{j−1}``
        of one trial (checked as :meth:`stats` checks them)."""
        inputs, deltas = _transitions(states, actions, self.state_dim, self.action_dim)
        return self.inputs(inputs[:, : self.state_dim], inputs[:, self.state_dim :]), deltas

    def clear_planning_cache(self) -> None:
        """Drops the derived planning data (call after replacing :attr:`features`)."""
        _PLANNING_CACHES.pop(self, None)

    def stats(self, states: Any, actions: Any) -> NaturalParams:
        """Sufficient statistics of one trial: ``states (T+1, dx)``, ``actions (T, du)``."""
        inputs, deltas = _transitions(states, actions, self.state_dim, self.action_dim)
        inputs = self.inputs(inputs[:, : self.state_dim], inputs[:, self.state_dim :])
        return self.family.stats(self.features(inputs, check=False), deltas)

    def predict(self, states: Any, actions: Any, models: Any = None) -> np.ndarray:
        """Noise-free next states ``x + M φ([x, a])`` for a batch, in float64.

        Args:
            states: ``(..., state_dim)``.
            actions: ``(..., action_dim)``, broadcasting with ``states``' leading axes.
            models: ``(..., state_dim, n_features)`` (one model per leading index,
                broadcasting) or ``None`` for the posterior mean.

        Returns:
            Next states, shape ``broadcast(...) + (state_dim,)``.
        """
        states = as_float_array("states", states)
        actions = as_float_array("actions", actions)
        if states.ndim == 0 or states.shape[-1] != self.state_dim:
            raise ValueError(f"states must have shape (..., {self.state_dim}), got {states.shape}")
        if actions.ndim == 0 or actions.shape[-1] != self.action_dim:
            raise ValueError(
                f"actions must have shape (..., {self.action_dim}), got {actions.shape}"
            )
        try:
            lead = np.broadcast_shapes(states.shape[:-1], actions.shape[:-1])
        except ValueError as error:
            raise ValueError(
                f"leading axes of states {states.shape} and actions "
                f"{actions.shape} do not broadcast"
            ) from error
        states = np.broadcast_to(states, (*lead, self.state_dim))
        inputs = self.inputs(states, np.broadcast_to(actions, (*lead, self.action_dim)))
        phi = self.features(inputs, check=False)
        if models is None:
            delta = phi @ self._solved()[1].T
        else:
            models = as_float_array("models", models)
            if models.ndim < 2 or models.shape[-2:] != (self.state_dim, self.n_features):
                raise ValueError(
                    f"models must have shape (..., {self.state_dim}, "
                    f"{self.n_features}), got {models.shape}"
                )
            delta = np.einsum("...f,...of->...o", phi, models)
        return states + delta

    def one_step_error(self, states: Any, actions: Any, models: Any = None) -> float:
        """Relative one-step error on a trajectory, ``‖Δ̂ − Δ‖_F / ‖Δ‖_F``.

        ``Δ`` are the observed state changes ``x_j − x_{j−1}`` and ``Δ̂`` the model's
        (posterior mean, or ``models`` broadcasting over the ``T`` transitions).

        Args:
            states: ``(T + 1, state_dim)``.
            actions: ``(T, action_dim)``.
            models: Optional model(s) ``(…, state_dim, n_features)``.
        """
        inputs, deltas = _transitions(states, actions, self.state_dim, self.action_dim)
        predicted = (
            self.predict(inputs[:, : self.state_dim], inputs[:, self.state_dim :], models)
            - inputs[:, : self.state_dim]
        )
        return float(np.linalg.norm(predicted - deltas) / np.linalg.norm(deltas))

    # ---------------------------------------------------------------- planning
    def rollout_bytes(self, n_samples: int, horizon: int) -> int:
        """Bytes a planning rollout of ``n_samples`` sequences of ``horizon`` steps allocates
        (an upper estimate: measured at most 265 bytes per sample and step in float64,
        192 in float32, and 160 per sample and feature for the model draws)."""
        dx, du = self.state_dim, self.action_dim
        return n_samples * (horizon * (48 * dx + 8 * du + 64) + self.n_features * (32 * dx + 64))

    def __call__(self, state: Any, actions: Any, rng: np.random.Generator) -> np.ndarray:
        """Planning rollouts of ``actions`` from ``state`` with the belief's models.

        One model from the belief per trajectory, with noise ``ε`` (``planning_models=
        "mean"``: the posterior mean for every trajectory, no noise).

        Args:
            state: Start state ``(state_dim,)``.
            actions: ``(K, H, action_dim)``.
            rng: Source of the model and noise draws: ``K`` models first
                (:meth:`sample`), then the noise, ``σ · standard_normal((H, K, state_dim))``
                (nothing is drawn with ``planning_models="mean"``).

        Returns:
            States ``(K, H, state_dim)`` in ``planning_dtype``.
        """
        state, actions = check_rollout_inputs(state, actions, self.state_dim, self.action_dim)
        return self.rollout_unchecked(state, actions, rng)

    def rollout_unchecked(
        self, state: np.ndarray, actions: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """:meth:`__call__` without its input checks, for callers that built the inputs
        (the planner validates its state once per control step)."""
        k, h, _ = actions.shape
        if self.planning_models == "mean":
            mean = self._solved()[1]
            models = np.broadcast_to(mean, (k, *mean.shape))
            return self.simulate(state, actions, models, np.zeros((h, k, self.state_dim)))
        models = self.sample(k, rng)
        noise = rng.standard_normal((h, k, self.state_dim))
        noise *= math.sqrt(self.noise_var)
        return self.simulate(state, actions, models, noise)

    def simulate(
        self, state: np.ndarray, actions: np.ndarray, models: np.ndarray, noise: np.ndarray
    ) -> np.ndarray:
        """The planning rollout for given models and noise (no input checks).

        ``x_{k,t} = x_{k,t−1} + models[k] φ([x_{k,t−1}, actions[k, t]]) + noise[t, k]``,
        then each :attr:`angle_pairs` pair is projected onto the unit circle.

        Args:
            state: Start state ``(state_dim,)``.
            actions: ``(K, H, action_dim)``.
            models: ``(K, state_dim, n_features)``, one per trajectory.
            noise: ``(H, K, state_dim)``, the model noise already scaled by ``σ``.

        Returns:
            States ``(K, H, state_dim)`` in ``planning_dtype`` (float64 states agree with a
            step-by-step :meth:`predict` to rounding: the float64 loop evaluates ``cos``
            with :class:`~bam_rl.features.CosineTable`).
        """
        k, h, _ = actions.shape
        dx, du = self.state_dim, self.action_dim
        dtype = np.dtype(self.planning_dtype)
        fast = dtype == np.float64
        weights = self._projection(fast)
        # models scaled by sqrt(2/D) and laid out (K, dx, D) for one batched product a step
        scaled = np.asarray(models, dtype=dtype) * dtype.type(self.features.scale)
        noise = np.asarray(noise, dtype=dtype)
        # inputs z = [x, a, 1] of every step, (H + 1, K, dx + du + 1); the state after step t
        # is written to inputs[t + 1, :, :dx] (the last row holds only the final state)
        inputs = np.empty((h + 1, k, dx + du + 1), dtype=dtype)
        inputs[0, :, :dx] = state
        inputs[:h, :, dx : dx + du] = np.swapaxes(actions, 0, 1)
        inputs[:, :, -1] = 1.0
        inputs[h, :, dx:] = 0.0
        arguments = np.empty((k, self.n_features), dtype=dtype)
        phi = np.empty((k, self.n_features), dtype=dtype)
        delta = np.empty((k, dx, 1), dtype=dtype)
        table = self._cosine_table(k) if fast else None
        pairs = self.angle_pairs
        # a diverging model's nan/inf: the float64 loop checks its range after the loop
        quiet = np.errstate(invalid="ignore") if fast else contextlib.nullcontext()
        with quiet:
            for t in range(h):
                x, x_next = inputs[t, :, :dx], inputs[t + 1, :, :dx]
                np.matmul(inputs[t], weights, out=arguments)
                if table is not None:
                    table(arguments, phi)
                else:
                    np.cos(arguments, out=phi)
                np.matmul(scaled, phi[:, :, None], out=delta)
                np.add(x, delta[:, :, 0], out=x_next)
                x_next += noise[t]
                for i, j in pairs:  # back onto the unit circle (norm 0: both are 0)
                    norm = np.hypot(x_next[:, i], x_next[:, j])
                    np.maximum(norm, _TINY, out=norm)
                    x_next[:, i] /= norm
                    x_next[:, j] /= norm
        states = inputs[1:, :, :dx]
        if fast and not self._in_table_range(inputs, weights):
            return self._simulate_exact(state, actions, models, noise)
        return np.ascontiguousarray(np.swapaxes(states, 0, 1))

    # the float64 weights [Ω_x; Ω_a; b]ᵀ (in turns of the cosine table) and float32 ones
    def _projection(self, fast: bool) -> np.ndarray:
        key = "float64-turns" if fast else self.planning_dtype
        cache = _planning_cache(self)
        cached = cache.weights.get(key)
        if cached is None:
            features, dx = self.features, self.state_dim
            n_seen = len(self.feature_states)
            weights = np.zeros((dx + self.action_dim + 1, features.n_features))
            weights[list(self.feature_states)] = features.omega[:, :n_seen].T
            weights[dx:-1] = features.omega[:, n_seen:].T
            weights[-1] = features.offset
            if fast:
                weights *= CosineTable.SIZE / (2.0 * math.pi)
            cached = cache.weights[key] = weights.astype(
                np.float64 if fast else self.planning_dtype
            )
        return cached

    def _cosine_table(self, k: int) -> CosineTable:
        tables = _planning_cache(self).tables
        table = tables.get(k)
        if table is None:
            table = tables[k] = CosineTable((k, self.n_features))
        return table

    @staticmethod
    def _in_table_range(inputs: np.ndarray, weights: np.ndarray) -> bool:
        """Whether every argument ``z @ weights`` of the rollout was within the table's
        range (a bound through ``max |z|``; ``False`` for non-finite states)."""
        bound = float(np.abs(inputs).max(axis=(0, 1)) @ np.abs(weights).max(axis=1))
        return bound <= CosineTable.LIMIT

    def _simulate_exact(
        self, state: np.ndarray, actions: np.ndarray, models: np.ndarray, noise: np.ndarray
    ) -> np.ndarray:
        """The float64 rollout with ``numpy.cos`` (for models that diverge far)."""
        k, h, _ = actions.shape
        dx = self.state_dim
        weights = self._projection(False)
        models = np.asarray(models, dtype=np.float64) * self.features.scale
        out = np.empty((k, h, dx))
        x = np.broadcast_to(state, (k, dx)).copy()
        for t in range(h):
            z = np.concatenate([x, actions[:, t], np.ones((k, 1))], axis=1)
            phi = np.cos(z @ weights)
            x = x + np.matmul(models, phi[:, :, None])[:, :, 0] + noise[t]
            for i, j in self.angle_pairs:
                norm = np.maximum(np.hypot(x[:, i], x[:, j]), _TINY)
                x[:, i] /= norm
                x[:, j] /= norm
            out[:, t] = x
        return out

    def __repr__(self) -> str:
        return (
            f"RFFDynamicsModel(state_dim={self.state_dim}, action_dim={self.action_dim}, "
            f"n_features={self.n_features}, bandwidth={self.features.bandwidth:g}, "
            f"noise_var={self.noise_var:g}, feature_states={self.feature_states}, "
            f"planning_models={self.planning_models!r})"
        )
