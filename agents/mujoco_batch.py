"""Exact batched rollouts of Gymnasium MuJoCo environments through ``mujoco.rollout``: the fast
path of :class:`~bam_rl.agents.simulator.MujocoEnvDynamics` (beyond the paper's cart-pole).

Every planned trajectory starts from the live environment's full physics state
(``mj_getState`` with ``mjSTATE_FULLPHYSICS``: time, ``qpos``, ``qvel``, activations, history,
plugins), its solver warm start (``qacc_warmstart``) and every user input (``mjSTATE_USER``:
``ctrl``, applied forces, active equality constraints, mocap, user data), each action written
to ``ctrl`` and held for ``frame_skip`` physics steps, as ``MujocoEnv.do_simulation``: one
planned step is one ``env.step`` (``tests/agents/test_mujoco_batch.py`` checks the states to
1e-12 after gravity and mass changes). The rollouts run on the calling thread and
persistent helper threads, in the live model itself (``mujoco.rollout`` only reads it), so
every parameter the ``NonStationary`` wrapper changed is planned with and no copy is made.

The observation is computed from the recorded physics states, so only environments whose
``_get_obs`` is known here take this path (:data:`OBSERVATIONS`, matched by exact class: a
subclass may observe something else); every other one keeps the copy-and-step loop.
InvertedDoublePendulum-v5 observes the slider's constraint force, which is not part of the
state: it is 0 exactly when the rail's limit is inactive throughout the last physics step of
an action, and a trajectory that may have come near the rail's ends
(:func:`_idp_near_rail`) is stepped again by the exact loop.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from concurrent import futures
from typing import Any

import numpy as np

__all__ = [
    "OBSERVATIONS",
    "PARALLEL_MIN_STEPS",
    "BatchedRollout",
    "batched_observation",
    "default_threads",
]

#: Physics steps (samples × horizon × frame skip) below which a rollout whose thread count
#: was not given runs on the calling thread: on the shared 2-core machine (load 12) two
#: threads took 2.9× as long as one for 160 InvertedPendulum steps and 1.05× for 800
#: InvertedDoublePendulum steps, 0.92× for 6400 (``bam-rl bench --only rollout``).
PARALLEL_MIN_STEPS = 2000

ObservationFn = Callable[[Any, np.ndarray, np.ndarray], np.ndarray]


def default_threads() -> int:
    """The CPUs this process may run on (``os.sched_getaffinity``), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


_HELPERS: dict[int, Any] = {}
_HELPERS_LOCK = threading.Lock()
# a forked child inherits the pools but not their threads: a submit there would never run
if hasattr(os, "register_at_fork"):  # POSIX only
    os.register_at_fork(after_in_child=_HELPERS.clear)
#: Per batched rollout, one ``mujoco.rollout.Rollout`` a thread: kept beside the instance, not
#: on it, so the dynamics that own it still deep-copy and pickle (``Rollout`` does neither).
_ROLLOUTS: weakref.WeakKeyDictionary[Any, list[Any]] = weakref.WeakKeyDictionary()


def _helpers(n: int) -> Any:
    """The process's persistent pool of ``n`` helper threads, shared by every batched rollout
    of the process (the planner calls them one at a time).

    Why not ``mujoco.rollout``'s own pool: its ``nthread`` workers run while the calling thread
    waits, and on a 2-core machine the scheduler often put both workers on one core, so the
    same IDP rollout took 4.8 or 9 ms from one process to the next (the one-thread time). Here
    the calling thread steps the first chunk itself and ``n`` helpers the others:
    ``mujoco.rollout`` releases the GIL, and ``threads`` threads run in all, never more.
    """
    with _HELPERS_LOCK:
        if n not in _HELPERS:
            from concurrent.futures import ThreadPoolExecutor

            _HELPERS[n] = ThreadPoolExecutor(max_workers=n, thread_name_prefix="bam-rl-rollout")
        return _HELPERS[n]


