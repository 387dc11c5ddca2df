"""Paper experiments: each returns tidy frames, summaries and figures.

:data:`EXPERIMENTS` is the one table of them: each name accepted by ``bam-rl reproduce``
with the module and names of its ``reproduce(out, seeds=None, quick=False, n_jobs=1,
progress=True) -> summary frame`` (:func:`get_reproduction`) and its ``claims(folder) ->
list[dict]`` (:func:`get_claims`, the rows of the report's claim table,
:mod:`bam_rl.experiments.report`), both written once in
:mod:`~bam_rl.experiments.options` (:func:`~.options.reproduction`,
:func:`~.options.claims_from`), with the report's title, section and caption of it
(:func:`describe` adds the seeds and runs counted from a results folder, the sentence each
experiment's ``scale`` writes through :func:`counted` and :func:`distinct`).
:data:`REPRODUCTIONS` lists the names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

import pandas as pd

from bam_rl.harness import files, plotting


@dataclass(frozen=True)
class Experiment:
    """One entry of :data:`EXPERIMENTS`: what the report says about an experiment and where its
    functions live (imported on first use, so ``bam-rl --help`` does not load every
    experiment's dependencies)."""

    module: str
    #: the report's heading
    title: str
    #: the paper's section (``"§4.1"``), or ``"beyond the paper"`` (not in the heading)
    section: str
    #: what each of its figures shows, without counts: those come from ``scale(folder)``
    caption: str
    reproduce: str = "reproduce"
    claims: str = "claims"
    #: ``scale(folder) -> str``: the seeds, runs and steps found in ``folder``, in a sentence
    scale: str = "scale"
    #: whether its ``reproduce`` takes ``backend`` (runs through :func:`~bam_rl.harness.run_many`)
    backend: bool = False
    #: whether ``reproduce all`` runs it (``False``: by name only, e.g. while its protocol is
    #: still being settled; ``all`` reports it as not run and says why)
    in_all: bool = True


_CARTPOLE = "bam_rl.experiments.cartpole"

#: The experiments of ``bam-rl reproduce``, in the paper's order: name -> entry.
EXPERIMENTS: dict[str, Experiment] = {
    "tracking": Experiment(
        "bam_rl.experiments.tracking",
        "Experiment 1: inference in a non-stationary environment",
        "§4.1",
        "Posterior mean (left) and log posterior variance (right) of θ_t = 0.3 sin(2πt/100) + "
        "0.5 from Binomial(15, θ_t) counts; medians over seeds with 10–90 % quantile bands (as "
        "in the paper's figure). BF: Bayesian exponential forgetting (α = 0.8); BOCD: Bayesian "
        "online changepoint detection (hazard 1/100); BAM: Bayes with Adaptive Memory.",
    ),
    "cartpole-episodic": Experiment(
        _CARTPOLE,
        "Experiment 2a: controls, episodic one-shot",
        "§4.2.1",
        "Mean reward cos(pole angle) per trial of the cart-pole swing-up, gravity per trial "
        "below (changes announced); medians over seeds with 10–90 % quantile bands. GT MPC: "
        "MPPI planning with the true simulator, run on the first trial of each episode.",
        reproduce="reproduce_episodic",
        claims="claims_episodic",
        backend=True,
    ),
    "cartpole-continual": Experiment(
        _CARTPOLE,
        "Experiment 2b: controls, continual learning",
        "§4.2.2",
        "Mean reward cos(pole angle) per trial, gravity per trial below (changes not "
        "announced); medians over seeds with 10–90 % quantile bands. BOCD: Bayesian online "
        "changepoint detection over trials (hazard 0.11); BAM + BOCD selects a readout only "
        "when BOCD signals a change.",
        reproduce="reproduce_continual",
        claims="claims_continual",
        backend=True,
    ),
    # why §4.2's one-shot recovery does not reproduce (an analysis of the paper's BAM agent)
    "cartpole-readout": Experiment(
        "bam_rl.experiments.cartpole_readout",
        "Analysis of Experiment 2: what BAM's readout keeps on a revisited gravity",
        "§4.2",
        "Left: BAM's readout objective J for the earlier visit's first k trials of the "
        "revisited gravity, relative to BAM's greedy readout. Right: the reward of one paired "
        "trial planned with each belief (BAM's readout, recursive Bayes, every earlier trial of "
        "that gravity, the best first-k subset, a readout at the measured residual variance, "
        "GT MPC: MPPI on the simulator); black: mean ± sd, red: median.",
    ),
    "bandits": Experiment(
        "bam_rl.experiments.bandits",
        "Experiment 3: non-stationary bandits",
        "§4.3",
        "Cumulative regret over time, medians over runs (arm configurations × seeds) with "
        "25–75 % quantile bands (as in the paper's figure); one figure per arm-value setting "
        "(uniform or separated, stated in each title). BF: Bayesian exponential forgetting; "
        "BOCD: Bayesian online changepoint detection; UCBAM: UCB with BAM (Alg. 3).",
        backend=True,
    ),
    "mnist": Experiment(
        "bam_rl.experiments.mnist",
        "Experiment 4: domain adaptation with rotated MNIST",
        "§4.4",
        "Test accuracy per method (dots: seeds; black: mean ± sd; open diamonds: the paper's "
        "numbers) and the training-domain angles BAM's readout selected. OLS: ordinary least "
        "squares over all training domains; NIG: Normal-inverse-gamma (unknown noise).",
    ),
    # beyond the paper: Besson et al.'s piecewise-stationary benchmark
    "piecewise-bandits": Experiment(
        "bam_rl.experiments.piecewise",
        "Beyond the paper: piecewise-stationary Bernoulli bandits (Besson et al.)",
        "beyond the paper",
        "Cumulative regret over time on each problem (log scale): mean over runs with 25–75 % "
        "bands; dashed: BAM's agents; dash-dot: the published runs' code or configuration. "
        "Every method sees the same streams.",
    ),
    # beyond the paper: issue 42's recurring worlds on seven environments
    "recurring-worlds": Experiment(
        "bam_rl.experiments.recurring",
        "Beyond the paper: recurring worlds on seven environments",
        "beyond the paper",
        "Each trial's return relative to GT MPC's trial from the same start state (return / "
        "GT; GT / return for costs) on worlds visited A → B → A → C → B, changes announced "
        "(episodic) or not (continual); the overview shows the first trial of the revisits.",
        backend=True,
    ),
}


def _entry(name: str) -> Experiment:
    if name not in EXPERIMENTS:
        raise ValueError(f"experiment must be one of {sorted(EXPERIMENTS)}, got {name!r}")
    return EXPERIMENTS[name]


def get_reproduction(name: str) -> Callable[..., pd.DataFrame]:
    """The ``reproduce`` function of experiment ``name`` (imported on demand)."""
    entry = _entry(name)
    return getattr(import_module(entry.module), entry.reproduce)


def get_claims(name: str) -> Callable[..., list[dict[str, str]]]:
    """The ``claims(folder)`` function of experiment ``name``: the paper's claims (§4) with
    the numbers measured in ``folder`` (``None``: every claim "not run")."""
    entry = _entry(name)
    return getattr(import_module(entry.module), entry.claims)


REPRODUCTIONS = tuple(EXPERIMENTS)


def get_entry(name: str) -> Experiment:
    """The :data:`EXPERIMENTS` entry of experiment ``name`` (its title, section, caption)."""
    return _entry(name)


def describe(name: str, folder: str | Path) -> str:
    """Experiment ``name``'s caption for the results in ``folder`` (its folder, or the folder
    of one of its figures): what its figures show, then the seeds and runs counted from its
    files (the report's figure caption).

    Raises:
        ValueError: If ``name`` is not an experiment.
    """
    entry = _entry(name)
    found = getattr(import_module(entry.module), entry.scale)(Path(folder))
    return f"{entry.caption} {found}".strip()


def counted(
    folder: str | Path, name: str, columns: Sequence[str], sentence: Callable[[pd.DataFrame], str]
) -> str:
    """An experiment's ``scale(folder)``: ``"This run: "`` and ``sentence`` of ``folder/name``
    (read with ``columns`` only), what the report's caption counts; ``""`` without the file."""
    frame = files.read_results(folder, name, usecols=list(columns))
    return "" if frame is None else f"This run: {sentence(frame)}"


def distinct(frame: pd.DataFrame, **nouns: str) -> str:
    """The distinct values of ``frame``'s columns counted, in order (``nouns``: column -> noun):
    ``distinct(frame, seed="seed", trial="trial")`` is ``"3 seeds × 10 trials"``."""
    return " × ".join(plotting.count_text(frame[c].nunique(), noun) for c, noun in nouns.items())


def takes_backend(name: str) -> bool:
    """Whether ``bam-rl reproduce name`` accepts ``--backend``."""
    return _entry(name).backend
