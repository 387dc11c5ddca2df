"""No committed file holds an absolute path of a machine (issue 49): a fixture, a state file or
a docs example naming a temporary or a home folder passes only where that folder exists.

Every file ``git ls-files`` lists is read, text and binary alike, and so is every member of a
zip archive among them (``.npz`` state files); each is searched for an absolute path under a
folder that belongs to one machine: temporary and home folders, the workspace, mount points.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: absolute paths under folders of one machine (POSIX and Windows), not preceded by a name
#: character (so a relative ``bam_rl/tmp/x`` or a URL's path does not count)
MACHINE_PATH = re.compile(
    rb"(?<![\w.:/-])(?:/(?:tmp|home|root|work|Users|mnt|srv|opt|private/var|var/folders)/"
    rb"|[A-Za-z]:\\{1,2}(?:Users|Documents and Settings)\\)"
)


def committed_files() -> list[Path]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the committed files are unknown")
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    return [ROOT / name.decode() for name in listed if name and (ROOT / name.decode()).is_file()]


def blobs(path: Path) -> list[tuple[str, bytes]]:
    """The file's bytes, and those of each member when it is a zip archive (``.npz``)."""
    data = path.read_bytes()
    found = [(str(path.relative_to(ROOT)), data)]
    if data[:4] == b"PK\x03\x04":
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            found += [(f"{found[0][0]}:{n}", archive.read(n)) for n in archive.namelist()]
    return found


def test_the_pattern_finds_machine_paths_and_passes_package_names():
    root = b"/"  # joined here, so this file holds no such path itself
    for text in [
        b'"' + root + b'tmp/old/a.xml"',
        b"--out " + root + b"home/me",
        b"C:\\" + b"Users\\me",
    ]:
        assert MACHINE_PATH.search(text), text
    for text in [b"bam_rl.envs:assets/a.xml", b"--out runs/", b"https://x.org/home/page"]:
        assert not MACHINE_PATH.search(text), text


def test_no_committed_file_holds_an_absolute_path_of_a_machine():
    hits = []
    for path in committed_files():
        for name, data in blobs(path):
            for match in MACHINE_PATH.finditer(data):
                context = data[max(0, match.start() - 40) : match.end() + 40]
                hits.append(f"{name}: {context!r}")
    assert not hits, "absolute paths of a machine in committed files:\n" + "\n".join(hits)
