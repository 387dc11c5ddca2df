"""MPPI control-step latency against ``pytorch_mppi``, and one BAM readout over 90 trials.

Both planners run the same work side by side in one process: the RFF dynamics model of
``MPPIAgent`` (200 features, 5 states, 1 action) fitted to two random-action cart-pole trials,
horizon 50, 32 samples, sampling variance 0.4, temperature 0.5, and *one model sampled from
the belief per trajectory at every control step* (the draw of the 32 models is timed in both
rows; ``pytorch_mppi`` receives them as a tensor and rolls them out in its own loop, with the
same model noise). ``pytorch_mppi`` (``pip install pytorch_mppi``, the ``bench`` extra) runs
on the CPU with ``torch.set_num_threads(1)``, as our numpy runs with one BLAS thread.

Rows: (workload, ours, peer, ratio = peer / ours; > 1 means we are faster); latencies are
medians of the wall time over ``--steps`` control steps, each followed by the process CPU
time per step in brackets (less sensitive to other load on the machine; the load average
is printed first). float32 is the default planning dtype; the float64 row shows the
slower option (equally good plans, not identical ones; see ``RFFDynamicsModel``). A last
row times one ``GroundTruthMPPI`` control step (the
simulator through ``mujoco.rollout``; no peer). Then ``MPPIAgent.act`` on the cart-pole,
InvertedPendulum-v5 and CartPole-v1 (discrete) side by side (:func:`agent_act`), the NumPy
floor of a control step (the kernels it cannot avoid, timed alone, see :func:`floor`), and
one greedy readout over 90 trials with the time its Cholesky factorisations alone must take.

Usage: ``python -m bam_rl.bench.mppi [--steps 200]``.
"""

from __future__ import annotations

import argparse
import os
from functools import partial

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from scipy.linalg import lapack, solve_triangular

import bam_rl  # noqa: F401
from bam_rl.agents.dynamics import RFFDynamicsModel
from bam_rl.agents.mppi import MPPI, GroundTruthMPPI
from bam_rl.experiments.mppi_checks import random_trial
from bam_rl.memory import Memory
from bam_rl.readout import select


def wall_times(call: Callable[[], object], n_calls: int) -> list[float]:
    """The wall time of each of ``n_calls`` calls of ``call``."""
    times = []
    for _ in range(n_calls):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times


def median_latency(step: Callable[[], object], n_steps: int) -> tuple[float, float]:
    """Median wall time of one call, and the mean CPU time of this thread per call."""
    cpu = time.thread_time()
    times = wall_times(step, n_steps)
    return float(np.median(times)), (time.thread_time() - cpu) / n_steps


def cell(latency: tuple[float, float]) -> str:
    return f"{latency[0] * 1e3:7.3f}ms ({latency[1] * 1e3:6.3f})"


def torch_planner(model: RFFDynamicsModel, rng: np.random.Generator, dtype):
    """``pytorch_mppi.MPPI`` on the same model; returns a step function."""
    import torch
    from pytorch_mppi import MPPI as TorchMPPI

    torch.set_num_threads(1)
    torch.manual_seed(0)
    feats = model.features
    dx = model.state_dim
    omega_t = torch.tensor(feats.omega.T, dtype=dtype)  # (dx + du, D)
    offset = torch.tensor(feats.offset, dtype=dtype)
    sigma = float(np.sqrt(model.noise_var))
    held: dict[str, torch.Tensor] = {}

    def dynamics(state, action):
        z = torch.cat([state, action], dim=1)
        phi = torch.cos(z @ omega_t + offset)  # (K, D)
        delta = torch.bmm(phi.unsqueeze(1), held["models"]).squeeze(1)
        return state + delta + sigma * torch.randn_like(state)

    def running_cost(state, action):
        c, s = state[:, 2], state[:, 3]
        return -(c / torch.sqrt(c * c + s * s))

    planner = TorchMPPI(
        dynamics,
        running_cost,
        dx,
        torch.tensor([[0.4]], dtype=dtype),
        num_samples=32,
        horizon=50,
        lambda_=0.5,
        u_min=torch.tensor([-1.0], dtype=dtype),
        u_max=torch.tensor([1.0], dtype=dtype),
    )

    def step(state):
        models = model.sample(32, rng) * feats.scale  # one model per trajectory
        held["models"] = torch.from_numpy(
            np.swapaxes(models, 1, 2).astype(np.float32 if dtype == torch.float32 else np.float64)
        )
        return planner.command(torch.tensor(state, dtype=dtype))

    return step


