"""A bridge to NS-Gym (ns-gym 1.0.12): its environments for our agents, our agents for its
harnesses.

* :func:`from_nsgym` turns an NS-Gym environment (an ``ns_gym.base.NSWrapper``, whose
  observation is a nested ``Dict`` ``{"state", "env_change", "delta_change",
  "relative_time"}``) into a Gymnasium environment whose observation is the base
  environment's own (a ``Box`` for the classic-control and MuJoCo ones) and whose ``info``
  carries ``context`` (the parameters' current values, read from the environment) and
  ``context_changed``: True only at the step whose transition ran in another world than the
  transition before it (in this episode or an earlier one), never at a reset. NS-Gym restores
  the initial values at ``reset`` and applies its updates inside ``step`` before the physics,
  so a problem that changes a value "at t = 0" of every episode runs every transition in the
  same world: a restored value no transition uses is not a change (flagging it would restart
  a learner twice an episode). NS-Gym's own flag (``env_change``) means "the update function
  fired", also when the value stayed the same (``NoUpdate``, a ``StepWiseUpdate`` to the
  current value, a clipped random walk).
* :func:`as_nsgym_agent` turns any bam-rl agent into an NS-Gym agent: ``act(obs,
  planning_env)`` and the competition's ``get_action(obs, planning_env, reward=None,
  done=None)``. NS-Gym has no ``observe`` and never says that an episode began; the adapter
  calls the agent's ``observe`` with the previous transition when a reward comes with the
  next observation, and ``reset`` at each episode start (the first call, a call after
  ``done``, or NS-Gym's ``relative_time`` back at 0).

``ns_gym`` is imported only inside the functions that need it: ``import bam_rl`` never does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, SupportsFloat

import gymnasium
import numpy as np
from gymnasium import spaces

__all__ = [
    "NOTIFY",
    "NSGymAgent",
    "NSGymBridge",
    "as_nsgym_agent",
    "from_nsgym",
    "read_context",
]

#: Notification levels of :class:`NSGymBridge`: ``"nsgym"`` follows the NS-Gym environment's
#: own level (detailed → ``"value"``, basic → ``"flag"``, none → ``"none"``); the others are
#: :class:`bam_rl.wrappers.NonStationary`'s.
NOTIFY = ("nsgym", "value", "flag", "none")
#: The keys of an NS-Gym observation besides ``"state"``.
_NOTES = ("env_change", "delta_change", "relative_time")


def _ns_wrapper(env: Any) -> Any:
    """The ``ns_gym.base.NSWrapper`` in ``env``'s wrapper chain (``env`` itself first)."""
    from ns_gym.base import NSWrapper

    layer = env
    while True:
        if isinstance(layer, NSWrapper):
            return layer
        if not isinstance(layer, gymnasium.Wrapper):
            raise ValueError(
                "env must be an NS-Gym environment (an ns_gym.base.NSWrapper, possibly inside "
                f"other Gymnasium wrappers), got {type(env).__name__}"
            )
        layer = layer.env


def _number(name: str, raw: Any) -> float | tuple[float, ...]:
    """A parameter's value as numbers: a float, MuJoCo's gravity vector as its magnitude (as
    :class:`~bam_rl.wrappers.NonStationary` reports it), other arrays as a tuple."""
    try:
        array = np.asarray(raw, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"env's parameter {name!r} is not numeric ({type(raw).__name__}); the bridge "
            "reads numeric parameters only"
        ) from None
    if array.ndim == 0 or array.size == 1:
        return float(array.reshape(-1)[0])
    if name == "gravity" and array.shape == (3,):
        return float(np.linalg.norm(array))
    return tuple(float(x) for x in array.reshape(-1))


