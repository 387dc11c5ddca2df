"""The registry of named agents (see ARCHITECTURE.md) and the checks of agent and environment names.

::

    import gymnasium
    import bam_rl
    from bam_rl.harness.registry import make_agent   # also importable from bam_rl.harness

    env = gymnasium.make("bam_rl/SwitchingBandit-v0")
    agent = make_agent("thompson-bam", env, seed=1)

MPPI agents take the settings measured for the environment (its row of
:data:`ENV_SETTINGS`, :mod:`bam_rl.agents.settings`, re-exported here) where not given;
:func:`resolved_settings` says what an agent would use and where each setting came from.

Every builder is a module-level function or a :class:`Builder` (a shared family builder with one
agent's defaults), ``AGENTS[name](env, seed, **kwargs) -> agent``, so
the builders (and the :class:`~bam_rl.harness.sweeps.RunSpec` objects naming them) pickle for loky
and Ray workers.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from bam_rl import envs as _envs
from bam_rl import hyperparams
from bam_rl.agents import RandomAgent
from bam_rl.agents.settings import (
    ENV_SETTINGS,
    SEGMENT_MODEL_OPTIONS,
    SEGMENT_READOUT_AFTER_STEPS,
    EnvSettings,
    announces_changes,
    check_keywords,
    memory_defaults,
    resolve,
    settings_for,
)

__all__ = [
    "AGENTS",
    "ENV_IDS",
    "ENV_SETTINGS",
    "SEGMENT_MODEL_OPTIONS",
    "SEGMENT_READOUT_AFTER_STEPS",
    "EnvSettings",
    "announces_changes",
    "check_agent_name",
    "check_env_id",
    "make_agent",
    "resolved_settings",
    "settings_for",
]

#: The environment ids this package registers.
ENV_IDS: tuple[str, ...] = tuple(_envs.ENV_IDS)


# ---------------------------------------------------------------------------- builders
def _n_arms(env: gym.Env, name: str) -> int:
    space = env.action_space
    if not isinstance(space, gym.spaces.Discrete):
        raise ValueError(
            f"agent {name!r} needs a bandit with a Discrete action space, got {space!r}"
        )
    return int(space.n)


def _n_trials(env: gym.Env, name: str) -> int:
    """The stream's ``n`` (counts 0..n); ``ValueError`` saying the agent does not fit ``env``
    unless it is a Binomial stream (a ``Box`` estimate action, ``Discrete(n + 1)`` counts)."""
    observations, actions = env.observation_space, env.action_space
    n = getattr(env.unwrapped, "n", None)
    counts = int(observations.n) if isinstance(observations, gym.spaces.Discrete) else 0
    fits = (
        counts >= 2
        and isinstance(observations, gym.spaces.Discrete)
        and int(observations.start) == 0
        and isinstance(actions, gym.spaces.Box)
        and actions.shape == (1,)
    )
    if fits and n is None:
        n = counts - 1
    if (
        not fits
        or isinstance(n, bool)
        or not isinstance(n, (int, np.integer))
        or int(n) != counts - 1
    ):
        env_id = env.spec.id if env.spec is not None else type(env.unwrapped).__name__
        raise ValueError(
            f"agent {name!r} does not fit the environment {env_id!r}: it tracks a Binomial "
            f"stream (observations: counts 0..n in Discrete(n + 1) with n >= 1, actions: a "
            f"one-element Box estimate), got observation space {observations!r} and action "
            f"space {actions!r}; use a tracker with bam_rl/BinomialStream-v0"
        )
    return int(n)


def _bernoulli_arms(env: gym.Env) -> bool:
    """Whether the bandit pays 0/1 rewards (``PiecewiseBandit(reward="bernoulli")``)."""
    return getattr(env.unwrapped, "reward", None) == "bernoulli"


def _gaussian_kwargs(env: gym.Env, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Gaussian-arm defaults: the environment's reward noise (the paper's 0.25)."""
    noise_std = getattr(env.unwrapped, "noise_std", None)
    return {
        "noise_std": hyperparams.BANDIT_NOISE_STD if not noise_std else float(noise_std),
        **kwargs,
    }


