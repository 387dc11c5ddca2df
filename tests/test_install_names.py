"""``envs/`` and ``agents/`` install as ``bam_rl.envs`` and ``bam_rl.agents`` (issue 25).

PyPI has projects named ``envs`` and ``agents``; a wheel of ours that wrote those top-level
names would overwrite theirs (and theirs ours), and a state file naming ``envs.…`` could make
the loader import a foreign module. Files saved before the change (``tests/data/legacy``,
written at commit 3104668, when the classes were ``agents.…``) still load.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from bam_rl.agents import ThompsonSampling
from bam_rl.agents.mppi import MPPIAgent
from bam_rl.agents.tracking import BeliefTracker
from bam_rl.serialization import FORMAT, load_object, read_archive, write_archive

ROOT = Path(__file__).resolve().parents[1]
LEGACY = ROOT / "tests" / "data" / "legacy"


def test_a_wheel_writes_only_bam_rl(tmp_path):
    source = tmp_path / "source"  # a copy: building in the checkout would leave build/ there
    shutil.copytree(
        ROOT,
        source,
        symlinks=True,
        ignore=shutil.ignore_patterns(".git", ".venv*", "build", "dist", "*.egg-info", "site"),
    )
    subprocess.run(  # in pip's isolated build environment: setuptools as pyproject asks
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("bam_rl-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        record = next(n for n in names if n.endswith(".dist-info/RECORD"))
        listed = [line.split(",")[0] for line in archive.read(record).decode().splitlines()]
    tops = {name.split("/")[0] for name in listed}
    assert tops == {"bam_rl", record.split("/")[0]}
    assert "bam_rl/envs/assets/gravity_cartpole.xml" in listed
    assert "bam_rl/agents/mppi.py" in listed and "bam_rl/envs/__init__.py" in listed
    assert "bam_rl/bench/bocd.py" in listed  # the benchmarks ship with the package
    assert "bam_rl/py.typed" in listed  # PEP 561: the type hints are for users' checkers

    # `bam-rl bench` works from the installed wheel, outside the repository (issue 25)
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), wheel],
        check=True,
        capture_output=True,
    )
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    environment = {**os.environ, "PYTHONPATH": str(site), "MUJOCO_GL": "egl"}
    code = (
        "import sys, bam_rl.bench as b; print(b.__file__); "
        "from bam_rl.cli import main; "
        "sys.exit(main(['bench', '--quick', '--only', 'envs', '--json', 'rows.json']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=outside,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[0].startswith(str(site))  # the wheel's copy ran
    rows = json.loads((outside / "rows.json").read_text())["rows"]
    assert rows and all("FAILED" not in row["workload"] for row in rows)


def test_files_saved_before_the_change_load_and_act_as_they_did():
    expected = json.loads((LEGACY / "expected.json").read_text())
    document, _ = read_archive(LEGACY / "mppi_bam.npz", FORMAT, "bam-rl state")
    assert document["root"]["__object__"] == "agents.mppi.MPPIAgent"  # legacy-name: the old one
    agent = MPPIAgent.load(LEGACY / "mppi_bam.npz")
    assert type(agent).__module__ == "bam_rl.agents.mppi"
    env = gym.make("bam_rl/GravityCartPole-v0", max_steps=4)
    observation, info = env.reset(seed=5)
    agent.reset(observation, info)
    # float32 planning through BLAS: the kernel OpenBLAS picks for the processor (or
    # OPENBLAS_CORETYPE) rounds differently in the 7th digit, so equal up to float32 rounding
    np.testing.assert_allclose(agent.act(observation), expected["mppi_bam"], rtol=1e-5, atol=1e-6)
    thompson = ThompsonSampling.load(LEGACY / "thompson_bocd.npz")
    assert [int(thompson.act(0)) for _ in range(5)] == expected["thompson_bocd"]
    tracker = BeliefTracker.load(LEGACY / "tracker_bam.npz")
    assert type(tracker.rule).__module__ == "bam_rl.beliefs.bam"


@pytest.mark.parametrize(
    "name",
    ["agents.evil.Payload", "envs.os.system", "agents", "envs.gravity_cartpole.np"],  # legacy-name
)
def test_a_file_naming_a_module_outside_bam_rl_is_refused(tmp_path, name):
    document, arrays = read_archive(LEGACY / "tracker_bam.npz", FORMAT, "bam-rl state")
    document["root"]["__object__"] = name
    path = write_archive(tmp_path / "crafted.npz", document, arrays)
    before = set(sys.modules)
    with pytest.raises(ValueError):
        load_object(path)
    imported = {m.split(".")[0] for m in set(sys.modules) - before}
    assert not imported & {"agents", "envs"}  # no top-level module of those names was imported


def test_the_package_data_is_found_through_the_install_name():
    from bam_rl.envs.gravity_cartpole import ASSET_PATH

    assert Path(ASSET_PATH).is_file()
    assert np.isfinite(gym.make("bam_rl/GravityCartPole-v0").reset(seed=0)[0]).all()


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("agents.dynamics.SimulatorDynamics", "bam_rl.agents.simulator.SimulatorDynamics"),
        ("bam_rl.agents.dynamics.SimulatorDynamics", "bam_rl.agents.simulator.SimulatorDynamics"),
        ("bam_rl.fast_readout.FactorCache", "bam_rl.readout.FactorCache"),
        (
            "bam_rl.families.linear_regression.BayesianLinearRegressionNIG",
            "bam_rl.families.linear_regression_nig.BayesianLinearRegressionNIG",
        ),
        ("agents.mppi.MPPIAgent", "bam_rl.agents.mppi.MPPIAgent"),  # legacy-name
        ("agents.mppi.EpisodicBAM", "bam_rl.beliefs.EpisodicBAM"),  # legacy-name
        ("bam_rl.segments.SegmentBAM", "bam_rl.beliefs.SegmentBAM"),
    ],
)
def test_names_of_moved_classes_in_old_state_files_resolve(old, new):
    """Issue 25 moved classes between modules; files written before name the old places."""
    from bam_rl.serialization import current_name, import_class

    assert current_name(old) == new
    cls = import_class(old)
    assert f"{cls.__module__}.{cls.__qualname__}" == new or cls.__name__ == new.rsplit(".", 1)[1]
