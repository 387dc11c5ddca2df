"""Size arguments are bounded by what they allocate (issue 28, item 1).

Reproducers: ``bam-rl run --env bam_rl/SwitchingBandit-v0 --agent ucb --steps 10
--env-kwargs '{"n_arms": 1000000000}'`` reached 23 GB RSS before the OOM killer ended it;
``n_arms=10**6`` gave a ``MemoryError`` traceback after 44 s, MPPI ``horizon=10**9`` one after
18 s, and ``horizon=10**6`` hung in ``act()``. Every size argument that scales memory now
refuses, before allocating, with a ``ValueError`` naming it and the bytes it would need.

The in-process tests run under a lowered ``RLIMIT_AS`` (:func:`limited`), so that code
without the checks fails with a ``MemoryError`` instead of taking the machine down.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import bam_rl  # registers the environments
import bam_rl.checks as core_checks
from bam_rl.cli import main
from bam_rl.drills import address_space

resource = pytest.importorskip("resource")
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS and /proc")

ROOT = Path(__file__).resolve().parents[1]
GIB = 2**30
HUGE = 10**9


def _address_space_in_use() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


@contextlib.contextmanager
def limited(extra: int = 2 * GIB):
    """This process's soft ``RLIMIT_AS`` lowered to what it uses plus ``extra`` bytes."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_address_space_in_use() + extra, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def cartpole():
    env = gym.make("bam_rl/GravityCartPole-v0")
    env.reset(seed=0)
    return env


def make(name: str, **kwargs):
    from bam_rl.harness import make_agent

    env = cartpole() if name.startswith("mppi") else gym.make("bam_rl/SwitchingBandit-v0")
    return make_agent(name, env, 0, **kwargs)


# (what is built, the argument the message must name)
HUGE_CASES = {
    "BinomialStream max_steps": (
        lambda: gym.make("bam_rl/BinomialStream-v0", max_steps=HUGE),
        "max_steps",
    ),
    "SwitchingBandit n_arms 1e9": (
        lambda: gym.make("bam_rl/SwitchingBandit-v0", n_arms=HUGE),
        "n_arms",
    ),
    "SwitchingBandit n_arms 1e6": (
        lambda: gym.make("bam_rl/SwitchingBandit-v0", n_arms=10**6),
        "n_arms",
    ),
    "SwitchingBandit max_steps": (
        lambda: gym.make("bam_rl/SwitchingBandit-v0", switch_prob=1.0, max_steps=HUGE),
        "max_steps",
    ),
    "PiecewiseBandit arms": (
        lambda: gym.make(
            "bam_rl/PiecewiseBandit-v0", means=np.full((2, 10**6), 0.5), breakpoints=[10]
        ),
        "arms",
    ),
    "RandomFourierFeatures": (
        lambda: importlib.import_module("bam_rl.features").RandomFourierFeatures(6, HUGE),
        "n_features",
    ),
    "BayesianLinearRegression": (
        lambda: bam_rl.BayesianLinearRegression(10**6, 1),
        "dim_in",
    ),
    "DirichletCategorical": (lambda: bam_rl.DirichletCategorical(1.0, HUGE), "n_categories"),
    "UCB": (lambda: importlib.import_module("bam_rl.agents.bandits").UCB(HUGE), "n_arms"),
    "Thompson BAM": (
        lambda: importlib.import_module("bam_rl.agents.bandits").ThompsonSampling.gaussian(
            10**6, "bam"
        ),
        "n_arms",
    ),
    "UCBAM": (
        lambda: importlib.import_module("bam_rl.agents.ucbam").UCBAM.gaussian(10**7),
        "n_arms",
    ),
    "MPPI horizon": (
        lambda: importlib.import_module("bam_rl.agents.planner").MPPI(horizon=HUGE),
        "horizon",
    ),
    "MPPI n_samples": (
        lambda: importlib.import_module("bam_rl.agents.planner").MPPI(n_samples=HUGE),
        "n_samples",
    ),
    "RFFDynamicsModel state_dim": (
        lambda: importlib.import_module("bam_rl.agents.dynamics").RFFDynamicsModel(HUGE, 1),
        "state_dim",
    ),
    "SimulatorDynamics n_threads": (
        lambda: importlib.import_module("bam_rl.agents.simulator").SimulatorDynamics(
            cartpole().unwrapped.fullpath, n_threads=10**4
        ),
        "n_threads",
    ),
    "mppi-gt horizon 1e9": (lambda: make("mppi-gt", horizon=HUGE), "horizon"),
    "mppi-bam horizon 1e6": (lambda: make("mppi-bam", horizon=10**6), "horizon"),
    "mppi-bam n_features": (lambda: make("mppi-bam", n_features=10**5), "n_features"),
    "rollout n_steps": (
        lambda: importlib.import_module("bam_rl.harness").rollout(
            gym.make("bam_rl/SwitchingBandit-v0"), make("random"), n_steps=HUGE
        ),
        "n_steps",
    ),
    "make_grid seeds": (
        lambda: importlib.import_module("bam_rl.harness").make_grid(
            ["ucb"], {"b": "bam_rl/SwitchingBandit-v0"}, seeds=HUGE, n_steps=10
        ),
        "seeds",
    ),
}


