"""The MPPI planner (Williams et al., 2017) with the LyceumAI conventions, and its rewards.

:class:`MPPI` *maximises* the summed reward of ``n_samples`` perturbed action sequences of
length ``horizon`` (no control cost, no discount), weighting each sequence by
``exp((R_k − max_k R_k) / temperature)`` (beyond the paper, ``normalize_returns`` divides
the advantages by a scale of the returns first: :func:`softmax_weights`); sampled actions are
clamped to the action bounds and the new plan is the weighted average of the *clamped*
samples; after acting, the plan is shifted by one step and its last action set to zero (warm
start). Every sample is rolled out in one call of the dynamics: there is no Python loop over
samples.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bam_rl import hyperparams
from bam_rl.checks import (
    as_float_array,
    check_finite_scalar,
    check_int,
    check_memory,
    check_positive,
)

__all__ = [
    "DISCRETE_PLANNER_OPTIONS",
    "MPPI",
    "PLANNER_OPTIONS",
    "RESTORABLE_REWARDS",
    "AngleCosineReward",
    "CategoricalMPPI",
    "StateReward",
    "mppi_options",
    "softmax_weights",
]


#: The planner options the MPPI agents take (``sampling_var`` is the variance of the planner's
#: action perturbations; an agent's ``noise_var`` is its dynamics model's noise).
PLANNER_OPTIONS = ("horizon", "n_samples", "sampling_var", "temperature", "normalize_returns")


#: The options of the planner over ``Discrete(n)`` actions (:class:`CategoricalMPPI`).
DISCRETE_PLANNER_OPTIONS = ("horizon", "n_samples", "temperature", "explore", "normalize_returns")


def check_normalize_returns(value: Any) -> bool:
    """``normalize_returns`` as a ``bool``, or ``ValueError`` naming it."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"normalize_returns must be a bool (True or False), got {value!r}")
    return bool(value)


#: ``normalize_returns``' reference sample: the advantages are divided by the gap between the
#: best return and this quantile of the sampled returns (the best tenth's gap).
NORMALIZE_QUANTILE = 0.9


def softmax_weights(returns: np.ndarray, temperature: float, normalize: bool) -> np.ndarray:
    """The MPPI weights of the sampled ``returns``: ``exp((R_k − max R) / λ)``, normalised.

    With ``normalize`` (beyond the paper), the advantages ``R_k − max R`` are divided by the
    gap between the best return and the :data:`NORMALIZE_QUANTILE` (0.9) quantile of the
    finite returns first, so the weights do not depend on the reward's scale (multiplying
    every reward by 1000 leaves them unchanged) and ``λ`` is read against that gap: a sample
    at the 90th percentile weighs ``exp(−1 / λ)`` of the best. That gap rather than the
    standard deviation or the range of all the returns (which DIAL-MPC and others divide
    by): a learned model's rollouts give heavy-tailed returns (on InvertedPendulum-v5 a few
    diverging rollouts put the standard deviation near 10⁶ where the good samples differ by
    about 8, which weighs the good ones alike), and the worse 90 % of the samples cannot
    move the quantile. When the best tenth ties with the best, the gap to the worst finite
    return is used; when every finite return is equal, they weigh alike. pytorch_mppi and
    STORM only subtract the best cost, so their ``λ`` is in the cost's units, as the paper's
    is here without ``normalize``. Non-finite returns (``−inf``) get no weight; all of them
    non-finite gives equal weights.
    """
    k = returns.size
    best = returns.max()
    if not np.isfinite(best):
        return np.full(k, 1.0 / k)
    if not normalize:
        weights = np.exp((returns - best) / temperature)
        weights /= weights.sum()
        return weights
    advantages = returns - best
    finite = returns[np.isfinite(returns)]
    spread = best - np.quantile(finite, NORMALIZE_QUANTILE)
    if not spread > 0:
        spread = best - finite.min()
    if spread > 0:
        advantages = advantages / spread
    weights = np.exp(advantages / temperature)
    weights /= weights.sum()
    return weights


