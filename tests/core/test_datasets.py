"""The MNIST reader: IDX parsing, gzip or not, md5 of the decompressed bytes, clear errors.

Files built here live in ``tmp_path``; the real MNIST files are read in place from
``$BAM_RL_MNIST``, else ``../shared/data/mnist`` (relative to the repository root), and never
copied into the repo; the tests that need them skip without, saying how to get them.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import urllib.error
import urllib.request
import zlib
from pathlib import Path

import numpy as np
import pytest

from bam_rl.datasets import (
    MNIST_ENV,
    MNIST_FILES,
    MNIST_MIRRORS,
    download_mnist,
    find_mnist_file,
    load_mnist,
    mnist_directory,
    read_idx,
)

#: The real MNIST files: ``$BAM_RL_MNIST`` when set, else a workspace's shared data folder
#: beside the repository (``../shared/data/mnist``; a clone of its own has none).
MNIST_DIR = Path(
    os.environ.get(MNIST_ENV)
    or Path(__file__).resolve().parents[2].parent / "shared" / "data" / "mnist"
)
_GZ_NAMES = ", ".join(f"{spec.name}.gz" for spec in MNIST_FILES.values())
needs_mnist = pytest.mark.skipif(
    not all((MNIST_DIR / f"{spec.name}.gz").is_file() for spec in MNIST_FILES.values()),
    reason=(
        f"the four MNIST files ({_GZ_NAMES}) are not in {MNIST_DIR}: download them from "
        f"{MNIST_MIRRORS[0]} into a folder and set {MNIST_ENV} to it (or let `bam-rl "
        f"reproduce mnist --data DIR --download` fetch them)"
    ),
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


# ------------------------------------------------------------- issue 28, item 6 (and 26, 27)
def _bomb(path: Path, header: bytes, inflated: int) -> Path:
    """A gzip file of ``header`` then ``inflated`` zero bytes, written without ever holding
    them (about 1 MB per GiB)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip container
    block = bytes(1 << 20)
    with open(path, "wb") as handle:
        handle.write(compressor.compress(header))
        for _ in range(inflated >> 20):
            handle.write(compressor.compress(block))
        handle.write(compressor.flush())
    return path


_RSS_PROBE = """
import resource, sys
from bam_rl.datasets import load_mnist, read_idx
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    load_mnist(sys.argv[1]) if sys.argv[2] == "load" else read_idx(sys.argv[1])
    outcome = "accepted"
except ValueError as error:
    outcome = str(error).splitlines()[0][:300]
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) // 1024)  # MiB of peak RSS the read added
print(outcome)
"""


def _rss_growth(*argv: str) -> tuple[int, str]:
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", _RSS_PROBE, *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    growth, outcome = result.stdout.strip().splitlines()
    return int(growth), outcome


def test_a_gzip_bomb_is_refused_before_it_inflates(tmp_path):
    """Reproducer: a 1 MB file inflating to 1 GiB was refused only after +2 GB of RSS. Here
    256 MiB of zeros after a valid labels header: the reader stops at the expected size."""
    spec = MNIST_FILES["test_labels"]
    folder = tmp_path / "mnist"
    folder.mkdir()
    header = bytes([0, 0, 8, 1]) + np.asarray([10000], ">u4").tobytes()
    _bomb(folder / f"{spec.name}.gz", header, 256 << 20)
    assert (folder / f"{spec.name}.gz").stat().st_size < 2 << 20
    for role, other in MNIST_FILES.items():  # the other files: small valid stand-ins
        if role != "test_labels":
            (folder / other.name).write_bytes(idx_bytes(np.zeros((2,), np.uint8)))
    growth, outcome = _rss_growth(str(folder / f"{spec.name}.gz"), "read")
    assert "holds more" in outcome and spec.name in outcome
    assert growth < 32, f"reading the bomb added {growth} MiB of RSS"
    # a header declaring far more than an MNIST file holds is refused before reading on
    forged = bytes([0, 0, 8, 3]) + np.asarray([60000, 2800, 2800], ">u4").tobytes()
    _bomb(folder / f"{MNIST_FILES['train_images'].name}.gz", forged, 64 << 20)
    (folder / MNIST_FILES["train_images"].name).unlink()
    growth, outcome = _rss_growth(str(folder), "load")
    assert "more than the 47,040,016 bytes expected" in outcome
    assert growth < 32, f"reading the forged file added {growth} MiB of RSS"


