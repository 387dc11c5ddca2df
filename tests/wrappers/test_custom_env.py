"""The user's own environment (issue 49): ``NonStationary`` on a custom ``gymnasium.Env``
through ``attr:<name>`` and declared ``(get, set)`` pairs, ``parameters(env)`` listing its
numeric attributes, and ``GroundTruthMPPI(env, dynamics=f)`` planning with its equations.

``PointMass`` is neither MuJoCo nor classic control: a point on a line, pushed away from 0
(an unstable equilibrium, ``x'' = stiffness·x + (force_mag·u − drag·v) / mass``), to be held
within ``threshold`` of 0 from a start 0.2–0.3 away; an episode ends when ``|x| > limit``.
"""

from __future__ import annotations

import math
import pickle
import re
import warnings
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from bam_rl.agents import GroundTruthMPPI
from bam_rl.agents.simulator import StepFunctionDynamics
from bam_rl.schedules import Schedule, cycle
from bam_rl.wrappers import NonStationary, Parameter, parameters


def point_mass_step(p, observations, actions):
    """``PointMass``'s equations over ``K`` observations ``(x, v)`` and actions ``(u,)``, with
    the parameters of ``p`` (the environment, or any object with its attributes)."""
    observations, actions = np.asarray(observations), np.asarray(actions)
    x, v = observations[:, 0], observations[:, 1]
    u = np.clip(actions[:, 0], -1.0, 1.0)
    acceleration = p.stiffness * x + (p.force_mag * u - p.coefficients["drag"] * v) / p.mass
    v = v + p.dt * acceleration
    return np.stack([x + p.dt * v, v], axis=1)


