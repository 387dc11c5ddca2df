"""Recurring worlds (issue 42): seven environments whose world comes back, A → B → A → C → B.

Each environment of :data:`SUITE` is registered as ``bam_rl/Recurring<Name>-v0`` (episodic:
every change announced, :class:`~bam_rl.wrappers.NonStationary`'s ``notify="value"``) and
``bam_rl/Recurring<Name>Continual-v0`` (the same worlds, nothing announced: ``notify="none"``;
the ground truth stays ``env.get_wrapper_attr("context")``). One episode is one *trial*; the
world holds for ``trials_per_world`` trials, then moves on along :data:`ORDER`::

    import gymnasium as gym
    import bam_rl  # registers the ids

    env = gym.make("bam_rl/RecurringPendulum-v0")      # g: 10 → 3.72 → 10 → 15 → 3.72
    env.reset(seed=0)
    env.get_wrapper_attr("context")                     # {'g': 10.0}

``gym.make(id, trials_per_world=k)`` shortens or lengthens every world (tests use 1–2),
``trial_steps=n`` every trial (it sets the inner limit; Gymnasium's own ``max_episode_steps=n``
only adds an outer ``TimeLimit``, which can shorten a trial but never lengthen it). The inner
limit is the wrapped environment's own argument (``max_steps`` of bam-rl's cart-pole,
``max_episode_steps`` of ``gymnasium.make`` for the others): passing it as well is accepted
when it agrees with ``trial_steps`` and a ``ValueError`` naming both otherwise; passed alone,
it is honoured (it replaces the suite's steps per trial). Each id has
its own entry point (:func:`make_recurring` with the id's name and variant fixed), so keyword
arguments cannot switch the environment or the variant: ``name`` and ``continual`` are refused.

The planning reward and planner options of each id are its row of the settings table
(:data:`bam_rl.agents.settings.ENV_SETTINGS`, docs/env_settings.md), which every door reads
(``make_agent``, ``bam-rl run``, the benchmark); the ids carry no copy of them (issue 51), and
this layer imports no agent.

This module imports gymnasium and, of ours, the wrapper and :mod:`bam_rl.schedules` only; the
environment (and MuJoCo) loads when an id is made.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium

from bam_rl.checks import check_int
from bam_rl.schedules import piecewise

from .nonstationary import NonStationary

__all__ = [
    "ORDER",
    "SUITE",
    "Recurring",
    "entry_point_name",
    "make_recurring",
    "recurring_id",
    "world_schedule",
]

#: The order the worlds are visited in: A, B, A (a revisit), C, B (a revisit).
ORDER = ("A", "B", "A", "C", "B")


@dataclass(frozen=True)
class Recurring:
    """One environment of the suite.

    Attributes:
        name: The id's ``<Name>``.
        env_id: The Gymnasium id wrapped.
        parameter: The :class:`~bam_rl.wrappers.NonStationary` parameter that changes.
        worlds: Its values in worlds A, B and C.
        trials_per_world: Trials (episodes) each world lasts by default.
        max_episode_steps: Steps per trial (``None``: the environment's own limit).
        description: One line for the docs' table.
        env_kwargs: Keyword arguments of ``gymnasium.make(env_id, ...)``.

    The planning reward and planner options are the id's row of the settings table
    (:mod:`bam_rl.agents.settings`), not fields here.
    """

    name: str
    env_id: str
    parameter: str
    worlds: tuple[float, float, float]
    trials_per_world: int
    max_episode_steps: int | None
    description: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)

    def values(self, trials_per_world: int | None = None) -> tuple[float, ...]:
        """The parameter's value in every trial of the schedule, in order."""
        n = self.trials_per_world if trials_per_world is None else trials_per_world
        by_name = dict(zip("ABC", self.worlds, strict=True))
        return tuple(by_name[world] for world in ORDER for _ in range(n))


#: The suite, key → :class:`Recurring` (the key is the experiments' ``env`` column).
SUITE: dict[str, Recurring] = {
    spec.name: spec
    for spec in (
        Recurring(
            "CartPoleSwingUp",
            "bam_rl/GravityCartPole-v0",
            "gravity",
            (9.81, 3.72, 11.15),
            5,
            None,  # the environment's 200-step trials
            "bam-rl's MuJoCo cart-pole swing-up (the paper's task), gravity Earth/Mars/Neptune",
        ),
        Recurring(
            "Pendulum",
            "Pendulum-v1",
            "g",
            (10.0, 3.72, 15.0),
            3,
            None,  # 200 steps
            "Pendulum-v1 swing-up, gravity g",
        ),
        Recurring(
            "InvertedPendulum",
            "InvertedPendulum-v5",
            "gravity",
            (9.81, 3.72, 20.0),
            4,
            300,
            "InvertedPendulum-v5 balance (300-step trials), gravity",
        ),
        Recurring(
            "InvertedDoublePendulum",
            "InvertedDoublePendulum-v5",
            "mass:pole2",
            (4.199, 1.0, 10.0),
            4,
            300,
            "InvertedDoublePendulum-v5 balance (300-step trials), mass of the upper pole (kg)",
        ),
        Recurring(
            "Reacher",
            "Reacher-v5",
            "mass:body1",
            (0.036, 0.3, 0.012),
            4,
            None,  # 50 steps
            "Reacher-v5, mass of the second link (kg)",
        ),
        Recurring(
            "MountainCar",
            "MountainCarContinuous-v0",
            "power",
            (0.0015, 0.0009, 0.003),
            3,
            None,  # 999 steps (ends at the goal)
            "MountainCarContinuous-v0, engine power",
        ),
        Recurring(
            "CartPole",
            "CartPole-v1",
            "masspole",
            (0.1, 1.0, 0.5),
            4,
            None,  # 500 steps
            "CartPole-v1 (discrete), pole mass (kg; NS-Gym's problem changes it 0.1 → 1.0)",
        ),
    )
}


def recurring_id(name: str, continual: bool = False) -> str:
    """The registered id of suite environment ``name`` (episodic, or the continual variant)."""
    return f"bam_rl/Recurring{name}{'Continual' if continual else ''}-v0"


def world_schedule(spec: Recurring, trials_per_world: int | None = None) -> Any:
    """The episode-level schedule of ``spec``: A, B, A, C, B, each ``trials_per_world`` trials
    (the last world holds after the schedule's end)."""
    n = spec.trials_per_world if trials_per_world is None else trials_per_world
    by_name = dict(zip("ABC", spec.worlds, strict=True))
    return piecewise({i * n: by_name[world] for i, world in enumerate(ORDER)})


def make_recurring(
    name: str,
    continual: bool = False,
    trials_per_world: int | None = None,
    trial_steps: int | None = None,
    **env_kwargs: Any,
) -> NonStationary:
    """Suite environment ``name`` (what ``gym.make("bam_rl/Recurring<Name>-v0")`` returns).

    Args:
        name: A key of :data:`SUITE`.
        continual: Announce nothing (``notify="none"``) instead of every change (``"value"``).
        trials_per_world: Trials per world (default: the suite's).
        trial_steps: Steps per trial, the wrapped environment's own limit (default: the
            suite's, else the environment's); it lengthens or shortens a trial.
        **env_kwargs: Passed to ``gymnasium.make`` of the wrapped environment. Its own limit
            (``max_steps`` for bam-rl's cart-pole, ``max_episode_steps`` for the others) names
            the same thing as ``trial_steps``: given alone it sets the steps per trial, given
            with ``trial_steps`` it must agree.

    Returns:
        The :class:`~bam_rl.wrappers.NonStationary` environment (its planning settings are
        its id's row of the settings table).

    Raises:
        ValueError: On an unknown name or a bad count, or when ``trial_steps`` and the
            environment's own limit are both given and disagree.
    """
    if name not in SUITE:
        raise ValueError(f"name must be one of {sorted(SUITE)}, got {name!r}")
    spec = SUITE[name]
    if trials_per_world is not None:
        trials_per_world = check_int("trials_per_world", trials_per_world, minimum=1)
    limit = "max_steps" if spec.env_id.startswith("bam_rl/") else "max_episode_steps"
    own = env_kwargs.get(limit)
    if trial_steps is not None:
        trial_steps = check_int("trial_steps", trial_steps, minimum=1)
        if own is not None and own != trial_steps:
            raise ValueError(
                f"trial_steps={trial_steps!r} and {limit}={own!r} both set the steps per trial "
                f"of {spec.env_id} and disagree: give one of them (or both equal)"
            )
    steps = trial_steps if trial_steps is not None else own
    if steps is None:
        steps = spec.max_episode_steps
    kwargs = {**spec.env_kwargs, **env_kwargs}
    if steps is not None:
        kwargs[limit] = check_int(limit if trial_steps is None else "trial_steps", steps, minimum=1)
    env = gymnasium.make(spec.env_id, **kwargs)
    wrapped = NonStationary(
        env,
        {spec.parameter: world_schedule(spec, trials_per_world)},
        notify="none" if continual else "value",
    )
    return wrapped


#: Keyword arguments a registered id fixes (its entry point refuses them).
FIXED = ("name", "continual")


def _entry_point(name: str, continual: bool) -> Any:
    """The entry point of one registered id: :func:`make_recurring` with ``name`` and
    ``continual`` fixed; passing either is a ``ValueError`` naming it."""
    env_id = recurring_id(name, continual)

    def make(**kwargs: Any) -> NonStationary:
        fixed = [key for key in FIXED if key in kwargs]
        if fixed:
            raise ValueError(
                f"{env_id} fixes {' and '.join(fixed)}; make another id instead "
                f"(bam_rl/Recurring<Name>[Continual]-v0), got {fixed[0]}={kwargs[fixed[0]]!r}"
            )
        return make_recurring(name, continual, **kwargs)

    make.__name__ = make.__qualname__ = entry_point_name(name, continual)
    make.__doc__ = f"``gym.make({env_id!r}, **kwargs)``: :func:`make_recurring` of {name!r}."
    return make


def entry_point_name(name: str, continual: bool = False) -> str:
    """The attribute of this module that ``envs`` registers as the id's entry point."""
    return f"make_{name}{'Continual' if continual else ''}"


# one entry point per registered id (``envs`` registers them by string: nothing heavy is
# imported at ``import bam_rl``)
for _name in SUITE:
    for _continual in (False, True):
        globals()[entry_point_name(_name, _continual)] = _entry_point(_name, _continual)
del _name, _continual
