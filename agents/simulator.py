"""The cart-pole simulator as a dynamics callable (:class:`SimulatorDynamics`), batched with
``mujoco.rollout``: the ground truth GT MPC plans with, beside the learned
:class:`~bam_rl.agents.dynamics.RFFDynamicsModel`.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from bam_rl.checks import check_int, check_memory, check_positive

from .classic_models import CLASSIC_ENV_IDS
from .dynamics import check_rollout_inputs

__all__ = [
    "HARMLESS_WRAPPERS",
    "MujocoEnvDynamics",
    "SimulatorDynamics",
    "StepFunctionDynamics",
    "planning_layers",
    "portable_model_path",
    "resolve_model_path",
]

#: Largest MJCF file a restored :class:`SimulatorDynamics` may name (the cart-pole's is ~2 kB).
MAX_MODEL_BYTES = 2**20
#: How a model shipped with the package is named in a state file: ``"bam_rl.envs:<path>"``, a
#: package and a path inside it, resolved where the package is installed when the file loads.
PACKAGED_ASSETS = "bam_rl.envs"
_SIMULATORS: dict[tuple[str, int], tuple[Any, list[Any]]] = {}
_THREAD_STACK_BYTES = 8 * 2**20  # the usual default stack of a thread (ulimit -s)


def _packaged_dir() -> str:
    """The installed ``bam_rl/envs`` folder (in a checkout, its symlink to ``envs/``): found
    beside this package rather than by importing it, since agents do not import environments."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "envs")


def portable_model_path(model_path: str) -> str:
    """The name a state file stores for ``model_path``: ``"bam_rl.envs:assets/<file>"`` for a
    model shipped with the package (so the file loads after the project moves or on another
    machine), the path itself for a user's own MJCF file.
    """
    if model_path.startswith(f"{PACKAGED_ASSETS}:"):
        return model_path
    packaged = os.path.realpath(_packaged_dir())
    real = os.path.realpath(model_path)
    if os.path.isfile(real) and os.path.commonpath([real, packaged]) == packaged:
        return f"{PACKAGED_ASSETS}:{os.path.relpath(real, packaged).replace(os.sep, '/')}"
    return model_path


def resolve_model_path(model_path: str) -> str:
    """The file a stored model name means, for reading.

    ``"bam_rl.envs:<path>"`` resolves inside the installed package. An absolute path written
    by an older version, which no longer exists but ends in ``bam_rl/envs/<path>`` of a model
    the package ships (``<old folder>/bam_rl/envs/assets/gravity_cartpole.xml``), resolves to that
    packaged model. Anything else is returned as given.

    Raises:
        ValueError: If a ``"bam_rl.envs:"`` name leaves the package or names no shipped file.
    """
    packaged = _packaged_dir()
    if model_path.startswith(f"{PACKAGED_ASSETS}:"):
        relative = model_path[len(PACKAGED_ASSETS) + 1 :]
        parts = relative.split("/")
        if not relative or os.path.isabs(relative) or any(p in ("", ".", "..") for p in parts):
            raise ValueError(
                f"model_path {model_path!r} must name a file inside {PACKAGED_ASSETS}, like "
                f"'{PACKAGED_ASSETS}:assets/gravity_cartpole.xml'"
            )
        path = os.path.join(packaged, *parts)
        if not os.path.isfile(path):
            raise ValueError(f"model_path {model_path!r} names no model shipped with bam_rl")
        return path
    marker = "/bam_rl/envs/"
    if not os.path.exists(model_path) and marker in model_path.replace(os.sep, "/"):
        relative = model_path.replace(os.sep, "/").rsplit(marker, 1)[1]
        if relative and ".." not in relative.split("/"):
            candidate = os.path.join(packaged, *relative.split("/"))
            if os.path.isfile(candidate):
                return candidate
    return model_path


