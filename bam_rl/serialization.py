"""Saving and loading agents, rules and memories without pickle.

An object is written as an ``.npz`` archive: numeric arrays as entries, everything else as
one JSON document (loaded with ``allow_pickle=False``). Objects of this project's classes are
encoded from their attributes and rebuilt with ``cls.__new__`` — only classes from the
``bam_rl``, ``agents`` and ``envs`` packages are ever imported (classes *defined* there,
reached without walking through other modules), families must be conjugate families and bit
generators numpy bit generators, so a foreign or tampered file cannot run code; it raises
``ValueError``. Files are written atomically (temporary file, then
``os.replace``), so an interrupted save never leaves a half-written checkpoint, and carry the
SHA-256 of their content (:func:`archive_digest`): a file changed after it was written
(corrupted, or edited without recomputing the digest) is refused.

Limits (every breach is a ``ValueError``): before a byte is read, the path must be a regular
file (a FIFO, a device such as ``/dev/zero`` or a folder is refused; it is opened without
blocking and checked on the opened descriptor) of at most :func:`file_size_limit` bytes
(``max_bytes`` plus :data:`ARCHIVE_OVERHEAD`, and half the memory budget of
:func:`bam_rl.checks.memory_budget`: the file's bytes and its arrays are held at once), and
no more than that is ever read. The archive is then read by this module's own zip/npy
walk, which refuses entries that are compressed more than :data:`MAX_EXPANSION` times (a
1 MB file cannot become a 1 GiB array), arrays whose header claims more bytes than the entry
holds, more than ``max_bytes`` (:data:`MAX_BYTES`) of data in all, and JSON nested deeper
than :data:`MAX_DEPTH`. Nested objects are type-checked: an attribute that the class's
source declares (``self.memory = Memory(...)``, ``self.belief: NaturalParams``, or
``self.rule = rule`` from a parameter annotated ``rule: BeliefRule`` and never rebound) or
annotates at class level must hold an object of that class — the items of ``list[T]``,
``tuple[T, ...]`` and the values of ``dict[K, T]`` included — so a ``Memory`` swapped for
another project object does not load; objects of the run layer (``bam_rl.harness``,
``.experiments``, ``.cli``, ``.bench``, ``.drills``) are never state. Attributes a class
never declares are not refused (they are restored as data).
A class that defines ``_check_restored(self)`` has it called once its attributes are set (its
nested objects are restored, and checked, first); it validates every restored field as the
constructor validates its arguments, and raises ``ValueError`` for a state the class could not
have reached, so a crafted file is refused at load instead of failing (or crashing) later.

Encoded types: ``None``, ``bool``, ``int``, ``float``, ``str``, numpy arrays (not of object
dtype) and scalars, lists, tuples, dicts with string keys, ``numpy.random.Generator``,
conjugate families (by their constructor arguments), :class:`NaturalParams`, and objects of
this project's classes (by ``__dict__``/``__slots__``). Callables cannot be saved.

One module over the house's ~600 lines on purpose: the format, its encoder and its decoder
with every refusal (allow-list, digest, sizes, nested type checks) are read together when
judging whether a file can make the loader do anything but rebuild the saved objects.
"""

from __future__ import annotations

import ast
import builtins
import functools
import hashlib
import importlib
import inspect
import io
import json
import os
import stat
import sys
import textwrap
import types
import typing
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from bam_rl._io import atomic_path
from bam_rl.checks import format_bytes, memory_budget

