"""The protocol test vectors in tests/vectors/ against the Python board (the simulator's core).

Version 1 files (tests/vectors/*.txt) run on a version 1 board with 4 channels, version 2 files
(tests/vectors/v2/*.txt, ``%protocol 2``) on a version 2 board with 8. test_firmware_vectors.py runs
the version 2 files against our firmware on the virtual Uno.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import protocol_vectors as vectors

VECTOR_DIR = Path(__file__).resolve().parents[1] / "vectors"
V1 = vectors.vector_files(VECTOR_DIR)
V2 = vectors.vector_files(VECTOR_DIR / "v2")
FILES = V1 + V2


def test_there_are_vectors():
    assert len(V1) >= 10 and len(V2) >= len(V1)
    assert {vectors.load(p).protocol for p in V1} == {1}
    assert {vectors.load(p).protocol for p in V2} == {2}
    # every version 1 rule has its version 2 twin
    assert {p.name for p in V1} <= {p.name for p in V2}


@pytest.mark.parametrize("path", FILES, ids=[f"v{vectors.load(p).protocol}-{p.stem}" for p in FILES])
def test_vector_on_board(path):
    vf = vectors.load(path)
    vectors.run(vf, vectors.BoardTransport(protocol=vf.protocol))


def test_runner_catches_a_wrong_reply(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("> 0 H *8EE8\n< 0 A 1 16 *0000\n")
    with pytest.raises(AssertionError, match="bad.txt:2"):
        vectors.run(vectors.load(bad), vectors.BoardTransport())


def test_runner_refuses_a_board_of_another_version(tmp_path):
    v2 = tmp_path / "v2.txt"
    v2.write_text("%protocol 2\n> 0 H *8EE8\n")
    with pytest.raises(ValueError, match="v2.txt is protocol version 2, the board speaks 1"):
        vectors.run(vectors.load(v2), vectors.BoardTransport(protocol=1))