def _simulator(model_path: str, n_threads: int) -> tuple[Any, list[Any]]:
    """One MjModel and ``n_threads`` MjData per asset, built once per process.

    When the model can have no constraint at all (contacts disabled, no joint limits, no
    friction loss, no equality constraints or tendons), the constraint pipeline, its warm
    start, the collision midphase and sensors are switched off in this private copy: they
    would compute nothing, and the rollouts are bit-identical, about 10 % faster.
    """
    import mujoco  # deferred: importing the agents (or this module) does not load MuJoCo

    key = (model_path, n_threads)
    if key not in _SIMULATORS:
        model = mujoco.MjModel.from_xml_path(resolve_model_path(model_path))
        # every thread gets an MjData (its arena and buffer) and a thread stack
        check_memory(
            f"n_threads = {n_threads}",
            n_threads * (model.narena + 2 * model.nbuffer + _THREAD_STACK_BYTES),
        )
        bits = mujoco.mjtDisableBit
        unconstrained = (
            model.opt.disableflags & bits.mjDSBL_CONTACT
            and not model.jnt_limited.any()
            and not model.dof_frictionloss.any()
            and model.neq == 0
            and model.ntendon == 0
        )
        if unconstrained:
            for bit in (
                bits.mjDSBL_CONSTRAINT,
                bits.mjDSBL_WARMSTART,
                bits.mjDSBL_MIDPHASE,
                bits.mjDSBL_SENSOR,
            ):
                model.opt.disableflags |= bit
        _SIMULATORS[key] = (model, [mujoco.MjData(model) for _ in range(n_threads)])
    return _SIMULATORS[key]


#: The MjModel fields whose change makes :meth:`MujocoEnvDynamics.terminal_cost` solve again.
_WORLD_FIELDS = (
    "body_mass",
    "body_inertia",
    "body_pos",
    "body_quat",
    "body_ipos",
    "body_iquat",
    "geom_size",
    "geom_friction",
    "dof_damping",
    "dof_armature",
    "dof_frictionloss",
    "jnt_stiffness",
    "actuator_gear",
    "actuator_gainprm",
    "actuator_biasprm",
    "actuator_ctrlrange",
)
_NONSTATIONARY = "bam_rl.wrappers.nonstationary.NonStationary"
#: Wrappers a ground-truth planner may look through (``module.Class``, a subclass counts): they
#: change neither the observation, nor the action, nor the dynamics (episode bookkeeping, checks,
#: rendering, and the NonStationary wrapper, whose world the planner follows). Reward wrappers
#: (``gymnasium.RewardWrapper``) count too: the planner plans with its own planning reward.
HARMLESS_WRAPPERS: tuple[str, ...] = (
    "gymnasium.wrappers.common.TimeLimit",
    "gymnasium.wrappers.common.OrderEnforcing",
    "gymnasium.wrappers.common.PassiveEnvChecker",
    "gymnasium.wrappers.common.RecordEpisodeStatistics",
    "gymnasium.wrappers.common.Autoreset",
    "gymnasium.wrappers.rendering.RecordVideo",
    "gymnasium.wrappers.rendering.HumanRendering",
    "gymnasium.wrappers.rendering.RenderCollection",
    "gymnasium.core.RewardWrapper",
    "stable_baselines3.common.monitor.Monitor",
    _NONSTATIONARY,
)
#: Wrappers that give back the wrapped environment's own observation and action: the planner
#: looks no further inside (NS-Gym's bridge undoes NS-Gym's dict observation).
_TRANSPARENT = ("bam_rl.interop.nsgym.NSGymBridge",)


def _class_names(layer: Any) -> set[str]:
    return {f"{klass.__module__}.{klass.__qualname__}" for klass in type(layer).__mro__}


def planning_layers(env: Any) -> tuple[list[str], list[str]]:
    """What stands between ``env`` and its unwrapped environment, for a ground-truth planner
    that plans with the unwrapped environment's own equations on its raw observations and
    actions: the wrappers that transform them (not in :data:`HARMLESS_WRAPPERS`; a
    ``NonStationary`` with ``observe_context=True`` is one, it appends the context), by class
    name, outermost first; and the parameters the ``NonStationary`` layers change."""
    import gymnasium as gym

    refused: list[str] = []
    changed: list[str] = []
    layer = env
    while isinstance(layer, gym.Wrapper):
        names = _class_names(layer)
        if names & set(_TRANSPARENT):
            break
        if _NONSTATIONARY in names:
            changed.extend(str(name) for name in getattr(layer, "changes", {}))
            if getattr(layer, "observe_context", False):
                refused.append("NonStationary(observe_context=True)")
        elif not names & set(HARMLESS_WRAPPERS):
            refused.append(type(layer).__name__)
        layer = layer.env
    return refused, changed


