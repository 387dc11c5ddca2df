"""Any Stable-Baselines3 algorithm behind the agent protocol (ARCHITECTURE.md, "Agents").

Stable-Baselines3 and torch are optional (``pip install bam-rl[sb3]``); this module imports
them only when an :class:`SB3Agent` is built or loaded, so ``import bam_rl.agents`` works
without them.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
from pathlib import Path
from typing import Any

import numpy as np

from bam_rl.checks import as_float_array, check_seed
from bam_rl.serialization import (
    qualified_name,
    read_archive,
    restore_generator,
    write_archive,
)

from .base import BaseAgent

__all__ = ["SB3Agent"]

FORMAT = "bam-rl-sb3/1"
# The exact classes a file may name (by attribute of the module that exports them); nothing
# else is ever imported or constructed by ``load``.
_ALGORITHMS: dict[str, tuple[str, ...]] = {
    "stable_baselines3": ("A2C", "DDPG", "DQN", "PPO", "SAC", "TD3"),
    "sb3_contrib": ("ARS", "CrossQ", "MaskablePPO", "QRDQN", "RecurrentPPO", "TQC", "TRPO"),
}
_CLASSES: dict[str, dict[str, tuple[str, ...]]] = {
    "activation_fn": {
        "torch.nn": (
            "CELU",
            "ELU",
            "GELU",
            "Hardsigmoid",
            "Hardswish",
            "Hardtanh",
            "Identity",
            "LeakyReLU",
            "LogSigmoid",
            "Mish",
            "PReLU",
            "ReLU",
            "ReLU6",
            "SELU",
            "SiLU",
            "Sigmoid",
            "Softplus",
            "Softsign",
            "Tanh",
            "Tanhshrink",
        )
    },
    "optimizer_class": {
        "torch.optim": (
            "Adadelta",
            "Adagrad",
            "Adam",
            "AdamW",
            "Adamax",
            "NAdam",
            "RAdam",
            "RMSprop",
            "SGD",
        ),
        "stable_baselines3.common.sb2_compat.rmsprop_tf_like": ("RMSpropTFLike",),
    },
    "features_extractor_class": {
        "stable_baselines3.common.torch_layers": (
            "CombinedExtractor",
            "FlattenExtractor",
            "NatureCNN",
        )
    },
}
# The keys save() writes; load() accepts no others.
_DOCUMENT_KEYS = frozenset(
    {
        "format",
        "algorithm",
        "policy",
        "hyperparameters",
        "approximated_schedules",
        "policy_kwargs",
        "parameters",
        "variables",
        "spaces",
        "agent",
    }
)
_AGENT_KEYS = frozenset(
    {
        "deterministic",
        "learn_online",
        "seed",
        "total_timesteps",
        "num_timesteps",
        "rng",
        "bit_generator",
    }
)
_SPACE_KEYS = {"Box": frozenset({"type", "dtype"}), "Discrete": frozenset({"type", "n", "start"})}
# Policy constructor arguments that the algorithm supplies itself.
_BOX_DTYPES = (
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
)
_POLICY_SUPPLIED = frozenset({"self", "observation_space", "action_space", "lr_schedule"})
# Constructor arguments that describe the environment, the machine or objects we do not save.
_EXCLUDED = frozenset(
    {
        "self",
        "policy",
        "env",
        "device",
        "verbose",
        "seed",
        "tensorboard_log",
        "_init_setup_model",
        "policy_kwargs",
        "action_noise",
        "replay_buffer_class",
        "replay_buffer_kwargs",
        "rollout_buffer_class",
        "rollout_buffer_kwargs",
        "supported_action_spaces",
        "monitor_wrapper",
    }
)


def _sb3() -> Any:
    try:
        import stable_baselines3
    except ImportError as error:  # pragma: no cover - depends on the installation
        raise ImportError("SB3Agent needs Stable-Baselines3: pip install 'bam-rl[sb3]'") from error
    return stable_baselines3


def _encode(value: Any, where: str) -> Any:
    """JSON form of a hyperparameter; classes by qualified name. ``KeyError`` if impossible."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if np.isfinite(value) else {"__float__": repr(value)}
    if isinstance(value, np.generic):
        return _encode(value.item(), where)
    if isinstance(value, type):
        return {"__class__": qualified_name(value)}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # e.g. TrainFreq(4, unit)
        return {"__tuple__": [_encode(getattr(v, "value", v), where) for v in value]}
    if isinstance(value, (list, tuple)):
        items = [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return {"__tuple__": items} if isinstance(value, tuple) else items
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"__dict__": {k: _encode(v, f"{where}.{k}") for k, v in value.items()}}
    raise KeyError(where)