FORMAT = "bam-rl-state/1"
ALLOWED_PREFIXES = ("bam_rl.",)
#: Files written before ``envs`` and ``agents`` installed as ``bam_rl.envs`` and
#: ``bam_rl.agents`` name their classes ``agents.…`` or ``envs.…``: such a name is read as the
#: ``bam_rl`` one, so old files load and no top-level ``agents`` or ``envs`` module (another
#: project's, on PyPI) is ever imported.
LEGACY_PREFIXES = {
    "agents.": "bam_rl.agents.",
    "envs.": "bam_rl.envs.",
    # the readout's modules before they became the package bam_rl.readout
    "bam_rl.fast_readout.": "bam_rl.readout.",
    "bam_rl.gaussian_readout.": "bam_rl.readout.",
    # the unknown-noise regression family before it moved to a module of its own
    "bam_rl.families.linear_regression.BayesianLinearRegressionNIG": (
        "bam_rl.families.linear_regression_nig.BayesianLinearRegressionNIG"
    ),
    # the simulator before it moved out of the dynamics module
    "bam_rl.agents.dynamics.SimulatorDynamics": "bam_rl.agents.simulator.SimulatorDynamics",
    # belief rules that lived beside their first user before bam_rl.beliefs was a package
    "bam_rl.agents.mppi.EpisodicBAM": "bam_rl.beliefs.EpisodicBAM",
    "bam_rl.segments.": "bam_rl.beliefs.",
}
#: Modules whose classes are never state (the run layer: sweeps, specs, the experiments, the
#: CLI, the benchmarks and the drills).
REFUSED_PREFIXES = (
    "bam_rl.harness.",
    "bam_rl.experiments.",
    "bam_rl.cli.",
    "bam_rl.bench.",
    "bam_rl.drills.",
)
#: Default bound on the bytes of all entries of an archive once read (1 GiB).
MAX_BYTES = 1 << 30
#: Bytes a state file may hold beyond ``max_bytes`` of entries: the zip archive's headers and
#: directory (16 MiB: about 100,000 entries).
ARCHIVE_OVERHEAD = 16 << 20
#: Largest accepted ratio of an entry's size to its compressed size (``np.savez`` stores
#: entries uncompressed, ratio 1; ``np.savez_compressed`` of real data stays far below).
MAX_EXPANSION = 32
#: Deepest accepted nesting of the JSON document.
MAX_DEPTH = 100
#: The bit generators a saved ``numpy.random.Generator`` may name.
BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")


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
                return {
                    "__items__": [
                        [self.encode(k, path), self.encode(v, f"{path}[{k!r}]")]
                        for k, v in value.items()
                    ]
                }
            return {"__dict__": {k: self.encode(v, f"{path}.{k}") for k, v in value.items()}}
        if isinstance(value, np.random.Generator):
            return {
                "__generator__": self.encode(value.bit_generator.state, path),
                "bit_generator": type(value.bit_generator).__name__,
            }
        if isinstance(value, ConjugateFamily):
            return {
                "__family__": qualified_name(type(value)),
                "kwargs": self.encode(value.init_kwargs, path),
            }
        if isinstance(value, NaturalParams):
            return {
                "__natural__": self.encode(value.family, path),
                "fields": self.encode(value.fields, path),
                "log_h": self.encode(np.asarray(value.log_h), path),
            }
        if inspect.isroutine(value) or isinstance(value, type):
            raise ValueError(f"cannot save the callable at {path}: {value!r}")
        cls = type(value)
        name = qualified_name(cls)
        if not name.startswith(ALLOWED_PREFIXES):
            raise ValueError(f"cannot save an object of type {name} at {path}")
        state = _object_state(value)
        return {
            "__object__": name,
            "state": {k: self.encode(v, f"{path}.{k}") for k, v in state.items()},
        }


def qualified_name(cls: type) -> str:
    """``module.QualName`` of a class, the form :func:`import_class` reads back."""
    return f"{cls.__module__}.{cls.__qualname__}"


def restore_generator(bit_generator: Any, state: Any) -> np.random.Generator:
    """A ``numpy.random.Generator`` whose bit generator (a ``numpy.random.BitGenerator``
    subclass named ``bit_generator``) is set to the saved ``state``.

    Raises:
        ValueError: If ``bit_generator`` is not one of :data:`BIT_GENERATORS` or ``state`` is
            not a valid state of it.
    """
    if not isinstance(bit_generator, str) or bit_generator not in BIT_GENERATORS:
        raise ValueError(f"unknown bit generator {bit_generator!r}; accepted: {BIT_GENERATORS}")
    cls = getattr(np.random, bit_generator)
    generator = np.random.Generator(cls())
    try:
        generator.bit_generator.state = state
    except (TypeError, ValueError, KeyError, OverflowError) as error:
        raise ValueError(f"invalid {bit_generator} state: {error!r}") from error
    return generator


def _object_state(value: Any) -> dict[str, Any]:
    state = dict(getattr(value, "__dict__", {}))
    for cls in type(value).__mro__:
        for slot in getattr(cls, "__slots__", ()):
            if hasattr(value, slot):
                state[slot] = getattr(value, slot)
    return state


