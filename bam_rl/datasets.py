"""Datasets for the paper's experiments: the MNIST reader of rotated-MNIST (§4.4, App. D.2).

MNIST (LeCun, Cortes and Burges) is read from its four standard IDX files, gzipped or not,
from a directory the caller names (or the ``BAM_RL_MNIST`` environment variable). The md5 of
the *decompressed* bytes is checked against the published values, so a file re-compressed
with other ``gzip`` settings still loads, while a truncated or altered one is refused with a
``ValueError`` naming it. Files are decompressed in bounded chunks and never past the size
their header declares (at most the expected size of each MNIST file), so a gzip bomb is
refused after inflating no more than that. Nothing is downloaded unless ``download=True``
(``bam-rl reproduce mnist --download``) is asked for, and then only over HTTPS.

This is a core module: numpy and the standard library only.

Examples:
    >>> data = load_mnist("../shared/data/mnist")              # doctest: +SKIP
    >>> data.train_images.shape, data.train_images.dtype       # doctest: +SKIP
    ((60000, 28, 28), dtype('uint8'))
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import math
import os
import urllib.error
import urllib.parse
import urllib.request
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from bam_rl._io import atomic_path
from bam_rl.checks import check_memory

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

#: Where the four ``.gz`` files can be downloaded (tried in order; HTTPS only).
MNIST_MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
)

_WHERE = (
    "download the four standard MNIST files (train-images-idx3-ubyte.gz, "
    "train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz) "
    f"from {MNIST_MIRRORS[0]}, or let bam-rl fetch them where a network is available: "
    "`bam-rl reproduce mnist --data DIR --download` (in Python, "
    "load_mnist(DIR, download=True))"
)
_CHUNK = 1 << 20  # bytes read or inflated at a time
# schemes a mirror may use: HTTPS, or a local file: address (no network)
_MIRROR_SCHEMES = ("https", "file")

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

    @property
    def nbytes(self) -> int:
        """Size of the decompressed IDX file: its header and one byte per entry."""
        return 4 + 4 * len(self.shape) + math.prod(self.shape)


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


@contextlib.contextmanager
def _open_idx(path: Path) -> Iterator[tuple[BinaryIO, bool]]:
    """The file's decompressed byte stream (gunzipped in bounded chunks when it starts with
    the gzip magic number) and whether it is gzipped."""
    with open(path, "rb") as raw:
        gzipped = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        if not gzipped:
            yield raw, False
            return
        with gzip.GzipFile(fileobj=raw, mode="rb") as stream:
            yield stream, True  # type: ignore[misc]  # a GzipFile reads bytes like the file


def _read_body(stream: BinaryIO, size: int, digest: Any) -> bytearray:
    """Up to ``size`` bytes of ``stream``, read (and hashed) ``_CHUNK`` bytes at a time."""
    body = bytearray()
    while len(body) < size:
        chunk = stream.read(min(_CHUNK, size - len(body)))
        if not chunk:
            break
        body += chunk
        digest.update(chunk)
    return body


def read_idx(
    path: str | os.PathLike[str], md5: str | None = None, *, max_bytes: int | None = None
) -> np.ndarray:
    """Reads one IDX file (gzipped or not) into a numpy array.

    The header is read first; the file is then decompressed in chunks of 1 MiB up to the
    size the header declares (one byte more tells a longer file), so a gzip bomb inflates
    no further than that size, and a header declaring more than ``max_bytes`` (or than the
    memory budget, :func:`bam_rl.checks.memory_budget`) is refused before the data are read.

    Args:
        path: The file.
        md5: Expected md5 (hex) of the decompressed bytes; ``None`` skips the check.
        max_bytes: Largest decompressed size accepted (header included); ``None``: the
            memory budget.

    Returns:
        The array, with the dtype and shape the header declares (native byte order).

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        ValueError: If the checksum differs, the archive is corrupt, or the header does not
            describe the bytes that follow, or declares more than ``max_bytes``; the message
            names the file.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"IDX file not found: {path}; {_WHERE}")
    digest = hashlib.md5()
    try:
        with _open_idx(path) as (stream, gzipped):
            magic = stream.read(4)
            digest.update(magic)
            if len(magic) < 4 or magic[0] != 0 or magic[1] != 0 or magic[2] not in _IDX_TYPES:
                raise ValueError(f"{path}: not an IDX file (bad magic number {magic!r})")
            dtype, ndim = _IDX_TYPES[magic[2]], magic[3]
            sizes = stream.read(4 * ndim)
            digest.update(sizes)
            if ndim == 0 or len(sizes) < 4 * ndim:
                raise ValueError(f"{path}: truncated IDX header")
            shape = tuple(int(v) for v in np.frombuffer(sizes, dtype=">u4"))
            header = 4 + 4 * ndim
            expected = header + math.prod(shape) * dtype.itemsize
            if max_bytes is not None and expected > max_bytes:
                raise ValueError(
                    f"{path}: IDX header declares shape {shape} ({expected:,} bytes), more "
                    f"than the {max_bytes:,} bytes expected of this file; {_WHERE}"
                )
            check_memory(f"{path}: the IDX header's shape {shape}", expected)
            if not gzipped and path.stat().st_size != expected:
                raise ValueError(
                    f"{path}: IDX header declares shape {shape} ({expected} bytes) but "
                    f"the file holds {path.stat().st_size} bytes"
                )
            body = _read_body(stream, expected - header, digest)
            if len(body) < expected - header:
                raise ValueError(
                    f"{path}: IDX header declares shape {shape} ({expected} bytes) but "
                    f"the file holds {header + len(body)} bytes"
                )
            if stream.read(1):
                raise ValueError(
                    f"{path}: IDX header declares shape {shape} ({expected} bytes) but the "
                    "file holds more (reading stopped there: a gzip bomb, or another file)"
                )
    except (OSError, EOFError, zlib.error) as error:  # truncated or corrupt archive
        raise ValueError(f"{path}: corrupt gzip archive ({error}); {_WHERE}") from error
    if md5 is not None and digest.hexdigest() != md5.lower():
        raise ValueError(
            f"{path}: md5 of the decompressed bytes is {digest.hexdigest()}, expected "
            f"{md5} (a truncated or altered file?); {_WHERE}"
        )
    array = np.frombuffer(body, dtype=dtype).reshape(shape)  # writeable: a bytearray's
    return array if dtype.isnative else array.astype(dtype.newbyteorder("="))


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


