"""The pickle-free file format of :class:`~bam_rl.agents.sb3.SB3Agent` (``bam-rl-sb3/1``):
weights and optimiser variables as arrays, everything else as a JSON document whose classes
are checked against allow-lists before anything is built (:func:`write_agent`,
:func:`read_agent`).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
from pathlib import Path
from typing import Any

import numpy as np

from bam_rl.serialization import (
    qualified_name,
    read_archive,
    restore_generator,
    write_archive,
)

__all__ = ["FORMAT", "import_sb3", "read_agent", "write_agent"]

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


def import_sb3() -> Any:
    """Stable-Baselines3, or an ``ImportError`` saying how to install it."""
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


def _hyperparameters(algorithm: Any) -> tuple[dict[str, Any], list[str]]:
    """The algorithm's constructor arguments as JSON (schedules as their value at 1.0)."""
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


def write_agent(agent: Any, path: str | os.PathLike[str]) -> None:
    """Writes an :class:`~bam_rl.agents.sb3.SB3Agent`'s weights, hyperparameters, spaces and
    state to ``path`` (``.npz``).

    Raises:
        ValueError: If the policy keyword arguments cannot be written as JSON.
    """
    algorithm = agent.algorithm
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
    hyperparameters, approximated = _hyperparameters(algorithm)
    try:
        policy_kwargs = _encode(dict(algorithm.policy_kwargs), "policy_kwargs")
    except KeyError as error:
        raise ValueError(f"cannot save policy_kwargs entry {error.args[0]!r} as JSON") from error
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
            "deterministic": agent.deterministic,
            "learn_online": agent.learn_online,
            "seed": agent.seed,
            "total_timesteps": agent.total_timesteps,
            "num_timesteps": int(algorithm.num_timesteps),
            "rng": agent.rng.bit_generator.state,
            "bit_generator": type(agent.rng.bit_generator).__name__,
        },
    }
    write_archive(path, document, arrays)


def read_agent(
    cls: Any, path: str | os.PathLike[str], env: Any = None, device: str = "auto"
) -> Any:
    """Rebuilds an agent of class ``cls`` written by :func:`write_agent` (the arguments are
    those of :meth:`SB3Agent.load <bam_rl.agents.sb3.SB3Agent.load>`).

    Raises:
        ValueError: If the file is missing, corrupted, not an SB3Agent file, holds keys
            that :meth:`save` does not write, names a class outside the allow-lists, or
            its weights do not fit the algorithm. Nothing is ever unpickled, and no class
            is constructed before the whole document is checked: only the algorithms of
            Stable-Baselines3 (and sb3-contrib) with their own policies, torch activation
            functions and optimisers, and SB3's feature extractors.
    """
    import_sb3()
    import torch

    path = Path(path)
    document, arrays = read_archive(path, FORMAT, "SB3Agent")
    try:
        _check_keys("the file", document, _DOCUMENT_KEYS, required=True)
        algorithm_cls: Any = _allowed_class("algorithm", document["algorithm"])
        policies = {qualified_name(value): value for value in algorithm_cls.policy_aliases.values()}
        if document["policy"] not in policies:
            raise ValueError(
                f"refusing to construct {document['policy']!r} as the policy "
                f"of {algorithm_cls.__name__}: accepted: {sorted(policies)}"
            )
        policy_cls = policies[document["policy"]]
        policy: Any = next(
            (alias for alias, value in algorithm_cls.policy_aliases.items() if value is policy_cls),
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
        raise ValueError(f"{str(path)!r} holds a malformed SB3Agent state: {error!r}") from error
    return agent
