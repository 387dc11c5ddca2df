"""klUCB and its change-point variants for Bernoulli bandits (beyond the paper).

The Bernoulli-KL upper confidence index shared by every klUCB variant (one compiled kernel,
:func:`bam_rl.kernels.bandits.klucb_indices`; :func:`klucb_index` is its NumPy reference), the
stationary klUCB, and the actively adaptive klUCBs of Besson, Kaufmann, Maillard & Seznec's
benchmark (arXiv:1902.01575): GLR-klUCB with local or global restarts, CUSUM-klUCB, M-klUCB and
the Oracle-Restart klUCB told the true breakpoints. Each is tuned from ``horizon`` (T) and
``n_breakpoints`` (Upsilon_T) as the benchmark's reference code ran it (SMPyBandits,
``configuration_nonstationary.py`` and ``Policies/{GLR_UCB,CUSUM_UCB,CD_UCB,Monitored_UCB}.py``);
where that code departs from its paper, the docstring says so and which one we follow.
Ties between equal indices are broken uniformly at random from :attr:`rng`, as SMPyBandits'
``IndexPolicy.choice`` does.

One module of about 760 lines, over the house's 700 on purpose: the five agents share the
index, the restart bookkeeping and the NumPy references of the compiled kernels
(:func:`klucb_index`, :func:`glr_statistic`, which the project keeps beside the code they
check), and their class names are written into saved state files
(``bam_rl.agents.klucb.GLRKLUCB``), so moving a class would need a legacy-name entry in
:mod:`bam_rl.serialization` for every file already saved.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from bam_rl.checks import as_float_array, check_int, check_memory, check_real, check_size

from .base import BanditAgent, Transition, check_observation

__all__ = [
    "CUSUMKLUCB",
    "GLRKLUCB",
    "KLUCB",
    "MonitoredKLUCB",
    "OracleRestartKLUCB",
    "bernoulli_kl",
    "glr_statistic",
    "klucb_index",
]

_EPS = 1e-15
_KERNELS: Any = None


def kernels() -> Any:
    """:mod:`bam_rl.kernels.bandits`, imported (and so compiled) on first use only."""
    global _KERNELS
    if _KERNELS is None:
        from bam_rl.kernels import bandits

        _KERNELS = bandits
    return _KERNELS


def bernoulli_kl(p: Any, q: Any) -> np.ndarray:
    """KL(Bernoulli(p) || Bernoulli(q)), elementwise, with p, q clipped to [1e-15, 1 - 1e-15]."""
    p = np.clip(np.asarray(p, dtype=np.float64), _EPS, 1.0 - _EPS)
    q = np.clip(np.asarray(q, dtype=np.float64), _EPS, 1.0 - _EPS)
    return np.maximum(p * np.log(p / q) + (1.0 - p) * np.log((1.0 - p) / (1.0 - q)), 0.0)


def klucb_index(means: Any, bounds: Any, iterations: int = 50) -> np.ndarray:
    """``sup {q in [mean, 1] : kl(mean, q) <= bound}``, elementwise, by vectorised bisection.

    50 halvings give the root to 2^-50 (about 1e-15). A bound of ``inf`` gives 1. The NumPy
    reference of the compiled :func:`bam_rl.kernels.bandits.klucb_indices`.
    """
    low = np.clip(np.asarray(means, dtype=np.float64), 0.0, 1.0).copy()
    bounds = np.asarray(bounds, dtype=np.float64)
    low, bounds = np.broadcast_arrays(low, bounds)
    low = low.copy()
    high = np.ones_like(low)
    means0 = low.copy()
    for _ in range(iterations):
        mid = 0.5 * (low + high)
        inside = bernoulli_kl(means0, mid) <= bounds
        low = np.where(inside, mid, low)
        high = np.where(inside, high, mid)
    return low


def glr_statistic(rewards: Any, step: int = 1) -> float:
    """Bernoulli GLR change statistic ``max_s [s kl(mu_1:s, mu) + (n-s) kl(mu_s+1:n, mu)]``.

    ``s`` runs over ``1..n-1`` (splits with ``(s - 1) % step == 0``, as SMPyBandits' 0-based
    ``s-1`` index is tested when divisible by ``step``); ``-inf`` for fewer than two rewards.
    The brute-force reference of :func:`bam_rl.kernels.bandits.glr_first_split`.
    """
    y = np.asarray(rewards, dtype=np.float64)
    n = y.size
    if n < 2:
        return -math.inf
    splits = np.arange(1, n)
    splits = splits[(splits - 1) % step == 0]
    cumulative = np.cumsum(y)
    before = cumulative[splits - 1] / splits
    after = (cumulative[-1] - cumulative[splits - 1]) / (n - splits)
    mean = cumulative[-1] / n
    glr = splits * bernoulli_kl(before, mean) + (n - splits) * bernoulli_kl(after, mean)
    return float(glr.max())


def positive_int(name: str, value: Any) -> int:
    """``value`` as an int >= 1, or ``ValueError`` naming ``name`` (bools and floats refused)."""
    return check_int(name, value)


def tuning(name: str, horizon: Any, n_breakpoints: Any) -> tuple[int, int]:
    """``(T, max(1, Upsilon_T))`` for an agent whose tuning needs both, or ``ValueError``."""
    if horizon is None:
        raise ValueError(f"horizon must be given to {name} (its tuning uses T)")
    if n_breakpoints is None:
        raise ValueError(f"n_breakpoints must be given to {name} (its tuning uses Upsilon_T)")
    upsilon = check_int("n_breakpoints", n_breakpoints, minimum=0)
    return check_int("horizon", horizon), max(1, upsilon)


def check_bool(name: str, value: Any) -> bool:
    """``value`` as a bool, or ``ValueError`` naming ``name`` (``1`` or ``"yes"`` refused)."""
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be a bool (True or False), got {value!r}")
    return bool(value)


def check_breakpoints(value: Any) -> np.ndarray:
    """``value`` as an int64 array, or ``ValueError``: a sequence (not a string) of ints >= 1,
    strictly increasing (the steps at which the means change)."""
    expected = "a sequence of ints >= 1 in increasing order (the true breakpoints)"
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple | np.ndarray):
        raise ValueError(f"breakpoints must be {expected}, got {value!r}")
    items = value.tolist() if isinstance(value, np.ndarray) and value.ndim == 1 else value
    if isinstance(value, np.ndarray) and value.ndim != 1:
        raise ValueError(f"breakpoints must be {expected}, got an array of shape {value.shape}")
    steps = []
    for item in items:
        if isinstance(item, bool | np.bool_) or not isinstance(item, int | np.integer) or item < 1:
            raise ValueError(f"breakpoints must be {expected}, got {value!r}")
        steps.append(int(item))
    if any(b <= a for a, b in itertools.pairwise(steps)):
        raise ValueError(f"breakpoints must be {expected}, got {value!r}")
    return np.array(steps, dtype=np.int64)


def check_array(agent: Any, name: str, shape: tuple[int, ...], finite: bool = True) -> None:
    """Raises ``ValueError`` unless ``agent.<name>`` is a float64 array of ``shape`` (finite
    unless ``finite`` is false): a restored file must not hand a compiled kernel a short array."""
    value = getattr(agent, name, None)
    if not isinstance(value, np.ndarray) or value.dtype != np.float64 or value.shape != shape:
        described = getattr(value, "shape", type(value).__name__)
        raise ValueError(f"{name} must be a float64 array of shape {shape}, got {described}")
    if finite and not np.isfinite(value).all():
        raise ValueError(f"{name} must be finite")


def check_range(agent: Any, name: str, low: float, high: float, whole: bool = False) -> None:
    """Raises ``ValueError`` unless every entry of the array ``agent.<name>`` lies in
    ``[low, high]`` (and is a whole number with ``whole``)."""
    value = getattr(agent, name)
    if value.size and not (value.min() >= low and value.max() <= high):
        raise ValueError(f"{name} must lie in [{low:g}, {high:g}]")
    if whole and (value != np.floor(value)).any():
        raise ValueError(f"{name} must hold whole numbers")


def check_variant(value: Any, accepted: tuple[str, ...]) -> str:
    """``value`` if it names one of ``accepted`` variants, else ``ValueError`` naming it."""
    if not isinstance(value, str) or value not in accepted:
        raise ValueError(f"variant must be one of {accepted}, got {value!r}")
    return str(value)


class BernoulliBanditAgent(BanditAgent):
    """A bandit agent for rewards in [0, 1] (Bernoulli): checks the range, then :meth:`_learn`.

    Its settings are checked once, by :meth:`_check_settings`, which the constructor and
    :meth:`_check_restored` both call: it checks (and normalises) the tuning arguments held as
    attributes and returns the values derived from them (:attr:`_DERIVED`), which the
    constructor sets and a restored agent must hold. A restored agent (``load``) also checks
    its clock and the per-arm arrays named in :attr:`_ARM_ARRAYS` (finite) and
    :attr:`_SCRATCH` (any float) before it is used.
    """

    _ARM_ARRAYS: tuple[str, ...] = ()
    _SCRATCH: tuple[str, ...] = ()
    #: bytes allocated per arm (the arrays of :attr:`_ARM_ARRAYS` and :attr:`_SCRATCH`)
    _BYTES_PER_ARM = 64

    def __init__(self, n_arms: int, seed: int | None = None):
        super().__init__(seed)
        self.n_arms = check_size("n_arms", n_arms, self._BYTES_PER_ARM)
        self.t = 0

    def _check_settings(self) -> dict[str, Any]:
        """Checks the settings (``ValueError`` naming the argument); returns derived values."""
        self.n_arms = check_size("n_arms", self.n_arms, self._BYTES_PER_ARM)
        return {}

    def _settle(self) -> None:
        """The constructor's last step on settings: check them and set what they give."""
        for name, value in self._check_settings().items():
            setattr(self, name, value)

    def _check_restored(self) -> None:
        stored = dict(vars(self))
        for name, value in self._check_settings().items():
            if name not in stored or type(stored[name]) is not type(value) or stored[name] != value:
                raise ValueError(
                    f"{name} must be {value!r} (what the agent's settings give), got "
                    f"{stored.get(name)!r}"
                )
        self.t = check_int("t", self.t, minimum=0)
        for name in self._ARM_ARRAYS:
            check_array(self, name, (self.n_arms,))
        for name in self._SCRATCH:
            check_array(self, name, (self.n_arms,), finite=False)
        super()._check_restored()

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        """Starts an episode: forgets everything learnt."""
        self.t = 0

    def _observe(self, step: Transition) -> None:
        if not 0.0 <= step.reward <= 1.0:
            raise ValueError(f"reward must lie in [0, 1] (Bernoulli bandit), got {step.reward!r}")
        self.t += 1
        self._learn(step.action, step.reward)

    def _learn(self, arm: int, reward: float) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _argmax(self, values: np.ndarray, best: int, ties: int) -> int:
        """``best``, or on ``ties`` equal maxima one of them uniformly from :attr:`rng`."""
        if ties == 1:
            return best
        return int(np.flatnonzero(values == values[best])[self.rng.integers(ties)])


