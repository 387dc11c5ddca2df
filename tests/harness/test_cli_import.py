"""``bam-rl run --import MODULE`` (issue 49): a planning reward (or environment) of one's own,
registered in a user's module, is usable from the command line, in this process and in every
loky worker; ``run_many(imports=...)`` is the same in Python."""

from __future__ import annotations

import os
import sys
import textwrap
import uuid

import pytest
from harness_testutils import run_argv, usage_error

from bam_rl.agents.rewards import REWARDS
from bam_rl.cli import main

REWARD = "issue49-upright"
SMALL = '"horizon": 4, "n_samples": 4, "n_features": 10'


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A module of a new name (loky workers outlive a test, with their imports) in a fresh
    working directory: it registers :data:`REWARD` and notes the pid of every process that
    imports it in ``imported.txt``. Returns the folder and the module's name."""
    name = f"bam_rl_test_rewards_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(
        textwrap.dedent(f"""
            import os
            from pathlib import Path

            import numpy as np
            from bam_rl.agents.rewards import register_reward

            with open(Path(__file__).with_name("imported.txt"), "a") as log:
                log.write(f"{{os.getpid()}}\\n")


            def upright(states, actions):
                return states[..., 0] - 0.001 * np.square(actions).sum(axis=-1)


            register_reward({REWARD!r}, upright, obs_dim=3, angle_pairs=((0, 1),), replace=True)
        """)
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # --import appends the working directory
    yield tmp_path, name
    sys.modules.pop(name, None)
    REWARDS.pop(REWARD, None)


def importers(folder) -> set[int]:
    return {int(line) for line in (folder / "imported.txt").read_text().split()}


def test_a_reward_registered_in_an_imported_module_runs_in_the_workers(user_module, capsys):
    folder, module = user_module
    argv = run_argv("Pendulum-v1", "mppi-bam", 3, "--seeds", "2")
    argv[argv.index("--backend") + 1] = "loky"
    kwargs = f'{{"reward": "{REWARD}", {SMALL}}}'
    assert main([*argv, "--jobs", "2", "--import", module, "--agent-kwargs", kwargs]) == 0
    assert "mppi-bam" in capsys.readouterr().out
    assert os.getpid() in importers(folder)  # before the names were checked
    assert importers(folder) - {os.getpid()}  # and in the worker processes


def test_without_the_import_the_message_says_how(capsys):
    REWARDS.pop(REWARD, None)
    kwargs = f'{{"reward": "{REWARD}", {SMALL}}}'
    with pytest.raises(SystemExit) as info:
        main(run_argv("Pendulum-v1", "mppi-bam", 3, "--agent-kwargs", kwargs))
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"got {REWARD!r}" in err and "register_reward" in err and "--import MODULE" in err


def test_a_module_that_is_not_there_or_fails_is_named(user_module, capsys):
    folder, _ = user_module
    err = usage_error([*run_argv("Pendulum-v1", "random", 3), "--import", "no_such_mod"], capsys)
    assert "--import no_such_mod: no module named 'no_such_mod'" in err
    err = usage_error([*run_argv("Pendulum-v1", "random", 3), "--import", "my-rewards"], capsys)
    assert "--import my-rewards: not a module name" in err
    (folder / "broken_user_mod.py").write_text("x = 1\nraise RuntimeError('oops')\n")
    with pytest.raises(SystemExit) as info:
        main([*run_argv("Pendulum-v1", "random", 3), "--import", "broken_user_mod"])
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert (
        "--import broken_user_mod: RuntimeError at " in err and "broken_user_mod.py:2: oops" in err
    )
    assert "Traceback" not in err
    sys.modules.pop("broken_user_mod", None)


def test_run_many_imports_in_its_workers(user_module):
    from bam_rl.harness import make_grid, run_many

    folder, module = user_module
    sys.path.append(str(folder))  # what the command line does for the working directory
    kwargs = {"reward": REWARD, "horizon": 4, "n_samples": 4, "n_features": 10}
    grid = make_grid(["mppi-bam"], {"p": "Pendulum-v1"}, seeds=2, n_steps=3,
                     agent_kwargs={"mppi-bam": kwargs})  # fmt: skip
    frame = run_many(grid, backend="loky", n_jobs=2, progress=False, imports=[module])
    assert len(frame) == 6
    assert importers(folder) - {os.getpid()}