def read_context(env: Any) -> dict[str, float | tuple[float, ...]]:
    """The current values of an NS-Gym environment's changing parameters, read from the
    environment itself (its MuJoCo model or its attributes), never from NS-Gym's flags.

    Args:
        env: An NS-Gym environment (an ``ns_gym.base.NSWrapper``, possibly wrapped).

    Returns:
        ``{parameter: value}`` for every key of its ``tunable_params``.

    Raises:
        ValueError: If ``env`` is not an NS-Gym environment or a parameter is not numeric.
    """
    ns = _ns_wrapper(env)
    getter = getattr(ns, "_get_param_value", None)  # MujocoWrapper: its own accessors
    values: dict[str, float | tuple[float, ...]] = {}
    for name in ns.tunable_params:
        if getter is not None:
            raw = getter(name)
        elif name == "P" and hasattr(ns, "transition_prob"):  # toy text: the slip distribution
            raw = ns.transition_prob
        else:
            raw = getattr(ns.unwrapped, name)
        values[name] = _number(name, raw)
    return values


def _level(ns: Any) -> str:
    if getattr(ns, "delta_change_notification", False):
        return "value"
    return "flag" if getattr(ns, "change_notification", False) else "none"


def _split(observation: Any) -> tuple[Any, dict[str, Any]]:
    """An NS-Gym observation's ``state`` and its notes (``env_change``, ``delta_change``,
    ``relative_time``); anything else is a state without notes."""
    if isinstance(observation, Mapping) and "state" in observation:
        return observation["state"], {k: observation[k] for k in _NOTES if k in observation}
    return observation, {}


