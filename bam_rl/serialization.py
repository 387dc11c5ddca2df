"""Saving and loading agents, rules and memories without pickle.

An object is written as an ``.npz`` archive: numeric arrays as entries, everything else as
one JSON document (loaded with ``allow_pickle=False``). Objects of this project's classes are
encoded from their attributes and rebuilt with ``cls.__new__`` — only classes from the
``bam_rl``, ``agents`` and ``envs`` packages are ever imported (classes *defined* there,
reached without walking through other modules), families must be conjugate families and bit
generators numpy bit generators, so a foreign or tampered file cannot run code; it raises
``ValueError``. Files are written atomically (temporary file, then
``os.replace``), so an interrupted save never leaves a half-written checkpoint.

Encoded types: ``None``, ``bool``, ``int``, ``float``, ``str``, numpy arrays (not of object
dtype) and scalars, lists, tuples, dicts with string keys, ``numpy.random.Generator``,
conjugate families (by their constructor arguments), :class:`NaturalParams`, and objects of
this project's classes (by ``__dict__``/``__slots__``). Callables cannot be saved.
"""

from __future__ import annotations

import importlib
import inspect
import io
import json
import os
import types
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from bam_rl._io import atomic_path

FORMAT = "bam-rl-state/1"
ALLOWED_PREFIXES = ("bam_rl.", "agents.", "envs.")


class _Encoder:
    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def encode(self, value: Any, path: str) -> Any:
        from bam_rl.families.base import ConjugateFamily, NaturalParams

        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, np.generic):
            if isinstance(value, float) and not np.isfinite(value):
                return {"__float__": repr(value)}
            return value
        if isinstance(value, np.generic):
            return self.encode(value.item(), path)
        if isinstance(value, np.ndarray):
            if value.dtype == object:
                raise ValueError(f"cannot save object array at {path}")
            key = f"a{len(self.arrays)}"
            # ascontiguousarray would turn 0-d arrays into 1-d ones
            self.arrays[key] = np.ascontiguousarray(value).reshape(value.shape)
            return {"__array__": key}
        if isinstance(value, (list, tuple)):
            items = [self.encode(v, f"{path}[{i}]") for i, v in enumerate(value)]
            return {"__list__": items, "tuple": isinstance(value, tuple)}
        if isinstance(value, dict):
            if not all(isinstance(k, str) for k in value):
                return {"__items__": [[self.encode(k, path), self.encode(v, f"{path}[{k!r}]")]
                                      for k, v in value.items()]}
            return {"__dict__": {k: self.encode(v, f"{path}.{k}") for k, v in value.items()}}
        if isinstance(value, np.random.Generator):
            return {"__generator__": self.encode(value.bit_generator.state, path),
                    "bit_generator": type(value.bit_generator).__name__}
        if isinstance(value, ConjugateFamily):
            return {"__family__": qualified_name(type(value)),
                    "kwargs": self.encode(value.init_kwargs, path)}
        if isinstance(value, NaturalParams):
            return {"__natural__": self.encode(value.family, path),
                    "fields": self.encode(value.fields, path),
                    "log_h": self.encode(np.asarray(value.log_h), path)}
        if inspect.isroutine(value) or isinstance(value, type):
            raise ValueError(f"cannot save the callable at {path}: {value!r}")
        cls = type(value)
        name = qualified_name(cls)
        if not name.startswith(ALLOWED_PREFIXES):
            raise ValueError(f"cannot save an object of type {name} at {path}")
        state = _object_state(value)
        return {"__object__": name,
                "state": {k: self.encode(v, f"{path}.{k}") for k, v in state.items()}}


def qualified_name(cls: type) -> str:
    """``module.QualName`` of a class, the form :func:`import_class` reads back."""
    return f"{cls.__module__}.{cls.__qualname__}"


def restore_generator(bit_generator: Any, state: Any) -> np.random.Generator:
    """A ``numpy.random.Generator`` whose bit generator (a ``numpy.random.BitGenerator``
    subclass named ``bit_generator``) is set to the saved ``state``.

    Raises:
        ValueError: If ``bit_generator`` names no ``BitGenerator`` subclass of ``numpy.random``.
    """
    cls = getattr(np.random, str(bit_generator), None)
    if not (isinstance(cls, type) and issubclass(cls, np.random.BitGenerator)):
        raise ValueError(f"unknown bit generator {bit_generator!r}")
    generator = np.random.Generator(cls())
    generator.bit_generator.state = state
    return generator


def _object_state(value: Any) -> dict[str, Any]:
    state = dict(getattr(value, "__dict__", {}))
    for cls in type(value).__mro__:
        for slot in getattr(cls, "__slots__", ()):
            if hasattr(value, slot):
                state[slot] = getattr(value, slot)
    return state


