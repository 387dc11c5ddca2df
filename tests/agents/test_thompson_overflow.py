"""Issue 39: Gaussian Thompson sampling's recursive fast path refuses a reward whose
statistics overflow, as the rule path does (same message), instead of an inf belief."""

from __future__ import annotations

import numpy as np
import pytest

from bam_rl.agents.bandits import ThompsonSampling


@pytest.mark.parametrize("reward", [1e308, -1e308, 1e300, 1e160])
def test_the_fast_path_refuses_what_the_rule_path_refuses(reward: float) -> None:
    fast = ThompsonSampling.gaussian(3, "recursive", seed=0)
    slow = ThompsonSampling.gaussian(3, "forgetting", forgetting=1.0, seed=0)
    assert fast.fast and not slow.fast
    with pytest.raises(ValueError) as rule_error:
        slow.observe(0, reward, 0, False, False, {})
    before = {k: v.copy() for k, v in fast._fields.items()}
    with pytest.raises(ValueError) as fast_error:
        fast.observe(0, reward, 0, False, False, {})
    assert str(fast_error.value) == str(rule_error.value)
    for key, value in before.items():
        np.testing.assert_array_equal(fast._fields[key], value)  # unchanged
    assert np.isfinite(fast.means).all()
    assert fast.act(0) in (0, 1, 2)


def test_a_sum_that_overflows_is_refused_and_changes_nothing() -> None:
    agent = ThompsonSampling.gaussian(2, "recursive", noise_std=1e-154, seed=0)
    agent.observe(0, 1.0, 0, False, False, {})  # 1 / sigma^2 = 1e308: finite
    before = {k: v.copy() for k, v in agent._fields.items()}
    with pytest.raises(ValueError, match="overflows"):
        agent.observe(0, 1.0, 0, False, False, {})  # 2e308: not
    for key, value in before.items():
        np.testing.assert_array_equal(agent._fields[key], value)