class KLUCB(BernoulliBanditAgent):
    """klUCB (Garivier & Cappé 2011) for Bernoulli rewards: ``f(t) = log t`` (``c = 1``).

    Args:
        n_arms: Number of arms (>= 1).
        seed: Seed of :attr:`rng` (ties between equal indices only).
    """

    _ARM_ARRAYS: tuple[str, ...] = ("pulls", "sums")
    _SCRATCH: tuple[str, ...] = ("_index", "_log_t")

    def __init__(self, n_arms: int, seed: int | None = None):
        super().__init__(n_arms, seed)
        self.pulls = np.zeros(self.n_arms)
        self.sums = np.zeros(self.n_arms)
        self._index = np.zeros(self.n_arms)
        self._log_t = np.zeros(self.n_arms)

    def _check_restored(self) -> None:
        super()._check_restored()
        check_range(self, "pulls", 0.0, self.t)
        if self.pulls.sum() > self.t + 1e-6 * max(self.t, 1):
            raise ValueError(f"pulls must add up to at most t = {self.t}")
        check_range(self, "sums", 0.0, math.inf)

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        self.pulls[:] = 0.0
        self.sums[:] = 0.0

    def _log_times(self) -> np.ndarray:
        """``log t`` of every arm's exploration function (one t for all here)."""
        self._log_t.fill(math.log(max(self.t, 1)))
        return self._log_t

    def indices(self) -> np.ndarray:
        """klUCB index of every arm (``inf`` for an unpulled arm)."""
        kernels().klucb_indices(self.sums, self.pulls, self._log_times(), self._index)
        return self._index.copy()

    def _best_index(self) -> int:
        best, ties = kernels().klucb_indices(self.sums, self.pulls, self._log_times(), self._index)
        return best if ties == 1 else self._argmax(self._index, best, ties)

    def act(self, observation: Any) -> int:
        """The arm with the highest index (unpulled arms first; ties at random)."""
        check_observation(observation)
        return self._best_index()

    def _learn(self, arm: int, reward: float) -> None:
        self.pulls[arm] += 1.0
        self.sums[arm] += reward


