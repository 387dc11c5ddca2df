"""Every size argument under a 2 GiB address-space limit (issue 28, item 1).

Each case builds one object (or runs one ``bam-rl`` command) with a size argument set to each
value of a ladder (10³ … 10¹²) in a fresh process whose ``RLIMIT_AS`` is 2 GiB, and records
how it ended:

* ``ok``        — built (and, for planners and environments, used once) within the limit;
* ``refused``   — a ``ValueError`` (or a CLI usage error, exit 2) naming the argument;
* ``MEMORY``    — a ``MemoryError`` or any other failure to allocate: the bug this guards;
* ``CRASH``     — killed by a signal; ``TIMEOUT`` — over the time limit; ``OTHER`` — else.

Run from anywhere bam-rl is installed::

    python -m bam_rl.drills.address_space          # the whole ladder, a table at the end
    python -m bam_rl.drills.address_space --quick  # one huge size per argument

Exit status 1 if any case ends in MEMORY, CRASH or OTHER.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial

LIMIT = 2 * 2**30
SIZES = (10**3, 10**4, 10**5, 10**6, 10**9, 10**12)

_PRELUDE = """
import numpy as np, gymnasium as gym, bam_rl
N = {size}
"""

#: (label, Python snippet using N). A snippet that returns normally is "ok".
CASES: dict[str, str] = {
    # environments
    "BinomialStream(max_steps=N)": "e = gym.make('bam_rl/BinomialStream-v0', max_steps=N); "
    "e.reset(seed=0); e.step(np.array([0.5]))",
    "BinomialStream(n=N)": "e = gym.make('bam_rl/BinomialStream-v0', n=N); e.reset(seed=0); "
    "e.step(np.array([0.5]))",
    "SwitchingBandit(n_arms=N)": "e = gym.make('bam_rl/SwitchingBandit-v0', n_arms=N); "
    "e.reset(seed=0); e.step(0)",
    "SwitchingBandit(max_steps=N)": "e = gym.make('bam_rl/SwitchingBandit-v0', max_steps=N); "
    "e.reset(seed=0); e.step(0)",
    "SwitchingBandit(switch_prob=1, max_steps=N)": "e = gym.make('bam_rl/SwitchingBandit-v0', "
    "switch_prob=1.0, max_steps=N); e.reset(seed=0); e.step(0)",
    "PiecewiseBandit(means (2, N//100))": "e = gym.make('bam_rl/PiecewiseBandit-v0', "
    "means=np.broadcast_to(0.5, (2, max(N // 100, 1))), breakpoints=[5]); e.reset(seed=0); "
    "e.step(0)",
    "PiecewiseBandit(max_steps=N)": "e = gym.make('bam_rl/PiecewiseBandit-v0', max_steps=N); "
    "e.reset(seed=0); e.step(0)",
    "GravityCartPole(width=N)": "gym.make('bam_rl/GravityCartPole-v0', width=N)",
    # math core
    "RandomFourierFeatures(n_features=N)": "from bam_rl.features import RandomFourierFeatures; "
    "RandomFourierFeatures(6, N)",
    "RandomFourierFeatures(dim_in=N)": "from bam_rl.features import RandomFourierFeatures; "
    "RandomFourierFeatures(N, 200)",
    "BayesianLinearRegression(dim_in=N)": "from bam_rl.families import BayesianLinearRegression; "
    "BayesianLinearRegression(N, 1)",
    "BayesianLinearRegression(dim_out=N)": "from bam_rl.families import "
    "BayesianLinearRegression; BayesianLinearRegression(10, N)",
    "LinearRegressionUnknownNoise(dim_in=N)": "import bam_rl.families as f; "
    "cls = [getattr(f, n) for n in f.__all__ if 'Regression' in n and n != "
    "'BayesianLinearRegression'][0]; cls(N, 1)",
    "DirichletCategorical(n_categories=N)": "from bam_rl.families import DirichletCategorical; "
    "DirichletCategorical(1.0, N)",
    "Memory(capacity=N) + 3 data": "from bam_rl import Memory, BetaBinomial; m = Memory(N); "
    "[m.add(BetaBinomial().stats(1, 2)) for _ in range(3)]",
    "mean_pairwise_distance(max_points=N)": "from bam_rl.features import mean_pairwise_distance; "
    "mean_pairwise_distance(np.ones((50, 2)), max_points=N)",
    # agents
    "UCB(n_arms=N)": "from bam_rl.agents.bandits import UCB; a = UCB(N); a.act(0)",
    "ThompsonSampling.gaussian(N, 'recursive')": "from bam_rl.agents.bandits "
    "import ThompsonSampling; "
    "a = ThompsonSampling.gaussian(N); a.act(0)",
    "ThompsonSampling.gaussian(N, 'bocd')": "from bam_rl.agents.bandits import ThompsonSampling; "
    "a = ThompsonSampling.gaussian(N, 'bocd', hazard=0.01); a.act(0)",
    "ThompsonSampling.bernoulli(N, 'bam')": "from bam_rl.agents.bandits import ThompsonSampling; "
    "a = ThompsonSampling.bernoulli(N, 'bam'); a.act(0)",
    "UCBAM.gaussian(N)": "from bam_rl.agents.ucbam import UCBAM; a = UCBAM.gaussian(N); a.act(0)",
    "MPPI(horizon=N) + plan": "from bam_rl.agents.planner import MPPI; "
    "MPPI(lambda s, a, r: np.zeros(a.shape[:2] + (5,)), horizon=N).plan(np.zeros(5))",
    "MPPI(n_samples=N) + plan": "from bam_rl.agents.planner import MPPI; "
    "MPPI(lambda s, a, r: np.zeros(a.shape[:2] + (5,)), n_samples=N).plan(np.zeros(5))",
    "MPPI(action_dim=N)": "from bam_rl.agents.planner import MPPI; MPPI(action_dim=N)",
    "RFFDynamicsModel(n_features=N)": "from bam_rl.agents.dynamics import RFFDynamicsModel; "
    "RFFDynamicsModel(5, 1, n_features=N)",
    "RFFDynamicsModel(state_dim=N)": "from bam_rl.agents.dynamics import RFFDynamicsModel; "
    "RFFDynamicsModel(N, 1)",
    "RFFDynamicsModel(action_dim=N)": "from bam_rl.agents.dynamics import RFFDynamicsModel; "
    "RFFDynamicsModel(5, N)",
    "SimulatorDynamics(n_threads=N)": "from bam_rl.agents.simulator import SimulatorDynamics; "
    "from bam_rl.envs.gravity_cartpole import ASSET_PATH; "
    "SimulatorDynamics(ASSET_PATH, n_threads=N)",
    "MPPIAgent(horizon=N) + act": "from bam_rl.harness import make_agent; "
    "e = gym.make('bam_rl/GravityCartPole-v0'); o, i = e.reset(seed=0); "
    "a = make_agent('mppi-bam', e, 0, horizon=N); a.reset(o, i); a.act(o)",
    "MPPIAgent(n_samples=N) + act": "from bam_rl.harness import make_agent; "
    "e = gym.make('bam_rl/GravityCartPole-v0'); o, i = e.reset(seed=0); "
    "a = make_agent('mppi-bam', e, 0, n_samples=N); a.reset(o, i); a.act(o)",
    "MPPIAgent(n_features=N) + act": "from bam_rl.harness import make_agent; "
    "e = gym.make('bam_rl/GravityCartPole-v0'); o, i = e.reset(seed=0); "
    "a = make_agent('mppi-bam', e, 0, n_features=N, horizon=5); a.reset(o, i); a.act(o)",
    "GroundTruthMPPI(horizon=N) + act": "from bam_rl.harness import make_agent; "
    "e = gym.make('bam_rl/GravityCartPole-v0'); o, i = e.reset(seed=0); "
    "a = make_agent('mppi-gt', e, 0, horizon=N); a.reset(o, i); a.act(o)",
    "GroundTruthMPPI(n_samples=N) + act": "from bam_rl.harness import make_agent; "
    "e = gym.make('bam_rl/GravityCartPole-v0'); o, i = e.reset(seed=0); "
    "a = make_agent('mppi-gt', e, 0, n_samples=N); a.reset(o, i); a.act(o)",
    # the klUCB family's size arguments (issue 39)
    "klucb: GLRKLUCB(horizon=N)": "from bam_rl.agents.klucb import GLRKLUCB; "
    "a = GLRKLUCB(3, horizon=N, n_breakpoints=1); a.act(0); a.observe(0, 1.0, 0, False, False, {})",
    "klucb: CUSUMKLUCB(horizon=N)": "from bam_rl.agents.klucb import CUSUMKLUCB; "
    "a = CUSUMKLUCB(3, horizon=N, n_breakpoints=1); a.act(0)",
    "klucb: MonitoredKLUCB(horizon=N)": "from bam_rl.agents.klucb import MonitoredKLUCB; "
    "a = MonitoredKLUCB(3, horizon=N); a.act(0); a.observe(0, 1.0, 0, False, False, {})",
    "klucb: MonitoredKLUCB(window=N)": "from bam_rl.agents.klucb import MonitoredKLUCB; "
    "a = MonitoredKLUCB(3, horizon=1000, window=N); a.act(0)",
    "klucb: SlidingWindowKLUCB(tau=N)": "from bam_rl.agents.passive import SlidingWindowKLUCB; "
    "a = SlidingWindowKLUCB(3, tau=N); a.act(0); a.observe(0, 1.0, 0, False, False, {})",
    "klucb: SlidingWindowKLUCB(horizon=N)": "from bam_rl.agents.passive import "
    "SlidingWindowKLUCB; a = SlidingWindowKLUCB(3, horizon=N, n_breakpoints=1); a.act(0)",
    "klucb: Exp3S(horizon=N)": "from bam_rl.agents.passive import Exp3S; "
    "a = Exp3S(3, horizon=N, n_breakpoints=1); a.act(0)",
    "klucb: KLUCB(n_arms=N)": "from bam_rl.agents.klucb import KLUCB; a = KLUCB(N); a.act(0)",
    "BeliefTracker(n_trials=N)": "from bam_rl.agents.tracking import BeliefTracker; "
    "from bam_rl.beliefs import BAM; from bam_rl.families import BetaBinomial; "
    "BeliefTracker(BAM(BetaBinomial()), n_trials=N)",
    # run layer
    "rollout(n_steps=N)": "from bam_rl.harness import make_agent, rollout; "
    "e = gym.make('bam_rl/SwitchingBandit-v0', max_steps=100); "
    "rollout(e, make_agent('ucb', e, 0), n_steps=N) if N <= 10**5 else "
    "rollout(e, make_agent('ucb', e, 0), n_steps=N, progress=False)",
    "make_grid(seeds=N)": "from bam_rl.harness import make_grid; "
    "make_grid(['ucb'], {'b': 'bam_rl/SwitchingBandit-v0'}, seeds=N, n_steps=10)",
    "make_grid(n_steps=N, seeds=100)": "from bam_rl.harness import make_grid; "
    "make_grid(['ucb'], {'b': 'bam_rl/SwitchingBandit-v0'}, seeds=100, n_steps=N)",
}

#: (label, bam-rl arguments, ``N`` standing for the size). Exit 0 is "ok", exit 2 with a
#: one-line error "refused"; a traceback is "OTHER" (or MEMORY for a MemoryError).
_RUN = ("run", "--no-progress", "--backend", "serial")
COMMANDS: dict[str, tuple[str, ...]] = {
    "run --env-kwargs n_arms=N": (
        *_RUN,
        "--env",
        "bam_rl/SwitchingBandit-v0",
        "--agent",
        "ucb",
        "--steps",
        "10",
        "--env-kwargs",
        '{"n_arms": N}',
    ),
    "run --env-kwargs max_steps=N": (
        *_RUN,
        "--env",
        "bam_rl/BinomialStream-v0",
        "--agent",
        "tracker-bam",
        "--steps",
        "10",
        "--env-kwargs",
        '{"max_steps": N}',
    ),
    "run --agent-kwargs horizon=N (mppi-gt)": (
        *_RUN,
        "--env",
        "bam_rl/GravityCartPole-v0",
        "--agent",
        "mppi-gt",
        "--steps",
        "2",
        "--agent-kwargs",
        '{"horizon": N}',
    ),
    "run --agent-kwargs n_features=N (mppi-bam)": (
        *_RUN,
        "--env",
        "bam_rl/GravityCartPole-v0",
        "--agent",
        "mppi-bam",
        "--steps",
        "2",
        "--agent-kwargs",
        '{"n_features": N, "horizon": 5}',
    ),
    "run --agent-kwargs horizon=N (glr-klucb)": (
        *_RUN,
        "--env",
        "bam_rl/PiecewiseBandit-v0",
        "--agent",
        "glr-klucb",
        "--steps",
        "10",
        "--agent-kwargs",
        '{"horizon": N, "n_breakpoints": 1}',
    ),
    "run --agent-kwargs tau=N (sw-klucb)": (
        *_RUN,
        "--env",
        "bam_rl/PiecewiseBandit-v0",
        "--agent",
        "sw-klucb",
        "--steps",
        "10",
        "--agent-kwargs",
        '{"tau": N}',
    ),
    "run --agent-kwargs window=N (m-klucb)": (
        *_RUN,
        "--env",
        "bam_rl/PiecewiseBandit-v0",
        "--agent",
        "m-klucb",
        "--steps",
        "10",
        "--agent-kwargs",
        '{"horizon": 1000, "window": N}',
    ),
    "run --steps N": (
        *_RUN,
        "--env",
        "bam_rl/SwitchingBandit-v0",
        "--agent",
        "random",
        "--steps",
        "N",
    ),
    "run --seeds N": (
        *_RUN,
        "--env",
        "bam_rl/SwitchingBandit-v0",
        "--agent",
        "random",
        "--steps",
        "10",
        "--seeds",
        "N",
    ),
    "run --episodes N": (
        *_RUN,
        "--env",
        "bam_rl/SwitchingBandit-v0",
        "--agent",
        "random",
        "--episodes",
        "N",
    ),
    "demo --steps N": ("demo", "--steps", "N"),
    "record --width N": (
        "record",
        "--quick",
        "--no-progress",
        "--width",
        "N",
        "--out",
        "address_space_limit.gif",  # in the drill's temporary working folder
    ),
}


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _classify(result: subprocess.CompletedProcess[str] | None, cli: bool) -> str:
    if result is None:
        return "TIMEOUT"
    if result.returncode < 0:
        return f"CRASH({-result.returncode})"
    text = result.stdout + result.stderr
    if "MemoryError" in text or "bad_alloc" in text or "Cannot allocate" in text:
        return "MEMORY"
    if cli:
        if result.returncode == 0:
            return "ok"
        lines = result.stderr.strip().splitlines()
        if result.returncode == 2 and len(lines) >= 1 and "Traceback" not in result.stderr:
            return "refused"
        return "OTHER"
    if result.returncode == 0:
        return "ok"
    if "ValueError" in result.stderr.strip().splitlines()[-1]:
        return "refused"
    return "OTHER"


def _run(argv: list[str], timeout: float, cwd: str) -> subprocess.CompletedProcess[str] | None:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MUJOCO_GL="egl")
    try:
        return subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=_limit,
            env=env,
            cwd=cwd,
        )
    except subprocess.TimeoutExpired:
        return None


def _snippet_argv(snippet: str, size: int) -> list[str]:
    """A Python case of :data:`CASES` at ``size``: the interpreter running the snippet."""
    return [sys.executable, "-c", _PRELUDE.format(size=size) + snippet]


def _command_argv(command: tuple[str, ...], size: int) -> list[str]:
    """A command of :data:`COMMANDS` at ``size``: ``python -m bam_rl`` with every ``N`` of its
    values (not of its option names) replaced by ``size``."""
    words = [
        word.replace("N", str(size)) if "N" in word and not word.startswith("--") else word
        for word in command
    ]
    return [sys.executable, "-m", "bam_rl", *words]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--quick", action="store_true", help="only 10^9 for every argument")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per case (120)")
    parser.add_argument("--only", default=None, help="run the cases whose label has this text")
    args = parser.parse_args(argv)
    sizes = (10**9,) if args.quick else SIZES
    bad = 0
    rows: list[tuple[str, list[str]]] = []
    started = time.perf_counter()
    # each case: its label, whether it is a CLI command, and its argument list at a size
    cases: list[tuple[str, bool, Callable[[int], list[str]]]] = [
        (label, False, partial(_snippet_argv, snippet)) for label, snippet in CASES.items()
    ]
    cases += [(label, True, partial(_command_argv, command)) for label, command in COMMANDS.items()]
    if args.only:
        cases = [case for case in cases if args.only in case[0]]
        if not cases:  # a drill that checks nothing must not pass
            parser.error(
                f"--only {args.only!r} matches no case; the cases are: "
                + ", ".join([*CASES, *COMMANDS])
            )
    workdir = tempfile.mkdtemp(prefix="bam-rl-address-space-")  # what the commands write
    for label, cli, argv_at in cases:
        outcomes = []
        for size in sizes:
            result = _run(argv_at(size), args.timeout, workdir)
            outcomes.append(_classify(result, cli=cli))
            if outcomes[-1] not in ("ok", "refused"):
                bad += 1
                tail = "" if result is None else (result.stderr.strip().splitlines() or [""])[-1]
                print(f"  {label} N={size:.0e}: {outcomes[-1]} {tail[:200]}", flush=True)
        rows.append((label, outcomes))
        print(f"{label:<45} " + " ".join(f"{o:>8}" for o in outcomes), flush=True)
    header = " ".join(f"{f'1e{len(str(s)) - 1}':>8}" for s in sizes)
    print(
        f"\nRLIMIT_AS = 2 GiB; {len(rows)} arguments x {len(sizes)} sizes in "
        f"{time.perf_counter() - started:.0f} s\n{'argument':<45} {header}"
    )
    for label, outcomes in rows:
        print(f"{label:<45} " + " ".join(f"{o:>8}" for o in outcomes))
    counts: dict[str, int] = {}
    for _, outcomes in rows:
        for outcome in outcomes:
            counts[outcome] = counts.get(outcome, 0) + 1
    print("outcomes:", ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    shutil.rmtree(workdir, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
