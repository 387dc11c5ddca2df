"""Any Stable-Baselines3 algorithm behind the agent protocol (ARCHITECTURE.md, "Agents").

Stable-Baselines3 and torch are optional (``pip install bam-rl[sb3]``); this module imports
them only when an :class:`SB3Agent` is built or loaded, so ``import bam_rl.agents`` works
without them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from bam_rl.checks import as_float_array, check_seed
from bam_rl.serialization import archive_path

from .base import BaseAgent, Transition
from .sb3_codec import import_sb3, read_agent, write_agent

__all__ = ["SB3Agent"]


class SB3Agent(BaseAgent):
    """Wraps a Stable-Baselines3 algorithm instance (SAC, TD3, DDPG, DQN, PPO, A2C, ...).

    Acting: ``algorithm.predict(observation, deterministic=...)``. Box actions are returned as
    arrays of the space's dtype and shape, Discrete actions as ``int``.

    Learning online (off-policy algorithms only, ``OffPolicyAlgorithm``): ``observe`` stores
    each transition in ``algorithm.replay_buffer`` — Box actions rescaled to [-1, 1] with
    ``policy.scale_action`` as SB3 stores them, ``terminated`` as the done flag and a
    truncation as ``TimeLimit.truncated`` so it is bootstrapped — counts the step in
    ``algorithm.num_timesteps``, calls ``algorithm._on_step()`` (DQN's target updates) and,
    once ``num_timesteps > learning_starts``, ``algorithm.train(gradient_steps, batch_size)``
    at the algorithm's ``train_freq`` (steps or episodes; ``gradient_steps=-1`` means as many
    as steps collected), exactly as ``learn`` would. While learning, actions explore as in
    SB3: uniform random actions (from this agent's :attr:`rng`) for the first
    ``learning_starts`` steps, then stochastic ``predict`` plus the algorithm's
    ``action_noise`` if any. Without ``total_timesteps`` SB3's progress-dependent schedules
    (learning rate, DQN's ε) stay at their start values; with it they advance as in
    ``learn(total_timesteps)``.

    On-policy algorithms (PPO, A2C) collect whole rollouts with their own ``learn`` loop, so
    they are evaluated only: ``observe`` validates its arguments and learns nothing
    (``learn_online=True`` is refused).

    Randomness: SB3 draws from torch's and numpy's global generators (its replay sampling,
    stochastic policies); seed those with the algorithm's own ``seed=`` argument.

    Files: :meth:`save` writes an ``.npz`` archive (never a pickle) of the policy's
    ``state_dict`` and SB3's extra torch variables (e.g. SAC's ``log_ent_coef``), the
    environment-independent constructor arguments, the spaces and the agent's own state;
    optimiser moments and the replay buffer are not saved. :meth:`load` rebuilds the
    algorithm class (``env=`` may be given; Box and Discrete spaces are rebuilt from the file
    otherwise) and loads the weights with ``torch.from_numpy``. A deterministic loaded agent
    acts exactly as the saved one. Progress schedules given as callables are saved as their
    value at the start of training (a constant).

    Args:
        algorithm: A Stable-Baselines3 ``BaseAlgorithm`` instance.
        deterministic: Whether ``act`` uses the deterministic policy when not learning.
        learn_online: Learn from every observed transition; ``None`` means ``True`` for
            off-policy algorithms and ``False`` otherwise.
        seed: Seed of :attr:`rng` (the warm-up actions).
        total_timesteps: Horizon for SB3's progress-dependent schedules (optional).

    Raises:
        ValueError: If ``algorithm`` is not a Stable-Baselines3 algorithm or ``learn_online``
            is requested for an on-policy algorithm.
    """

    def __init__(
        self,
        algorithm: Any,
        deterministic: bool = True,
        learn_online: bool | None = None,
        seed: int | None = None,
        total_timesteps: int | None = None,
    ):
        super().__init__(seed)
        import_sb3()
        from stable_baselines3.common.base_class import BaseAlgorithm
        from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

        if not isinstance(algorithm, BaseAlgorithm):
            raise ValueError(
                f"algorithm must be a Stable-Baselines3 algorithm instance, "
                f"got {type(algorithm).__name__}"
            )
        self.algorithm: Any = algorithm  # SB3 attributes differ between on- and off-policy
        self.off_policy = isinstance(algorithm, OffPolicyAlgorithm)
        if learn_online is None:
            learn_online = self.off_policy
        if learn_online and not self.off_policy:
            raise ValueError(
                f"learn_online=True needs an off-policy algorithm; "
                f"{type(algorithm).__name__} is on-policy (use its learn())"
            )
        self.deterministic = bool(deterministic)
        self.learn_online = bool(learn_online)
        if total_timesteps is not None:
            total_timesteps = check_seed(total_timesteps)
            if not total_timesteps:
                raise ValueError("total_timesteps must be a positive integer")
        self.total_timesteps = total_timesteps
        self._last_observation: Any = None
        self._steps_since_train = 0
        self._episodes_since_train = 0
        if self.off_policy:
            off_policy_algorithm: Any = self.algorithm  # an OffPolicyAlgorithm
            off_policy_algorithm._convert_train_freq()
            if getattr(algorithm, "_logger", None) is None:
                from stable_baselines3.common.logger import Logger

                algorithm.set_logger(Logger(folder=None, output_formats=[]))

    # ------------------------------------------------------------ protocol
    @property
    def action_space(self) -> Any:
        return self.algorithm.action_space

    @property
    def observation_space(self) -> Any:
        return self.algorithm.observation_space

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        """Starts an episode (remembers the first observation for the replay buffer)."""
        self._check_observation("observation", observation)
        self._last_observation = observation
        noise = getattr(self.algorithm, "action_noise", None)
        if noise is not None:
            noise.reset()

    def act(self, observation: Any) -> Any:
        """The policy's action: exploratory while learning online, else ``deterministic``."""
        self._check_observation("observation", observation)
        self._last_observation = observation
        algorithm = self.algorithm
        space = self.action_space
        from gymnasium import spaces

        if self.learn_online:
            if algorithm.num_timesteps < algorithm.learning_starts:
                action = self._random_action()
            else:
                action, _ = algorithm.predict(observation, deterministic=False)
                noise = getattr(algorithm, "action_noise", None)
                if noise is not None and isinstance(space, spaces.Box):
                    scaled = np.clip(algorithm.policy.scale_action(action) + noise(), -1, 1)
                    action = algorithm.policy.unscale_action(scaled)
        else:
            action, _ = algorithm.predict(observation, deterministic=self.deterministic)
        if isinstance(space, spaces.Discrete):
            return int(np.asarray(action).reshape(-1)[0])
        if isinstance(space, spaces.Box):
            return np.asarray(action, dtype=space.dtype).reshape(space.shape)
        return action

    def _random_action(self) -> Any:
        from gymnasium import spaces

        space = self.action_space
        if (
            isinstance(space, spaces.Box)
            and np.all(np.isfinite(space.low))
            and np.all(np.isfinite(space.high))
        ):
            return self.rng.uniform(space.low, space.high).astype(space.dtype)
        if isinstance(space, spaces.Discrete):
            return int(space.start + self.rng.integers(space.n))
        return space.sample()

    def _observe(self, step: Transition) -> None:
        """Stores the transition and trains (off-policy, learning online); else validates only.

        ``step.action`` is the checked action as the replay buffer stores it.
        """
        buffer_action = step.action
        reward_value = np.array([step.reward])
        next_observation, terminated, truncated = (
            step.next_observation,
            step.terminated,
            step.truncated,
        )
        previous, self._last_observation = self._last_observation, next_observation
        if not self.learn_online:
            return
        if previous is None:
            raise ValueError(
                "observe() before reset()/act(): the transition's first observation is unknown"
            )
        algorithm = self.algorithm
        done = bool(terminated or truncated)
        algorithm.replay_buffer.add(
            np.asarray(previous)[None],
            np.asarray(next_observation)[None],
            buffer_action,
            reward_value.reshape(1),
            np.array([done]),
            [{"TimeLimit.truncated": bool(truncated and not terminated)}],
        )
        algorithm.num_timesteps += 1
        if self.total_timesteps is not None:
            algorithm._update_current_progress_remaining(
                algorithm.num_timesteps, self.total_timesteps
            )
        algorithm._on_step()
        self._steps_since_train += 1
        if done:
            self._episodes_since_train += 1
            noise = getattr(algorithm, "action_noise", None)
            if noise is not None:
                noise.reset()
        frequency = algorithm.train_freq
        unit = getattr(frequency.unit, "value", frequency.unit)
        due = self._steps_since_train if unit == "step" else self._episodes_since_train
        if due >= frequency.frequency:  # the end of one of SB3's collect_rollouts calls
            if algorithm.num_timesteps > algorithm.learning_starts:
                steps = (
                    algorithm.gradient_steps
                    if algorithm.gradient_steps >= 0
                    else self._steps_since_train
                )
                if steps > 0:
                    algorithm.train(gradient_steps=steps, batch_size=algorithm.batch_size)
                    algorithm.policy.set_training_mode(False)
            self._steps_since_train = 0
            self._episodes_since_train = 0

    # ------------------------------------------------------------ validation
    def _check_next_observation(self, observation: Any) -> Any:
        self._check_observation("next_observation", observation)
        return observation

    def _check_observation(self, name: str, observation: Any) -> None:
        if isinstance(observation, dict):
            for key, value in observation.items():
                as_float_array(f"{name}[{key!r}]", value)
            return
        as_float_array(name, observation)

    def _check_action(self, action: Any) -> np.ndarray:
        """Validates an action and returns it as SB3's replay buffer stores it."""
        from gymnasium import spaces

        space = self.action_space
        if isinstance(space, spaces.Discrete):
            if isinstance(action, (bool, np.bool_)) or not (
                isinstance(action, (int, np.integer))
                or (
                    isinstance(action, np.ndarray)
                    and action.size == 1
                    and np.issubdtype(action.dtype, np.integer)
                )
            ):
                raise ValueError(
                    f"action must be an integer in the action space {space}, got {action!r}"
                )
            value = int(np.asarray(action).reshape(-1)[0])
            if not space.start <= value < space.start + space.n:
                raise ValueError(f"action {value!r} is outside the action space {space}")
            return np.array([[value]])
        if isinstance(space, spaces.Box):
            array = as_float_array("action", action)
            if array.size != int(np.prod(space.shape)):
                raise ValueError(f"action must have shape {space.shape}, got {action!r}")
            array = array.reshape(space.shape)
            if np.any(array < space.low) or np.any(array > space.high):
                raise ValueError(f"action {action!r} is outside the action space {space}")
            return self.algorithm.policy.scale_action(array[None].astype(np.float32))
        if not space.contains(action):
            raise ValueError(f"action {action!r} is outside the action space {space}")
        return np.asarray(action)[None]

    # ---------------------------------------------------------------- files

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Writes weights, hyperparameters, spaces and agent state to ``path`` (``.npz``,
        appended unless present; the format: :mod:`bam_rl.agents.sb3_codec`) and returns the
        path written.

        Raises:
            ValueError: If the policy keyword arguments cannot be written as JSON.
        """
        write_agent(self, path)
        return archive_path(path)

    @classmethod
    def load(cls, path: str | os.PathLike[str], env: Any = None, device: str = "auto") -> SB3Agent:
        """Rebuilds an agent written by :meth:`save` (:func:`~bam_rl.agents.sb3_codec.read_agent`
        has the checks: nothing is unpickled, and only allow-listed classes are built).

        Args:
            path: The archive.
            env: The environment for the rebuilt algorithm (optional for Box/Discrete spaces,
                which are rebuilt from the file).
            device: Torch device of the rebuilt algorithm.

        Raises:
            ValueError: If the file is missing, corrupted, not an SB3Agent file, or fails a
                check.
        """
        return read_agent(cls, path, env, device)

    def __repr__(self) -> str:
        return (
            f"SB3Agent({type(self.algorithm).__name__}, deterministic={self.deterministic}, "
            f"learn_online={self.learn_online})"
        )