class OracleRestartKLUCB(KLUCB):
    """klUCB that forgets an arm at the true breakpoints where that arm's mean changes.

    After SMPyBandits' ``OracleSequentiallyRestartPolicy``, not as its code ran: with ``means``
    (the (segments, arms) table) only the arms whose mean moves at a breakpoint are reset
    (without it every arm is, as the benchmark's ``reset_for_all_change=True``), and each arm's
    index uses ``log(t - tau_k)`` from its own restart (the reference keeps a global ``t``).

    ``variant="smpybandits-2019-01"`` runs the code of the published runs instead (SMPyBandits
    at cfa5059, 2019-01-24, with the benchmark's ``reset_for_all_change=True``; 0.9.7's
    ``detect_change`` returns a tuple, always true, and restarts on every pull): a breakpoint
    resets only the arm *pulled* at that step, keeping that pull's reward (the last of the old
    segment: the test ``t in changePoints`` runs after the count includes it), and every other
    arm keeps its history; ``log t`` is global.

    Raises:
        ValueError: If ``breakpoints`` is missing (``None``) or holds a non-positive step, or
            for an unknown ``variant``.
    """

    _ARM_ARRAYS = ("pulls", "sums", "restart_times")
    VARIANTS = ("paper", "smpybandits-2019-01")

    def __init__(
        self,
        n_arms: int,
        breakpoints: Any = None,
        means: Any = None,
        variant: str = "paper",
        seed: int | None = None,
    ):
        if breakpoints is None:
            raise ValueError("breakpoints must be given to oracle-restart-klucb (the true ones)")
        super().__init__(n_arms, seed)
        self.variant = variant
        self.breakpoints = breakpoints
        self._settle()
        if means is None:
            self.changes = np.ones((self.breakpoints.size, self.n_arms), dtype=bool)
        else:
            table = as_float_array("means", means)
            if table.shape != (self.breakpoints.size + 1, self.n_arms):
                raise ValueError(
                    f"means must have shape (len(breakpoints) + 1, n_arms), got {table.shape}"
                )
            self.changes = table[1:] != table[:-1]
        self.restart_times = np.zeros(self.n_arms)

    def _check_settings(self) -> dict[str, Any]:
        self.variant = check_variant(self.variant, self.VARIANTS)
        self.breakpoints = check_breakpoints(self.breakpoints)
        return super()._check_settings()

    def _check_restored(self) -> None:
        super()._check_restored()
        changes = getattr(self, "changes", None)
        shape = (self.breakpoints.size, self.n_arms)
        if not isinstance(changes, np.ndarray) or changes.dtype != bool or changes.shape != shape:
            raise ValueError(f"changes must be a bool array of shape {shape}")
        check_range(self, "restart_times", 0.0, self.t, whole=True)

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        self.restart_times[:] = 0.0

    def _log_times(self) -> np.ndarray:
        return np.log(np.maximum(self.t - self.restart_times, 1.0))

    def _learn(self, arm: int, reward: float) -> None:
        super()._learn(arm, reward)
        hit = np.flatnonzero(self.breakpoints == self.t)
        if not hit.size:
            return
        if self.variant == "paper":
            arms = self.changes[hit[0]]
            self.pulls[arms] = 0.0
            self.sums[arms] = 0.0
            self.restart_times[arms] = self.t
        else:  # the published runs' code: the pulled arm only, its last reward kept
            self.pulls[arm] = 1.0
            self.sums[arm] = reward


