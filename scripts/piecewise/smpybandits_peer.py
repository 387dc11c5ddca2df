"""docs/piecewise.md: bam-rl's piecewise bandits against SMPyBandits 0.9.7 (PyPI) on the same
reward streams.

SMPyBandits 0.9.7 needs NumPy < 2 and SciPy < 1.14, so it runs in a venv of its own::

    python -m venv .venv-smpy && .venv-smpy/bin/pip install SMPyBandits==0.9.7 \
        "numpy<2" "scipy<1.14" "numba<0.61" "pandas<2.3" tqdm

Then, side by side in one session (the same streams; regret and agent microseconds a step)::

    python scripts/piecewise/smpybandits_peer.py dump streams.npz --problem 1 --runs 20  # our venv
    python scripts/piecewise/smpybandits_peer.py ours streams.npz                         # our venv
    .venv-smpy/bin/python scripts/piecewise/smpybandits_peer.py theirs streams.npz         # theirs

Run ``k`` of the file holds Problem ``--problem``'s means per step and the uniforms ``u`` of
``PiecewiseBandit-v0`` reset with seed ``k`` (reward = ``u[t] < mu_arm(t)``, exactly the
environment's draw). The reference policies are configured as SMPyBandits'
``configuration_nonstationary.py`` ran them (its ``GAMMAS``, ``TAUS``, ``ALPHA_0 = 0.05``,
``DELTA_LOCAL``/``DELTA_GLOBAL``, lazy steps 10/10 and 20).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import sys
import time
import warnings

import numpy as np

NAMES = (
    "klucb",
    "thompson",
    "d-klucb",
    "sw-klucb",
    "dts",
    "exp3s",
    "m-klucb",
    "cusum-klucb",
    "glr-klucb",
    "glr-klucb-global",
    "d-klucb-ref",
    "dts-ref",
)
#: Our agents run as the reference code (its bugs included): the same policy on their side.
REFERENCE_VARIANTS = {"d-klucb-ref": "d-klucb", "dts-ref": "dts"}


def dump(path: str, problem: int, runs: int, horizon: int) -> None:
    import gymnasium as gym

    import bam_rl  # noqa: F401  (registers the environments)

    env = gym.make("bam_rl/PiecewiseBandit-v0", problem=problem, max_steps=horizon).unwrapped
    uniforms = []
    for run in range(runs):
        env.reset(seed=run)
        uniforms.append(env.noise_stream())  # the draws step() makes, in order
    breakpoints = np.array([b for b in env.breakpoints if b < horizon])
    np.savez(path, means=env.means_table(0, horizon), u=np.array(uniforms), breakpoints=breakpoints)


def _loop(act, learn, means: np.ndarray, u: np.ndarray) -> tuple[float, float]:
    best, clock, spent, regret = means.max(axis=1), time.perf_counter, 0.0, 0.0
    for t in range(means.shape[0]):
        start = clock()
        arm = act()
        spent += clock() - start
        reward = float(u[t] < means[t, arm])
        start = clock()
        learn(arm, reward)
        spent += clock() - start
        regret += best[t] - means[t, arm]
    return regret, spent


def _report(side: str, name: str, regrets: list[float], spent: float, steps: int) -> None:
    g = np.array(regrets)
    print(
        f"{side:7s} {name:18s} regret {g.mean():7.1f} ± {g.std():6.1f} "
        f"(se {g.std() / math.sqrt(g.size):5.1f})  {1e6 * spent / steps:8.2f} us/step",
        flush=True,
    )


def ours(path: str, names: list[str]) -> None:
    import gymnasium as gym

    from bam_rl.harness.registry import make_agent

    data = np.load(path)
    means, uniforms, breakpoints = data["means"], data["u"], data["breakpoints"]
    horizon, n_arms = means.shape
    env = gym.make(
        "bam_rl/PiecewiseBandit-v0", means=[[0.5] * n_arms], breakpoints=[], max_steps=horizon
    )
    tuning = {"horizon": horizon, "n_breakpoints": int(breakpoints.size)}
    kwargs = {n: tuning for n in ("glr-klucb", "glr-klucb-global", "cusum-klucb", "sw-klucb")}
    kwargs |= {"exp3s": tuning, "m-klucb": {"horizon": horizon}}
    kwargs |= {name: {"variant": "smpybandits-0.9.7"} for name in REFERENCE_VARIANTS}
    for name in names:
        registered = REFERENCE_VARIANTS.get(name, name)
        warm = make_agent(registered, env, seed=0, **kwargs.get(name, {}))
        for _ in range(50):  # compiled kernels load (or compile) on first use: not timed
            warm.observe(warm.act(0), 1.0, 0, False, False, {})
        regrets, spent = [], 0.0
        for run, u in enumerate(uniforms):
            # not ``run``: the environment's generator is seeded with it, and an agent drawing
            # the same uniforms as the rewards would be correlated with them
            agent = make_agent(registered, env, seed=1_000_003 + run, **kwargs.get(name, {}))

            def learn(arm: int, reward: float, agent=agent) -> None:
                agent.observe(arm, reward, 0, False, False, {})

            regret, seconds = _loop(lambda agent=agent: agent.act(0), learn, means, u)
            regrets.append(regret)
            spent += seconds
        _report("bam-rl", name, regrets, spent, uniforms.size)


def theirs(path: str, names: list[str]) -> None:  # pragma: no cover - needs SMPyBandits
    warnings.filterwarnings("ignore")
    with contextlib.redirect_stdout(io.StringIO()):
        from SMPyBandits.Policies import (
            CUSUM_IndexPolicy,
            DiscountedklUCB,
            DiscountedThompson,
            Exp3S,
            Monitored_IndexPolicy,
            SWklUCB,
            Thompson,
            klUCB,
        )
        from SMPyBandits.Policies.GLR_UCB import (
            BernoulliGLR_IndexPolicy_WithDeterministicExploration as GLR,
        )
        from SMPyBandits.Policies.klUCB_forGLR import klUCB_forGLR
        from SMPyBandits.Policies.Posterior import Beta, DiscountedBeta
    data = np.load(path)
    means, uniforms, breakpoints = data["means"], data["u"], data["breakpoints"]
    horizon, k = means.shape
    y = max(1, breakpoints.size)
    log_t = math.log(horizon)
    glr = {"policy": klUCB_forGLR, "use_localization": True}
    glr |= {"lazy_detect_change_only_x_steps": 10, "lazy_try_value_s_only_x_steps": 10}
    config = {
        "klucb": (klUCB, {}),
        "thompson": (Thompson, {"posterior": Beta}),
        "d-klucb": (DiscountedklUCB, {"gamma": 0.95}),
        "sw-klucb": (SWklUCB, {"tau": int(2 * math.sqrt(horizon * log_t / y))}),
        "dts": (DiscountedThompson, {"posterior": DiscountedBeta, "gamma": 0.95}),
        "exp3s": (Exp3S, {"horizon": horizon, "max_nb_random_events": y}),
        "m-klucb": (
            Monitored_IndexPolicy,
            {"policy": klUCB, "horizon": horizon, "w": k * math.ceil(horizon / 100), "delta": 0.1},
        ),
        "cusum-klucb": (
            CUSUM_IndexPolicy,
            {
                "horizon": horizon,
                "policy": klUCB,
                "max_nb_random_events": y,
                "lazy_detect_change_only_x_steps": 20,
                "epsilon": 0.1,
                "use_localization": True,
            },
        ),
        "glr-klucb": (
            GLR,
            glr
            | {
                "per_arm_restart": True,
                "delta": 1 / math.sqrt(k * y * horizon),
                "alpha0": 0.05 * math.sqrt(k * y * log_t / horizon),
            },
        ),
        "glr-klucb-global": (
            GLR,
            glr
            | {
                "per_arm_restart": False,
                "delta": 1 / math.sqrt(y * horizon),
                "alpha0": 0.05 * math.sqrt(y * log_t / horizon),
            },
        ),
    }
    for name in names:
        cls, kwargs = config[REFERENCE_VARIANTS.get(name, name)]
        regrets, spent = [], 0.0
        for run, u in enumerate(uniforms):
            np.random.seed(run)  # noqa: NPY002 - SMPyBandits draws from NumPy's global state
            with contextlib.redirect_stdout(io.StringIO()):
                policy = cls(k, **kwargs)
                policy.startGame()
            regret, seconds = _loop(policy.choice, policy.getReward, means, u)
            regrets.append(regret)
            spent += seconds
        _report("SMPyB.", name, regrets, spent, uniforms.size)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("side", choices=("dump", "ours", "theirs"))
    parser.add_argument("streams", help="the .npz file of streams")
    parser.add_argument("--problem", type=int, default=1)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--horizon", type=int, default=5000)
    parser.add_argument("--agents", default=",".join(NAMES), help="comma-separated names")
    args = parser.parse_args(argv)
    names = [n for n in args.agents.split(",") if n]
    unknown = sorted(set(names) - set(NAMES))
    if unknown:
        parser.error(f"--agents must be among {', '.join(NAMES)}; unknown: {', '.join(unknown)}")
    if args.side == "dump":
        dump(args.streams, args.problem, args.runs, args.horizon)
    elif args.side == "ours":
        ours(args.streams, names)
    else:
        theirs(args.streams, names)
    return 0


if __name__ == "__main__":
    sys.exit(main())
