"""Differential test of the armctl protocol, version 2: the firmware's core against the simulator's board model.

The firmware's line handler (firmware/proto.c, built for the host as
build/libproto_host.so, see proto_host.h) and the simulator's board
(armctl.sim.board.Board) get the same fuzz script: the same bytes at the same
virtual times (0.5 us ticks; the model runs on exact fractions). After every
operation their replies must be byte for byte the same, and so must their
state: planned and output widths, enable mask, limits, queue length and frames
left, counters, sequence, watchdog. The firmware's invariants (ph_check) are
checked too.

A fuzz script is bytes for the board with three escapes (proto_host.h):
``01 k`` lets (k+1) * 0.5 ms pass, ``02 k`` (k+1) frames, ``03`` ends the line
with a good checksum. The libFuzzer target (fuzz_proto.c) reads the same
scripts, so its corpus replays here.

    python proto_diff.py seeds DIR                          seed scripts from tests/vectors and a generator
    python proto_diff.py replay [--seconds S] PATH...       replay script files / directories of them
    python proto_diff.py random [--seconds S] [--examples N] structured random scripts (hypothesis)

Exit status 1 on the first divergence, which is printed and saved as build/diff-<hash>.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for _path in (ROOT, ROOT / "tests"):  # armctl, and the test vectors' reader (tests/protocol_vectors.py)
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import protocol_vectors as vectors  # noqa: E402

from armctl.bus import codec  # noqa: E402
from armctl.sim.board import Board  # noqa: E402

LIB_PATH = HERE / "build" / "libproto_host.so"
TICKS_PER_S = 2_000_000
BOOT_DEFAULT = 0x3F2A
PROTOCOL = 2  # what the firmware speaks
NCH = 8  # its channels (proto_host.h: PH_NCH)
STATE_NAMES = (
    "frame",
    "expect",
    "free",
    "synced",
    "mask",
    *(f"width{ch}" for ch in range(NCH)),
    *(f"out{ch}" for ch in range(NCH)),
    *(f"lo{ch}" for ch in range(NCH)),
    *(f"hi{ch}" for ch in range(NCH)),
    *(f"count_{k}" for k in codec.COUNTER_NAMES),
    "left",
    "wd_armed",
    "wd_deadline",
    "wd_ms",
    "wd_mode",
)


def load_lib(path: str | Path = LIB_PATH) -> ctypes.CDLL:
    """The host build of the firmware's core (``make -C tools/fuzz`` builds it)."""
    lib = ctypes.CDLL(str(path))
    vp, u8p, sz, u64 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64
    lib.ph_new.restype = vp
    lib.ph_new.argtypes = [ctypes.c_uint16]
    lib.ph_free.argtypes = [vp]
    lib.ph_banner.argtypes = [vp]
    lib.ph_advance.argtypes = [vp, u64]
    lib.ph_feed.argtypes = [vp, u8p, sz, u64]
    lib.ph_pending.restype = sz
    lib.ph_pending.argtypes = [vp]
    lib.ph_take.restype = sz
    lib.ph_take.argtypes = [vp, ctypes.c_char_p, sz]
    lib.ph_state.argtypes = [vp, ctypes.POINTER(ctypes.c_int64), sz]
    lib.ph_check.restype = ctypes.c_int
    lib.ph_check.argtypes = [vp, ctypes.c_char_p, sz]
    lib.ph_decode.restype = sz
    lib.ph_decode.argtypes = [u8p, sz, ctypes.c_char_p, sz]
    return lib


def decode(lib: ctypes.CDLL, script: bytes) -> list[tuple[str, bytes | int]]:
    """A script as operations, by the firmware harness's own decoder: ("feed", bytes) or ("wait", ticks)."""
    cap = 12 * len(script) + 16
    buf = ctypes.create_string_buffer(cap)
    n = lib.ph_decode(script, len(script), buf, cap)
    raw, ops, i = buf.raw[:n], [], 0
    while i < n:
        if raw[i : i + 1] == b"F":
            size = int.from_bytes(raw[i + 1 : i + 5], "little")
            ops.append(("feed", raw[i + 5 : i + 5 + size]))
            i += 5 + size
        else:
            ops.append(("wait", int.from_bytes(raw[i + 1 : i + 9], "little")))
            i += 9
    return ops


def boot_id(script: bytes) -> int:
    """The boot id fuzz_proto.c gives a script's board."""
    return script[0] * 257 if script else BOOT_DEFAULT


