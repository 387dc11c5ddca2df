"""Loaders raise ``ValueError`` for every malformed file, within size limits (issue 14, item 7)."""

from __future__ import annotations

import io
import json
import struct
import time
import zlib

import numpy as np
import pytest

import bam_rl.serialization as serialization
from bam_rl.beliefs import BAM, BOCD, BAMWithChangepoints
from bam_rl.families import BetaBinomial
from bam_rl.serialization import FORMAT, load_object, read_archive, save_object


def document_of(path) -> tuple[dict, dict]:
    with np.load(path) as archive:
        arrays = {k: archive[k] for k in archive.files}
    arrays.pop("__digest__", None)  # a crafted file: no digest, the field checks decide
    return json.loads(arrays.pop("__json__").tobytes()), arrays


def write(path, document, arrays=None):
    entries = dict(arrays or {})
    entries["__json__"] = np.frombuffer(json.dumps(document).encode(), dtype=np.uint8)
    np.savez(path, **entries)
    return path


def trained_bam(**kwargs) -> BAM:
    model = BetaBinomial()
    rule = BAM(model, **kwargs)
    for k in (3, 12, 4, 11):
        rule.update(model.stats(successes=k, trials=15))
    return rule


def test_json_nested_3000_deep_is_a_value_error(tmp_path):
    path = tmp_path / "deep.npz"
    text = f'{{"format": "{FORMAT}", "root": {"[" * 3000 + "]" * 3000}}}'
    np.savez(path, __json__=np.frombuffer(text.encode(), dtype=np.uint8))
    with pytest.raises(ValueError, match="not a readable"):
        load_object(path)
    nested: dict = {"__dict__": {}}
    root = nested
    for _ in range(200):  # parses, but deeper than MAX_DEPTH
        inner: dict = {"__dict__": {}}
        root["__dict__"]["x"] = inner
        root = inner
    with pytest.raises(ValueError, match="deeper than"):
        load_object(write(tmp_path / "deep2.npz", {"format": FORMAT, "root": nested}))


@pytest.mark.parametrize(
    "name", ["BitGenerator", "RandomState", "Generator", "SeedSequence", "PCG64.__init__", 5, None]
)
def test_only_concrete_bit_generators_are_restored(tmp_path, name):
    path = save_object(np.random.default_rng(0), tmp_path / "rng.npz")
    document, arrays = document_of(path)
    document["root"]["bit_generator"] = name
    with pytest.raises(ValueError, match="bit generator"):
        load_object(write(tmp_path / "evil.npz", document, arrays))


def test_bad_generator_state_is_a_value_error(tmp_path):
    path = save_object(np.random.default_rng(0), tmp_path / "rng.npz")
    document, arrays = document_of(path)
    document["root"]["__generator__"] = {"__dict__": {"bit_generator": "PCG64"}}
    with pytest.raises(ValueError):
        load_object(write(tmp_path / "evil.npz", document, arrays))
    assert load_object(path).bit_generator.state == np.random.default_rng(0).bit_generator.state


def _patch(raw: bytes, fields: tuple[tuple[bytes, int], ...], value: int) -> bytes:
    """Sets a 2-byte field (at ``offset`` after each ``signature``) of every zip header."""
    data = bytearray(raw)
    for signature, offset in fields:
        start = 0
        while (start := data.find(signature, start)) >= 0:
            data[start + offset : start + offset + 2] = struct.pack("<H", value)
            start += 4
    return bytes(data)


LOCAL, CENTRAL = b"PK\x03\x04", b"PK\x01\x02"


