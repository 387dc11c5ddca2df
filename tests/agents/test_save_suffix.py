"""``agent.save("x")`` writes ``x.npz`` as ``np.savez`` does, and ``load`` finds it with or
without the suffix (issue 38, item 9)."""

from __future__ import annotations

import pytest

from bam_rl.agents import UCB
from bam_rl.serialization import archive_path, find_archive


def test_save_appends_npz_and_returns_the_path(tmp_path):
    agent = UCB(3, seed=0)
    written = agent.save(tmp_path / "x")
    assert written == tmp_path / "x.npz" and written.is_file()
    assert not (tmp_path / "x").exists()
    for name in ("x", "x.npz", str(tmp_path / "x")):
        loaded = UCB.load(tmp_path / name)
        assert loaded.act(0) == agent.act(0)
    # a name ending in .npz is kept; another suffix is kept and .npz appended (np.savez)
    assert agent.save(tmp_path / "y.npz") == tmp_path / "y.npz"
    assert agent.save(tmp_path / "z.v1") == tmp_path / "z.v1.npz"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npz", "y.npz", "z.v1.npz"]


def test_files_saved_without_the_suffix_still_load(tmp_path):
    agent = UCB(4, seed=1)
    agent.save(tmp_path / "state")
    (tmp_path / "state.npz").rename(tmp_path / "legacy")  # as save("legacy") used to write
    assert find_archive(tmp_path / "legacy") == tmp_path / "legacy"
    assert UCB.load(tmp_path / "legacy").n_arms == 4


def test_a_missing_file_names_both_paths(tmp_path):
    with pytest.raises(ValueError, match=r"'.*nope' does not exist \(nor '.*nope\.npz'\)"):
        UCB.load(tmp_path / "nope")
    assert archive_path(tmp_path / "nope") == tmp_path / "nope.npz"