class FirmwareCore:
    """firmware/proto.c on the host, through ctypes."""

    def __init__(self, lib: ctypes.CDLL, boot: int):
        self.lib = lib
        self.h = lib.ph_new(boot)

    def banner(self) -> None:
        self.lib.ph_banner(self.h)

    def feed(self, data: bytes, t: int) -> None:
        self.lib.ph_feed(self.h, data, len(data), t)

    def advance(self, t: int) -> None:
        self.lib.ph_advance(self.h, t)

    def take(self) -> bytes:
        n = self.lib.ph_pending(self.h)
        buf = ctypes.create_string_buffer(max(n, 1))
        got = self.lib.ph_take(self.h, buf, n)
        return buf.raw[:got]

    def state(self) -> tuple[int, ...]:
        arr = (ctypes.c_int64 * len(STATE_NAMES))()
        self.lib.ph_state(self.h, arr, len(STATE_NAMES))
        return tuple(arr)

    def check(self) -> str | None:
        why = ctypes.create_string_buffer(256)
        return why.value.decode("ascii", "replace") if self.lib.ph_check(self.h, why, 256) else None

    def close(self) -> None:
        if self.h:
            self.lib.ph_free(self.h)
            self.h = None


class ModelCore:
    """The simulator's board model with the firmware's name, on an exact clock."""

    def __init__(self, boot: int):
        self.board = Board(
            protocol=PROTOCOL, channels=NCH, depth=16, firmware="armctl-fw", boot=boot, frame_s=Fraction(1, 50)
        )
        self.out = bytearray()

    def banner(self) -> None:
        self.out += self.board.banner()

    def feed(self, data: bytes, t: int) -> None:
        self.out += self.board.receive(data, Fraction(t, TICKS_PER_S))

    def advance(self, t: int) -> None:
        self.out += self.board.advance_to(Fraction(t, TICKS_PER_S))

    def take(self) -> bytes:
        out = bytes(self.out)
        self.out.clear()
        return out

    def state(self) -> tuple[int, ...]:
        b = self.board
        deadline = b.wdog_deadline
        return (
            b.frame % 2**32,
            b.expect,
            b.free,
            int(b.synced),
            b.mask,
            *(w or 0 for w in b.width),
            *(w or 0 for w in b.out),
            *(lo for lo, _ in b.limits),
            *(hi for _, hi in b.limits),
            *(b.counters[k] % 65536 for k in codec.COUNTER_NAMES),
            b.left_frames,
            int(deadline is not None),
            -1 if deadline is None else int(Fraction(deadline) * TICKS_PER_S),
            int(b.wdog_s * 1000),
            ord(b.wdog_mode),
        )


@dataclass
class Divergence:
    """The first operation after which firmware and model differ (or an invariant fails)."""

    script: bytes
    op: int
    t_ticks: int
    what: str
    context: list[str]

    def __str__(self) -> str:
        lines = [f"divergence after op {self.op} (t = {self.t_ticks / 2000:g} ms): {self.what}"]
        lines += ["  recent ops:", *(f"    {c}" for c in self.context)]
        return "\n".join(lines)


def run_script(lib: ctypes.CDLL, script: bytes) -> Divergence | None:
    """Run one script through both implementations, comparing after every operation."""
    boot = boot_id(script)
    fw, model = FirmwareCore(lib, boot), ModelCore(boot)
    context: list[str] = []
    try:
        fw.banner()
        model.banner()
        t = 0
        for i, (kind, val) in enumerate([("start", b""), *decode(lib, script)]):
            if kind == "feed":
                fw.feed(val, t)
                model.feed(val, t)
                context.append(f"feed {val!r}")
            elif kind == "wait":
                t += val
                fw.advance(t)
                model.advance(t)
                context.append(f"wait {val / 2000:g} ms")
            a, b = fw.take(), model.take()
            if a:
                context.append(f"  firmware sent {a!r}")
            del context[:-8]
            if a != b:
                return Divergence(script, i, t, f"replies differ:\n  firmware {a!r}\n  model    {b!r}", context)
            sa, sb = fw.state(), model.state()
            if sa != sb:
                diff = [f"{n}: firmware {x}, model {y}" for n, x, y in zip(STATE_NAMES, sa, sb, strict=True) if x != y]
                return Divergence(script, i, t, "state differs: " + "; ".join(diff), context)
            why = fw.check()
            if why:
                return Divergence(script, i, t, f"firmware invariant: {why}", context)
        return None
    finally:
        fw.close()


