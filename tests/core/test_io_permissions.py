"""Files written through ``atomic_path`` get the umask's mode, as ``open()`` would give them."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from bam_rl._io import atomic_path, current_umask
from bam_rl.harness.files import write_frame
from bam_rl.serialization import save_object

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")


@pytest.fixture
def umask():
    def set_mask(mask: int) -> None:
        os.umask(mask)

    previous = os.umask(0o022)
    yield set_mask
    os.umask(previous)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_new_files_get_the_umask_mode(tmp_path, umask, mask):
    umask(mask)
    assert current_umask() == mask
    with atomic_path(tmp_path / "plain.txt") as temporary:
        temporary.write_text("x")
    reference = tmp_path / "reference.txt"
    reference.write_text("x")  # what open() gives
    assert mode(tmp_path / "plain.txt") == mode(reference) == 0o666 & ~mask
    import pandas as pd

    write_frame(pd.DataFrame({"a": [1]}), tmp_path / "frame.csv")
    save_object(np.arange(3), tmp_path / "state.npz")
    assert mode(tmp_path / "frame.csv") == mode(tmp_path / "state.npz") == 0o666 & ~mask


def test_a_replaced_file_keeps_its_mode(tmp_path, umask):
    umask(0o022)
    target = tmp_path / "shared.csv"
    target.write_text("old")
    os.chmod(target, 0o664)
    with atomic_path(target) as temporary:
        temporary.write_text("new")
    assert target.read_text() == "new" and mode(target) == 0o664