class SimulatorDynamics:
    """The cart-pole simulator as a dynamics callable, batched with ``mujoco.rollout``.

    States use the observation layout of ``bam_rl/GravityCartPole-v0``
    ``[x, ẋ, cos θ, sin θ, θ̇]``; a start state sets ``qpos = (x, atan2(sin, cos))`` and
    ``qvel = (ẋ, θ̇)``. Each action is held for ``frame_skip`` physics steps (clamped to the
    actuator's range by MuJoCo, as in the environment), with gravity :attr:`gravity`.

    Only the asset's name, frame skip and gravity are stored: the MuJoCo model is built once
    per process and shared (gravity is written into it before every rollout), so the object
    saves without pickle. A model shipped with the package is stored as
    ``"bam_rl.envs:assets/<file>"`` (:func:`portable_model_path`), so a saved agent loads after
    the project moves or on another machine; a user's own MJCF file is stored by its path.

    Args:
        model_path: Path of the MJCF file (the environment's ``fullpath``), or a packaged
            model's ``"bam_rl.envs:<path>"`` name.
        frame_skip: Physics steps per action (the environment's ``frame_skip``).
        gravity: Gravity magnitude (m/s², > 0).
        n_threads: ``MjData`` instances, hence threads, used by ``mujoco.rollout``.
    """

    def __init__(
        self, model_path: str, frame_skip: int = 2, gravity: float = 9.81, n_threads: int = 1
    ):
        if not isinstance(model_path, str):
            raise ValueError(f"model_path must be a str, got {model_path!r}")
        self.model_path = portable_model_path(model_path)
        self.frame_skip = check_int("frame_skip", frame_skip)
        self.gravity = float(check_positive("gravity", gravity))
        self.n_threads = check_int("n_threads", n_threads)
        try:
            model, _ = _simulator(self.model_path, self.n_threads)
        except ValueError as error:  # MuJoCo's own (a missing or malformed file)
            if "n_threads" in str(error):
                raise
            raise ValueError(f"model_path {model_path!r} is not a MuJoCo model: {error}") from None
        import mujoco

        spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        if model.nq != 2 or model.nv != 2 or model.nu != 1 or mujoco.mj_stateSize(model, spec) != 5:
            raise ValueError(
                "model_path must describe the cart-pole (nq = nv = 2, nu = 1, no activations)"
            )
        self.state_dim, self.action_dim = 5, 1

    def _check_restored(self) -> None:
        """A restored simulator is checked by building it again: ``model_path`` a cart-pole
        MJCF file, ``frame_skip``, ``gravity`` and ``n_threads`` as the constructor takes
        them (``n_threads`` within the memory budget), so no state file reaches
        ``mujoco.rollout`` with sizes it did not check."""
        stored = self.model_path
        if not isinstance(stored, str):
            raise ValueError(f"model_path must be a str, got {stored!r}")
        path = resolve_model_path(stored)
        if not os.path.isfile(path):
            raise ValueError(
                f"model_path must name an existing MJCF file, got {stored!r}: the file is not "
                "on this machine (a model of your own is stored by its path: put the file back "
                "there to load this agent)"
            )
        if os.path.getsize(path) > MAX_MODEL_BYTES:
            raise ValueError(
                f"model_path must be an MJCF file of at most {MAX_MODEL_BYTES} bytes, got "
                f"{os.path.getsize(path)} bytes"
            )
        fresh = SimulatorDynamics(path, self.frame_skip, self.gravity, self.n_threads)
        self.model_path = fresh.model_path
        if (self.state_dim, self.action_dim) != (fresh.state_dim, fresh.action_dim):
            raise ValueError("state_dim and action_dim of the simulator must be 5 and 1")
        self.frame_skip, self.gravity = fresh.frame_skip, fresh.gravity
        self.n_threads = fresh.n_threads

    def rollout_bytes(self, n_samples: int, horizon: int) -> int:
        """Bytes a rollout of ``n_samples`` sequences of ``horizon`` steps allocates (an upper
        estimate: the physics states and controls of every substep; measured 152 bytes per
        sample and step with ``frame_skip`` 2)."""
        return n_samples * horizon * (16 * self.frame_skip * (5 + self.action_dim) + 96)

    def set_gravity(self, gravity: float) -> None:
        """Sets the gravity of future rollouts."""
        self.gravity = float(check_positive("gravity", gravity))

    def __call__(
        self, state: Any, actions: Any, rng: np.random.Generator | None = None
    ) -> np.ndarray:
        """Rolls the simulator out from ``state`` under ``actions (K, H, 1)``.

        Returns:
            Observations ``(K, H, 5)`` after each action (``rng`` is unused: the simulator
            is deterministic).
        """
        state, actions = check_rollout_inputs(state, actions, 5, 1)
        return self.rollout_unchecked(state, actions, rng)

    def rollout_unchecked(
        self, state: np.ndarray, actions: np.ndarray, rng: np.random.Generator | None = None
    ) -> np.ndarray:
        """:meth:`__call__` without its input checks (the planner checks once per step)."""
        model, datas = _simulator(self.model_path, self.n_threads)
        model.opt.gravity[2] = -self.gravity
        k, h, _ = actions.shape
        skip = self.frame_skip
        # the full physics state is (time, qpos, qvel): no activations, mocap or plugins
        initial = np.empty((k, 5))
        initial[:, 0] = 0.0
        initial[:, 1:] = (state[0], math.atan2(state[3], state[2]), state[1], state[4])
        controls = np.ascontiguousarray(np.repeat(actions, skip, axis=1), dtype=np.float64)
        states = np.empty((k, h * skip, 5))
        from mujoco import rollout as mj_rollout

        mj_rollout.rollout(
            [model] * k,
            datas,
            initial,
            controls,
            skip_checks=True,
            nstep=h * skip,
            state=states,
            sensordata=np.empty((k, h * skip, 0)),
        )
        every = states[:, skip - 1 :: skip]  # (K, H, 5): time, x, θ, ẋ, θ̇
        out = np.empty((k, h, 5))
        out[..., 0] = every[..., 1]
        out[..., 1] = every[..., 3]
        np.cos(every[..., 2], out=out[..., 2])
        np.sin(every[..., 2], out=out[..., 3])
        out[..., 4] = every[..., 4]
        return out

    def __repr__(self) -> str:
        return (
            f"SimulatorDynamics({self.model_path!r}, frame_skip={self.frame_skip}, "
            f"gravity={self.gravity:g})"
        )