def discrete_mppi_options(options: dict[str, Any]) -> dict[str, Any]:
    """An agent's planner options over ``Discrete(n)`` actions
    (:data:`DISCRETE_PLANNER_OPTIONS`), or ``ValueError`` naming the unknown ones
    (``sampling_var``, a Gaussian perturbation's variance, has no meaning there)."""
    unknown = set(options) - set(DISCRETE_PLANNER_OPTIONS)
    if unknown:
        raise ValueError(
            f"unknown planner options {sorted(unknown)} for a Discrete action space; accepted: "
            f"{', '.join(DISCRETE_PLANNER_OPTIONS)}"
        )
    checked = dict(options)
    if "normalize_returns" in checked:
        checked["normalize_returns"] = check_normalize_returns(checked["normalize_returns"])
    return checked


def mppi_options(options: dict[str, Any], action_dim: int) -> dict[str, Any]:
    """An agent's planner options (:data:`PLANNER_OPTIONS`) as :class:`MPPI` keyword arguments.

    Unknown names are refused, and ``sampling_var`` is checked under its own name (a scalar or
    one value per action dimension, each > 0).

    Raises:
        ValueError: Naming the unknown options or ``sampling_var``.
    """
    unknown = set(options) - set(PLANNER_OPTIONS)
    if unknown:
        raise ValueError(
            f"unknown planner options {sorted(unknown)}; accepted: {', '.join(PLANNER_OPTIONS)}"
        )
    checked = dict(options)
    if "sampling_var" in checked:
        variance = check_positive("sampling_var", checked.pop("sampling_var"))
        if variance.ndim > 1 or variance.size not in (1, action_dim):
            raise ValueError(
                f"sampling_var must be a scalar or have shape ({action_dim},), got {variance.shape}"
            )
        checked["sampling_var"] = variance
    if "normalize_returns" in checked:
        checked["normalize_returns"] = check_normalize_returns(checked["normalize_returns"])
    return checked


class StateReward:
    """Reward read from one component of the (predicted) state: ``r = x[index]``.

    The default ``index=2`` is the cart-pole's ``cos(angle)`` (1 = upright), the
    environment's own reward. Callable on ``states (..., dx)`` and ``actions (..., du)``.
    """

    def __init__(self, index: int = 2):
        self.index = check_int("index", index, minimum=0)

    def _check_restored(self) -> None:
        """A restored reward's index is checked as the constructor checks it."""
        self.index = check_int("index", self.index, minimum=0)

    def __call__(self, states: np.ndarray, actions: np.ndarray) -> np.ndarray:
        return states[..., self.index]

    def __repr__(self) -> str:
        return f"StateReward(index={self.index})"


class AngleCosineReward:
    """``cos`` of the angle a state encodes as ``(cos, sin)`` components: ``c / sqrt(c² + s²)``.

    For a learned model's predicted state, whose ``(c, s)`` need not lie on the unit circle,
    this is the cosine of the predicted angle ``atan2(s, c)``, so the reward stays in
    [−1, 1] as the environment's does (a model predicting ``c > 1`` earns no more than an
    upright pole). On true states it equals the cart-pole's reward ``cos(angle)``.

    Args:
        cos_index: Index of the cosine component (2 for the cart-pole observation).
        sin_index: Index of the sine component (3).
    """

    def __init__(self, cos_index: int = 2, sin_index: int = 3):
        self.cos_index = check_int("cos_index", cos_index, minimum=0)
        self.sin_index = check_int("sin_index", sin_index, minimum=0)

    def _check_restored(self) -> None:
        """A restored reward's indices are checked as the constructor checks them."""
        self.cos_index = check_int("cos_index", self.cos_index, minimum=0)
        self.sin_index = check_int("sin_index", self.sin_index, minimum=0)

    def __call__(self, states: np.ndarray, actions: np.ndarray) -> np.ndarray:
        c = states[..., self.cos_index]
        s = states[..., self.sin_index]
        norm = np.hypot(c, s)
        return np.divide(c, norm, out=np.ones_like(c), where=norm > 0)

    def __repr__(self) -> str:
        return f"AngleCosineReward(cos_index={self.cos_index}, sin_index={self.sin_index})"


#: The reward classes a restored planner may hold: this module's, and the registry's
#: ``NamedReward``, which :mod:`bam_rl.agents.rewards` adds (it builds on this module).
RESTORABLE_REWARDS: list[type] = [AngleCosineReward, StateReward]


def _check_restorable(reward: Any) -> None:
    """``ValueError`` unless a restored planner's ``reward`` is one of
    :data:`RESTORABLE_REWARDS`."""
    if not isinstance(reward, tuple(RESTORABLE_REWARDS)):
        raise ValueError(
            f"reward must be one of {[kind.__name__ for kind in RESTORABLE_REWARDS]}, got "
            f"{reward!r}"
        )


