"""The protocol test vectors in tests/vectors/ against the Python board (the simulator's core).

Issue 5 runs the same files against the firmware on the virtual Uno.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from armctl.bus import vectors

VECTOR_DIR = Path(__file__).with_name("vectors")
FILES = vectors.vector_files(VECTOR_DIR)


def test_there_are_vectors():
    assert len(FILES) >= 10


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_vector_on_board(path):
    vectors.run(vectors.load(path), vectors.BoardTransport())


def test_runner_catches_a_wrong_reply(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("> 0 H *8EE8\n< 0 A 1 16 *0000\n")
    with pytest.raises(AssertionError, match="bad.txt:2"):
        vectors.run(vectors.load(bad), vectors.BoardTransport())
