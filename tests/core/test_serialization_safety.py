"""A crafted state file cannot reach code outside the project's own classes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bam_rl.serialization import FORMAT, import_class, load_object


def crafted(path, root):
    document = {"format": FORMAT, "root": root}
    np.savez(path, __json__=np.frombuffer(json.dumps(document).encode(), dtype=np.uint8))
    return path


def strings(*items):
    return {"__list__": list(items), "tuple": False}


@pytest.mark.parametrize(
    "name",
    [
        "bam_rl.serialization.np.f2py.subprocess.Popen",  # walks through imported modules
        "bam_rl.checks.np.f2py.subprocess.Popen",
        "bam_rl.serialization.io.FileIO",
    ],
)
def test_family_payloads_that_would_run_code_are_refused(tmp_path, name):
    marker, victim = tmp_path / "pwned", tmp_path / "victim.txt"
    victim.write_text("important data")
    kwargs = (
        {"args": strings("touch", str(marker))}
        if name.endswith("Popen")
        else {"file": str(victim), "mode": "w"}
    )
    path = crafted(tmp_path / "evil.npz", {"__family__": name, "kwargs": {"__dict__": kwargs}})
    with pytest.raises(ValueError, match="refusing"):
        load_object(path)
    assert not marker.exists()
    assert victim.read_text() == "important data"


@pytest.mark.parametrize(
    "name",
    [
        "bam_rl.serialization.Path",  # a class re-exported by, not defined in, a project module
        "bam_rl.serialization.np.random.Generator",
        "bam_rl.agents.base.np.ndarray",
    ],
)
def test_objects_from_outside_the_project_are_refused(tmp_path, name):
    path = crafted(tmp_path / "evil.npz", {"__object__": name, "state": {}})
    with pytest.raises(ValueError, match="refusing"):
        load_object(path)


def test_only_conjugate_families_are_rebuilt_as_families(tmp_path):
    path = crafted(
        tmp_path / "evil.npz", {"__family__": "bam_rl.memory.Memory", "kwargs": {"__dict__": {}}}
    )
    with pytest.raises(ValueError, match="ConjugateFamily"):
        load_object(path)


def test_only_bit_generators_are_rebuilt(tmp_path):
    path = crafted(
        tmp_path / "evil.npz", {"__generator__": {"__dict__": {}}, "bit_generator": "RandomState"}
    )
    with pytest.raises(ValueError, match="bit generator"):
        load_object(path)


def test_project_classes_still_import():
    from bam_rl.families import BetaBinomial
    from bam_rl.families.base import ConjugateFamily

    assert (
        import_class("bam_rl.families.beta_binomial.BetaBinomial", base=ConjugateFamily)
        is BetaBinomial
    )
    assert import_class("bam_rl.families.BetaBinomial") is BetaBinomial  # re-export is fine