def control_step(args: argparse.Namespace) -> None:
    import torch

    env = gym.make("bam_rl/GravityCartPole-v0")
    rng = np.random.default_rng(0)
    trials = [random_trial(env, rng, seed=i) for i in range(2)]
    state = trials[0][0][50]
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"{'workload':58s} {'ours wall (cpu)':>20s} {'peer wall (cpu)':>20s} {'ratio':>7s}")
    for ours_dtype, torch_dtype, label in (
        ("float32", torch.float32, "float32"),
        ("float64", torch.float64, "float64"),
        ("float32", torch.float64, "ours f32 / peer f64"),
    ):
        model = RFFDynamicsModel(5, 1, seed=0, planning_dtype=ours_dtype)
        model.set_belief(model.family.prior + model.stats(*trials[0]) + model.stats(*trials[1]))
        planner = MPPI(model, horizon=50, n_samples=32, sampling_var=0.4, temperature=0.5)
        plan_rng = np.random.default_rng(1)
        peer = torch_planner(model, np.random.default_rng(2), torch_dtype)
        for _ in range(10):  # warm-up
            planner.plan(state, plan_rng)
            peer(state)
        ours = median_latency(partial(planner.plan, state, plan_rng), args.steps)
        theirs = median_latency(partial(peer, state), args.steps)
        print(
            f"{'MPPI control step 32x50, 200 RFF, model/trajectory (' + label + ')':58s} "
            f"{cell(ours):>20s} {cell(theirs):>20s} {theirs[0] / ours[0]:7.2f}"
        )
    agent = GroundTruthMPPI(env, seed=0)
    agent.reset(state, {"gravity": 9.81})
    for _ in range(3):
        agent.act(state)
    gt = median_latency(lambda: agent.act(state), max(10, args.steps // 10))
    print(f"{'GroundTruthMPPI control step 32x50 (mujoco.rollout, RK4)':58s} {cell(gt):>20s}")
    # float32 vs float64 planning: same draws, how often the chosen action differs
    plans = {}
    for dtype in ("float32", "float64"):
        model = RFFDynamicsModel(5, 1, seed=0, planning_dtype=dtype)
        model.set_belief(model.family.prior + model.stats(*trials[0]) + model.stats(*trials[1]))
        planner = MPPI(model, horizon=50, n_samples=32)
        gen = np.random.default_rng(3)
        plans[dtype] = np.array([planner.plan(s, gen) for s in trials[1][0][:100]])
    diff = np.abs(plans["float32"] - plans["float64"])
    print(
        f"float32 vs float64 planning on 100 states (same draws): median |Δaction| "
        f"{np.median(diff):.2e}, max {diff.max():.2e}"
    )


#: ``agent_act`` rows (issue 41): label, environment id, ``MPPIAgent`` options
ACT_WORKLOADS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("cart-pole 5-D", "bam_rl/GravityCartPole-v0", {}),
    ("InvertedPendulum-v5 4-D", "InvertedPendulum-v5", {"reward": "inverted-pendulum"}),
    ("CartPole-v1 Discrete(2)", "CartPole-v1", {"reward": "cartpole-balance"}),
)


def agent_act(args: argparse.Namespace) -> None:
    """``MPPIAgent.act`` (K = 32, H = 50, 200 features, the paper's draws of ``M``) on the
    cart-pole, InvertedPendulum-v5 and CartPole-v1 (``CategoricalMPPI``), side by side: each
    agent (``memory="recursive"``) first learns from one trial of 100 steps of its own actions,
    then ``act`` is timed on the next trial's first observation."""
    from bam_rl.agents.mppi import MPPIAgent

    base = None
    for label, env_id, options in ACT_WORKLOADS:
        env = gym.make(env_id)
        agent = MPPIAgent(
            env.observation_space, env.action_space, memory="recursive", seed=0, **options
        )
        observation, info = env.reset(seed=0)
        agent.reset(observation, info)
        for _ in range(100):
            action = agent.act(observation)
            observation, reward, terminated, truncated, info = env.step(action)
            agent.observe(action, float(reward), observation, terminated, truncated, info)
            if terminated or truncated:
                break
        observation, info = env.reset(seed=1)
        agent.reset(observation, info)
        for _ in range(5):  # warm-up
            agent.act(observation)
        latency = median_latency(partial(agent.act, observation), args.steps)
        ratio = "" if base is None else f", {latency[0] / base:.2f}x the cart-pole's"
        base = latency[0] if base is None else base
        name = f"MPPIAgent.act control step 32x50, 200 RFF, {label}{ratio}"
        print(f"{name:58s} {cell(latency):>20s}")


def best_of(call: Callable[[], object], repeats: int) -> float:
    """Minimum wall time of ``call`` over ``repeats`` runs (a floor: the least disturbed)."""
    return min(wall_times(call, repeats))


def spd_matrix(rng: np.random.Generator, size: int = 200) -> np.ndarray:
    """A well-conditioned symmetric positive definite ``size × size`` matrix (Fortran order)."""
    a = rng.standard_normal((size, size))
    return np.asfortranarray(a @ a.T + size * np.eye(size))


def floor(args: argparse.Namespace) -> None:
    """The NumPy kernels one control step cannot avoid, timed alone (best of many runs).

    A control step must draw 32 models (32 × 200 × 5 standard normals and one triangular
    solve with the belief's 200 × 200 Cholesky factor) and roll 32 trajectories through 50
    sequential steps, each at least a (32 × 7)·(7 × 200) product, the cosine of 32 × 200
    float32 values and 32 batched (5 × 200)·(200) products. Their sum, without the model
    noise, the angle projection, the reward or any Python between them, estimates from below
    the latency of a NumPy implementation (the best of many runs, so an optimistic one).
    """
    rng = np.random.default_rng(0)
    repeats = max(50, args.steps)
    normals = best_of(lambda: rng.standard_normal((32, 200, 5)), repeats)
    factor = np.linalg.cholesky(spd_matrix(rng))
    z = rng.standard_normal((200, 160))
    solve = best_of(
        lambda: solve_triangular(factor, z, lower=True, trans=1, check_finite=False), repeats
    )
    f32 = np.float32
    inputs = rng.standard_normal((32, 7)).astype(f32)
    weights = rng.standard_normal((7, 200)).astype(f32)
    models = rng.standard_normal((32, 5, 200)).astype(f32)
    arguments, phi, delta = (np.empty(s, f32) for s in ((32, 200), (32, 200), (32, 5, 1)))

    def kernels() -> None:
        for _ in range(50):
            np.matmul(inputs, weights, out=arguments)
            np.cos(arguments, out=phi)
            np.matmul(models, phi[:, :, None], out=delta)

    rollout = best_of(kernels, repeats)
    total = normals + solve + rollout
    print(
        f"NumPy floor of one control step (best of {repeats}): 32,000 normals "
        f"{normals * 1e3:.3f} ms + triangular solve {solve * 1e3:.3f} ms + 50 x (product, "
        f"float32 cos, batched product) {rollout * 1e3:.3f} ms = {total * 1e3:.3f} ms"
    )
    print(f"one 200 x 200 Cholesky factorisation (LAPACK dpotrf): {cholesky_time() * 1e6:.0f} us")


def cholesky_time(repeats: int = 300) -> float:
    """Best time of one in-place LAPACK factorisation of a 200 × 200 SPD matrix (the copy
    it overwrites is timed alone and subtracted)."""
    precision = spd_matrix(np.random.default_rng(1))
    copy = best_of(lambda: precision.copy(order="F"), repeats)
    both = best_of(
        lambda: lapack.dpotrf(precision.copy(order="F"), lower=1, clean=0, overwrite_a=1),
        repeats,
    )
    return max(both - copy, 0.0)


def readout(args: argparse.Namespace) -> None:
    env = gym.make("bam_rl/GravityCartPole-v0")
    rng = np.random.default_rng(0)
    model = RFFDynamicsModel(5, 1, seed=0)
    memory = Memory()
    gravities = (9.81, 11.15, 3.72)
    start = time.perf_counter()
    for i in range(90):
        g = gravities[(i // 15) % 3]
        memory.add(
            model.stats(*random_trial(env, rng, seed=i, options={"gravity": g})), label=g, time=i
        )
    s_t = model.stats(*random_trial(env, rng, seed=1000, options={"gravity": 3.72}))
    print(f"(built 90 trial statistics in {time.perf_counter() - start:.1f} s)")
    times = []
    for _ in range(args.readout_repeats):
        start = time.perf_counter()
        result = select(model.family, memory, s_t, lam=0.0, method="greedy")
        times.append(time.perf_counter() - start)
    labels = np.array(
        [
            memory.labels[i] if hasattr(memory, "labels") else gravities[(i // 15) % 3]
            for i in range(90)
        ]
    )
    chosen = labels[result.weights > 0]
    print(
        f"{'BAM greedy readout, 90 trials x 200 transitions, 200 features':58s} "
        f"{np.median(times):8.3f} s  ({int(result.weights.sum())} selected, "
        f"{np.mean(np.isclose(chosen, 3.72)) if chosen.size else 0:.2f} of them at 3.72; "
        f"{len(result.scores)} greedy rounds, {result.n_evaluations} evaluations, path "
        f"{result.path!r})"
    )
    if result.path == "regression":  # full-rank data: two factorisations per candidate
        potrf = cholesky_time()
        print(
            f"  of which {result.n_evaluations} x 2 Cholesky factorisations at "
            f"{potrf * 1e6:.0f} us = {2 * result.n_evaluations * potrf:.3f} s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--readout-repeats", type=int, default=3)
    args = parser.parse_args()
    control_step(args)
    agent_act(args)
    floor(args)
    readout(args)


if __name__ == "__main__":
    main()