class PointMass(gym.Env):
    """A custom environment: a point mass to hold near 0 (see the module's docstring)."""

    metadata = {"render_modes": []}
    label = "point"  # a class attribute that is no number

    def __init__(self):
        self.mass = 1.0
        self.dt = 0.05
        self.force_mag = 5.0
        self.stiffness = 1.0
        self.threshold = 0.5
        self.limit = 1.0
        self.coefficients = {"drag": 0.0}  # reachable by a (get, set) pair only
        self.pushed = False  # a bool: no parameter
        self._secret = 3.0  # private: not listed
        self.observation_space = spaces.Box(-np.inf, np.inf, (2,), np.float64)
        self.action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.state = np.zeros(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        side = self.np_random.choice([-1.0, 1.0])
        self.state = np.array([side * self.np_random.uniform(0.2, 0.3), 0.0])
        return self.state.copy(), {}

    def step(self, action):
        action = np.asarray(action, dtype=np.float64).reshape(1, 1)
        self.state = point_mass_step(self, self.state[None], action)[0]
        x = float(self.state[0])
        reward = 1.0 if abs(x) < self.threshold else 0.0
        return self.state.copy(), reward, abs(x) > self.limit, False, {}

    def total(self):  # a method: no parameter
        return self.mass


def get_drag(env):
    return env.coefficients["drag"]


def set_drag(env, value):
    env.coefficients["drag"] = value


def _with(env, **values):
    """``env``'s parameters with ``values`` replaced (for the equations)."""
    p = SimpleNamespace(**{n: getattr(env, n) for n in ("mass", "dt", "force_mag", "stiffness")})
    p.coefficients = dict(env.coefficients)
    for name, value in values.items():
        if name == "drag":
            p.coefficients["drag"] = value
        else:
            setattr(p, name, value)
    return p


def _moved_by(env, observation, action, **values):
    """Whether one step of ``env`` from ``observation`` under ``action`` is what the equations
    give with ``values``."""
    before = np.asarray(observation, dtype=np.float64)
    after, *_ = env.step(np.array([action], dtype=np.float32))
    expected = point_mass_step(_with(env.unwrapped, **values), before[None], np.array([[action]]))
    return bool(np.allclose(after, expected[0], rtol=0, atol=1e-12))


# ---------------------------------------------------------------------------- parameters(env)
def test_parameters_lists_the_numeric_attributes_of_a_custom_env():
    expected = ["attr:dt", "attr:force_mag", "attr:limit", "attr:mass", "attr:stiffness"]
    expected.append("attr:threshold")
    assert parameters(PointMass()) == sorted(expected)  # no str, bool, dict, method, _private
    wrapped = NonStationary(PointMass(), {"attr:mass": cycle([1.0, 2.0])})
    assert parameters(wrapped) == sorted(expected)  # through wrappers, of the unwrapped env


def test_parameters_of_the_built_in_families_are_unchanged():
    assert parameters(gym.make("Pendulum-v1")) == ["dt", "g", "l", "m"]


# ---------------------------------------------------------------------------- attr:<name>
def test_attr_mass_changes_the_world_and_flags_exactly_the_changes():
    env = NonStationary(PointMass(), {"attr:mass": cycle([1.0, 5.0], every=2)})
    masses, flags = [], []
    for episode in range(6):
        observation, info = env.reset(seed=0 if episode == 0 else None)
        mass = env.unwrapped.mass
        masses.append(mass)
        flags.append(info["context_changed"])
        assert info["context"] == {"attr:mass": mass}
        assert env.get_wrapper_attr("context") == {"attr:mass": mass}
        # the dynamics are the equations at this mass, not at the other one
        other = 6.0 - mass
        assert _moved_by(env, observation, 1.0, mass=mass)
        observation = env.unwrapped.state.copy()
        *_, info = env.step(np.ones(1, np.float32))
        assert info["context_changed"] is False
        assert not _moved_by(env, env.unwrapped.state.copy(), 1.0, mass=other)
    assert masses == [1.0, 1.0, 5.0, 5.0, 1.0, 1.0]
    assert flags == [False, False, True, False, True, False]


def test_step_level_attr_changes_act_at_their_step_and_flag_only_real_changes():
    env = NonStationary(PointMass(), {"attr:mass": cycle([1.0, 1.0, 5.0], every=2, unit="step")})
    observation, _ = env.reset(seed=1)
    masses, flags = [], []
    for _ in range(12):
        before = env.unwrapped.state.copy()
        observation, _, _, _, info = env.step(np.full(1, 0.5, np.float32))
        mass = env.unwrapped.mass
        expected = point_mass_step(_with(env.unwrapped, mass=mass), before[None], [[0.5]])[0]
        assert np.allclose(observation, expected, rtol=0, atol=1e-12)
        masses.append(mass)
        flags.append(info["context_changed"])
        assert info["context"] == {"attr:mass": mass}
    assert masses == [1.0] * 4 + [5.0] * 2 + [1.0] * 4 + [5.0] * 2
    assert flags == [False] * 4 + [True, False, True] + [False] * 3 + [True, False]


def test_gymnasium_check_env_passes_on_the_wrapped_custom_env():
    from gymnasium.utils.env_checker import check_env

    changes = {
        "attr:mass": cycle([1.0, 5.0], every=3, unit="step"),
        "drag": cycle([0.0, 0.5]),
    }
    for observe_context in (False, True):
        env = NonStationary(
            PointMass(),
            changes,
            observe_context=observe_context,
            parameters={"drag": (get_drag, set_drag)},
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # advice (unbounded Box, wrapped env), not failures
            check_env(env, skip_render_check=True)
    observation, _ = env.reset(seed=0)
    assert observation.shape == (4,) and observation[2:].tolist() == [1.0, 0.0]


def test_attr_works_on_a_built_in_environment_beside_its_own_parameters():
    env = NonStationary(
        gym.make("Pendulum-v1"), {"g": cycle([10.0, 3.72]), "attr:max_speed": cycle([8.0, 4.0])}
    )
    env.reset(seed=0)
    env.reset()
    assert (env.unwrapped.g, env.unwrapped.max_speed) == (3.72, 4.0)
    assert env.get_wrapper_attr("context") == {"g": 3.72, "attr:max_speed": 4.0}
    copy = pickle.loads(pickle.dumps(env))  # the attribute accessors pickle
    copy.reset(seed=0)
    assert copy.unwrapped.max_speed == 8.0


# ---------------------------------------------------------------------------- (get, set) pairs
@pytest.mark.parametrize("declare", [lambda get, set: (get, set), Parameter])
def test_a_declared_pair_changes_the_world_like_a_built_in_parameter(declare):
    calls = []

    def recording_set(env, value):
        calls.append(value)
        set_drag(env, value)

    env = NonStationary(
        PointMass(),
        {"drag": cycle([0.0, 0.0, 2.0], unit="step")},
        parameters={"drag": declare(get_drag, recording_set)},
    )
    assert calls == []  # nothing is written before the first reset
    env.reset(seed=0)
    assert calls == [0.0]
    drags, flags = [], []
    for _ in range(6):
        before = env.unwrapped.state.copy()
        observation, *_, info = env.step(np.zeros(1, np.float32))
        drag = env.unwrapped.coefficients["drag"]
        expected = point_mass_step(_with(env.unwrapped, drag=drag), before[None], [[0.0]])[0]
        assert np.array_equal(observation, expected)
        drags.append(drag)
        flags.append(info["context_changed"])
        assert info["context"] == {"drag": drag}
    assert drags == [0.0, 0.0, 2.0, 0.0, 0.0, 2.0]
    assert flags == [False, False, True, True, False, True]
    assert calls == [0.0, 2.0, 0.0, 2.0]  # at the reset, then only at the changes
    env.reset()  # a reset writes every parameter again, changed or not
    assert calls[-1] == 2.0 and len(calls) == 5


def test_the_setter_runs_at_every_reset_over_what_the_env_reset_wrote():
    class Forgetful(PointMass):
        def reset(self, *, seed=None, options=None):
            self.mass = 1.0  # the environment's own reset restores its default
            return super().reset(seed=seed, options=options)

    env = NonStationary(Forgetful(), {"attr:mass": cycle([3.0])})
    for episode in range(3):
        _, info = env.reset(seed=0 if episode == 0 else None)
        assert env.unwrapped.mass == 3.0 and info["context_changed"] is False


# ---------------------------------------------------------------------------- refusals
def _refused(changes, match, env=None, **kwargs):
    env = PointMass() if env is None else env
    before = (env.mass, dict(env.coefficients)) if isinstance(env, PointMass) else None
    with pytest.raises(ValueError, match=match):
        NonStationary(env, changes, **kwargs)
    if before is not None:
        assert (env.mass, env.coefficients) == before  # left untouched


def test_a_built_in_name_on_a_custom_env_lists_what_it_has():
    _refused({"mass": cycle([1.0])}, r"unknown parameter 'mass' for PointMass.*attr:<name>")
    with pytest.raises(ValueError) as error:
        NonStationary(PointMass(), {"gravity": cycle([1.0])})
    message = str(error.value)
    assert "'attr:mass'" in message and "'attr:threshold'" in message
    assert "env must be a MuJoCo environment" in message  # where the built-in ones are


def test_bad_attributes_are_refused_naming_the_parameter():
    _refused({"attr:nope": cycle([1.0])}, r"'attr:nope'.* no attribute 'nope'.*'attr:mass'")
    _refused({"attr:": cycle([1.0])}, r"'attr:'.* no attribute ''")
    _refused({"attr:label": cycle([1.0])}, r"'attr:label'.*'point' \(str\), not a finite")
    _refused({"attr:pushed": cycle([1.0])}, r"'attr:pushed'.*False \(bool\), not a finite")
    _refused({"attr:total": cycle([1.0])}, r"'attr:total'.*not a finite number")
    _refused({"attr:coefficients": cycle([1.0])}, r"'attr:coefficients'.*\(dict\)")
    env = PointMass()
    env.mass = math.nan
    _refused({"attr:mass": cycle([1.0])}, r"'attr:mass'.*nan \(float\), not a finite", env)
    env.mass = np.float32(math.inf)
    _refused({"attr:mass": cycle([1.0])}, r"'attr:mass'.*not a finite", env)


def test_bad_declared_pairs_are_refused_naming_the_parameter():
    changes = {"drag": cycle([1.0])}
    _refused(changes, r"parameters must be a dict", parameters=[("drag", get_drag)])
    _refused(changes, r"parameters\['drag'\] must be a \(get, set\) pair", parameters={"drag": 1})
    pair = {"drag": (get_drag, 2.0)}
    _refused(changes, r"parameters\['drag'\] must be a \(get, set\) pair", parameters=pair)
    one = {"drag": (get_drag,)}
    _refused(changes, r"parameters\['drag'\] must be a \(get, set\) pair", parameters=one)
    for value, shown in (("x", "'x' (str)"), (math.nan, "nan (float)"), (True, "True (bool)")):
        declared = {"drag": (lambda env, value=value: value, set_drag)}
        match = re.escape(f"parameters['drag']: get(env) returned {shown}, not a finite number")
        _refused(changes, match, parameters=declared)
    declared = {"drag": (lambda env: env.coefficients["friction"], set_drag)}
    _refused(changes, r"parameters\['drag'\]: get\(env\) raised KeyError", parameters=declared)
    declared = {"attr:mass": (get_drag, set_drag)}
    _refused({"attr:mass": cycle([1.0])}, r"'attr:mass' is already", parameters=declared)
    _refused({"x": cycle([1.0])}, r"a name must be a non-empty str", parameters={"": (1, 2)})
    # a built-in name cannot be declared again
    pendulum = gym.make("Pendulum-v1")
    declared = {"g": (lambda env: env.g, lambda env, v: None)}
    with pytest.raises(ValueError, match=r"'g' is already a parameter .*built-in"):
        NonStationary(pendulum, {"g": cycle([1.0])}, parameters=declared)
    # an undeclared name is unknown
    _refused(changes, r"unknown parameter 'drag' for PointMass")


def test_bad_schedule_values_are_refused_as_for_built_in_parameters():
    class Wild(Schedule):
        def value(self, t, rng):
            return math.nan if t == 2 else 2.0

    env = NonStationary(PointMass(), {"attr:mass": Wild(unit="step")})
    env.reset(seed=0)
    env.step(np.zeros(1, np.float32))
    env.step(np.zeros(1, np.float32))
    with pytest.raises(ValueError, match=r"schedule of 'attr:mass' gave nan"):
        env.step(np.zeros(1, np.float32))
    assert env.unwrapped.mass == 2.0
    with pytest.raises(ValueError, match=r"changes\['attr:mass'\] must be a schedule"):
        NonStationary(PointMass(), {"attr:mass": [1.0, 5.0]})


# ---------------------------------------------------------------------------- ground truth
def planning_reward(states, actions):
    """Toward 0 and still: what the planner maximises on ``PointMass``."""
    return -(states[..., 0] ** 2 + 0.1 * states[..., 1] ** 2)


def _held_steps(env, act, seed, steps=200):
    """Steps run before ``|x|`` reaches ``threshold`` (``steps`` when it never does)."""
    observation, info = env.reset(seed=seed)
    for t in range(steps):
        observation, _, terminated, _, info = env.step(act(observation, info))
        if abs(observation[0]) >= env.unwrapped.threshold or terminated:
            return t
    return steps


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ground_truth_with_the_users_equations_holds_the_balance_random_actions_do_not(seed):
    changes = {"attr:mass": cycle([1.0, 5.0], every=50, unit="step")}
    env = NonStationary(PointMass(), changes)

    def equations(observations, actions):  # reads the live world: the mass the wrapper set
        return point_mass_step(env.unwrapped, observations, actions)

    agent = GroundTruthMPPI(
        env, seed=seed, dynamics=equations, reward=planning_reward, horizon=15, n_samples=64
    )
    started = []

    def plan(observation, info):
        if not started:
            agent.reset(observation, info)
            started.append(True)
        return agent.act(observation)

    assert _held_steps(env, plan, seed) == 200
    assert env.unwrapped.mass == 5.0  # the last 50 steps were heavy
    rng = np.random.default_rng(seed)
    random = lambda observation, info: rng.uniform(-1, 1, 1).astype(np.float32)  # noqa: E731
    assert _held_steps(env, random, seed) < 200


def test_ground_truth_on_discrete_actions_sees_them_one_hot():
    class DiscretePointMass(PointMass):
        def __init__(self):
            super().__init__()
            self.action_space = spaces.Discrete(3)  # push left, nothing, right

        def step(self, action):
            return super().step(np.array([float(action) - 1.0]))

    env = DiscretePointMass()
    seen = []

    def equations(observations, actions):
        seen.append(actions.shape)
        return point_mass_step(env, observations, actions @ np.array([[-1.0], [0.0], [1.0]]))

    agent = GroundTruthMPPI(
        env, seed=0, dynamics=equations, reward=planning_reward, horizon=15, n_samples=64
    )
    assert seen[0][1] == 3
    observation, info = env.reset(seed=0)
    agent.reset(observation, info)
    for _ in range(100):
        action = agent.act(observation)
        assert isinstance(action, int) and 0 <= action <= 2
        observation, *_ = env.step(action)
        assert abs(observation[0]) < env.threshold
    assert seen[-1] == (64, 3)


def test_a_rollout_calls_the_equations_once_a_step_and_matches_the_env():
    env = PointMass()
    observation, _ = env.reset(seed=3)
    dynamics = StepFunctionDynamics(lambda o, a: point_mass_step(env, o, a), 2, 1)
    actions = np.random.default_rng(0).uniform(-1, 1, (4, 7, 1))
    states = dynamics(observation, actions)
    assert states.shape == (4, 7, 2)
    for k in range(4):
        env.state = observation.copy()
        for t in range(7):
            stepped, *_ = env.step(actions[k, t])
            assert np.array_equal(states[k, t], stepped)


def test_bad_dynamics_are_refused_with_a_clear_message():
    env = PointMass()
    good = dict(reward=planning_reward, horizon=5, n_samples=8)

    def refused(dynamics, match):
        with pytest.raises(ValueError, match=match):
            GroundTruthMPPI(env, dynamics=dynamics, **good)

    refused(3.0, r"dynamics must be a callable f\(observations \(K, dx\)")
    refused(lambda o, a: o[:, :1], r"shape \(K, dx\) = \(3, 2\).* got float64 of shape \(3, 1\)")
    refused(lambda o, a: o.T, r"shape \(K, dx\) = \(3, 2\).* of shape \(2, 3\)")
    refused(lambda o, a: o[0], r"of shape \(2,\)")
    refused(lambda o, a: np.full_like(o, np.nan), r"finite next observations, got 6 non-finite")
    refused(lambda o, a: np.array([["a", "b"]] * 3), r"real next observations")
    refused(lambda o: o, r"dynamics must accept observations .*raised TypeError")
    # no equations: the planner says how to give them
    with pytest.raises(ValueError, match=r"GroundTruthMPPI\(env, dynamics=f\)"):
        GroundTruthMPPI(env, **good)
    # a custom env's reward must be given (the default reads the cart-pole's observation)
    with pytest.raises(ValueError, match="reward must be given"):
        GroundTruthMPPI(env, dynamics=lambda o, a: point_mass_step(env, o, a))


def test_a_planner_with_users_equations_is_not_saved(tmp_path):
    env = PointMass()
    agent = GroundTruthMPPI(
        env, dynamics=lambda o, a: point_mass_step(env, o, a), reward=planning_reward
    )
    with pytest.raises(ValueError, match="cannot be saved"):
        agent.save(tmp_path / "agent.npz")
    assert not any(tmp_path.iterdir())
