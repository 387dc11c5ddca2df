"""Datasets for the paper's experiments: the MNIST reader of rotated-MNIST (§4.4, App. D.2).

MNIST (LeCun, Cortes and Burges) is read from its four standard IDX files, gzipped or not,
from a directory the caller names (or the ``BAM_RL_MNIST`` environment variable). The md5 of
the *decompressed* bytes is checked against the published values, so a file re-compressed
with other ``gzip`` settings still loads, while a truncated or altered one is refused with a
``ValueError`` naming it. Nothing is downloaded unless ``download=True`` is passed explicitly.

This is a core module: numpy and the standard library only.

Example:
    >>> data = load_mnist("../shared/data/mnist")              # doctest: +SKIP
    >>> data.train_images.shape, data.train_images.dtype       # doctest: +SKIP
    ((60000, 28, 28), dtype('uint8'))
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "MNIST",
    "MNIST_ENV",
    "MNIST_FILES",
    "MNIST_MIRRORS",
    "MNISTFile",
    "download_mnist",
    "find_mnist_file",
    "load_mnist",
    "mnist_directory",
    "read_idx",
]

#: Environment variable naming the MNIST directory when no directory is passed.
MNIST_ENV = "BAM_RL_MNIST"

#: Where the four ``.gz`` files can be downloaded (tried in order).
MNIST_MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
    "http://yann.lecun.com/exdb/mnist/",
)

_WHERE = (
    "download the four standard MNIST files (train-images-idx3-ubyte.gz, "
    "train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz) "
    f"from {MNIST_MIRRORS[0]} or http://yann.lecun.com/exdb/mnist/, or call "
    "load_mnist(..., download=True) where a network is available"
)

# IDX type codes -> numpy dtypes (big-endian, as the format stores them)
_IDX_TYPES: dict[int, np.dtype] = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


@dataclass(frozen=True)
class MNISTFile:
    """One of the four standard files.

    Attributes:
        name: File name without ``.gz`` (the decompressed IDX file).
        md5: md5 of the decompressed bytes.
        shape: Shape of the array it holds.
    """

    name: str
    md5: str
    shape: tuple[int, ...]


#: The four standard files, keyed by role; md5 of the *decompressed* IDX bytes.
MNIST_FILES: dict[str, MNISTFile] = {
    "train_images": MNISTFile(
        "train-images-idx3-ubyte", "6bbc9ace898e44ae57da46a324031adb", (60000, 28, 28)
    ),
    "train_labels": MNISTFile(
        "train-labels-idx1-ubyte", "a25bea736e30d166cdddb491f175f624", (60000,)
    ),
    "test_images": MNISTFile(
        "t10k-images-idx3-ubyte", "2646ac647ad5339dbf082846283269ea", (10000, 28, 28)
    ),
    "test_labels": MNISTFile(
        "t10k-labels-idx1-ubyte", "27ae3e4e09519cfbb04c329615203637", (10000,)
    ),
}


@dataclass(frozen=True)
class MNIST:
    """The MNIST arrays: images ``uint8 (n, 28, 28)`` and labels ``uint8 (n,)``."""

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray


def _decompressed_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped when it starts with the gzip magic number."""
    with open(path, "rb") as handle:
        raw = handle.read()
    if raw[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError, ValueError) as error:  # truncated or corrupt archive
            raise ValueError(f"{path}: corrupt gzip archive ({error}); {_WHERE}") from error
    return raw


