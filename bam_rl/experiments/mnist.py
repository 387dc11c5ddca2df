"""Experiment 4 (paper §4.4, App. D.2): domain adaptation on rotated MNIST.

Protocol, per seed (:func:`run_seed`):

* the 60,000 training images are split at random into 32 domains of 1,875 (without
  replacement) and the 10,000 test images into 8 domains of 1,250;
* each domain is rotated by its own angle ``~ U[0, π]`` (bilinear, same size: exactly
  ``scipy.ndimage.rotate(order=1, reshape=False)``, applied as one sparse matrix per angle);
  ``side=14`` then averages 2 × 2 blocks;
* features are the pixels in [0, 1] plus a bias (785 at full resolution), targets one-hot;
  the model is 10 independent Bayesian linear regressions sharing the prior ``N(0, 0.1⁻¹ I)``
  (:class:`~bam_rl.families.BayesianLinearRegression`), λ = 0;
* each training domain is one :class:`~bam_rl.memory.Memory` record; in each test domain the
  first 10 (randomly ordered) labelled examples choose the readout with
  :func:`bam_rl.readout.select` and update the posterior; the accuracy of the posterior-mean
  prediction (arg-max over the 10 outputs) is measured on the other 1,240.

Methods (:data:`METHODS`): the OLS baseline (least squares over all training domains); BAM
greedy (Alg. 1) at the paper's noise variance σ² = 1e-4 and at a default σ² chosen, per seed,
by maximising the evidence of the training domains under the base prior (empirical Bayes,
:func:`evidence_noise_var`; no test data involved); BAM greedy with unknown noise
(:class:`~bam_rl.families.BayesianLinearRegressionNIG`); the parallel selector (Alg. 2) at the
default σ²; and, as a reference for what selection adds, every training domain plus the 10
labels (W = 1).

Shared work: each training domain's ``XᵀX``, ``XᵀY`` and ``tr(YᵀY)`` are computed once per seed
(:class:`DomainMoments`) and scaled into every model's statistics; one
:class:`~bam_rl.readout.FactorCache` per model lets the 8 selections of a seed reuse the
Cholesky factors of candidate sets (every first round factors the same 32 sets); the parallel
readout takes its single-record scores from the greedy's first round (:func:`parallel_readout`).

Why σ² = 1e-4 remembers nothing: a domain's posterior (1,875 images) predicts a new image of
the *same* rotation with variance σ² + x Λ⁻¹ xᵀ ≈ 1.4e-4 per output, while a linear model's
residuals on one-hot targets have a mean square of ≈ 0.03. The 100 target values of the 10
labelled examples then score ≈ −½ · 100 · 0.03 / 1.4e-4 ≈ −1.0·10⁴ nats under any remembered
domain (measured: −10,394 for a same-angle domain, seed 0) against ≈ −390 under the broad base
prior, so Alg. 1 stops at W = 0 and BAM is left with the base prior and the 10 labels. The
evidence-maximising σ² (≈ 0.037 at full resolution) matches the residuals, and the same domain
then scores +29 nats.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from tqdm.auto import tqdm

from bam_rl.checks import check_int, check_positive, check_seed, check_unit_interval
from bam_rl.datasets import MNIST, load_mnist
from bam_rl.experiments.mnist_domains import (
    N_CLASSES,
    SIDE,
    DomainMoments,
    domain_features,
    evidence_noise_var,
    log_evidence,
    ols_weights,
    one_hot,
    pooling_operator,
    rotation_operator,
)
from bam_rl.experiments.mnist_plots import METHODS, PAPER, plot_mnist
from bam_rl.experiments.options import RunOptions, claims_from, reproduction
from bam_rl.families import (
    BayesianLinearRegression,
    BayesianLinearRegressionNIG,
    ConjugateFamily,
    NaturalParams,
)
from bam_rl.harness.files import read_results
from bam_rl.harness.plotting import (
    count_text,
    write_summary,
)
from bam_rl.hyperparams import MNIST_NOISE_VAR, MNIST_PRIOR_PRECISION
from bam_rl.memory import Memory
from bam_rl.readout import FactorCache, ReadoutResult, select
from bam_rl.readout import objective as readout_objective

#: Methods whose readout is the greedy (Alg. 1)
GREEDY = ("bam_paper", "bam", "bam_nig")

#: Inverse-gamma prior of the NIG model: a vague ``IG(1, 1)``; its ``Λ0`` is the paper's 0.1
#: (in units of σ², as the NIG family defines it).
NIG_A = 1.0
NIG_B = 1.0
#: Memory budget of the Cholesky-factor cache shared by one model's selections in a seed.
FACTOR_CACHE_BYTES = 2**30


# -------------------------------------------------------------------------- estimators
def parallel_readout(singles: np.ndarray, base: float, q: float) -> np.ndarray:
    """Algorithm 2 from the single-record scores ``J({j})``, as ``select(method="parallel")``
    makes it: keep the records scoring above the base prior ``J(∅)`` and select those at or
    above the ``q`` quantile of the kept scores.

    These scores are exactly the first round of the greedy (Alg. 1), so the experiment takes
    them from the greedy it has already run instead of factoring every candidate again.
    """
    singles = np.asarray(singles, dtype=np.float64)
    weights = np.zeros(singles.size)
    kept = singles > base
    if kept.any():
        cutoff = np.quantile(singles[kept], q)
        weights[kept & (singles >= cutoff)] = 1.0
    return weights


def _posterior(
    model: ConjugateFamily, memory: Memory, weights: np.ndarray, s_t: NaturalParams
) -> NaturalParams:
    """``η0 + Σ_j w_j s_j + s_t``; for 0/1 weights only the selected records are added."""
    if np.any((weights != 0) & (weights != 1)):
        return memory.weighted_sum(weights, base=model.prior) + s_t
    stats = memory.stats
    fields = {k: v.copy() for k, v in model.prior.fields.items()}
    for j in np.flatnonzero(weights > 0):
        for k in fields:
            fields[k] += stats.fields[k][j]
    for k in fields:
        fields[k] += s_t.fields[k]
    return NaturalParams(model, fields)


def _pick_order(result: ReadoutResult | None, weights: np.ndarray) -> np.ndarray:
    """The selected records, in the order the greedy added them (each round's arg-max) when
    ``result`` is a greedy readout, else by index."""
    selected = np.flatnonzero(weights > 0)
    if result is None or len(result.scores) < selected.size:
        return selected
    order = np.array([int(np.argmax(result.scores[k])) for k in range(selected.size)], int)
    return order if np.array_equal(np.sort(order), selected) else selected


def _full_round(result: ReadoutResult) -> bool:
    """True when the greedy's first round scored every record (finite scores)."""
    return len(result.scores) > 0 and bool(np.all(np.isfinite(result.scores[0])))


def posterior_mean_weights(model: ConjugateFamily, belief: NaturalParams) -> np.ndarray:
    """Posterior mean of ``M`` (``(p, d)``) for either regression family."""
    mean = model.mean(belief)
    return mean[0] if isinstance(mean, tuple) else mean


def accuracy(weights: np.ndarray, features: np.ndarray, labels: np.ndarray) -> float:
    """Fraction of rows whose arg-max prediction ``features @ weightsᵀ`` is the label."""
    return float(np.mean(np.argmax(features @ weights.T, axis=1) == labels))


# ----------------------------------------------------------------------------- one seed
def _make_domains(
    rng: np.random.Generator, size: int, count: int, per_domain: int
) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint index sets ``(count, per_domain)`` of ``range(size)`` and angles ``U[0, π]``."""
    if count * per_domain > size:
        raise ValueError(
            f"{count} domains of {per_domain} need {count * per_domain} images, "
            f"only {size} available"
        )
    indices = rng.permutation(size)[: count * per_domain].reshape(count, per_domain)
    angles = rng.uniform(0.0, np.pi, size=count)
    return indices, angles


def run_seed(
    seed: int,
    data: MNIST,
    *,
    side: int = SIDE,
    n_train: int = 32,
    train_size: int = 1875,
    n_test: int = 8,
    test_size: int = 1250,
    n_labelled: int = 10,
    methods: Sequence[str] = tuple(METHODS),
    paper_noise_var: float = MNIST_NOISE_VAR,
    prior_precision: float = MNIST_PRIOR_PRECISION,
    q: float = 0.5,
) -> pd.DataFrame:
    """One seed of the protocol: one row per (test domain, method).

    Args:
        seed: Seed of every random draw (domain split, angles, labelled examples).
        data: The MNIST arrays.
        side: Image side of the features (28, or a divisor such as 14).
        n_train: Number of training domains (paper: 32).
        train_size: Images per training domain (paper: 1,875).
        n_test: Number of test domains (paper: 8).
        test_size: Images per test domain (paper: 1,250).
        n_labelled: Labelled examples per test domain that choose the readout (paper: 10).
        methods: Keys of :data:`METHODS`.
        paper_noise_var: σ² of ``bam_paper``.
        prior_precision: Prior precision of every regression.
        q: Quantile cut-off of the parallel selector.

    Returns:
        Columns ``seed, side, domain, angle, angle_deg, method, noise_var, accuracy, n_eval,
        n_selected, selected, selected_angles_deg, angle_gap_selected, angle_gap_all,
        angle_gap_first, nearest_selected, objective, base_objective, seconds``: ``selected``
        lists training domains (``;``-separated) in the order the greedy added them (by index
        for the other methods); angle gaps are ``|training angle − test angle|`` in degrees,
        averaged over the selected domains, over all training domains, and for the first pick;
        ``nearest_selected`` tells whether the training domain nearest in angle was selected;
        ``seconds`` is the time of the readout and posterior (the parallel readout reuses the
        greedy's first round, so its time excludes it); ``seed_seconds`` and
        ``seed_cpu_seconds`` are the wall and CPU time of the whole seed.
    """
    checked = check_seed(seed)
    if checked is None:
        raise ValueError("seed must be an integer >= 0, got None")
    seed = checked
    side = check_int("side", side)
    if SIDE % side:
        raise ValueError(f"side must divide {SIDE} (e.g. 28 or 14), got {side!r}")
    n_train = check_int("n_train", n_train)
    train_size = check_int("train_size", train_size)
    n_test = check_int("n_test", n_test)
    test_size = check_int("test_size", test_size)
    n_labelled = check_int("n_labelled", n_labelled)
    if n_labelled >= test_size:
        raise ValueError(f"n_labelled must be < test_size = {test_size}, got {n_labelled!r}")
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        raise ValueError(f"methods must be among {sorted(METHODS)}, got {unknown}")
    paper_noise_var = float(check_positive("paper_noise_var", paper_noise_var))
    prior_precision = float(check_positive("prior_precision", prior_precision))
    q = float(check_unit_interval("q", q))

    started, started_cpu = time.perf_counter(), time.process_time()
    rng = np.random.default_rng(seed)
    train_idx, train_angles = _make_domains(rng, len(data.train_labels), n_train, train_size)
    test_idx, test_angles = _make_domains(rng, len(data.test_labels), n_test, test_size)

    train_x = [
        domain_features(data.train_images[i], a, side)
        for i, a in zip(train_idx, train_angles, strict=True)
    ]
    train_y = [one_hot(data.train_labels[i]) for i in train_idx]
    moments = DomainMoments(train_x, train_y)
    del train_x, train_y
    test_x = [
        domain_features(data.test_images[i], a, side)
        for i, a in zip(test_idx, test_angles, strict=True)
    ]
    test_labels = [data.test_labels[i].astype(np.int64) for i in test_idx]
    labelled = DomainMoments(
        [x[:n_labelled] for x in test_x], [one_hot(y[:n_labelled]) for y in test_labels]
    )
    d = side * side + 1
    train_deg = np.degrees(train_angles)

    rows: list[dict[str, Any]] = []

    def record(
        method: str,
        domain: int,
        noise_var: float,
        weights: np.ndarray,
        selected: np.ndarray,
        seconds: float,
        objective: float = np.nan,
        base_objective: float = np.nan,
    ) -> None:
        x_eval, y_eval = test_x[domain][n_labelled:], test_labels[domain][n_labelled:]
        angle_deg = float(np.degrees(test_angles[domain]))
        gaps = np.abs(train_deg - angle_deg)
        rows.append(
            {
                "seed": seed,
                "side": side,
                "domain": domain,
                "angle": float(test_angles[domain]),
                "angle_deg": angle_deg,
                "method": method,
                "noise_var": noise_var,
                "accuracy": accuracy(weights, x_eval, y_eval),
                "n_eval": len(y_eval),
                "n_selected": len(selected),
                "selected": ";".join(str(int(j)) for j in selected),
                "selected_angles_deg": ";".join(f"{train_deg[j]:.1f}" for j in selected),
                "angle_gap_selected": float(gaps[selected].mean()) if len(selected) else np.nan,
                "angle_gap_all": float(gaps.mean()),
                "angle_gap_first": (
                    float(gaps[selected[0]]) if method in GREEDY and len(selected) else np.nan
                ),
                "nearest_selected": bool(np.argmin(gaps) in set(selected.tolist())),
                "objective": objective,
                "base_objective": base_objective,
                "seconds": seconds,
            }
        )

    if "ols" in methods:
        start = time.perf_counter()
        weights = ols_weights(moments.gram.sum(axis=0), moments.cross.sum(axis=0))
        seconds = time.perf_counter() - start
        for domain in range(n_test):
            record("ols", domain, np.nan, weights, np.arange(n_train), seconds / n_test)

    evidence_methods = {"bam", "bam_parallel", "all_domains"} & set(methods)
    noise_var = evidence_noise_var(moments, prior_precision) if evidence_methods else np.nan
    configs: list[tuple[ConjugateFamily, list[str]]] = []
    if "bam_paper" in methods:
        configs.append(
            (
                BayesianLinearRegression(d, N_CLASSES, prior_precision, paper_noise_var),
                ["bam_paper"],
            )
        )
    if evidence_methods:
        configs.append(
            (
                BayesianLinearRegression(d, N_CLASSES, prior_precision, noise_var),
                [m for m in ("bam", "bam_parallel", "all_domains") if m in methods],
            )
        )
    if "bam_nig" in methods:
        configs.append(
            (
                BayesianLinearRegressionNIG(d, N_CLASSES, prior_precision, a=NIG_A, b=NIG_B),
                ["bam_nig"],
            )
        )
    for model, names in configs:
        memory = moments.memory(model)  # one record per training domain, shared by `names`
        # the candidate sets' Cholesky factors do not depend on the test domain: the 8
        # selections over this memory share them (every first round is the same 32 sets)
        cache = FactorCache(max_bytes=FACTOR_CACHE_BYTES)
        model_noise = getattr(model, "noise_var", np.nan)
        for domain in range(n_test):
            s_t = labelled.stats(model, domain)
            greedy = None  # Alg. 2 reuses the first greedy round (every record alone)
            for name in names:
                start = time.perf_counter()
                objective = base = np.nan
                result = None
                if name == "all_domains":
                    weights = np.ones(n_train)
                elif name == "bam_parallel" and greedy is not None and _full_round(greedy):
                    base = greedy.base_objective
                    weights = parallel_readout(np.asarray(greedy.scores[0]), base, q)
                    objective = float(readout_objective(model, memory, s_t, weights))
                else:
                    method = "parallel" if name == "bam_parallel" else "greedy"
                    result = select(model, memory, s_t, lam=0.0, method=method, q=q, cache=cache)
                    greedy = result if method == "greedy" else greedy
                    weights, objective = result.weights, result.objective
                    base = result.base_objective
                posterior = _posterior(model, memory, weights, s_t)
                mean = posterior_mean_weights(model, posterior)
                seconds = time.perf_counter() - start
                record(
                    name,
                    domain,
                    model_noise,
                    mean,
                    _pick_order(result if name in GREEDY else None, weights),
                    seconds,
                    objective,
                    base,
                )
        del memory, cache
    frame = pd.DataFrame(rows)
    frame["seed_seconds"] = time.perf_counter() - started
    frame["seed_cpu_seconds"] = time.process_time() - started_cpu
    order = {m: i for i, m in enumerate(METHODS)}
    return frame.sort_values(
        ["method", "domain"], key=lambda c: c.map(order) if c.name == "method" else c, kind="stable"
    ).reset_index(drop=True)


# ---------------------------------------------------------------------- many seeds
def mnist_experiment(
    data: MNIST,
    seeds: int | Sequence[int] = 10,
    n_jobs: int = 1,
    progress: bool = True,
    **options: Any,
) -> pd.DataFrame:
    """Runs :func:`run_seed` for every seed (``range(seeds)`` or the given list), in
    parallel over seeds, and concatenates the rows."""
    seed_list = (
        list(range(check_int("seeds", seeds)))
        if isinstance(seeds, (int, np.integer))
        else [int(s) for s in seeds]
    )
    if not seed_list:
        raise ValueError("seeds must name at least one seed")
    results = Parallel(n_jobs=n_jobs, return_as="generator")(
        delayed(run_seed)(seed, data, **options) for seed in seed_list
    )
    frames = list(tqdm(results, total=len(seed_list), desc="mnist seeds", disable=not progress))
    return pd.concat(frames, ignore_index=True)


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Per method: mean ± sd over seeds of the per-seed mean accuracy (in %), as the paper
    reports, the sd over all test domains, the readout size, the mean angle gap (degrees)
    between a test domain and the training domains selected (vs. all training domains, and
    for the greedy's first pick), the fraction of test domains whose nearest training domain
    was selected, σ², the readout time per test domain, and the paper's numbers where it
    gives them."""
    per_seed = frame.groupby(["method", "seed"], sort=False).agg(
        accuracy=("accuracy", "mean"),
        n_selected=("n_selected", "mean"),
        noise_var=("noise_var", "first"),
    )
    rows = []
    for method in [m for m in METHODS if m in set(frame["method"])]:
        seeds = per_seed.loc[method]
        domains = frame[frame["method"] == method]
        paper = PAPER.get(method, (np.nan, np.nan))
        rows.append(
            {
                "method": method,
                "label": METHODS[method],
                "accuracy_mean": 100 * seeds["accuracy"].mean(),
                "accuracy_sd": 100 * seeds["accuracy"].std(ddof=1) if len(seeds) > 1 else np.nan,
                "accuracy_sd_domains": 100 * domains["accuracy"].std(ddof=1),
                "seeds": len(seeds),
                "paper_mean": paper[0],
                "paper_sd": paper[1],
                "n_selected": seeds["n_selected"].mean(),
                "angle_gap_selected": domains["angle_gap_selected"].mean(),
                "angle_gap_all": domains["angle_gap_all"].mean(),
                "angle_gap_first": domains["angle_gap_first"].mean(),
                "nearest_selected": domains["nearest_selected"].mean(),
                "noise_var": seeds["noise_var"].mean(),
                "seconds_per_domain": domains["seconds"].mean(),
            }
        )
    return pd.DataFrame(rows)


@reproduction(default_seeds=10, quick_seeds=2)
def reproduce(
    options: RunOptions,
    data: str | Path | None = None,
    side: int | None = None,
    download: bool = False,
) -> pd.DataFrame:
    """Runs Experiment 4 and writes ``mnist.csv`` (one row per seed, test domain and method),
    ``mnist_summary.csv`` and ``mnist.png`` to ``out``; returns the summary.

    Args:
        out: Output directory (created if needed).
        seeds: Number of seeds (paper: 10; ``quick``: 2).
        quick: A smoke test: 2 seeds at side 14 (unless ``side`` is given), otherwise the
            full protocol.
        n_jobs: Parallel workers (over seeds).
        progress: Show a progress bar.
        data: Directory of the MNIST files (default: ``$BAM_RL_MNIST``).
        side: Image side: 28 (full resolution, 785 features; the default) or 14 (197).
        download: Fetch missing MNIST files first (needs a network).
    """
    out, quick = options.out, options.quick
    side = side if side is not None else (14 if quick else SIDE)
    mnist = load_mnist(data, download=download)
    frame = mnist_experiment(
        mnist, seeds=options.seeds, n_jobs=options.n_jobs, progress=options.progress, side=side
    )
    summary = summarize(frame)
    summary.insert(2, "side", side)
    import matplotlib.pyplot as plt

    return write_summary(
        quick,
        summary,
        out / "mnist_summary.csv",
        draw=lambda: plt.close(plot_mnist(frame, out / "mnist.png")),
        frames={out / "mnist.csv": frame},
    )


#: The paper's claims of §4.4, in order (the rows of the report's claim table).
CLAIMS = (
    "OLS trained over all domains reaches 55 % ± 3.7 % test accuracy.",
    "BAM (greedy, σ² = 1e-4) reaches 71.8 % ± 5.2 % test accuracy with 10 labelled examples "
    "per test domain.",
    "BAM leverages previous experiences to adapt to novel domains: it beats OLS over all domains.",
)


@claims_from("mnist_summary.csv", "mnist", "§4.4", CLAIMS)
def claims(table: pd.DataFrame) -> list[dict[str, str]]:
    """The claims of §4.4 with ``folder/mnist_summary.csv`` (mean ± sd over seeds, in %);
    a paper number holds if the measured mean is within the paper's sd of it."""
    from bam_rl.experiments.report import claim

    summary = table.set_index("method")
    side = f", {int(summary['side'].iloc[0]) ** 2 + 1} features" if "side" in summary else ""

    def text(method: str) -> str:
        row = summary.loc[method]
        sd = "" if pd.isna(row["accuracy_sd"]) else f" ± {row['accuracy_sd']:.1f}"
        return f"{row['accuracy_mean']:.1f}{sd} % ({int(row['seeds'])} seeds{side})"

    def near(method: str) -> bool | None:
        if method not in summary.index:
            return None
        mean, sd = PAPER[method]
        return bool(abs(summary.loc[method, "accuracy_mean"] - mean) <= sd)

    rows = []
    for index, method in enumerate(("ols", "bam_paper")):
        if method in summary.index:
            rows.append(
                claim(
                    "mnist",
                    "§4.4",
                    CLAIMS[index],
                    f"{text(method)}; paper {PAPER[method][0]} ± {PAPER[method][1]}",
                    near(method),
                )
            )
        else:
            rows.append(claim("mnist", "§4.4", CLAIMS[index], f"{method} not run", None))
    variants = [m for m in ("bam_paper", "bam", "bam_nig") if m in summary.index]
    if "ols" in summary.index and variants:
        ols = summary.loc["ols", "accuracy_mean"]
        wins = [bool(summary.loc[m, "accuracy_mean"] > ols) for m in variants]
        measured = f"OLS {text('ols')}; " + "; ".join(f"{METHODS[m]} {text(m)}" for m in variants)
        rows.append(
            claim(
                "mnist",
                "§4.4",
                CLAIMS[2],
                measured,
                True if all(wins) else "partly" if any(wins) else False,
            )
        )
    else:
        rows.append(claim("mnist", "§4.4", CLAIMS[2], "OLS or BAM not run", None))
    return rows


__all__ = [
    "CLAIMS",
    "METHODS",
    "PAPER",
    "DomainMoments",
    "accuracy",
    "claims",
    "domain_features",
    "evidence_noise_var",
    "log_evidence",
    "mnist_experiment",
    "ols_weights",
    "parallel_readout",
    "plot_mnist",
    "pooling_operator",
    "reproduce",
    "rotation_operator",
    "run_seed",
    "summarize",
]


def scale(folder: str | Path) -> str:
    """What ``folder/mnist_summary.csv`` holds, counted (the report's caption): seeds per
    method, methods and the image side; ``""`` without the file."""
    summary = read_results(folder, "mnist_summary.csv")
    if summary is None or not {"method", "seeds"} <= set(summary.columns):
        return ""
    seeds = sorted({int(s) for s in summary["seeds"]})
    if not seeds:
        return ""
    side = sorted({int(s) for s in summary["side"]}) if "side" in summary else []
    counts = f"{seeds[0]}–{seeds[-1]} seeds" if len(seeds) > 1 else count_text(seeds[0], "seed")
    text = f"This run: {counts} for each of {len(summary)} methods"
    if side:
        text += f", {' and '.join(f'{s} × {s}' for s in side)}-pixel images"
    return text + "."
