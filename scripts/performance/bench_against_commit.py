"""Serves docs/performance.md: this checkout's per-update speed against another folder's code.

Times the same updates — BOCD's per-observation step and compiled batch (with fast-bocpd's
update loop and ``batch_update`` in the same processes), BOCD on Bernoulli data, the BOCD,
recursive, forgetting, power-prior and BAM rules, plain Thompson sampling and ``thompson-bam``
— with the code of this checkout and with the code under each given folder (an old commit's
tree, laid outside the checkout)::

    mkdir ../old034 && git archive 034ed49 | tar -x -C ../old034
    python scripts/performance/bench_against_commit.py ../old034 [more folders] [--rounds 5]

Every workload runs once per folder and round, each in a fresh subprocess whose
``PYTHONPATH`` is that folder (the runs of one workload are interleaved: folder by folder,
the order turned round every round). A subprocess reports CPU seconds per update, the best of
its ``--repeats`` (on a loaded machine CPU time moves least). Printed per workload: the
microseconds per update of each folder (median over the rounds) and ``ratio = old / this``
(> 1: this checkout is faster; median and range of the per-round ratios), BOCD's ratios to
fast-bocpd (peer / ours) and ``thompson-bam`` over plain Thompson sampling, with the load
average at the start and the end. ``--only`` picks workloads, ``--json PATH`` writes the
rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

#: Workload -> updates timed per repeat (the argument ``--scale`` multiplies them).
STEPS = {
    "bocd-step": 20_000,
    "bocd-batch": 20_000,
    "bocd-bernoulli": 20_000,
    "bocd-rule": 20_000,
    "recursive": 20_000,
    "forgetting": 20_000,
    "power-prior": 20_000,
    "bam": 2_000,
    "thompson": 20_000,
    "thompson-bam": 5_000,
}
#: The workloads that time fast-bocpd beside ours (its update loop, its batch_update).
PEERED = {"bocd-step": "update", "bocd-batch": "batch"}


# ---------------------------------------------------------------- in the subprocess
def _normal_stream(steps: int, seed: int = 0) -> Any:
    """Normal data whose mean jumps every Geometric(1/100) steps (as ``bench.bocd``)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = np.empty(steps)
    t = 0
    while t < steps:
        length = int(rng.geometric(0.01))
        out[t : t + length] = rng.normal(rng.normal(0.0, 3.0), rng.uniform(0.5, 2.0), 1)[0]
        t += length
    return out + rng.normal(0.0, 1.0, steps)


