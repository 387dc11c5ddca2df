"""Test-wide settings.

BLAS threads are pinned to one before numpy is imported: the suite's linear algebra is small
and batched, and on a 2-core machine (with pytest-xdist using both cores) multi-threaded
OpenBLAS oversubscribes the CPU and runs 10-50x slower.
"""

import os

import pytest

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
os.environ.setdefault("MUJOCO_GL", "egl")


# --------------------------------------------------------------------------------- MNIST
def _shared_mnist_folder():
    """The workspace's shared data folder for MNIST: ``<repository>/../shared/data/mnist``."""
    from pathlib import Path

    return Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mnist"


def mnist_folder_or_reason():
    """``(folder, None)`` when the four MNIST files are there, else ``(None, why)``: the
    folder is ``$BAM_RL_MNIST`` when set, else the shared data folder; ``why`` says how to
    provide the files."""
    from pathlib import Path

    from bam_rl.datasets import MNIST_ENV, MNIST_FILES, MNIST_MIRRORS, find_mnist_file

    given = os.environ.get(MNIST_ENV)
    folder = _shared_mnist_folder() if not given else Path(given)
    try:
        for role in MNIST_FILES:
            find_mnist_file(folder, role)
    except FileNotFoundError:
        names = ", ".join(f"{spec.name}.gz" for spec in MNIST_FILES.values())
        missing = (
            f"the four MNIST files ({names}) are not in ${MNIST_ENV} = {folder}"
            if given
            else f"{MNIST_ENV} is not set and the shared data folder {folder} (a workspace's, "
            f"beside the repository) does not hold the four MNIST files ({names})"
        )
        return None, (
            f"{missing}: download them from {MNIST_MIRRORS[0]} into a folder and set "
            f"{MNIST_ENV} to it (or let `bam-rl reproduce mnist --data DIR --download` fetch "
            "them)"
        )
    return folder, None


@pytest.fixture(scope="session")
def mnist_dir():
    """The folder of the MNIST files (``$BAM_RL_MNIST``, else the shared data folder); skips
    the test, saying how to provide them, when they are missing."""
    folder, reason = mnist_folder_or_reason()
    if folder is None:
        pytest.skip(reason)
    return folder


# ------------------------------------------------------------------------ Stable-Baselines3
@pytest.fixture
def small_sac():
    """``small_sac(env, **overrides)``: a SAC with two 32-unit layers, 100 warm-up steps,
    batches of 32 and a 1000-step buffer (seed 0), for tests that run it a few hundred steps."""
    from stable_baselines3 import SAC

    def make(env, **overrides):
        settings = {
            "learning_starts": 100,
            "batch_size": 32,
            "buffer_size": 1000,
            "policy_kwargs": {"net_arch": [32, 32]},  # a fresh dict: SB3 adds keys in place
            "seed": 0,
        }
        return SAC("MlpPolicy", env, **{**settings, **overrides})

    return make
