"""Beyond the paper: the piecewise-stationary bandit benchmark, with BAM's agents beside it.

Besson, Kaufmann, Maillard & Seznec, "Efficient change-point detection for tackling
piecewise-stationary bandits" (arXiv:1902.01575, JMLR 2022): Bernoulli problems 1–5 (thesis
numbering) at the horizons of the published tables (:data:`HORIZONS`: problem 4 twice) and
their random instance (K = 5, T = 20 000, 6 breakpoints), the
change-point bandits of the field tuned from ``horizon`` and ``n_breakpoints`` as the
benchmark's code ran them, and BAM's bandits (``thompson-bam``, ``ucbam``,
``thompson-bam-segments``, ``ucbam-segments``, ``thompson-bocd``) with the same information:
the BOCD hazard is ``n_breakpoints / horizon``, nothing is tuned per problem.

Every method sees the same reward streams (run ``r`` of a problem seeds the environment and
the agent from ``SeedSequence([root_seed, problem, r])``; the random instance draws its table
from the same sequence). The regret is the pseudo-regret ``sum_t max_k mu_k(t) - mu_A(t)(t)``.
Each (problem, method) cell is one file in ``out/runs`` written atomically, so an interrupted
reproduction resumes; cells run in parallel with ``--jobs``. The time an agent spends in
``act`` and ``observe`` is measured per step (the environment excluded).
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bam_rl import experiments
from bam_rl.experiments.options import RunOptions, claims_from, reproduction
from bam_rl.harness import plotting
from bam_rl.harness.files import write_frame

#: The problems: Besson & Kaufmann's 1..5, problem 4 again at T = 10 000 (``"4-long"``, a
#: column of their Table 5) and ``"random"`` (their random instance).
PROBLEMS: tuple[int | str, ...] = (1, 2, 3, 4, "4-long", 5, "random")
#: Horizon of each problem: where the published tables' cells come from (Besson's thesis,
#: ch. 6, Tables 6.3 and 6.4, the JMLR paper's). Measured, not taken from the captions, which
#: give problem 3 T = 20 000 and problem 5 T = 100 000: at T = 20 000 problem 3 cannot cost
#: more than 889 (the worst arm every step), yet four of its published means exceed it
#: (DTS 2492, SW-klUCB 1794, D-klUCB 1376, Thompson 1019), and at T = 100 000 the reference
#: code lands on them (2445, 1796, -, 1035); problem 5's cells match T = 20 000 (DTS 238,
#: 1192 at T = 100 000) except two that exceed its maximum of 490 there (docs/piecewise.md).
HORIZONS: dict[int | str, int] = {
    1: 5000,
    2: 5000,
    3: 100_000,
    4: 5000,
    "4-long": 10_000,
    5: 20_000,
    "random": 20_000,
}

_REFERENCE = {"variant": "smpybandits-0.9.7"}
# BAM's per-observation readout over Beta-Bernoulli records costs ~7.8 ms a step with an
# unbounded memory at T = 5000 (2.8 ms with 200 records per arm): capped, and run fewer times
_CAPPED = {"capacity": 200}
#: label -> (registered agent, its fixed keyword arguments, legend). Baselines first (the
#: published table's rows), then the reference code's variants, then BAM's agents.
METHODS: dict[str, tuple[str, dict[str, Any], str]] = {
    "oracle-restart-klucb": ("oracle-restart-klucb", {}, "Oracle-Restart klUCB"),
    "glr-klucb": ("glr-klucb", {}, "GLR-klUCB (local)"),
    "glr-klucb-global": ("glr-klucb-global", {}, "GLR-klUCB (global)"),
    "cusum-klucb": ("cusum-klucb", {}, "CUSUM-klUCB"),
    "sw-klucb": ("sw-klucb", {}, "SW-klUCB"),
    "dts": ("dts", {}, "DTS"),
    "klucb": ("klucb", {}, "klUCB"),
    "m-klucb": ("m-klucb", {}, "M-klUCB"),
    "exp3s": ("exp3s", {}, "Exp3S"),
    "thompson": ("thompson", {}, "Thompson sampling"),
    "d-klucb": ("d-klucb", {}, "D-klUCB"),
    "d-klucb-ref": ("d-klucb", _REFERENCE, "D-klUCB, SMPyBandits 0.9.7's code"),
    "dts-ref": ("dts", _REFERENCE, "DTS, SMPyBandits 0.9.7's code"),
    "oracle-restart-klucb-ref": (
        "oracle-restart-klucb",
        {"variant": "smpybandits-2019-01"},
        "Oracle-Restart klUCB, the published runs' code",
    ),
    # the configuration of the same code (cfa5059 to 4fa6468, 2019-01-24..28) set w = 150
    "m-klucb-ref": ("m-klucb", {"window": 150}, "M-klUCB, the published runs' w = 150"),
    "thompson-bam": ("thompson-bam", _CAPPED, "BAM + Thompson, memory 200/arm (beyond)"),
    "thompson-bam-segments": ("thompson-bam-segments", {}, "segment BAM + Thompson (beyond)"),
    "ucbam": ("ucbam", _CAPPED, "UCBAM, memory 200/arm (beyond)"),
    "ucbam-segments": ("ucbam-segments", {}, "segment UCBAM (beyond)"),
    "thompson-bocd": ("thompson-bocd", {}, "BOCD + Thompson (beyond)"),
}
#: The BAM agents of the ranking.
BAM_METHODS = ("thompson-bam", "thompson-bam-segments", "ucbam", "ucbam-segments", "thompson-bocd")
#: Runs per cell beside the baselines' (``seeds``, default 100): the random instances (no
#: published cells) and BAM's agents run fewer, fewer still on longer horizons (BOCD's and the
#: segment readouts' ~0.2 ms a step), the two per-observation readouts (milliseconds a step)
#: fewest and only at T = 5000; at T = 100 000 (problem 3) the baselines run 30 times.
RANDOM_RUNS = 20
BAM_RUNS = 20
LONG_BAM_RUNS = 10
SLOW_BAM_RUNS = 5
SLOW_BAM = ("thompson-bam", "ucbam")
#: Horizons from which the runs shrink further (BAM's agents 5, baselines 30).
VERY_LONG = 100_000
VERY_LONG_BAM_RUNS = 5
VERY_LONG_RUNS = 30


def runs_for(problem: int | str, method: str, runs: int) -> int:
    """Runs of the (problem, method) cell when the baselines run ``runs`` (0: not run; the
    reference code's variants run where there are published cells to compare with)."""
    horizon = HORIZONS[problem]
    if method.endswith("-ref") and problem not in _PUBLISHED_COLUMNS:
        return 0
    if method in SLOW_BAM:
        return min(runs, SLOW_BAM_RUNS) if horizon <= 5000 else 0
    if problem == "random":
        runs = min(runs, RANDOM_RUNS)
    if horizon >= VERY_LONG:
        runs = min(runs, VERY_LONG_BAM_RUNS if method in BAM_METHODS else VERY_LONG_RUNS)
    if method in BAM_METHODS:
        return min(runs, BAM_RUNS if horizon <= 5000 else LONG_BAM_RUNS)
    return runs


#: The default size: a baseline's cell with a published mean ± std runs until its standard
#: error is at most a tenth of the published std (the issue's definition of "enough"), at
#: least :data:`MIN_RUNS` times and at most :func:`runs_for`'s count (100; 30 at T = 100 000).
MIN_RUNS = 20
SE_FRACTION = 0.1


def target_se(problem: int | str, method: str) -> float | None:
    """The standard error a cell's runs stop at by default (``None``: run them all), a tenth
    of the published standard deviation of its cell."""
    published = PUBLISHED.get(problem, {}).get(method)
    return None if published is None else SE_FRACTION * published[1]


def estimated_seconds(problem: int | str, method: str, runs: int) -> float:
    """A cell's agent time as measured on 2026-11-25 (order of magnitude, for scheduling):
    ~12 µs a step for the baselines, ~2 ms for the per-observation readouts, and for BOCD's
    run-length posterior ~40 µs plus 7 µs per thousand steps of horizon, up to 0.3 ms (its
    cap of 10⁴ live run lengths)."""
    horizon = HORIZONS[problem]
    if method in SLOW_BAM:
        per_step = 2e-3
    elif method in BAM_METHODS:
        per_step = min(40e-6 + 7e-9 * horizon, 300e-6)
    else:
        per_step = 12e-6
    return runs * horizon * per_step


#: Agents tuned from (horizon, n_breakpoints); m-klucb from the horizon only.
_TUNED = {"glr-klucb", "glr-klucb-global", "cusum-klucb", "sw-klucb", "exp3s"}

#: Published mean ± std regret (Besson's thesis, ch. 6, Tables 6.3 and 6.4, which repeat the
#: JMLR paper's; problem 1 as the issue quotes it), per problem of :data:`PROBLEMS`.
_PUBLISHED_ROWS = {
    #                       1            2            3            4            4-long        5
    "oracle-restart-klucb": ((37, 37), (45, 34), (257, 86), (68, 40), (86, 50), (126, 54)),
    "exp3s": ((352, 51), (310, 62), (665, 93), (551, 63), (860, 109), (723, 121)),
    "klucb": ((270, 76), (162, 59), (529, 148), (615, 74), (1218, 123), (106, 36)),
    "d-klucb": ((1456, 214), (1442, 440), (1376, 37), (911, 210), (1741, 200), (2085, 910)),
    "sw-klucb": ((177, 34), (182, 34), (1794, 71), (202, 33), (322, 47), (228, 27)),
    "thompson": ((493, 175), (388, 147), (1019, 245), (756, 65), (1476, 137), (88, 39)),
    "dts": ((209, 38), (249, 39), (2492, 52), (250, 39), (481, 58), (238, 24)),
    "m-klucb": ((290, 29), (534, 93), (645, 141), (337, 46), (544, 47), (116, 36)),
    "cusum-klucb": ((148, 32), (152, 42), (490, 133), (267, 69), (343, 94), (117, 34)),
    "glr-klucb": ((74, 31), (113, 34), (513, 97), (99, 32), (128, 42), (149, 34)),
    "glr-klucb-global": ((97, 32), (134, 33), (621, 103), (128, 32), (185, 47), (152, 32)),
}
#: The columns of :data:`_PUBLISHED_ROWS`, in order.
_PUBLISHED_COLUMNS: tuple[int | str, ...] = (1, 2, 3, 4, "4-long", 5)
PUBLISHED: dict[int | str, dict[str, tuple[float, float]]] = {
    problem: {} for problem in _PUBLISHED_COLUMNS
}
for _method, _row in _PUBLISHED_ROWS.items():
    for _problem, (_mean, _std) in zip(_PUBLISHED_COLUMNS, _row, strict=True):
        PUBLISHED[_problem][_method] = (float(_mean), float(_std))
for _cells in PUBLISHED.values():  # the reference code's variants against the same cells
    _cells["d-klucb-ref"] = _cells["d-klucb"]
    _cells["dts-ref"] = _cells["dts"]
    _cells["oracle-restart-klucb-ref"] = _cells["oracle-restart-klucb"]
    _cells["m-klucb-ref"] = _cells["m-klucb"]
del _method, _row, _problem, _mean, _std, _cells


def problem_table(problem: int | str, seed_sequence: np.random.SeedSequence) -> dict[str, Any]:
    """``PiecewiseBandit-v0`` keyword arguments of ``problem`` (a fresh random instance drawn
    from ``seed_sequence`` for ``"random"``)."""
    from bam_rl.envs.piecewise_bandit import random_problem

    if problem == "random":
        means, breakpoints = random_problem(np.random.default_rng(seed_sequence))
        return {"means": means, "breakpoints": breakpoints, "max_steps": HORIZONS[problem]}
    return {"problem": _besson_number(problem), "max_steps": HORIZONS[problem]}


def agent_kwargs(method: str, env: Any) -> dict[str, Any]:
    """The keyword arguments ``method`` gets on ``env``: the tuning inputs, never more."""
    agent, fixed, _ = METHODS[method]
    horizon = int(env.max_steps)
    breakpoints = [int(b) for b in env.breakpoints if b < horizon]
    kwargs = dict(fixed)
    if agent in _TUNED:
        kwargs.update(horizon=horizon, n_breakpoints=len(breakpoints))
    elif agent == "m-klucb":
        kwargs.update(horizon=horizon)
    elif agent == "oracle-restart-klucb":
        kwargs.update(breakpoints=breakpoints, means=env.means[: len(breakpoints) + 1])
    elif agent in ("thompson-bocd", "thompson-bam-segments", "ucbam-segments"):
        kwargs.update(hazard=max(len(breakpoints), 1) / horizon)
    return kwargs


def run_cell(
    problem: int | str,
    method: str,
    runs: int,
    root_seed: int = 0,
    points: int = 50,
    stop_se: float | None = None,
    min_runs: int = MIN_RUNS,
) -> pd.DataFrame:
    """``runs`` runs of ``method`` on ``problem``: one row per (run, grid step) with the
    cumulative regret, plus the run's agent time (seconds in ``act`` + ``observe``).

    With ``stop_se``, the runs stop early, after at least ``min_runs`` of them, once the
    standard error of the final regret is at most ``stop_se`` (run ``r`` is the same run
    either way: the runs of a shorter cell are the first runs of a longer one)."""
    import gymnasium as gym

    from bam_rl.harness.registry import make_agent

    rows = []
    finals: list[float] = []
    _warm_up(problem, method)
    env: Any = None
    for run in range(runs):
        sequence = np.random.SeedSequence([root_seed, _problem_code(problem), run])
        table_seq, env_seq, agent_seq = sequence.spawn(3)
        if env is None or problem == "random":  # a fixed problem's table is every run's
            if env is not None:
                env.close()
            env = gym.make("bam_rl/PiecewiseBandit-v0", **problem_table(problem, table_seq))
        bandit: Any = env.unwrapped  # its rewards replayed (_pulls): no wrapper, no step
        env_seed = int(env_seq.generate_state(1)[0])
        agent = make_agent(
            METHODS[method][0],
            bandit,
            int(agent_seq.generate_state(1)[0]),
            **agent_kwargs(method, bandit),
        )
        observation, info = bandit.reset(seed=env_seed)
        agent.reset(observation, info)
        horizon = bandit.max_steps
        means = bandit.means_table(0, horizon)
        if bandit.reward != "bernoulli":  # _pulls replays Bernoulli rewards only
            raise ValueError(f"the benchmark's rewards are Bernoulli, got {bandit.reward!r}")
        arms, spent = _pulls(agent, observation, bandit.noise_stream(), means)
        regret = np.cumsum(means.max(axis=1) - means[np.arange(horizon), arms])
        grid = np.unique(np.linspace(1, horizon, points).astype(np.int64))
        rows.append(
            pd.DataFrame(
                {
                    "problem": str(problem),
                    "method": method,
                    "run": run,
                    "step": grid,
                    "cumulative_regret": regret[grid - 1],
                    "agent_seconds": spent,
                    "horizon": horizon,
                }
            )
        )
        finals.append(float(regret[-1]))
        if stop_se is not None and len(finals) >= min_runs:
            if np.std(finals, ddof=1) / np.sqrt(len(finals)) <= stop_se:
                break
    if env is not None:
        env.close()
    return pd.concat(rows, ignore_index=True)


def _pulls(
    agent: Any, observation: Any, noise: np.ndarray, means: np.ndarray
) -> tuple[np.ndarray, float]:
    """The arm ``agent`` pulls at every step of the episode, and its seconds in ``act`` and
    ``observe``.

    The rewards are the environment's own (``1.0 if noise[t] < mean else 0.0`` with the
    noise of :meth:`~bam_rl.envs.piecewise_bandit.PiecewiseBanditEnv.noise_stream`, exactly
    what ``step`` returns, tested), replayed without stepping it: a step's bookkeeping
    (an ``info`` dict, a copy of the means) costs more than the fastest agents' whole step.
    The agent sees the step's observation, ``terminated=False``, ``truncated`` at the last
    step and an empty ``info``; the time spent includes the reward's look-up (~0.1 µs).
    """
    horizon = means.shape[0]
    noise_list, means_list = noise.tolist(), means.tolist()
    arms: list[Any] = [0] * horizon
    act, observe, clock = agent.act, agent.observe, time.perf_counter
    info: dict[str, Any] = {}
    spent = 0.0
    last = horizon - 1
    for t in range(horizon):
        start = clock()
        arm = act(observation)
        reward = 1.0 if noise_list[t] < means_list[t][arm] else 0.0
        observe(arm, reward, observation, False, t == last, info)
        spent += clock() - start
        arms[t] = arm
    return np.asarray(arms, dtype=np.int64), spent


def _warm_up(problem: int | str, method: str) -> None:
    """A few untimed steps of a throwaway agent: compiled kernels load (or compile) on first
    use, which is not the per-step time."""
    import gymnasium as gym

    from bam_rl.harness.registry import make_agent
    from bam_rl.harness.runner import rollout

    env = gym.make("bam_rl/PiecewiseBandit-v0", **problem_table(problem, np.random.SeedSequence(0)))
    bandit: Any = env.unwrapped
    agent = make_agent(METHODS[method][0], bandit, 0, **agent_kwargs(method, bandit))
    rollout(bandit, agent, n_steps=20, seed=0)
    env.close()


def _problem_code(problem: int | str) -> int:
    """The problem's entry in the seed sequence: 1..5 their number, ``"4-long"`` its own (6),
    so its runs are independent of problem 4's at T = 5000; the random instances 0."""
    codes = {"random": 0, "4-long": 6}
    return codes[str(problem)] if str(problem) in codes else int(problem)


def _besson_number(problem: int | str) -> int:
    return 4 if problem == "4-long" else int(problem)


def _cell_path(
    folder: Path,
    problem: int | str,
    method: str,
    runs: int,
    root_seed: int,
    stop_se: float | None = None,
) -> Path:
    agent, fixed, _ = METHODS[method]
    settings = {"agent": agent, "kwargs": fixed, "runs": runs, "root_seed": root_seed}
    settings |= {"horizon": HORIZONS[problem], "v": 2}
    if stop_se is not None:  # runs that stop early are another cell than a fixed count
        settings |= {"stop_se": stop_se, "min_runs": MIN_RUNS}
    digest = hashlib.sha1(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:10]
    return folder / f"p{problem}__{method}__{digest}.csv"


def _cell(path: Path, run: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """The cell stored at ``path`` (:func:`_cell_path`), else ``run()`` written there."""
    if path.exists():
        return pd.read_csv(path, dtype={"problem": str})
    frame = run()
    write_frame(frame, path)
    return frame


def piecewise_experiment(
    out_dir: str | Path,
    problems: Sequence[int | str] = PROBLEMS,
    methods: Sequence[str] = tuple(METHODS),
    runs: int = 100,
    n_jobs: int = 1,
    root_seed: int = 0,
    progress: bool = True,
    stop_early: bool = False,
) -> pd.DataFrame:
    """Runs every (problem, method) cell not yet in ``out_dir`` (in parallel with ``n_jobs``)
    and returns all their rows (:func:`run_cell`'s columns). With ``stop_early``, a cell with
    a published std stops early at :func:`target_se` (at most :func:`runs_for`'s runs)."""
    from joblib import Parallel, delayed
    from tqdm.auto import tqdm

    for method in methods:
        if method not in METHODS:
            raise ValueError(f"method must be one of {sorted(METHODS)}, got {method!r}")
    for problem in problems:
        if problem not in PROBLEMS:
            raise ValueError(f"problem must be one of {PROBLEMS}, got {problem!r}")
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    # longest first (LPT), so the workers finish together instead of one waiting on a late
    # long cell
    cells = sorted(
        ((p, m) for p in problems for m in methods if runs_for(p, m, runs)),
        key=lambda cell: -estimated_seconds(cell[0], cell[1], runs_for(cell[0], cell[1], runs)),
    )

    def job(problem: int | str, method: str) -> Any:
        cell = (problem, method, runs_for(problem, method, runs), root_seed)
        stop_se = target_se(problem, method) if stop_early else None
        run = functools.partial(run_cell, *cell, stop_se=stop_se)
        return delayed(_cell)(_cell_path(folder, *cell, stop_se), run)

    jobs = (job(p, m) for p, m in cells)
    parallel = Parallel(n_jobs=n_jobs, return_as="generator")  # joblib >= 1.3
    frames = list(tqdm(parallel(jobs), total=len(cells), disable=not progress, desc="cells"))
    return pd.concat(frames, ignore_index=True)


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Final regret per (problem, method): mean, std, standard error, runs, the published
    mean ± std where known, whether ours lies within max(3 SE, 10 % of the published mean)
    and whether the SE is at most a tenth of the published std, and the agent's microseconds
    per step."""
    last = frame[frame["step"] == frame["horizon"]]
    grouped = last.groupby(["problem", "method"], sort=False)
    summary = grouped.agg(
        mean=("cumulative_regret", "mean"),
        std=("cumulative_regret", "std"),
        runs=("cumulative_regret", "size"),
        seconds=("agent_seconds", "sum"),
        horizon=("horizon", "first"),
    ).reset_index()
    summary["se"] = summary["std"] / np.sqrt(summary["runs"])
    summary["us_per_step"] = 1e6 * summary["seconds"] / (summary["runs"] * summary["horizon"])
    published = [
        PUBLISHED.get(_parse_problem(p), {}).get(m, (np.nan, np.nan))
        for p, m in zip(summary["problem"], summary["method"], strict=True)
    ]
    summary["published_mean"] = [p[0] for p in published]
    summary["published_std"] = [p[1] for p in published]
    bound = np.fmax(3 * summary["se"], 0.1 * summary["published_mean"])  # one run: no SE
    within = (summary["mean"] - summary["published_mean"]).abs() <= bound
    summary["within"] = within.where(summary["published_mean"].notna(), other=pd.NA)
    # enough runs: a standard error of at most a tenth of the published standard deviation
    enough = summary["se"] <= 0.1 * summary["published_std"]
    summary["se_under_tenth"] = enough.where(summary["published_mean"].notna(), other=pd.NA)
    summary["label"] = [METHODS[m][2] for m in summary["method"]]
    order = {m: i for i, m in enumerate(METHODS)}
    summary["order"] = summary["method"].map(order)
    summary["problem_order"] = summary["problem"].map({str(p): i for i, p in enumerate(PROBLEMS)})
    summary = summary.sort_values(["problem_order", "order"]).drop(
        columns=["order", "problem_order", "seconds"]
    )
    columns = ["problem", "method", "label", "mean", "std", "se", "runs", "published_mean"]
    columns += ["published_std", "within", "se_under_tenth", "us_per_step", "horizon"]
    return summary[columns].reset_index(drop=True)


def _parse_problem(problem: Any) -> int | str:
    return str(problem) if str(problem) in ("random", "4-long") else int(problem)


#: The five methods docs/piecewise.md discusses ("BAM against GLR-klUCB, honestly"), drawn in
#: strong colours and labelled at their line ends; every other method is a thin grey line.
HIGHLIGHTED = (
    "thompson-bocd",
    "glr-klucb",
    "thompson-bam-segments",
    "oracle-restart-klucb",
    "ucbam-segments",
)
#: Their end labels (the legend labels without "(beyond)"; the caption says which are BAM's).
_END_LABELS = {
    "thompson-bocd": "BOCD + Thompson",
    "glr-klucb": "GLR-klUCB (local)",
    "thompson-bam-segments": "segment BAM + Thompson",
    "oracle-restart-klucb": "Oracle-Restart klUCB",
    "ucbam-segments": "segment UCBAM",
}
#: Their dash patterns: BAM's agents solid, the field's change-point bandit dash-dot, the
#: oracle (it knows the breakpoints) dashed.
_LINESTYLES = {"glr-klucb": (0, (6, 2, 1, 2)), "oracle-restart-klucb": (0, (5, 2))}


def plot_piecewise(frame: pd.DataFrame, path: str | Path | None = None) -> Any:
    """Mean cumulative regret over time, one panel per problem: the five methods the text
    discusses (:data:`HIGHLIGHTED`) in strong colours with 25–75 % bands over runs and
    labels at their line ends, every other method a thin grey line named in one legend row."""
    problems = [p for p in map(str, PROBLEMS) if p in set(frame["problem"])]
    columns = min(3, len(problems))
    rows = -(-len(problems) // columns)
    figure, axes = plotting.new_figure(rows, columns, figsize=(5.6 * columns + 1.0, 3.8 * rows))
    axes = np.atleast_1d(axes).ravel()
    styles = plotting.highlight_styles(list(METHODS), HIGHLIGHTED, linestyles=_LINESTYLES)
    labels = {m: _END_LABELS.get(m, METHODS[m][2]) for m in METHODS}
    drawn: set[str] = set()
    for axis, problem in zip(axes, problems, strict=False):
        cell = frame[frame["problem"] == problem]
        curves = {}
        for method in METHODS:
            runs = cell[cell["method"] == method]
            if runs.empty:
                continue
            by_step = runs.groupby("step")["cumulative_regret"]
            mean = by_step.mean()
            low, high = by_step.quantile(0.25), by_step.quantile(0.75)
            curves[method] = (mean.index, mean.values, low.values, high.values)
        lines = plotting.plot_highlighted(axis, curves, HIGHLIGHTED, labels, styles)
        drawn |= set(lines)
        title = (
            "random instances"
            if problem == "random"
            else f"Problem {_besson_number(_parse_problem(problem))}"
        )
        horizon = f"{HORIZONS[_parse_problem(problem)]:,}".replace(",", " ")
        title += f", T = {horizon}"
        axis.set(title=title, xlabel="step $t$", ylabel="cumulative regret (log scale)")
        axis.set_yscale("log")
        axis.set_ylim(bottom=5.0)  # regrets of a few pulls would stretch the scale
        plotting.label_line_ends(axis, {labels[m]: lines[m] for m in HIGHLIGHTED if m in lines})
    for axis in axes[len(problems) :]:
        axis.set_visible(False)
    figure.suptitle("Piecewise-stationary Bernoulli bandits (Besson et al.) — beyond the paper")
    others = [METHODS[m][2] for m in METHODS if m in drawn and m not in HIGHLIGHTED]
    legend = plotting.context_legend(figure, others, title="thin grey, the other methods")
    runs = frame.groupby(["problem", "method"])["run"].nunique()
    plotting.add_caption(
        figure,
        f"Lines: mean over runs ({runs.min()}–{runs.max()} a cell: by default a baseline's runs "
        "stop once their SE is a tenth of the published std; fewer on long horizons, the random "
        "instances and for BAM's agents; see the summary's runs column). In colour, labelled at "
        "their ends, the five methods docs/piecewise.md compares, with bands of 25–75 % of "
        "runs: BOCD + Thompson, segment BAM + Thompson and segment UCBAM (BAM's agents, beyond "
        "the paper, solid), GLR-klUCB (local; dash-dot) and the Oracle-Restart klUCB, which "
        "knows the breakpoints (dashed). Every method sees the same streams.",
        below=legend,
    )
    return plotting.save_figure(figure, path)


@reproduction(default_seeds=100, quick_seeds=3)
def reproduce(options: RunOptions) -> pd.DataFrame:
    """Runs the benchmark; writes ``piecewise_summary.csv``, ``piecewise_regret.csv`` (mean and
    quartiles of the cumulative regret on a 50-point grid), ``piecewise.png`` and the cells in
    ``out/runs`` (an interrupted reproduction resumes). Returns the summary.

    Args:
        out: Output directory.
        seeds: Runs per (problem, method) of the baselines on problems 1-5, fewer for the
            others and at T = 100 000 (:data:`VERY_LONG_RUNS`, :func:`runs_for`). Default:
            enough for a standard error of at most a tenth of the published standard
            deviation (:func:`target_se`; the summary's ``se_under_tenth``), at least
            :data:`MIN_RUNS` and at most 100 runs (30 at T = 100 000); ``quick``: 3.
        quick: Problem 1 only, 3 runs.
        n_jobs: Parallel workers (cells).
        progress: Show a progress bar.
    """
    out, quick, runs = options.out, options.quick, options.seeds
    problems: tuple[int | str, ...] = (1,) if quick else PROBLEMS
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 2:
        raise ValueError(f"seeds must be an int >= 2 (runs per cell), got {runs!r}")
    frame = piecewise_experiment(
        out / "runs",
        problems,
        runs=runs,
        n_jobs=options.n_jobs,
        progress=options.progress,
        stop_early=not options.seeds_given and not quick,
    )
    by_step = frame.groupby(["problem", "method", "step"])["cumulative_regret"]
    curves = by_step.agg(
        mean="mean", q25=lambda x: x.quantile(0.25), q75=lambda x: x.quantile(0.75)
    )
    write_frame(curves.reset_index(), out / "piecewise_regret.csv")
    return plotting.write_summary(
        quick,
        summarize(frame),
        out / "piecewise_summary.csv",
        draw=lambda: plot_piecewise(frame, out / "piecewise.png"),
    )


#: What the benchmark's reproduction checks (rows of the report's claim table).
CLAIMS = (
    "Beyond the paper: the change-point baselines reproduce Besson et al.'s published mean "
    "regret on problems 1-5 (within max(3 SE, 10 %)).",
    "Beyond the paper: BAM's bandits against GLR-klUCB (local) on problems 1-5 and the "
    "random instances (lower mean regret).",
)


@claims_from("piecewise_summary.csv", "piecewise-bandits", "beyond", CLAIMS, dtype={"problem": str})
def claims(summary: pd.DataFrame) -> list[dict[str, str]]:
    """The benchmark's rows of the claim table from ``folder/piecewise_summary.csv``."""
    from bam_rl.experiments.report import claim

    # the paper's algorithms; a "-ref" row (the published runs' code where it departs from
    # the paper) stands in for its algorithm's cell when it is within
    published = summary[summary["published_mean"].notna()]
    within = {
        (p, m): str(w) == "True"
        for p, m, w in zip(
            published["problem"], published["method"], published["within"], strict=True
        )
    }
    cells = published[~published["method"].str.endswith("-ref")]
    inside = cells["within"].astype(str) == "True"
    with_code = [
        ok or within.get((p, f"{m}-ref"), False)
        for p, m, ok in zip(cells["problem"], cells["method"], inside, strict=True)
    ]
    misses = ", ".join(
        f"P{p} {m} {mean:.0f} vs {pub:.0f}"
        for p, m, mean, pub, ok in zip(
            cells["problem"],
            cells["method"],
            cells["mean"],
            cells["published_mean"],
            with_code,
            strict=True,
        )
        if not ok
    )
    measured = (
        f"{int(inside.sum())} of {len(cells)} cells within, {sum(with_code)} with the published "
        "runs' code where it departs from the paper" + (f"; outside: {misses}" if misses else "")
    )
    verdict: bool | str = all(with_code) or ("partly" if any(with_code) else False)
    rows = [claim("piecewise-bandits", "beyond", CLAIMS[0], measured, verdict)]
    texts, wins = [], []
    for problem, cell in summary.groupby("problem", sort=False):
        means = dict(zip(cell["method"], cell["mean"], strict=True))
        if "glr-klucb" not in means:
            continue
        glr = means["glr-klucb"]
        for method in BAM_METHODS:
            if method in means:
                wins.append(means[method] < glr)
        best = min((m for m in BAM_METHODS if m in means), key=means.__getitem__, default=None)
        if best is not None:
            name = "random" if problem == "random" else f"P{problem}"
            texts.append(f"{name}: {best} {means[best]:.0f} vs GLR {glr:.0f}")
    result: bool | str | None = None
    if wins:
        result = all(wins) or ("partly" if any(wins) else False)
    rows.append(claim("piecewise-bandits", "beyond", CLAIMS[1], "; ".join(texts) or None, result))
    return rows


__all__ = [
    "BAM_METHODS",
    "CLAIMS",
    "HIGHLIGHTED",
    "METHODS",
    "PROBLEMS",
    "PUBLISHED",
    "agent_kwargs",
    "claims",
    "piecewise_experiment",
    "plot_piecewise",
    "problem_table",
    "reproduce",
    "run_cell",
    "runs_for",
    "summarize",
    "target_se",
]


def scale(folder: str | Path) -> str:
    """What ``folder/piecewise_summary.csv`` holds, counted (the report's caption): problems,
    methods and runs per cell; ``""`` without the file."""

    def sentence(summary: pd.DataFrame) -> str:
        low, high = int(summary["runs"].min()), int(summary["runs"].max())
        runs = plotting.count_text(low, "run") if low == high else f"{low}–{high} runs"
        counts = experiments.distinct(summary, problem="problem", method="method")
        return f"{counts}, {runs} per cell."

    return experiments.counted(
        folder, "piecewise_summary.csv", ["problem", "method", "runs"], sentence
    )
