"""MPPI control with a BAM dynamics model, and ground-truth MPPI (paper §4.2, App. D.1).

:class:`MPPI` is model predictive path integral control (Williams et al., 2017) with the
conventions of the authors' LyceumAI implementation: it *maximises* the summed reward of
``n_samples`` perturbed action sequences of length ``horizon`` (no control cost, no
discount), weighting each sequence by ``exp((R_k − max_k R_k) / temperature)``; sampled
actions are clamped to the action bounds and the new plan is the weighted average of the
*clamped* samples; after acting, the plan is shifted by one step and its last action set to
zero (warm start). Paper values: horizon 50, 32 samples, sampling variance 0.4, temperature
0.5 (:mod:`bam_rl.hyperparams`).

:class:`MPPIAgent` plans with an :class:`~bam_rl.agents.dynamics.RFFDynamicsModel` whose belief
over ``M`` comes from a memory rule fed one datum per trial; :class:`GroundTruthMPPI` plans
with the simulator itself (:class:`~bam_rl.agents.simulator.SimulatorDynamics`).

Over 700 lines (about 900) on purpose: :class:`MPPIAgent` alone is some 560, one trial life
cycle (reset, plan, record, the readout at a trial's end or inside it, the segment splits,
save/restore checks of every piece) that reads best in one place, and
:class:`GroundTruthMPPI` beside it shares its memory names and rule table. The input checks
both use live in :mod:`bam_rl.agents.mppi_inputs` (importable from here too); the planner,
the models, the rewards and the belief rules live in their own modules.
"""

from __future__ import annotations

import math
from typing import Any, cast

import gymnasium as gym
import numpy as np

from bam_rl import hyperparams
from bam_rl.beliefs import (
    BAM,
    BOCD,
    BAMWithChangepoints,
    BeliefRule,
    EpisodicBAM,
    ExponentialForgetting,
    RecursiveBayes,
    SegmentBAM,
    make_rule,
)
from bam_rl.beliefs.peers import (
    BLOCK_STEPS,
    CONCENTRATION,
    PEER_MEMORIES,
    WINDOW_STEPS,
    CRPMixture,
    RecentWindow,
    make_peer_rule,
)
from bam_rl.beliefs.worlds import (
    DEFAULT_THRESHOLD,
    REFRESH_STEPS,
    PredictiveCusum,
    WorldSegmentBAM,
)
from bam_rl.checks import check_finite_scalar, check_int
from bam_rl.families import NaturalParams
from bam_rl.readout import ReadoutResult

from .base import BaseAgent, Transition
from .classic_models import ClassicDynamics, classic_model_for
from .dynamics import RFFDynamicsModel
from .mppi_inputs import (  # the input checks, importable from here as before
    _CARTPOLE_ANGLE,
    CARTPOLE_STATE_DIM,
    _action_space,
    _check_readout_steps,
    _check_refresh_steps,
    _check_restored_reward,
    _check_saveable,
    _check_state,
    _checked_action,
    _checked_one_hot,
    _default_reward,
    _info_gravity,
    _observation_dim,
    _trial_label,
)
from .mppi_inputs import (
    CONTEXT_GRAVITY_KEYS as CONTEXT_GRAVITY_KEYS,
)
from .mppi_inputs import (
    MAX_STATE_MAGNITUDE as MAX_STATE_MAGNITUDE,
)
from .mppi_inputs import (
    _checked_discrete_action as _checked_discrete_action,
)
from .normalized_dynamics import NORMALIZED_DEFAULTS, NormalizedRFFDynamicsModel
from .planner import (
    MPPI,
    AngleCosineReward,
    CategoricalMPPI,
    StateReward,
    discrete_mppi_options,
    mppi_options,
)
from .rewards import make_planning_reward
from .settings import check_keywords, ground_truth_options, memory_defaults, resolve
from .simulator import MujocoEnvDynamics, SimulatorDynamics, StepFunctionDynamics

__all__ = [
    "MEMORY_RULES",
    "MPPI",
    "AngleCosineReward",
    "CategoricalMPPI",
    "GroundTruthMPPI",
    "MPPIAgent",
    "StateReward",
]

#: Memory rules accepted by :class:`MPPIAgent`.
MEMORY_RULES = (
    "bam",
    "bam_bocd",
    "bocd",
    "recursive",
    "bam_segments",
    "forgetting",
    *PEER_MEMORIES,
)
#: Spellings of :data:`MEMORY_RULES` before they became :func:`~bam_rl.beliefs.make_rule`'s,
#: still accepted (and in state files written before).
MEMORY_ALIASES = {"bam+bocd": "bam_bocd", "bam-segments": "bam_segments"}


def _memory_name(memory: Any) -> str:
    """``memory`` as :data:`MEMORY_RULES` spells it, or ``ValueError`` naming the choices."""
    memory = MEMORY_ALIASES.get(memory, memory) if isinstance(memory, str) else memory
    if memory not in MEMORY_RULES:
        raise ValueError(
            f"memory must be one of {MEMORY_RULES} (or the older spellings "
            f"{tuple(MEMORY_ALIASES)}), got {memory!r}"
        )
    return memory


class _TrialRecorder:
    """The transitions of the current trial: states ``(T+1, dx)`` and actions ``(T, du)``."""

    def __init__(self) -> None:
        self.states: list[np.ndarray] = []
        self.actions: list[np.ndarray] = []
        self.fed = 0  # transitions already fed to a block rule (the peers), else 0


#: The :func:`~bam_rl.beliefs.make_rule` name of each ``memory`` (with announced changes or not).
_RULE_NAMES = {
    "bam": lambda announced: "episodic_bam" if announced else "bam",
    "bam_bocd": lambda announced: "bam_bocd",
    "bocd": lambda announced: "bocd",
    "recursive": lambda announced: "recursive",
    "bam_segments": lambda announced: "bam_segments",
    "forgetting": lambda announced: "forgetting",
    "recent_window": lambda announced: "recent_window",
    "crp_mixture": lambda announced: "crp_mixture",
}


def _rule_class(memory: str, announced: bool) -> type[BeliefRule]:
    """The belief rule :class:`MPPIAgent` builds for ``memory`` (through ``make_rule``;
    ``"bam_segments"`` without announcements: :class:`WorldSegmentBAM`, beyond the paper)."""
    if memory == "bam_segments" and not announced:
        return WorldSegmentBAM
    classes: dict[str, type[BeliefRule]] = {
        "episodic_bam": EpisodicBAM,
        "bam": BAM,
        "bam_bocd": BAMWithChangepoints,
        "bocd": BOCD,
        "recursive": RecursiveBayes,
        "bam_segments": SegmentBAM,
        "forgetting": ExponentialForgetting,
        "recent_window": RecentWindow,
        "crp_mixture": CRPMixture,
    }
    return classes[_RULE_NAMES[memory](announced)]


def _check_whole_trials(
    memory: str,
    announced: bool,
    change_threshold: float | None,
    readout_after_steps: Any,
    refresh_every_steps: Any,
) -> None:
    """``dynamics_model="normalized"`` fixes its moments from the first data it sees, so its
    first datum must be a whole trial: a ``ValueError`` naming what would feed it a part of
    one (an unannounced segment BAM's detector works in raw state changes, too)."""
    parts = [
        name
        for name, feeds_parts in (
            (f"memory={memory!r}", memory in PEER_MEMORIES),
            (
                "announced=False with the change detector (change_threshold not None)",
                memory == "bam_segments" and not announced and change_threshold is not None,
            ),
            (f"readout_after_steps={readout_after_steps!r}", bool(readout_after_steps)),
            (f"refresh_every_steps={refresh_every_steps!r}", bool(refresh_every_steps)),
        )
        if feeds_parts
    ]
    if parts:
        raise ValueError(
            "dynamics_model='normalized' fixes its moments from its first datum, which must be "
            f"a whole trial; not with {', '.join(parts)} (give readout_after_steps=None and "
            "announced changes, or the 'rff' model)"
        )


