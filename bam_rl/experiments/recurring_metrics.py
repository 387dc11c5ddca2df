"""The recurring-worlds measures of issue 52 (beyond the paper): recovery time, world
identification and believed worlds, as pure functions of arrays, and their tables.

* :func:`recovery_time` (the DARPA L2M metric, ``lifelong-learning-systems/l2metrics``):
  trials of a revisit until its score reaches the level of the last trial of the world's
  previous visit.
* :func:`identification_accuracy`: the fraction of steps, from ``skip`` steps after each
  change of the true world (the run's start counts as one), whose believed world maps to the
  true world under the majority mapping (each believed world is mapped to the true world it
  co-occurs with most often over the scored steps; a missing belief counts as wrong).
* :func:`believed_worlds`: the distinct believed worlds after the first ``start`` fraction of
  a run (on a stationary run, every one beyond the first is a false split).

The agents report their belief as ``summary()["world"]``, which the run files log as the
``belief_world`` column; an agent without one has no identification (``NaN``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

#: Steps after each change of the true world that identification does not score.
SKIP_STEPS = 20
#: The fraction of a run before which believed worlds are not counted.
START_FRACTION = 0.25
#: Steps after a change by which the right world should be named (:func:`named_within`).
NAMED_WITHIN = 30
#: The run files' column of the believed world.
BELIEF_COLUMN = "belief_world"


def recovery_time(scores: Any, previous_level: float) -> float:
    """Trials until ``scores`` (one revisit's trials, in order) reach ``previous_level`` (the
    last trial of the world's previous visit): ``1`` if the first trial does, the visit's
    length + 1 if none does, ``NaN`` for a ``NaN`` level.

    Raises:
        ValueError: For an empty or non-1-D ``scores``.
    """
    values = np.asarray(scores, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"scores must be a non-empty 1-D array, got shape {values.shape}")
    if np.isnan(previous_level):
        return float("nan")
    hits = np.flatnonzero(values >= previous_level)
    return float(hits[0] + 1 if hits.size else values.size + 1)


def change_mask(truth: Any, skip: int = SKIP_STEPS) -> np.ndarray:
    """The steps scored: those at least ``skip`` steps after the latest change of ``truth``
    (the true world per step; the first step counts as a change).

    Raises:
        ValueError: For a non-1-D ``truth`` or a negative ``skip``.
    """
    labels = np.asarray(truth)
    if labels.ndim != 1:
        raise ValueError(f"truth must be 1-D, got shape {labels.shape}")
    if isinstance(skip, bool) or not isinstance(skip, (int, np.integer)) or skip < 0:
        raise ValueError(f"skip must be an int >= 0, got {skip!r}")
    if labels.size == 0:
        return np.zeros(0, dtype=bool)
    starts = np.flatnonzero(np.r_[True, labels[1:] != labels[:-1]])
    latest = starts[np.searchsorted(starts, np.arange(labels.size), side="right") - 1]
    return np.arange(labels.size) - latest >= skip


def majority_mapping(belief: Any, truth: Any) -> dict[float, Any]:
    """Each believed world (not ``NaN``) → the true world it co-occurs with most often (ties:
    the true world seen first)."""
    believed = np.asarray(belief, dtype=np.float64)
    labels = np.asarray(truth)
    mapping: dict[float, Any] = {}
    for world in pd.unique(believed[~np.isnan(believed)]):
        together = labels[believed == world]
        values, first, counts = np.unique(together, return_index=True, return_counts=True)
        best = np.flatnonzero(counts == counts.max())
        mapping[float(world)] = values[best[np.argmin(first[best])]]
    return mapping


def identification_accuracy(belief: Any, truth: Any, skip: int = SKIP_STEPS) -> float:
    """The fraction of scored steps (:func:`change_mask`) whose believed world maps to the true
    one under the majority mapping over those steps; ``NaN`` without a scored step.

    Raises:
        ValueError: For arrays of different lengths (and the checks of :func:`change_mask`).
    """
    believed = np.asarray(belief, dtype=np.float64)
    labels = np.asarray(truth)
    if believed.shape != labels.shape:
        raise ValueError(
            f"belief and truth must have the same shape, got {believed.shape} and {labels.shape}"
        )
    scored = change_mask(labels, skip)
    if not scored.any():
        return float("nan")
    believed, labels = believed[scored], labels[scored]
    mapping = majority_mapping(believed, labels)
    named = np.array(
        [not np.isnan(b) and mapping[float(b)] == t for b, t in zip(believed, labels, strict=True)]
    )
    return float(named.mean())


def named_within(belief: Any, truth: Any, steps: int = NAMED_WITHIN) -> np.ndarray:
    """For each change of ``truth`` (not the run's start) that lasts more than ``steps``
    steps: whether the believed world ``steps`` steps after it maps to the true world under
    the majority mapping over the whole run (the run's believed worlds named once).

    Raises:
        ValueError: For arrays of different lengths or ``steps`` not an int >= 0.
    """
    believed = np.asarray(belief, dtype=np.float64)
    labels = np.asarray(truth)
    if believed.shape != labels.shape or believed.ndim != 1:
        raise ValueError(
            f"belief and truth must be 1-D of one shape, got {believed.shape} and {labels.shape}"
        )
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ValueError(f"steps must be an int >= 0, got {steps!r}")
    mapping = majority_mapping(believed, labels)
    starts = np.flatnonzero(np.r_[False, labels[1:] != labels[:-1]])
    ends = np.r_[starts[1:], labels.size][: starts.size]  # none on a stationary run
    named = []
    for start, end in zip(starts, ends, strict=True):
        if end - start <= steps:
            continue
        b = believed[start + steps]
        named.append(not np.isnan(b) and mapping[float(b)] == labels[start + steps])
    return np.asarray(named, dtype=bool)


def believed_worlds(belief: Any, start: float = START_FRACTION) -> float:
    """The distinct believed worlds (``NaN`` entries ignored) after the first ``start``
    fraction of the steps; ``NaN`` if none is named there.

    Raises:
        ValueError: For ``start`` outside [0, 1).
    """
    if not 0.0 <= start < 1.0:
        raise ValueError(f"start must lie in [0, 1), got {start!r}")
    believed = np.asarray(belief, dtype=np.float64)
    later = believed[int(np.floor(start * believed.size)) :]
    later = later[~np.isnan(later)]
    return float(np.unique(later).size) if later.size else float("nan")


def world_table(steps: pd.DataFrame, parameter_of: dict[str, str]) -> pd.DataFrame:
    """Per run (env, setting, method, seed): ``identification`` (:func:`identification_accuracy`
    of the ``belief_world`` column against the ``context_<parameter>`` column), ``worlds``
    (:func:`believed_worlds`) and ``named_30`` (the fraction of changes whose world is named
    :data:`NAMED_WITHIN` steps after them, :func:`named_within`); ``NaN`` for a run without
    beliefs.

    Args:
        steps: The run files' rows, with ``env`` and ``setting`` columns.
        parameter_of: Environment → its changing parameter.
    """
    rows = []
    for (env, setting, method, seed), run in steps.groupby(
        ["env", "setting", "method", "seed_index"], sort=True
    ):
        run = run.sort_values("step")
        column = "context_" + parameter_of[env]
        truth = run[column].to_numpy(dtype=np.float64) if column in run else None
        belief = (
            run[BELIEF_COLUMN].to_numpy(dtype=np.float64)
            if BELIEF_COLUMN in run and run[BELIEF_COLUMN].notna().any()
            else None
        )
        accuracy = worlds = named = float("nan")
        if belief is not None:
            worlds = believed_worlds(belief)
            if truth is not None:
                accuracy = identification_accuracy(belief, truth)
                within = named_within(belief, truth, NAMED_WITHIN)
                named = float(within.mean()) if within.size else float("nan")
        rows.append(
            {
                "env": env,
                "setting": setting,
                "method": method,
                "seed_index": seed,
                "identification": accuracy,
                "worlds": worlds,
                "named_30": named,
                "true_worlds": float(np.unique(truth).size) if truth is not None else np.nan,
            }
        )
    return pd.DataFrame(rows)


def visit_blocks(scored: pd.DataFrame, order: tuple[str, ...]) -> Iterator[Any]:
    """``(run, block, keys)`` per (env, setting, method, seed) run of ``scored`` and visit, in
    order: the run's trials (sorted), the visit's, and the row keys that name the visit
    (``env``, ``setting``, ``method``, ``seed_index``, ``visit``, ``world``)."""
    for (env, setting, method, seed), run in scored.groupby(
        ["env", "setting", "method", "seed_index"], sort=True
    ):
        run = run.sort_values("trial")
        for visit, block in run.groupby("visit", sort=True):
            keys = {"env": env, "setting": setting, "method": method, "seed_index": seed}
            yield run, block, {**keys, "visit": visit, "world": order[visit]}


def recovery_table(scored: pd.DataFrame, order: tuple[str, ...]) -> pd.DataFrame:
    """Per revisit (env, setting, method, seed, visit) of the learned methods: ``first`` (the
    revisit's first trial relative to GT MPC's), ``level`` (the relative score of the last
    trial of the world's previous visit) and ``recovery`` (:func:`recovery_time` of the
    revisit's relative scores against ``level``).

    Args:
        scored: Trials with ``relative`` scores and ``visit`` (0-based along ``order``), the
            reference method's rows left out.
        order: The worlds visited, in order.
    """
    rows = []
    for run, block, keys in visit_blocks(scored, order):
        visit = keys["visit"]
        earlier = [v for v in range(visit) if order[v] == order[visit]]
        if not earlier:
            continue
        previous = run[run["visit"] == earlier[-1]]["relative"]
        level = float(previous.iloc[-1]) if len(previous) else float("nan")
        ratios = block["relative"].to_numpy(dtype=np.float64)
        first = float(ratios[0])
        rows.append(
            {**keys, "first": first, "level": level, "recovery": recovery_time(ratios, level)}
        )
    return pd.DataFrame(rows)


def recovery_summary(
    revisits: pd.DataFrame, worlds: pd.DataFrame, threshold: float, labels: dict[str, str]
) -> pd.DataFrame:
    """Per (env, setting, method): the (seed, revisit) pairs, those whose first trial reaches
    ``threshold`` × GT MPC (``passes``), the median first-trial ratio and recovery time, and
    the median identification accuracy and believed worlds over seeds (from
    :func:`world_table`; ``NaN`` for a method without beliefs)."""
    keys = ["env", "setting", "method"]
    grouped = revisits.groupby(keys, sort=True)
    table = grouped.agg(
        pairs=("first", "count"),  # scored pairs (a missing GT trial scores NaN)
        first=("first", "median"),
        recovery=("recovery", "median"),
    ).reset_index()
    table["passes"] = grouped["first"].apply(lambda x: int(np.sum(x >= threshold))).to_numpy()
    by_run = worlds.groupby(keys, sort=True).agg(
        identification=("identification", "median"), worlds=("worlds", "median")
    )
    table = table.join(by_run, on=keys)
    table["label"] = table["method"].map(labels)
    return table[
        [*keys, "pairs", "passes", "first", "recovery", "identification", "worlds", "label"]
    ]


def paired_returns(trials: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Per (env, setting, method): the mean return and relative score over every (seed, trial)
    and the paired difference of returns from ``baseline`` on the same (seed, trial): its
    mean and standard error (``NaN`` without ``baseline`` or with one pair)."""
    keys = ["env", "setting", "seed_index", "trial"]
    base = trials[trials["method"] == baseline][[*keys, "score"]]
    frame = trials.merge(base.rename(columns={"score": "baseline"}), on=keys, how="left")
    frame["difference"] = frame["score"] - frame["baseline"]
    rows = []
    for (env, setting, method), rows_of in frame.groupby(["env", "setting", "method"], sort=True):
        diff = rows_of["difference"].dropna().to_numpy(dtype=np.float64)
        rows.append(
            {
                "env": env,
                "setting": setting,
                "method": method,
                "trials": len(rows_of),
                "return": float(rows_of["score"].mean()),
                "relative": float(rows_of["relative"].mean()),
                "minus_baseline": float(diff.mean()) if diff.size else float("nan"),
                "minus_baseline_se": (
                    float(diff.std(ddof=1) / np.sqrt(diff.size)) if diff.size > 1 else float("nan")
                ),
            }
        )
    return pd.DataFrame(rows)
