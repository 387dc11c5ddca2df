"""Recurring worlds (issue 42, beyond the paper): BAM against every rule on seven environments
where a world comes back (``bam_rl/Recurring<Name>-v0``, :mod:`bam_rl.wrappers.recurring`).

Every method (:data:`METHODS`) runs the whole schedule A → B → A → C → B of each
environment, in the episodic setting (changes announced) and the continual one (not
announced). GT MPC (the ground-truth planner, a reference that does not learn) is one of the
methods: it runs every trial too, in the same (environment, setting) config as the learners.
A run's seeds come from (config, seed) alone (:meth:`~bam_rl.harness.RunSpec.seeds`, common
random numbers), and the suite's environments draw a trial's start state from the reset
generator only (never from the actions), so trial *t* of seed *s* starts from the same state
for every method: each learner's trial is scored against GT MPC's trial from the same start
state (*paired*), and a learner that acted as GT MPC would score exactly 1. A trial's *score*
is its return. Per (environment, setting, method, seed, visit) :func:`visit_table` measures,
against GT MPC's trials of that seed:

* ``first``: the visit's first trial relative to GT MPC's same trial (:func:`relative`:
  return / GT for a positive GT, GT / return for costs, i.e. negative returns);
* ``to_90``: trials until the relative score reaches 0.9 (the visit's length + 1 if never);
  after a change this is NS-Gym's *recovery time*;
* ``drop``: the relative score of the last trial before the change minus the first after it
  (NS-Gym's drop at the change; ``NaN`` on the first visit);
* ``regret``: Σ over the visit's trials of (GT − return), NS-Gym's regret against GT;
* ``gt``: GT MPC's median return over the visit's trials (its level in that world).

``summary.csv`` holds their medians over seeds (and, per revisit, the fraction of seeds whose
first trial is ≥ 0.7 × GT); ``trials.csv`` every trial; one figure per environment
(``recurring_<env>.png``) and ``recurring_overview.png`` (the first revisit trial / GT per
method and environment). Resumable per (environment × setting, method, seed) under
``out/runs`` (:func:`~bam_rl.harness.run_many`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bam_rl import experiments
from bam_rl.agents.settings import ENV_SETTINGS
from bam_rl.beliefs.peers import CONCENTRATION, WINDOW_STEPS
from bam_rl.experiments.options import RunOptions, claims_from, reproduction, sweep_backend
from bam_rl.harness import naming, plotting
from bam_rl.harness.files import write_frame
from bam_rl.wrappers.recurring import ORDER, SUITE

#: Learned methods: label -> registered agent (the cart-pole experiment's labels).
LEARNED = {
    "bam_segments": "mppi-bam-segments",
    "bam": "mppi-bam",
    "bam_bocd": "mppi-bam-bocd",
    "bocd": "mppi-bocd",
    "recursive": "mppi-recursive",
    "forgetting": "mppi-forgetting",
}
#: Peers (issue 52, beyond the paper; label -> registered agent), run with ``peers=True`` in the
#: settings without announcements only: GrBAL-style recent window, MOLe/DPGP-style CRP mixture.
PEERS = {"recent_window": "mppi-recent-window", "crp_mixture": "mppi-crp-mixture"}
#: Every method: the learned ones and GT MPC (the reference, label ``"gt"``).
METHODS = {**LEARNED, "gt": "mppi-gt"}
#: The reference method's label.
REFERENCE = "gt"
#: Labels (the cart-pole's naming table, plus exponential forgetting).
LABELS = {
    **{key: naming.label("cartpole", key) for key in METHODS},
    "forgetting": "Exponential forgetting (0.8)",
    "recent_window": "Recent window (peer, GrBAL-style)",
    "crp_mixture": "CRP mixture (peer, MOLe-style)",
}
#: The methods the figures draw strong; the others are grey context.
HIGHLIGHTED = ("bam_segments", "recursive", "gt")
SETTINGS = ("episodic", "continual")
#: Settings beyond the default (issue 52), chosen with ``settings=``: ``in_trial`` (nothing
#: announced, the world changing every :data:`IN_TRIAL_EVERY` steps, inside trials, along
#: A B A C B twice) and ``stationary`` (world A held for :data:`STATIONARY_TRIALS` trials,
#: nothing announced: what a learner believes there beyond one world is a false split).
EXTRA_SETTINGS = ("in_trial", "stationary")
#: Settings without announcements: where the peers run.
UNANNOUNCED = ("continual", "in_trial", "stationary")
IN_TRIAL_EVERY = 150
#: The in-trial setting's environments when none are named (Pendulum-v1 and our cart-pole).
IN_TRIAL_ENVS = ("Pendulum", "CartPoleSwingUp")
IN_TRIAL_ROUNDS = 2
STATIONARY_TRIALS = 12
EXPERIMENT = "recurring-worlds"
SECTION = "beyond the paper"
#: The settings of every method come from the settings table
#: (:data:`bam_rl.agents.settings.ENV_SETTINGS`, docs/env_settings.md), each recurring id's
#: row: its planning reward and planner options (the same for the learners and GT MPC, chosen
#: before this benchmark and not tuned on it) and the learners' model options (planning with
#: the posterior mean). They are passed explicitly, so that a run file's key changes with
#: the table; ``bam-rl run --env bam_rl/Recurring<Name>-v0`` builds the same agents without
#: them. The learners' dtype is named too (the agents' default), for the same reason.
KEY_OPTIONS: dict[str, Any] = {"planning_dtype": "float32"}
#: The peers' own options, named so that a run file's key changes with them.
PEER_KEY_OPTIONS: dict[str, dict[str, Any]] = {
    "recent_window": {"window_steps": WINDOW_STEPS},
    "crp_mixture": {"concentration": CONCENTRATION},
}
FIRST_TRIAL_RATIO = 0.7
WITHIN = 0.9
#: ``--quick``: two classic-control environments, one trial per world of 30 steps, a short
#: planner.
QUICK_ENVS = ("Pendulum", "CartPole")
#: The default reproduction's trials per world (the registered ids keep the suite's own, 3-5):
#: two, so that 5 seeds of all seven environments, every method and GT MPC on every trial in
#: both settings fit an hour on 2 cores (docs/recurring.md has the measured costs).
TRIALS_PER_WORLD = 2
#: The default reproduction's seeds (the issue's acceptance is on 5).
SEEDS = 5
QUICK = {"trials_per_world": 1, "trial_steps": 30}
QUICK_PLANNER = {"horizon": 10, "n_samples": 8}


def relative(score: Any, gt: Any) -> Any:
    """A return relative to GT MPC's: ``score / gt`` where GT's return is positive, ``gt /
    score`` where it is a cost (negative; a non-negative score then counts as 1). 1 = as good
    as GT MPC, 0.5 = half its reward or twice its cost; ``NaN`` without a GT return."""
    score = np.asarray(score, dtype=np.float64)
    gt = np.asarray(gt, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        cost = np.where(score < 0, gt / np.where(score < 0, score, 1.0), 1.0)
        reward = score / np.where(gt != 0, gt, np.nan)
    # a missing GT trial (NaN) scores NaN, never the cost branch's 1
    return np.where(np.isnan(gt), np.nan, np.where(gt > 0, reward, cost))


def config_label(name: str, setting: str) -> str:
    """The ``config`` column of a run: ``<Name>-episodic`` / ``<Name>-continual``."""
    return f"{name}-{setting}"


def _extra_config(name: str, setting: str, quick: bool) -> tuple[str, dict[str, Any], int]:
    """``(env_id, env_kwargs, trials)`` of an :data:`EXTRA_SETTINGS` config: the suite's
    environment in ``bam_rl/NonStationary-v0``, nothing announced."""
    spec = SUITE[name]
    by_name = dict(zip("ABC", spec.worlds, strict=True))
    limit = "max_steps" if spec.env_id.startswith("bam_rl/") else "max_episode_steps"
    steps = QUICK["trial_steps"] if quick else spec.max_episode_steps
    kwargs: dict[str, Any] = {"env": spec.env_id, "notify": "none", **spec.env_kwargs}
    if steps is not None:
        kwargs[limit] = steps
    if setting == "stationary":
        trials = 4 if quick else STATIONARY_TRIALS
        kwargs["changes"] = {spec.parameter: {"piecewise": {"points": {"0": by_name["A"]}}}}
        return "bam_rl/NonStationary-v0", kwargs, trials
    every = 10 if quick else IN_TRIAL_EVERY
    worlds = ORDER * (1 if quick else IN_TRIAL_ROUNDS)
    points = {str(i * every): by_name[world] for i, world in enumerate(worlds)}
    kwargs["changes"] = {spec.parameter: {"piecewise": {"points": points, "unit": "step"}}}
    trial_steps = steps if steps is not None else 200  # Pendulum-v1's and the cart-pole's
    return "bam_rl/NonStationary-v0", kwargs, -(-(every * len(worlds) + 1) // trial_steps)


def grid(
    seeds: int,
    quick: bool = False,
    envs: Any = None,
    settings: Any = SETTINGS,
    methods: Any = None,
    peers: bool = False,
) -> list[Any]:
    """The runs: every method (GT MPC too) × environment × setting × seed over the whole
    schedule, each (environment, setting) one config ``<Name>-<setting>``, so trial *t* of
    seed *s* starts from the same state for every method (see the module). With ``peers``
    the :data:`PEERS` run too, in the settings without announcements; the ``in_trial``
    setting runs on the named environments, else on :data:`IN_TRIAL_ENVS`."""
    from bam_rl.harness import make_grid
    from bam_rl.wrappers.recurring import recurring_id

    envs, settings, methods = _check_envs(envs), _check_settings(settings), _check_methods(methods)
    if not isinstance(peers, bool):
        raise ValueError(f"peers must be a bool, got {peers!r}")
    named = envs
    envs = list(QUICK_ENVS if quick and envs is None else envs or SUITE)
    methods = list(METHODS if methods is None else methods)
    runs: list[Any] = []
    for name in envs:
        spec = SUITE[name]
        quick_planner = QUICK_PLANNER if quick else {}
        for setting in settings:
            env_kwargs: dict[str, Any] = (
                dict(QUICK) if quick else {"trials_per_world": TRIALS_PER_WORLD}
            )
            n_episodes = env_kwargs.get("trials_per_world", spec.trials_per_world) * len(ORDER)
            env_id = recurring_id(name, setting != "episodic")
            row = ENV_SETTINGS[env_id]
            if setting in EXTRA_SETTINGS:
                if setting == "in_trial" and named is None and name not in IN_TRIAL_ENVS:
                    continue
                env_id, env_kwargs, n_episodes = _extra_config(name, setting, quick)
            chosen: dict[str, tuple[str, dict[str, Any]]] = {}
            labels = [*methods, *(PEERS if peers and setting in UNANNOUNCED else ())]
            for label in labels:
                if label in LEARNED or label in PEERS:
                    agent = LEARNED.get(label) or PEERS[label]
                    options = {**row.options("learned"), **quick_planner}
                    chosen[label] = (
                        agent,
                        {
                            "announced": setting == "episodic",
                            **KEY_OPTIONS,
                            **PEER_KEY_OPTIONS.get(label, {}),
                            **options,
                        },
                    )
                elif label == REFERENCE:
                    chosen[label] = (METHODS[label], {**row.options("gt"), **quick_planner})
            if chosen:
                runs += make_grid(
                    chosen,
                    {config_label(name, setting): (env_id, env_kwargs)},
                    seeds=seeds,
                    n_episodes=n_episodes,
                )
    return runs


def per_trial(steps: pd.DataFrame) -> pd.DataFrame:
    """One row per (env, setting, method, seed, trial): the return, the steps, the world's
    value and visit (0-4 along :data:`~bam_rl.wrappers.recurring.ORDER`)."""
    frame = steps.copy()
    parts = frame["config"].str.rsplit("-", n=1, expand=True)
    frame["env"], frame["setting"] = parts[0], parts[1]
    frame["world_value"] = np.nan
    for name in frame["env"].unique():  # the ground truth of each environment's parameter
        column = "context_" + SUITE[name].parameter
        if column in frame:
            mine = frame["env"] == name
            frame.loc[mine, "world_value"] = frame.loc[mine, column].astype(np.float64)
    rows = (
        frame.groupby(["env", "setting", "method", "seed_index", "episode"], sort=True)
        .agg(
            score=("reward", "sum"),
            steps=("reward", "size"),
            world_value=("world_value", "first"),
        )
        .reset_index()
        .rename(columns={"episode": "trial"})
    )
    per_world = (rows.groupby(["env", "setting"])["trial"].transform("max") + 1) // len(ORDER)
    rows["visit"] = np.minimum(rows["trial"] // per_world.clip(lower=1), len(ORDER) - 1)
    rows["world"] = [ORDER[v] for v in rows["visit"]]
    return rows


def with_reference(trials: pd.DataFrame) -> pd.DataFrame:
    """``trials`` with ``gt`` (GT MPC's return on the same env, setting, seed and trial: the
    same start state) and ``relative`` (:func:`relative` of the two) for every method."""
    keys = ["env", "setting", "seed_index", "trial"]
    reference = trials[trials["method"] == REFERENCE][[*keys, "score"]]
    frame = trials.merge(reference.rename(columns={"score": "gt"}), on=keys, how="left")
    frame["relative"] = relative(frame["score"].to_numpy(), frame["gt"].to_numpy())
    return frame


#: The columns of :func:`visit_table` (``visits.csv``), also those of an empty one.
VISIT_COLUMNS = (
    "env",
    "setting",
    "method",
    "seed_index",
    "visit",
    "world",
    "world_value",
    "revisit",
    "gt",
    "first",
    "to_90",
    "drop",
    "regret",
)


def visit_table(trials: pd.DataFrame) -> pd.DataFrame:
    """Per (env, setting, method, seed, visit) of the learned methods: ``first`` (the first
    trial relative to GT MPC's same trial), ``to_90``, ``drop``, ``regret``, ``gt`` (see the
    module) and ``revisit``."""
    scored = with_reference(trials)
    learned = scored[scored["method"] != REFERENCE]
    from bam_rl.experiments.recurring_metrics import visit_blocks

    rows = []
    previous_last, previous_run = np.nan, None
    for _, block, keys in visit_blocks(learned, ORDER):
        visit = keys["visit"]
        run_id = tuple(keys[k] for k in ("env", "setting", "method", "seed_index"))
        if run_id != previous_run:  # a run's first visit has no trial before its change
            previous_last, previous_run = np.nan, run_id
        ratios = block["relative"].to_numpy()
        reference = block["gt"].to_numpy()
        hits = np.flatnonzero(ratios >= WITHIN)
        rows.append(
            {
                **keys,
                "world_value": float(block["world_value"].iloc[0]),
                "revisit": ORDER[visit] in ORDER[:visit],
                "gt": float(np.median(reference)),
                "first": float(ratios[0]),
                "to_90": int(hits[0]) + 1 if hits.size else len(ratios) + 1,
                "drop": previous_last - float(ratios[0]),
                "regret": float(np.sum(reference - block["score"].to_numpy())),
            }
        )
        previous_last = float(ratios[-1])
    # the rows' own keys when there are rows (a test holds them to VISIT_COLUMNS)
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=list(VISIT_COLUMNS))


def summarize(visits: pd.DataFrame) -> pd.DataFrame:
    """Medians over seeds per (env, setting, method, visit), and ``pass_07``: the fraction of
    seeds whose first trial reaches 0.7 × GT MPC."""
    keys = ["env", "setting", "method", "visit", "world", "world_value", "revisit"]
    grouped = visits.groupby(keys, sort=True)
    summary = grouped.agg(
        gt=("gt", "median"),
        first=("first", "median"),
        to_90=("to_90", "median"),
        drop=("drop", "median"),
        regret=("regret", "mean"),
        seeds=("seed_index", "nunique"),
    ).reset_index()
    summary["pass_07"] = grouped["first"].apply(lambda x: float(np.mean(x >= 0.7))).to_numpy()
    summary["label"] = summary["method"].map(LABELS)
    return summary


def plot_environment(trials: pd.DataFrame, name: str, path: str | Path | None = None) -> Any:
    """Relative score per trial (median over seeds, 25–75 % bands for the highlighted
    methods) in each setting, with the world's value per trial below (trials are whole
    numbers: integer ticks)."""
    from matplotlib.ticker import MaxNLocator

    spec = SUITE[name]
    mine = trials[trials["env"] == name]
    settings = [s for s in SETTINGS if s in set(mine["setting"])]
    figure, axes = plotting.new_figure(
        2,
        max(1, len(settings)),
        figsize=(6 * max(1, len(settings)), 5.5),
        squeeze=False,
        sharex=True,
        gridspec_kw={"height_ratios": [3, 1]},
    )
    scored = with_reference(mine)
    keys = [k for k in METHODS if k in set(mine["method"]) and k != REFERENCE]
    styles = plotting.highlight_styles(keys, [k for k in HIGHLIGHTED if k in keys])
    for column, setting in enumerate(settings):
        top, bottom = axes[0][column], axes[1][column]
        rows = scored[scored["setting"] == setting]
        curves = {}
        for key in keys:
            by_trial = rows[rows["method"] == key].groupby("trial")["relative"]
            median = by_trial.median()
            curves[key] = (
                median.index,
                median.to_numpy(),
                by_trial.quantile(0.25).to_numpy(),
                by_trial.quantile(0.75).to_numpy(),
            )
        lines = plotting.plot_highlighted(top, curves, HIGHLIGHTED, labels=LABELS, styles=styles)
        top.axhline(1.0, color="black", lw=0.8, ls=":")
        top.axhline(FIRST_TRIAL_RATIO, color="grey", lw=0.6, ls="--")
        top.set(
            title=f"{setting}: changes {'announced' if setting == 'episodic' else 'not announced'}",
            ylabel="return relative to GT MPC",
        )
        world = rows.groupby("trial")["world_value"].first()
        bottom.step(world.index, world.to_numpy(), where="mid", color="black")
        bottom.set(xlabel="trial", ylabel=spec.parameter)
        for axis in (top, bottom):  # shared x: one locator, set on both to be explicit
            axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        top.set_ylim(min(-0.05, top.get_ylim()[0]), max(1.25, top.get_ylim()[1]))
        if column == len(settings) - 1:
            plotting.label_line_ends(top, {LABELS[k]: lines[k] for k in HIGHLIGHTED if k in lines})
    seeds = mine["seed_index"].nunique()
    figure.suptitle(f"Recurring worlds: {spec.description}")
    below = plotting.context_legend(figure, [LABELS[k] for k in keys if k not in HIGHLIGHTED])
    plotting.add_caption(
        figure,
        f"Median over {plotting.count_text(seeds, 'seed')} of each trial's return relative to "
        "GT MPC's trial from the same start state (return / GT; GT / return for costs), 25–75 % "
        "bands for the highlighted methods; dotted: GT MPC; dashed: 0.7 × GT.",
        width=140,
        below=below,
    )
    return plotting.save_figure(figure, path)


def _overview_limits(values: list[Any], pad: float = 0.08) -> tuple[float, float]:
    """The overview's y limits: the finite ``values``, 0.7 × GT and GT itself, padded by
    ``pad`` of their range on both sides (at least 0.05), so a dot on either reference line or
    at an extreme is drawn whole inside the axis."""
    arrays = [np.ravel(np.asarray(v, dtype=np.float64)) for v in values]
    every = np.concatenate(arrays) if arrays else np.empty(0)
    finite = every[np.isfinite(every)]
    low = min(FIRST_TRIAL_RATIO, float(finite.min())) if finite.size else FIRST_TRIAL_RATIO
    high = max(1.0, float(finite.max())) if finite.size else 1.0
    margin = max(pad * (high - low), 0.05)
    return low - margin, high + margin


def plot_overview(
    visits: pd.DataFrame, path: str | Path | None = None, settings: Any = SETTINGS
) -> Any:
    """The first trial of the revisits relative to GT MPC (median over seeds and the two
    revisits), per method and environment, in each of ``settings`` run; the peers, where
    run, in colour beside the highlighted methods."""
    revisits = visits[visits["revisit"]]
    settings = [s for s in settings if s in set(revisits["setting"])]
    figure, axes = plotting.new_figure(
        1, max(1, len(settings)), figsize=(7 * max(1, len(settings)), 4.5), squeeze=False
    )
    envs = [e for e in SUITE if e in set(revisits["env"])]
    keys = [k for k in {**LEARNED, **PEERS} if k in set(revisits["method"])]
    highlighted = (*HIGHLIGHTED, *PEERS)
    peer_colors = {"recent_window": "green", "crp_mixture": "purple"}  # never GT's black
    styles = plotting.highlight_styles(
        keys,
        [k for k in highlighted if k in keys],
        colors={k: plotting.PALETTE[c] for k, c in peer_colors.items() if k in keys},
    )
    for column, setting in enumerate(settings):
        axis = axes[0][column]
        rows = revisits[revisits["setting"] == setting]
        table = rows.groupby(["method", "env"])["first"].median().unstack("env")
        # environments are categories: dots, nudged apart per method, never joined by a line
        nudge = {key: 0.08 * (i - (len(keys) - 1) / 2) for i, key in enumerate(keys)}
        curves = {
            key: (
                np.arange(len(envs)) + nudge[key],
                table.reindex(columns=envs).loc[key].to_numpy(),
            )
            for key in keys
            if key in table.index
        }
        lines = plotting.plot_highlighted(axis, curves, highlighted, labels=LABELS, styles=styles)
        for line in lines.values():
            line.set_marker("o")
            line.set_linestyle("none")
        axis.axhline(FIRST_TRIAL_RATIO, color="grey", lw=0.6, ls="--")
        axis.axhline(1.0, color="black", lw=0.8, ls=":")
        axis.set_xticks(np.arange(len(envs)), envs, rotation=30, ha="right")
        axis.set_xlim(-0.5, len(envs) - 0.5)
        axis.set_ylim(*_overview_limits([curve[1] for curve in curves.values()]))
        axis.set(title=setting, ylabel="first revisit trial / GT MPC")
        if column == len(settings) - 1:  # the highlighted methods named at their last dot
            plotting.label_line_ends(axis, {LABELS[k]: lines[k] for k in highlighted if k in lines})
    below = plotting.context_legend(figure, [LABELS[k] for k in keys if k not in highlighted])
    plotting.add_caption(
        figure,
        "Median over seeds and both revisits (A at visit 3, B at visit 5) of the first trial's "
        "return relative to GT MPC's trial from the same start state; dotted: GT MPC; dashed: "
        "0.7 × GT. In colour, named at their last dot: "
        + ", ".join(LABELS[k] for k in highlighted if k in keys)
        + "; thin grey, the others.",
        width=140,
        below=below,
    )
    return plotting.save_figure(figure, path)


@reproduction(default_seeds=SEEDS, quick_seeds=1)
def reproduce(
    options: RunOptions,
    backend: str | None = None,
    envs: Any = None,
    settings: Any = SETTINGS,
    peers: bool = False,
) -> pd.DataFrame:
    """``bam-rl reproduce recurring-worlds``: every environment of the suite,
    :data:`TRIALS_PER_WORLD` trials per world (``quick``: two classic-control ones, one
    30-step trial per world, a short planner, one seed).

    Args:
        out: Output directory (runs resume from ``out/runs``).
        seeds: Seeds per (environment, setting, method) (default :data:`SEEDS`; ``quick``:
            1).
        quick: The smoke-test size.
        n_jobs: Parallel workers.
        progress: Show a progress bar over runs.
        backend: ``"serial"``, ``"loky"`` or ``"ray"`` (default: serial for one job, else loky).
        envs: Suite names to run (default: all seven).
        settings: Settings to run, of :data:`SETTINGS` and :data:`EXTRA_SETTINGS` (default:
            episodic and continual).
        peers: Run the :data:`PEERS` too, in the settings without announcements (issue 52).

    Besides ``trials.csv``, ``visits.csv`` and ``summary.csv`` (the episodic and continual
    settings; unchanged by issue 52) it writes ``recovery.csv`` (per environment, setting and
    method: the revisit pairs passing 0.7 × GT MPC, the median first trial, the L2M recovery
    time, identification accuracy and believed worlds; :mod:`.recurring_metrics`) and, for
    the :data:`EXTRA_SETTINGS`, ``unannounced.csv`` (returns paired with recursive Bayes',
    identification and believed worlds), and with the peers ``recurring_peers.png``.
    """
    from bam_rl.harness import run_many

    out, quick = options.out, options.quick
    settings = _check_settings(settings)
    runs = grid(options.seeds, quick, envs, settings, peers=peers)
    steps = run_many(
        runs,
        backend=sweep_backend(backend, options.n_jobs),
        n_jobs=options.n_jobs,
        out_dir=out / "runs",
        progress=options.progress,
    )
    trials = per_trial(steps)
    main = trials[trials["setting"].isin(SETTINGS)]
    visits = visit_table(main)  # empty when only the extra settings run
    summary = summarize(visits)
    write_frame(trials, out / "trials.csv")
    write_frame(visits, out / "visits.csv")
    frames = _issue52_frames(steps, trials)

    def draw() -> None:
        for name in sorted(set(main["env"])):
            plot_environment(main, name, out / f"recurring_{name}.png")
        if visits.empty:
            return
        plot_overview(visits, out / "recurring_overview.png")
        if peers and (visits["method"].isin(list(PEERS))).any():
            plot_overview(visits, out / "recurring_peers.png", settings=("continual",))

    return plotting.write_summary(
        quick,
        summary,
        out / "summary.csv",
        draw=draw,
        frames={out / name: frame for name, frame in frames.items()},
    )


def _chosen(name: str, value: Any, known: Any) -> list[str]:
    """``value`` (one name as a string, or several) as a non-empty list of ``known`` names, or
    a ``ValueError`` naming ``name`` and the accepted ones."""
    chosen = [value] if isinstance(value, str) else list(value)
    if not chosen or any(item not in known for item in chosen):
        raise ValueError(f"{name} must be some of {tuple(known)}, got {value!r}")
    return chosen


def _check_envs(envs: Any) -> list[str] | None:
    """``envs`` (``None``: the default) as a list of suite names (:func:`_chosen`)."""
    return None if envs is None else _chosen("envs", envs, SUITE)


def _check_methods(methods: Any) -> list[str] | None:
    """``methods`` (``None``: all) as a list of :data:`METHODS` keys (:func:`_chosen`)."""
    return None if methods is None else _chosen("methods", methods, METHODS)


def _check_settings(settings: Any) -> tuple[str, ...]:
    """``settings`` as a tuple of known settings, in :data:`SETTINGS` + :data:`EXTRA_SETTINGS`
    order, or a ``ValueError`` naming the accepted ones."""
    known = (*SETTINGS, *EXTRA_SETTINGS)
    chosen = _chosen("settings", settings, known)
    return tuple(s for s in known if s in chosen)


def _issue52_frames(steps: pd.DataFrame, trials: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The measures of issue 52 (:mod:`.recurring_metrics`): ``recovery.csv`` for the
    episodic and continual settings and, when run, ``unannounced.csv`` for the others."""
    from bam_rl.experiments import recurring_metrics as metrics

    parts = steps["config"].str.rsplit("-", n=1, expand=True)
    labelled = steps.assign(env=parts[0], setting=parts[1])
    worlds = metrics.world_table(labelled, {name: spec.parameter for name, spec in SUITE.items()})
    worlds = worlds[worlds["method"] != REFERENCE]
    scored = with_reference(trials)
    learned = scored[scored["method"] != REFERENCE]
    main = learned["setting"].isin(SETTINGS)
    revisits = metrics.recovery_table(learned[main], ORDER)
    frames = {}
    if not revisits.empty:
        frames["recovery.csv"] = metrics.recovery_summary(
            revisits, worlds, FIRST_TRIAL_RATIO, LABELS
        )
    if (~main).any():
        paired = metrics.paired_returns(learned[~main], "recursive")
        frames["unannounced.csv"] = paired.join(
            worlds.groupby(["env", "setting", "method"]).agg(
                identification=("identification", "median"),
                worlds=("worlds", "median"),
                named_30=("named_30", "mean"),
            ),
            on=["env", "setting", "method"],
        )
    return frames