def _check_no_kwargs(name: str, kwargs: dict[str, Any]) -> None:
    if kwargs:
        raise ValueError(f"agent {name!r} got unexpected keyword arguments {sorted(kwargs)}")


def _beta_model(kwargs: dict[str, Any]) -> Any:
    """``BetaBinomial(prior_alpha, prior_beta)`` (default Beta(1, 1)), popping both from
    ``kwargs``."""
    from bam_rl.families import BetaBinomial

    return BetaBinomial(alpha=kwargs.pop("prior_alpha", 1.0), beta=kwargs.pop("prior_beta", 1.0))


def build_random(env: gym.Env, seed: int | None = None, **kwargs: Any) -> RandomAgent:
    """Uniformly random actions (any ``Discrete``/``Box`` environment)."""
    _check_no_kwargs("random", kwargs)
    return RandomAgent(env.action_space, seed=seed)


def build_ucb(env: gym.Env, seed: int | None = None, **kwargs: Any) -> Any:
    """UCB on a bandit (``n_arms`` from the action space)."""
    from bam_rl.agents.bandits import UCB

    return UCB(n_arms=_n_arms(env, "ucb"), seed=seed, **kwargs)


def _thompson(rule: str, name: str, env: gym.Env, seed: int | None, kwargs: dict[str, Any]) -> Any:
    """Thompson sampling with the belief rule ``rule`` per arm: Gaussian arms with known noise
    (the environment's ``noise_std``; ``prior_mean``, ``prior_var`` as
    :meth:`bam_rl.agents.bandits.ThompsonSampling.gaussian`), or Beta-Bernoulli arms on a
    Bernoulli bandit."""
    from bam_rl.agents.bandits import ThompsonSampling

    n_arms = _n_arms(env, name)
    if _bernoulli_arms(env):
        return ThompsonSampling.bernoulli(n_arms, rule, seed=seed, **kwargs)
    return ThompsonSampling.gaussian(n_arms, rule, seed=seed, **_gaussian_kwargs(env, kwargs))


def build_ucbam(env: gym.Env, seed: int | None = None, **kwargs: Any) -> Any:
    """UCBAM (App. D.4, Alg. 3; ``lam`` 0): Gaussian arms, or Beta-Bernoulli arms.

    ``capacity`` bounds every arm's memory (default: unbounded, as in the paper).
    """
    from bam_rl.agents.ucbam import UCBAM

    n_arms = _n_arms(env, "ucbam")
    if _bernoulli_arms(env):
        lam = kwargs.pop("lam", 0.0)
        capacity = kwargs.pop("capacity", None)
        model = _beta_model(kwargs)
        _check_no_kwargs("ucbam", kwargs)
        return UCBAM(n_arms, model, lam=lam, seed=seed, capacity=capacity)
    return UCBAM.gaussian(n_arms, seed=seed, **_gaussian_kwargs(env, kwargs))


def build_ucbam_segments(env: gym.Env, seed: int | None = None, **kwargs: Any) -> Any:
    """Beyond the paper: UCBAM with segment-tied BAM per arm (BOCD over each arm's rewards
    closes segments; ``hazard`` 0.016): Beta-Bernoulli arms on a Bernoulli bandit, else
    Gaussian arms with the environment's noise."""
    from bam_rl.agents.ucbam import SegmentUCBAM

    n_arms = _n_arms(env, "ucbam-segments")
    hazard = kwargs.pop("hazard", hyperparams.BANDIT_HAZARD)
    capacity = kwargs.pop("capacity", None)
    if _bernoulli_arms(env):
        model = _beta_model(kwargs)
    else:
        from bam_rl.agents.arms import gaussian_model

        options = _gaussian_kwargs(env, kwargs)
        model = gaussian_model(
            options.pop("noise_std"), options.pop("prior_mean", 0.5), options.pop("prior_var", 0.25)
        )
        kwargs = options
    _check_no_kwargs("ucbam-segments", kwargs)
    return SegmentUCBAM(n_arms, model, hazard=hazard, seed=seed, capacity=capacity)


