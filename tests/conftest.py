"""Test-wide settings.

BLAS threads are pinned to one before numpy is imported: the suite's linear algebra is small
and batched, and on a 2-core machine (with pytest-xdist using both cores) multi-threaded
OpenBLAS oversubscribes the CPU and runs 10-50x slower.
"""

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
os.environ.setdefault("MUJOCO_GL", "egl")