def test_read_idx_stops_at_the_declared_size_and_at_max_bytes(tmp_path):
    raw = idx_bytes(np.arange(12, dtype=np.uint8).reshape(3, 4))
    longer = write(tmp_path / "longer.gz", raw + b"\x00" * 5, True)
    with pytest.raises(ValueError, match=r"longer\.gz.*declares shape \(3, 4\).*holds more"):
        read_idx(longer)
    exact = write(tmp_path / "exact.gz", raw, True)
    np.testing.assert_array_equal(read_idx(exact, max_bytes=len(raw)).ravel(), np.arange(12))
    with pytest.raises(ValueError, match=r"declares shape \(3, 4\) \(24 bytes\), more than"):
        read_idx(exact, max_bytes=len(raw) - 1)
    # a header claiming more than the memory budget is refused before any body is read
    huge = write(
        tmp_path / "huge", bytes([0, 0, 8, 2]) + np.asarray([2**31, 2**31], ">u4").tobytes(), False
    )
    with pytest.raises(ValueError, match=r"header's shape \(2147483648, 2147483648\) would need"):
        read_idx(huge)


def _fake_mnist(tmp_path: Path, monkeypatch) -> Path:
    """Small stand-ins for the four files (md5s patched in) in a ``file:`` mirror."""
    from bam_rl import datasets

    mirror = tmp_path / "mirror"
    mirror.mkdir()
    fake = {}
    for role, spec in MNIST_FILES.items():
        raw = idx_bytes(np.full((3, 2), len(role), np.uint8))
        (mirror / f"{spec.name}.gz").write_bytes(gzip.compress(raw))
        fake[role] = datasets.MNISTFile(spec.name, hashlib.md5(raw).hexdigest(), (3, 2))
    monkeypatch.setattr(datasets, "MNIST_FILES", fake)
    return mirror


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_downloaded_files_follow_the_umask(tmp_path, monkeypatch, mask):
    """Reproducer: downloads landed 0600 whatever the umask."""
    mirror = _fake_mnist(tmp_path, monkeypatch)
    previous = os.umask(mask)
    try:
        download_mnist(tmp_path / "data", mirrors=(mirror.as_uri() + "/",))
    finally:
        os.umask(previous)
    files = sorted((tmp_path / "data").iterdir())
    assert len(files) == 4 and not any(p.name.startswith(".") for p in files)
    assert {stat.S_IMODE(p.stat().st_mode) for p in files} == {0o666 & ~mask}


def test_mirrors_are_https_only(tmp_path):
    """Reproducer: one default mirror was plain HTTP."""
    from bam_rl import datasets

    assert all(m.startswith("https://") for m in datasets.MNIST_MIRRORS)
    assert "http://" not in datasets._WHERE
    for bad in ("http://yann.lecun.com/exdb/mnist/", "ftp://example.org/", "mnist/"):
        with pytest.raises(ValueError, match="https"):
            download_mnist(tmp_path / "data", mirrors=(bad,))
    assert not (tmp_path / "data").exists()
    handler = datasets._HTTPSOnlyRedirects()
    request = urllib.request.Request("https://example.org/a.gz")
    with pytest.raises(urllib.error.HTTPError, match="not HTTPS"):
        handler.redirect_request(request, None, 302, "Found", {}, "http://example.org/a.gz")
    followed = handler.redirect_request(request, None, 302, "Found", {}, "https://b.org/a.gz")
    assert followed is not None and followed.full_url == "https://b.org/a.gz"