def _options_of(planner: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """``planner``'s values of the options ``names``, to build it again from them."""
    return {name: getattr(planner, name) for name in names}


def _check_plan_memory(n_samples: int, horizon: int, nbytes: int, dynamics: Any) -> None:
    """:func:`~bam_rl.checks.check_memory` of one plan: ``nbytes`` of the planner's own, plus
    the rollout of ``dynamics`` when it says what that takes
    (``dynamics.rollout_bytes(n_samples, horizon)``)."""
    rollout_bytes = getattr(dynamics, "rollout_bytes", None)
    if callable(rollout_bytes):
        nbytes += int(rollout_bytes(n_samples, horizon))
    check_memory(f"horizon = {horizon} with n_samples = {n_samples}", nbytes)


def _check_shapes(planner: Any, fresh: Any, names: tuple[str, ...]) -> None:
    """``ValueError`` unless each array ``names`` of a restored ``planner`` has the shape
    ``fresh`` (the planner built again from its options) gives it."""
    for name in names:
        value, expected = getattr(planner, name), getattr(fresh, name)
        if not isinstance(value, np.ndarray) or value.shape != expected.shape:
            raise ValueError(f"{name} must be an array of shape {expected.shape}")


def _state_vector(state: Any) -> np.ndarray:
    """The state to plan from as a finite float64 vector; ``ValueError`` naming it when it is
    not numeric and finite or not one-dimensional."""
    state = as_float_array("state", state)
    if state.ndim != 1:
        raise ValueError(f"state must be a vector, got shape {state.shape}")
    return state


def _no_weight_if_not_finite(returns: np.ndarray, states: Any, reward: Any) -> np.ndarray:
    """``returns`` with its non-finite entries at ``-inf``: a diverging model can predict
    non-finite states, and such samples get no weight. ``ValueError`` naming ``reward`` when
    no return is finite although every predicted state is: the reward itself gives NaN or
    ``inf``, and the planner would act at random (all weights equal)."""
    finite = np.isfinite(returns)
    if not finite.any() and np.all(np.isfinite(states)):
        raise ValueError(
            f"the planning reward {reward!r} gave no finite return for any of the "
            f"{returns.size} sampled action sequences, although every predicted state is "
            "finite: a planning reward must return finite numbers (with NaN or inf the "
            "planner weighs every sequence alike and acts at random)"
        )
    return np.where(finite, returns, -np.inf)


class MPPI:
    """Model predictive path integral control, vectorised over samples (LyceumAI conventions).

    One call of :meth:`plan` draws ``n_samples`` perturbations of the current plan, clamps the
    perturbed sequences to ``[action_low, action_high]``, rolls all of them out in one call of
    ``dynamics``, scores them with the summed ``reward``, replaces the plan by the
    exponentially weighted mean of the clamped sequences, returns its first action and
    shifts it (last action 0).

    Args:
        dynamics: ``dynamics(state (dx,), actions (K, H, du), rng) -> states (K, H, dx)``
            (an :class:`~bam_rl.agents.dynamics.RFFDynamicsModel`, a
            :class:`~bam_rl.agents.simulator.SimulatorDynamics`, or any callable). When it has
            ``state_dim``, ``action_dim`` matching the query and a ``rollout_unchecked``
            method of the same signature, :meth:`plan` calls that instead (the state is
            checked once in :meth:`plan`, the samples are the planner's own).
        reward: ``reward(states (K, H, dx), actions (K, H, du)) -> (K, H)``; default
            :class:`AngleCosineReward` (``cos(angle)`` of the cart-pole).
        action_dim: Dimension of the action.
        horizon: Planning horizon ``H >= 1`` (50).
        n_samples: Sampled sequences ``K >= 1`` (32).
        sampling_var: Sampling variance ``> 0`` of every action dimension (0.4), a scalar or
            one value per dimension.
        temperature: ``λ > 0`` of the weights ``exp((R_k − max R) / λ)`` (0.5; LyceumAI
            accepts (0, 1]).
        normalize_returns: Beyond the paper: divide ``R_k − max R`` by the gap between the
            best and the 90th percentile of the sampled returns before the softmax, so the
            weights do not depend on the reward's scale and a sample at that percentile
            weighs ``exp(−1 / temperature)`` of the best (:func:`softmax_weights`).
            ``False`` (default): the paper's weights.
        action_low: Lower action bound (scalar or per dimension).
        action_high: Upper action bound.
        seed: Seed of :attr:`rng`, used when :meth:`plan` gets no generator.

    Attributes:
        plan_actions: The current plan, shape ``(horizon, action_dim)``.
        last_returns: Summed rewards of the samples of the latest :meth:`plan`.
        last_weights: Their normalised weights.
    """

    def __init__(
        self,
        dynamics: Any = None,
        reward: Any = None,
        *,
        action_dim: int = 1,
        horizon: int = hyperparams.MPPI_HORIZON,
        n_samples: int = hyperparams.MPPI_SAMPLES,
        sampling_var: Any = hyperparams.MPPI_SAMPLING_VAR,
        temperature: float = hyperparams.MPPI_TEMPERATURE,
        action_low: Any = -1.0,
        action_high: Any = 1.0,
        seed: int | None = None,
        normalize_returns: bool = False,
    ):
        if dynamics is not None and not callable(dynamics):
            raise ValueError(f"dynamics must be callable, got {dynamics!r}")
        if reward is not None and not callable(reward):
            raise ValueError(f"reward must be callable or None, got {reward!r}")
        self.dynamics = dynamics
        self.reward = AngleCosineReward() if reward is None else reward
        self.action_dim = check_int("action_dim", action_dim)
        self.horizon = check_int("horizon", horizon)
        self.n_samples = check_int("n_samples", n_samples)
        self.check_planning_memory(dynamics)
        du = self.action_dim
        variance = check_positive("sampling_var", sampling_var)
        if variance.ndim > 1 or variance.size not in (1, du):
            raise ValueError(
                f"sampling_var must be a scalar or have shape ({du},), got {variance.shape}"
            )
        self.sampling_var = np.broadcast_to(variance, (du,)).copy()
        self.sampling_std = np.sqrt(self.sampling_var)
        self.temperature = check_finite_scalar("temperature", temperature)
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature!r}")
        self.normalize_returns = check_normalize_returns(normalize_returns)
        low = np.broadcast_to(as_float_array("action_low", action_low), (du,)).copy()
        high = np.broadcast_to(as_float_array("action_high", action_high), (du,)).copy()
        if np.any(low >= high):
            raise ValueError(f"action_low must be < action_high, got {low} and {high}")
        self.action_low, self.action_high = low, high
        self.rng = np.random.default_rng(seed)
        self.plan_actions = np.zeros((self.horizon, du))
        self.last_returns = np.zeros(self.n_samples)
        self.last_weights = np.full(self.n_samples, 1.0 / self.n_samples)

    def _check_restored(self) -> None:
        """A restored planner is checked by building it again from its options (so sizes,
        ``sampling_var``, ``temperature`` and bounds are refused as the constructor refuses
        them) and its plan and last weights must have the shapes those options give; only
        this module's rewards and the registry's (:class:`~bam_rl.agents.rewards.NamedReward`)
        are restored. Files written before the planner's variance was
        named ``sampling_var`` (``noise_var``, ``noise_std``) load as well."""
        for old, new in (("noise_var", "sampling_var"), ("noise_std", "sampling_std")):
            if old in vars(self) and new not in vars(self):
                setattr(self, new, vars(self).pop(old))
        # files written before normalize_returns: the paper's weights, as they were saved
        vars(self).setdefault("normalize_returns", False)
        _check_restorable(self.reward)
        for name in ("cos_index", "sin_index", "index"):
            if hasattr(self.reward, name):
                check_int(name, getattr(self.reward, name), minimum=0)
        fresh = MPPI(
            self.dynamics,
            self.reward,
            action_dim=self.action_dim,
            action_low=self.action_low,
            action_high=self.action_high,
            **_options_of(self, PLANNER_OPTIONS),
        )
        for name in ("sampling_var", "sampling_std", "action_low", "action_high"):
            value = getattr(self, name)
            if not isinstance(value, np.ndarray) or value.dtype != np.float64 or value.ndim != 1:
                raise ValueError(f"{name} must be a float64 vector of one entry per action")
        _check_shapes(self, fresh, ("plan_actions", "last_returns", "last_weights"))
        plan = as_float_array("plan_actions", self.plan_actions)
        if np.any(plan < fresh.action_low) or np.any(plan > fresh.action_high):
            raise ValueError("plan_actions must lie within the action bounds")
        if not isinstance(self.rng, np.random.Generator):
            raise ValueError("rng must be a numpy Generator")
        # derived fields come from the checked options, never from the file
        self.action_dim, self.horizon, self.n_samples = (
            fresh.action_dim,
            fresh.horizon,
            fresh.n_samples,
        )
        self.sampling_var, self.sampling_std = fresh.sampling_var, fresh.sampling_std
        self.temperature, self.normalize_returns = fresh.temperature, fresh.normalize_returns
        self.action_low, self.action_high = fresh.action_low, fresh.action_high
        self.plan_actions = np.array(plan, dtype=np.float64)

    def check_planning_memory(self, dynamics: Any = None) -> None:
        """``ValueError`` naming ``horizon`` and ``n_samples`` unless one :meth:`plan` fits the
        memory budget (:func:`bam_rl.checks.check_memory`): the planner's samples, noise and
        returns, plus the rollout of ``dynamics`` when it says what that takes
        (``dynamics.rollout_bytes(n_samples, horizon)``, as the models of
        :mod:`bam_rl.agents.dynamics` do)."""
        k, h, du = self.n_samples, self.horizon, self.action_dim
        _check_plan_memory(k, h, k * h * (32 * du + 16) + 16 * h * du, dynamics)

    def _check_states_memory(self, state_dim: int) -> None:
        """The planner's memory with the ``(n_samples, horizon, state_dim)`` float64 states a
        dynamics callable that does not say what it allocates returns (and its rewards)."""
        k, h, du = self.n_samples, self.horizon, self.action_dim
        check_memory(
            f"horizon = {h} with n_samples = {k} (and states of {state_dim} entries)",
            k * h * (32 * du + 16 + 8 * state_dim + 8),
        )

    def reset(self) -> None:
        """Clears the plan (all-zero actions), as at the start of a trial."""
        self.plan_actions[:] = 0.0

    def plan(
        self, state: Any, rng: np.random.Generator | None = None, dynamics: Any = None
    ) -> np.ndarray:
        """One MPPI iteration from ``state``; returns the action to apply, ``(action_dim,)``.

        Args:
            state: The current state, a finite vector.
            rng: Generator for the action noise and the dynamics' draws (default
                :attr:`rng`). The action noise ``(K, H, du)`` is drawn first.
            dynamics: Overrides :attr:`dynamics` for this call.

        Raises:
            ValueError: For a non-finite or non-vector state, no dynamics, or a reward that
                gives no finite return while every predicted state is finite.
        """
        rng = self.rng if rng is None else rng
        dynamics = self.dynamics if dynamics is None else dynamics
        if dynamics is None:
            raise ValueError("dynamics must be given (to MPPI or to plan)")
        state = _state_vector(state)
        noise = rng.standard_normal((self.n_samples, self.horizon, self.action_dim))
        samples = self.plan_actions + self.sampling_std * noise
        np.clip(samples, self.action_low, self.action_high, out=samples)
        if not hasattr(dynamics, "rollout_bytes"):  # a callable of the caller's: its states
            self._check_states_memory(state.shape[0])
        unchecked = getattr(dynamics, "rollout_unchecked", None)
        if (
            unchecked is not None
            and state.shape == (getattr(dynamics, "state_dim", -1),)
            and self.action_dim == getattr(dynamics, "action_dim", -1)
        ):
            # the inputs are checked once, here: the samples are the planner's own
            states = unchecked(state, samples, rng)
        else:
            states = dynamics(state, samples, rng)  # checks its inputs (and raises)
        bind = getattr(self.reward, "bind_dynamics", None)  # a terminal value's P (terminal.py)
        if bind is not None:
            bind(dynamics)
        returns = np.asarray(self.reward(states, samples), dtype=np.float64).sum(axis=1)
        if returns.shape != (self.n_samples,) or not np.all(np.isfinite(returns)):
            returns = _no_weight_if_not_finite(returns, states, self.reward)
        weights = softmax_weights(returns, self.temperature, self.normalize_returns)
        self.last_returns, self.last_weights = returns, weights
        self.plan_actions = np.tensordot(weights, samples, axes=1)
        action = self.plan_actions[0].copy()
        self.plan_actions[:-1] = self.plan_actions[1:]
        self.plan_actions[-1] = 0.0
        return action

    def __repr__(self) -> str:
        return (
            f"MPPI(horizon={self.horizon}, n_samples={self.n_samples}, "
            f"sampling_var={self.sampling_var.tolist()}, temperature={self.temperature:g}"
            + (", normalize_returns=True)" if self.normalize_returns else ")")
        )