@functools.cache
def _exported(modules: tuple[tuple[str, tuple[str, ...]], ...]) -> dict[str, type]:
    """``qualified name -> class`` for the named classes of the importable modules."""
    classes: dict[str, type] = {}
    for module_name, names in modules:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # e.g. sb3_contrib not installed
            continue
        for name in names:
            cls = getattr(module, name, None)
            if isinstance(cls, type):
                classes[qualified_name(cls)] = cls
    return classes


def _allowed(role: str) -> dict[str, type]:
    """The allow-listed classes for ``role`` (``"algorithm"`` or a key of ``_CLASSES``)."""
    table: dict[str, tuple[str, ...]] = _ALGORITHMS if role == "algorithm" else _CLASSES[role]
    return _exported(tuple((module, tuple(names)) for module, names in table.items()))


def _allowed_class(role: str, name: Any) -> type:
    """The allow-listed class ``name`` for ``role``, or ``ValueError`` listing the accepted."""
    classes = _allowed(role) if role == "algorithm" or role in _CLASSES else {}
    if not isinstance(name, str) or name not in classes:
        accepted = ", ".join(sorted(cls.__name__ for cls in classes.values())) or "none"
        raise ValueError(
            f"refusing to construct {name!r} as {role}: not an allow-listed "
            f"class (accepted: {accepted})"
        )
    return classes[name]


def _check_keys(
    where: str, mapping: Any, accepted: frozenset[str] | set[str], required: bool = False
) -> dict[str, Any]:
    if not isinstance(mapping, dict):
        raise ValueError(f"{where} must be a JSON object, got {type(mapping).__name__}")
    unknown = set(mapping) - set(accepted)
    if unknown:
        raise ValueError(
            f"{where} holds unknown keys {sorted(unknown)}; accepted: {sorted(accepted)}"
        )
    missing = set(accepted) - set(mapping) if required else set()
    if missing:
        raise ValueError(f"{where} lacks the keys {sorted(missing)}")
    return mapping


def _decode(value: Any, key: str | None = None) -> Any:
    """Inverse of :func:`_encode`; a class only under an allow-listed key, from its list."""
    if isinstance(value, list):
        return [_decode(v, key) for v in value]
    if not isinstance(value, dict):
        return value
    if "__float__" in value:
        return float(value["__float__"])
    if "__class__" in value:
        return _allowed_class(key or "a hyperparameter", value["__class__"])
    if "__tuple__" in value:
        return tuple(_decode(v, key) for v in value["__tuple__"])
    if "__dict__" in value:
        return {k: _decode(v, k) for k, v in value["__dict__"].items()}
    raise ValueError(f"malformed hyperparameter entry with keys {sorted(value)}")


def _check_saved_classes(value: Any, key: str | None = None) -> None:
    """Refuses (at save time) a class that :meth:`SB3Agent.load` would refuse."""
    if isinstance(value, type):
        name = qualified_name(value)
        _allowed_class(key or "a hyperparameter", name)
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_saved_classes(v, k)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _check_saved_classes(v, key)