def current_name(name: Any) -> Any:
    """A class name as this version spells it (:data:`LEGACY_PREFIXES`); other values as they
    are."""
    if isinstance(name, str):
        # in order: an old top-level name first becomes a bam_rl one, which may have moved
        for legacy, current in LEGACY_PREFIXES.items():
            if name.startswith(legacy):
                name = current + name[len(legacy) :]
    return name


def import_class(
    name: Any, prefixes: tuple[str, ...] = ALLOWED_PREFIXES, base: type | None = None
) -> type:
    """Imports a class by qualified name, only from modules under ``prefixes``.

    The name is trusted no further than its prefix: the attribute walk after the import never
    passes through a module object (``bam_rl.x.np.f2py.subprocess.Popen`` would otherwise
    reach any module a project module imports), and the class found must itself be defined
    in a module under ``prefixes``.

    Raises:
        ValueError: If ``name`` is outside ``prefixes``, unknown, not a class, defined outside
            ``prefixes``, or not a subclass of ``base``.
    """
    name = current_name(name)
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


# ---------------------------------------------------------------- nested type checks
# An expected type is a class, or ``(container, element classes)`` for ``list[X]``.
_Expected = tuple[Any, ...]


def _is_project_class(cls: Any) -> bool:
    return isinstance(cls, type) and f"{cls.__module__}.".startswith(ALLOWED_PREFIXES)


def _lookup(node: ast.expr, namespace: dict[str, Any]) -> Any:
    """The object a ``Name``/``Attribute`` chain names in ``namespace`` (no evaluation)."""
    if isinstance(node, ast.Name):
        if node.id in namespace:
            return namespace[node.id]
        return getattr(builtins, node.id, None)
    if isinstance(node, ast.Attribute):
        base = _lookup(node.value, namespace)
        return None if base is None else getattr(base, node.attr, None)
    return None


def _annotation(node: ast.expr | None, namespace: dict[str, Any]) -> _Expected | None:
    """The types an annotation allows, or ``None`` when it cannot be read (then unchecked)."""
    if node is None:
        return None
    if isinstance(node, ast.Constant):
        if node.value is None:
            return (type(None),)
        if isinstance(node.value, str):  # a forward reference
            try:
                return _annotation(ast.parse(node.value, mode="eval").body, namespace)
            except SyntaxError:
                return None
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = _annotation(node.left, namespace), _annotation(node.right, namespace)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.Subscript):
        origin = _lookup(node.value, namespace)
        arguments = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if origin is typing.Optional:
            inner = _annotation(arguments[0], namespace)
            return None if inner is None else (*inner, type(None))
        if origin is typing.Union:
            union: _Expected = ()
            for argument in arguments:
                part = _annotation(argument, namespace)
                if part is None:
                    return None
                union += part
            return union
        if origin in (list, typing.List):  # noqa: UP006 - reads old annotations too
            inner = _annotation(arguments[0], namespace)
            return ((list, inner),) if inner is not None else (list,)
        if origin in (tuple, typing.Tuple) and len(arguments) == 2:  # noqa: UP006
            # tuple[T, ...]: every item a T (fixed-length tuples are checked as tuples)
            ellipsis = isinstance(arguments[1], ast.Constant) and arguments[1].value is Ellipsis
            inner = _annotation(arguments[0], namespace) if ellipsis else None
            return ((tuple, inner),) if inner is not None else (tuple,)
        if origin in (dict, typing.Dict) and len(arguments) == 2:  # noqa: UP006
            inner = _annotation(arguments[1], namespace)  # the values (keys are strings)
            return ((dict, inner),) if inner is not None else (dict,)
        origin = typing.get_origin(origin) or origin
        return (origin,) if isinstance(origin, type) else None
    found = _lookup(node, namespace)
    if found is Any or found is typing.Any:
        return None
    if typing.get_origin(found) is not None:  # an alias such as Callable[[X], Y]: unchecked
        return None  # (Python 3.10 calls list[int] a type; isinstance would raise on it)
    return (found,) if isinstance(found, type) else None


