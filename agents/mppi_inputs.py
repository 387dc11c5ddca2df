"""The input checks of the MPPI agents (:mod:`bam_rl.agents.mppi`): a state and an action
against the planner's space, ``info["gravity"]`` and the trial labels of a wrapped
environment, the default and restored planning rewards, and the segment options.

Both agents of :mod:`bam_rl.agents.mppi` use them; every name stays importable from there.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import gymnasium as gym
import numpy as np

from bam_rl.checks import as_float_array, check_finite_scalar

from .planner import MPPI, CategoricalMPPI
from .rewards import NamedReward, get_reward, unsaveable_reward_message

#: The cart-pole observation: x, ẋ, cos θ, sin θ, θ̇ (the ground-truth planner's state).
CARTPOLE_STATE_DIM = 5
#: Largest magnitude of a state entry the agents accept: MuJoCo's ``mjMAXVAL``, beyond which
#: the simulator reports a diverged simulation (the cart-pole then raises), so no observation
#: of the environment exceeds it; a learned model's float32 features ``cos(Ω x + b)`` carry
#: no information there either.
MAX_STATE_MAGNITUDE = 1e10
_CARTPOLE_ANGLE = ((2, 3),)  # the (cos θ, sin θ) pair of the cart-pole observation


def _check_state(name: str, observation: Any, state_dim: int, angle_pairs: Any = ()) -> np.ndarray:
    """``observation`` as a finite float64 vector of ``state_dim`` entries within
    ``±MAX_STATE_MAGNITUDE``, whose ``(cos, sin)`` pairs lie in [-1, 1], or ``ValueError``."""
    state = as_float_array(name, observation)
    if state.shape != (state_dim,):
        raise ValueError(f"{name} must have shape ({state_dim},), got {state.shape}")
    if np.abs(state).max() > MAX_STATE_MAGNITUDE:
        raise ValueError(
            f"{name} must have entries within ±{MAX_STATE_MAGNITUDE:g} (MuJoCo's limit of a "
            f"stable simulation), got {state!r}"
        )
    for pair in angle_pairs:
        if np.any(np.abs(state[list(pair)]) > 1.0):
            raise ValueError(
                f"{name} entries {pair} are a (cos, sin) pair and must lie in [-1, 1] (the "
                f"observation space), got {state!r}"
            )
    return state


def _checked_action(action: Any, planner: MPPI | CategoricalMPPI) -> np.ndarray:
    """``action`` as a float64 vector within the planner's action bounds (the action space),
    or, for a :class:`CategoricalMPPI`, an int of the ``Discrete`` space as a one-hot float64
    vector (what the dynamics model sees); ``ValueError`` otherwise."""
    if isinstance(planner, CategoricalMPPI):
        return _checked_discrete_action(action, planner)
    action = as_float_array("action", action).reshape(-1)
    if action.shape != (planner.action_dim,):
        raise ValueError(f"action must have {planner.action_dim} entries, got {action.shape}")
    if np.any(action < planner.action_low) or np.any(action > planner.action_high):
        raise ValueError(
            f"action must lie in the action space [{planner.action_low.tolist()}, "
            f"{planner.action_high.tolist()}], got {action.tolist()}"
        )
    return action


def _checked_discrete_action(action: Any, planner: CategoricalMPPI) -> np.ndarray:
    """An int action of ``Discrete(n, start)`` (a Python or NumPy integer, or a one-entry
    integer array) as its one-hot float64 vector ``(n,)``, or ``ValueError``."""
    value = np.asarray(action)
    low, high = planner.start, planner.start + planner.n_actions - 1
    if (
        value.size != 1
        or value.dtype == np.bool_
        or not np.issubdtype(value.dtype, np.integer)
        or not low <= int(value.reshape(-1)[0]) <= high
    ):
        raise ValueError(
            f"action must be an int of the Discrete action space, in [{low}, {high}], got "
            f"{action!r}"
        )
    return planner.one_hot(np.asarray(int(value.reshape(-1)[0]) - planner.start))


def _checked_one_hot(action: Any, planner: CategoricalMPPI) -> np.ndarray:
    """A restored pending trial's action: a one-hot float64 vector of ``n`` entries."""
    value = as_float_array("action", action)
    if value.shape != (planner.n_actions,) or not (
        np.all((value == 0) | (value == 1)) and value.sum() == 1
    ):
        raise ValueError(f"a pending action must be a one-hot vector of {planner.n_actions}")
    return value


def _action_space(space: Any) -> tuple[int, int | None, gym.spaces.Box]:
    """``(action_dim, n_actions, box)`` of an agent's action space: a 1-D ``Box`` (``n_actions``
    ``None``, ``box`` the space itself) or a ``Discrete(n)`` with ``n >= 2``, whose actions the
    model and the reward see as one-hot vectors (``action_dim = n``, ``box`` ``[0, 1]^n``)."""
    if isinstance(space, gym.spaces.Discrete):
        n = int(space.n)
        if n < 2:
            raise ValueError(f"action_space must have at least 2 actions, got {space!r}")
        return n, n, gym.spaces.Box(0.0, 1.0, (n,), dtype=np.float64)
    if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
        raise ValueError(
            f"action_space must be a 1-D gymnasium Box or a Discrete(n) with n >= 2, got {space!r}"
        )
    return int(space.shape[0]), None, space


