"""The MNIST reader: IDX parsing, gzip or not, md5 of the decompressed bytes, clear errors.

Files built here live in ``tmp_path``; the real MNIST files are read in place from
``../shared/data/mnist`` (relative to the repository root) and never copied into the repo.
"""

from __future__ import annotations

import gzip
import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest

from bam_rl.datasets import (
    MNIST_ENV,
    MNIST_FILES,
    download_mnist,
    find_mnist_file,
    load_mnist,
    mnist_directory,
    read_idx,
)

MNIST_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "mnist"
needs_mnist = pytest.mark.skipif(
    not all((MNIST_DIR / f"{spec.name}.gz").is_file() for spec in MNIST_FILES.values()),
    reason=f"the MNIST files are not in {MNIST_DIR} (see its README)",
)


def idx_bytes(array: np.ndarray, code: int = 0x08) -> bytes:
    """An IDX file holding ``array`` (magic 0, 0, type code, ndim; big-endian sizes)."""
    header = bytes([0, 0, code, array.ndim]) + np.asarray(array.shape, ">u4").tobytes()
    return header + array.tobytes()


def write(path: Path, data: bytes, compress: bool) -> Path:
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


@pytest.mark.parametrize("compress", [True, False])
def test_read_idx_gzipped_or_not_with_md5(tmp_path, compress):
    array = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    raw = idx_bytes(array)
    path = write(tmp_path / "small-idx3-ubyte", raw, compress)
    got = read_idx(path, hashlib.md5(raw).hexdigest())
    np.testing.assert_array_equal(got, array)
    assert got.dtype == np.uint8 and got.flags.writeable


def test_read_idx_other_types_are_native_endian(tmp_path):
    array = np.array([[1.5, -2.0], [3.25, 4.0]], dtype=">f4")
    got = read_idx(write(tmp_path / "floats", idx_bytes(array, 0x0D), True))
    assert got.dtype == np.dtype("float32") and got.dtype.isnative
    np.testing.assert_array_equal(got, array.astype(np.float32))


def test_wrong_md5_names_the_file(tmp_path):
    raw = idx_bytes(np.zeros((3, 2, 2), np.uint8))
    path = write(tmp_path / "t10k-images-idx3-ubyte.gz", raw, True)
    with pytest.raises(ValueError, match=r"t10k-images-idx3-ubyte\.gz.*md5"):
        read_idx(path, "0" * 32)


def test_truncated_gzip_names_the_file(tmp_path):
    raw = gzip.compress(idx_bytes(np.arange(200, dtype=np.uint8).reshape(2, 10, 10)))
    path = tmp_path / "train-labels-idx1-ubyte.gz"
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match=r"train-labels-idx1-ubyte\.gz.*corrupt gzip"):
        read_idx(path)


def test_header_size_mismatch_and_bad_magic(tmp_path):
    raw = idx_bytes(np.zeros((4, 3), np.uint8))
    short = write(tmp_path / "short", raw[:-2], False)
    with pytest.raises(ValueError, match=r"short.*declares shape \(4, 3\)"):
        read_idx(short)
    bad = write(tmp_path / "bad", b"\x01\x02" + raw[2:], False)
    with pytest.raises(ValueError, match="not an IDX file"):
        read_idx(bad)


def test_missing_file_names_it_and_where_to_get_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"train-images-idx3-ubyte\.gz.*download"):
        load_mnist(tmp_path)
    with pytest.raises(FileNotFoundError, match="IDX file not found"):
        read_idx(tmp_path / "nothing-here")
    with pytest.raises(ValueError, match="role"):
        find_mnist_file(tmp_path, "validation_images")


def test_directory_from_argument_or_environment(tmp_path, monkeypatch):
    monkeypatch.delenv(MNIST_ENV, raising=False)
    with pytest.raises(ValueError, match=MNIST_ENV):
        mnist_directory()
    monkeypatch.setenv(MNIST_ENV, str(tmp_path))
    assert mnist_directory() == tmp_path
    assert mnist_directory(tmp_path / "other") == tmp_path / "other"
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        load_mnist()


@needs_mnist
def test_real_mnist_loads_with_the_standard_counts():
    data = load_mnist(MNIST_DIR)
    assert data.train_images.shape == (60000, 28, 28) and data.train_images.dtype == np.uint8
    assert data.test_images.shape == (10000, 28, 28)
    counts = np.bincount(data.train_labels, minlength=10)
    np.testing.assert_array_equal(
        counts, [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    )
    assert data.test_labels.max() == 9 and data.train_images.max() == 255


def _mirror(tmp_path: Path, skip: str) -> Path:
    """A directory with links to the real files except ``skip`` (written by the test)."""
    folder = tmp_path / "mnist"
    folder.mkdir()
    for spec in MNIST_FILES.values():
        if spec.name != skip:
            (folder / f"{spec.name}.gz").symlink_to(MNIST_DIR / f"{spec.name}.gz")
    return folder


@needs_mnist
def test_uncompressed_file_loads_and_corrupt_file_is_named(tmp_path):
    name = MNIST_FILES["test_labels"].name
    raw = gzip.decompress((MNIST_DIR / f"{name}.gz").read_bytes())
    folder = _mirror(tmp_path, name)
    (folder / name).write_bytes(raw)  # the uncompressed IDX file
    data = load_mnist(folder)
    np.testing.assert_array_equal(
        np.bincount(data.test_labels, minlength=10),
        [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009],
    )
    altered = bytearray(raw)
    altered[100] = (altered[100] + 1) % 10  # one label changed
    (folder / name).unlink()
    (folder / f"{name}.gz").write_bytes(gzip.compress(bytes(altered)))
    with pytest.raises(ValueError, match=rf"{name}\.gz.*md5.*expected"):
        load_mnist(folder)
    load_mnist(folder, check_md5=False)  # the checksum is the only defence


@needs_mnist
def test_download_fetches_only_missing_files_and_checks_them(tmp_path):
    """Through a ``file://`` mirror: no network is used."""
    name = MNIST_FILES["test_labels"].name
    folder = _mirror(tmp_path, name)
    download_mnist(folder, mirrors=(MNIST_DIR.as_uri() + "/",))
    assert (folder / f"{name}.gz").is_file() and not (folder / f"{name}.gz").is_symlink()
    assert all(p.is_symlink() for p in folder.iterdir() if not p.name.startswith(name))
    assert not list(folder.glob(".*.tmp"))
    # a mirror serving a wrong file is refused, and nothing is left behind
    (folder / f"{name}.gz").unlink()
    bad = tmp_path / "bad"
    bad.mkdir()
    shutil.copy(MNIST_DIR / "train-labels-idx1-ubyte.gz", bad / f"{name}.gz")
    # (refused by its size before its md5 is computed: it holds 60000 labels, not 10000)
    with pytest.raises(OSError, match=rf"could not download {name}\.gz.*more than"):
        download_mnist(folder, mirrors=(bad.as_uri() + "/",))
    assert not (folder / f"{name}.gz").exists() and not list(folder.glob(".*.tmp"))