@pytest.mark.parametrize("case", sorted(HUGE_CASES))
def test_a_huge_size_is_refused_naming_the_argument_and_the_bytes(case):
    build, name = HUGE_CASES[case]
    with limited(), pytest.raises(ValueError, match=name) as info:
        build()
    message = str(info.value)
    assert "would need about" in message and "bytes" in message and "memory" in message


def test_the_issue_reproducers_under_a_2_gib_address_space_limit():
    """In a fresh process limited to 2 GiB of address space (as `ulimit -v 2097152`), the
    reproducers end with a one-line error (exit 2) or a ValueError, never MemoryError."""
    script = textwrap.dedent(
        """
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))
        import gymnasium as gym, bam_rl
        from bam_rl.harness import make_agent
        outcomes = []
        for build in (
            lambda: gym.make("bam_rl/SwitchingBandit-v0", n_arms=10**9),
            lambda: gym.make("bam_rl/SwitchingBandit-v0", n_arms=10**6),
            lambda: make_agent("mppi-gt", gym.make("bam_rl/GravityCartPole-v0"), 0,
                               horizon=10**9),
            lambda: make_agent("mppi-bam", gym.make("bam_rl/GravityCartPole-v0"), 0,
                               horizon=10**6),
        ):
            try:
                build()
                outcomes.append("accepted")
            except ValueError as error:
                outcomes.append("ValueError" if "would need" in str(error) else "other")
            except MemoryError:
                outcomes.append("MemoryError")
        print(outcomes)
        """
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == str(["ValueError"] * 4), result.stdout
    # the first reproducer through the CLI, as the address-space drill runs it (2 GiB limit)
    command = address_space._command_argv(address_space.COMMANDS["run --env-kwargs n_arms=N"], HUGE)
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        preexec_fn=address_space._limit,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr and "n_arms = 1000000000" in lines[-1]
    assert "would need about" in lines[-1]


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--env", "bam_rl/BinomialStream-v0", "--agent", "tracker-bam", "--steps", "5",
         "--env-kwargs", '{"max_steps": 1000000000000}'],
        ["run", "--env", "bam_rl/GravityCartPole-v0", "--agent", "mppi-gt", "--steps", "5",
         "--agent-kwargs", '{"n_samples": 1000000000}'],
        ["run", "--env", "bam_rl/SwitchingBandit-v0", "--agent", "random", "--steps",
         "10000000", "--seeds", "50"],
        ["run", "--env", "bam_rl/SwitchingBandit-v0", "--agent", "random", "--episodes",
         "1000000"],
        ["record", "--quick", "--width", "8000", "--height", "8000"],
    ],
)  # fmt: skip
def test_cli_size_options_are_usage_errors_before_anything_runs(argv, capsys, tmp_path):
    with limited(), pytest.raises(SystemExit) as info:
        main([*argv, "--out", str(tmp_path / "out.gif" if argv[0] == "record" else tmp_path)])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "would need about" in err
    assert not any(tmp_path.iterdir())  # nothing ran, nothing was written


def test_paper_sizes_pass_and_the_small_path_reads_no_limit(monkeypatch):
    calls = []
    monkeypatch.setattr(core_checks, "memory_budget", lambda: calls.append(1) or (1, "x"))
    core_checks.check_memory("n = 1", 2**26)  # at most 64 MiB: no limit is read
    assert calls == []
    with pytest.raises(ValueError, match="n = 2"):
        core_checks.check_memory("n = 2", 2**26 + 1)
    monkeypatch.undo()
    for env_id in ("bam_rl/SwitchingBandit50-v0", "bam_rl/GravityCartPoleEpisodic-v0"):
        gym.make(env_id)
    make("mppi-bam")
    make("mppi-gt")
    make("thompson-bam")


def test_the_budget_follows_the_environment_variable_and_rlimit(monkeypatch):
    checks = core_checks  # the environments use this budget too
    monkeypatch.delenv(checks.MEMORY_BUDGET_ENV, raising=False)
    budget, source = checks.memory_budget()
    assert budget <= checks.DEFAULT_MEMORY_BUDGET == 4 * GIB
    monkeypatch.setenv(checks.MEMORY_BUDGET_ENV, str(2**27))
    assert checks.memory_budget() == (2**27, f"${checks.MEMORY_BUDGET_ENV}")
    with pytest.raises(ValueError, match=r"n_arms = 5000.*BAM_RL_MEMORY_BUDGET"):
        checks.check_memory("n_arms = 5000", 2**28)
    monkeypatch.setenv(checks.MEMORY_BUDGET_ENV, "lots")
    with pytest.raises(ValueError, match="BAM_RL_MEMORY_BUDGET must be a positive number"):
        checks.check_memory("n = 1", 2**30)
    monkeypatch.delenv(checks.MEMORY_BUDGET_ENV)
    with limited(GIB):
        budget, source = checks.memory_budget()
    assert budget <= GIB and "RLIMIT_AS" in source
    # a size above the default budget is fine once the variable raises the budget
    monkeypatch.setenv(core_checks.MEMORY_BUDGET_ENV, str(2**50))
    core_checks.check_memory("n = 1", 5 * GIB)