#: The issue's acceptance criterion (a row per environment of the report's claim table).
CLAIMS = (
    "On a revisited world, segment BAM's first trial scores ≥ 0.7 × GT MPC in ≥ 70 % of "
    "(seed, revisit) pairs, where recursive Bayes, BOCD and forgetting do not "
    "(episodic setting).",
)


@claims_from("visits.csv", EXPERIMENT, SECTION, CLAIMS)
def claims(visits: pd.DataFrame) -> list[dict[str, str]]:
    """The issue's acceptance rows: per environment, segment BAM's first revisit trial ≥ 0.7 ×
    GT MPC in ≥ 70 % of (seed, revisit) pairs (episodic), where recursive Bayes, BOCD and
    forgetting do not."""
    from bam_rl.experiments.report import claim, not_run

    (text,) = CLAIMS
    rows = []
    revisits = visits[visits["revisit"].astype(bool) & (visits["setting"] == "episodic")]
    for env in [e for e in SUITE if e in set(revisits["env"])]:
        rates = (
            revisits[revisits["env"] == env]
            .groupby("method")["first"]
            .apply(lambda x: float(np.mean(x >= FIRST_TRIAL_RATIO)))
        )
        seg = float(rates.get("bam_segments", np.nan))
        others = {m: float(rates.get(m, np.nan)) for m in ("recursive", "bocd", "forgetting")}
        holds = seg >= 0.7 and all(not v >= 0.7 for v in others.values())
        measured = f"segment BAM {seg:.0%}; " + ", ".join(
            f"{LABELS[m]} {v:.0%}" for m, v in others.items()
        )
        rows.append(claim(EXPERIMENT, SECTION, f"{env}: {text}", measured, bool(holds)))
    return rows or not_run(EXPERIMENT, SECTION, [text], "no episodic revisits")


def scale(folder: str | Path) -> str:
    """Seeds, environments and methods found in ``folder/visits.csv`` (``""`` without it)."""
    return experiments.counted(
        folder,
        "visits.csv",
        ["env", "method", "seed_index"],
        lambda visits: (
            experiments.distinct(
                visits, seed_index="seed", env="environment", method="learned method"
            )
            + " (GT MPC: every trial, from the same start states)."
        ),
    )