#: Default share of the probability of every planned step spread uniformly over the actions
#: (:class:`CategoricalMPPI`'s ``explore``), so sampled sequences keep exploring.
DISCRETE_EXPLORE = 0.1


class CategoricalMPPI:
    """MPPI over ``Discrete(n)`` actions (a categorical MPPI, or one iteration of CEM per step).

    The plan is a table of per-step action probabilities ``(horizon, n)``. One call of
    :meth:`plan` samples ``n_samples`` action sequences from it (the first is the plan's most
    probable sequence, the warm start), rolls all of them out at once as one-hot actions
    ``(K, H, n)``, weights them by ``exp((R_k − max_k R_k) / temperature)`` as :class:`MPPI`
    does, and replaces the probabilities by the weighted frequencies of the sampled actions,
    mixed with ``explore`` of the uniform distribution. It returns the most probable first
    action (an int) and shifts the table (the last step uniform).

    Args:
        n_actions: ``n >= 2``, the size of the ``Discrete`` space.
        reward: ``reward(states (K, H, dx), one-hot actions (K, H, n)) -> (K, H)``.
        horizon: Planning horizon ``H >= 1`` (50).
        n_samples: Sampled sequences ``K >= 1`` (32).
        temperature: ``λ > 0`` of the weights (0.5, the continuous planner's).
        normalize_returns: Beyond the paper: the weights of :func:`softmax_weights` with
            the gap between the best and the 90th percentile return divided out; ``False``
            (default): the paper's.
        explore: Share in [0, 1) of every step's probability spread uniformly (0.1).
        start: The first action of the space (``Discrete``'s ``start``); :meth:`plan` returns
            ``start + index``.
        seed: Seed of :attr:`rng`, used when :meth:`plan` gets no generator.

    Attributes:
        probs: The plan, ``(horizon, n)`` probabilities (rows sum to 1).
        last_returns: Summed rewards of the samples of the latest :meth:`plan`.
        last_weights: Their normalised weights.
    """

    def __init__(
        self,
        n_actions: int,
        reward: Any,
        *,
        horizon: int = hyperparams.MPPI_HORIZON,
        n_samples: int = hyperparams.MPPI_SAMPLES,
        temperature: float = hyperparams.MPPI_TEMPERATURE,
        explore: float = DISCRETE_EXPLORE,
        start: int = 0,
        seed: int | None = None,
        normalize_returns: bool = False,
    ):
        if not callable(reward):
            raise ValueError(f"reward must be callable, got {reward!r}")
        self.reward = reward
        self.n_actions = check_int("n_actions", n_actions, minimum=2)
        self.action_dim = self.n_actions  # the one-hot action the dynamics see
        self.horizon = check_int("horizon", horizon)
        self.n_samples = check_int("n_samples", n_samples)
        self.start = int(start) if isinstance(start, (int, np.integer)) else start
        if not isinstance(self.start, int) or isinstance(start, bool):
            raise ValueError(f"start must be an int, got {start!r}")
        self.dynamics = None  # given to every plan (the agent holds the model once)
        self.check_planning_memory()
        self.temperature = check_finite_scalar("temperature", temperature)
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature!r}")
        self.explore = check_finite_scalar("explore", explore)
        if not 0.0 <= self.explore < 1.0:
            raise ValueError(f"explore must lie in [0, 1), got {explore!r}")
        self.normalize_returns = check_normalize_returns(normalize_returns)
        self.rng = np.random.default_rng(seed)
        self.probs = np.full((self.horizon, self.n_actions), 1.0 / self.n_actions)
        self.last_returns = np.zeros(self.n_samples)
        self.last_weights = np.full(self.n_samples, 1.0 / self.n_samples)

    def _check_restored(self) -> None:
        """A restored planner is checked by building it again from its options, and its
        probabilities must be a ``(horizon, n)`` table of rows summing to 1."""
        _check_restorable(self.reward)
        vars(self).setdefault("normalize_returns", False)  # files written before it
        fresh = CategoricalMPPI(
            self.n_actions,
            self.reward,
            start=self.start,
            **_options_of(self, DISCRETE_PLANNER_OPTIONS),
        )
        _check_shapes(self, fresh, ("probs", "last_returns", "last_weights"))
        probs = as_float_array("probs", self.probs)
        if np.any(probs < 0) or not np.allclose(probs.sum(axis=1), 1.0):
            raise ValueError("probs must hold probabilities, each row summing to 1")
        if not isinstance(self.rng, np.random.Generator):
            raise ValueError("rng must be a numpy Generator")
        if self.dynamics is not None:
            raise ValueError("the planner must hold no dynamics")
        self.n_actions, self.action_dim = fresh.n_actions, fresh.action_dim
        self.horizon, self.n_samples = fresh.horizon, fresh.n_samples
        self.temperature, self.explore = fresh.temperature, fresh.explore
        self.normalize_returns = fresh.normalize_returns
        self.probs = np.array(probs, dtype=np.float64)

    def check_planning_memory(self, dynamics: Any = None) -> None:
        """``ValueError`` naming ``horizon`` and ``n_samples`` unless one :meth:`plan` fits the
        memory budget (the one-hot samples and draws, plus what ``dynamics`` says a rollout
        takes)."""
        k, h, n = self.n_samples, self.horizon, self.n_actions
        _check_plan_memory(k, h, k * h * (16 * n + 24) + 16 * h * n, dynamics)

    def reset(self) -> None:
        """Clears the plan (uniform probabilities), as at the start of a trial."""
        self.probs[:] = 1.0 / self.n_actions

    def one_hot(self, indices: np.ndarray) -> np.ndarray:
        """``indices`` (any shape, in ``[0, n)``) as float64 one-hot vectors ``(..., n)``."""
        return (np.asarray(indices)[..., None] == np.arange(self.n_actions)).astype(np.float64)

    def plan(self, state: Any, rng: np.random.Generator | None = None, dynamics: Any = None) -> int:
        """One categorical MPPI iteration from ``state``; returns the action (an int of the
        space: ``start`` + the index).

        Args:
            state: The current state, a finite vector.
            rng: Generator of the samples and the dynamics' draws (default :attr:`rng`); the
                ``(K, H)`` uniform draws of the samples come first.
            dynamics: ``dynamics(state, one-hot actions (K, H, n), rng) -> (K, H, dx)``.

        Raises:
            ValueError: For a non-finite or non-vector state, no dynamics, or a reward that
                gives no finite return while every predicted state is finite.
        """
        rng = self.rng if rng is None else rng
        if dynamics is None:
            raise ValueError("dynamics must be given to plan")
        state = _state_vector(state)
        k, n = self.n_samples, self.n_actions
        draws = rng.random((k, self.horizon))
        cdf = np.cumsum(self.probs, axis=1)
        indices = (draws[..., None] >= cdf[:, :-1]).sum(axis=-1)  # inverse CDF, (K, H)
        indices[0] = self.probs.argmax(axis=1)  # the plan's most probable sequence
        samples = self.one_hot(indices)
        unchecked = getattr(dynamics, "rollout_unchecked", None)
        if (
            unchecked is not None
            and state.shape == (getattr(dynamics, "state_dim", -1),)
            and n == getattr(dynamics, "action_dim", -1)
        ):
            states = unchecked(state, samples, rng)
        else:
            states = dynamics(state, samples, rng)
        returns = np.asarray(self.reward(states, samples), dtype=np.float64).sum(axis=1)
        if not np.all(np.isfinite(returns)):
            returns = _no_weight_if_not_finite(returns, states, self.reward)
        weights = softmax_weights(returns, self.temperature, self.normalize_returns)
        self.last_returns, self.last_weights = returns, weights
        frequencies = np.tensordot(weights, samples, axes=1)  # (H, n)
        self.probs = (1.0 - self.explore) * frequencies + self.explore / n
        action = int(self.probs[0].argmax())
        self.probs[:-1] = self.probs[1:]
        self.probs[-1] = 1.0 / n
        return self.start + action

    def __repr__(self) -> str:
        return (
            f"CategoricalMPPI(n_actions={self.n_actions}, horizon={self.horizon}, "
            f"n_samples={self.n_samples}, temperature={self.temperature:g}, "
            f"explore={self.explore:g}"
            + (", normalize_returns=True)" if self.normalize_returns else ")")
        )