def _notes_copy(notes: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in notes.items():
        out[key] = dict(value) if isinstance(value, Mapping) else value
    return out


class NSGymBridge(gymnasium.Wrapper):
    """An NS-Gym environment as a plain Gymnasium environment (see :func:`from_nsgym`).

    Attributes:
        notify: The notification level in effect (``"value"``, ``"flag"`` or ``"none"``).
    """

    def __init__(self, env: gymnasium.Env, notify: str = "nsgym"):
        """Wraps ``env``.

        Args:
            env: An NS-Gym environment (an ``ns_gym.base.NSWrapper``, possibly inside other
                Gymnasium wrappers).
            notify: ``"nsgym"`` (default: NS-Gym's own level — detailed notification gives
                ``"value"``, basic ``"flag"``, none ``"none"``), ``"value"`` (``context`` and
                ``context_changed`` in every ``info``), ``"flag"`` (``context_changed``) or
                ``"none"``.

        Raises:
            ValueError: If ``env`` is not an NS-Gym environment, ``notify`` is not one of
                :data:`NOTIFY`, or a parameter is not numeric.
        """
        if not isinstance(notify, str) or notify not in NOTIFY:
            raise ValueError(f"notify must be one of {NOTIFY}, got {notify!r}")
        ns = _ns_wrapper(env)
        super().__init__(env)
        self._ns = ns
        state_space = ns.observation_space["state"]
        self.observation_space = state_space
        self.notify = _level(ns) if notify == "nsgym" else notify
        self._box = isinstance(state_space, spaces.Box)
        self._context = read_context(ns)
        self._last_changed = False
        self._world: dict[str, float | tuple[float, ...]] | None = None  # last transition's

    @property
    def spec(self) -> None:  # type: ignore[override]
        """``None``: NS-Gym's wrappers record no constructor arguments (their update functions
        are live objects), so ``gymnasium.make`` cannot rebuild this environment from a spec;
        the base environment's id is ``env.unwrapped.spec.id``."""
        return None

    @property
    def context(self) -> dict[str, float | tuple[float, ...]]:
        """The parameters' current values (a fresh dict): the ground truth at every level."""
        return dict(self._context)

    @property
    def context_changed(self) -> bool:
        """Whether the last ``step``'s transition ran in another world than the transition
        before it (always False after a ``reset``)."""
        return self._last_changed

    def _state(self, state: Any) -> Any:
        if self._box:
            space = self.observation_space
            assert isinstance(space, spaces.Box)
            return np.asarray(state, dtype=space.dtype)
        return state

    def _annotate(
        self, notes: dict[str, Any], info: dict[str, Any], stepped: bool
    ) -> dict[str, Any]:
        values = read_context(self._ns)
        # after a step, ``values`` is the world its transition ran in (NS-Gym updates, then
        # steps); a reset's restored values count only once a transition runs in them
        changed = stepped and self._world is not None and values != self._world
        if stepped:
            self._world = values
        self._context, self._last_changed = values, changed
        info["nsgym"] = _notes_copy(notes)  # what NS-Gym itself told the agent
        if self.notify == "value":
            info["context"] = dict(values)
            info["context_changed"] = changed
        elif self.notify == "flag":
            info["context_changed"] = changed
        return info

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Resets the NS-Gym environment; ``context_changed`` is False (NS-Gym restores the
        initial values at ``reset`` unless ``persistent_params``; if they differ from the last
        transition's world, the first step says so)."""
        observation, info = self.env.reset(seed=seed, options=options)
        state, notes = _split(observation)
        return self._state(state), self._annotate(notes, dict(info), stepped=False)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Steps the NS-Gym environment (which applies its updates, then steps); the reward
        is a float also when NS-Gym returns its ``Reward`` record (``scalar_reward=False``)."""
        observation, reward, terminated, truncated, info = self.env.step(action)
        state, notes = _split(observation)
        value = float(getattr(reward, "reward", reward))
        info = self._annotate(notes, dict(info), stepped=True)
        return self._state(state), value, bool(terminated), bool(truncated), info


def from_nsgym(env: gymnasium.Env, notify: str = "nsgym") -> NSGymBridge:
    """An NS-Gym environment as a Gymnasium environment for bam-rl's agents and run loop.

    ```python
    import gymnasium as gym
    from ns_gym.schedulers import DiscreteScheduler
    from ns_gym.update_functions import StepWiseUpdate
    from ns_gym.wrappers import NSClassicControlWrapper
    from bam_rl.interop import from_nsgym

    heavy = StepWiseUpdate(DiscreteScheduler({0}), [1.0])  # pole mass 0.1 -> 1.0 at t = 0
    ns_env = NSClassicControlWrapper(gym.make("CartPole-v1"), {"masspole": heavy},
                                     change_notification=True, delta_change_notification=True)
    env = from_nsgym(ns_env)  # observation: CartPole's Box; info: context, context_changed
    ```

    The observation is the base environment's (the ``"state"`` of NS-Gym's ``Dict``), so
    Gymnasium's ``check_env`` passes; NS-Gym's notes (``env_change``, ``delta_change``,
    ``relative_time``) move to ``info["nsgym"]``. ``info["context"]`` holds the parameters'
    values read from the environment after each update (MuJoCo gravity as a magnitude, as
    :class:`~bam_rl.wrappers.NonStationary` reports it); ``info["context_changed"]`` is True
    only at a step whose transition ran in another world than the one before it (never at a
    reset, whose restored values count once a step runs in them), unlike NS-Gym's flag, which
    means "an update fired". The ground truth is always
    ``env.get_wrapper_attr("context")``.

    Args:
        env: An NS-Gym environment (an ``ns_gym.base.NSWrapper``, possibly wrapped).
        notify: ``"nsgym"`` (NS-Gym's own notification level), ``"value"``, ``"flag"`` or
            ``"none"`` (see :class:`NSGymBridge`).

    Returns:
        The wrapped environment.

    Raises:
        ValueError: If ``env`` is not an NS-Gym environment or ``notify`` is unknown.
    """
    return NSGymBridge(env, notify)


class NSGymAgent:
    """A bam-rl agent behind NS-Gym's agent interface (see :func:`as_nsgym_agent`).

    Attributes:
        agent: The bam-rl agent.
        episodes: Episodes started (``agent.reset`` calls).
        transitions: Transitions handed to ``agent.observe``.
        unobserved: Transitions that never reached ``observe``: their reward or next
            observation never came (a harness that passes no ``reward``, or an episode that
            ended without a ``done`` call or :meth:`end_episode`).
    """

    def __init__(self, agent: Any):
        """Adapts ``agent``.

        Args:
            agent: Any object with the bam-rl agent methods ``reset(observation, info)``,
                ``act(observation)`` and ``observe(action, reward, next_observation,
                terminated, truncated, info)``.

        Raises:
            ValueError: If ``agent`` lacks one of those methods.
        """
        missing = [m for m in ("reset", "act", "observe") if not callable(getattr(agent, m, None))]
        if missing:
            raise ValueError(
                "agent must be a bam-rl agent with reset, act and observe methods, got "
                f"{type(agent).__name__} without {', '.join(missing)}"
            )
        self.agent = agent
        self.episodes = 0
        self.transitions = 0
        self.unobserved = 0
        self._in_episode = False
        self._pending: Any = None  # the action whose outcome is still to come
        self._has_pending = False
        self._world: dict[str, Any] | None = None  # the last transition's world
        super().__init__()  # NS-Gym's Agent (or another base) when mixed in

    # ------------------------------------------------------------------ what the agent is told
    def _info(
        self,
        notes: dict[str, Any],
        planning_env: Any,
        extra: Mapping[str, Any] | None,
        stepped: bool = True,
    ) -> dict[str, Any]:
        info: dict[str, Any] = dict(extra or {})
        info["nsgym"] = _notes_copy(notes)
        flags = notes.get("env_change") or {}
        fired = any(bool(v) for v in flags.values()) if isinstance(flags, Mapping) else False
        context = None
        if planning_env is not None and getattr(planning_env, "delta_change_notification", False):
            # detailed notification: the planning copy holds the current world
            try:
                context = read_context(planning_env)
            except ValueError:
                context = None
        if context is not None:
            # as the bridge's ``context_changed``: after a step the planning copy holds the
            # world that step's transition ran in; at an episode's start it holds the restored
            # initial values, which count once a transition runs in them
            changed = stepped and self._world is not None and context != self._world
            if stepped:
                self._world = context
            info["context"] = dict(context)
            info["context_changed"] = changed
        elif flags:
            info["context_changed"] = fired  # basic notification: NS-Gym's flag is all we have
        return info

    def _state(self, observation: Any) -> tuple[Any, dict[str, Any]]:
        state, notes = _split(observation)
        if isinstance(state, (int, np.integer)):
            return state, notes
        return np.asarray(state), notes

    @staticmethod
    def _to_space(action: Any, planning_env: Any) -> Any:
        space = getattr(planning_env, "action_space", None)
        if isinstance(space, spaces.Box):
            return np.asarray(action, dtype=space.dtype).reshape(space.shape)
        if isinstance(space, spaces.Discrete):
            return np.int64(np.asarray(action).reshape(-1)[0])
        return action

    # ------------------------------------------------------------------ NS-Gym's interface
    def get_action(
        self,
        obs: Any,
        planning_env: Any = None,
        reward: SupportsFloat | None = None,
        done: bool | None = None,
        *,
        truncated: bool | None = None,
        info: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        """An action for ``obs`` (NS-Gym's ``Dict`` observation or a bare state).

        Called with the ``reward`` and ``done`` of the step that led to ``obs``, it first hands
        the agent that transition (``observe``); with ``done`` (or ``truncated``) True the
        episode ends there and the returned action (the previous one) is not meant to be
        taken. The first call, a call after ``done`` and an observation whose
        ``relative_time`` is 0 start an episode (``agent.reset``).

        Args:
            obs: The observation (NS-Gym's ``Dict``, or its ``state``).
            planning_env: NS-Gym's planning environment (``env.get_planning_env()``), or
                ``None``. With detailed notification it holds the current world, read into
                ``info["context"]``; its action space shapes the returned action.
            reward: The reward of the step that led to ``obs`` (``None``: not given).
            done: Whether that step ended the episode.
            truncated: Whether the episode was cut short (``done`` then means ``truncated``
                rather than ``terminated``).
            info: That step's ``info`` (merged into what the agent is told).
            **kwargs: Ignored (other harnesses' extras).

        Returns:
            The action, as an array of the action space's dtype (``Box``) or an integer
            (``Discrete``) when ``planning_env`` gives the space.
        """
        state, notes = self._state(obs)
        restarted = notes.get("relative_time") is not None and notes["relative_time"] == 0
        told = self._info(notes, planning_env, info, stepped=self._in_episode and not restarted)
        ends = bool(done) or bool(truncated)
        if self._in_episode and not restarted:
            if self._has_pending:
                if reward is None:
                    self.unobserved += 1
                else:
                    self.agent.observe(
                        self._pending,
                        float(getattr(reward, "reward", reward)),
                        state,
                        ends and not bool(truncated),
                        bool(truncated),
                        told,
                    )
                    self.transitions += 1
            if ends:
                self._in_episode, self._has_pending = False, False
                return self._to_space(self._pending, planning_env)
        else:
            if self._in_episode and self._has_pending:
                self.unobserved += 1  # the last episode ended without its final outcome
            self.agent.reset(state, told)
            self.episodes += 1
            self._in_episode = True
        action = self.agent.act(state)
        self._pending, self._has_pending = action, True
        return self._to_space(action, planning_env)

    def act(self, obs: Any, planning_env: Any = None, *args: Any, **kwargs: Any) -> Any:
        """NS-Gym's ``Agent.act(obs, planning_env)``: :meth:`get_action` (``reward`` and
        ``done`` may come as keywords)."""
        return self.get_action(obs, planning_env, *args, **kwargs)

    def end_episode(
        self,
        obs: Any = None,
        reward: SupportsFloat | None = None,
        terminated: bool = True,
        truncated: bool = False,
        info: Mapping[str, Any] | None = None,
    ) -> None:
        """Ends the episode, handing the agent its final transition when ``obs`` and
        ``reward`` are given (for harnesses that stop calling at ``done``).

        Args:
            obs: The final observation (NS-Gym's ``Dict`` or its ``state``), or ``None``.
            reward: The final step's reward, or ``None``.
            terminated: Whether the episode terminated.
            truncated: Whether it was cut short.
            info: The final step's ``info``.
        """
        if self._in_episode and self._has_pending:
            if obs is None or reward is None:
                self.unobserved += 1
            else:
                state, notes = self._state(obs)
                told = self._info(notes, None, info)
                self.agent.observe(
                    self._pending,
                    float(getattr(reward, "reward", reward)),
                    state,
                    bool(terminated),
                    bool(truncated),
                    told,
                )
                self.transitions += 1
        self._in_episode, self._has_pending = False, False


def as_nsgym_agent(agent: Any, base: type | None = None) -> NSGymAgent:
    """Any bam-rl agent as an NS-Gym agent.

    ```python
    from bam_rl.agents import RandomAgent
    from bam_rl.interop import as_nsgym_agent

    ns_agent = as_nsgym_agent(RandomAgent(env.action_space, seed=0))
    action = ns_agent.get_action(obs, env.get_planning_env(), reward=r, done=d)
    ```

    The adapter converts NS-Gym's ``Dict`` observation to the state the agent expects, calls
    the agent's ``observe`` with the previous transition when the next call brings its reward
    (``get_action(obs, planning_env, reward, done)``), and ``reset`` at each episode start;
    see :class:`NSGymAgent`. A harness that passes no reward (NS-Gym's
    ``run_experiment``, which calls ``act(state)``) only gets actions: the agent acts but
    does not learn, and :attr:`NSGymAgent.unobserved` counts what it missed.

    Args:
        agent: A bam-rl agent (``reset``, ``act``, ``observe``).
        base: A class to mix in, so ``isinstance`` checks of a harness hold (for example the
            competition's ``ModelBasedAgent``, whose ``validate_and_get_action`` then calls
            the adapter's ``get_action``). Default: ``ns_gym.base.Agent`` when ns-gym is
            installed.

    Returns:
        The adapter.

    Raises:
        ValueError: If ``agent`` lacks an agent method or ``base`` is not a class.
    """
    if base is None:
        try:
            import ns_gym.base
        except ImportError:
            return NSGymAgent(agent)
        base = ns_gym.base.Agent
    if not isinstance(base, type):
        raise ValueError(f"base must be a class, got {base!r}")
    if issubclass(NSGymAgent, base):
        return NSGymAgent(agent)
    mixed = type(f"NSGymAgent_{base.__name__}", (NSGymAgent, base), {"__module__": __name__})
    return mixed(agent)