def _best(run: Any, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


def _fast_bocpd(data: Any, mode: str) -> Any:
    """A callable running fast-bocpd over ``data`` (our prior, hazard, cap), or ``None``."""
    try:
        from fast_bocpd import BOCPD, ConstantHazard, GaussianNIG
    except ImportError:
        return None
    values = data.tolist()

    def run() -> None:
        detector = BOCPD(GaussianNIG(0.0, 1.0, 1.0, 1.0), ConstantHazard(100), max_run_length=200)
        if mode == "batch":
            detector.batch_update(data)
            return
        update = detector.update
        for x in values:
            update(x)

    return run


def _bocd(name: str, steps: int) -> tuple[Any, Any]:
    """The timed callable of a BOCD workload and its fast-bocpd peer (or ``None``)."""
    from bam_rl.bocd import ChangepointDetector
    from bam_rl.families import BetaBinomial, NormalGamma

    if name == "bocd-bernoulli":  # the tracking stream's kind of data, default pruning and cap
        import numpy as np

        model: Any = BetaBinomial(1.0, 1.0)
        flips = (np.random.default_rng(0).random(steps) < 0.3).astype(float)
        stats = model.stats(successes=flips, trials=np.ones(steps), axis=())
        options: dict[str, Any] = {"hazard": 0.01}
    else:
        data = _normal_stream(steps)
        model = NormalGamma(0.0, 1.0, 1.0, 1.0)
        stats = model.stats(data, axis=())
        options = {"hazard": 0.01, "prune_threshold": 0.0, "max_run_length": 200}
    items = [stats[i] for i in range(steps)]
    ChangepointDetector(model, **options).run(stats[:300])  # compiled code, outside the timing
    warm = ChangepointDetector(model, **options)
    for s in items[:50]:  # and the per-step kernel's
        warm.update(s)
    if name == "bocd-batch":
        return (lambda: ChangepointDetector(model, **options).run(stats)), _fast_bocpd(
            data, "batch"
        )

    def loop() -> None:
        update = ChangepointDetector(model, **options).update
        for s in items:
            update(s)

    return loop, (_fast_bocpd(data, "update") if name == "bocd-step" else None)


def _rule(name: str, steps: int) -> Any:
    """Timed callable: the bandit arm's rule (Normal, known noise) absorbing ``steps`` data."""
    import numpy as np

    from bam_rl import beliefs
    from bam_rl.families import NormalKnownVariance

    model = NormalKnownVariance(0.5, 0.25, 0.0625)
    rewards = np.random.default_rng(0).normal(0.5, 0.25, steps)
    items = [model.stats(float(y)) for y in rewards]
    make = {
        "bocd-rule": lambda: beliefs.BOCD(model, 0.016),
        "recursive": lambda: beliefs.RecursiveBayes(model),
        "forgetting": lambda: beliefs.ExponentialForgetting(model, 0.8),
        "power-prior": lambda: beliefs.PowerPrior(model, 0.5),
        "bam": lambda: beliefs.BAM(model),
    }[name]
    for s in items[:50]:  # compiled code (BOCD, the readout), outside the timing
        make().update(s)

    def loop() -> None:
        update = make().update
        for s in items:
            update(s)

    return loop


def _thompson(name: str, steps: int) -> Any:
    """Timed callable: Thompson sampling on the paper's 10-arm switching bandit (act, step,
    observe), recursive Bayes per arm or BAM per arm (``lam`` 0, as ``thompson-bam``)."""
    import gymnasium as gym

    import bam_rl  # noqa: F401  (registers the environments)
    from bam_rl.agents.bandits import ThompsonSampling

    rule, options = ("recursive", {}) if name == "thompson" else ("bam", {"lam": 0.0})

    def loop(n: int = steps) -> None:
        env = gym.make("bam_rl/SwitchingBandit-v0", max_steps=n)
        agent = ThompsonSampling.gaussian(10, rule, seed=0, **options)
        observation, info = env.reset(seed=0)
        agent.reset(observation, info)
        for _ in range(n):
            action = agent.act(observation)
            following, reward, terminated, truncated, info = env.step(action)
            agent.observe(action, reward, following, terminated, truncated, info)
            observation = following

    loop(min(steps, 200))  # imports and compiled code, outside the timing
    return loop


def worker(name: str, steps: int, repeats: int) -> dict[str, Any]:
    """One workload with the ``bam_rl`` on ``sys.path``: seconds per update, ours and peer."""
    import bam_rl

    peer = None
    if name.startswith("bocd") and name != "bocd-rule":
        run, peer = _bocd(name, steps)
    elif name.startswith("thompson"):
        run = _thompson(name, steps)
    else:
        run = _rule(name, steps)
    ours, theirs = float("inf"), float("inf")
    for _ in range(repeats):  # ours and the peer interleaved
        ours = min(ours, _best(run, 1))
        if peer is not None:
            theirs = min(theirs, _best(peer, 1))
    return {
        "code": str(Path(bam_rl.__file__).parents[1]),
        "ours": ours / steps,
        "peer": theirs / steps if peer is not None else None,
    }


# ---------------------------------------------------------------- the driver
def _run(name: str, folder: Path, steps: int, repeats: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(folder), "OPENBLAS_NUM_THREADS": "1"}
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", name]
    command += ["--steps", str(steps), "--repeats", str(repeats)]
    # from scripts/ (no bam_rl there): the folder on PYTHONPATH is the one imported
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=ROOT / "scripts")
    if done.returncode:
        raise SystemExit(f"{name} under {folder} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if Path(result["code"]).resolve() != folder.resolve():
        raise SystemExit(f"{name}: imported bam_rl from {result['code']}, not {folder}")
    return result


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:9.2f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("folders", nargs="*", type=Path, help="old code trees to compare")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the steps")
    parser.add_argument("--only", nargs="+", choices=sorted(STEPS), default=sorted(STEPS))
    parser.add_argument("--json", type=Path, help="write every round's results here")
    parser.add_argument("--worker", choices=sorted(STEPS), help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.steps, args.repeats)))
        return
    folders = [ROOT, *(folder.resolve() for folder in args.folders)]
    load_start = os.getloadavg()
    print(
        f"# {len(folders) - 1} folder(s) against {ROOT}; {args.rounds} rounds, best of "
        f"{args.repeats}; load average {load_start[0]:.2f} {load_start[1]:.2f} "
        f"{load_start[2]:.2f}; CPU µs per update"
    )
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for name in args.only:
        steps = max(1, round(STEPS[name] * args.scale))
        runs: dict[str, list[dict[str, Any]]] = {str(f): [] for f in folders}
        for k in range(args.rounds):
            order = folders if k % 2 == 0 else folders[::-1]
            for folder in order:
                runs[str(folder)].append(_run(name, folder, steps, args.repeats))
        results[name] = runs
        _report(name, folders, runs)
    if "thompson" in results and "thompson-bam" in results:
        for folder in folders:
            bam = [r["ours"] for r in results["thompson-bam"][str(folder)]]
            plain = [r["ours"] for r in results["thompson"][str(folder)]]
            ratio = statistics.median(bam) / statistics.median(plain)
            print(f"thompson-bam / thompson per step, {folder}: {ratio:.2f}×")
    load_end = os.getloadavg()
    print(f"# load average at the end {load_end[0]:.2f} {load_end[1]:.2f} {load_end[2]:.2f}")
    if args.json:
        args.json.write_text(
            json.dumps({"load": [load_start, load_end], "results": results}, indent=1)
        )


def _report(name: str, folders: list[Path], runs: dict[str, list[dict[str, Any]]]) -> None:
    mine = [r["ours"] for r in runs[str(folders[0])]]
    line = f"{name:<15} this {_us(statistics.median(mine))}"
    for folder in folders[1:]:
        theirs = [r["ours"] for r in runs[str(folder)]]
        ratios = [b / a for a, b in zip(mine, theirs, strict=True)]
        line += (
            f" | {folder.name} {_us(statistics.median(theirs))} ratio "
            f"{statistics.median(ratios):.2f}× ({min(ratios):.2f}–{max(ratios):.2f})"
        )
    print(line)
    if name in PEERED:
        for folder in folders:
            pairs = [(r["ours"], r["peer"]) for r in runs[str(folder)] if r["peer"] is not None]
            if not pairs:
                print("    fast-bocpd not installed (pip install fast-bocpd==1.0.0)")
                break
            ratios = [peer / ours for ours, peer in pairs]
            print(
                f"    vs fast-bocpd {PEERED[name]} ({_us(statistics.median(p for _, p in pairs))}"
                f" µs), {folder.name}: {statistics.median(ratios):.2f}× "
                f"({min(ratios):.2f}–{max(ratios):.2f})"
            )


if __name__ == "__main__":
    main()