def save_divergence(d: Divergence, directory: Path = HERE / "build") -> Path:
    """Write the script that diverged (replay it with ``replay PATH`` or ``build/fuzz_proto PATH``)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"diff-{hashlib.sha1(d.script).hexdigest()[:12]}"
    path.write_bytes(d.script)
    return path


# --- scripts ----------------------------------------------------------------------------------------


def vector_script(path: str | Path) -> bytes:
    """A test vector's host side (tests/vectors/v2/*.txt) as a script: its bytes and its waits."""
    vf = vectors.load(path)
    if vf.protocol != PROTOCOL:
        raise ValueError(f"{path}: protocol version {vf.protocol}; the firmware speaks {PROTOCOL}")
    out = bytearray(b"\x01\x09")  # 5 ms after boot, like the vector runner
    for step in vf.steps:
        if step.op == "send":
            if any(b in (1, 2, 3) for b in step.data):
                raise ValueError(f"{path}:{step.line}: bytes 01..03 are script escapes")
            out += step.data
        elif step.op == "wait":
            n = step.frames
            while n > 0:
                k = min(n, 256)
                out += bytes([2, k - 1])
                n -= k
    return bytes(out)


def generate(pick: Callable[[int, int], int], *, max_lines: int = 40) -> bytes:
    """A structured script: mostly well-formed commands with good checksums and plausible sequence
    numbers, values at and around the edges of their ranges, malformed numbers, duplicates, gaps,
    corrupted and overlong lines, CRLF, and time passing between them.

    ``pick(lo, hi)`` returns an integer in lo..hi: hypothesis's ``draw`` (shrinkable) or a
    ``random.Random``'s ``randint``, so tests and seeds share this one generator."""

    def one(options):
        return options[pick(0, len(options) - 1)]

    def number(lo: int, hi: int, edges: list[str]) -> str:
        r = pick(0, 9)
        if r < 6:
            return str(pick(lo, hi))
        if r < 9:
            return one(edges)
        return one(["0" + str(pick(0, 99)), "1" * pick(11, 22), "x", "", "+1", "-"])

    def width() -> str:  # ticks of 0.5 us
        r = pick(0, 19)
        if r < 5:
            return "-"
        if r < 14:
            return str(pick(1000, 5000))
        return one(["999", "1000", "5000", "5001", "0", "1", "00", "0500", "3000.0", "1500.5", ".5", "9" * 19])

    out = bytearray()
    nxt = 0
    if pick(0, 9):
        out += b"0 H\x03"
        nxt = 1
    for _ in range(pick(1, max_lines)):
        r = pick(0, 99)
        if r < 12:  # time passes
            out += bytes([1, pick(0, 60)]) if pick(0, 1) else bytes([2, one([0, 0, 1, 2, 5, 10, 30, 255])])
            continue
        if r < 15:  # raw bytes, maybe an overlong line
            out += bytes(pick(4, 127) for _ in range(pick(0, 70))) + one([b"\n", b"", b"\r\n"])
            continue
        s = pick(0, 19)
        if s < 14:
            seq = str(nxt % 256)
        elif s < 17:
            seq = str((nxt - pick(1, 3)) % 256)  # a duplicate
        elif s < 19:
            seq = str((nxt + pick(1, 200)) % 256)  # a gap, or far behind
        else:
            seq = one(["256", "01", "-", "x"])
        kind = one("MMMMMMMEEEWWLLQQXHZ")
        if kind == "M":
            args = [number(1, 60, ["0", "1", "65535", "65536", "00", "01"]), *(width() for _ in range(NCH))]
        elif kind == "E":
            masks = ["FF", "FF", "FE", "7F", "F", "F0", "5A", "80", "1", "0", "ff", "100", "1FF", "0FF", "00", "G"]
            args = [one(masks)]
        elif kind == "W":
            args = [number(20, 200, ["0", "19", "20", "65535", "65536", "020"]), one(["H", "H", "O", "O", "X"])]
        elif kind == "L":
            args = [number(0, NCH - 1, [str(NCH), "00", "256"]), width(), width()]
        else:
            args = []
        if pick(0, 29) == 0:
            args = args[:-1] if args and pick(0, 1) else [*args, one(["-", "1", "F"])]
        if kind == "H" and seq.isdigit():
            nxt = int(seq) + 1
        elif kind in "MEWL" and s < 14:
            nxt += 1
        body = " ".join([seq, kind, *args]).encode("ascii")
        e = pick(0, 19)
        if e < 16:
            out += body + b"\x03"  # a good checksum
        elif e < 17:  # CRLF, checksum computed here
            full = body + b" "
            out += full + b"*%04X\r\n" % codec.crc16(full)
        elif e < 19:  # one byte damaged after the checksum was computed
            full = bytearray(body + b" " + b"*%04X" % codec.crc16(body + b" "))
            full[pick(0, len(full) - 1)] ^= 1 << pick(0, 6)
            out += bytes(full).replace(b"\n", b"?").translate(_NO_ESCAPES) + b"\n"
        else:
            out += body + b" *0000\n"
    return bytes(out)


