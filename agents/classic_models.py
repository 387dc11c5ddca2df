"""Vectorised copies of Gymnasium's classic-control equations: ground-truth dynamics for
:class:`~bam_rl.agents.mppi.GroundTruthMPPI` on ``CartPole-v1``, ``Pendulum-v1`` and
``MountainCarContinuous-v0``.

Each model steps ``K`` states at once with NumPy, in the environment's own arithmetic (the
same operations in the same order and precision: float64 for the cart-pole and the
pendulum, float32 where ``MountainCarContinuous-v0`` keeps its state in float32), so one
step from the environment's ``state`` gives the environment's next ``state`` to 1e-10
(``tests/agents/test_classic_models.py``). The physical parameters are read from the
environment (:meth:`ClassicDynamics.read_parameters`): whatever the ``NonStationary`` wrapper
set there (``masspole``, ``g``, ``power``, …) is what the planner plans with.

A rollout starts from the observation (the cart-pole's and the car's observation is the
state in float32; the pendulum's ``(cos θ, sin θ, θ̇)`` gives ``θ = atan2(sin, cos)``) and
returns the observations ``(K, H, dx)`` after each action.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .dynamics import check_rollout_inputs

__all__ = [
    "CLASSIC_ENV_IDS",
    "CLASSIC_MODELS",
    "CartPoleModel",
    "ClassicDynamics",
    "MountainCarContinuousModel",
    "PendulumModel",
    "classic_model_for",
]


class ClassicDynamics:
    """A classic-control environment's equations over ``K`` states (base class).

    Subclasses set :attr:`PARAMETERS` (the environment attributes the equations read),
    :attr:`state_dim` (the observation's), :attr:`action_dim` and implement :meth:`step`,
    :meth:`state_of_observation` and :meth:`observation_of_state`.

    Args:
        env: The environment (possibly wrapped) whose parameters are read.
    """

    #: Environment attributes the equations read.
    PARAMETERS: tuple[str, ...] = ()
    #: The ``NonStationary`` built-in parameters of the environment (``bam_rl.wrappers``'s
    #: ``CLASSIC_CONTROL``) the equations follow, directly or through a derived attribute.
    WORLD: tuple[str, ...] = ()
    state_dim = 0
    action_dim = 1

    def follows(self, parameter: str) -> bool:
        """Whether the equations follow the ``NonStationary`` parameter ``parameter``: one of
        :attr:`WORLD`, or ``attr:<name>`` of an attribute they read (:attr:`PARAMETERS`)."""
        if parameter.startswith("attr:"):
            return parameter[5:] in self.PARAMETERS or parameter[5:] in self.WORLD
        return parameter in self.WORLD

    def __init__(self, env: Any):
        self.parameters: dict[str, float] = {}
        self.read_parameters(env)

    def read_parameters(self, env: Any) -> None:
        """Copies the current physical parameters of ``env`` (its unwrapped attributes)."""
        base = getattr(env, "unwrapped", env)
        self.parameters = {name: getattr(base, name) for name in self.PARAMETERS}

    def step(self, state: np.ndarray, action: np.ndarray) -> np.ndarray:
        """The next internal states ``(K, ds)`` from ``state (K, ds)`` under ``action (K, du)``."""
        raise NotImplementedError

    def state_of_observation(self, observation: np.ndarray) -> np.ndarray:
        """The internal state an observation ``(dx,)`` shows."""
        raise NotImplementedError

    def observation_of_state(self, states: np.ndarray) -> np.ndarray:
        """Observations ``(..., dx)`` of internal states ``(..., ds)`` (float64)."""
        raise NotImplementedError

    def rollout_bytes(self, n_samples: int, horizon: int) -> int:
        """Bytes a rollout allocates: its observations and a few temporaries per step."""
        return n_samples * horizon * 8 * (self.state_dim + 1) + 64 * n_samples * 8

    def __call__(
        self, state: Any, actions: Any, rng: np.random.Generator | None = None
    ) -> np.ndarray:
        """Rolls the equations out from the observation ``state`` under ``actions (K, H,
        du)``; returns the observations ``(K, H, dx)`` (``rng`` is unused)."""
        state, actions = check_rollout_inputs(state, actions, self.state_dim, self.action_dim)
        return self.rollout_unchecked(state, actions, rng)

    def rollout_unchecked(
        self, state: np.ndarray, actions: np.ndarray, rng: np.random.Generator | None = None
    ) -> np.ndarray:
        """:meth:`__call__` without its input checks (the planner checks once per step)."""
        k, h, _ = actions.shape
        current = np.repeat(self.state_of_observation(state)[None], k, axis=0)
        out = np.empty((k, h, self.state_dim))
        for t in range(h):
            current = self.step(current, actions[:, t])
            out[:, t] = self.observation_of_state(current)
        return out

    def __repr__(self) -> str:
        values = ", ".join(f"{name}={value:g}" for name, value in self.parameters.items())
        return f"{type(self).__name__}({values})"


class CartPoleModel(ClassicDynamics):
    """``CartPole-v1``'s equations (Euler or semi-implicit Euler, as the environment's
    ``kinematics_integrator``); the action is a one-hot ``(K, 2)`` (push right when entry 1
    is set, as action 1)."""

    PARAMETERS = (
        "gravity",
        "masspole",
        "total_mass",
        "length",
        "polemass_length",
        "force_mag",
        "tau",
    )
    WORLD = ("gravity", "masscart", "masspole", "length", "force_mag", "tau")
    state_dim = 4
    action_dim = 2

    def read_parameters(self, env: Any) -> None:
        super().read_parameters(env)
        self.euler = getattr(env, "unwrapped", env).kinematics_integrator == "euler"

    def step(self, state: np.ndarray, action: np.ndarray) -> np.ndarray:
        p = self.parameters
        x, x_dot, theta, theta_dot = state.T
        force = np.where(action[:, 1] > action[:, 0], p["force_mag"], -p["force_mag"])
        costheta, sintheta = np.cos(theta), np.sin(theta)
        temp = (force + p["polemass_length"] * np.square(theta_dot) * sintheta) / p["total_mass"]
        thetaacc = (p["gravity"] * sintheta - costheta * temp) / (
            p["length"] * (4.0 / 3.0 - p["masspole"] * np.square(costheta) / p["total_mass"])
        )
        xacc = temp - p["polemass_length"] * thetaacc * costheta / p["total_mass"]
        tau = p["tau"]
        if self.euler:
            x = x + tau * x_dot
            x_dot = x_dot + tau * xacc
            theta = theta + tau * theta_dot
            theta_dot = theta_dot + tau * thetaacc
        else:
            x_dot = x_dot + tau * xacc
            x = x + tau * x_dot
            theta_dot = theta_dot + tau * thetaacc
            theta = theta + tau * theta_dot
        return np.stack([x, x_dot, theta, theta_dot], axis=-1)

    def state_of_observation(self, observation: np.ndarray) -> np.ndarray:
        return np.asarray(observation, dtype=np.float64)

    def observation_of_state(self, states: np.ndarray) -> np.ndarray:
        return states


class PendulumModel(ClassicDynamics):
    """``Pendulum-v1``'s equations; internal state ``(θ, θ̇)``, observation ``(cos θ, sin θ,
    θ̇)``; the torque is clipped to ``max_torque`` and the speed to ``max_speed``."""

    PARAMETERS = ("g", "m", "l", "dt", "max_torque", "max_speed")
    WORLD = ("g", "m", "l", "dt")
    state_dim = 3
    action_dim = 1

    def step(self, state: np.ndarray, action: np.ndarray) -> np.ndarray:
        p = self.parameters
        th, thdot = state[:, 0], state[:, 1]
        g, m, length, dt = p["g"], p["m"], p["l"], p["dt"]
        u = np.clip(action[:, 0], -p["max_torque"], p["max_torque"])
        newthdot = thdot + (3 * g / (2 * length) * np.sin(th) + 3.0 / (m * length**2) * u) * dt
        newthdot = np.clip(newthdot, -p["max_speed"], p["max_speed"])
        newth = th + newthdot * dt
        return np.stack([newth, newthdot], axis=-1)

    def state_of_observation(self, observation: np.ndarray) -> np.ndarray:
        return np.array([math.atan2(observation[1], observation[0]), observation[2]])

    def observation_of_state(self, states: np.ndarray) -> np.ndarray:
        th = states[..., 0]
        return np.stack([np.cos(th), np.sin(th), states[..., 1]], axis=-1)


class MountainCarContinuousModel(ClassicDynamics):
    """``MountainCarContinuous-v0``'s equations in its float32 arithmetic (the state is a
    float32 array; Python floats enter float32 operations as float32, NumPy's NEP 50), the
    walls at ``min_position``/``max_position`` included."""

    PARAMETERS = (
        "power",
        "min_action",
        "max_action",
        "max_speed",
        "min_position",
        "max_position",
    )
    WORLD = ("power",)
    state_dim = 2
    action_dim = 1

    def step(self, state: np.ndarray, action: np.ndarray) -> np.ndarray:
        p = self.parameters
        position = state[:, 0].astype(np.float32)
        velocity = state[:, 1].astype(np.float32)
        force = np.clip(action[:, 0].astype(np.float32), p["min_action"], p["max_action"])
        force = force.astype(np.float32)
        # the environment: velocity += force * power - 0.0025 * math.cos(3 * position)
        gravity = 0.0025 * np.cos((3 * position).astype(np.float64))
        velocity = velocity + (force * np.float32(p["power"]) - gravity.astype(np.float32))
        velocity = np.clip(velocity, -np.float32(p["max_speed"]), np.float32(p["max_speed"]))
        position = position + velocity
        position = np.clip(position, np.float32(p["min_position"]), np.float32(p["max_position"]))
        velocity = np.where(
            (position == np.float32(p["min_position"])) & (velocity < 0), np.float32(0), velocity
        )
        return np.stack([position, velocity], axis=-1).astype(np.float32)

    def state_of_observation(self, observation: np.ndarray) -> np.ndarray:
        return np.asarray(observation, dtype=np.float32)

    def observation_of_state(self, states: np.ndarray) -> np.ndarray:
        return states.astype(np.float64)


#: Gymnasium classic-control class name → its model (the class is
#: ``gymnasium.envs.classic_control.<name>``: :func:`classic_model_for` recognises an
#: environment with ``isinstance``, so a subclass is one and a user's class of the same name is
#: not).
CLASSIC_MODELS: dict[str, type[ClassicDynamics]] = {
    "CartPoleEnv": CartPoleModel,
    "PendulumEnv": PendulumModel,
    "Continuous_MountainCarEnv": MountainCarContinuousModel,
}


#: The Gymnasium ids whose environment has a model here (their classes: :data:`CLASSIC_MODELS`).
CLASSIC_ENV_IDS: tuple[str, ...] = ("CartPole-v1", "Pendulum-v1", "MountainCarContinuous-v0")


def classic_model_for(env: Any) -> ClassicDynamics | None:
    """The vectorised model of ``env`` when its unwrapped environment is an instance of one of
    Gymnasium's classes of :data:`CLASSIC_MODELS` (a subclass included), else ``None``."""
    from gymnasium.envs import classic_control

    base = getattr(env, "unwrapped", env)
    for name, model in CLASSIC_MODELS.items():
        if isinstance(base, getattr(classic_control, name)):
            return model(env)
    return None