def _info_gravity(info: Any) -> float | None:
    """``info["gravity"]`` as a float (``None`` when absent), or ``ValueError`` naming it: a
    finite number > 0 (the cart-pole's gravity in m/s²)."""
    if info is not None and not isinstance(info, dict):
        raise ValueError(f"info must be a dict, got {type(info).__name__}")
    gravity = (info or {}).get("gravity")
    if gravity is None:
        return None
    if isinstance(gravity, (bool, np.bool_)):
        raise ValueError(f'info["gravity"] must be a finite number > 0, got {gravity!r}')
    try:
        value = check_finite_scalar('info["gravity"]', gravity)
    except (TypeError, ValueError):
        raise ValueError(f'info["gravity"] must be a finite number > 0, got {gravity!r}') from None
    if value <= 0:
        raise ValueError(f'info["gravity"] must be a finite number > 0, got {gravity!r}')
    return value


#: Keys of ``info["context"]`` (the ``NonStationary`` wrapper's world) read as a trial's gravity
#: label when ``info`` has no ``"gravity"``: MuJoCo's ``gravity``, Pendulum-v1's ``g``.
CONTEXT_GRAVITY_KEYS = ("gravity", "g")


def _trial_label(info: Any) -> float | None:
    """A trial's gravity label: ``info["gravity"]`` (checked, :func:`_info_gravity`), else the
    wrapper's ``info["context"]`` entry of :data:`CONTEXT_GRAVITY_KEYS` (or its only entry),
    when a finite number > 0; ``None`` otherwise (the label is then ``nan``)."""
    gravity = _info_gravity(info)
    if gravity is not None:
        return gravity
    context = (info or {}).get("context")
    if not isinstance(context, dict) or not context:
        return None
    keys = [key for key in CONTEXT_GRAVITY_KEYS if key in context]
    value = (
        context[keys[0]] if keys else next(iter(context.values())) if len(context) == 1 else None
    )
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        return None
    value = float(value)
    return value if 0 < value < math.inf else None


def _default_reward(reward: Any, state_dim: int) -> Any:
    """``reward``, or for ``None`` the cart-pole's ``"cartpole-swingup"`` on a 5-D observation
    (the agents' planning reward before rewards were named); elsewhere ``None`` is refused."""
    if reward is not None:
        return reward
    if state_dim == CARTPOLE_STATE_DIM:
        return "cartpole-swingup"
    raise ValueError(
        f"reward must be given for a {state_dim}-D observation (the default, "
        f"'cartpole-swingup', reads the cart-pole's 5-D one): a name of "
        f"bam_rl.agents.rewards.REWARDS or a callable reward(states (K, H, dx), "
        f"actions (K, H, du)) -> (K, H). On the command line, a registered name: "
        f'--agent-kwargs \'{{"reward": "NAME"}}\'; a reward of your own: register it '
        f"with bam_rl.agents.rewards.register_reward in a module MODULE.py and pass "
        f"`bam-rl run --import MODULE`"
    )


def _check_saveable(planner: MPPI | CategoricalMPPI) -> None:
    """``ValueError`` (before any file is written) when the planner's reward cannot be saved."""
    message = unsaveable_reward_message(planner.reward)
    if message is not None:
        raise ValueError(message)


def _check_restored_reward(planner: MPPI | CategoricalMPPI, state_dim: int) -> None:
    """A restored planner's reward must read the state: indices within it, a named reward of
    its dimension."""
    reward = planner.reward
    for name in ("cos_index", "sin_index", "index"):
        if getattr(reward, name, 0) >= state_dim:
            raise ValueError(f"the planner's reward {name} must index the state of {state_dim}")
    if isinstance(reward, NamedReward):
        obs_dim = get_reward(reward.name).obs_dim
        if obs_dim is not None and obs_dim != state_dim:
            raise ValueError(
                f"the planner's reward {reward.name!r} reads a {obs_dim}-D observation, not "
                f"the agent's {state_dim}-D state"
            )


def _observation_dim(space: Any, name: str) -> int:
    if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
        raise ValueError(f"{name} must be a 1-D gymnasium Box, got {space!r}")
    return int(space.shape[0])


def _check_refresh_steps(value: Any, memory: str) -> int | None:
    """``refresh_every_steps`` as a positive int (or ``None``), or ``ValueError``; only
    ``memory="bam_segments"`` refreshes its belief inside a trial (beyond the paper)."""
    if value is None:
        return None
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise ValueError(f"refresh_every_steps must be a positive int or None, got {value!r}")
    if memory != "bam_segments":
        raise ValueError(f"refresh_every_steps needs memory='bam_segments', got memory={memory!r}")
    return int(value)


def _check_readout_steps(value: Any, memory: str) -> tuple[int, ...] | None:
    """``readout_after_steps`` as an increasing tuple of positive ints (or ``None``), or
    ``ValueError``; only ``memory="bam_segments"`` reads out inside a trial."""
    if value is None:
        return None
    steps = value if isinstance(value, (tuple, list)) else (value,)
    if not steps or not all(
        isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 1 for k in steps
    ):
        raise ValueError(
            f"readout_after_steps must be a positive int (or an increasing tuple of them) "
            f"below the trial length, got {value!r}"
        )
    if any(b <= a for a, b in itertools.pairwise(steps)):
        raise ValueError(f"readout_after_steps must be increasing, got {value!r}")
    if memory != "bam_segments":
        raise ValueError(
            f"readout_after_steps needs memory='bam_segments' (the segment readout), got "
            f"memory={memory!r}"
        )
    return tuple(int(k) for k in steps)