def _offline(monkeypatch) -> list[str]:
    """No network: every address urllib opens fails as an unreachable host would."""
    tried: list[str] = []

    def unreachable(self, url, data=None, timeout=None):
        tried.append(getattr(url, "full_url", url))
        raise urllib.error.URLError(OSError(101, "Network is unreachable"))

    monkeypatch.setattr(urllib.request.OpenerDirector, "open", unreachable)
    return tried


def test_offline_download_is_one_line_and_leaves_no_files(tmp_path, monkeypatch):
    tried = _offline(monkeypatch)
    target = tmp_path / "new" / "mnist"
    with pytest.raises(OSError) as info:
        download_mnist(target)
    message = str(info.value)
    assert "\n" not in message and "could not download" in message
    assert "Network is unreachable" in message and len(tried) == 2
    assert not (tmp_path / "new").exists()  # the folders it made are gone again
    existing = tmp_path / "existing"
    existing.mkdir()
    with pytest.raises(OSError):
        download_mnist(existing)
    assert existing.is_dir() and not any(existing.iterdir())  # kept, and empty


def test_cli_download_offline_is_one_line_nonzero_and_no_files(tmp_path, monkeypatch, capsys):
    """Issues 26 and 27: `bam-rl reproduce mnist --quick --download --data DIR` offline."""
    from bam_rl.cli import main

    _offline(monkeypatch)
    data, out = tmp_path / "data", tmp_path / "results"
    argv = ["reproduce", "mnist", "--quick", "--download", "--data", str(data)]
    with pytest.raises(SystemExit) as info:
        main([*argv, "--out", str(out), "--no-progress"])
    assert info.value.code not in (0, None)
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "could not download" in lines[0] and "Traceback" not in lines[0]
    assert not data.exists() and not out.exists()


def test_cli_download_without_a_network_in_a_real_process(tmp_path):
    """The real urllib path, with HTTPS sent to a proxy port nothing listens on."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "https_proxy": f"http://127.0.0.1:{port}"}
    env.pop("no_proxy", None)
    env.pop("NO_PROXY", None)
    data, out = tmp_path / "data", tmp_path / "results"
    result = subprocess.run(
        [sys.executable, "-m", "bam_rl", "reproduce", "mnist", "--quick", "--download",
         "--data", str(data), "--out", str(out), "--no-progress"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "could not download" in lines[0], result.stderr[-2000:]
    assert not data.exists() and not out.exists()


def test_the_missing_files_error_names_the_cli_download_option(tmp_path, capsys):
    """Issue 27: the error named load_mnist(..., download=True) but not `--download`."""
    from bam_rl.cli import main

    with pytest.raises(FileNotFoundError, match=r"--download.*download=True"):
        load_mnist(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(["reproduce", "mnist", "--quick", "--data", str(tmp_path), "--out",
              str(tmp_path / "out")])  # fmt: skip
    assert info.value.code == 2
    assert "--download" in capsys.readouterr().err


def test_a_mirror_serving_an_altered_file_is_refused_by_md5(tmp_path, monkeypatch):
    mirror = _fake_mnist(tmp_path, monkeypatch)
    name = MNIST_FILES["test_labels"].name
    raw = bytearray(gzip.decompress((mirror / f"{name}.gz").read_bytes()))
    raw[-1] ^= 1  # same size, one byte changed
    (mirror / f"{name}.gz").write_bytes(gzip.compress(bytes(raw)))
    with pytest.raises(OSError, match=rf"could not download {name}\.gz.*md5"):
        download_mnist(tmp_path / "data", mirrors=(mirror.as_uri() + "/",))
    data = tmp_path / "data"
    assert not (data / f"{name}.gz").exists() and not list(data.glob(".*"))