class _HTTPSOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Follows redirects to HTTPS addresses only (no downgrade to plain HTTP)."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        if urllib.parse.urlsplit(newurl).scheme != "https":
            raise urllib.error.HTTPError(
                req.full_url, code, f"refused a redirect to {newurl} (not HTTPS)", headers, fp
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _open_url(url: str, timeout: float) -> Any:
    """The response for ``url`` (HTTPS, or a local ``file:`` address; redirects to HTTPS
    only)."""
    opener = urllib.request.build_opener(_HTTPSOnlyRedirects)
    return opener.open(url, timeout=timeout)


def _check_mirrors(mirrors: Any) -> tuple[str, ...]:
    if isinstance(mirrors, str) or not isinstance(mirrors, (tuple, list)) or not mirrors:
        raise ValueError(f"mirrors must be a non-empty sequence of addresses, got {mirrors!r}")
    for mirror in mirrors:
        scheme = urllib.parse.urlsplit(mirror).scheme if isinstance(mirror, str) else None
        if scheme not in _MIRROR_SCHEMES:
            raise ValueError(
                f"mirrors must be https:// addresses (or local file: ones); plain HTTP and "
                f"other schemes are refused, got {mirror!r}"
            )
    return tuple(mirrors)


def _fetch(url: str, destination: Path, spec: MNISTFile, timeout: float) -> None:
    """Downloads ``url`` into ``destination`` atomically after checking what it holds: at
    most the gzipped file's possible size is accepted, then :func:`read_idx` checks the
    header, the size and the md5 (nothing is left behind when any check fails)."""
    limit = spec.nbytes + spec.nbytes // 100 + 4096  # gzip never grows data by more
    with _open_url(url, timeout) as response, atomic_path(destination) as temporary:
        declared = response.headers.get("Content-Length") if response.headers else None
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise ValueError(f"the server announces {int(declared):,} bytes, more than {limit:,}")
        received = 0
        with open(temporary, "wb") as handle:
            while chunk := response.read(_CHUNK):
                received += len(chunk)
                if received > limit:
                    raise ValueError(f"the server sent more than {limit:,} bytes")
                handle.write(chunk)
        read_idx(temporary, spec.md5, max_bytes=spec.nbytes)


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


def download_mnist(
    directory: str | os.PathLike[str],
    mirrors: tuple[str, ...] = MNIST_MIRRORS,
    timeout: float = 60.0,
) -> None:
    """Downloads the missing standard files into ``directory`` (md5-checked, atomic writes).

    Only files not already present are fetched, over HTTPS (a redirect to plain HTTP is
    refused); every download is verified (size, header, md5 of the decompressed bytes)
    before it is moved into place with the permissions the umask gives new files. When
    nothing could be fetched, a ``directory`` this call created is removed again, so a
    failed download leaves no files behind.

    Args:
        directory: Where the ``.gz`` files go (created if needed).
        mirrors: Base addresses tried in order: ``https://`` (or local ``file:``) only.
        timeout: Seconds to wait for each server.

    Raises:
        ValueError: For a mirror that is not an HTTPS (or ``file:``) address.
        OSError: If a file cannot be fetched from any mirror; the one-line message names
            the file and each mirror's reason.
    """
    mirrors = _check_mirrors(mirrors)
    directory = Path(directory)
    created = [folder for folder in (directory, *directory.parents) if not folder.exists()]
    directory.mkdir(parents=True, exist_ok=True)
    fetched = 0
    try:
        for role, spec in MNIST_FILES.items():
            try:
                find_mnist_file(directory, role)
                continue
            except FileNotFoundError:
                pass
            errors = []
            for mirror in mirrors:
                url = f"{mirror}{spec.name}.gz"
                try:
                    _fetch(url, directory / f"{spec.name}.gz", spec, timeout)
                    fetched += 1
                    break
                except (OSError, ValueError) as error:
                    errors.append(f"{url}: {_one_line(error)}")
            else:
                raise OSError(
                    f"could not download {spec.name}.gz from any of {len(mirrors)} "
                    "mirror(s): " + "; ".join(errors)
                )
    except OSError:
        if not fetched:
            for folder in created:  # deepest first; only folders this call made, if empty
                with contextlib.suppress(OSError):
                    folder.rmdir()
        raise


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
            never done unless asked; see :func:`download_mnist`).
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
        array = read_idx(path, spec.md5 if check_md5 else None, max_bytes=spec.nbytes)
        if array.shape != spec.shape or array.dtype != np.uint8:
            raise ValueError(
                f"{path}: expected a uint8 array of shape {spec.shape}, got "
                f"{array.dtype} {array.shape}"
            )
        arrays[role] = array
    return MNIST(**arrays)