def _tracker(rule: str, name: str, env: gym.Env, seed: int | None, kwargs: dict[str, Any]) -> Any:
    """A Beta-Binomial(1, 1) tracker of the stream (``n`` trials from the env) with the belief
    rule ``rule``."""
    from bam_rl.agents.tracking import BeliefTracker
    from bam_rl.beliefs import make_rule

    n_trials = _n_trials(env, name)
    model = _beta_model(kwargs)
    return BeliefTracker(make_rule(model, rule, **kwargs), n_trials=n_trials, seed=seed)


def _mppi_settings(
    memory: str,
    name: str,
    env: gym.Env,
    kwargs: dict[str, Any],
    agent_defaults: dict[str, Any] | None = None,
    warn: bool = True,
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """An MPPI agent's keyword arguments and their record (:func:`bam_rl.agents.settings.resolve`):
    the caller's, then the environment's row of the settings table, then what the environment
    says (``announced``: whether it flags its changes), then the agent's own defaults.
    ``ValueError`` listing the accepted ones for an argument the agent does not take."""
    from bam_rl.agents.mppi import MPPIAgent

    discrete = isinstance(env.action_space, gym.spaces.Discrete)
    check_keywords(f"agent {name!r}", kwargs, MPPIAgent, discrete)
    return resolve(env, "learned", kwargs, agent_defaults=agent_defaults, warn=warn, stacklevel=6)


def _mppi(
    memory: str,
    name: str,
    env: gym.Env,
    seed: int | None,
    kwargs: dict[str, Any],
    agent_defaults: dict[str, Any] | None = None,
) -> Any:
    """``MPPIAgent`` with the settings of :func:`_mppi_settings`: the environment's row of
    :data:`ENV_SETTINGS` (its planning reward, planner and model options) where not given,
    else its own ``planning_reward``/``planner_options`` attributes, else the defaults (the
    cart-pole's planning reward on a 5-D observation); ``announced`` unless given: whether
    the environment flags its changes (:func:`announces_changes`)."""
    from bam_rl.agents.mppi import MPPIAgent

    kwargs, _ = _mppi_settings(memory, name, env, kwargs, agent_defaults)
    return MPPIAgent(env.observation_space, env.action_space, memory=memory, seed=seed, **kwargs)


def _segment_defaults(env: gym.Env, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``mppi-bam-segments``' own defaults on ``env``, below the settings table
    (:func:`bam_rl.agents.settings.memory_defaults`)."""
    return memory_defaults("bam_segments", env, kwargs)


def build_mppi_bam_segments(env: gym.Env, seed: int | None = None, **kwargs: Any) -> Any:
    """Beyond the paper: MPPI whose BAM readout is tied within segments of trials, reading out
    early in an announced change's first trial; unannounced, it finds changes at any step
    and names the world (issue 52).

    Segments are the trials between two changes. When changes are not announced, a CUSUM of
    one-step predictive log-likelihood ratios finds them inside trials and the readout names
    the world of the transitions since (one memory record per world; ``summary()["world"]``;
    ``change_threshold=None``: BOCD over trials, hazard 0.11, as before). It reads out
    after the first ``readout_after_steps`` ((5, 10, 25): after 5,
    again after 10 and 25; by default only those inside the trial) steps of an announced
    change's first trial (``None``: only at the trial's end). Below the settings table, it
    plans with the posterior mean, and on the cart-pole's 5-D state its model defaults to
    :data:`SEGMENT_MODEL_OPTIONS`; the paper's are ``feature_states=None,
    planning_models="draws"``."""
    return _mppi(
        "bam_segments", "mppi-bam-segments", env, seed, kwargs, _segment_defaults(env, kwargs)
    )


def build_mppi_gt(env: gym.Env, seed: int | None = None, **kwargs: Any) -> Any:
    """Ground-truth MPPI: plans with the simulator at the current gravity (GT MPC).

    Its planning reward and planner options are the environment's row of
    :data:`ENV_SETTINGS` (the ground truth's) where not given."""
    from bam_rl.agents.mppi import GroundTruthMPPI

    check_keywords("agent 'mppi-gt'", kwargs, GroundTruthMPPI)
    return GroundTruthMPPI(env, seed=seed, **kwargs)


#: piecewise-bandit agents (issue 24, beyond the paper): registry name -> (module, class)
_PIECEWISE = {
    "klucb": ("klucb", "KLUCB"),
    "glr-klucb": ("klucb", "GLRKLUCB"),
    "glr-klucb-global": ("klucb", "GLRKLUCB"),
    "cusum-klucb": ("klucb", "CUSUMKLUCB"),
    "m-klucb": ("klucb", "MonitoredKLUCB"),
    "oracle-restart-klucb": ("klucb", "OracleRestartKLUCB"),
    "d-klucb": ("passive", "DiscountedKLUCB"),
    "sw-klucb": ("passive", "SlidingWindowKLUCB"),
    "dts": ("passive", "DiscountedThompson"),
    "exp3s": ("passive", "Exp3S"),
}


def _piecewise_class(name: str) -> Any:
    """The agent class registered as the piecewise agent ``name`` (see :data:`_PIECEWISE`)."""
    import importlib

    module, cls = _PIECEWISE[name]
    return getattr(importlib.import_module(f"bam_rl.agents.{module}"), cls)


def _parameters(name: str) -> frozenset[str]:
    """The keyword arguments the piecewise agent ``name``'s class takes."""
    import inspect

    return frozenset(inspect.signature(_piecewise_class(name)).parameters)


def episode_length(env: gym.Env) -> int | None:
    """The steps of one episode of ``env``: its ``max_steps``, else its ``TimeLimit``'s
    ``max_episode_steps``, else ``None`` (unbounded or unknown)."""
    length = getattr(env.unwrapped, "max_steps", None)
    if length is None:
        length = getattr(getattr(env, "spec", None), "max_episode_steps", None)
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
        return None
    return int(length)


def run_horizon(env: gym.Env, n_steps: int | None = None) -> int | None:
    """The steps an agent sees before ``env`` ends an episode (and the agent is reset) in a
    run of ``n_steps`` steps (``None``: whole episodes): ``min(n_steps, episode length)``,
    or whichever of the two is known (``None`` if neither)."""
    length = episode_length(env)
    if n_steps is None:
        return length
    return int(n_steps) if length is None else min(int(n_steps), length)


def env_breakpoints(env: gym.Env, means: bool = True) -> tuple[list[int], np.ndarray | None] | None:
    """The steps at which ``env``'s arm means change, and the (segments, arms) table of the
    means between them (``None`` when unknown); ``None`` if the environment does not say.

    ``PiecewiseBandit`` exposes ``breakpoints`` and ``means``; ``SwitchingBandit`` exposes
    each arm's ``switch_times`` (their union are the breakpoints; the means come from its
    ``means_table``, built only when ``means`` is true).
    """
    bandit = env.unwrapped
    breakpoints = getattr(bandit, "breakpoints", None)
    if breakpoints is not None:
        points = [int(b) for b in breakpoints]
        table = getattr(bandit, "means", None)
        if isinstance(table, np.ndarray) and table.ndim == 2 and len(table) == len(points) + 1:
            return points, table
        return points, None
    switch_times = getattr(bandit, "switch_times", None)
    if switch_times is None:
        return None
    points = sorted({int(t) for times in switch_times for t in np.asarray(times).ravel()})
    means_table = getattr(bandit, "means_table", None)
    length = episode_length(env)
    if length is not None:
        points = [p for p in points if p < length]
        if means and callable(means_table):
            return points, np.asarray(means_table(0, length))[[0, *points]]
    return points, None


def _piecewise_defaults(
    name: str, env: gym.Env, kwargs: dict[str, Any], n_steps: int | None = None
) -> dict[str, Any]:
    """``kwargs`` with the tuning inputs of the piecewise agent ``name`` that the run and the
    environment determine, where the caller did not give them: ``horizon`` (the steps of an
    episode of the run, :func:`run_horizon`), ``n_breakpoints`` (the environment's breakpoints
    before that horizon) and, for ``oracle-restart-klucb``, ``breakpoints`` and ``means``
    (the environment's). Explicit values win; what the environment does not say stays
    unset (the agent then names what it needs)."""
    accepted = _parameters(name)
    filled = dict(kwargs)
    if "horizon" in accepted and "horizon" not in filled:
        horizon = run_horizon(env, n_steps)
        if horizon is not None:
            filled["horizon"] = horizon
    wanted = {"n_breakpoints", "breakpoints"} & accepted - set(filled)
    changes = env_breakpoints(env, means="means" in accepted - set(filled)) if wanted else None
    if changes is None:
        return filled
    points, means = changes
    if "n_breakpoints" in accepted and "n_breakpoints" not in filled:
        horizon = filled.get("horizon")
        if isinstance(horizon, (int, np.integer)) and not isinstance(horizon, bool):
            filled["n_breakpoints"] = sum(1 for p in points if p < horizon)
    if "breakpoints" in accepted and "breakpoints" not in filled:
        filled["breakpoints"] = points
        if "means" in accepted and "means" not in filled and means is not None:
            filled["means"] = means
    return filled


def _piecewise(rule: str, name: str, env: gym.Env, seed: int | None, kwargs: dict[str, Any]) -> Any:
    """A Bernoulli-bandit agent of the piecewise benchmark (:mod:`bam_rl.agents.klucb`,
    :mod:`bam_rl.agents.passive`): ``name`` picks the class in :data:`_PIECEWISE` (``rule``
    is unused). Tuning arguments (``horizon``, ``n_breakpoints``, ``breakpoints``, ``means``)
    not given come from the environment (:func:`_piecewise_defaults`; the horizon is an
    episode's length here, the run's steps when :func:`make_agent` is told ``n_steps``)."""
    agent_class = _piecewise_class(name)
    return agent_class(_n_arms(env, name), seed=seed, **_piecewise_defaults(name, env, kwargs))


@dataclass(frozen=True)
class Builder:
    """A registered agent built by a shared family builder: ``family(rule, name, env, seed,
    kwargs)`` with this agent's ``defaults`` under the caller's keyword arguments. A
    module-level class of module-level functions, so it pickles (loky, Ray)."""

    family: Callable[[str, str, gym.Env, int | None, dict[str, Any]], Any]
    rule: str
    name: str
    summary: str
    defaults: tuple[tuple[str, Any], ...] = ()

    def __call__(self, env: gym.Env, seed: int | None = None, **kwargs: Any) -> Any:
        return self.family(self.rule, self.name, env, seed, {**dict(self.defaults), **kwargs})

    @property
    def __doc__(self) -> str:  # type: ignore[override]  # `bam-rl list` shows it
        return self.summary


def _entries(*builders: Builder) -> dict[str, Callable[..., Any]]:
    return {builder.name: builder for builder in builders}


#: Named agent builders: ``AGENTS[name](env, seed, **kwargs) -> agent``. Module-level
#: functions or :class:`Builder` entries, so they pickle (loky, Ray). Keyword arguments
#: override the paper's defaults: ``forgetting`` (0.8), ``hazard`` (0.016 bandits, 1/100
#: stream), ``lam`` (0; 0.1 for ``tracker-bam-reg``), ``method`` (``"greedy"``),
#: ``noise_std`` (the env's, 0.25), ``prior_mean``/``prior_var`` (Gaussian arms),
#: ``prior_alpha``/``prior_beta`` (Beta priors).
AGENTS: dict[str, Callable[..., Any]] = {
    "ucb": build_ucb,
    **_entries(
        Builder(
            _thompson, "recursive", "thompson", "Thompson sampling with recursive Bayes per arm."
        ),
        Builder(
            _thompson,
            "forgetting",
            "thompson-forgetting",
            "Thompson sampling with exponential forgetting per arm (forgetting 0.8).",
            (("forgetting", hyperparams.FORGETTING),),
        ),
        Builder(
            _thompson,
            "bocd",
            "thompson-bocd",
            "Thompson sampling with BOCD per arm (Mellor & Shapiro; hazard 0.016).",
            (("hazard", hyperparams.BANDIT_HAZARD),),
        ),
        Builder(
            _thompson,
            "bam",
            "thompson-bam",
            "Thompson sampling with BAM per arm (lam 0, greedy readout).",
            (("lam", 0.0),),
        ),
        Builder(
            _thompson,
            "bam_segments",
            "thompson-bam-segments",
            "Beyond the paper: Thompson sampling with segment-tied BAM per arm (BOCD closes "
            "segments; hazard 0.016).",
            (("hazard", hyperparams.BANDIT_HAZARD),),
        ),
    ),
    "ucbam": build_ucbam,
    "ucbam-segments": build_ucbam_segments,
    **_entries(
        Builder(
            _tracker,
            "recursive",
            "tracker-recursive",
            "Beta-Binomial(1, 1) tracker of the stream (n trials from the env), recursive Bayes.",
        ),
        Builder(
            _tracker,
            "forgetting",
            "tracker-forgetting",
            "Beta-Binomial(1, 1) tracker with exponential forgetting (forgetting 0.8).",
            (("forgetting", hyperparams.FORGETTING),),
        ),
        Builder(
            _tracker,
            "bocd",
            "tracker-bocd",
            "Beta-Binomial(1, 1) tracker with BOCD (hazard 1/100).",
            (("hazard", hyperparams.TRACKING_HAZARD),),
        ),
        Builder(
            _tracker,
            "bam",
            "tracker-bam",
            "Beta-Binomial(1, 1) tracker with BAM (lam 0, greedy readout).",
            (("lam", 0.0),),
        ),
        Builder(
            _tracker,
            "bam",
            "tracker-bam-reg",
            "Beta-Binomial(1, 1) tracker with regularised BAM (lam 0.1).",
            (("lam", 0.1),),
        ),
    ),
    "random": build_random,
    **_entries(
        Builder(
            _mppi,
            "bam",
            "mppi-bam",
            "MPPI on the BAM RFF dynamics model (App. D.1): readout after an episode's first "
            "trial (announced changes) or after every trial.",
        ),
        Builder(
            _mppi,
            "bam_bocd",
            "mppi-bam-bocd",
            "MPPI with BAM readouts triggered by BOCD over trials (hazard 0.11).",
        ),
        Builder(_mppi, "bocd", "mppi-bocd", "MPPI with a BOCD belief over trials (hazard 0.11)."),
        Builder(
            _mppi,
            "recursive",
            "mppi-recursive",
            "MPPI with recursive Bayes, reset to the prior at announced changes.",
        ),
        Builder(
            _mppi,
            "forgetting",
            "mppi-forgetting",
            "MPPI with exponential forgetting over trials (forgetting 0.8), reset to the prior "
            "at announced changes.",
        ),
        Builder(
            _mppi,
            "recent_window",
            "mppi-recent-window",
            "Peer, beyond the paper (GrBAL-style): MPPI on the BLR fitted on the last 200 "
            "transitions only (blocks of 10 steps, inside trials too).",
        ),
        Builder(
            _mppi,
            "crp_mixture",
            "mppi-crp-mixture",
            "Peer, beyond the paper (MOLe/DPGP-style): MPPI on the current component of a CRP "
            "mixture of BLRs (each 10-step block joins the component of largest predictive x "
            "CRP weight, or opens one; concentration 1).",
        ),
    ),
    "mppi-gt": build_mppi_gt,
    "mppi-bam-segments": build_mppi_bam_segments,
    **_entries(
        Builder(_piecewise, "", "klucb", "klUCB (Garivier & Cappé 2011), Bernoulli arms."),
        Builder(
            _piecewise,
            "",
            "glr-klucb",
            "GLR-klUCB, local restarts (Besson et al. 2019); horizon, n_breakpoints from the run "
            "and environment unless given.",
            (("local", True),),
        ),
        Builder(
            _piecewise,
            "",
            "glr-klucb-global",
            "GLR-klUCB, global restarts (Besson et al. 2019); horizon, n_breakpoints from the run "
            "and environment unless given.",
            (("local", False),),
        ),
        Builder(
            _piecewise,
            "",
            "cusum-klucb",
            "CUSUM-klUCB (Liu et al. 2018); horizon, n_breakpoints from the run and environment "
            "unless given.",
        ),
        Builder(
            _piecewise,
            "",
            "m-klucb",
            "M-klUCB (Cao et al. 2019); horizon from the run unless given.",
        ),
        Builder(
            _piecewise,
            "",
            "oracle-restart-klucb",
            "klUCB restarted at the true breakpoints (and means): the environment's unless given.",
        ),
        Builder(_piecewise, "", "d-klucb", "Discounted klUCB (gamma 0.95, as the benchmark)."),
        Builder(
            _piecewise,
            "",
            "sw-klucb",
            "Sliding-window klUCB; window tau from horizon, n_breakpoints (the run's and "
            "environment's unless given) or given.",
        ),
        Builder(_piecewise, "", "dts", "Discounted Thompson sampling (gamma 0.95)."),
        Builder(
            _piecewise,
            "",
            "exp3s",
            "Exp3.S; horizon, n_breakpoints from the run and environment unless given.",
        ),
    ),
}


def check_agent_name(name: Any) -> str:
    """Returns ``name`` if it is a key of :data:`AGENTS`, else raises ``ValueError``."""
    if not isinstance(name, str) or name not in AGENTS:
        raise ValueError(f"unknown agent {name!r}; accepted agents: {', '.join(AGENTS)}")
    return name


def check_env_id(env_id: Any) -> str:
    """Returns ``env_id`` if Gymnasium knows it, else raises ``ValueError`` naming the closest
    registered ids and listing every ``bam_rl/`` one (the recurring worlds and
    ``NonStationary-v0`` included)."""
    if not isinstance(env_id, str) or env_id not in gym.registry:
        ours = [key for key in gym.registry if key.startswith("bam_rl/")]
        hint = ""
        if isinstance(env_id, str):
            by_lower = {key.lower(): key for key in gym.registry}
            close = difflib.get_close_matches(env_id.lower(), list(by_lower), n=3, cutoff=0.6)
            if close:
                hint = f" (did you mean {' or '.join(by_lower[key] for key in close)}?)"
        raise ValueError(
            f"unknown environment {env_id!r}{hint}; accepted environments: {', '.join(ours)} "
            "(or any other registered Gymnasium id)"
        )
    return env_id


def make_agent(
    name: str, env: gym.Env, seed: int | None = None, *, n_steps: int | None = None, **kwargs: Any
) -> Any:
    """Builds the agent registered as ``name`` for ``env``.

    Agents tuned from the horizon and the breakpoints (``glr-klucb``, ``cusum-klucb``,
    ``m-klucb``, ``sw-klucb``, ``exp3s``, ``d-klucb`` with ``gamma="tuned"``) and
    ``oracle-restart-klucb`` take what the run and the environment determine when it is not
    given: ``horizon`` is the steps of an episode of the run (``min(n_steps, episode
    length)``), ``n_breakpoints`` the environment's breakpoints before it, ``breakpoints``
    and ``means`` the environment's (``PiecewiseBandit``'s ``breakpoints``,
    ``SwitchingBandit``'s ``switch_times``).

    Args:
        name: A key of :data:`AGENTS`.
        env: The environment the agent will act in (sizes are read from its spaces).
        seed: The agent's seed.
        n_steps: Steps of the run the agent is built for (``None``: whole episodes); sets
            the default ``horizon`` of the agents above.
        **kwargs: Overrides of the builder's defaults (explicit values always win).

    Raises:
        ValueError: For an unknown name (the message lists the accepted ones), a bad
            ``n_steps``, or an agent that does not fit the environment.
    """
    builder = AGENTS[check_agent_name(name)]
    if n_steps is not None:
        if isinstance(n_steps, bool) or not isinstance(n_steps, (int, np.integer)) or n_steps < 1:
            raise ValueError(f"n_steps must be None or an int >= 1, got {n_steps!r}")
        if name in _PIECEWISE and "horizon" not in kwargs and "horizon" in _parameters(name):
            horizon = run_horizon(env, int(n_steps))
            if horizon is not None:
                kwargs["horizon"] = horizon
    return builder(env, seed, **kwargs)


#: The MPPI agents whose settings come from the settings table: name -> (kind, memory rule).
MPPI_AGENTS: dict[str, tuple[str, str]] = {
    "mppi-bam": ("learned", "bam"),
    "mppi-bam-bocd": ("learned", "bam_bocd"),
    "mppi-bocd": ("learned", "bocd"),
    "mppi-recursive": ("learned", "recursive"),
    "mppi-forgetting": ("learned", "forgetting"),
    "mppi-recent-window": ("learned", "recent_window"),
    "mppi-crp-mixture": ("learned", "crp_mixture"),
    "mppi-bam-segments": ("learned", "bam_segments"),
    "mppi-gt": ("gt", ""),
}


def resolved_settings(
    name: str, env: gym.Env, *, n_steps: int | None = None, **kwargs: Any
) -> dict[str, Any]:
    """What ``make_agent(name, env, n_steps=n_steps, **kwargs)`` builds the agent with, and
    where each setting came from, without building it (what a run file records and
    ``bam-rl run --dry-run`` prints).

    Returns:
        ``{"agent": name, "env_row": id or None, "row_source": docs section or None,
        "settings": {setting: {"value": ..., "source": ...}}}``; the sources are
        ``user`` (given, and not the table's value), ``table`` (the row of
        :data:`ENV_SETTINGS`), ``env`` (what the environment says: ``announced``, a run's
        horizon and breakpoints) and ``default`` (the agent's own).

    Raises:
        ValueError: As :func:`make_agent` would for an unknown name or an argument the agent
            does not take.
    """
    builder = AGENTS[check_agent_name(name)]
    row, env_id = settings_for(env)
    kind = MPPI_AGENTS.get(name, ("", ""))[0]
    settings: dict[str, dict[str, Any]]
    if name == "mppi-gt":
        from bam_rl.agents.mppi import GroundTruthMPPI

        check_keywords("agent 'mppi-gt'", kwargs, GroundTruthMPPI)
        _, settings = resolve(env, "gt", kwargs, warn=False)
    elif kind == "learned":
        memory = MPPI_AGENTS[name][1]
        given = {**dict(getattr(builder, "defaults", ())), **kwargs}
        own = _segment_defaults(env, given) if name == "mppi-bam-segments" else None
        _, settings = _mppi_settings(memory, name, env, given, own, warn=False)
    else:
        defaults = dict(getattr(builder, "defaults", ()))
        filled = dict(kwargs)
        if name in _PIECEWISE:
            if n_steps is not None and "horizon" not in filled and "horizon" in _parameters(name):
                horizon = run_horizon(env, int(n_steps))
                if horizon is not None:
                    filled["horizon"] = horizon
            filled = _piecewise_defaults(name, env, {**defaults, **filled})
        settings = {
            key: {
                "value": _recordable(value),
                "source": "user" if key in kwargs else "default" if key in defaults else "env",
            }
            for key, value in {**defaults, **filled}.items()
        }
    return {
        "agent": name,
        "env_row": env_id if row is not None and kind else None,
        "row_source": row.source_of(kind) if row is not None and kind else None,
        "settings": settings,
    }


def _recordable(value: Any) -> Any:
    from bam_rl.agents.settings import recordable

    return recordable(value)
