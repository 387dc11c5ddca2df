"""Non-stationary Gymnasium environments (registered on import).

Importing :mod:`envs` (which ``import bam_rl`` does) registers these ids with *string* entry
points, so an environment module, and MuJoCo for the cart-pole, is imported only when the
environment is made:

==================================  ===========================================================
id                                  environment
==================================  ===========================================================
``bam_rl/BinomialStream-v0``        sinusoidal Binomial stream (paper §4.1)
``bam_rl/SwitchingBandit-v0``       10 arms switching between a high and a low value (§4.3)
``bam_rl/SwitchingBandit50-v0``     the same with 50 arms
``bam_rl/PiecewiseBandit-v0``       piecewise-stationary bandit from a means table
``bam_rl/GravityCartPole-v0``       MuJoCo cart-pole swing-up, constant gravity 9.81
``bam_rl/GravityCartPoleEpisodic-v0``   the paper's episodic schedule, changes announced (§4.2)
``bam_rl/GravityCartPoleContinual-v0``  60 trials, 3 unannounced gravity changes (§4.2)
==================================  ===========================================================

Of ours, this package imports only the pure leaf modules ``bam_rl.checks`` (the argument
checks and the memory budget) and ``bam_rl._io``; never the rest of the core or ``agents``.
"""

from __future__ import annotations

from typing import Any

import gymnasium

__all__ = [
    "CONTINUAL_SCHEDULE",
    "ENV_IDS",
    "EPISODIC_SCHEDULE",
    "NONSTATIONARY_ID",
    "RECURRING_IDS",
    "RECURRING_NAMES",
    "register_envs",
]

#: Gravity per trial of the paper's episodic experiment: Earth, Neptune, Mars, Neptune, Mars,
#: Earth, 15 trials each (90 trials).
EPISODIC_SCHEDULE: tuple[float, ...] = tuple(
    g for g in (9.81, 11.15, 3.72, 11.15, 3.72, 9.81) for _ in range(15)
)

#: Gravity per trial of the continual experiment: 60 trials with 3 changes, Earth, Mars, Earth,
#: Neptune, 15 trials each (revisits Earth, as the paper's continual figure revisits a planet).
CONTINUAL_SCHEDULE: tuple[float, ...] = tuple(
    g for g in (9.81, 3.72, 9.81, 11.15) for _ in range(15)
)

_REGISTRATIONS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("bam_rl/BinomialStream-v0", f"{__name__}.binomial_stream:BinomialStreamEnv", {}),
    (
        "bam_rl/SwitchingBandit-v0",
        f"{__name__}.switching_bandit:SwitchingBanditEnv",
        {"n_arms": 10},
    ),
    (
        "bam_rl/SwitchingBandit50-v0",
        f"{__name__}.switching_bandit:SwitchingBanditEnv",
        {"n_arms": 50},
    ),
    ("bam_rl/PiecewiseBandit-v0", f"{__name__}.piecewise_bandit:PiecewiseBanditEnv", {}),
    ("bam_rl/GravityCartPole-v0", f"{__name__}.gravity_cartpole:GravityCartPoleEnv", {}),
    (
        "bam_rl/GravityCartPoleEpisodic-v0",
        f"{__name__}.gravity_cartpole:GravityCartPoleEnv",
        {
            "gravity_schedule": EPISODIC_SCHEDULE,
            "schedule_mode": "hold",
            "announce_changes": True,
        },
    ),
    (
        "bam_rl/GravityCartPoleContinual-v0",
        f"{__name__}.gravity_cartpole:GravityCartPoleEnv",
        {
            "gravity_schedule": CONTINUAL_SCHEDULE,
            "schedule_mode": "hold",
            "announce_changes": False,
        },
    ),
)

#: All environment ids registered by this package.
ENV_IDS: tuple[str, ...] = tuple(env_id for env_id, _, _ in _REGISTRATIONS)


#: Any Gymnasium environment made non-stationary (``bam_rl.wrappers.NonStationary``; kwargs
#: ``env``, ``changes``, ``notify``, ``observe_context``). Registered by name only: this
#: package imports no wrapper (of ours, only the leaf modules), and it is not in
#: :data:`ENV_IDS` (it needs kwargs).
NONSTATIONARY_ID = "bam_rl/NonStationary-v0"


#: The recurring-worlds suite (issue 42): ``bam_rl/Recurring<Name>-v0`` (changes announced) and
#: ``bam_rl/Recurring<Name>Continual-v0`` (not announced), made by one entry point per id,
#: ``bam_rl.wrappers.recurring.make_<Name>[Continual]`` (string entry points: no wrapper, no
#: MuJoCo is imported here). Not in :data:`ENV_IDS`; the names must match
#: ``recurring.SUITE`` (a test).
RECURRING_NAMES: tuple[str, ...] = (
    "CartPoleSwingUp",
    "Pendulum",
    "InvertedPendulum",
    "InvertedDoublePendulum",
    "Reacher",
    "MountainCar",
    "CartPole",
)
#: Every recurring-world id, episodic then continual per name.
RECURRING_IDS: tuple[str, ...] = tuple(
    f"bam_rl/Recurring{name}{suffix}-v0" for name in RECURRING_NAMES for suffix in ("", "Continual")
)


def register_envs() -> None:
    """Register every environment of this package with Gymnasium.

    Idempotent: ids already present in :data:`gymnasium.registry` are left untouched, so
    re-importing (or reloading) the package never triggers Gymnasium's re-registration warning.
    Episode length is handled inside each environment (``max_steps`` → ``truncated``), so no
    ``max_episode_steps`` (``TimeLimit`` wrapper) is registered.
    """
    for env_id, entry_point, kwargs in _REGISTRATIONS:
        if env_id in gymnasium.registry:
            continue
        gymnasium.register(id=env_id, entry_point=entry_point, kwargs=dict(kwargs))
    if NONSTATIONARY_ID not in gymnasium.registry:
        gymnasium.register(
            id=NONSTATIONARY_ID, entry_point="bam_rl.wrappers.nonstationary:make_nonstationary"
        )
    for name in RECURRING_NAMES:
        for suffix in ("", "Continual"):
            env_id = f"bam_rl/Recurring{name}{suffix}-v0"
            if env_id not in gymnasium.registry:
                # one entry point per id (no kwargs a caller could override to switch the
                # environment or the variant): recurring.entry_point_name(name, continual)
                gymnasium.register(
                    id=env_id, entry_point=f"bam_rl.wrappers.recurring:make_{name}{suffix}"
                )


register_envs()