def _assigned(node: ast.expr, namespace: dict[str, Any]) -> _Expected | None:
    """The type of a value assigned in source: ``None`` or a project-class constructor call."""
    if isinstance(node, ast.Constant) and node.value is None:
        return (type(None),)
    if isinstance(node, ast.Call):
        cls = _lookup(node.func, namespace)
        if _is_project_class(cls):
            return (cls,)
    return None


@functools.cache
def _attribute_types(cls: type) -> dict[str, _Expected]:
    """What each attribute of ``cls`` may hold, read from the source of its project classes.

    The rules mypy applies to the same source: an annotated attribute (``self.x: T = ...`` in
    a method, ``x: T`` in the class body) holds what ``T`` allows; an unannotated one holds
    the type of its first assignment in ``__init__`` when that is a project-class constructor
    call (``self.memory = Memory(...)``). A subclass's declarations override its bases'.
    Other attributes, and annotations that cannot be read, are not checked.
    """
    declared: dict[str, _Expected | None] = {}
    for klass in reversed(cls.__mro__):
        if not _is_project_class(klass):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        if not tree.body or not isinstance(tree.body[0], ast.ClassDef):
            continue
        namespace = dict(vars(sys.modules[klass.__module__]))
        body = tree.body[0].body
        inferred: dict[str, _Expected | None] = {}
        annotated: dict[str, _Expected | None] = {}
        for statement in body:
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                annotated[statement.target.id] = _annotation(statement.annotation, namespace)
        for function in body:
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            parameters = _parameter_types(function, namespace)
            for node in ast.walk(function):
                target = getattr(node, "target", None)
                targets = (
                    node.targets
                    if isinstance(node, ast.Assign)
                    else [target]
                    if target is not None
                    else []
                )
                for leaf in targets:
                    if not (
                        isinstance(leaf, ast.Attribute)
                        and isinstance(leaf.value, ast.Name)
                        and leaf.value.id == "self"
                    ):
                        continue
                    if isinstance(node, ast.AnnAssign):
                        annotated[leaf.attr] = _annotation(node.annotation, namespace)
                    elif (
                        function.name == "__init__"
                        and isinstance(node, ast.Assign)
                        and leaf.attr not in inferred
                    ):
                        inferred[leaf.attr] = (
                            parameters.get(node.value.id)
                            if isinstance(node.value, ast.Name)
                            else _assigned(node.value, namespace)
                        )
        for name, kind in inferred.items():
            if name not in annotated:
                declared[name] = kind
        declared.update(annotated)
    return {
        name: kind for name, kind in declared.items() if kind is not None and kind != (type(None),)
    }


def _parameter_types(
    function: ast.FunctionDef | ast.AsyncFunctionDef, namespace: dict[str, Any]
) -> dict[str, _Expected | None]:
    """Annotated parameters of ``function`` that its body never rebinds (so that
    ``self.x = parameter`` holds what the annotation allows)."""
    arguments = function.args
    annotated = {
        argument.arg: _annotation(argument.annotation, namespace)
        for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
        if argument.annotation is not None
    }
    for node in ast.walk(function):
        # any name stored to (assignment, for/with target, walrus, ...) is rebound
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            annotated.pop(node.id, None)
    return annotated


def _flatten(expected: _Expected) -> list[Any]:
    out: list[Any] = []
    for item in expected:
        if isinstance(item, tuple):
            out.append(item[0])
            out.extend(_flatten(item[1]))
        else:
            out.append(item)
    return out


def _fits(value: Any, expected: _Expected) -> bool:
    for item in expected:
        if isinstance(item, tuple):
            container, inner = item
            items = value.values() if isinstance(value, dict) else value
            if isinstance(value, container) and all(_fits(v, inner) for v in items):
                return True
        elif isinstance(item, type):
            if isinstance(value, item):
                return True
            if item is float and isinstance(value, int):  # the numeric tower
                return True
    return False