def _recorded_estimate(monkeypatch, module) -> list[float]:
    """Replaces ``module.check_memory`` by one that records the estimates (and passes)."""
    estimates: list[float] = []
    monkeypatch.setattr(module, "check_memory", lambda what, nbytes: estimates.append(nbytes))
    return estimates


def _peak(build) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        build()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


CALIBRATION = {
    # case: (module whose check_memory to watch, build at a moderate size)
    "BinomialStream": ("bam_rl.envs.binomial_stream", lambda: gym.make(
        "bam_rl/BinomialStream-v0", max_steps=200_000)),
    "SwitchingBandit arms": ("bam_rl.envs.switching_bandit", lambda: gym.make(
        "bam_rl/SwitchingBandit-v0", n_arms=300, max_steps=5000)),
    "SwitchingBandit steps": ("bam_rl.envs.switching_bandit", lambda: gym.make(
        "bam_rl/SwitchingBandit-v0", n_arms=5, switch_prob=0.5, max_steps=400_000)),
    "PiecewiseBandit": ("bam_rl.envs.switching_bandit", lambda: gym.make(
        "bam_rl/PiecewiseBandit-v0", means=np.full((2, 500), 0.5), breakpoints=[10])),
    "RandomFourierFeatures": ("bam_rl.features", lambda: importlib.import_module(
        "bam_rl.features").RandomFourierFeatures(50, 20_000)),
    "BayesianLinearRegression": ("bam_rl.families.linear_regression", lambda: (
        bam_rl.BayesianLinearRegression(1500, 20))),
    "DirichletCategorical": ("bam_rl.checks", lambda: bam_rl.DirichletCategorical(
        1.0, 2_000_000)),
    "UCB": ("bam_rl.checks", lambda: importlib.import_module(
        "bam_rl.agents.bandits").UCB(1_000_000)),
    "Thompson BOCD": ("bam_rl.agents.bandits", lambda: importlib.import_module(
        "bam_rl.agents.bandits").ThompsonSampling.gaussian(3000, "bocd", hazard=0.01)),
    "UCBAM": ("bam_rl.checks", lambda: importlib.import_module(
        "bam_rl.agents.ucbam").UCBAM.gaussian(20_000)),
    "MPPI-GT plan": ("bam_rl.agents.planner", None),
    "MPPI-RFF plan float32": ("bam_rl.agents.planner", "float32"),
    "MPPI-RFF plan float64": ("bam_rl.agents.planner", "float64"),
    "rollout": ("bam_rl.harness.runner", None),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CALIBRATION))
def test_each_estimate_bounds_what_is_allocated(case, monkeypatch):
    """The bytes a check compares with the budget are at least what tracemalloc measures."""
    module_name, build = CALIBRATION[case]
    module = __import__(module_name, fromlist=["check_memory"])
    # imported before measuring: a module's first import (SciPy's spatial package under
    # bam_rl.features, Numba under the kernels) is not what an estimate bounds
    for name in ("bam_rl.agents.bandits", "bam_rl.agents.ucbam", "bam_rl.features"):
        importlib.import_module(name)
    if case.startswith("MPPI"):
        from bam_rl.agents.dynamics import RFFDynamicsModel
        from bam_rl.agents.planner import MPPI
        from bam_rl.agents.simulator import SimulatorDynamics

        observation, _ = cartpole().reset(seed=0)
        if case == "MPPI-GT plan":
            dynamics = SimulatorDynamics(cartpole().unwrapped.fullpath)
        else:
            dynamics = RFFDynamicsModel(5, 1, angle_pairs=((2, 3),), planning_dtype=build)
        planner = MPPI(dynamics, horizon=400, n_samples=64)
        planner.plan(observation, np.random.default_rng(0))  # caches built
        estimates = _recorded_estimate(monkeypatch, module)
        planner.check_planning_memory(dynamics)
        peak = _peak(lambda: planner.plan(observation, np.random.default_rng(1)))
    elif case == "rollout":
        from bam_rl.harness import make_agent, rollout

        env = gym.make("bam_rl/SwitchingBandit-v0")
        agents = [make_agent(name, env, 0) for name in ("ucb", "thompson-bam", "ucbam")]
        for name in ("ucb", "thompson-bam", "ucbam"):  # one-off imports, compilation, caches
            rollout(env, make_agent(name, env, 0), n_steps=50)
        estimates = _recorded_estimate(monkeypatch, module)
        peak = max(_peak(lambda a=a: rollout(env, a, n_steps=3000, seed=0)) for a in agents)
        estimates = estimates[:1]
    else:
        build()  # one-off imports and caches first (scipy.linalg is imported on first use)
        estimates = _recorded_estimate(monkeypatch, module)
        peak = _peak(build)
    assert estimates, "the size check was not reached"
    assert max(estimates) >= peak, f"estimate {max(estimates):,.0f} < measured {peak:,}"
