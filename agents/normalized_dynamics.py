"""A normalised random-Fourier-feature dynamics model (beyond the paper; issue 53).

The paper's model (:class:`~bam_rl.agents.dynamics.RFFDynamicsModel`) applies one kernel
bandwidth to raw state-action inputs and regresses raw state changes. That suits the
cart-pole's 5-D state; on HalfCheetah-v5 the inputs' scales differ about 100× and the
model fits no better than predicting the mean (docs/any_env.md, "HalfCheetah-v5"). This
model standardises both sides:

* **inputs** ``z = [x, a]`` are centred by their mean ``μ_z`` and measured in units of
  per-dimension length scales ``bandwidth · s_d`` (``s_d`` from data: the per-dimension
  median absolute pairwise difference, ``lengthscales="median"``, or the standard
  deviation, ``"std"``), so the kernel is ``exp(−Σ_d (z_d − z'_d)² / (2 bandwidth² s_d²))``;
* **targets** are standardised state differences ``(Δx − μ_Δ) / σ_Δ`` (per component), so
  one noise variance and one prior precision fit every component;
* predictions are ``x + μ_Δ + σ_Δ ⊙ M φ(z)`` (the model still predicts state differences).

**The moments are fixed once, from the first data the model sees** (:meth:`stats`' first
call, or :meth:`fit_normalization`), and never move. The memory rules hold sufficient
statistics in feature space, and a BAM readout adds statistics of segments recorded at
different times: features or target scales that drifted with running moments would make
those sums mix two feature maps. Moments over all data ever seen with the statistics kept in
raw form would need the raw transitions (features are a nonlinear function of the scaled
inputs), which the memory does not keep. Fixed moments keep every datum in memory, old or
new, in one feature space; in the episodic agents the first datum is a whole trial (300
transitions on HalfCheetah). With in-trial readouts (``readout_after_steps``) the first datum
can be a few steps, which fixes poor moments: read out at trials' ends with this model.

Until the moments are fixed the model holds the prior and predicts no change.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bam_rl.checks import as_float_array, check_int
from bam_rl.features import RandomFourierFeatures

from .dynamics import RFFDynamicsModel

__all__ = [
    "LENGTHSCALE_RULES",
    "NORMALIZED_DEFAULTS",
    "NormalizedRFFDynamicsModel",
    "per_dimension_scales",
]

#: How the per-dimension length scales ``s_d`` are read from the data.
LENGTHSCALE_RULES = ("median", "std")
#: Defaults (measured on HalfCheetah-v5 random-action data, docs/any_env.md).
NORMALIZED_BANDWIDTH = 12.0
NORMALIZED_NOISE_VAR = 1e-3
NORMALIZED_PRIOR_PRECISION = 1.0
NORMALIZED_DEFAULTS = {
    "bandwidth": NORMALIZED_BANDWIDTH,
    "noise_var": NORMALIZED_NOISE_VAR,
    "prior_precision": NORMALIZED_PRIOR_PRECISION,
}
_MAX_MEDIAN_ROWS = 1000  # the median heuristic's pairs come from at most this many rows


def per_dimension_scales(inputs: Any, rule: str = "median") -> np.ndarray:
    """Per-dimension scales of ``inputs (n, d)``: the median of ``|z_i,d − z_j,d|`` over
    pairs ``i < j`` (``"median"``; over ``1000`` evenly spaced rows when ``n`` is larger), or
    the standard deviation (``"std"``). A dimension whose scale is 0 (a constant input)
    gets 1.

    Raises:
        ValueError: For ``inputs`` that are not a finite ``(n, d)`` array with ``n >= 2`` or
            an unknown ``rule``.
    """
    inputs = as_float_array("inputs", inputs)
    if inputs.ndim != 2 or inputs.shape[0] < 2:
        raise ValueError(f"inputs must have shape (n, d) with n >= 2, got {inputs.shape}")
    if rule not in LENGTHSCALE_RULES:
        raise ValueError(f"lengthscales must be one of {LENGTHSCALE_RULES}, got {rule!r}")
    if rule == "std":
        scales = inputs.std(axis=0)
    else:
        n = inputs.shape[0]
        rows = inputs
        if n > _MAX_MEDIAN_ROWS:  # evenly spaced rows: deterministic, no draw
            rows = inputs[np.linspace(0, n - 1, _MAX_MEDIAN_ROWS).astype(np.int64)]
        i, j = np.triu_indices(rows.shape[0], k=1)
        scales = np.median(np.abs(rows[i] - rows[j]), axis=0)
    return np.where(scales > 0, scales, 1.0)


class NormalizedRFFDynamicsModel(RFFDynamicsModel):
    """Beyond the paper: :class:`RFFDynamicsModel` on standardised inputs and targets.

    Same interface and planning as the paper's model (draws or the posterior mean, the float32
    or float64 hot loop, angle pairs); see the module docstring for the normalisation.

    Args:
        state_dim: Dimension of the state.
        action_dim: Dimension of the action.
        n_features: Random Fourier features (a few thousand are affordable: the readout's
            cost is measured in docs/any_env.md).
        bandwidth: Global multiplier of the per-dimension length scales (> 0).
        noise_var: ``σ²`` of the *standardised* targets.
        prior_precision: Prior precision of the rows of ``M`` (standardised targets).
        seed: Seed of the random features.
        planning_dtype: ``"float32"`` or ``"float64"``.
        feature_states: State components the features see (``None``: all).
        angle_pairs: ``(cos, sin)`` pairs projected onto the circle in planning rollouts.
        planning_models: ``"draws"`` or ``"mean"``.
        lengthscales: ``"median"`` or ``"std"`` (:func:`per_dimension_scales`).

    Attributes:
        normalized: Whether the moments are fixed.
        input_mean: ``μ_z`` (``(dim_in,)``, zeros until fixed).
        input_scales: ``s_d`` (ones until fixed).
        target_mean: ``μ_Δ`` (``(state_dim,)``, zeros until fixed).
        target_scale: ``σ_Δ`` (ones until fixed).
    """

    def __init__(
        self,
        state_dim: int,
        action_dim: int = 1,
        n_features: int = 200,
        bandwidth: float = NORMALIZED_BANDWIDTH,
        noise_var: float = NORMALIZED_NOISE_VAR,
        prior_precision: float = NORMALIZED_PRIOR_PRECISION,
        seed: int | None = None,
        planning_dtype: str = "float32",
        feature_states: Any = None,
        angle_pairs: Any = (),
        planning_models: str = "draws",
        lengthscales: str = "median",
    ):
        if isinstance(bandwidth, str):
            raise ValueError(f"bandwidth must be a finite number > 0, got {bandwidth!r}")
        super().__init__(
            state_dim,
            action_dim,
            n_features=n_features,
            bandwidth=bandwidth,
            noise_var=noise_var,
            prior_precision=prior_precision,
            seed=seed,
            planning_dtype=planning_dtype,
            feature_states=feature_states,
            angle_pairs=angle_pairs,
            planning_models=planning_models,
        )
        if lengthscales not in LENGTHSCALE_RULES:
            raise ValueError(
                f"lengthscales must be one of {LENGTHSCALE_RULES}, got {lengthscales!r}"
            )
        self.lengthscales = lengthscales
        dim_in = self.features.dim_in
        self.normalized = False
        self.input_mean = np.zeros(dim_in)
        self.input_scales = np.ones(dim_in)
        self.target_mean = np.zeros(self.state_dim)
        self.target_scale = np.ones(self.state_dim)

    # ------------------------------------------------------------ normalisation
    def fit_normalization(self, inputs: Any, deltas: Any) -> None:
        """Fixes the moments from feature inputs ``(n, dim_in)`` and state changes
        ``(n, state_dim)`` (``n >= 2``), and rebuilds the features with them.

        Raises:
            ValueError: When the moments are already fixed or the belief is not the prior
                (statistics in the old feature space exist), or for bad shapes.
        """
        if self.normalized:
            raise ValueError("the normalisation is already fixed (it never moves)")
        if not self._is_prior():
            raise ValueError("fit_normalization needs the prior belief (no data seen)")
        dim_in = self.features.dim_in
        inputs = as_float_array("inputs", inputs)
        deltas = as_float_array("deltas", deltas)
        if inputs.ndim != 2 or inputs.shape[1] != dim_in or inputs.shape[0] < 2:
            raise ValueError(
                f"inputs must have shape (n, {dim_in}) with n >= 2, got {inputs.shape}"
            )
        if deltas.shape != (inputs.shape[0], self.state_dim):
            raise ValueError(
                f"deltas must have shape ({inputs.shape[0]}, {self.state_dim}), got {deltas.shape}"
            )
        self.input_mean = inputs.mean(axis=0)
        self.input_scales = per_dimension_scales(inputs, self.lengthscales)
        self.target_mean = deltas.mean(axis=0)
        std = deltas.std(axis=0)
        self.target_scale = np.where(std > 0, std, 1.0)
        self.normalized = True
        self._rebuild_features()

    def _rebuild_features(self) -> None:
        old = self.features
        self.features = RandomFourierFeatures(
            old.dim_in,
            old.n_features,
            old.bandwidth,
            seed=old.seed,
            scales=self.input_scales if self.normalized else None,
            center=self.input_mean if self.normalized else None,
        )
        self.clear_planning_cache()  # the planning projections derive from Ω and b

    def _is_prior(self) -> bool:
        prior = self.family.prior.fields
        return all(np.array_equal(value, prior[key]) for key, value in self.belief.fields.items())

    def raw_model(self, models: Any = None) -> np.ndarray:
        """Models in state units, ``σ_Δ ⊙ M`` (the posterior mean for ``None``): the
        prediction is ``x + target_mean + raw_model φ``."""
        models = self._solved()[1] if models is None else as_float_array("models", models)
        return models * self.target_scale[:, None]

    # -------------------------------------------------------------------- data
    def stats(self, states: Any, actions: Any) -> Any:
        """Sufficient statistics of one trial on standardised targets; the first call fixes
        the moments from its data (the module docstring says why they never move)."""
        inputs, deltas = self.transition_data(states, actions)
        if not self.normalized:
            self.fit_normalization(inputs, deltas)
        targets = (deltas - self.target_mean) / self.target_scale
        return self.family.stats(self.features(inputs, check=False), targets)

    def predict(self, states: Any, actions: Any, models: Any = None) -> np.ndarray:
        """Noise-free next states ``x + μ_Δ + σ_Δ ⊙ M φ(z)`` (``models`` are standardised
        models, as :meth:`sample` draws them; ``None``: the posterior mean)."""
        if models is not None:
            models = as_float_array("models", models)
            if models.ndim < 2 or models.shape[-2:] != (self.state_dim, self.n_features):
                raise ValueError(
                    f"models must have shape (..., {self.state_dim}, "
                    f"{self.n_features}), got {models.shape}"
                )
        return super().predict(states, actions, self.raw_model(models)) + self.target_mean

    # ---------------------------------------------------------------- planning
    def rollout_unchecked(
        self, state: np.ndarray, actions: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """Planning rollouts in state units: the draws of the paper's model (``K`` models,
        then the noise), scaled by ``σ_Δ`` and shifted by ``μ_Δ`` (the mean shift rides on
        the per-step noise term of :meth:`simulate`)."""
        k, h, _ = actions.shape
        dx = self.state_dim
        if self.planning_models == "mean":
            raw = self.raw_model()
            models = np.broadcast_to(raw, (k, *raw.shape))
            shift = np.broadcast_to(self.target_mean, (h, k, dx))
            return self.simulate(state, actions, models, shift)
        models = self.sample(k, rng) * self.target_scale[:, None]
        noise = rng.standard_normal((h, k, dx))
        noise *= math.sqrt(self.noise_var)
        noise *= self.target_scale
        noise += self.target_mean
        return self.simulate(state, actions, models, noise)

    def _check_restored(self) -> None:
        """The paper model's checks, then the moments: finite, of the right shapes, scales
        > 0, and the features the ones they and the seed make; unnormalised, the prior."""
        super()._check_restored()
        if self.lengthscales not in LENGTHSCALE_RULES:
            raise ValueError(f"lengthscales must be one of {LENGTHSCALE_RULES}")
        if not isinstance(self.normalized, bool):
            raise ValueError(f"normalized must be a bool, got {self.normalized!r}")
        dim_in, dx = self.features.dim_in, self.state_dim
        for name, size, positive in (
            ("input_mean", dim_in, False),
            ("input_scales", dim_in, True),
            ("target_mean", dx, False),
            ("target_scale", dx, True),
        ):
            value = as_float_array(name, getattr(self, name))
            if value.shape != (size,) or (positive and not np.all(value > 0)):
                raise ValueError(f"{name} must have shape ({size},) (entries > 0 for scales)")
            setattr(self, name, value)
        features = self.features
        if self.normalized:
            same = (
                features.scales is not None
                and features.center is not None
                and np.array_equal(features.scales, self.input_scales)
                and np.array_equal(features.center, self.input_mean)
            )
        else:  # the constructor's moments: predictions read them before any fit
            same = (
                features.scales is None
                and features.center is None
                and self._is_prior()
                and not self.input_mean.any()
                and not self.target_mean.any()
                and bool(np.all(self.input_scales == 1.0))
                and bool(np.all(self.target_scale == 1.0))
            )
        if not same:
            raise ValueError("restored model: features do not match its normalisation")
        check_int("n_features", features.n_features)

    def __repr__(self) -> str:
        return (
            f"NormalizedRFFDynamicsModel(state_dim={self.state_dim}, "
            f"action_dim={self.action_dim}, n_features={self.n_features}, "
            f"bandwidth={self.features.bandwidth:g}, noise_var={self.noise_var:g}, "
            f"lengthscales={self.lengthscales!r}, normalized={self.normalized}, "
            f"planning_models={self.planning_models!r})"
        )