def _parameters(cls: type) -> set[str]:
    """Named constructor arguments of ``cls`` and of the classes its ``__init__`` defers to."""
    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        parameters = inspect.signature(init).parameters.values()
        names |= {p.name for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
        if not any(p.kind is p.VAR_KEYWORD for p in parameters):
            break
    return names


def _describe_space(space: Any, name: str, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    from gymnasium import spaces

    if isinstance(space, spaces.Box):
        arrays[f"space:{name}:low"] = np.asarray(space.low)
        arrays[f"space:{name}:high"] = np.asarray(space.high)
        return {"type": "Box", "dtype": np.dtype(space.dtype).name}
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    return {"type": type(space).__name__}


def _rebuild_space(description: dict[str, Any], name: str, arrays: dict[str, np.ndarray]) -> Any:
    from gymnasium import spaces

    if not isinstance(description, dict):
        raise ValueError(f"the {name} space must be a JSON object")
    kind = description.get("type")
    if kind in _SPACE_KEYS:
        _check_keys(f"the {name} space", description, _SPACE_KEYS[kind], required=True)
    if kind == "Box":
        low, high = arrays[f"space:{name}:low"], arrays[f"space:{name}:high"]
        dtype = description["dtype"]
        if not isinstance(dtype, str) or dtype not in _BOX_DTYPES:
            raise ValueError(
                f"the {name} space's dtype must be one of {_BOX_DTYPES}, got {dtype!r}"
            )
        return spaces.Box(low, high, shape=low.shape, dtype=np.dtype(dtype))
    if kind == "Discrete":
        return spaces.Discrete(int(description["n"]), start=int(description["start"]))
    raise ValueError(f"cannot rebuild a {kind} {name} space without env=; pass the environment")


def _space_env(observation_space: Any, action_space: Any) -> Any:
    """A stand-in environment that only carries the spaces (for ``load`` without ``env``)."""
    import gymnasium as gym

    class _SpacesOnly(gym.Env):
        def __init__(self) -> None:
            self.observation_space = observation_space
            self.action_space = action_space

        def reset(self, *, seed: int | None = None, options: dict | None = None):
            super().reset(seed=seed)
            return self.observation_space.sample(), {}

        def step(self, action: Any):  # pragma: no cover - never stepped
            raise RuntimeError("this environment only carries the spaces of a loaded agent")

    return _SpacesOnly()


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
        _sb3()
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

    def observe(
        self,
        action: Any,
        reward: float,
        next_observation: Any,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
    ) -> None:
        """Stores the transition and trains (off-policy, learning online); else validates only.

        Raises:
            ValueError: For an action outside the action space, a non-finite reward or
                observation.
        """
        buffer_action = self._check_action(action)
        reward_value = as_float_array("reward", reward)
        if reward_value.size != 1:
            raise ValueError(f"reward must be a single number, got {reward!r}")
        self._check_observation("next_observation", next_observation)
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
    def _hyperparameters(self) -> tuple[dict[str, Any], list[str]]:
        algorithm = self.algorithm
        saved: dict[str, Any] = {}
        approximated: list[str] = []
        for name in inspect.signature(type(algorithm).__init__).parameters:
            if name in _EXCLUDED or not hasattr(algorithm, name):
                continue
            value = getattr(algorithm, name)
            if callable(value) and not isinstance(value, type):
                try:
                    value = float(value(1.0))
                except (TypeError, ValueError):
                    continue
                approximated.append(name)
            try:
                saved[name] = _encode(value, name)
            except KeyError:
                continue
        return saved, approximated

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes weights, hyperparameters, spaces and agent state to ``path`` (``.npz``).

        Raises:
            ValueError: If the policy keyword arguments cannot be written as JSON.
        """
        algorithm = self.algorithm
        arrays: dict[str, np.ndarray] = {}
        state = algorithm.policy.state_dict()
        for key, tensor in state.items():
            arrays[f"param:{key}"] = tensor.detach().cpu().numpy()
        variables = []
        for name in algorithm._get_torch_save_params()[1]:
            value = getattr(algorithm, name, None)
            if value is not None and hasattr(value, "detach"):
                arrays[f"var:{name}"] = value.detach().cpu().numpy()
                variables.append(name)
        hyperparameters, approximated = self._hyperparameters()
        try:
            policy_kwargs = _encode(dict(algorithm.policy_kwargs), "policy_kwargs")
        except KeyError as error:
            raise ValueError(
                f"cannot save policy_kwargs entry {error.args[0]!r} as JSON"
            ) from error
        try:  # a file that load() would refuse is not written
            _allowed_class("algorithm", qualified_name(type(algorithm)))
            if type(algorithm.policy) not in type(algorithm).policy_aliases.values():
                raise ValueError(
                    f"refusing to save the custom policy class "
                    f"{qualified_name(type(algorithm.policy))}: load() rebuilds only "
                    f"the algorithm's own policies"
                )
            _check_saved_classes(dict(algorithm.policy_kwargs))
        except ValueError as error:
            raise ValueError(f"cannot save this SB3Agent: {error}") from error
        document = {
            "format": FORMAT,
            "algorithm": qualified_name(type(algorithm)),
            "policy": qualified_name(type(algorithm.policy)),
            "hyperparameters": hyperparameters,
            "approximated_schedules": approximated,
            "policy_kwargs": policy_kwargs,
            "parameters": list(state),
            "variables": variables,
            "spaces": {
                "observation": _describe_space(algorithm.observation_space, "observation", arrays),
                "action": _describe_space(algorithm.action_space, "action", arrays),
            },
            "agent": {
                "deterministic": self.deterministic,
                "learn_online": self.learn_online,
                "seed": self.seed,
                "total_timesteps": self.total_timesteps,
                "num_timesteps": int(algorithm.num_timesteps),
                "rng": self.rng.bit_generator.state,
                "bit_generator": type(self.rng.bit_generator).__name__,
            },
        }
        write_archive(path, document, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike[str], env: Any = None, device: str = "auto") -> SB3Agent:
        """Rebuilds an agent written by :meth:`save`.

        Args:
            path: The archive.
            env: The environment for the rebuilt algorithm (optional for Box/Discrete spaces,
                which are rebuilt from the file).
            device: Torch device of the rebuilt algorithm.

        Raises:
            ValueError: If the file is missing, corrupted, not an SB3Agent file, holds keys
                that :meth:`save` does not write, names a class outside the allow-lists, or
                its weights do not fit the algorithm. Nothing is ever unpickled, and no class
                is constructed before the whole document is checked: only the algorithms of
                Stable-Baselines3 (and sb3-contrib) with their own policies, torch activation
                functions and optimisers, and SB3's feature extractors.
        """
        _sb3()
        import torch

        path = Path(path)
        document, arrays = read_archive(path, FORMAT, "SB3Agent")
        try:
            _check_keys("the file", document, _DOCUMENT_KEYS, required=True)
            algorithm_cls: Any = _allowed_class("algorithm", document["algorithm"])
            policies = {
                qualified_name(value): value for value in algorithm_cls.policy_aliases.values()
            }
            if document["policy"] not in policies:
                raise ValueError(
                    f"refusing to construct {document['policy']!r} as the policy "
                    f"of {algorithm_cls.__name__}: accepted: {sorted(policies)}"
                )
            policy_cls = policies[document["policy"]]
            policy: Any = next(
                (
                    alias
                    for alias, value in algorithm_cls.policy_aliases.items()
                    if value is policy_cls
                ),
                policy_cls,
            )
            accepted = _parameters(algorithm_cls) - _EXCLUDED
            saved = _check_keys("hyperparameters", document["hyperparameters"], accepted)
            hyperparameters = {k: _decode(v, k) for k, v in saved.items()}
            _check_keys("policy_kwargs", document["policy_kwargs"], {"__dict__"}, required=True)
            _check_keys(
                "policy_kwargs",
                document["policy_kwargs"]["__dict__"],
                _parameters(policy_cls) - _POLICY_SUPPLIED,
            )
            policy_kwargs = _decode(document["policy_kwargs"])
            meta = _check_keys("agent", document["agent"], _AGENT_KEYS, required=True)
            for key in ("parameters", "variables", "approximated_schedules"):
                names_ = document[key]
                if not isinstance(names_, list) or not all(isinstance(n, str) for n in names_):
                    raise ValueError(f"{key} must be a list of names")
            spaces_ = _check_keys(
                "spaces", document["spaces"], {"observation", "action"}, required=True
            )
            if env is None:
                env = _space_env(
                    _rebuild_space(spaces_["observation"], "observation", arrays),
                    _rebuild_space(spaces_["action"], "action", arrays),
                )
            algorithm = algorithm_cls(
                policy, env, policy_kwargs=policy_kwargs, device=device, **hyperparameters
            )
            unknown = set(document["variables"]) - set(algorithm._get_torch_save_params()[1])
            if unknown:
                raise ValueError(f"variables holds unknown names {sorted(unknown)}")
            state = algorithm.policy.state_dict()
            names = list(document["parameters"])
            if sorted(names) != sorted(state):
                raise ValueError("the saved parameters do not match the policy's")
            weights = {}
            for name in names:
                array = np.array(arrays[f"param:{name}"])
                if tuple(array.shape) != tuple(state[name].shape):
                    raise ValueError(
                        f"parameter {name!r} has shape {array.shape}, "
                        f"expected {tuple(state[name].shape)}"
                    )
                weights[name] = torch.from_numpy(array)
            algorithm.policy.load_state_dict(weights, strict=True)
            with torch.no_grad():
                for name in document["variables"]:
                    variable = getattr(algorithm, name)
                    variable.copy_(torch.from_numpy(np.array(arrays[f"var:{name}"])))
            agent = cls(
                algorithm,
                deterministic=bool(meta["deterministic"]),
                learn_online=bool(meta["learn_online"]),
                seed=meta["seed"],
                total_timesteps=meta["total_timesteps"],
            )
            algorithm.num_timesteps = int(meta["num_timesteps"])
            agent.rng = restore_generator(meta["bit_generator"], meta["rng"])
        except ValueError as error:
            raise ValueError(f"{str(path)!r}: {error}") from error
        except Exception as error:  # whatever SB3 or torch raise on bad data
            raise ValueError(
                f"{str(path)!r} holds a malformed SB3Agent state: {error!r}"
            ) from error
        return agent

    def __repr__(self) -> str:
        return (
            f"SB3Agent({type(self.algorithm).__name__}, deterministic={self.deterministic}, "
            f"learn_online={self.learn_online})"
        )