def read_idx(path: str | os.PathLike[str], md5: str | None = None) -> np.ndarray:
    """Reads one IDX file (gzipped or not) into a numpy array.

    Args:
        path: The file.
        md5: Expected md5 (hex) of the decompressed bytes; ``None`` skips the check.

    Returns:
        The array, with the dtype and shape the header declares (native byte order).

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        ValueError: If the checksum differs, the archive is corrupt, or the header does not
            describe the bytes that follow; the message names the file.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"IDX file not found: {path}; {_WHERE}")
    data = _decompressed_bytes(path)
    if md5 is not None:
        digest = hashlib.md5(data).hexdigest()
        if digest != md5.lower():
            raise ValueError(
                f"{path}: md5 of the decompressed bytes is {digest}, expected "
                f"{md5} (a truncated or altered file?); {_WHERE}"
            )
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_TYPES:
        raise ValueError(f"{path}: not an IDX file (bad magic number {data[:4]!r})")
    dtype = _IDX_TYPES[data[2]]
    ndim = data[3]
    header = 4 + 4 * ndim
    if ndim == 0 or len(data) < header:
        raise ValueError(f"{path}: truncated IDX header")
    shape = tuple(int(v) for v in np.frombuffer(data, dtype=">u4", count=ndim, offset=4))
    expected = header + int(np.prod(shape)) * dtype.itemsize
    if len(data) != expected:
        raise ValueError(
            f"{path}: IDX header declares shape {shape} ({expected} bytes) but "
            f"the file holds {len(data)} bytes"
        )
    array = np.frombuffer(data, dtype=dtype, offset=header).reshape(shape)
    return array.astype(dtype.newbyteorder("="), copy=True)


def mnist_directory(directory: str | os.PathLike[str] | None = None) -> Path:
    """The directory to read MNIST from: ``directory``, else ``$BAM_RL_MNIST``.

    Raises:
        ValueError: If neither is given.
    """
    if directory is None:
        directory = os.environ.get(MNIST_ENV) or None
    if directory is None:
        raise ValueError(
            f"no MNIST directory: pass one (e.g. --data DIR) or set the "
            f"{MNIST_ENV} environment variable; {_WHERE}"
        )
    return Path(directory).expanduser()


def find_mnist_file(directory: str | os.PathLike[str], role: str) -> Path:
    """Path of the file for ``role`` (a key of :data:`MNIST_FILES`) in ``directory``:
    ``<name>.gz`` if present, else the uncompressed ``<name>``.

    Raises:
        ValueError: For an unknown role.
        FileNotFoundError: If neither file exists; the message names both and where to get
            them.
    """
    if role not in MNIST_FILES:
        raise ValueError(f"role must be one of {sorted(MNIST_FILES)}, got {role!r}")
    directory = Path(directory)
    name = MNIST_FILES[role].name
    for candidate in (directory / f"{name}.gz", directory / name):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"MNIST file {name}.gz (or {name}) not found in {directory}; {_WHERE}")


def download_mnist(
    directory: str | os.PathLike[str],
    mirrors: tuple[str, ...] = MNIST_MIRRORS,
    timeout: float = 60.0,
) -> None:
    """Downloads the missing standard files into ``directory`` (md5-checked, atomic writes).

    Only files not already present are fetched; every download is verified against the md5 of
    its decompressed bytes before it is moved into place.

    Raises:
        OSError: If a file cannot be fetched from any mirror.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for role, spec in MNIST_FILES.items():
        try:
            find_mnist_file(directory, role)
            continue
        except FileNotFoundError:
            pass
        errors = []
        for mirror in mirrors:
            url = f"{mirror}{spec.name}.gz"
            handle, name = tempfile.mkstemp(dir=directory, prefix=f".{spec.name}.", suffix=".tmp")
            os.close(handle)
            temporary = Path(name)
            try:
                with urllib.request.urlopen(url, timeout=timeout) as response:
                    temporary.write_bytes(response.read())
                read_idx(temporary, spec.md5)
                os.replace(temporary, directory / f"{spec.name}.gz")
                break
            except (OSError, ValueError) as error:
                errors.append(f"{url}: {error}")
            finally:
                with contextlib.suppress(FileNotFoundError):
                    temporary.unlink()
        else:
            raise OSError(f"could not download {spec.name}.gz: " + "; ".join(errors))


def load_mnist(
    directory: str | os.PathLike[str] | None = None,
    *,
    download: bool = False,
    check_md5: bool = True,
) -> MNIST:
    """Reads the four MNIST files.

    Args:
        directory: Folder holding the files (``.gz`` or uncompressed); defaults to
            ``$BAM_RL_MNIST``.
        download: Fetch missing files from :data:`MNIST_MIRRORS` first (needs a network;
            never done unless asked).
        check_md5: Verify the md5 of each file's decompressed bytes.

    Returns:
        An :class:`MNIST` with ``uint8`` arrays.

    Raises:
        FileNotFoundError: If a file is missing (the message names it and where to get it).
        ValueError: If no directory is given or a file is corrupt or has the wrong shape.
    """
    folder = mnist_directory(directory)
    if download:
        download_mnist(folder)
    arrays = {}
    for role, spec in MNIST_FILES.items():
        path = find_mnist_file(folder, role)
        array = read_idx(path, spec.md5 if check_md5 else None)
        if array.shape != spec.shape or array.dtype != np.uint8:
            raise ValueError(
                f"{path}: expected a uint8 array of shape {spec.shape}, got "
                f"{array.dtype} {array.shape}"
            )
        arrays[role] = array
    return MNIST(**arrays)