class _RestartingKLUCB(KLUCB):
    """klUCB whose arms restart when a change test fires (SMPyBandits' ``CD_IndexPolicy``).

    Keeps every arm's rewards since its restart (``history[k, :pulls[k]]``), tests arm ``k``
    after every ``check_every``-th of its pulls (:meth:`_test`, returning a localisation
    position or -1), and on an alarm keeps the arm's rewards from the position on plus the
    newest one (the reference's localisation) and, for global restarts, forgets every other
    arm.
    """

    _ARM_ARRAYS = ("pulls", "sums", "restart_times")
    local: bool = True
    check_every: int = 10

    horizon: int

    def _allocate(self) -> None:
        """The per-arm reward history (``n_arms x max(horizon, 16)``) and restart times."""
        self.history = np.zeros((self.n_arms, max(self.horizon, 16)))
        self.restart_times = np.zeros(self.n_arms)
        self.n_restarts = 0

    def _check_settings(self) -> dict[str, Any]:
        derived = super()._check_settings()
        check_memory(
            f"horizon = {self.horizon} (a reward history of n_arms = {self.n_arms} x horizon)",
            8.0 * self.n_arms * max(self.horizon, 16),
        )
        return derived

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        self.restart_times[:] = 0.0
        self.n_restarts = 0

    def _check_restored(self) -> None:
        super()._check_restored()
        history = getattr(self, "history", None)
        if not isinstance(history, np.ndarray) or history.dtype != np.float64 or history.ndim != 2:
            raise ValueError("history must be a 2-D float64 array")
        if history.shape[0] != self.n_arms or (self.pulls > history.shape[1]).any():
            raise ValueError(
                f"history must have {self.n_arms} rows and room for every arm's pulls, got "
                f"shape {history.shape}"
            )
        if (self.pulls != np.floor(self.pulls)).any():
            raise ValueError("pulls must be whole numbers (rewards since each arm's restart)")
        if not np.isfinite(history).all() or (history < 0).any() or (history > 1).any():
            raise ValueError("history must hold rewards in [0, 1]")
        check_range(self, "restart_times", 0.0, self.t, whole=True)
        self.n_restarts = check_int("n_restarts", self.n_restarts, minimum=0)

    def _test(self, arm: int, n: int) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def _learn(self, arm: int, reward: float) -> None:
        super()._learn(arm, reward)
        n = int(self.pulls[arm])
        if n > self.history.shape[1]:  # a run longer than the horizon: grow, never fail
            self.history = np.concatenate([self.history, np.zeros_like(self.history)], axis=1)
        self.history[arm, n - 1] = reward
        if n % self.check_every != 0:
            return
        position = self._test(arm, n)
        if position < 0:
            return
        self.n_restarts += 1
        if not self.local:
            self.pulls[:] = 0.0
            self.sums[:] = 0.0
            self.restart_times[:] = self.t
        # global restarts empty every arm's rewards first (SMPyBandits), so localisation keeps
        # only the newest reward there
        kept = np.append(self.history[arm, position:n] if self.local else [], reward)
        self.history[arm, : kept.size] = kept
        self.pulls[arm] = kept.size
        self.sums[arm] = kept.sum()
        self.restart_times[arm] = self.t - kept.size + 1