def test_corrupted_zip_headers_are_value_errors(tmp_path):
    good = save_object(trained_bam(), tmp_path / "good.npz")
    raw = good.read_bytes()
    variants = {
        # an unknown compression method: NotImplementedError before the fix
        "method": _patch(raw, ((LOCAL, 8), (CENTRAL, 10)), 99),
        "truncated": raw[: len(raw) // 2],
        "flipped": raw[:10] + bytes(b ^ 0xFF for b in raw[10:40]) + raw[40:],
        "empty": b"",
        "encrypted": _patch(raw, ((LOCAL, 6), (CENTRAL, 8)), 1),  # RuntimeError before
    }
    for name, data in variants.items():
        path = tmp_path / f"{name}.npz"
        path.write_bytes(data)
        with pytest.raises(ValueError):
            load_object(path)


def zip_bomb(path, mib: int = 1024) -> None:
    """A ~1 MB ``.npz`` whose one entry expands to a ``mib`` MiB float64 array."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (mib * 2**17,)}
    )
    head = header.getvalue()
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = compressor.compress(head) + compressor.flush(zlib.Z_SYNC_FLUSH)
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    zeros = bytes(1 << 20)
    block = compressor.compress(zeros) + compressor.flush(zlib.Z_SYNC_FLUSH)
    data = first + block * mib + zlib.compressobj(9, zlib.DEFLATED, -15).flush()
    crc = zlib.crc32(head)
    for _ in range(mib):
        crc = zlib.crc32(zeros, crc)
    size, name = len(head) + mib * len(zeros), b"a0.npy"
    local = (
        struct.pack(
            "<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 8, 0, 0, crc, len(data), size, len(name), 0
        )
        + name
    )
    central = (
        struct.pack(
            "<4sHHHHHHIIIHHHHHII",
            b"PK\x01\x02",
            20,
            20,
            0,
            8,
            0,
            0,
            crc,
            len(data),
            size,
            len(name),
            0,
            0,
            0,
            0,
            0,
            0,
        )
        + name
    )
    end = struct.pack(
        "<4sHHHHIIH", b"PK\x05\x06", 0, 0, 1, 1, len(central), len(local) + len(data), 0
    )
    path.write_bytes(local + data + central + end)


def test_a_1_mb_file_does_not_expand_to_a_1_gib_array(tmp_path):
    path = tmp_path / "bomb.npz"
    zip_bomb(path)
    assert path.stat().st_size < 1.1e6
    start = time.perf_counter()
    with pytest.raises(ValueError, match="expands"):
        load_object(path)
    assert time.perf_counter() - start < 1.0  # refused from the zip directory, not read


def test_size_limits(tmp_path):
    path = save_object({"big": np.zeros(1000)}, tmp_path / "big.npz")
    with pytest.raises(ValueError, match="max_bytes"):
        load_object(path, max_bytes=4000)
    assert load_object(path)["big"].shape == (1000,)
    # an npy header claiming far more data than the entry holds
    claim = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        claim, {"descr": "<f8", "fortran_order": False, "shape": (2**40,)}
    )
    document = {"format": FORMAT, "root": {"__array__": "a0"}}
    import zipfile

    with zipfile.ZipFile(tmp_path / "claim.npz", "w") as archive:
        archive.writestr("a0.npy", claim.getvalue() + bytes(16))
        archive.writestr("__json__.npy", _npy(json.dumps(document).encode()))
    with pytest.raises(ValueError, match="claims"):
        load_object(tmp_path / "claim.npz")


def _npy(data: bytes) -> bytes:
    stream = io.BytesIO()
    np.save(stream, np.frombuffer(data, dtype=np.uint8))
    return stream.getvalue()


def test_object_and_fortran_arrays(tmp_path):
    fortran = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    loaded = load_object(save_object({"f": fortran}, tmp_path / "f.npz"))["f"]
    assert np.array_equal(loaded, fortran) and loaded.flags.writeable
    import zipfile

    stream = io.BytesIO()
    np.save(stream, np.array([1, "a"], dtype=object), allow_pickle=True)
    with zipfile.ZipFile(tmp_path / "obj.npz", "w") as archive:
        archive.writestr("a0.npy", stream.getvalue())
    with pytest.raises(ValueError, match="object array"):
        read_archive(tmp_path / "obj.npz", FORMAT, "bam-rl state")


def _swap_memory(tmp_path, replacement_root: dict, arrays_extra: dict):
    path = save_object(trained_bam(), tmp_path / "bam.npz")
    document, arrays = document_of(path)
    offset = len(arrays)
    renamed = {}
    for key, value in arrays_extra.items():  # renumber the replacement's arrays
        renamed[key] = f"a{offset + int(key[1:])}"
        arrays[renamed[key]] = value
    text = json.dumps(replacement_root)
    for old, new in sorted(renamed.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(f'"__array__": "{old}"', f'"__array__": "{new}"')
    document["root"]["state"]["memory"] = json.loads(text)
    return write(tmp_path / "swapped.npz", document, arrays)


def test_a_memory_swapped_for_a_run_spec_does_not_load(tmp_path):
    from bam_rl.harness.sweeps import RunSpec

    spec = RunSpec("ucb", "bam_rl/SwitchingBandit-v0", n_steps=10)
    spec_document, spec_arrays = document_of(save_object(spec, tmp_path / "spec.npz"))
    path = _swap_memory(tmp_path, spec_document["root"], spec_arrays)
    with pytest.raises(ValueError, match=r"run layer|must hold"):
        load_object(path)


def test_a_memory_swapped_for_another_project_object_does_not_load(tmp_path):
    detector_rule = BOCD(BetaBinomial(), hazard=0.1)
    other, other_arrays = document_of(save_object(detector_rule, tmp_path / "bocd.npz"))
    path = _swap_memory(tmp_path, other["root"], other_arrays)
    with pytest.raises(ValueError, match=r"BAM\.memory must hold Memory"):
        load_object(path)


def test_nested_rules_keep_their_types(tmp_path):
    from bam_rl.agents import ThompsonSampling

    agent = ThompsonSampling.bernoulli(3, "bam", seed=0)
    path = agent.save(tmp_path / "ts.npz") or tmp_path / "ts.npz"
    document, arrays = document_of(path)
    rules = document["root"]["state"]["rules"]["__list__"]
    memory = rules[0]["state"]["memory"]
    rules[1] = memory  # a Memory where a BeliefRule belongs
    with pytest.raises(ValueError, match="rules must hold"):
        ThompsonSampling.load(write(tmp_path / "evil.npz", document, arrays))
    assert type(ThompsonSampling.load(path)) is ThompsonSampling


def test_well_formed_states_still_round_trip(tmp_path):
    for rule in (
        trained_bam(),
        trained_bam(capacity=3),
        BAMWithChangepoints(BetaBinomial(), hazard=0.1),
    ):
        loaded = load_object(save_object(rule, tmp_path / "rule.npz"), expected=type(rule))
        assert type(loaded.memory) is type(rule.memory)
        assert len(loaded.memory) == len(rule.memory)


def test_attribute_types_come_from_the_source():
    from bam_rl.memory import Memory

    types_ = serialization._attribute_types(BAM)
    assert types_["memory"] == (Memory,)
    assert serialization._attribute_types(BAMWithChangepoints)["detector"][0].__name__ == (
        "ChangepointDetector"
    )


def test_a_run_layer_name_is_refused_before_its_module_is_imported(tmp_path):
    import json
    import subprocess
    import sys

    from bam_rl.serialization import FORMAT, write_archive

    path = tmp_path / "state.npz"
    document = {
        "format": FORMAT,
        "root": {"__object__": "bam_rl.experiments.report.Anything", "state": {}},
    }
    write_archive(path, document, {})
    code = (
        "import sys\n"
        "from bam_rl.serialization import load_object\n"
        "try:\n"
        f"    load_object({json.dumps(str(path))})\n"
        "except ValueError as error:\n"
        "    assert 'run layer' in str(error), error\n"
        "assert 'bam_rl.experiments.report' not in sys.modules, 'imported before refusing'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_attributes_set_from_annotated_parameters_are_checked(tmp_path):
    """``self.rule = rule`` with ``rule: BeliefRule`` in the signature: a file putting a
    Memory there does not load (the parameter is never rebound, so its annotation holds)."""
    from bam_rl.agents.tracking import BeliefTracker

    assert serialization._attribute_types(BeliefTracker)["rule"][0].__name__ == "BeliefRule"
    tracker = BeliefTracker(trained_bam())
    path = save_object(tracker, tmp_path / "tracker.npz")
    document, arrays = document_of(path)
    document["root"]["state"]["rule"] = document["root"]["state"]["rule"]["state"]["memory"]
    with pytest.raises(ValueError, match=r"BeliefTracker\.rule must hold BeliefRule"):
        load_object(write(tmp_path / "evil.npz", document, arrays))
    assert type(load_object(path).rule) is BAM


def test_dict_and_tuple_annotations_check_their_items():
    import ast

    from bam_rl.memory import Memory

    namespace = {"Memory": Memory}
    expected = serialization._annotation(ast.parse("dict[str, Memory]").body[0].value, namespace)
    assert serialization._fits({"a": Memory()}, expected)
    assert not serialization._fits({"a": trained_bam()}, expected)
    expected = serialization._annotation(ast.parse("tuple[Memory, ...]").body[0].value, namespace)
    assert serialization._fits((Memory(), Memory()), expected)
    assert not serialization._fits((Memory(), trained_bam()), expected)


def test_a_rebound_parameter_is_not_trusted_for_its_annotation():
    import ast

    source = (
        "def __init__(self, rule: int, other: str, n: int):\n"
        "    rule = str(rule)\n"
        "    for n in range(3):\n"
        "        pass\n"
        "    self.rule = rule\n"
    )
    function = ast.parse(source).body[0]
    assert set(serialization._parameter_types(function, {})) == {"other"}