def _check_attribute(cls: type, name: str, value: Any) -> None:
    """Refuses an attribute whose value is of a type that ``cls`` never puts there."""
    expected = _attribute_types(cls).get(name)
    if expected is None:
        return
    checks_project = any(_is_project_class(k) for k in _flatten(expected))
    if not (checks_project or _is_project_class(type(value))):
        return  # plain data under a plain annotation: not checked (numbers, arrays, ...)
    if not _fits(value, expected):
        names = ", ".join(sorted({getattr(k, "__name__", str(k)) for k in _flatten(expected)}))
        raise ValueError(
            f"{cls.__name__}.{name} must hold {names}, the file holds a {type(value).__name__}"
        )


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
            kwargs = self.decode(value["kwargs"])
            if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
                raise ValueError(f"malformed arguments of the family {cls.__name__}")
            return cls(**kwargs)
        if "__natural__" in value:
            from bam_rl.families.base import ConjugateFamily, NaturalParams

            family = self.decode(value["__natural__"])
            if not isinstance(family, ConjugateFamily):
                raise ValueError(
                    f"natural parameters of a {type(family).__name__}, not of a conjugate family"
                )
            return NaturalParams(family, self.decode(value["fields"]), self.decode(value["log_h"]))
        if "__object__" in value:
            name = current_name(value["__object__"])
            if isinstance(name, str) and name.startswith(REFUSED_PREFIXES):  # before importing
                raise ValueError(f"refusing to load a {name}: the run layer is not saved state")
            cls = import_class(name)
            if f"{cls.__module__}.".startswith(REFUSED_PREFIXES):
                raise ValueError(
                    f"refusing to load a {qualified_name(cls)}: objects of the run "
                    "layer are not saved state"
                )
            state = value["state"]
            if not isinstance(state, dict):
                raise ValueError(f"malformed state of a {cls.__name__}")
            obj: Any = object.__new__(cls)
            for key, item in state.items():
                decoded = self.decode(item)
                _check_attribute(cls, key, decoded)
                object.__setattr__(obj, key, decoded)
            check_restored = getattr(cls, "_check_restored", None)
            if callable(check_restored):
                check_restored(obj)
            return obj
        raise ValueError(f"malformed state entry with keys {sorted(value)}")


def _check_depth(document: Any, limit: int = MAX_DEPTH) -> None:
    """Raises ``ValueError`` if ``document`` (parsed JSON) nests deeper than ``limit``."""
    stack = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > limit:
                raise ValueError(f"the JSON document nests deeper than {limit} levels")
            children = value.values() if isinstance(value, dict) else value
            stack.extend((child, depth + 1) for child in children)