class GLRKLUCB(_RestartingKLUCB):
    """GLR-klUCB (Besson et al., Algorithm 1) with local (per-arm) or global restarts.

    As the benchmark ran it (``BernoulliGLR_IndexPolicy_WithDeterministicExploration`` with
    ``klUCB_forGLR``): ``delta = 1 / sqrt(Upsilon_T T)`` (times ``K`` inside the root for local
    restarts), forced exploration ``alpha = 0.05 sqrt(Upsilon_T log(T) / T)`` (times ``K``
    for local) of arm ``(t - tau) mod ceil(K / alpha)`` where ``tau`` is the latest restart,
    threshold ``beta(n, delta) = log(3 n^{3/2} / delta)``, a test after every 10th pull of an
    arm over every 10th split, localisation, and arm ``k``'s index with the exploration
    ``c log(t - tau_k)``, ``c = 3`` (``klUCB_forGLR`` inherits ``c = 3`` from
    ``klUCBloglog``; the paper's algorithm has ``c = 1``).

    Args:
        n_arms: Number of arms K.
        horizon: T, required (the tuning of ``delta`` and ``alpha`` needs it).
        n_breakpoints: Upsilon_T, required (0 counts as 1).
        local: Restart only the arm whose test fires (``True``) or all arms.
        check_every: Test an arm after every ``check_every``-th pull of it (Delta n).
        split_every: Try every ``split_every``-th split (Delta s).
        c: The exploration constant of the klUCB index (> 0; 3 as the benchmark ran it).
        seed: Seed of :attr:`rng` (ties only: the exploration is deterministic).

    Raises:
        ValueError: If ``horizon`` or ``n_breakpoints`` is missing or out of range.
    """

    delta: float
    alpha: float
    period: int

    def __init__(
        self,
        n_arms: int,
        horizon: int | None = None,
        n_breakpoints: int | None = None,
        local: bool = True,
        check_every: int = 10,
        split_every: int = 10,
        c: float = 3.0,
        seed: int | None = None,
    ):
        super().__init__(n_arms, seed)
        self.horizon, self.n_breakpoints = horizon, n_breakpoints  # type: ignore[assignment]
        self.local, self.c = local, c
        self.check_every, self.split_every = check_every, split_every
        self._settle()
        self._allocate()

    def _check_settings(self) -> dict[str, Any]:
        self.horizon, self.n_breakpoints = tuning("glr-klucb", self.horizon, self.n_breakpoints)
        self.c = check_real("c", self.c, lower=0.0, open_lower=True)
        self.local = check_bool("local", self.local)
        self.check_every = check_int("check_every", self.check_every)
        self.split_every = check_int("split_every", self.split_every)
        derived = super()._check_settings()
        horizon, upsilon = self.horizon, self.n_breakpoints
        factor = self.n_arms if self.local else 1
        alpha = min(1.0, 0.05 * math.sqrt(factor * upsilon * math.log(horizon) / horizon))
        derived["delta"] = 1.0 / math.sqrt(factor * upsilon * horizon)
        derived["alpha"] = alpha
        # alpha is 0 only for T = 1 (log T = 0): no forced exploration then, as the reference
        derived["period"] = 0 if alpha == 0 else max(math.ceil(self.n_arms / alpha), self.n_arms)
        return derived

    @property
    def last_restart(self) -> int:
        """The latest restart of any arm (the exploration's clock starts there)."""
        return int(self.restart_times.max())

    def threshold(self, n: int) -> float:
        """``beta(n, delta) = log(3 n^{3/2} / delta)``."""
        return -math.log(self.delta) + 1.5 * math.log(n) + math.log(3.0)

    def _log_times(self) -> np.ndarray:
        with np.errstate(divide="ignore"):  # log 0 = -inf right after a restart: index = mean
            return self.c * np.log(self.t - self.restart_times)

    def act(self, observation: Any) -> int:
        """Forced exploration of arm ``(t - tau) mod ceil(K / alpha)`` if below K, else klUCB."""
        check_observation(observation)
        if self.period:
            slot = (self.t - self.last_restart) % self.period
            if slot < self.n_arms:
                return int(slot)
        return self._best_index()

    def _test(self, arm: int, n: int) -> int:
        split = kernels().glr_first_split(self.history[arm], n, self.split_every, self.threshold(n))
        return int(split)


