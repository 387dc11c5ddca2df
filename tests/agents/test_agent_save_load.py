"""save -> load -> continue is indistinguishable from an uninterrupted run; bad files fail."""

from __future__ import annotations

import pickle
import zipfile

import numpy as np
import pytest
from agents_testutils import (
    BANDIT_AGENTS,
    PIECEWISE_BERNOULLI,
    STREAM,
    SWITCHING,
    Runner,
    make_agent,
    make_env,
)

from bam_rl.agents import UCB, UCBAM, BeliefTracker, ThompsonSampling

SAVE_CASES = [
    ("ucb", SWITCHING),
    ("ucbam", SWITCHING),
    ("ucbam_select", SWITCHING),
    ("ucbam_lam", SWITCHING),
    ("ucbam_capacity", SWITCHING),
    ("ucbam_bernoulli", PIECEWISE_BERNOULLI),
    *[
        (f"thompson_gaussian_{rule}", SWITCHING)
        for rule in ("recursive", "forgetting", "bocd", "bam", "bam_bocd")
    ],
    *[
        (f"thompson_bernoulli_{rule}", PIECEWISE_BERNOULLI)
        for rule in ("recursive", "forgetting", "bocd", "bam")
    ],
    ("tracker_bam", STREAM),
    ("tracker_bam_reg", STREAM),
    ("tracker_bocd", STREAM),
    ("tracker_bam_bocd", STREAM),
    ("tracker_recursive", STREAM),
]
assert {name for name, _ in SAVE_CASES if name in BANDIT_AGENTS} <= set(BANDIT_AGENTS)


def _same(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize(("name", "spec"), SAVE_CASES, ids=[n for n, _ in SAVE_CASES])
def test_save_load_continues_identically(tmp_path, name, spec):
    first, second = (60, 150) if name in ("ucbam_select", "ucbam_bernoulli") else (170, 200)
    # uninterrupted run, saved part-way (170 crosses an episode end of the 120-step envs)
    env = make_env(spec)
    agent = make_agent(name, env, seed=7)
    runner = Runner(env, agent).start(seed=11)
    before = runner.run(first)
    path = tmp_path / "agent.npz"
    agent.save(path)
    uninterrupted = runner.run(second)
    # a fresh environment brought to the same state, driven by the loaded agent
    env2 = make_env(spec)
    replay = Runner(env2, None).start(seed=11)
    replay.run(first, actions=before)
    loaded = type(agent).load(path)
    assert type(loaded) is type(agent)
    replay.agent = loaded
    resumed = replay.run(second)
    assert _same(uninterrupted, resumed)
    if hasattr(agent, "summary"):
        np.testing.assert_equal(agent.summary(), loaded.summary())  # NaN == NaN here


def test_loaded_agent_is_independent_of_the_original(tmp_path):
    agent = ThompsonSampling.gaussian(4, "bam", seed=3)
    env = make_env(SWITCHING)
    Runner(env, agent).start(seed=0).run(40, check_space=False)
    agent.save(tmp_path / "a.npz")
    loaded = ThompsonSampling.load(tmp_path / "a.npz")
    draws_a = [agent.act(0) for _ in range(20)]
    draws_b = [loaded.act(0) for _ in range(20)]
    assert draws_a == draws_b  # same generator state, separate generators


class _Marker:
    """Unpickling this calls ``open(path, "w")``: the marker file appears if anyone unpickles."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


ALL_CLASSES = [UCB, UCBAM, ThompsonSampling, BeliefTracker]


def _bad_files(tmp_path):
    marker = tmp_path / "unpickled.marker"
    files = {}
    good = tmp_path / "good.npz"
    UCB(3, seed=0).save(good)
    raw = good.read_bytes()
    files["truncated"] = raw[: len(raw) // 2]
    flipped = bytearray(raw)
    for i in range(40, len(flipped), 97):
        flipped[i] ^= 0xFF
    files["flipped"] = bytes(flipped)
    files["text"] = b"just some text, not an archive\n"
    files["empty"] = b""
    files["pickle"] = pickle.dumps(_Marker(marker))
    files["npy_pickle"] = None  # written below
    for key, content in files.items():
        if content is not None:
            (tmp_path / f"{key}.npz").write_bytes(content)
    np.savez(tmp_path / "foreign.npz", x=np.arange(3), y=np.ones((2, 2)))
    np.savez(tmp_path / "npy_pickle.npz", __json__=np.array([_Marker(marker)], dtype=object))
    with zipfile.ZipFile(tmp_path / "json_garbage.npz", "w") as archive:
        archive.writestr("__json__.npy", b"\x93NUMPY garbage")
    np.savez(
        tmp_path / "wrong_json.npz",
        __json__=np.frombuffer(b'{"format": "other/1", "root": null}', dtype=np.uint8),
    )
    names = [*files, "foreign", "json_garbage", "wrong_json"]
    return marker, [tmp_path / f"{name}.npz" for name in names]


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
def test_load_rejects_bad_files_without_unpickling(tmp_path, cls):
    marker, paths = _bad_files(tmp_path)
    for path in [*paths, tmp_path / "missing.npz"]:
        with pytest.raises(ValueError):
            cls.load(path)
    assert not marker.exists()


def test_load_rejects_another_agent_class(tmp_path):
    UCB(3, seed=0).save(tmp_path / "ucb.npz")
    with pytest.raises(ValueError, match="UCB"):
        ThompsonSampling.load(tmp_path / "ucb.npz")
    assert isinstance(UCB.load(tmp_path / "ucb.npz"), UCB)