def _read_npz(data: bytes, max_bytes: int) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` archive, read entry by entry within the limits.

    Each entry's npy header is read first: its array must fit in the bytes the entry holds,
    the entry must not expand more than :data:`MAX_EXPANSION` times its compressed size, the
    total must stay within ``max_bytes``, and object arrays are refused (no pickle).
    """
    arrays: dict[str, np.ndarray] = {}
    total = 0
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            if not info.filename.endswith(".npy"):
                raise ValueError(f"unexpected entry {info.filename!r} (not an .npy array)")
            key = info.filename[:-4]
            if key in arrays:
                raise ValueError(f"duplicate entry {info.filename!r}")
            compressed = max(info.compress_size, 1)
            if info.file_size > MAX_EXPANSION * compressed + 4096:
                raise ValueError(
                    f"entry {key!r} expands {info.file_size} bytes from "
                    f"{info.compress_size} (more than {MAX_EXPANSION}x)"
                )
            total += info.file_size
            if total > max_bytes:
                raise ValueError(f"the archive holds more than max_bytes={max_bytes} bytes")
            with archive.open(info) as stream:
                version = np.lib.format.read_magic(stream)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
                elif version == (2, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
                else:
                    raise ValueError(f"unsupported npy version {version} in entry {key!r}")
                if dtype.hasobject:
                    raise ValueError(f"entry {key!r} is an object array (refused: no pickle)")
                size = dtype.itemsize
                for dimension in shape:
                    size *= int(dimension)
                if size > info.file_size:
                    raise ValueError(
                        f"entry {key!r} claims a {shape} array of {size} bytes "
                        f"but holds {info.file_size}"
                    )
                array = np.frombuffer(stream.read(size), dtype=dtype, count=-1)
                if array.nbytes != size:
                    raise ValueError(f"entry {key!r} is truncated")
                if fortran and len(shape) > 1:
                    array = array.reshape(shape[::-1]).transpose()
                else:
                    array = array.reshape(shape)
                arrays[key] = array.copy()  # writable, owns its memory
    return arrays


def archive_digest(document: Any, arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 of a document (canonical JSON) and its arrays (name, dtype, shape, bytes)."""
    digest = hashlib.sha256(json.dumps(document, sort_keys=True).encode())
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"|{name}|{array.dtype.str}|{array.shape}|".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


#: The suffix of state files (added to a path without it, as ``np.savez`` does).
SUFFIX = ".npz"


def archive_path(path: str | os.PathLike[str]) -> Path:
    """The file :func:`write_archive` writes for ``path``: ``path`` with ``.npz`` appended
    unless it already ends in ``.npz``, as ``np.savez`` names its files (``"agent"`` ->
    ``agent.npz``, ``"agent.v1"`` -> ``agent.v1.npz``)."""
    path = Path(path)
    return path if path.name.endswith(SUFFIX) else path.with_name(path.name + SUFFIX)


def find_archive(path: str | os.PathLike[str]) -> Path:
    """The file :func:`read_archive` reads for ``path``: ``path`` itself if it exists (files
    written under another name before the suffix was added load as ever), else ``path``
    with ``.npz`` appended if that exists, else ``path`` (which then does not exist)."""
    path = Path(path)
    if path.exists():
        return path
    suffixed = archive_path(path)
    return suffixed if suffixed.exists() else path


def write_archive(
    path: str | os.PathLike[str], document: dict[str, Any], arrays: dict[str, np.ndarray]
) -> Path:
    """Writes ``arrays`` plus ``document`` (as the JSON entry ``__json__``) and their
    :func:`archive_digest` (``__digest__``) to an ``.npz`` archive atomically; returns the
    path written, :func:`archive_path` of ``path`` (``.npz`` appended unless present)."""
    entries = dict(arrays)
    entries["__json__"] = np.frombuffer(json.dumps(document).encode(), dtype=np.uint8)
    entries["__digest__"] = np.frombuffer(archive_digest(document, arrays).encode(), np.uint8)
    path = archive_path(path)
    with atomic_path(path) as temporary, open(temporary, "wb") as stream:
        np.savez(stream, **entries)  # type: ignore[arg-type]  # a stream: np.savez would append ".npz" to a file name
    return path


def file_size_limit(max_bytes: int = MAX_BYTES) -> int:
    """The most bytes a state file may hold: ``max_bytes`` of entries plus
    :data:`ARCHIVE_OVERHEAD`, and at most half of :func:`bam_rl.checks.memory_budget` (the
    file's bytes and the arrays read from them are held at once)."""
    budget, _ = memory_budget()
    return int(min(max_bytes + ARCHIVE_OVERHEAD, budget // 2))


_FILE_TYPES = {
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def _read_bounded(path: Path, kind: str, max_bytes: int) -> bytes:
    """The bytes of ``path``, refused (``ValueError``) before reading unless it is a regular
    file of at most :func:`file_size_limit` bytes; never reads more than that."""
    limit = file_size_limit(max_bytes)
    # O_NONBLOCK: opening a FIFO does not wait for a writer; the checks use the opened file
    handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        status = os.fstat(handle)
        if not stat.S_ISREG(status.st_mode):
            what = _FILE_TYPES.get(stat.S_IFMT(status.st_mode), "not a file")
            raise ValueError(
                f"path {str(path)!r} is not a regular file ({what}); a {kind} file is a "
                "regular .npz file"
            )
        if status.st_size > limit:
            raise ValueError(_too_big(path, kind, status.st_size, limit, max_bytes))
        chunks = []
        left = limit + 1
        while left > 0 and (chunk := os.read(handle, min(left, 1 << 24))):
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
    finally:
        os.close(handle)
    if len(data) > limit:  # it grew after the check
        raise ValueError(_too_big(path, kind, len(data), limit, max_bytes))
    return data


def _too_big(path: Path, kind: str, size: int, limit: int, max_bytes: int) -> str:
    budget, source = memory_budget()
    return (
        f"path {str(path)!r} holds {format_bytes(size)} ({size:,} bytes); a {kind} file may "
        f"hold at most {limit:,} bytes (max_bytes={max_bytes:,} plus "
        f"{format_bytes(ARCHIVE_OVERHEAD)} of archive overhead, and half the memory budget "
        f"of {format_bytes(budget)}: {source})"
    )


def read_archive(
    path: str | os.PathLike[str], fmt: str, kind: str, max_bytes: int = MAX_BYTES
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Reads an archive written by :func:`write_archive` without unpickling anything.

    Args:
        path: The archive: the file itself, or its name without ``.npz`` (:func:`find_archive`).
        fmt: The ``format`` entry its JSON document must carry.
        kind: What the file is, for messages (``"bam-rl state"``, ``"SB3Agent"``).
        max_bytes: Bound on the bytes of all entries once read (default :data:`MAX_BYTES`).

    Returns:
        The JSON document and the arrays (``__json__`` removed).

    Raises:
        ValueError: If the file is missing, not a regular file (a FIFO, a device, a folder),
            larger than :func:`file_size_limit`, unreadable, not an ``.npz`` with a JSON
            document, of another format, or beyond the limits (size, expansion, JSON depth).
            Nothing is read before the file's type and size are checked.
    """
    given = Path(path)
    path = find_archive(given)
    try:
        data = _read_bounded(path, kind, max_bytes)
    except FileNotFoundError as error:
        also = "" if archive_path(given) == given else f" (nor {str(archive_path(given))!r})"
        raise ValueError(f"path {str(path)!r} does not exist{also}") from error
    except OSError as error:
        raise ValueError(f"{str(path)!r} is not a readable {kind} file: {error}") from error
    try:
        arrays = _read_npz(data, max_bytes)
        if "__json__" not in arrays:
            raise ValueError("no JSON document (entry __json__)")
        document = json.loads(arrays.pop("__json__").tobytes().decode())
        _check_depth(document)
        stored = arrays.pop("__digest__", None)
    except Exception as error:  # untrusted bytes: every failure is a ValueError
        raise ValueError(
            f"{str(path)!r} is not a readable {kind} file: {type(error).__name__}: {error}"
        ) from error
    # files written before the digest existed have none (they are checked as ever)
    if stored is not None and stored.tobytes() != archive_digest(document, arrays).encode():
        raise ValueError(
            f"{str(path)!r} changed after it was written (its SHA-256 digest does not match): "
            f"a corrupted or edited {kind} file is not loaded"
        )
    if not isinstance(document, dict) or document.get("format") != fmt:
        raise ValueError(f"{str(path)!r} is not a {kind} file (format {fmt} expected)")
    return document, arrays


def save_object(obj: Any, path: str | os.PathLike[str]) -> Path:
    """Writes ``obj`` to ``path`` (an ``.npz`` archive; ``.npz`` is appended unless ``path``
    ends in it, as ``np.savez`` does) atomically; returns the path written."""
    encoder = _Encoder()
    document = {"format": FORMAT, "root": encoder.encode(obj, "root")}
    return write_archive(path, document, encoder.arrays)


def load_object(
    path: str | os.PathLike[str], expected: type | None = None, max_bytes: int = MAX_BYTES
) -> Any:
    """Reads an object written by :func:`save_object`.

    Args:
        path: The archive, with or without its ``.npz`` suffix (``load_object("agent")``
            reads ``agent`` if it exists, else ``agent.npz``).
        expected: If given, the loaded object must be an instance of this class.
        max_bytes: Bound on the bytes of all entries once read (default :data:`MAX_BYTES`).

    Raises:
        ValueError: If the file is missing, corrupted, beyond the limits, not a bam-rl state
            file, names a class outside this project, holds an object of another class than
            ``expected``, or a nested object of a type its owner never holds. Nothing else
            escapes: any failure while rebuilding the objects is reported as ``ValueError``.
    """
    path = find_archive(path)
    document, arrays = read_archive(path, FORMAT, "bam-rl state", max_bytes)
    try:
        obj = _Decoder(arrays).decode(document["root"])
    except ValueError as error:
        raise ValueError(f"{str(path)!r}: {error}") from error
    except Exception as error:  # e.g. a family refusing its saved arguments
        raise ValueError(f"{str(path)!r} holds a malformed state: {error!r}") from error
    if expected is not None and not isinstance(obj, expected):
        raise ValueError(
            f"{str(path)!r} holds a {type(obj).__name__}, expected {expected.__name__}"
        )
    return obj