_NO_ESCAPES = bytes.maketrans(b"\x01\x02\x03", b"???")


def write_seeds(directory: str | Path, *, generated: int = 64) -> int:
    """Seed scripts for the fuzzer: every test vector, and ``generated`` structured scripts (fixed seed)."""
    import random

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    n = 0
    for path in vectors.vector_files(ROOT / "tests" / "vectors" / "v2"):
        (d / f"vector-{path.stem}").write_bytes(vector_script(path))
        n += 1
    rng = random.Random(11)
    for k in range(generated):
        (d / f"gen-{k:03d}").write_bytes(generate(rng.randint))
        n += 1
    return n


def script_files(paths: list[str]) -> list[Path]:
    """Files given, and the files in the directories given (sorted)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(f for f in p.iterdir() if f.is_file())
        elif p.is_file():
            out.append(p)
    return out


# --- command line -----------------------------------------------------------------------------------


def _report(d: Divergence) -> int:
    print(d, file=sys.stderr)
    print(f"script saved as {save_divergence(d)}", file=sys.stderr)
    return 1


def cmd_replay(lib: ctypes.CDLL, paths: list[str], seconds: float | None) -> int:
    files = script_files(paths)
    t0, done, nbytes = time.monotonic(), 0, 0
    for f in files:
        if seconds is not None and time.monotonic() - t0 > seconds:
            break
        script = f.read_bytes()
        d = run_script(lib, script)
        if d is not None:
            print(f"{f}:", file=sys.stderr)
            return _report(d)
        done += 1
        nbytes += len(script)
    print(f"replay: {done} of {len(files)} scripts ({nbytes} bytes) agree, {time.monotonic() - t0:.1f} s")
    return 0


def cmd_random(lib: ctypes.CDLL, seconds: float, examples: int | None, seed: int | None) -> int:
    """Structured random scripts (``generate``, and raw bytes one time in 20) through both, with
    hypothesis shrinking the first divergence: batches of 200 until ``seconds``, or ``examples``
    exactly (one batch, reproducible with ``seed``)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as fixed_seed
    from hypothesis import strategies as st

    found: list[Divergence] = []
    count = [0]

    @st.composite
    def scripts(draw):
        if draw(st.integers(0, 19)) == 0:
            return draw(st.binary(max_size=300))
        return generate(lambda lo, hi: draw(st.integers(lo, hi)))

    def check(script: bytes) -> None:
        count[0] += 1
        d = run_script(lib, script)
        if d is not None:
            found[:] = [d]  # the last one raised is the shrunk one
            raise AssertionError(str(d))

    t0 = time.monotonic()
    while True:
        test = given(scripts())(check)
        test = settings(
            max_examples=examples or 200, deadline=None, database=None, suppress_health_check=list(HealthCheck)
        )(test)
        if seed is not None:
            test = fixed_seed(seed)(test)
        try:
            test()
        except AssertionError:
            return _report(found[-1])
        if examples is not None or seed is not None or time.monotonic() - t0 > seconds:
            break
    print(f"random: {count[0]} scripts agree, {time.monotonic() - t0:.1f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", default=str(LIB_PATH), help="host build of the firmware core (default: %(default)s)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("seeds", help="write seed scripts")
    s.add_argument("directory")
    r = sub.add_parser("replay", help="replay script files or directories")
    r.add_argument("paths", nargs="+")
    r.add_argument("--seconds", type=float, default=None, help="stop after this long (default: replay all)")
    g = sub.add_parser("random", help="structured random scripts through both implementations")
    g.add_argument("--seconds", type=float, default=20.0, help="time budget (default %(default)s)")
    g.add_argument("--examples", type=int, default=None, help="run exactly this many examples instead")
    g.add_argument("--seed", type=int, default=None, help="hypothesis seed (one batch, reproducible)")
    args = ap.parse_args(argv)
    if args.cmd == "seeds":
        n = write_seeds(args.directory)
        print(f"seeds: {n} scripts in {args.directory}")
        return 0
    lib = load_lib(args.lib)
    if args.cmd == "replay":
        return cmd_replay(lib, args.paths, args.seconds)
    return cmd_random(lib, args.seconds, args.examples, args.seed)


if __name__ == "__main__":
    raise SystemExit(main())
