"""Issue 54: the experiments, the CLI, the benchmarks and the drills left ``bam_rl.harness``;
their old import paths warn, name the new path, and give the same module objects."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

from bam_rl.harness import _moved

OLD_AND_NEW = [
    ("bam_rl.harness.experiments", "bam_rl.experiments"),
    ("bam_rl.harness.experiments.recurring", "bam_rl.experiments.recurring"),
    ("bam_rl.harness.cli", "bam_rl.cli"),
    ("bam_rl.harness.cli.common", "bam_rl.cli.common"),
    ("bam_rl.harness.bench", "bam_rl.bench"),
    ("bam_rl.harness.bench.readout", "bam_rl.bench.readout"),
    ("bam_rl.harness.drills", "bam_rl.drills"),
    ("bam_rl.harness.drills.soak", "bam_rl.drills.soak"),
    ("bam_rl.harness.report", "bam_rl.experiments.report"),
    ("bam_rl.harness.record_recurring", "bam_rl.experiments.record_recurring"),
]


@pytest.mark.parametrize(("old", "new"), OLD_AND_NEW)
def test_an_old_path_warns_and_is_the_new_module(old, new, monkeypatch):
    for name in [n for n in sys.modules if n == old or n.startswith(old + ".")]:
        monkeypatch.delitem(sys.modules, name)  # a fresh import of the old name
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__name__ == new and module.__spec__.name == new  # its own spec kept


def test_old_from_imports_of_public_names_work():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from bam_rl.harness.cli import main
        from bam_rl.harness.experiments import REPRODUCTIONS
    from bam_rl.cli import main as new_main
    from bam_rl.experiments import REPRODUCTIONS as new_reproductions

    assert main is new_main and REPRODUCTIONS is new_reproductions


def test_new_names_of_paths_that_did_not_move_are_none():
    assert _moved.new_name("bam_rl.harness.registry") is None
    assert _moved.new_name("bam_rl.harness.cliff") is None  # a prefix of a name is not a match
    assert _moved.new_name("bam_rl.harness.cli.run") == "bam_rl.cli.run"


def test_python_dash_m_runs_an_old_path():
    done = subprocess.run(
        [
            sys.executable,
            "-W",
            "default::DeprecationWarning",
            "-m",
            "bam_rl.harness.drills",
            "--help",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout and "soak" in done.stdout
    assert "bam_rl.harness.drills moved to bam_rl.drills" in done.stderr
