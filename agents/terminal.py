"""Terminal values solved from a model (beyond the paper): the LQR cost-to-go about an
equilibrium, added by a planning reward at the horizon's end.

A short plan cannot see what happens after its last step (a cart that must first move further
out to bring the poles back to the rail's centre). A planning reward that declares a
:class:`TerminalValue` (an equilibrium, its action and a quadratic cost ``Q``, ``R`` about it)
subtracts ``sᵀ P s`` from the last step's reward of every sampled trajectory, ``s`` the state
minus the equilibrium and ``P`` the solution of the discrete algebraic Riccati equation of the
model linearised there (:func:`solve_terminal_value`, central finite differences of any batched
one-step function, then ``scipy.linalg.solve_discrete_are``). The weights are a choice, not the
environment's reward: the term is a heuristic value of the state the plan ends in.

Where ``P`` comes from:

* the ground truth (:class:`~bam_rl.agents.simulator.MujocoEnvDynamics`) solves it from the
  live MuJoCo model, again whenever the world (gravity, a mass…) changed
  (:meth:`~bam_rl.agents.simulator.MujocoEnvDynamics.terminal_cost`);
* a learned agent solves it from its posterior-mean model with :meth:`TerminalValue.solve`
  and hands it to the reward (:meth:`bam_rl.agents.rewards.NamedReward.set_cost_to_go`);
* otherwise the registry's default: the environment's nominal model (Gymnasium's, as built),
  solved once per process (:meth:`TerminalValue.nominal_cost`).

The LQR state ``s`` is the MuJoCo physics state ``(qpos, qvel)`` of the environment: the
observation is mapped to it (``to_state``; InvertedDoublePendulum's angles from their sines and
cosines) and back (``from_state``, an observation consistent with a physics state, for a model
that steps observations).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "TerminalValue",
    "check_cost_to_go",
    "linearise",
    "mujoco_step_function",
    "solve_terminal_value",
]

Batch = Callable[[np.ndarray, np.ndarray], np.ndarray]

#: Central-difference step of :func:`linearise` (relative to 1 + |coordinate|).
FD_STEP = 1e-5
_NOMINAL: dict[tuple[Any, ...], np.ndarray] = {}
_CLASSIC: dict[tuple[Any, ...], np.ndarray] = {}


def _square(name: str, value: Any, size: int) -> np.ndarray:
    matrix = np.asarray(value, dtype=np.float64)
    if matrix.shape != (size, size) or not np.all(np.isfinite(matrix)):
        raise ValueError(f"{name} must be a finite ({size}, {size}) matrix, got {matrix.shape}")
    if not np.allclose(matrix, matrix.T, rtol=1e-10, atol=1e-12):
        raise ValueError(f"{name} must be symmetric")
    return matrix


def _positive_definite(name: str, matrix: np.ndarray, strict: bool) -> None:
    """``ValueError`` unless ``matrix`` is positive (semi-)definite: a Cholesky factor of it
    (plus a tiny ridge for the semi-definite case) must exist."""
    ridge = 0.0 if strict else 1e-12 * max(1.0, float(np.abs(matrix).max()))
    try:
        np.linalg.cholesky(matrix + ridge * np.eye(len(matrix)))
    except np.linalg.LinAlgError:
        kind = "definite" if strict else "semi-definite"
        raise ValueError(f"{name} must be positive {kind}") from None


def check_cost_to_go(value: Any, size: int) -> np.ndarray:
    """``value`` as a float64 ``(size, size)`` symmetric positive semi-definite matrix, or
    ``ValueError`` naming ``cost_to_go``."""
    matrix = _square("cost_to_go", value, size)
    _positive_definite("cost_to_go", matrix, strict=False)
    return 0.5 * (matrix + matrix.T)


def linearise(
    step: Batch, state: Any, action: Any, eps: float = FD_STEP
) -> tuple[np.ndarray, np.ndarray]:
    """``(A, B)``: the Jacobians of ``step(states (K, n), actions (K, m)) -> (K, n)`` at
    ``(state, action)`` by central differences, all ``2 (n + m)`` points in one batched call.

    Raises:
        ValueError: If ``step`` returns another shape than ``(2 (n + m), n)`` or non-finite
            values, or ``eps`` is not a positive number.
    """
    if not isinstance(eps, (int, float)) or not 0 < eps < 1:
        raise ValueError(f"eps must be a number in (0, 1), got {eps!r}")
    x = np.asarray(state, dtype=np.float64).reshape(-1)
    u = np.asarray(action, dtype=np.float64).reshape(-1)
    n, m = x.size, u.size
    hx = eps * (1.0 + np.abs(x))
    hu = eps * (1.0 + np.abs(u))
    states = np.repeat(x[None], 2 * (n + m), axis=0)
    actions = np.repeat(u[None], 2 * (n + m), axis=0)
    states[np.arange(n), np.arange(n)] += hx
    states[n + np.arange(n), np.arange(n)] -= hx
    actions[2 * n + np.arange(m), np.arange(m)] += hu
    actions[2 * n + m + np.arange(m), np.arange(m)] -= hu
    following = np.asarray(step(states, actions), dtype=np.float64)
    if following.shape != (2 * (n + m), n) or not np.all(np.isfinite(following)):
        raise ValueError(
            f"step must return finite next states of shape ({2 * (n + m)}, {n}), got "
            f"{following.shape}"
        )
    a = (following[:n] - following[n : 2 * n]).T / (2 * hx)
    b = (following[2 * n : 2 * n + m] - following[2 * n + m :]).T / (2 * hu)
    return a, b


def solve_terminal_value(
    dynamics_fn: Batch,
    equilibrium: Any,
    Q: Any,
    R: Any,
    *,
    action: Any = None,
    eps: float = FD_STEP,
) -> np.ndarray:
    """The LQR cost-to-go matrix ``P`` of ``dynamics_fn`` about ``equilibrium``.

    ``dynamics_fn(states (K, n), actions (K, m)) -> next states (K, n)`` is any batched model
    (the simulator, a learned model's posterior mean), in the coordinates of ``equilibrium``;
    it is linearised by central differences (:func:`linearise`) and ``P`` solves
    ``P = Aᵀ P A - Aᵀ P B (R + Bᵀ P B)⁻¹ Bᵀ P A + Q`` (``scipy.linalg.solve_discrete_are``).

    Args:
        dynamics_fn: The batched one-step model.
        equilibrium: The state ``(n,)`` to linearise about.
        Q: The state cost ``(n, n)``, symmetric positive semi-definite.
        R: The action cost ``(m, m)``, symmetric positive definite (``m`` from ``R``).
        action: The action at the equilibrium (default zeros).
        eps: The relative central-difference step.

    Returns:
        ``P`` ``(n, n)``, symmetric positive semi-definite.

    Raises:
        ValueError: Naming ``Q``, ``R``, ``action`` or ``dynamics_fn`` (a linearisation that
            is not stabilisable, so no finite cost-to-go exists).
    """
    from scipy.linalg import solve_discrete_are

    x = np.asarray(equilibrium, dtype=np.float64).reshape(-1)
    q = _square("Q", Q, x.size)
    _positive_definite("Q", q, strict=False)
    r_matrix = np.atleast_2d(np.asarray(R, dtype=np.float64))
    r = _square("R", r_matrix, r_matrix.shape[0])
    _positive_definite("R", r, strict=True)
    u = np.zeros(len(r)) if action is None else np.asarray(action, dtype=np.float64).reshape(-1)
    if u.shape != (len(r),) or not np.all(np.isfinite(u)):
        raise ValueError(f"action must be {len(r)} finite numbers (R's size), got {u.shape}")
    a, b = linearise(dynamics_fn, x, u, eps)
    try:
        p = solve_discrete_are(a, b, q, r)
    except (np.linalg.LinAlgError, ValueError) as error:
        raise ValueError(
            f"dynamics_fn's linearisation about the equilibrium has no finite LQR cost-to-go "
            f"(not stabilisable?): {error}"
        ) from None
    if not np.all(np.isfinite(p)):
        raise ValueError("dynamics_fn's linearisation gives a non-finite LQR cost-to-go")
    return check_cost_to_go(0.5 * (p + p.T), x.size)


def mujoco_step_function(model: Any, frame_skip: int) -> Batch:
    """The batched physics step of a MuJoCo model in ``(qpos, qvel)`` coordinates (``nq ==
    nv``): each row's state set on a scratch ``MjData`` (warm start cleared), its action
    written to ``ctrl`` and held for ``frame_skip`` steps, as ``MujocoEnv.do_simulation``."""
    import mujoco

    if model.nq != model.nv or model.na:
        raise ValueError("the model must have nq == nv and no activations (hinge/slide joints)")
    data = mujoco.MjData(model)
    nq = model.nq

    def step(states: np.ndarray, actions: np.ndarray) -> np.ndarray:
        out = np.empty_like(states)
        for i, (state, action) in enumerate(zip(states, actions, strict=True)):
            mujoco.mj_resetData(model, data)
            data.qpos[:], data.qvel[:], data.ctrl[:] = state[:nq], state[nq:], action
            mujoco.mj_step(model, data, nstep=frame_skip)
            out[i, :nq], out[i, nq:] = data.qpos, data.qvel
        return out

    return step


@dataclass(frozen=True)
class TerminalValue:
    """A planning reward's terminal value: the LQR cost-to-go about an equilibrium.

    Attributes:
        equilibrium: The physics state ``(qpos, qvel)`` at the equilibrium, ``(n,)``.
        action: The action held there, ``(m,)``.
        Q: The state cost ``(n, n)``.
        R: The action cost ``(m, m)``.
        to_state: Observations ``(..., dx)`` → physics states ``(..., n)``.
        from_state: Physics states ``(K, n)`` → observations ``(K, dx)`` consistent with them.
        env_id: The Gymnasium environment whose nominal model gives the default ``P``.
        angles: Indices of ``s`` that are angles: their difference to the equilibrium is
            wrapped into ``(-π, π]``.
    """

    equilibrium: np.ndarray
    action: np.ndarray
    Q: np.ndarray
    R: np.ndarray
    to_state: Callable[[np.ndarray], np.ndarray]
    from_state: Callable[[np.ndarray], np.ndarray]
    env_id: str
    angles: tuple[int, ...] = field(default=())

    @property
    def size(self) -> int:
        """``n``, the physics state's entries."""
        return int(np.asarray(self.equilibrium).size)

    def deviation(self, observations: np.ndarray) -> np.ndarray:
        """``s``: the physics state of ``observations (..., dx)`` minus the equilibrium."""
        s = self.to_state(observations) - self.equilibrium
        if self.angles:
            idx = list(self.angles)
            s[..., idx] = np.pi - np.mod(np.pi - s[..., idx], 2 * np.pi)
        return s

    def cost(self, observations: np.ndarray, cost_to_go: np.ndarray) -> np.ndarray:
        """``sᵀ P s`` of every observation ``(..., dx)`` → ``(...)``."""
        s = self.deviation(observations)
        return np.einsum("...i,ij,...j->...", s, cost_to_go, s)

    def solve(self, observation_step: Batch, eps: float = FD_STEP) -> np.ndarray:
        """``P`` of a model that steps observations, ``f(observations (K, dx), actions (K, m))
        -> next observations (K, dx)`` (a learned agent's posterior mean): linearised in the
        physics state through ``from_state`` and ``to_state``."""

        def step(states: np.ndarray, actions: np.ndarray) -> np.ndarray:
            following = np.asarray(observation_step(self.from_state(states), actions))
            return self.to_state(following)

        return solve_terminal_value(
            step, self.equilibrium, self.Q, self.R, action=self.action, eps=eps
        )

    def solve_mujoco(self, model: Any, frame_skip: int, eps: float = FD_STEP) -> np.ndarray:
        """``P`` of a MuJoCo model (a copy of the live one), stepped ``frame_skip`` physics
        steps per action (:func:`mujoco_step_function`)."""
        step = mujoco_step_function(model, frame_skip)
        return solve_terminal_value(
            step, self.equilibrium, self.Q, self.R, action=self.action, eps=eps
        )

    def cache_key(self) -> tuple[Any, ...]:
        """What ``P`` depends on besides the model: the equilibrium, the action, ``Q``, ``R``,
        the angles and the state maps (the functions themselves, so the key holds them and no
        other value can take their place), and the environment id."""
        arrays = (self.equilibrium, self.action, self.Q, self.R)
        return (
            self.env_id,
            *(np.asarray(a, dtype=np.float64).tobytes() for a in arrays),
            tuple(self.angles),
            self.to_state,
            self.from_state,
        )

    def solve_classic(self, dynamics: Any) -> np.ndarray:
        """``P`` of a classic-control model (:mod:`bam_rl.agents.classic_models`, whose
        internal state is this value's physics state), cached per value of its parameters:
        the ground truth of ``Pendulum-v1`` solves it again when ``g``, ``m``… change."""
        values = tuple(sorted((k, float(v)) for k, v in dynamics.parameters.items()))
        key = (self.cache_key(), values)
        if key not in _CLASSIC:
            _CLASSIC[key] = solve_terminal_value(
                dynamics.step, self.equilibrium, self.Q, self.R, action=self.action
            )
        return _CLASSIC[key]

    def nominal_cost(self) -> np.ndarray:
        """``P`` of the environment as Gymnasium builds it (solved once per process)."""
        key = self.cache_key()
        if key not in _NOMINAL:
            import gymnasium as gym

            env: Any = gym.make(self.env_id).unwrapped
            try:
                if hasattr(env, "model") and hasattr(env, "frame_skip"):
                    _NOMINAL[key] = self.solve_mujoco(env.model, int(env.frame_skip))
                else:
                    from .classic_models import classic_model_for

                    _NOMINAL[key] = self.solve_classic(classic_model_for(env))
            finally:
                env.close()
        return _NOMINAL[key]