def _qpos_qvel(env: Any, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
    return np.concatenate([qpos, qvel], axis=-1)


def _double_pendulum(env: Any, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
    constraint = np.zeros((*qpos.shape[:-1], 1))  # the rail's limit inactive (see module doc)
    return np.concatenate(
        [
            qpos[..., :1],
            np.sin(qpos[..., 1:]),
            np.cos(qpos[..., 1:]),
            np.clip(qvel, -10, 10),
            constraint,
        ],
        axis=-1,
    )


def _half_cheetah(env: Any, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
    if env._exclude_current_positions_from_observation:
        qpos = qpos[..., 1:]
    return np.concatenate([qpos, qvel], axis=-1)


_GYM = "gymnasium.envs.mujoco"
#: ``module.Class`` → the observation from ``(env, qpos (..., nq), qvel (..., nv))``, exactly
#: the class's ``_get_obs`` on that physics state.
OBSERVATIONS: dict[str, ObservationFn] = {
    f"{_GYM}.inverted_pendulum_v5.InvertedPendulumEnv": _qpos_qvel,
    f"{_GYM}.inverted_double_pendulum_v5.InvertedDoublePendulumEnv": _double_pendulum,
    f"{_GYM}.half_cheetah_v5.HalfCheetahEnv": _half_cheetah,
}
_DOUBLE_PENDULUM = f"{_GYM}.inverted_double_pendulum_v5.InvertedDoublePendulumEnv"


def _only_rail_limit(model: Any) -> bool:
    """Whether the slider's limit is the model's only possible constraint (no contacts, no
    other limited joint, no equality, friction loss or tendon)."""
    import mujoco

    no_contact = (
        bool(model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONTACT)
        or not (np.any(model.geom_contype) and np.any(model.geom_conaffinity))
        or not np.any(model.geom_contype[:, None] & model.geom_conaffinity[None, :])
    )
    return (
        no_contact
        and model.neq == 0
        and model.ntendon == 0
        and not model.dof_frictionloss.any()
        and not model.jnt_limited[1:].any()
        and model.jnt_type[0] == mujoco.mjtJoint.mjJNT_SLIDE
    )


def batched_observation(env: Any) -> ObservationFn | None:
    """The observation function of ``env`` (unwrapped) for batched rollouts, or ``None``
    when its observation is not known from the physics state (the loop then steps it)."""
    klass = type(env)
    name = f"{klass.__module__}.{klass.__qualname__}"
    fn = OBSERVATIONS.get(name)
    if fn is None:
        return None
    if name == _DOUBLE_PENDULUM and not _only_rail_limit(env.model):
        return None
    return fn


def _idp_near_rail(model: Any, qpos: np.ndarray, qvel: np.ndarray, frame_skip: int) -> np.ndarray:
    """``(K,)``: trajectories whose cart may have met the rail's limit within the last physics
    step of some action (so the observed constraint force may be nonzero).

    ``qpos``/``qvel`` are ``(K, 1 + H·frame_skip, n)`` with the start first. An RK4 stage
    position lies within ``dt (|v_a| + h |a|)`` of the substep's start; the bound taken is
    ``dt (max |v| + 2 |Δv|) + 0.02`` from both ends, against the limit minus its margin.
    """
    low, high = model.jnt_range[0]
    margin = float(model.jnt_margin[0])
    dt = float(model.opt.timestep)
    starts = np.arange(frame_skip - 1, qpos.shape[1] - 1, frame_skip)  # last substep's start
    x_a, x_b = qpos[:, starts, 0], qpos[:, starts + 1, 0]
    v_a, v_b = qvel[:, starts, 0], qvel[:, starts + 1, 0]
    reach = dt * (np.maximum(np.abs(v_a), np.abs(v_b)) + 2 * np.abs(v_b - v_a)) + 0.02
    near = (np.maximum(x_a, x_b) + reach >= high - margin) | (
        np.minimum(x_a, x_b) - reach <= low + margin
    )
    return near.any(axis=1)


class BatchedRollout:
    """The batched rollouts of one live Gymnasium MuJoCo environment.

    Args:
        env: The unwrapped environment (read live: its ``data`` is the start, its ``model``
            the world unless ``model`` is given).
        observation: Its observation function (:func:`batched_observation`).
        n_threads: Threads that step the rollouts: the calling thread and ``n_threads - 1``
            persistent helpers (shared by the process), each with its own
            ``mujoco.rollout.Rollout`` and ``MjData``.
        min_parallel_steps: Rollouts of fewer physics steps run on the calling thread.
    """

    def __init__(
        self, env: Any, observation: ObservationFn, n_threads: int, min_parallel_steps: int = 0
    ):
        import mujoco

        self.env = env
        self.observation = observation
        self.n_threads = int(n_threads)
        self.min_parallel_steps = int(min_parallel_steps)
        model = env.model
        self._datas = [mujoco.MjData(model) for _ in range(self.n_threads)]
        spec = mujoco.mjtState
        self._full = int(spec.mjSTATE_FULLPHYSICS)
        self._user = int(spec.mjSTATE_USER)
        self._qpos_at = mujoco.mj_stateSize(model, self._full & (int(spec.mjSTATE_QPOS) - 1))
        self._qvel_at = mujoco.mj_stateSize(model, self._full & (int(spec.mjSTATE_QVEL) - 1))
        self._ctrl_at = mujoco.mj_stateSize(model, self._user & (int(spec.mjSTATE_CTRL) - 1))
        self._double_pendulum = observation is _double_pendulum

    def states(
        self, model: Any, actions: np.ndarray, frame_skip: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(qpos, qvel)`` ``(K, 1 + H·frame_skip, n)`` of every physics step (the live start
        first) under ``actions (K, H, nu)`` held ``frame_skip`` steps each."""
        import mujoco

        live = self.env.data
        k, h, _ = actions.shape
        n_steps = h * frame_skip
        initial = np.empty(mujoco.mj_stateSize(model, self._full))
        mujoco.mj_getState(model, live, initial, self._full)
        user = np.empty(mujoco.mj_stateSize(model, self._user))
        mujoco.mj_getState(model, live, user, self._user)
        controls = np.empty((k, n_steps, user.size))
        controls[:] = user
        nu = model.nu
        controls[..., self._ctrl_at : self._ctrl_at + nu] = np.repeat(actions, frame_skip, axis=1)
        states = np.empty((k, n_steps, initial.size))  # contiguous: rollout writes into it
        warmstart = np.repeat(np.array(live.qacc_warmstart)[None], k, axis=0)
        threads = min(k, self.n_threads if k * n_steps >= self.min_parallel_steps else 1)
        initial_states = np.repeat(initial[None], k, axis=0)
        sensordata = np.empty((k, n_steps, model.nsensordata))
        bounds = np.linspace(0, k, threads + 1).astype(int)  # one chunk a thread

        rollouts = _ROLLOUTS.get(self)
        if rollouts is None:
            from mujoco import rollout as mj_rollout

            rollouts = _ROLLOUTS[self] = [
                mj_rollout.Rollout(nthread=0) for _ in range(self.n_threads)
            ]

        def chunk(i: int) -> None:
            part = slice(bounds[i], bounds[i + 1])
            rollouts[i].rollout(
                [model] * (part.stop - part.start),
                [self._datas[i]],
                initial_states[part],
                controls[part],
                control_spec=self._user,
                skip_checks=True,
                nstep=n_steps,
                initial_warmstart=warmstart[part],
                state=states[part],
                sensordata=sensordata[part],
            )

        pool = _helpers(threads - 1) if threads > 1 else None
        others = [pool.submit(chunk, i) for i in range(1, threads)] if pool else []
        try:
            chunk(0)
        finally:  # no helper may still write into this instance's MjData when this returns
            futures.wait(others)
        for done in others:
            done.result()
        out = np.concatenate([np.broadcast_to(initial, (k, 1, initial.size)), states], axis=1)
        qpos = out[..., self._qpos_at : self._qpos_at + model.nq]
        qvel = out[..., self._qvel_at : self._qvel_at + model.nv]
        return qpos, qvel

    def observations(
        self, model: Any, actions: np.ndarray, frame_skip: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The observations ``(K, H, dx)`` after every action, and ``(K,)`` which trajectories
        the exact loop must step again (InvertedDoublePendulum near the rail's ends)."""
        qpos, qvel = self.states(model, actions, frame_skip)
        every = slice(frame_skip, None, frame_skip)
        obs = self.observation(self.env, qpos[:, every], qvel[:, every])
        if self._double_pendulum:
            redo = _idp_near_rail(model, qpos, qvel, frame_skip)
        else:
            redo = np.zeros(len(obs), dtype=bool)
        return obs, redo
