"""Where the MNIST tests find their data, and what they say without it (issue 38, item 9)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from bam_rl.datasets import MNIST_ENV, MNIST_FILES, MNIST_MIRRORS

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


def _conftest():
    spec = importlib.util.spec_from_file_location("tests_conftest_mnist", CONFTEST)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bam_rl_mnist_names_the_folder(tmp_path, monkeypatch):
    conftest = _conftest()
    monkeypatch.setenv(MNIST_ENV, str(tmp_path))
    folder, reason = conftest.mnist_folder_or_reason()
    assert folder is None
    assert f"${MNIST_ENV} = {tmp_path}" in reason and f"set {MNIST_ENV}" in reason
    assert "train-images-idx3-ubyte.gz" in reason and "--download" in reason
    assert f"download them from {MNIST_MIRRORS[0]}" in reason  # where a user gets them
    for spec in MNIST_FILES.values():  # the four files there: the tests read that folder
        (tmp_path / f"{spec.name}.gz").write_bytes(b"")
    assert conftest.mnist_folder_or_reason() == (tmp_path, None)


def test_without_the_variable_the_shared_data_folder_is_used(monkeypatch):
    conftest = _conftest()
    monkeypatch.delenv(MNIST_ENV, raising=False)
    shared = conftest._shared_mnist_folder()
    assert shared.parts[-3:] == ("shared", "data", "mnist")
    assert shared.parent.parent.parent == Path(__file__).resolve().parents[2].parent
    folder, reason = conftest.mnist_folder_or_reason()
    if folder is None:  # no data on this machine: the message says how to provide it
        assert f"the shared data folder {shared}" in reason and MNIST_ENV in reason
    else:
        assert folder == shared
    # a clone without the shared folder: the message says where to download the files
    monkeypatch.setattr(conftest, "_shared_mnist_folder", lambda: Path("/nonexistent/mnist"))
    folder, reason = conftest.mnist_folder_or_reason()
    assert folder is None and f"{MNIST_ENV} is not set" in reason
    assert f"download them from {MNIST_MIRRORS[0]}" in reason and f"set {MNIST_ENV}" in reason