class MPPIAgent(BaseAgent):
    """MPPI on a Bayesian random-Fourier-feature dynamics model with a memory rule (§4.2).

    Each trial (one episode of the environment) the agent plans with MPPI, drawing one
    dynamics model per planning trajectory from the current belief over ``M`` (as the paper
    does; ``planning_models="mean"`` rolls out the posterior mean instead). At the end of
    a trial its transitions become one datum (sufficient statistics) and the memory rule
    updates the belief:

    * ``"bam"`` — with announced changes (``announced=True``, the episodic setting) the first
      trial after ``info["context_changed"]`` starts from the base prior and, once done,
      selects readout weights over all remembered trials (:func:`bam_rl.readout.select`,
      :class:`EpisodicBAM`); later trials update recursively. Without announcements it
      selects after every trial (:class:`bam_rl.beliefs.BAM`).
    * ``"bam_bocd"`` — BOCD over trials (hazard 0.11) signals changes; a signal (or an
      announced change) triggers a selection, otherwise recursive updates
      (:class:`bam_rl.beliefs.BAMWithChangepoints`).
    * ``"bocd"`` — the posterior of the most probable BOCD segment, so a detected change
      restarts from the base prior (:class:`bam_rl.beliefs.BOCD`, hazard 0.11).
    * ``"recursive"`` — recursive Bayes, reset to the base prior when told of a change.
    * ``"forgetting"`` — exponential forgetting over trials (factor 0.8 per trial, the paper's;
      :class:`bam_rl.beliefs.ExponentialForgetting`), reset to the base prior when told of a
      change.
    * ``"bam_segments"`` (beyond the paper) — readout weights tied within segments, the trials
      between two changes (:class:`bam_rl.beliefs.SegmentBAM`): at a change (announced, or
      detected by BOCD over trials with ``hazard`` when ``announced=False``) the readout is
      over whole earlier segments, then updates are recursive. With
      ``readout_after_steps=k`` the first trial after an announced change plans its first
      ``k`` steps from the base prior, then reads out over the segments with those ``k``
      transitions and plans the rest of the trial with that belief (a tuple of step counts
      reads out again, with every transition so far, at each). Without announcements
      (``announced=False``, issue 52) it finds the changes itself, at any step: a CUSUM of
      one-step predictive log-likelihood ratios (:class:`bam_rl.beliefs.worlds.PredictiveCusum`)
      weighs the belief it plans with against every other world's posterior and the base
      prior; at a signal the trial's part splits where the change began, the readout names
      the world of the transitions since (:class:`bam_rl.beliefs.worlds.WorldSegmentBAM`:
      one memory record per world, a new world when none explains them, judged at the noise
      level the detector estimates from the model's one-step errors) and the rest of the
      part plans with that world's posterior plus them; every 10 transitions of a part
      without a change join the belief it plans with and the detector weighs.
      :meth:`summary` reports ``world``.
      With ``change_threshold=None``, BOCD over trials (``hazard``) finds the changes
      instead (the behaviour before issue 52): a change it detects at the end of a trial is
      read out with that trial's first ``k`` steps (the first entry), and the whole trial
      then updates the new segment.

    Every rule resets to the base prior at an announced change (the memories of the BAM
    rules are kept).

    Args:
        observation_space: A 1-D ``Box`` (the state the model learns; the cart-pole's 5-D
            observation).
        action_space: A 1-D ``Box`` (its bounds clamp the planner's samples), or a
            ``Discrete(n)`` with ``n >= 2``: then a :class:`CategoricalMPPI` plans, the model
            and the reward see one-hot actions ``(n,)``, :meth:`act` returns an int of the
            space, and the planner options are ``horizon``, ``n_samples``, ``temperature``
            and ``explore``.
        memory: One of :data:`MEMORY_RULES`, the names :func:`~bam_rl.beliefs.make_rule` gives
            the rules (``"bam+bocd"`` and ``"bam-segments"``, the older spellings, are read as
            ``"bam_bocd"`` and ``"bam_segments"``).
        seed: Seed of :attr:`rng` (the random features' seed and all planning draws).
        announced: Whether changes are announced through ``info["context_changed"]``
            (the episodic setting); only ``"bam"`` uses it.
        hazard: BOCD hazard over trials (0.11) for ``"bocd"`` and ``"bam_bocd"``.
        lam: BAM's complexity penalty (0 in the paper's control experiments).
        method: BAM's readout selector (``"greedy"``). Measured with ``"continuous"``
            (weights in [0, 1]; ``docs/any_env.md``): on the cart-pole with gravity changes
            announced inside trials, acting on them at once then pays (with greedy weights it
            does not); on Pendulum-v1 with gravity changing between episodes, it spoils the
            first visit to a new gravity.
        n_features: Random Fourier features (200).
        bandwidth: Their bandwidth (6.0).
        noise_var: Model noise variance ``σ²`` (1e-6).
        prior_precision: Prior precision of the rows of ``M`` (1e-4).
        planning_dtype: ``"float32"`` (default) or ``"float64"`` planning rollouts (about 2×
            slower, not more faithful to the model; see
            :class:`~bam_rl.agents.dynamics.RFFDynamicsModel`).
        feature_states: State components the random features see (``None``: all).
        readout_after_steps: ``memory="bam_segments"`` only: the step (a positive int, or an
            increasing tuple of them) after which the first trial of an announced change reads
            out over the segments; ``None`` (default) reads out only at the trial's end.
        refresh_every_steps: ``memory="bam_segments"`` only (beyond the paper): every this many
            steps of a trial without in-trial readouts, the trial's transitions so far join
            the belief it plans with (``None``, default: the belief changes at trials' ends).
        angle_pairs: ``(cos, sin)`` index pairs projected onto the unit circle in planning
            rollouts, within the observation (``ValueError`` otherwise); ``None`` (default):
            those the named ``reward`` declares (``"cartpole-swingup"``, the default on a 5-D
            observation: ``((2, 3),)``, the cart-pole's pole angle), none for a callable
            (``()``: none, the paper's plain rollout). Without it the learned
            model's predicted ``(cos, sin)`` drift off the circle over the 50-step horizon
            and the agent learns the swing-up more slowly
            (``bam_rl.experiments.mppi_checks``).
        planning_models: ``"draws"`` (default, the paper's: one draw of ``M`` per planning
            trajectory, rolled out with the model noise) or ``"mean"`` (beyond the paper: the
            posterior mean for every trajectory, no noise); see
            :class:`~bam_rl.agents.dynamics.RFFDynamicsModel`.
        reward: The planning reward (what MPPI maximises): a name in
            :data:`bam_rl.agents.rewards.REWARDS` (saved by name; its observation dimension
            must be the space's), or a callable ``reward(states (K, H, dx), actions (K, H,
            du)) -> (K, H)`` (checked on one dummy rollout here; an agent holding one cannot
            be saved until it is registered with
            :func:`~bam_rl.agents.rewards.register_reward`). ``None`` (default):
            ``"cartpole-swingup"`` on a 5-D observation, refused on any other.
        in_trial_changes: Whether a change announced inside a trial (``info["context_changed"]``
            turning True at a step, or the reported world changing) is acted on at once, as
            :meth:`reset` acts on one (True, default): the trial so far is ended as a trial
            (one datum), the rule resets to the base prior and ``"bam_segments"`` reads out
            after ``readout_after_steps`` steps of the new world. ``False``: the notice waits
            for the next trial, whose :meth:`reset` acts on it as on an announced change.
            Either way a notice on a trial's first transition (NS-Gym's bridge announces a
            world that differs at a trial's start there, not at ``reset``) is a change at the
            trial's start, acted on at once (as at :meth:`reset`) either way.
        min_change_interval: Fewest transitions of a trial's part before a change announced
            inside the trial ends it (default 5, at least 1). A change announced sooner is
            merged: it is acted on once the part holds this many transitions (or at the next
            :meth:`reset` if the trial ends first), and the changes in between are one. This
            bounds the segment bookkeeping: a world that changes at every step would otherwise
            make every step a trial, and each trial's readout scans the whole memory (measured
            on the cart-pole: 0.6 s a step at the start, 22 s after 100 steps, with 1). The
            merged part's datum mixes the worlds of its few transitions. Agents saved before
            this option load with 1, the behaviour they were saved with.
        change_threshold: ``memory="bam_segments"`` without announcements (beyond the paper):
            the CUSUM threshold in nats of the change detector (default
            :data:`~bam_rl.beliefs.worlds.DEFAULT_THRESHOLD`, 100; docs/recurring.md);
            ``None``: BOCD over trials instead (the behaviour before issue 52). Unused
            otherwise.
        dynamics_model: ``"rff"`` (default, the paper's
            :class:`~bam_rl.agents.dynamics.RFFDynamicsModel`) or ``"normalized"`` (beyond the
            paper, issue 53: standardised inputs and targets with per-dimension length
            scales, :class:`~bam_rl.agents.normalized_dynamics.NormalizedRFFDynamicsModel`;
            ``bandwidth``, ``noise_var`` and ``prior_precision`` left at the paper's defaults
            take that model's). Its moments are fixed by its first datum, so anything that
            feeds it part of a trial first is a ``ValueError``: in-trial readouts,
            ``refresh_every_steps``, the peers, an unannounced segment BAM's detector.
        **planner_options: :class:`MPPI` options (``horizon``, ``n_samples``, ``noise_var``
            is named ``sampling_var`` here, ``temperature``, and ``normalize_returns``, beyond
            the paper: the returns' scale divided out of the weights).

    Attributes:
        model: The :class:`~bam_rl.agents.dynamics.RFFDynamicsModel`.
        rule: The memory rule (a :class:`~bam_rl.beliefs.BeliefRule`).
        planner: The :class:`MPPI` planner.
        trial_gravities: ``info["gravity"]`` of every finished trial, else its
            ``info["context"]`` gravity (``"gravity"`` or ``"g"``, or the only entry; the
            ``NonStationary`` wrapper's) when a number > 0, else ``nan``;
            aligned with the BAM rules' memory (a trial split by an in-trial change counts
            as two).
        n_in_trial_changes: Changes announced inside a trial and acted on.
        n_detected_changes: Changes the detector found (unannounced segment BAM).
    """

    def __init__(
        self,
        observation_space: gym.spaces.Space,
        action_space: gym.spaces.Space,
        memory: str = "bam",
        seed: int | None = None,
        *,
        announced: bool = False,
        hazard: float = hyperparams.CARTPOLE_HAZARD,
        lam: float = 0.0,
        method: str = "greedy",
        n_features: int = hyperparams.RFF_FEATURES,
        bandwidth: float = hyperparams.RFF_BANDWIDTH,
        noise_var: float = hyperparams.BLR_NOISE_VAR,
        prior_precision: float = hyperparams.BLR_PRIOR_PRECISION,
        planning_dtype: str = "float32",
        feature_states: Any = None,
        angle_pairs: Any = None,
        readout_after_steps: Any = None,
        refresh_every_steps: Any = None,
        planning_models: str = "draws",
        reward: Any = None,
        in_trial_changes: bool = True,
        min_change_interval: int = 5,
        window_steps: int = WINDOW_STEPS,
        concentration: float = CONCENTRATION,
        change_threshold: float | None = DEFAULT_THRESHOLD,
        dynamics_model: str = "rff",
        **planner_options: Any,
    ):
        super().__init__(seed)
        memory = _memory_name(memory)
        if not isinstance(in_trial_changes, (bool, np.bool_)):
            raise ValueError(f"in_trial_changes must be a bool, got {in_trial_changes!r}")
        self.in_trial_changes = bool(in_trial_changes)
        self.min_change_interval = check_int("min_change_interval", min_change_interval)
        self.readout_after_steps = _check_readout_steps(readout_after_steps, memory)
        self.refresh_every_steps = _check_refresh_steps(refresh_every_steps, memory)
        if not isinstance(announced, (bool, np.bool_)):
            raise ValueError(f"announced must be a bool, got {announced!r}")
        self.state_dim = _observation_dim(observation_space, "observation_space")
        self.action_dim, self.n_actions, action_box = _action_space(action_space)
        self.memory = memory
        self.announced = bool(announced)
        if self.n_actions is None:
            options = mppi_options(planner_options, self.action_dim)
        else:
            options = discrete_mppi_options(planner_options)
        planning_reward, declared_pairs = make_planning_reward(
            _default_reward(reward, self.state_dim), observation_space, action_box
        )
        if angle_pairs is None:
            angle_pairs = declared_pairs
        feature_seed = int(self.rng.integers(2**31))
        model_class: type[RFFDynamicsModel] = RFFDynamicsModel
        if dynamics_model == "normalized":  # beyond the paper (issue 53)
            _check_whole_trials(
                memory,
                self.announced,
                change_threshold,
                self.readout_after_steps,
                self.refresh_every_steps,
            )
            model_class = NormalizedRFFDynamicsModel
            # the paper's values left at their defaults take the normalised model's
            bandwidth, noise_var, prior_precision = (
                NORMALIZED_DEFAULTS[name] if value == paper else value
                for name, value, paper in (
                    ("bandwidth", bandwidth, hyperparams.RFF_BANDWIDTH),
                    ("noise_var", noise_var, hyperparams.BLR_NOISE_VAR),
                    ("prior_precision", prior_precision, hyperparams.BLR_PRIOR_PRECISION),
                )
            )
        elif dynamics_model != "rff":
            raise ValueError(
                f"dynamics_model must be 'rff' or 'normalized', got {dynamics_model!r}"
            )
        self.model = model_class(
            self.state_dim,
            self.action_dim,
            n_features=n_features,
            bandwidth=bandwidth,
            noise_var=noise_var,
            prior_precision=prior_precision,
            seed=feature_seed,
            planning_dtype=planning_dtype,
            feature_states=feature_states,
            angle_pairs=angle_pairs,
            planning_models=planning_models,
        )
        family = self.model.family
        if memory in ("bocd", "bam_bocd") or (memory == "bam_segments" and not self.announced):
            hazard = check_finite_scalar("hazard", hazard)
            if not 0.0 < hazard < 1.0:
                raise ValueError(f"hazard must lie in (0, 1), got {hazard!r}")
        self.window_steps = check_int("window_steps", window_steps, minimum=BLOCK_STEPS)
        self.concentration = check_finite_scalar("concentration", concentration)
        self.rule: BeliefRule
        # beyond the paper: unannounced segment BAM finds its changes step by step
        self._detector: PredictiveCusum | None = None
        if memory == "bam_segments" and not self.announced and change_threshold is not None:
            self.rule = WorldSegmentBAM(family, lam=lam, method=method, threshold=change_threshold)
            self._detector = PredictiveCusum(family.noise_var, change_threshold, calibrate=True)
        elif memory in PEER_MEMORIES:  # beyond the paper: fed a datum per block of steps
            self.rule = make_peer_rule(family, memory, self.window_steps, self.concentration)
        else:
            self.rule = make_rule(
                family,
                _RULE_NAMES[memory](self.announced),
                lam=lam,
                method=method,
                hazard=None if memory == "bam_segments" and self.announced else hazard,
            )
        # the planner gets its dynamics at each call, so the model is held (and saved) once
        self.planner: MPPI | CategoricalMPPI
        if self.n_actions is None:
            self.planner = MPPI(
                None,
                planning_reward,
                action_dim=self.action_dim,
                action_low=action_box.low,
                action_high=action_box.high,
                **options,
            )
        else:
            start = int(cast(gym.spaces.Discrete, action_space).start)
            self.planner = CategoricalMPPI(self.n_actions, planning_reward, start=start, **options)
        self.planner.check_planning_memory(self.model)
        self.n_in_trial_changes = 0  # changes announced inside a trial and acted on
        self._pending_change = False  # a notice ignored inside a trial, for the next reset
        self._merged_change = False  # a notice inside a too-short part, acted on at its end
        self._merged_split = False  # the current part was started by a merged change
        self._trial = _TrialRecorder()
        self._last_info: dict[str, Any] = {}
        self.trial_gravities: list[float] = []
        self.n_trials = 0
        self._readouts_due: list[int] = []
        self._refreshing = False
        self._trial_readouts = 0  # in-trial readouts made so far in this trial
        self.in_trial_readouts: list[ReadoutResult] = []
        self.segment_pick_fractions: list[float] = []
        self.in_trial_pick_fractions: list[float] = []
        self.n_detected_changes = 0  # changes the detector found (unannounced segment BAM)
        self._world_evidence = 0  # transitions of this part in the planning belief after one
        # their statistics, summed as they come (beyond the paper; None: not summed yet)
        self._world_stats: NaturalParams | None = None

    @classmethod
    def from_env(
        cls, env: gym.Env, memory: str = "bam", seed: int | None = None, **overrides: Any
    ) -> MPPIAgent:
        """The agent for ``env`` with the settings measured for it (the environment in, a
        working agent out, as Stable-Baselines3's algorithms take it).

        The planning reward, planner and model options come from ``env``'s row of
        :data:`bam_rl.agents.settings.ENV_SETTINGS` (found through the wrapped environment's
        id, so a ``NonStationary`` wrapper finds its environment's row), ``announced`` from
        whether ``env`` flags its changes, then the memory rule's own defaults
        (:func:`~bam_rl.agents.settings.memory_defaults`: ``"bam_segments"`` builds the
        registry's ``mppi-bam-segments``); an explicit keyword argument always wins. An
        environment without a row gets the defaults and a warning naming the settings to
        choose (``docs/env_settings.md``)::

            gravity = cycle([9.81, 3.72], every=5)
            env = NonStationary(gym.make("InvertedPendulum-v5"), {"gravity": gravity})
            agent = MPPIAgent.from_env(env, memory="bam_segments")

        Args:
            env: The environment (possibly wrapped).
            memory: One of :data:`MEMORY_RULES`.
            seed: Seed of :attr:`rng`.
            **overrides: Any keyword argument of the constructor (``ValueError`` listing the
                accepted ones for any other).
        """
        discrete = isinstance(env.action_space, gym.spaces.Discrete)
        check_keywords("MPPIAgent", overrides, cls, discrete)
        memory = _memory_name(memory)
        own = memory_defaults(memory, env, overrides)  # bam_segments': the registry's too
        kwargs, _ = resolve(env, "learned", overrides, agent_defaults=own)
        return cls(env.observation_space, env.action_space, memory=memory, seed=seed, **kwargs)

    def _check_restored(self) -> None:
        """A restored agent is checked as the constructor checks its arguments: a known
        memory rule of the class it names, a model, rule and planner that fit each other
        (sizes within the memory budget, one family, the model's belief the rule's or what
        the pending trial's in-trial readout or refresh made of it), and a pending trial of
        finite states and actions in their spaces."""
        super()._check_restored()
        self.memory = _memory_name(self.memory)
        if not isinstance(self.announced, bool):
            raise ValueError(f"announced must be a bool, got {self.announced!r}")
        rule_class = _rule_class(self.memory, self.announced)
        if rule_class is WorldSegmentBAM and type(self.rule) is SegmentBAM:
            rule_class = SegmentBAM  # files written before: BOCD over trials, no detector
        if type(self.rule) is not rule_class:
            raise ValueError(
                f"rule must be a {rule_class.__name__} for memory={self.memory!r}, got "
                f"{type(self.rule).__name__}"
            )
        model, planner = self.model, self.planner
        if (self.state_dim, self.action_dim) != (model.state_dim, model.action_dim):
            raise ValueError("state_dim and action_dim must be the model's")
        if planner.action_dim != self.action_dim or planner.dynamics is not None:
            raise ValueError("the planner must plan the model's actions (and hold no dynamics)")
        vars(self).setdefault("n_actions", None)  # files written before Discrete actions
        discrete = isinstance(planner, CategoricalMPPI)
        if self.n_actions != (cast(CategoricalMPPI, planner).n_actions if discrete else None):
            raise ValueError("n_actions must be the categorical planner's (None for a Box)")
        if model.angle_pairs and self.state_dim <= max(map(max, model.angle_pairs)):
            raise ValueError("angle_pairs must index the state")
        _check_restored_reward(planner, self.state_dim)
        planner.check_planning_memory(model)
        model.family.check_compatible(self.rule.model, "rule")
        model.family.check_params(self.rule.belief, "rule belief")
        states, actions = self._trial.states, self._trial.actions
        if not isinstance(states, list) or not isinstance(actions, list):
            raise ValueError("the pending trial must hold lists of states and actions")
        if len(states) != len(actions) + 1 and (states or actions):
            raise ValueError("the pending trial must hold one state more than actions")
        self._trial.states = [
            _check_state("pending state", state, self.state_dim, model.angle_pairs)
            for state in states
        ]
        self._trial.actions = [
            _checked_one_hot(action, planner)
            if isinstance(planner, CategoricalMPPI)
            else _checked_action(action, planner)
            for action in actions
        ]
        if not isinstance(self._last_info, dict):
            raise ValueError("_last_info must be a dict")
        _info_gravity(self._last_info)
        self.n_trials = int(check_int("n_trials", self.n_trials, minimum=0))
        gravities = self.trial_gravities
        if not isinstance(gravities, list) or len(gravities) != self.n_trials:
            raise ValueError(f"trial_gravities must be a list of n_trials = {self.n_trials} floats")
        # files written before segment BAM lack its fields: they are the defaults
        for name in (
            "_readouts_due",
            "in_trial_readouts",
            "segment_pick_fractions",
            "in_trial_pick_fractions",
        ):
            vars(self).setdefault(name, [])
        vars(self).setdefault("readout_after_steps", None)
        vars(self).setdefault("refresh_every_steps", None)
        vars(self).setdefault("_refreshing", False)
        vars(self).setdefault("_trial_readouts", 0)
        # files written before in-trial changes: the default (the agent acts on them)
        vars(self).setdefault("in_trial_changes", True)
        vars(self).setdefault("n_in_trial_changes", 0)
        vars(self).setdefault("_pending_change", False)
        # files written before merged changes: every notice acted on at once, as then
        vars(self).setdefault("min_change_interval", 1)
        vars(self).setdefault("_merged_change", False)
        vars(self).setdefault("_merged_split", False)
        # files written before the detector (unannounced segment BAM had BOCD over trials)
        vars(self).setdefault("_detector", None)
        vars(self).setdefault("n_detected_changes", 0)
        vars(self).setdefault("_world_evidence", 0)
        vars(self).setdefault("_world_stats", None)  # files before the running sums: re-summed
        if (self._detector is not None) != isinstance(self.rule, WorldSegmentBAM):
            raise ValueError("_detector must be a PredictiveCusum exactly for WorldSegmentBAM")
        if self._detector is not None:
            rule = cast(WorldSegmentBAM, self.rule)
            if not isinstance(self._detector, PredictiveCusum) or (
                self._detector.threshold != rule.threshold
            ):
                raise ValueError("_detector must be a PredictiveCusum at the rule's threshold")
            if not vars(self._detector).get("calibrate", False):
                # saved before issue 52's second round: that agent read its worlds at the
                # fixed noise and never refreshed inside a part; this code would do both, so
                # the file would not continue as it was saved
                raise ValueError(
                    "this agent's change detector was saved before the noise calibration "
                    "(issue 52, second round) and cannot continue as it was saved; build the "
                    "agent anew (make_agent('mppi-bam-segments', env, announced=False))"
                )
        # files written before the peers: their options at the defaults, nothing fed
        vars(self).setdefault("window_steps", WINDOW_STEPS)
        vars(self).setdefault("concentration", CONCENTRATION)
        vars(self._trial).setdefault("fed", 0)
        self.window_steps = check_int("window_steps", self.window_steps, minimum=BLOCK_STEPS)
        self.concentration = check_finite_scalar("concentration", self.concentration)
        fed = check_int("fed", self._trial.fed, minimum=0)
        if fed > len(self._trial.actions):
            raise ValueError("the pending trial's fed count must be within its transitions")
        self.n_detected_changes = int(
            check_int("n_detected_changes", self.n_detected_changes, minimum=0)
        )
        self._world_evidence = int(check_int("_world_evidence", self._world_evidence, minimum=0))
        if self._world_evidence > len(self._trial.actions):
            raise ValueError("_world_evidence must count transitions of the pending trial")
        self.min_change_interval = check_int("min_change_interval", self.min_change_interval)
        for name in ("_pending_change", "_merged_change", "_merged_split"):
            if not isinstance(vars(self)[name], bool):
                raise ValueError(f"{name} must be a bool, got {vars(self)[name]!r}")
        if not isinstance(self.in_trial_changes, bool):
            raise ValueError(f"in_trial_changes must be a bool, got {self.in_trial_changes!r}")
        self.n_in_trial_changes = int(
            check_int("n_in_trial_changes", self.n_in_trial_changes, minimum=0)
        )
        self.refresh_every_steps = _check_refresh_steps(self.refresh_every_steps, self.memory)
        if not isinstance(self._refreshing, bool) or (
            self._refreshing and self.refresh_every_steps is None
        ):
            raise ValueError("_refreshing must be a bool, False without refresh_every_steps")
        self.readout_after_steps = _check_readout_steps(self.readout_after_steps, self.memory)
        due = self._readouts_due
        if not isinstance(due, list) or any(k not in (self.readout_after_steps or ()) for k in due):
            raise ValueError("_readouts_due must be a list of readout_after_steps entries")
        if not self._trial.actions:  # between trials (files of 11556ec kept the last count)
            self._trial_readouts = 0
        done = self._trial_readouts
        if not isinstance(done, int) or not 0 <= done <= len(self.readout_after_steps or ()):
            raise ValueError("_trial_readouts must count readout_after_steps entries")
        if done and len(self._trial.actions) < cast(tuple, self.readout_after_steps)[done - 1]:
            raise ValueError("_trial_readouts must count readouts the pending trial has made")
        if isinstance(self.rule, SegmentBAM) and sum(self.rule.segment_sizes) > self.n_trials:
            raise ValueError("the rule's closed segments must hold at most n_trials trials")
        self._check_world_stats()
        # the model plans with the rule's belief, or with what this trial made of it so far
        expected = self._planning_belief()
        if any(
            not np.array_equal(self.model.belief.fields[name], expected.fields[name])
            for name in expected.fields
        ):
            raise ValueError(
                "the model's belief must be the rule's (with the pending trial's in-trial "
                "readout or refresh)"
            )
        for name in ("in_trial_readouts", "segment_pick_fractions", "in_trial_pick_fractions"):
            if not isinstance(getattr(self, name), list):
                raise ValueError(f"{name} must be a list")
        for gravity in gravities:  # a trial's label: nan where its info had none
            if not isinstance(gravity, float) or not (
                math.isnan(gravity) or 0 < gravity < math.inf
            ):
                raise ValueError(f"trial_gravities must hold nan or numbers > 0, got {gravity!r}")

    def _check_world_stats(self) -> None:
        """A restored agent's running sums of the part (beyond the paper): ``None`` without
        a part in the planning belief, else the statistics of its transitions (equal to
        their sum from scratch up to round-off)."""
        stats = self._world_stats
        if stats is None:
            return
        if not self._world_evidence or not isinstance(stats, NaturalParams):
            raise ValueError("_world_stats must be None or the part's statistics")
        k = self._world_evidence
        states, actions = np.asarray(self._trial.states), np.asarray(self._trial.actions)
        full = self.model.stats(states[: k + 1], actions[:k])
        same_fields = set(stats.fields) == set(full.fields)
        pairs = [(stats.fields[name], full.fields[name]) for name in full.fields if same_fields]
        pairs.append((stats.log_h, full.log_h))
        if not same_fields or not all(
            np.shape(kept) == np.shape(summed) and np.allclose(kept, summed, rtol=1e-9, atol=1e-9)
            for kept, summed in pairs
        ):
            raise ValueError("_world_stats must be the statistics of the part's transitions")

    def save(self, path: Any) -> Any:
        """As :meth:`BaseAgent.save`; an unnamed callable ``reward`` is refused first
        (``ValueError`` saying how to register it), before any file is written."""
        _check_saveable(self.planner)
        return super().save(path)

    # ----------------------------------------------------------------- protocol
    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        """Starts a trial: ends a pending one, resets on an announced change, clears the
        plan."""
        state = _check_state("observation", observation, self.state_dim, self.model.angle_pairs)
        _info_gravity(info)
        if len(self._trial.actions):
            self._end_trial()
        changed = (
            bool((info or {}).get("context_changed", False))
            or self._pending_change
            or self._merged_change
        )
        self._pending_change = self._merged_change = self._merged_split = False
        self._start_part(changed)
        self._trial = _TrialRecorder()
        self._trial.states.append(state)
        self._last_info = dict(info or {})
        self.planner.reset()

    def _start_part(self, changed: bool) -> None:
        """Starts a trial, or after a change announced inside one the trial's new part: an
        announced change resets the rule to the base prior (the BAM rules keep their memory)
        and schedules the in-trial readouts."""
        if changed:
            self._calibrate_readout()
            self.rule.reset()
            self.model.set_belief(self.rule.belief)
            self._readouts_due = list(self.readout_after_steps or ())
        else:
            self._readouts_due = []
        self._trial_readouts = 0
        # a trial that reads out inside itself plans with its readouts instead
        self._refreshing = self.refresh_every_steps is not None and not self._readouts_due
        self._world_evidence = 0
        self._world_stats = None
        self._arm_detector()

    def _arm_detector(self) -> None:
        """Beyond the paper (unannounced segment BAM): the change detector restarts, weighing
        the belief the model plans with against the other worlds and a new one."""
        if self._detector is not None:
            rule = cast(WorldSegmentBAM, self.rule)
            alternatives = rule.alternatives(evidence=self._world_evidence > 0)
            self._detector.set_candidates(self.model.belief, alternatives)
            self._calibrate_readout()

    def _calibrate_readout(self) -> None:
        """Beyond the paper (unannounced segment BAM): the readout's noise level is the
        detector's newest estimate, read before every naming and merging (issue 52, third
        round: it was read only when the detector was armed, so stale in between)."""
        if self._detector is not None:
            cast(WorldSegmentBAM, self.rule).noise_scale = self._detector.noise_scale()

    def _refresh_world(self) -> None:
        """Beyond the paper (unannounced segment BAM): every
        :data:`~bam_rl.beliefs.worlds.REFRESH_STEPS` transitions of a part without a change,
        they join the belief the model plans with (the named world's posterior plus the
        part's transitions) and the detector weighs that belief from the next step on."""
        if len(self._trial.actions) - self._world_evidence < REFRESH_STEPS:
            return
        detector = cast(PredictiveCusum, self._detector)
        done, fresh = self._world_evidence, self._world_evidence == 0
        k = len(self._trial.actions)
        # running sums (issue 52, third round): only the transitions since the last refresh
        # are summed, so a part's refreshes cost linear, not quadratic, time in its length
        states, actions = self._trial.states, self._trial.actions
        new = self.model.stats(np.asarray(states[done : k + 1]), np.asarray(actions[done:k]))
        self._world_stats = new if fresh else self._part_stats() + new
        self._world_evidence = k
        self.model.set_belief(self.rule.belief + self._world_stats)  # = _planning_belief()
        self._resolve_terminal_value()
        if fresh and -1 not in detector.sums:  # a new world is now an alternative too
            self._arm_detector()
        else:
            detector.refresh(self.model.belief)

    def _detect(self) -> bool:
        """Beyond the paper: the newest transition through the change detector; on a signal
        the part splits where the change began (the earlier transitions end as a datum of the
        old world), the readout names the world of the later ones and the rest of the part
        plans with that world's posterior plus them. Whether a change was found."""
        assert self._detector is not None
        states, actions = self._trial.states, self._trial.actions
        model = self.model
        x = model.features(model.inputs(states[-2][None, :], actions[-1][None, :]), check=False)
        y = np.asarray(states[-1], dtype=np.float64) - np.asarray(states[-2], dtype=np.float64)
        signal = self._detector.step(np.asarray(x[0], dtype=np.float64), y)
        if signal is None:
            return False
        cut = len(actions) - min(signal[1], len(actions))
        after = _TrialRecorder()
        after.states, after.actions = states[cut:], actions[cut:]
        if cut:
            before = _TrialRecorder()
            before.states, before.actions = states[: cut + 1], actions[:cut]
            self._trial = before
            self._end_trial()
        self._trial = after
        evidence = model.stats(np.asarray(after.states), np.asarray(after.actions))
        rule = cast(WorldSegmentBAM, self.rule)
        self._calibrate_readout()
        inputs = model.inputs(np.asarray(after.states[:-1]), np.asarray(after.actions))
        deltas = np.diff(np.asarray(after.states, dtype=np.float64), axis=0)
        rule.change(evidence, (model.features(inputs, check=False), deltas))
        self._world_stats = evidence
        model.set_belief(rule.belief + evidence)
        self._resolve_terminal_value()
        self.n_detected_changes += 1
        self._readouts_due = []
        self._trial_readouts = 0
        self._world_evidence = len(after.actions)
        self._arm_detector()
        return True

    def _changed_in_trial(self, info: Any) -> bool:
        """Whether ``info`` announces a change inside the trial: ``context_changed`` is True
        and was not already in the last ``info``, or was but the world it reports
        (``info["context"]``, else ``info["gravity"]``) differs. So a world that reports
        ``context_changed`` on every step of a changed trial (the paper's announced cart-pole)
        announces one change, at ``reset``, and a wrapper's flag on one step is one change."""
        if not bool((info or {}).get("context_changed", False)):
            return False
        last = self._last_info
        if not bool(last.get("context_changed", False)):
            return True
        for key in ("context", "gravity"):
            if key in info and key in last:
                return bool(info[key] != last[key])
        return True

    def act(self, observation: Any) -> Any:
        """The first action of the MPPI plan from ``observation``: float32 of the action's
        shape for a ``Box``, an int of the space for a ``Discrete`` one."""
        state = _check_state("observation", observation, self.state_dim, self.model.angle_pairs)
        action = self.planner.plan(state, self.rng, dynamics=self.model)
        if isinstance(action, int):
            return action
        return action.astype(np.float32)

    def _check_action(self, action: Any) -> np.ndarray:
        return _checked_action(action, self.planner)

    def _check_next_observation(self, observation: Any) -> np.ndarray:
        return _check_state("next_observation", observation, self.state_dim, self.model.angle_pairs)

    def _observe(self, step: Transition) -> None:
        """Records the transition; at the end of a trial, updates the belief."""
        action, state, info = step.action, step.next_observation, step.info
        terminated, truncated = step.terminated, step.truncated
        _info_gravity(info)
        if not self._trial.states:
            raise ValueError("observe() called before reset()")
        if self._changed_in_trial(info):
            if not self._trial.actions and self._merged_split:
                # the part a merged change just started: this notice is within
                # ``min_change_interval`` of the change acted on, so it merges too
                self._merged_change = True
            elif not self._trial.actions:
                # on the trial's first transition (a bridge that flags the first transition
                # in a new world, never the reset: NS-Gym's) the whole trial is the new
                # world's, so the notice is acted on at once whatever ``in_trial_changes``
                self._merged_change = False
                self._split_trial()
            elif not self.in_trial_changes:  # the notice waits for the next trial's reset
                self._pending_change = True
            elif len(self._trial.actions) < self.min_change_interval:
                self._merged_change = True  # acted on once the part is long enough
            else:
                self._merged_change = False
                self._split_trial()
        self._trial.actions.append(action)
        self._trial.states.append(state)
        self._last_info = dict(info or {})
        self._merged_split = False
        if (
            self._detector is not None
            and not self._detect()
            and not (terminated or truncated)
            and not self._readouts_due
        ):
            self._refresh_world()
        if (
            self._merged_change
            and len(self._trial.actions) >= self.min_change_interval
            and not (terminated or truncated)
        ):
            # the merged notices' change: the part so far (its transitions mixed) is a trial,
            # and the new world's part starts after this step
            self._merged_change = False
            self._split_trial()
            self._merged_split = True
            return
        if self._readouts_due and len(self._trial.actions) == self._readouts_due[0]:
            self._readouts_due.pop(0)
            if not (terminated or truncated):
                self._read_out_in_trial()
        elif (
            self._refreshing
            and not (terminated or truncated)
            and len(self._trial.actions) % cast(int, self.refresh_every_steps) == 0
        ):
            # the trial's transitions so far join the belief it plans with (the same sum the
            # trial's datum adds at its end)
            self.model.set_belief(self._planning_belief())
        if (
            self.memory in PEER_MEMORIES
            and not (terminated or truncated)
            and len(self._trial.actions) - self._trial.fed >= BLOCK_STEPS
        ):
            self._feed_block()
        if terminated or truncated:
            self._end_trial()
            self._trial = _TrialRecorder()
            self._trial.states.append(state)
            self._trial_readouts = 0  # the next trial's, until reset starts it
            self._world_evidence = 0  # the ended part's evidence is in the rule's belief now
            self._world_stats = None

    def _split_trial(self) -> None:
        """A change announced by the step being observed (whose transition is the new
        world's, as the wrapper applies a step's value before the step): the trial so far is
        ended as a trial (one datum, labelled with the last ``info``'s gravity) and the rest
        starts as an announced change's first trial does at :meth:`reset`, from the state
        before the step (the plan is kept: it is the best guess there is)."""
        self.n_in_trial_changes += 1
        start = self._trial.states[-1]
        if self._trial.actions:
            self._end_trial()
        self._trial = _TrialRecorder()
        self._trial.states.append(start)
        self._start_part(True)

    def _feed_block(self) -> None:
        """Beyond the paper (the peers, :mod:`bam_rl.beliefs.peers`): the trial's transitions
        since the last block become one datum of the rule, and the model plans with the
        rule's belief from the next step on."""
        fed = self._trial.fed
        states = np.asarray(self._trial.states[fed:])
        self.rule.update(self.model.stats(states, np.asarray(self._trial.actions[fed:])))
        self.model.set_belief(self.rule.belief)
        self._trial.fed = len(self._trial.actions)

    def _read_out_in_trial(self) -> None:
        """The in-trial readout: the segments read out with this trial's transitions so far,
        the rest of the trial planned with the resulting belief."""
        rule = cast(SegmentBAM, self.rule)  # readout_after_steps needs bam-segments (checked)
        s = self.model.stats(np.asarray(self._trial.states), np.asarray(self._trial.actions))
        readout, belief = rule.preview(s)
        self.model.set_belief(belief)
        self._resolve_terminal_value()
        self._trial_readouts += 1
        if readout is not None:
            self.in_trial_readouts.append(readout)
            self.in_trial_pick_fractions.append(self._same_gravity(readout))

    def _part_stats(self) -> NaturalParams:
        """The statistics of the part's first ``_world_evidence`` transitions (after a
        detected change or a refresh): the running sums, summed from the part when a file
        saved before them has none."""
        if self._world_stats is None:
            k = self._world_evidence
            states, actions = self._trial.states[: k + 1], self._trial.actions[:k]
            self._world_stats = self.model.stats(np.asarray(states), np.asarray(actions))
        return self._world_stats

    def _planning_belief(self) -> NaturalParams:
        """The belief the model plans with at this point of the pending trial: after its last
        in-trial readout, that readout's; after a refresh, the rule's plus the trial up to it;
        otherwise the rule's (recomputed, as the agent made it, to check a restored agent)."""
        states, actions = np.asarray(self._trial.states), np.asarray(self._trial.actions)
        if self._world_evidence:  # after a detected change: the world's plus its evidence
            return self.rule.belief + self._part_stats()
        if self._trial_readouts:
            k = cast(tuple, self.readout_after_steps)[self._trial_readouts - 1]
            s = self.model.stats(states[: k + 1], actions[:k])
            return cast(SegmentBAM, self.rule).preview(s)[1]
        every = self.refresh_every_steps
        if self._refreshing and every is not None and len(actions) >= every:
            m = len(actions) // every * every
            return self.rule.belief + self.model.stats(states[: m + 1], actions[:m])
        return self.rule.belief

    def _end_trial(self) -> None:
        """The finished trial's datum goes through the memory rule into the model.

        All or nothing: everything that can refuse (the statistics, the gravity label, the
        rule's update, which leaves the rule as it was when it refuses) runs before anything
        is stored. A refused trial is dropped, with a ``ValueError``, so the agent goes on
        with its next trial instead of refusing every later :meth:`reset`.
        """
        trial, self._trial = self._trial, _TrialRecorder()
        selections = self.n_selections
        try:
            fed = getattr(trial, "fed", 0)  # the peers' blocks already fed (else 0)
            s = (
                self.model.stats(np.asarray(trial.states[fed:]), np.asarray(trial.actions[fed:]))
                if fed < len(trial.actions)
                else None  # a peer's trial whose every block was fed
            )
            gravity = _trial_label(self._last_info)
            steps = self.readout_after_steps
            if isinstance(self.rule, SegmentBAM) and not self.announced and steps:
                # a change BOCD detects at this trial is read out with its first steps only
                k = min(steps[0], len(trial.actions))
                first = self.model.stats(
                    np.asarray(trial.states[: k + 1]), np.asarray(trial.actions[:k])
                )
                self.rule.update_with_evidence(cast(NaturalParams, s), first)
            elif s is not None:
                self.rule.update(s)
        except ValueError as error:
            raise ValueError(
                f"the trial's data were refused and the trial dropped: {error}"
            ) from error
        self.model.set_belief(self.rule.belief)
        self._resolve_terminal_value()
        self.trial_gravities.append(math.nan if gravity is None else gravity)
        self.n_trials += 1
        if isinstance(self.rule, SegmentBAM) and self.n_selections > selections:
            assert self.last_readout is not None
            self.segment_pick_fractions.append(self._same_gravity(self.last_readout))

    def _resolve_terminal_value(self) -> None:
        """Beyond the paper (issue 53): a planning reward that declares a terminal value
        (``…-lqr-terminal``) re-solves its cost-to-go ``P`` from the posterior-mean model after
        each readout, linearised at the reward's equilibrium; a model whose linearisation has
        no finite cost-to-go keeps the previous ``P``. Nothing for any other reward."""
        reward: Any = self.planner.reward
        if getattr(reward, "terminal", None) is not None:  # a NamedReward with a terminal value
            reward.solve_cost_to_go(self.model.predict)

    # ------------------------------------------------------------------ readout
    @property
    def last_readout(self) -> ReadoutResult | None:
        """The latest readout selection (BAM rules), else ``None``."""
        return getattr(self.rule, "last_readout", None)

    @property
    def readout_labels(self) -> np.ndarray:
        """Gravity of every remembered trial, aligned with ``last_readout.weights`` (for
        ``"bam_segments"``, the gravity of each segment's first trial)."""
        size = 0 if self.last_readout is None else len(self.last_readout.weights)
        if isinstance(self.rule, SegmentBAM):
            firsts = np.cumsum([0, *self.rule.segment_sizes])[:size]
            return np.asarray(self.trial_gravities, dtype=np.float64)[firsts]
        return np.asarray(self.trial_gravities[:size], dtype=np.float64)

    @property
    def n_selections(self) -> int:
        """Readout selections made so far (0 for the rules without memory)."""
        return int(getattr(self.rule, "n_selections", 0))

    def summary(self) -> dict[str, float]:
        readout = self.last_readout
        size = 0.0 if readout is None else float(np.count_nonzero(readout.weights))
        entries = {
            "n_trials": float(self.n_trials),
            "n_selections": float(self.n_selections),
            "readout_size": size,
        }
        if isinstance(self.rule, SegmentBAM):  # beyond the paper: which segments were picked
            entries.update(self._segment_picks())
        if isinstance(self.rule, WorldSegmentBAM):  # beyond the paper: the world it names
            entries["world"] = float(self.rule.world)
            entries["n_worlds"] = float(max(self.rule.n_worlds, self.rule.world + 1))
            entries["detected_changes"] = float(self.n_detected_changes)
        if isinstance(self.rule, CRPMixture):  # beyond the paper: the peer's component
            entries["world"] = float(self.rule.world) if self.rule.world >= 0 else math.nan
            entries["n_components"] = float(self.rule.n_components)
        return entries

    def _segment_picks(self) -> dict[str, float]:
        """Of the segments the latest readout (end of a trial) and the latest in-trial
        readout picked, the fraction of the gravity of the trial that read out (``nan``
        before any, or when none was picked)."""
        last = self.segment_pick_fractions[-1] if self.segment_pick_fractions else math.nan
        in_trial = self.in_trial_pick_fractions[-1] if self.in_trial_pick_fractions else math.nan
        return {
            "readout_same_gravity": last,
            "in_trial_readout_same_gravity": in_trial,
            "in_trial_readouts": float(len(self.in_trial_readouts)),
        }

    def _same_gravity(self, readout: ReadoutResult) -> float:
        """The fraction of the segments ``readout`` picked whose gravity (that of their first
        trial) is the current trial's; the segments are the closed ones, then the open one
        (which an in-trial readout treats as closed)."""
        rule = cast(SegmentBAM, self.rule)
        gravities = np.asarray(self.trial_gravities, dtype=np.float64)
        firsts = np.cumsum([0, *rule.segment_sizes])
        firsts = firsts[firsts < gravities.size][: len(readout.weights)]
        picked = gravities[firsts][readout.weights[: firsts.size] > 0]
        current = _trial_label(self._last_info)
        current = math.nan if current is None else current
        return float(np.mean(picked == current)) if picked.size else math.nan

    def __repr__(self) -> str:
        return (
            f"MPPIAgent(memory={self.memory!r}, announced={self.announced}, "
            f"seed={self.seed!r}, model={self.model!r}, planner={self.planner!r})"
        )


