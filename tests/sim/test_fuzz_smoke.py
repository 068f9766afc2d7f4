"""Fuzzing the firmware's line handler, and the differential against the simulator's board (tools/fuzz/).

Both speak protocol version 2 with 8 channels: the seeds are the version 2 vectors (tests/vectors/v2).

In bounded time (about a minute in all): build the libFuzzer target (clang, ASan,
UBSan) and the host library, fuzz from the seeds (every test vector and generated
scripts) into a fresh corpus, replay that corpus through the firmware's core and
the simulator's board model comparing replies and widths after every operation,
and run structured random scripts (hypothesis) through both. A long run is
``make -C tools/fuzz long`` (README, tools/fuzz/Makefile).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from armctl.sim.board import Board
from tests.helpers import require
from tools.fuzz import proto_diff

FUZZ = Path(__file__).resolve().parents[2] / "tools" / "fuzz"

SMOKE_SECONDS = 20
REPLAY_SECONDS = 15


def _make(*args: str, timeout_s: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-C", str(FUZZ), *args], capture_output=True, text=True, timeout=timeout_s)


@pytest.fixture(scope="module")
def lib():
    """The host build of firmware/proto.c (and the libFuzzer target), built once."""
    require(shutil.which("clang") is not None, "clang (Debian: clang, libclang-rt-14-dev) for the fuzz harness")
    proc = _make("all")
    require(proc.returncode == 0, f"the fuzz harness does not build: {proc.stderr[-600:]}")
    return proto_diff.load_lib()


@pytest.fixture(scope="module")
def smoke(lib, tmp_path_factory):
    """A bounded libFuzzer run from the seeds into a fresh corpus: (corpus directory, libFuzzer's output)."""
    corpus = tmp_path_factory.mktemp("corpus")
    proc = _make("smoke", f"FUZZ_SECONDS={SMOKE_SECONDS}", f"CORPUS={corpus}", timeout_s=SMOKE_SECONDS + 240)
    return corpus, proc


def test_fuzz_smoke_finds_no_crash(smoke):
    corpus, proc = smoke
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    done = re.search(r"Done (\d+) runs", out)
    final = re.findall(r"DONE\s+cov: (\d+) ft: (\d+)", out)
    assert done and final, out[-2000:]
    runs, (cov, ft) = int(done.group(1)), final[-1]
    print(f"libFuzzer: {runs} executions, cov {cov} ft {ft}, {len(list(corpus.iterdir()))} corpus files")
    assert runs > 1000
    assert any(corpus.iterdir())


def test_corpus_replays_alike_on_firmware_and_model(lib, smoke):
    corpus, _ = smoke
    seeds = FUZZ / "build" / "seeds"
    assert proto_diff.cmd_replay(lib, [str(seeds), str(corpus)], REPLAY_SECONDS) == 0


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_structured_scripts_alike_on_firmware_and_model(lib, data):
    if data.draw(st.integers(0, 19), label="raw") == 0:
        script = data.draw(st.binary(max_size=300), label="bytes")
    else:
        script = proto_diff.generate(lambda lo, hi: data.draw(st.integers(lo, hi)))
    d = proto_diff.run_script(lib, script)
    assert d is None, str(d)


def test_vectors_as_scripts_alike(lib):
    files = proto_diff.vectors.vector_files(proto_diff.ROOT / "tests" / "vectors" / "v2")
    assert len(files) >= 17
    for path in files:
        d = proto_diff.run_script(lib, proto_diff.vector_script(path))
        assert d is None, f"{path.name}: {d}"


def test_script_escapes(lib):
    ops = proto_diff.decode(lib, b"1 Q\x03\x01\x00\x02\x01x\n\x02")
    assert ops == [("feed", b"1 Q"), ("feed", b" *41B7\n"), ("wait", 1000), ("wait", 80000), ("feed", b"x\n")]
    # the clock stops at 2^31 ticks (the firmware's uint32 clock never wraps in a script)
    waits = [v for k, v in proto_diff.decode(lib, b"\x02\xff" * 300) if k == "wait"]
    assert sum(waits) == 2**31


class _OldBoard(Board):
    """The board as issue 11 found the firmware: a width of 0 taken as '-'."""

    def _cmd_M(self, args):
        return super()._cmd_M([a if a != "0" else "-" for a in args])


def test_differential_catches_a_disagreement(lib, monkeypatch):
    monkeypatch.setattr(proto_diff, "Board", _OldBoard)
    d = proto_diff.run_script(lib, b"0 H\x031 M 100 0 - - - - - - -\x03")
    assert d is not None and "replies differ" in d.what
    assert "1 R 2 16 RANGE" in d.what and "1 A 2 15" in d.what


class _Version1Widths(Board):
    """A model that still reads version 1 widths (microseconds, ``.5``) in a version 2 board."""

    def _cmd_M(self, args):
        return super()._cmd_M([a if a == "-" or "." not in a else str(int(float(a) * 2)) for a in args])


def test_differential_catches_a_version_1_width_taken_in_version_2(lib, monkeypatch):
    monkeypatch.setattr(proto_diff, "Board", _Version1Widths)
    d = proto_diff.run_script(lib, b"0 H\x031 M 1 1500.5 - - - - - - -\x03")
    assert d is not None and "1 R 2 16 ARG" in d.what and "1 A 2 15" in d.what


def test_the_state_compared_covers_every_channel(lib):
    """Channel 7's width and limits are compared too: the state vector is laid out for 8 channels."""
    script = b"0 H\x031 L 7 1200 4800\x032 M 1 - - - - - - - 4321\x03\x02\x00"
    fw, model = proto_diff.FirmwareCore(lib, 1), proto_diff.ModelCore(1)
    try:
        for kind, val in proto_diff.decode(lib, script):
            if kind == "feed":
                fw.feed(val, 0)
                model.feed(val, 0)
            else:
                fw.advance(val)
                model.advance(val)
        names = proto_diff.STATE_NAMES
        state = dict(zip(names, fw.state(), strict=True))
        assert state["width7"] == state["out7"] == 4321 and (state["lo7"], state["hi7"]) == (1200, 4800)
        assert fw.state() == model.state()
    finally:
        fw.close()