class CUSUMKLUCB(_RestartingKLUCB):
    """CUSUM-klUCB (Liu, Lee & Shroff, AAAI 2018) as the benchmark ran it.

    Per-arm restarts on a two-sided CUSUM alarm (``epsilon = 0.1``, ``M = 100`` warm-up
    observations, threshold ``h = log(T / Upsilon_T)``), tested after every 20th pull of an
    arm; uniform exploration with probability ``alpha = sqrt(log(T/Upsilon_T) / (T/Upsilon_T))``
    (SMPyBandits' simplified tuning); klUCB with ``t`` = the pulls since the arms' restarts.
    Two details follow the reference code, not the paper: its exploration draws an arm in
    ``[0, K-2]`` (``np.random.randint(0, K - 1)``, the last arm is never explored), and its
    localisation keeps the rewards from ``i + 2M + 2`` on after an alarm at observation ``i``.

    Raises:
        ValueError: If ``horizon`` or ``n_breakpoints`` is missing or out of range.
    """

    threshold: float
    alpha: float

    def __init__(
        self,
        n_arms: int,
        horizon: int | None = None,
        n_breakpoints: int | None = None,
        epsilon: float = 0.1,
        warmup: int = 100,
        check_every: int = 20,
        seed: int | None = None,
    ):
        super().__init__(n_arms, seed)
        self.horizon, self.n_breakpoints = horizon, n_breakpoints  # type: ignore[assignment]
        self.epsilon, self.warmup, self.check_every = epsilon, warmup, check_every
        self._settle()
        self._allocate()

    def _check_settings(self) -> dict[str, Any]:
        self.horizon, self.n_breakpoints = tuning("cusum-klucb", self.horizon, self.n_breakpoints)
        horizon, upsilon = self.horizon, self.n_breakpoints
        self.epsilon = check_real(
            "epsilon", self.epsilon, lower=0.0, upper=1.0, open_lower=True, open_upper=True
        )
        self.warmup = check_int("warmup", self.warmup)
        self.check_every = check_int("check_every", self.check_every)
        if horizon <= upsilon:
            raise ValueError(
                f"horizon must exceed n_breakpoints for cusum-klucb (h = log(T / Upsilon_T) > 0),"
                f" got horizon={horizon} and n_breakpoints={upsilon}"
            )
        derived = super()._check_settings()
        ratio = horizon / upsilon
        derived["threshold"] = math.log(ratio)
        derived["alpha"] = min(1.0, max(0.0, math.sqrt(math.log(ratio) / ratio)))
        return derived

    def _log_times(self) -> np.ndarray:
        self._log_t.fill(math.log(max(self.pulls.sum(), 1.0)))
        return self._log_t

    def act(self, observation: Any) -> int:
        """With probability alpha a random arm in ``[0, K-2]`` (see above), else klUCB."""
        check_observation(observation)
        if self.rng.random() < self.alpha:
            return int(self.rng.integers(0, max(self.n_arms - 1, 1)))
        return self._best_index()

    def _test(self, arm: int, n: int) -> int:
        alarm = int(
            kernels().cusum_first_alarm(
                self.history[arm], n, self.warmup, self.epsilon, self.threshold
            )
        )
        return alarm if alarm < 0 else alarm + 2 * self.warmup + 2