class GroundTruthMPPI(BaseAgent):
    """MPPI that plans with the true simulator at the current gravity (the paper's GT MPC).

    The gravity is read from ``info["gravity"]``, which the ``bam_rl/GravityCartPole*``
    environments put in the ``info`` of every reset and step: :meth:`reset` requires it (a
    ``ValueError`` names it when absent, since a planner at an unknown gravity is not the
    ground truth), and :meth:`observe` follows it when present (the environments change
    gravity only between trials, so a step without it keeps the trial's). Planning rollouts
    are batched through ``mujoco.rollout``; the planner is the same :class:`MPPI` as
    :class:`MPPIAgent`'s.

    Any other environment is planned with its own equations: a classic-control one's
    (:mod:`bam_rl.agents.classic_models`), a copy of a MuJoCo one
    (:class:`~bam_rl.agents.simulator.MujocoEnvDynamics`), or, for an environment it cannot
    copy (a user's own), the equations the user gives as ``dynamics``
    (:class:`~bam_rl.agents.simulator.StepFunctionDynamics`), planned from the current
    observation.

    It plans with the unwrapped environment's equations on its raw observations and actions,
    so it refuses (``ValueError`` naming them) wrappers that transform either
    (``RescaleAction``, ``FlattenObservation``, ``NormalizeObservation``, a
    ``NonStationary`` with ``observe_context=True``…); the harmless ones are
    :data:`~bam_rl.agents.simulator.HARMLESS_WRAPPERS` (``TimeLimit``, ``OrderEnforcing``,
    ``PassiveEnvChecker``, ``RecordEpisodeStatistics``, ``NonStationary``, rendering and
    reward wrappers…). It plans in the current world of every parameter a ``NonStationary``
    wrapper changes: on the cart-pole, a change beyond gravity (``mass_scale``,
    ``gear_scale``…) makes it plan with a copy of the live model (as any MuJoCo environment;
    such a planner cannot be saved, and the ``bang_bang`` cart-pole is refused); a
    classic-control model refuses a parameter its equations do not read. With
    ``dynamics=f`` none of this is checked: ``f`` is the wrapped environment's equations.

    Args:
        env: The environment (possibly wrapped): the cart-pole (``bam_rl/GravityCartPole*-v0``),
            ``CartPole-v1``, ``Pendulum-v1``, ``MountainCarContinuous-v0``, any Gymnasium MuJoCo
            environment, or with ``dynamics`` any environment with a 1-D ``Box`` observation and
            a 1-D ``Box`` or ``Discrete(n)`` action.
        seed: Seed of :attr:`rng` (the planner's action noise).
        reward: The planning reward: a name in :data:`bam_rl.agents.rewards.REWARDS` reading
            the observation, or a callable ``reward(states (K, H, dx), actions (K, H, du)) ->
            (K, H)`` (what a user's environment needs); ``None`` (default): the ground-truth
            reward of ``env``'s row of :data:`bam_rl.agents.settings.ENV_SETTINGS`
            (``docs/env_settings.md``), else ``"cartpole-swingup"``, ``cos θ``, on a 5-D
            observation and refused on another.
        follow_changes: Read the live environment's world before every plan (True) or only
            here (False); with ``dynamics`` it is the callable's to read the world.
        dynamics: ``f(observations (K, dx), actions (K, du)) -> next observations (K, dx)``, the
            environment's equations over ``K`` observations at once (``Discrete`` actions
            arrive one-hot); called once here on a few copies of a dummy observation (``ValueError``
            unless it returns finite ``(K, dx)``), and ``H`` times a plan. It replaces the
            built-in model of any environment. ``None`` (default): the built-in one.
        **planner_options: ``horizon``, ``n_samples``, ``sampling_var``, ``temperature``;
            those not given are the row's (an environment without a row: the defaults, with a
            warning naming them).
    """

    def __init__(
        self,
        env: gym.Env,
        seed: int | None = None,
        *,
        reward: Any = None,
        follow_changes: bool = True,
        dynamics: Any = None,
        **planner_options: Any,
    ):
        super().__init__(seed)
        # the environment's row of bam_rl.agents.settings where not given (docs/env_settings.md)
        reward, planner_options = ground_truth_options(env, reward, planner_options)
        base = getattr(env, "unwrapped", env)
        if not isinstance(follow_changes, (bool, np.bool_)):
            raise ValueError(f"follow_changes must be a bool, got {follow_changes!r}")
        cartpole = hasattr(base, "set_gravity") and hasattr(base, "fullpath")
        changed: list[str] = []
        if dynamics is None:
            from .simulator import HARMLESS_WRAPPERS, planning_layers

            refused, changed = planning_layers(env)
            if refused:
                raise ValueError(
                    f"env is wrapped in {', '.join(refused)}, which transforms its observations "
                    f"or actions: GroundTruthMPPI plans with {type(base).__name__}'s own "
                    "equations on its raw observations and actions, so its plans would be "
                    "wrong. Unwrap it, or pass dynamics=f, the wrapped environment's equations "
                    "(f(observations (K, dx), actions (K, du)) -> next observations (K, dx)), "
                    "to plan with them anyway. Accepted wrappers: "
                    f"{', '.join(name.rsplit('.', 1)[1] for name in HARMLESS_WRAPPERS)}"
                )
            beyond = sorted({name for name in changed if name != "gravity"})
            if cartpole and follow_changes and beyond:
                if getattr(base, "actuation", "continuous") != "continuous":
                    raise ValueError(
                        f"the NonStationary wrapper changes {beyond} on the bang_bang "
                        "cart-pole: GroundTruthMPPI's cart-pole simulator follows gravity "
                        "only, and a copy of the live model plans continuous forces; use "
                        "actuation='continuous', change gravity only, or pass dynamics=f"
                    )
                cartpole = False  # plan with a copy of the live model: every parameter
        if dynamics is not None or not cartpole:
            # any other environment: its own equations or a copy of its MuJoCo model
            self._init_live(env, reward, bool(follow_changes), planner_options, dynamics, changed)
            return
        path = getattr(base, "fullpath", None)
        frame_skip = getattr(base, "frame_skip", None)
        if path is None or frame_skip is None:
            raise ValueError(f"env must be a MuJoCo cart-pole environment, got {env!r}")
        gravity = float(getattr(base, "gravity", 9.81))
        self.dynamics = SimulatorDynamics(str(path), int(frame_skip), gravity)
        space = env.action_space
        if not isinstance(space, gym.spaces.Box) or space.shape != (1,):
            raise ValueError(f"env must have a (1,)-shaped Box action space, got {space!r}")
        observations = env.observation_space
        if not isinstance(observations, gym.spaces.Box) or observations.shape != (
            CARTPOLE_STATE_DIM,
        ):
            raise ValueError(
                f"env must have the cart-pole's ({CARTPOLE_STATE_DIM},)-shaped Box observation "
                f"space, got {observations!r}"
            )
        planning_reward, _ = make_planning_reward(
            "cartpole-swingup" if reward is None else reward, observations, space
        )
        self.planner = MPPI(
            None,
            planning_reward,
            action_dim=1,
            action_low=space.low,
            action_high=space.high,
            **mppi_options(planner_options, 1),
        )
        self.planner.check_planning_memory(self.dynamics)

    def _init_live(
        self,
        env: gym.Env,
        reward: Any,
        follow_changes: bool,
        planner_options: dict[str, Any],
        step: Any = None,
        changed: Any = (),
    ) -> None:
        """The ground truth of an environment other than the cart-pole: the user's equations
        ``step`` (:class:`~bam_rl.agents.simulator.StepFunctionDynamics`), else a
        classic-control one's vectorised equations (:mod:`bam_rl.agents.classic_models`) or a
        copy of a MuJoCo environment (:class:`~bam_rl.agents.simulator.MujocoEnvDynamics`),
        read from the live environment before every plan (``follow_changes=True``) or only
        here. A classic-control model refuses the ``NonStationary`` parameters ``changed`` its
        equations do not read (when it follows changes)."""
        self._state_dim = _observation_dim(env.observation_space, "env's observation_space")
        action_dim, n_actions, box = _action_space(env.action_space)
        dynamics: ClassicDynamics | MujocoEnvDynamics | StepFunctionDynamics | None
        if step is not None:
            observations = cast(gym.spaces.Box, env.observation_space)
            example = np.clip(0.0, observations.low, observations.high).astype(np.float64)
            action = np.clip(0.0, box.low, box.high).astype(np.float64)
            if n_actions is not None:  # one-hot, as the planner's samples
                action = np.eye(n_actions)[0]
            dynamics = StepFunctionDynamics(step, self._state_dim, action_dim, example, action)
        else:
            dynamics = classic_model_for(env)
            if dynamics is None:
                dynamics = MujocoEnvDynamics(env, follow_changes)  # refuses what it cannot copy
            elif follow_changes:
                unfollowed = [name for name in changed if not dynamics.follows(name)]
                if unfollowed:
                    raise ValueError(
                        f"the NonStationary wrapper changes {unfollowed}, which "
                        f"GroundTruthMPPI's {type(dynamics).__name__} cannot follow (its "
                        f"equations read {', '.join(dynamics.PARAMETERS)}); change those, "
                        "pass dynamics=f with equations that read the others, or "
                        "follow_changes=False for a planner blind to every change"
                    )
        self._live_env = env
        self._follow_changes = follow_changes
        self.dynamics = dynamics  # type: ignore[assignment]
        if dynamics.state_dim != self._state_dim:
            raise ValueError(
                f"env's observation has {self._state_dim} entries, its model gives "
                f"{dynamics.state_dim}"
            )
        planning_reward, _ = make_planning_reward(
            _default_reward(reward, self._state_dim), env.observation_space, box
        )
        if n_actions is None:
            self.planner = MPPI(
                None,
                planning_reward,
                action_dim=action_dim,
                action_low=box.low,
                action_high=box.high,
                **mppi_options(planner_options, action_dim),
            )
        else:
            self.planner = CategoricalMPPI(  # type: ignore[assignment]
                n_actions,
                planning_reward,
                start=int(cast(gym.spaces.Discrete, env.action_space).start),
                **discrete_mppi_options(planner_options),
            )
        self.planner.check_planning_memory(dynamics)

    @property
    def _live(self) -> bool:
        """Whether this planner reads a live environment (anything but the cart-pole)."""
        return "_live_env" in vars(self)

    def _check_restored(self) -> None:
        """A restored planner must plan the simulator's one action within the memory budget
        (the simulator and planner check their own fields when restored)."""
        super()._check_restored()
        if self.planner.action_dim != 1 or self.planner.dynamics is not None:
            raise ValueError("the planner must plan one action (and hold no dynamics)")
        _check_restored_reward(self.planner, CARTPOLE_STATE_DIM)
        self.planner.check_planning_memory(self.dynamics)

    def save(self, path: Any) -> Any:
        """As :meth:`BaseAgent.save`; an unnamed callable ``reward`` is refused first
        (``ValueError`` saying how to register it), before any file is written."""
        if self._live:
            raise ValueError(
                "a GroundTruthMPPI of an environment other than the bam_rl cart-pole (or with "
                "dynamics=f, or of the cart-pole whose NonStationary wrapper changes more "
                "than gravity) reads the live environment or a callable and cannot be saved "
                "(build it again on the environment)"
            )
        _check_saveable(self.planner)
        return super().save(path)

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        """Starts a trial at ``info["gravity"]`` (required; the cart-pole) with a cleared
        plan; on another environment, at its current world."""
        if self._live:
            _check_state("observation", observation, self._state_dim)
            self.planner.reset()
            return
        _check_state("observation", observation, CARTPOLE_STATE_DIM, _CARTPOLE_ANGLE)
        gravity = _info_gravity(info)
        if gravity is None:
            raise ValueError(
                'info["gravity"] is required at reset: GroundTruthMPPI plans at the gravity '
                "the bam_rl cart-pole environments report there"
            )
        self.dynamics.set_gravity(gravity)
        self.planner.reset()

    def act(self, observation: Any) -> Any:
        """The planner's action: float32 of the action's shape, or an int of a ``Discrete``
        space."""
        if self._live:
            state = _check_state("observation", observation, self._state_dim)
            dynamics: Any = self.dynamics
            if isinstance(dynamics, MujocoEnvDynamics):
                dynamics.check_observation(state)
            elif isinstance(dynamics, ClassicDynamics) and self._follow_changes:
                dynamics.read_parameters(self._live_env)
            action = self.planner.plan(state, self.rng, dynamics=dynamics)
            return action if isinstance(action, int) else action.astype(np.float32)
        _check_state("observation", observation, CARTPOLE_STATE_DIM, _CARTPOLE_ANGLE)
        action = self.planner.plan(observation, self.rng, dynamics=self.dynamics)
        return action.astype(np.float32)

    def _check_action(self, action: Any) -> np.ndarray:
        return _checked_action(action, self.planner)

    def _check_next_observation(self, observation: Any) -> np.ndarray:
        if self._live:
            return _check_state("next_observation", observation, self._state_dim)
        return _check_state("next_observation", observation, CARTPOLE_STATE_DIM, _CARTPOLE_ANGLE)

    def _observe(self, step: Transition) -> None:
        """Follows the gravity ``info`` announces (the simulator plans with it); another
        environment's world is read before every plan instead."""
        if self._live:
            return
        gravity = _info_gravity(step.info)
        if gravity is not None:
            self.dynamics.set_gravity(gravity)

    def __repr__(self) -> str:
        if self._live:
            return f"GroundTruthMPPI(dynamics={self.dynamics!r}, planner={self.planner!r})"
        return f"GroundTruthMPPI(gravity={self.dynamics.gravity:g}, planner={self.planner!r})"