class MujocoEnvDynamics:
    """Any Gymnasium MuJoCo environment as a dynamics callable: the ground truth of
    :class:`~bam_rl.agents.mppi.GroundTruthMPPI` beyond the cart-pole.

    The planner is an oracle, so it reads the true simulator: every rollout starts from a copy
    of the live environment's ``MjData`` (the full state, warm start included, not only what
    the observation shows: InvertedDoublePendulum's observation holds sines, cosines and a
    constraint force, from which no ``qpos``/``qvel`` could be recovered exactly), steps a
    private copy of the environment (its own ``MjData``, a copy of the live ``MjModel``, so
    every parameter the ``NonStationary`` wrapper changed is planned with) through the
    environment's own ``do_simulation`` and reads each observation with its own
    ``_get_obs``: one planned step is exactly one ``env.step``.

    InvertedPendulum-v5, InvertedDoublePendulum-v5 and HalfCheetah-v5 are rolled out batched
    instead, through ``mujoco.rollout`` on a persistent thread pool from the live full physics
    state (:mod:`bam_rl.agents.mujoco_batch`; the same states as ``env.step``, to 1e-12 in
    the tests, with the live model itself when following changes); any other environment
    keeps the loop. :meth:`terminal_cost` solves a planning reward's terminal value from the
    live model, again only when the world changed.

    Args:
        env: A Gymnasium ``MujocoEnv`` (possibly wrapped), read live.
        follow_changes: Copy the live model before every rollout (True), or only here (False:
            a planner blind to later changes of the world).
        batched: Roll out through ``mujoco.rollout`` (True; ``ValueError`` for an environment
            whose observation is not known from its physics state), with the loop (False), or
            batched where known (``None``, default).
        n_threads: Threads of the batched rollouts (``None``: the CPUs this process may use,
            for rollouts of at least ``PARALLEL_MIN_STEPS`` physics steps; smaller ones run on
            the calling thread).

    Raises:
        ValueError: When ``env`` is not a MuJoCo environment whose state can be copied and
            whose observation its ``_get_obs`` gives (checked here on a copy).
    """

    def __init__(
        self,
        env: Any,
        follow_changes: bool = True,
        batched: bool | None = None,
        n_threads: int | None = None,
    ):
        import copy

        base = getattr(env, "unwrapped", env)
        if not all(hasattr(base, name) for name in ("model", "data", "frame_skip", "_get_obs")):
            raise ValueError(
                f"env must be a Gymnasium MuJoCo environment (model, data, frame_skip, "
                f"_get_obs) or one of the classic-control environments with a model "
                f"({', '.join(CLASSIC_ENV_IDS)}), got {env!r}; for any other environment give "
                f"its equations, GroundTruthMPPI(env, dynamics=f) with f(observations (K, dx), "
                f"actions (K, du)) -> next observations (K, dx)"
            )
        self.env = base
        self.follow_changes = bool(follow_changes)
        self.frame_skip = int(base.frame_skip)
        self.state_dim = int(np.prod(env.observation_space.shape))
        self.action_dim = int(np.prod(env.action_space.shape))
        clone = object.__new__(type(base))
        self._clone = clone
        self._refresh_model()
        clone.data = copy.copy(base.data)
        try:
            observation = np.asarray(clone._get_obs(), dtype=np.float64).reshape(-1)
            live = np.asarray(base._get_obs(), dtype=np.float64).reshape(-1)
        except Exception as error:  # an environment whose observation needs more than data
            raise ValueError(
                f"env's observation cannot be computed from a copy of its state: {error}"
            ) from None
        if observation.shape != (self.state_dim,) or not np.array_equal(observation, live):
            raise ValueError(
                "env's observation is not what a copy of its MuJoCo state gives (shape "
                f"{observation.shape}, observation space {env.observation_space.shape})"
            )
        self._terminal: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray]] = {}
        self.terminal_solves = 0  # how often terminal_cost solved P (once per world)
        self._batch = self._batched_rollout(batched, n_threads, live)

    def _batched_rollout(self, batched: Any, n_threads: Any, live: np.ndarray) -> Any:
        """The :class:`~bam_rl.agents.mujoco_batch.BatchedRollout` of the environment, or
        ``None`` for the loop; its observation of the live state must be ``_get_obs``'s."""
        from .mujoco_batch import (
            PARALLEL_MIN_STEPS,
            BatchedRollout,
            batched_observation,
            default_threads,
        )

        if batched is not None and not isinstance(batched, (bool, np.bool_)):
            raise ValueError(f"batched must be True, False or None, got {batched!r}")
        threads = default_threads() if n_threads is None else check_int("n_threads", n_threads)
        if batched is False:
            return None
        fn = batched_observation(self.env)
        if fn is not None:
            data = self.env.data
            observed = np.asarray(fn(self.env, data.qpos, data.qvel), dtype=np.float64)
            if not np.array_equal(observed.reshape(-1), live):
                fn = None  # (the constraint force of a cart at the rail's end, at reset)
        if fn is None:
            if batched:
                raise ValueError(
                    f"batched=True: {type(self.env).__name__}'s observation is not known from "
                    "its physics state (batched: InvertedPendulum-v5, InvertedDoublePendulum-v5, "
                    "HalfCheetah-v5); pass batched=None or False for the loop"
                )
            return None
        # threads not given: small rollouts stay on the calling thread (PARALLEL_MIN_STEPS)
        return BatchedRollout(self.env, fn, threads, PARALLEL_MIN_STEPS if n_threads is None else 0)

    @property
    def batched(self) -> bool:
        """Whether rollouts go through ``mujoco.rollout`` (else the copy-and-step loop)."""
        return self._batch is not None

    def _world(self) -> tuple[Any, int]:
        """The model and frame skip planned with: the live ones when following changes, else
        the copy made at construction."""
        if self.follow_changes:
            return self.env.model, int(self.env.frame_skip)
        return self._clone.model, self.frame_skip

    def terminal_cost(self, terminal: Any) -> np.ndarray:
        """``P`` of ``terminal`` (a :class:`~bam_rl.agents.terminal.TerminalValue`) solved from
        the model planned with (:meth:`~bam_rl.agents.terminal.TerminalValue.solve_mujoco`),
        cached until the world changes: a fingerprint of the model's dynamic parameters
        (gravity, time step, masses, inertias, body and geom geometry, friction, damping,
        armature, stiffness, actuator gains and ranges) and the frame skip is compared before
        every plan."""
        model, frame_skip = self._world()
        parts: list[np.ndarray] = [
            np.asarray(model.opt.gravity, dtype=np.float64),
            np.array([model.opt.timestep, frame_skip, model.opt.integrator], dtype=np.float64),
        ]
        parts += [
            np.asarray(getattr(model, name), dtype=np.float64).ravel() for name in _WORLD_FIELDS
        ]
        fingerprint = np.concatenate(parts)
        key = terminal.cache_key()  # not id(terminal): a collected value's id is reused
        cached = self._terminal.get(key)
        if cached is None or not np.array_equal(cached[0], fingerprint):
            cached = (fingerprint, terminal.solve_mujoco(model, frame_skip))
            self._terminal[key] = cached
            self.terminal_solves += 1
        return cached[1]

    def _refresh_model(self) -> None:
        """The clone plans with a copy of the live model (the current world) and the live
        environment's attributes (whatever a ``NonStationary`` ``attr:<name>`` or declared
        parameter set there), keeping its own ``MjData`` and no renderer."""
        import copy

        clone = self._clone
        data = clone.__dict__.get("data")
        clone.__dict__.update(self.env.__dict__)
        clone.render_mode = None
        clone.mujoco_renderer = None
        if data is not None:
            clone.data = data
        clone.model = copy.copy(self.env.model)

    def rollout_bytes(self, n_samples: int, horizon: int) -> int:
        """Bytes a rollout allocates: its observations (the copies are made once), and batched
        the physics states and inputs of every physics step."""
        nbytes = n_samples * horizon * 8 * (self.state_dim + self.action_dim)
        if self._batch is not None:
            import mujoco

            model = self.env.model
            width = mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_FULLPHYSICS)
            width += mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_USER)
            nbytes += 8 * n_samples * (horizon * self.frame_skip + 1) * (width + model.nv)
        return nbytes

    def __call__(
        self, state: Any, actions: Any, rng: np.random.Generator | None = None
    ) -> np.ndarray:
        """Rolls the environment's copy out from its live state under ``actions (K, H,
        du)``; ``state`` must be the live observation. Returns observations ``(K, H, dx)``."""
        state, actions = check_rollout_inputs(state, actions, self.state_dim, self.action_dim)
        return self.rollout_unchecked(state, actions, rng)

    def check_observation(self, observation: np.ndarray) -> None:
        """``ValueError`` unless ``observation`` is the live environment's current one (the
        oracle plans from the simulator's state, which must be the one observed)."""
        live = np.asarray(self.env._get_obs(), dtype=np.float64).reshape(-1)
        if not np.allclose(observation, live, rtol=1e-6, atol=1e-6):
            raise ValueError(
                "observation must be the environment's current one (the ground-truth planner "
                "plans from its simulator state)"
            )

    def rollout_unchecked(
        self, state: np.ndarray, actions: np.ndarray, rng: np.random.Generator | None = None
    ) -> np.ndarray:
        """:meth:`__call__` without its input checks."""
        if self._batch is None:
            return self._loop(actions, np.arange(len(actions)))
        model, frame_skip = self._world()
        out, redo = self._batch.observations(model, actions, frame_skip)
        if redo.any():  # near the rail's ends: the exact loop
            indices = np.flatnonzero(redo)
            out[indices] = self._loop(actions, indices)
        return out

    def _loop(self, actions: np.ndarray, indices: np.ndarray) -> np.ndarray:
        """The rollouts ``indices`` of ``actions`` by copying the live ``MjData`` into the
        clone and stepping it with the environment's own ``do_simulation``/``_get_obs``."""
        import mujoco

        if self.follow_changes:
            self._refresh_model()
        clone, live = self._clone, self.env.data
        model = clone.model
        h = actions.shape[1]
        out = np.empty((len(indices), h, self.state_dim))
        frame_skip = int(clone.frame_skip) if self.follow_changes else self.frame_skip
        for j, i in enumerate(indices):
            mujoco.mj_copyData(clone.data, model, live)
            for t in range(h):
                clone.do_simulation(actions[i, t], frame_skip)
                out[j, t] = clone._get_obs()
        return out

    def __repr__(self) -> str:
        return f"MujocoEnvDynamics({type(self.env).__name__}, follow_changes={self.follow_changes})"