class MonitoredKLUCB(KLUCB):
    """M-klUCB (Cao, Wen, Kveton & Xie, AISTATS 2019) as the benchmark ran it.

    Each arm keeps its last ``w = K ceil(T / 100)`` rewards since the restart; when an arm's
    window is full and ``|sum(first half) - sum(second half)| > b`` with
    ``b = sqrt(w/2 log(2 K T^2))``, everything restarts (a new klUCB, ``t`` from 0). Forced
    exploration of arm ``(t - tau) mod ceil(K / gamma)`` with
    ``gamma = sqrt(M K (2b + 3 sqrt(w)) / (2T))``, ``M = 1`` (the benchmark did not pass the
    number of breakpoints; ``n_breakpoints`` is accepted and unused). Two departures from
    SMPyBandits 0.9.7, whose ``detect_change`` returns a tuple that is always true (so it
    restarts whenever a window fills): the test here is the paper's, and after a restart the
    exploration clock counts from the restart (0.9.7 mixes its reset ``t`` with the old
    ``tau``, a phase shift).

    ``window`` sets ``w`` by hand (``b`` and ``gamma`` follow from it): the configuration of
    the published runs' code (SMPyBandits at cfa5059, 2019-01-24, the Oracle-Restart's, see
    :class:`OracleRestartKLUCB`) overrode the formula with ``WINDOW_SIZE = 150  # FIXME
    manually set`` for every problem and horizon (the override went four days later, in
    489c5e6); at T = 5000 with 3 arms the formula gives 150 too. ``per_arm_restart=True``
    keeps the other arms' windows at a detection (the klUCB still restarts in full), as that
    configuration passed until 2019-01-31 (``PER_ARM_RESTART = [True]``, SMPyBandits'
    ``_per_arm_restart``); the default clears every window, as the paper's M-UCB restarts.

    Raises:
        ValueError: If ``horizon`` is missing or not a positive int, ``window`` is not an int
            >= 2 or ``per_arm_restart`` not a bool.
    """

    b: float
    gamma: float
    period: int

    def __init__(
        self,
        n_arms: int,
        horizon: int | None = None,
        n_breakpoints: int | None = None,
        seed: int | None = None,
        window: int | None = None,
        per_arm_restart: bool = False,
    ):
        if horizon is None:
            raise ValueError("horizon must be given to m-klucb (its window and b use T)")
        if n_breakpoints is not None:  # accepted and unused (see above), but an int
            check_int("n_breakpoints", n_breakpoints, minimum=0)
        super().__init__(n_arms, seed)
        self.per_arm_restart = per_arm_restart
        self.horizon = horizon
        if window is not None:
            window = check_int("window", window)
            if window < 2:
                raise ValueError(f"window must be an int >= 2, got {window!r}")
            self.window = window
        else:
            self.horizon = check_int("horizon", horizon)
            self.window = self.n_arms * math.ceil(self.horizon / 100)
            check_memory(
                f"horizon = {self.horizon} (m-klucb's windows: n_arms = {self.n_arms} x "
                f"window = n_arms x ceil(horizon / 100))",
                8.0 * self.n_arms * self.window,
            )
        self._settle()
        self.recent = np.zeros((self.n_arms, self.window))
        self.filled = np.zeros(self.n_arms, dtype=np.int64)
        self.last_restart = 0

    def _check_settings(self) -> dict[str, Any]:
        self.per_arm_restart = check_bool("per_arm_restart", self.per_arm_restart)
        self.horizon = check_int("horizon", self.horizon)
        self.window = check_int("window", self.window)  # the formula gives 1 for 1 arm, T <= 100
        derived = super()._check_settings()
        n_arms, horizon, window = self.n_arms, self.horizon, self.window
        check_memory(
            f"window = {window} (m-klucb's windows: n_arms = {n_arms} x window)",
            8.0 * n_arms * window,
        )
        b = math.sqrt(window / 2 * math.log(2 * n_arms * horizon**2))
        gamma = math.sqrt(n_arms * (2 * b + 3 * math.sqrt(window)) / (2 * horizon))
        # the paper's formula, or where it exceeds 1 SMPyBandits' 0.01 K, clipped to 1 as
        # Monitored_UCB.py does (unclipped, K > 100 arms left arms 100 and up unexplored)
        gamma = gamma if gamma <= 1.0 else min(1.0, 0.01 * n_arms)
        derived.update(b=b, gamma=gamma, period=math.ceil(n_arms / gamma))
        return derived

    def _check_restored(self) -> None:
        super()._check_restored()
        check_array(self, "recent", (self.n_arms, self.window))
        if (self.recent < 0).any() or (self.recent > 1).any():
            raise ValueError("recent must hold rewards in [0, 1]")
        filled = self.filled
        if (
            not isinstance(filled, np.ndarray)
            or filled.dtype != np.int64
            or filled.shape != (self.n_arms,)
        ):
            raise ValueError(f"filled must be an int64 array of shape ({self.n_arms},)")
        if filled.size and (filled.min() < 0 or filled.max() > self.window):
            raise ValueError(f"filled must lie in [0, window = {self.window}]")
        self.last_restart = check_int("last_restart", self.last_restart, minimum=0)
        if self.last_restart > self.t:
            raise ValueError(f"last_restart must be at most t = {self.t}")

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        self.filled[:] = 0
        self.last_restart = 0

    def _log_times(self) -> np.ndarray:
        self._log_t.fill(math.log(max(self.t - self.last_restart, 1)))
        return self._log_t

    def act(self, observation: Any) -> int:
        """Forced exploration of arm ``(t - tau) mod ceil(K / gamma)`` if below K, else klUCB."""
        check_observation(observation)
        slot = (self.t - self.last_restart) % self.period
        if slot < self.n_arms:
            return int(slot)
        return self._best_index()

    def _learn(self, arm: int, reward: float) -> None:
        super()._learn(arm, reward)
        w = self.window
        if self.filled[arm] < w:
            self.recent[arm, self.filled[arm]] = reward
            self.filled[arm] += 1
        else:
            self.recent[arm, :-1] = self.recent[arm, 1:]
            self.recent[arm, -1] = reward
        if self.filled[arm] < w:
            return
        half = w // 2
        if abs(self.recent[arm, :half].sum() - self.recent[arm, half:].sum()) <= self.b:
            return
        self.last_restart = self.t
        self.pulls[:] = 0.0
        self.sums[:] = 0.0
        if not self.per_arm_restart:
            self.filled[:] = 0
        self.recent[arm, 0] = reward
        self.filled[arm] = 1
