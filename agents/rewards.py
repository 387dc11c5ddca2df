"""Planning rewards: what the MPPI agents plan for, by name.

A planning reward is ``reward(states (K, H, dx), actions (K, H, du)) -> (K, H)``: the reward of
every step of every sampled trajectory (the planner sums it over the horizon). The registry
holds one reward per environment of the recurring-worlds suite, each written from the
environment's own reward (Gymnasium's source) and, where that reward is flat or sparse, with
the difference said in its entry. An agent given a name saves the name (never the function),
so a state file stays pickle-free; an agent given an unnamed callable plans with it but
refuses to save until the callable is registered with :func:`register_reward`.

Each entry says the observation dimension it reads (``obs_dim``, column dx) and the
``(cos, sin)`` index pairs of that observation (``angle_pairs``, projected onto the unit
circle in a learned model's rollouts unless the agent is told otherwise).

=========================================  ==================================  ===  ==============
name                                       environment                         dx   angle pairs
=========================================  ==================================  ===  ==============
``cartpole-swingup``                       ``bam_rl/GravityCartPole*-v0``      5    (2, 3)
``pendulum-swingup``                       ``Pendulum-v1``                     3    (0, 1)
``pendulum-swingup-lqr-terminal``          ``Pendulum-v1``                     3    (0, 1)
``inverted-pendulum``                      ``InvertedPendulum-v5``             4    none
``inverted-double-pendulum``               ``InvertedDoublePendulum-v5``       9    (3, 1), (4, 2)
``inverted-double-pendulum-lqr``           ``InvertedDoublePendulum-v5``       9    (3, 1), (4, 2)
``inverted-pendulum-lqr-terminal``         ``InvertedPendulum-v5``             4    none
``inverted-double-pendulum-lqr-terminal``  ``InvertedDoublePendulum-v5``       9    (3, 1), (4, 2)
``reacher``                                ``Reacher-v5``                      10   (0, 2), (1, 3)
``mountain-car``                           ``MountainCarContinuous-v0``        2    none
``mountain-car-shaped``                    ``MountainCarContinuous-v0``        2    none
``cartpole-balance``                       ``CartPole-v1`` (discrete actions)  4    none
``cartpole-balance-shaped``                ``CartPole-v1`` (discrete actions)  4    none
``half-cheetah``                           ``HalfCheetah-v5``                  17   none
=========================================  ==================================  ===  ==============

Terminal values solved from the model (beyond the paper; :mod:`bam_rl.agents.terminal`): an
entry may declare a :class:`~bam_rl.agents.terminal.TerminalValue` (an equilibrium and a
quadratic cost about it); the reward then subtracts the LQR cost-to-go ``sᵀ P s`` at each
trajectory's last step, ``P`` solved from the planner's model (the live simulator for the
ground truth, again when the world changes; see :meth:`NamedReward.bind_dynamics`), else from
the environment's nominal model. Entries: ``pendulum-swingup-lqr-terminal`` (Pendulum-v1),
``inverted-pendulum-lqr-terminal`` (InvertedPendulum-v5) and
``inverted-double-pendulum-lqr-terminal`` (InvertedDoublePendulum-v5).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .dynamics import _angle_pairs
from .planner import RESTORABLE_REWARDS, AngleCosineReward, StateReward
from .terminal import TerminalValue, check_cost_to_go

__all__ = [
    "CHECK_SHAPE",
    "IDP_TERMINAL",
    "IDP_TERMINAL_COST",
    "IP_TERMINAL",
    "PENDULUM_TERMINAL",
    "REWARDS",
    "NamedReward",
    "PlanningReward",
    "check_reward_output",
    "get_reward",
    "make_planning_reward",
    "register_reward",
    "unsaveable_reward_message",
]

RewardFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class PlanningReward:
    """One registry entry.

    Attributes:
        name: The registry name.
        fn: ``fn(states (K, H, dx), actions (K, H, du)) -> (K, H)``.
        obs_dim: The observation dimension it reads (``None``: any).
        angle_pairs: The ``(cos, sin)`` index pairs of that observation.
        description: What it computes, against the environment's own reward.
        terminal: The terminal value it adds at the horizon's end (``None``: none).
    """

    name: str
    fn: RewardFn
    obs_dim: int | None = None
    angle_pairs: tuple[tuple[int, int], ...] = ()
    description: str = ""
    terminal: TerminalValue | None = None


def _alive(healthy: np.ndarray) -> np.ndarray:
    """1 while every step of the trajectory so far is healthy, then 0 (an episode ends at
    the first unhealthy state, so a model's later recovery earns nothing): ``(K, H)``."""
    return np.cumprod(healthy, axis=-1, dtype=np.float64)


def _pendulum_swingup(states: np.ndarray, actions: np.ndarray) -> np.ndarray:
    theta = np.arctan2(states[..., 1], states[..., 0])  # in (-π, π]: Gymnasium's angle_normalize
    torque = np.clip(actions[..., 0], -2.0, 2.0)
    return -(theta**2 + 0.1 * states[..., 2] ** 2 + 0.001 * torque**2)


def _inverted_pendulum(states: np.ndarray, actions: np.ndarray) -> np.ndarray:
    x, theta, x_dot, theta_dot = (states[..., i] for i in range(4))
    # the cart's rail ends at |x| = 1: a pole balanced into the rail end falls (measured with
    # the simulator as the planner: without the x terms ground-truth MPPI ran into it after
    # 230-370 steps, with them it held 1000 on both seeds tried)
    shaping = theta**2 + x**2 + 0.1 * x_dot**2 + 0.01 * theta_dot**2
    return _alive(np.abs(theta) <= 0.2) - shaping


def _inverted_double_pendulum(states: np.ndarray, actions: np.ndarray) -> np.ndarray:
    x, sin1, sin2, cos1, cos2 = (states[..., i] for i in range(5))
    # angles from the (cos, sin) pairs, so a model's off-circle prediction keeps a true angle
    theta1 = np.arctan2(sin1, cos1)
    theta12 = theta1 + np.arctan2(sin2, cos2)
    x_tip = x + 0.6 * np.sin(theta1) + 0.6 * np.sin(theta12)
    y_tip = 0.6 * np.cos(theta1) + 0.6 * np.cos(theta12)
    v1, v2 = states[..., 6], states[..., 7]
    alive = _alive(y_tip > 1.0)
    return 10.0 * alive - 0.01 * x_tip**2 - (y_tip - 2.0) ** 2 - 1e-3 * v1**2 - 5e-3 * v2**2


#: The cost-to-go ``sᵀ P s`` of the discrete LQR problem of InvertedDoublePendulum-v5 about
#: upright, in the simulator's coordinates ``s = (x, θ1, θ2, ẋ, θ̇1, θ̇2)`` (θ2 relative to θ1):
#: Gymnasium's model linearised over one 0.05 s step (5 physics steps of 0.01 s, gravity
#: 9.81) by central differences, state weights diag(1, 10, 10, 0.1, 0.1, 0.1), control weight
#: 1 (``tests/agents/test_planning_rewards.py`` solves it again from the model). The weights are
#: a choice, not the environment's reward: the term is a heuristic terminal value.
IDP_TERMINAL_COST = np.array(
    [
        [29.60927, 79.93371, 70.02817, 20.1775, 26.78171, 13.7211],
        [79.93371, 492.18357, 524.56691, 89.50945, 158.55226, 94.03571],
        [70.02817, 524.56691, 704.94931, 87.84192, 183.09828, 117.48915],
        [20.1775, 89.50945, 87.84192, 21.26935, 30.91199, 16.73472],
        [26.78171, 158.55226, 183.09828, 30.91199, 55.07341, 32.88194],
        [13.7211, 94.03571, 117.48915, 16.73472, 32.88194, 20.65558],
    ]
)


def _inverted_double_pendulum_lqr(states: np.ndarray, actions: np.ndarray) -> np.ndarray:
    rewards = _inverted_double_pendulum(states, actions)
    last = states[..., -1, :]
    s = np.stack(
        [
            last[..., 0],
            np.arctan2(last[..., 1], last[..., 3]),
            np.arctan2(last[..., 2], last[..., 4]),
            last[..., 5],
            last[..., 6],
            last[..., 7],
        ],
        axis=-1,
    )
    # a terminal value: a plan of a few steps cannot see that bringing the cart back to the
    # centre first needs it to move further out (with the plain reward ground-truth MPPI
    # dropped the poles within 7-152 steps at 85 of 86 settings, K up to 1024, H 5-30, the
    # cart at the rail end in the runs inspected; with this term, K = 64, H = 5 held 1000)
    rewards[..., -1] -= np.einsum("...i,ij,...j->...", s, IDP_TERMINAL_COST, s)
    return rewards


def _idp_physics_state(observations: np.ndarray) -> np.ndarray:
    """InvertedDoublePendulum-v5's observations ``(..., 9)`` → ``(qpos, qvel)`` ``(..., 6)``:
    ``x``, θ1 and θ2 (relative) from their sines and cosines, the velocities as observed (the
    environment clips them to ±10)."""
    o = observations
    theta1, theta2 = np.arctan2(o[..., 1], o[..., 3]), np.arctan2(o[..., 2], o[..., 4])
    return np.stack([o[..., 0], theta1, theta2, o[..., 5], o[..., 6], o[..., 7]], axis=-1)


def _idp_observation(states: np.ndarray) -> np.ndarray:
    """``(qpos, qvel)`` ``(K, 6)`` → InvertedDoublePendulum-v5 observations ``(K, 9)`` (the
    constraint force 0: the cart away from the rail's ends)."""
    out = np.zeros((*states.shape[:-1], 9))
    out[..., 0] = states[..., 0]
    out[..., 1:3] = np.sin(states[..., 1:3])
    out[..., 3:5] = np.cos(states[..., 1:3])
    out[..., 5:8] = states[..., 3:6]
    return out


def _identity(states: np.ndarray) -> np.ndarray:
    return np.array(states, dtype=np.float64)


#: InvertedPendulum-v5's terminal value: about upright at rest at the rail's centre, the
#: state cost the stage reward's own shaping (x² + θ² + 0.1 ẋ² + 0.01 θ̇², in the observation's
#: order x, θ, ẋ, θ̇ = qpos, qvel), the force cost R = 1 (a choice: the reward has none).
IP_TERMINAL = TerminalValue(
    equilibrium=np.zeros(4),
    action=np.zeros(1),
    Q=np.diag([1.0, 1.0, 0.1, 0.01]),
    R=np.eye(1),
    to_state=_identity,
    from_state=_identity,
    env_id="InvertedPendulum-v5",
)
#: InvertedDoublePendulum-v5's terminal value: about upright at rest at the rail's centre,
#: with the weights of :data:`IDP_TERMINAL_COST` (diag(1, 10, 10, 0.1, 0.1, 0.1), R = 1), but
#: ``P`` solved from the planner's model instead of fixed.
IDP_TERMINAL = TerminalValue(
    equilibrium=np.zeros(6),
    action=np.zeros(1),
    Q=np.diag([1.0, 10.0, 10.0, 0.1, 0.1, 0.1]),
    R=np.eye(1),
    to_state=_idp_physics_state,
    from_state=_idp_observation,
    env_id="InvertedDoublePendulum-v5",
    angles=(1, 2),
)


def _pendulum_physics_state(observations: np.ndarray) -> np.ndarray:
    """Pendulum-v1's observations ``(..., 3)`` → ``(θ, θ̇)``, θ in (-π, π]."""
    theta = np.arctan2(observations[..., 1], observations[..., 0])
    return np.stack([theta, observations[..., 2]], axis=-1)


def _pendulum_observation(states: np.ndarray) -> np.ndarray:
    return np.stack([np.cos(states[..., 0]), np.sin(states[..., 0]), states[..., 1]], axis=-1)


#: Pendulum-v1's terminal value: about upright at rest, with the environment's own cost
#: weights (θ² + 0.1 θ̇² + 0.001 u²): near upright it is the cost-to-go of that reward.
PENDULUM_TERMINAL = TerminalValue(
    equilibrium=np.zeros(2),
    action=np.zeros(1),
    Q=np.diag([1.0, 0.1]),
    R=np.array([[0.001]]),
    to_state=_pendulum_physics_state,
    from_state=_pendulum_observation,
    env_id="Pendulum-v1",
    angles=(0,),
)


def _reacher(states: np.ndarray, actions: np.ndarray) -> np.ndarray:
    distance = np.hypot(states[..., 8], states[..., 9])
    return -distance - np.square(actions).sum(axis=-1)


def _mountain_car(states: np.ndarray, actions: np.ndarray) -> np.ndarray:
    reached = ((states[..., 0] >= 0.45) & (states[..., 1] >= 0.0)).astype(np.float64)
    first = np.diff(np.maximum.accumulate(reached, axis=-1), axis=-1, prepend=0.0)
    return 100.0 * first - 0.1 * actions[..., 0] ** 2


#: MountainCarContinuous-v0's dynamics: ``v' = v + u · power - 0.0025 cos(3x)``, so
#: ``E = ½ v² + (0.0025 / 3) sin(3x)`` is its mechanical energy (per unit mass), which the
#: engine changes by ``u · power · v`` a step; the goal is ``x >= 0.45``.
_MOUNTAIN_CAR_SLOPE = 0.0025 / 3
_MOUNTAIN_CAR_GOAL = 0.45
_MOUNTAIN_CAR_E_LOW = -_MOUNTAIN_CAR_SLOPE  # at rest in the valley (sin 3x = -1)
_MOUNTAIN_CAR_E_GOAL = _MOUNTAIN_CAR_SLOPE * np.sin(3 * _MOUNTAIN_CAR_GOAL)  # at rest at the goal


def _mountain_car_shaped(states: np.ndarray, actions: np.ndarray) -> np.ndarray:
    x, v = states[..., 0], states[..., 1]
    energy = 0.5 * v**2 + _MOUNTAIN_CAR_SLOPE * np.sin(3 * x)
    share = (energy - _MOUNTAIN_CAR_E_LOW) / (_MOUNTAIN_CAR_E_GOAL - _MOUNTAIN_CAR_E_LOW)
    reached = np.maximum.accumulate(
        ((x >= _MOUNTAIN_CAR_GOAL) & (v >= 0.0)).astype(np.float64), axis=-1
    )
    # after the goal the episode has ended: every later step of the plan earns the most
    return _mountain_car(states, actions) + np.where(reached > 0, 1.0, np.clip(share, 0.0, 1.0))


def _cartpole_balance(states: np.ndarray, actions: np.ndarray) -> np.ndarray:
    healthy = (np.abs(states[..., 0]) <= 2.4) & (np.abs(states[..., 2]) <= 12 * 2 * np.pi / 360)
    return _alive(healthy)


#: CartPole-v1's termination bounds: ``|x| <= 2.4`` and ``|θ| <= 12°``.
_CARTPOLE_X_LIMIT = 2.4
_CARTPOLE_THETA_LIMIT = 12 * 2 * np.pi / 360


def _cartpole_balance_shaped(states: np.ndarray, actions: np.ndarray) -> np.ndarray:
    x_share = (states[..., 0] / _CARTPOLE_X_LIMIT) ** 2
    theta_share = (states[..., 2] / _CARTPOLE_THETA_LIMIT) ** 2
    healthy = (x_share <= 1.0) & (theta_share <= 1.0)
    return _alive(healthy) * (2.0 - 0.5 * x_share - 0.5 * theta_share)


def _half_cheetah(states: np.ndarray, actions: np.ndarray) -> np.ndarray:
    return states[..., 8] - 0.1 * np.square(actions).sum(axis=-1)


REWARDS: dict[str, PlanningReward] = {}
"""The registry: name → :class:`PlanningReward` (the names in the table above, and any
:func:`register_reward` adds)."""


def register_reward(
    name: str,
    fn: RewardFn,
    *,
    obs_dim: int | None = None,
    angle_pairs: Any = (),
    description: str = "",
    replace: bool = False,
    terminal: TerminalValue | None = None,
) -> PlanningReward:
    """Adds a planning reward to the registry, so agents planning with it can be saved.

    An agent saved with a registered reward stores only ``name``; the process that loads it
    must register the same name first (as it imports the function).

    Args:
        name: A non-empty string, not yet registered (unless ``replace``).
        fn: ``fn(states (K, H, dx), actions (K, H, du)) -> (K, H)``.
        obs_dim: The observation dimension it reads (``None``: any); agents refuse another.
        angle_pairs: ``(cos, sin)`` index pairs of that observation (the agents' default
            ``angle_pairs`` with this reward).
        description: What it computes.
        replace: Whether an existing entry of that name may be replaced.
        terminal: A :class:`~bam_rl.agents.terminal.TerminalValue` whose LQR cost-to-go is
            subtracted at every trajectory's last step (beyond the paper; ``None``: none).

    Returns:
        The registered entry.

    Raises:
        ValueError: Naming ``name``, ``fn``, ``obs_dim`` or ``angle_pairs``.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    if name in REWARDS and not replace:
        raise ValueError(f"name {name!r} is registered already (pass replace=True to replace)")
    if not callable(fn):
        raise ValueError(f"fn must be callable, got {fn!r}")
    if obs_dim is not None and (
        not isinstance(obs_dim, (int, np.integer)) or isinstance(obs_dim, bool) or obs_dim < 1
    ):
        raise ValueError(f"obs_dim must be a positive int or None, got {obs_dim!r}")
    # the check of the agents' own angle_pairs (RFFDynamicsModel): distinct ints >= 0, never
    # rounded (int(0.9) would silently pair entries 0 and 1)
    try:
        pairs = _angle_pairs(angle_pairs, sys.maxsize)
    except ValueError:
        raise ValueError(
            "angle_pairs must be a sequence of (cos index, sin index) pairs of distinct ints "
            f">= 0{'' if obs_dim is None else f' below obs_dim = {obs_dim}'}, got {angle_pairs!r}"
        ) from None
    if obs_dim is not None and any(not 0 <= i < obs_dim for pair in pairs for i in pair):
        raise ValueError(f"angle_pairs must index an observation of {obs_dim}, got {pairs}")
    if terminal is not None and not isinstance(terminal, TerminalValue):
        raise ValueError(f"terminal must be a TerminalValue or None, got {terminal!r}")
    entry = PlanningReward(
        name, fn, None if obs_dim is None else int(obs_dim), pairs, description, terminal
    )
    REWARDS[name] = entry
    return entry


def get_reward(name: Any) -> PlanningReward:
    """The registry entry ``name``, or ``ValueError`` listing the registered names."""
    if not isinstance(name, str) or name not in REWARDS:
        raise ValueError(
            f"reward must be one of {sorted(REWARDS)} or a callable, got {name!r} (a reward "
            "of your own: bam_rl.agents.rewards.register_reward(name, fn, obs_dim=...); for "
            "`bam-rl run`, in a module named by --import MODULE)"
        )
    return REWARDS[name]


class NamedReward:
    """A registered planning reward held by name: what a planner saves (the name only).

    A reward whose entry declares a terminal value also holds the cost-to-go matrix it uses
    (``cost_to_go``, set by :meth:`bind_dynamics` or :meth:`set_cost_to_go`; until then the
    environment's nominal model's, :meth:`~bam_rl.agents.terminal.TerminalValue.nominal_cost`).

    Args:
        name: A name in :data:`REWARDS`.
    """

    def __init__(self, name: str):
        self.name = get_reward(name).name

    def _check_restored(self) -> None:
        """A restored reward must name a registered one (register it before loading), and a
        stored cost-to-go must fit its terminal value."""
        if not isinstance(self.name, str) or self.name not in REWARDS:
            raise ValueError(
                f"the saved planning reward {self.name!r} is not registered in this process: "
                f"call bam_rl.agents.rewards.register_reward({self.name!r}, fn) before loading "
                f"(registered: {sorted(REWARDS)})"
            )
        if "cost_to_go" in vars(self):
            self.set_cost_to_go(self.cost_to_go)

    @property
    def terminal(self) -> Any:
        """The :class:`~bam_rl.agents.terminal.TerminalValue` this reward's entry declares, or
        ``None``."""
        return REWARDS[self.name].terminal

    def set_cost_to_go(self, cost_to_go: Any) -> None:
        """Plans from now on with the terminal value's ``P = cost_to_go`` (a learned agent's,
        :meth:`~bam_rl.agents.terminal.TerminalValue.solve` of its posterior-mean model).

        Raises:
            ValueError: If this reward has no terminal value, or naming ``cost_to_go`` unless
                it is a symmetric positive semi-definite matrix of the terminal value's size.
        """
        terminal = REWARDS[self.name].terminal
        if terminal is None:
            raise ValueError(f"the planning reward {self.name!r} declares no terminal value")
        self.cost_to_go = check_cost_to_go(cost_to_go, terminal.size)

    def solve_cost_to_go(self, observation_step: Any) -> bool:
        """Solves the terminal value's ``P`` from a model of observations and plans with it:
        what a learned agent calls after each readout, with its posterior mean
        (``RFFDynamicsModel.predict``: ``f(observations (K, dx), actions (K, du)) -> (K, dx)``).

        Returns:
            Whether ``P`` was replaced; ``False`` (the current ``P`` kept) when the model's
            linearisation has no finite cost-to-go (a model that has not learned the
            dynamics about the equilibrium yet).

        Raises:
            ValueError: If this reward has no terminal value.
        """
        terminal = REWARDS[self.name].terminal
        if terminal is None:
            raise ValueError(f"the planning reward {self.name!r} declares no terminal value")
        try:
            cost_to_go = terminal.solve(observation_step)
        except ValueError:
            return False
        self.cost_to_go = cost_to_go
        return True

    def bind_dynamics(self, dynamics: Any) -> None:
        """Called by the planner before it scores a rollout of ``dynamics``: a reward with a
        terminal value takes ``P`` from ``dynamics.terminal_cost(terminal)`` when the model
        offers it (the ground truth's live simulator; it caches ``P`` per world), or solves it
        from a classic-control model's equations (cached per parameter values), and keeps its
        own otherwise. Nothing for a reward without a terminal value."""
        terminal = REWARDS[self.name].terminal
        if terminal is None:
            return
        solve = getattr(dynamics, "terminal_cost", None)
        if callable(solve):
            cost_to_go = solve(terminal)
            if cost_to_go is not None:
                self.cost_to_go = cost_to_go
        elif isinstance(getattr(dynamics, "parameters", None), dict) and callable(
            getattr(dynamics, "step", None)
        ):  # a classic-control model (its internal state is the physics state)
            self.cost_to_go = terminal.solve_classic(dynamics)

    def __call__(self, states: np.ndarray, actions: np.ndarray) -> np.ndarray:
        entry = REWARDS[self.name]
        if entry.terminal is None:
            return entry.fn(states, actions)
        rewards = np.array(entry.fn(states, actions), dtype=np.float64)
        cost_to_go = vars(self).get("cost_to_go")
        if cost_to_go is None:
            cost_to_go = entry.terminal.nominal_cost()
        rewards[..., -1] -= entry.terminal.cost(states[..., -1, :], cost_to_go)
        return rewards

    def __repr__(self) -> str:
        return f"NamedReward({self.name!r})"


#: The ``(K, H)`` of the dummy rollout a reward is checked on at construction (distinct sizes,
#: so a transposed result is found too).
CHECK_SHAPE = (2, 3)


def make_planning_reward(
    reward: Any, state_space: Any, action_space: Any
) -> tuple[Any, tuple[tuple[int, int], ...]]:
    """The planner's reward for ``reward`` (a registry name or a callable) on these 1-D
    ``Box`` spaces, and the ``angle_pairs`` it declares (``()`` for a callable).

    A name must be registered and read an observation of the space's dimension; every reward
    is called once on dummy states and actions of :data:`CHECK_SHAPE` ``(K, H)`` (the spaces'
    points nearest 0) and must return ``(K, H)`` real numbers.

    Raises:
        ValueError: Naming ``reward``.
    """
    state_dim, action_dim = int(state_space.shape[0]), int(action_space.shape[0])
    if isinstance(reward, str):
        entry = get_reward(reward)
        if entry.obs_dim is not None and entry.obs_dim != state_dim:
            raise ValueError(
                f"reward {reward!r} reads a {entry.obs_dim}-D observation ({entry.description}); "
                f"the observation space has {state_dim} entries"
            )
        planning: Any = NamedReward(reward)
        pairs = entry.angle_pairs
    elif callable(reward):
        planning, pairs = reward, ()
    else:
        raise ValueError(
            f"reward must be one of {sorted(REWARDS)} or a callable "
            f"reward(states (K, H, dx), actions (K, H, du)) -> (K, H), got {reward!r}"
        )
    states = np.broadcast_to(
        np.clip(0.0, state_space.low, state_space.high), (*CHECK_SHAPE, state_dim)
    ).astype(np.float64)
    actions = np.broadcast_to(
        np.clip(0.0, action_space.low, action_space.high), (*CHECK_SHAPE, action_dim)
    ).astype(np.float64)
    check_reward_output(planning, states, actions)
    return planning, pairs


def unsaveable_reward_message(reward: Any) -> str | None:
    """Why an agent planning with ``reward`` cannot be saved (``None`` when it can)."""
    if isinstance(reward, (NamedReward, AngleCosineReward, StateReward)):
        return None
    return (
        f"the planning reward {reward!r} is an unnamed callable, and state files never pickle "
        "functions: register it, bam_rl.agents.rewards.register_reward('my-reward', fn, "
        "obs_dim=...), and build the agent with reward='my-reward' (the file then stores the "
        "name; register it again before loading)"
    )


RESTORABLE_REWARDS.append(NamedReward)


def check_reward_output(reward: Any, states: np.ndarray, actions: np.ndarray) -> None:
    """One dummy call of ``reward`` on ``states (K, H, dx)`` and ``actions (K, H, du)``;
    ``ValueError`` naming ``reward`` unless it returns a ``(K, H)`` array of real numbers."""
    k, h = states.shape[:2]
    try:
        value = np.asarray(reward(states, actions))
    except Exception as error:  # a user's callable: any failure is a refused reward
        raise ValueError(
            f"reward must accept states of shape {states.shape} and actions of shape "
            f"{actions.shape}; calling it raised {type(error).__name__}: {error}"
        ) from error
    if value.shape != (k, h) or not (
        np.issubdtype(value.dtype, np.floating)
        or np.issubdtype(value.dtype, np.integer)
        or value.dtype == np.bool_
    ):
        raise ValueError(
            f"reward must return real numbers of shape (K, H) = ({k}, {h}) for states of shape "
            f"{states.shape}, got {value.dtype} of shape {value.shape}"
        )


register_reward(
    "cartpole-swingup",
    AngleCosineReward(2, 3),
    obs_dim=5,
    angle_pairs=((2, 3),),
    description=(
        "bam-rl's cart-pole swing-up (obs x, ẋ, cos θ, sin θ, θ̇): cos θ = c / √(c² + s²), the "
        "environment's reward, kept in [-1, 1] on a model's off-circle prediction; the MPPI "
        "agents' default on a 5-D observation"
    ),
)
register_reward(
    "pendulum-swingup",
    _pendulum_swingup,
    obs_dim=3,
    angle_pairs=((0, 1),),
    description=(
        "Pendulum-v1 (obs cos θ, sin θ, θ̇; torque in [-2, 2]): -(θ² + 0.1 θ̇² + 0.001 u²) with "
        "θ = atan2(sin, cos) in (-π, π], the environment's reward (its angle_normalize) exactly"
    ),
)
register_reward(
    "inverted-pendulum",
    _inverted_pendulum,
    obs_dim=4,
    description=(
        "InvertedPendulum-v5 (obs x, θ, ẋ, θ̇): the environment pays 1 a step and ends the "
        "episode once |θ| > 0.2; planned: 1 while every step so far has |θ| <= 0.2 (then 0), "
        "minus θ² + x² + 0.1 ẋ² + 0.01 θ̇² (a slope toward upright and the rail's centre, "
        "which the flat reward lacks: the rail ends at |x| = 1)"
    ),
)
#: InvertedDoublePendulum-v5's (cos, sin) pairs of θ1 and θ2, for both of its rewards.
_IDP_ANGLE_PAIRS = ((3, 1), (4, 2))
register_reward(
    "inverted-double-pendulum",
    _inverted_double_pendulum,
    obs_dim=9,
    angle_pairs=_IDP_ANGLE_PAIRS,
    description=(
        "InvertedDoublePendulum-v5 (obs x, sin θ1, sin θ2, cos θ1, cos θ2, ẋ, θ̇1, θ̇2, "
        "constraint force): 10 while the tip has stayed above y = 1 (the environment ends "
        "there) - 0.01 x_tip² - (y_tip - 2)² - 1e-3 θ̇1² - 5e-3 θ̇2², the tip from the two 0.6 m "
        "poles of the model (θ2 relative to θ1); the environment's reward term by term"
    ),
)
register_reward(
    "inverted-double-pendulum-lqr",
    _inverted_double_pendulum_lqr,
    obs_dim=9,
    angle_pairs=_IDP_ANGLE_PAIRS,
    description=(
        'InvertedDoublePendulum-v5: the reward of "inverted-double-pendulum" on every step, '
        "minus at the plan's last step the LQR cost-to-go sᵀ P s about upright "
        "(IDP_TERMINAL_COST, s = x, θ1, θ2, ẋ, θ̇1, θ̇2 from the observation): a terminal value "
        "for short horizons, which cannot see the cart's drift into the rail end (beyond the "
        "environment's reward; the recurring-worlds suite plans with the plain one)"
    ),
)
register_reward(
    "inverted-pendulum-lqr-terminal",
    _inverted_pendulum,
    obs_dim=4,
    terminal=IP_TERMINAL,
    description=(
        'InvertedPendulum-v5: the reward of "inverted-pendulum" on every step, minus at the '
        "plan's last step the LQR cost-to-go sᵀ P s about upright at the rail's centre "
        "(IP_TERMINAL: Q = diag(1, 1, 0.1, 0.01), R = 1, s = x, θ, ẋ, θ̇), P solved from the "
        "planner's model (the ground truth's live simulator, again when the world changes; "
        "else the nominal model); beyond the paper"
    ),
)
register_reward(
    "inverted-double-pendulum-lqr-terminal",
    _inverted_double_pendulum,
    obs_dim=9,
    angle_pairs=_IDP_ANGLE_PAIRS,
    terminal=IDP_TERMINAL,
    description=(
        'InvertedDoublePendulum-v5: the reward of "inverted-double-pendulum" on every step, '
        "minus at the plan's last step the LQR cost-to-go sᵀ P s about upright (IDP_TERMINAL: "
        "the weights of IDP_TERMINAL_COST, s = x, θ1, θ2, ẋ, θ̇1, θ̇2 from the observation), P "
        "solved from the planner's model (the ground truth's live simulator, again when "
        "gravity or a mass changes; else the nominal model) instead of fixed; beyond the paper"
    ),
)
register_reward(
    "pendulum-swingup-lqr-terminal",
    _pendulum_swingup,
    obs_dim=3,
    angle_pairs=((0, 1),),
    terminal=PENDULUM_TERMINAL,
    description=(
        'Pendulum-v1: the reward of "pendulum-swingup" on every step, minus at the plan\'s '
        "last step the LQR cost-to-go sᵀ P s about upright with the environment's own weights "
        "(PENDULUM_TERMINAL: Q = diag(1, 0.1), R = 0.001, s = θ, θ̇), P solved from the "
        "planner's model (the ground truth's equations at the current g, m, l); the "
        "linearisation holds near upright only, far from the swing-up's start; beyond the paper"
    ),
)
register_reward(
    "reacher",
    _reacher,
    obs_dim=10,
    angle_pairs=((0, 2), (1, 3)),
    description=(
        "Reacher-v5 (obs cos q, sin q, target, q̇, fingertip - target): -|fingertip - target| "
        "- |u|², the environment's reward with its default weights (both 1 in Gymnasium "
        "1.x's source; its docstring says 0.1 for the control weight)"
    ),
)
register_reward(
    "mountain-car",
    _mountain_car,
    obs_dim=2,
    description=(
        "MountainCarContinuous-v0 (obs position, velocity): 100 at the first step with "
        "position >= 0.45 and velocity >= 0 (the environment ends there) - 0.1 u², the "
        "environment's reward; sparse, so a short horizon far from the goal plans for the "
        "control cost alone"
    ),
)
register_reward(
    "mountain-car-shaped",
    _mountain_car_shaped,
    obs_dim=2,
    description=(
        "MountainCarContinuous-v0 (obs position x, velocity v): the environment's reward "
        "(100 at the first step with x >= 0.45 and v >= 0, - 0.1 u²) plus a progress term in "
        "[0, 1] a step: the car's mechanical energy ½ v² + (0.0025 / 3) sin 3x (the "
        "environment's gravity term 0.0025 cos 3x integrated) as a share of the way from at "
        "rest in the valley to at rest at the goal, clipped, and 1 on every step from the "
        "goal on; the engine changes that energy by u · power · v, so a short horizon sees "
        "the swing build up (with the sparse reward alone it plans for the control cost)"
    ),
)
register_reward(
    "cartpole-balance",
    _cartpole_balance,
    obs_dim=4,
    description=(
        "CartPole-v1 (obs x, ẋ, θ, θ̇; discrete actions, so the reward reads states only): 1 "
        "while every step so far has |x| <= 2.4 and |θ| <= 12°, then 0, the environment's "
        "reward and end"
    ),
)
register_reward(
    "cartpole-balance-shaped",
    _cartpole_balance_shaped,
    obs_dim=4,
    description=(
        "CartPole-v1 (obs x, ẋ, θ, θ̇; discrete actions): the environment's 1 while every step "
        "so far has |x| <= 2.4 and |θ| <= 12° (then 0), plus a margin from those bounds, "
        "1 - ½ (x / 2.4)² - ½ (θ / 12°)² in [0, 1]; so surviving still outweighs everything, "
        "but sequences that all survive the horizon are no longer tied (with the flat reward "
        "their weights are equal and the plan drifts to a bound beyond the horizon)"
    ),
)
register_reward(
    "half-cheetah",
    _half_cheetah,
    obs_dim=17,
    description=(
        "HalfCheetah-v5 (obs qpos[1:], qvel; x excluded): forward velocity qvel[0] (obs 8) - "
        "0.1 |u|²; the environment pays the x displacement over a frame divided by dt, which "
        "the velocity at the step's end approximates"
    ),
)