class StepFunctionDynamics:
    """A user's batched one-step function as a dynamics callable: the ground truth of
    :class:`~bam_rl.agents.mppi.GroundTruthMPPI` on an environment it cannot copy
    (``GroundTruthMPPI(env, dynamics=f)``).

    ``step(observations (K, dx), actions (K, du)) -> next observations (K, dx)`` steps ``K``
    observations at once (NumPy float64 arrays; a ``Discrete`` action space's actions arrive
    one-hot, ``(K, n)``). A rollout of ``H`` steps from one observation calls it ``H`` times on
    the ``K`` planned sequences. It may read the live environment (``env.unwrapped.mass``) to
    plan in the world the ``NonStationary`` wrapper set.

    Args:
        step: The one-step function.
        state_dim: ``dx``, the observation's entries.
        action_dim: ``du``, the action's entries.
        example_state: An observation ``(dx,)`` to check ``step`` on (default zeros).
        example_action: An action ``(du,)`` to check ``step`` on (default zeros).

    Raises:
        ValueError: If ``step`` is not callable, or, called once here on ``K`` copies of the
            examples, raises or returns anything but ``(K, dx)`` finite real numbers.
    """

    def __init__(
        self,
        step: Any,
        state_dim: int,
        action_dim: int,
        example_state: Any = None,
        example_action: Any = None,
    ):
        if not callable(step):
            raise ValueError(
                "dynamics must be a callable f(observations (K, dx), actions (K, du)) -> next "
                f"observations (K, dx), got {step!r}"
            )
        self.step = step
        self.state_dim = check_int("state_dim", state_dim)
        self.action_dim = check_int("action_dim", action_dim)
        state = np.zeros(self.state_dim) if example_state is None else example_state
        action = np.zeros(self.action_dim) if example_action is None else example_action
        state, actions = check_rollout_inputs(
            state,
            np.asarray(action, dtype=np.float64).reshape(1, 1, -1),
            self.state_dim,
            self.action_dim,
        )
        # K differs from dx and du, so a transposed or broadcast result is found
        k = next(k for k in range(2, 5) if k not in (self.state_dim, self.action_dim))
        states = np.repeat(state[None], k, axis=0)
        try:
            result = step(states, np.repeat(actions[0], k, axis=0))
            value = np.asarray(result)
        except Exception as error:  # a user's callable: any failure is a refused model
            raise ValueError(
                f"dynamics must accept observations of shape {states.shape} and actions of "
                f"shape ({k}, {self.action_dim}); calling it raised {type(error).__name__}: "
                f"{error}"
            ) from error
        real = np.issubdtype(value.dtype, np.floating) or np.issubdtype(value.dtype, np.integer)
        if value.shape != (k, self.state_dim) or not real:
            raise ValueError(
                f"dynamics must return real next observations of shape (K, dx) = "
                f"({k}, {self.state_dim}) for observations of shape {states.shape}, got "
                f"{value.dtype} of shape {value.shape}"
            )
        if not np.all(np.isfinite(value)):
            raise ValueError(
                f"dynamics must return finite next observations, got "
                f"{np.count_nonzero(~np.isfinite(value))} non-finite entries of {value.size} "
                f"for observations of shape {states.shape}"
            )

    def rollout_bytes(self, n_samples: int, horizon: int) -> int:
        """Bytes a rollout allocates: its observations and each step's inputs and result."""
        return 8 * n_samples * (horizon * self.state_dim + 3 * self.state_dim + self.action_dim)

    def __call__(
        self, state: Any, actions: Any, rng: np.random.Generator | None = None
    ) -> np.ndarray:
        """Rolls ``step`` out from the observation ``state`` under ``actions (K, H, du)``;
        returns the observations ``(K, H, dx)`` after each action (``rng`` is unused)."""
        state, actions = check_rollout_inputs(state, actions, self.state_dim, self.action_dim)
        return self.rollout_unchecked(state, actions, rng)

    def rollout_unchecked(
        self, state: np.ndarray, actions: np.ndarray, rng: np.random.Generator | None = None
    ) -> np.ndarray:
        """:meth:`__call__` without its input checks (the planner checks once per step).

        Raises:
            ValueError: If ``step`` returns another shape than ``(K, dx)``.
        """
        k, h, _ = actions.shape
        current = np.repeat(state[None].astype(np.float64), k, axis=0)
        out = np.empty((k, h, self.state_dim))
        for t in range(h):
            following = np.asarray(self.step(current, actions[:, t].copy()), dtype=np.float64)
            if following.shape != (k, self.state_dim):
                raise ValueError(
                    f"dynamics must return next observations of shape ({k}, {self.state_dim}), "
                    f"got {following.shape}"
                )
            out[:, t] = following
            current = following.copy()
        return out

    def __repr__(self) -> str:
        name = getattr(self.step, "__qualname__", type(self.step).__name__)
        return (
            f"StepFunctionDynamics({name}, state_dim={self.state_dim}, "
            f"action_dim={self.action_dim})"
        )