def import_class(name: Any, prefixes: tuple[str, ...] = ALLOWED_PREFIXES,
                 base: type | None = None) -> type:
    """Imports a class by qualified name, only from modules under ``prefixes``.

    The name is trusted no further than its prefix: the attribute walk after the import never
    passes through a module object (``bam_rl.x.np.f2py.subprocess.Popen`` would otherwise
    reach any module a project module imports), and the class found must itself be defined
    in a module under ``prefixes``.

    Raises:
        ValueError: If ``name`` is outside ``prefixes``, unknown, not a class, defined outside
            ``prefixes``, or not a subclass of ``base``.
    """
    if not isinstance(name, str) or not name.startswith(prefixes):
        raise ValueError(f"refusing to import {name!r}: not under {prefixes}")
    module_name, _, qualname = name.rpartition(".")
    while module_name:
        try:
            module = importlib.import_module(module_name)
            break
        except ImportError:
            module_name, _, head = module_name.rpartition(".")
            qualname = f"{head}.{qualname}"
    else:
        raise ValueError(f"unknown class {name!r}")
    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None or isinstance(obj, types.ModuleType):
            raise ValueError(f"refusing to import {name!r}: not a class defined under {prefixes}")
    if not isinstance(obj, type) or not f"{obj.__module__}.".startswith(prefixes):
        raise ValueError(f"refusing to import {name!r}: not a class defined under {prefixes}")
    if base is not None and not issubclass(obj, base):
        raise ValueError(f"{name!r} is not a {base.__name__}")
    return obj


class _Decoder:
    def __init__(self, arrays: dict[str, np.ndarray]):
        self.arrays = arrays

    def decode(self, value: Any) -> Any:
        if not isinstance(value, dict):
            if isinstance(value, list):
                raise ValueError("malformed state: bare list")
            return value
        if "__float__" in value:
            return float(value["__float__"])
        if "__array__" in value:
            return self.arrays[value["__array__"]]
        if "__list__" in value:
            items = [self.decode(v) for v in value["__list__"]]
            return tuple(items) if value.get("tuple") else items
        if "__dict__" in value:
            return {k: self.decode(v) for k, v in value["__dict__"].items()}
        if "__items__" in value:
            return {self.decode(k): self.decode(v) for k, v in value["__items__"]}
        if "__generator__" in value:
            return restore_generator(value["bit_generator"], self.decode(value["__generator__"]))
        if "__family__" in value:
            from bam_rl.families.base import ConjugateFamily

            cls = import_class(value["__family__"], base=ConjugateFamily)
            return cls(**self.decode(value["kwargs"]))
        if "__natural__" in value:
            from bam_rl.families.base import NaturalParams

            family = self.decode(value["__natural__"])
            return NaturalParams(family, self.decode(value["fields"]), self.decode(value["log_h"]))
        if "__object__" in value:
            cls = import_class(value["__object__"])
            obj: Any = object.__new__(cls)
            for key, item in value["state"].items():
                object.__setattr__(obj, key, self.decode(item))
            return obj
        raise ValueError(f"malformed state entry with keys {sorted(value)}")


def write_archive(path: str | os.PathLike[str], document: dict[str, Any],
                  arrays: dict[str, np.ndarray]) -> Path:
    """Writes ``arrays`` plus ``document`` (as the JSON entry ``__json__``) to an ``.npz``
    archive atomically; returns the path."""
    entries = dict(arrays)
    entries["__json__"] = np.frombuffer(json.dumps(document).encode(), dtype=np.uint8)
    path = Path(path)
    with atomic_path(path) as temporary, open(temporary, "wb") as stream:
        np.savez(stream, **entries)  # type: ignore[arg-type]  # a stream: np.savez would append ".npz" to a file name
    return path


def read_archive(path: str | os.PathLike[str], fmt: str, kind: str
                 ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Reads an archive written by :func:`write_archive` without unpickling anything.

    Args:
        path: The archive.
        fmt: The ``format`` entry its JSON document must carry.
        kind: What the file is, for messages (``"bam-rl state"``, ``"SB3Agent"``).

    Returns:
        The JSON document and the arrays (``__json__`` removed).

    Raises:
        ValueError: If the file is missing, unreadable, not an ``.npz`` with a JSON document,
            or of another format.
    """
    path = Path(path)
    try:
        with np.load(io.BytesIO(path.read_bytes()), allow_pickle=False) as archive:
            arrays = {key: archive[key] for key in archive.files}
        document = json.loads(arrays.pop("__json__").tobytes().decode())
    except FileNotFoundError as error:
        raise ValueError(f"path {str(path)!r} does not exist") from error
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile, UnicodeDecodeError
            ) as error:
        raise ValueError(f"{str(path)!r} is not a readable {kind} file: {error}") from error
    if not isinstance(document, dict) or document.get("format") != fmt:
        raise ValueError(f"{str(path)!r} is not a {kind} file (format {fmt} expected)")
    return document, arrays


def save_object(obj: Any, path: str | os.PathLike[str]) -> Path:
    """Writes ``obj`` to ``path`` (an ``.npz`` archive) atomically; returns the path."""
    encoder = _Encoder()
    document = {"format": FORMAT, "root": encoder.encode(obj, "root")}
    return write_archive(path, document, encoder.arrays)


def load_object(path: str | os.PathLike[str], expected: type | None = None) -> Any:
    """Reads an object written by :func:`save_object`.

    Args:
        path: The archive.
        expected: If given, the loaded object must be an instance of this class.

    Raises:
        ValueError: If the file is missing, corrupted, not a bam-rl state file, names a class
            outside this project, or holds an object of another class than ``expected``.
    """
    path = Path(path)
    document, arrays = read_archive(path, FORMAT, "bam-rl state")
    try:
        obj = _Decoder(arrays).decode(document["root"])
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{str(path)!r} holds a malformed state: {error}") from error
    if expected is not None and not isinstance(obj, expected):
        raise ValueError(
            f"{str(path)!r} holds a {type(obj).__name__}, expected {expected.__name__}")
    return obj
