"""``armctl ik --targets FILE``: a file of targets solved in chunks, read and written in bulk.

The file is read once, a block (about 1 MiB of text) at a time, and every line is checked before
anything is written, so a mistake anywhere gives its one error line and nothing on stdout (as when
the file was read whole). The parsed targets (24 or 32 bytes a row) wait in a temporary file (in memory up
to 16 MiB), then are solved with ``solve_batch`` and written out in chunks of 32768 rows. Memory
stays bounded whatever the file's length.

Blocks of plain numbers are parsed by numpy's C reader; lines with anything else (units, comments,
headers, other line breaks, non-ASCII) go through the line parser, which gives the same values and
the same errors as reading the file line by line always did.

A line is ``x,y[,phi_deg]`` for a planar arm and ``x,y,z[,phi_deg]`` for an arm on a base; an arm with a wrist
roll takes ``x,y,z[,phi_deg[,roll_deg]]`` (an empty field: not given; a row without a roll keeps the start pose's),
or its optional columns in the order a header names them (``x,y,z,roll_deg``). That ``Layout`` is passed down to
every parser.
"""

from __future__ import annotations

import io
import math
import sys
import tempfile
import warnings
from dataclasses import dataclass

import numpy as np

from armctl.core import numtext as nt
from armctl.core.units import MAX_LENGTH_M, parse_float, parse_length
from armctl.errors import BadInputError

BLOCK_BYTES = 1 << 20  # text read, parsed and checked at a time
SOLVE_ROWS = 1 << 15  # rows solved and formatted at a time
SPOOL_BYTES = 16 << 20  # parsed targets kept in memory up to this, then in a temporary file

_PLAIN = np.zeros(256, dtype=bool)  # bytes numpy's reader may see: numbers, commas, blanks, newlines
_PLAIN[np.frombuffer(b"0123456789.+-eE, \t\n", np.uint8)] = True

PHI, ROLL = "phi_deg", "roll_deg"


@dataclass(frozen=True)
class Layout:
    """What a line holds: ``dims`` coordinates (2: x, y; 3: x, y, z), then the optional columns ``extra`` in that
    order. An arm with a wrist roll (``roll``) takes ``phi_deg`` then ``roll_deg``, or the order a header line
    names (``x,y,z,roll_deg``); an empty optional field there is not given. Other arms: ``phi_deg`` only."""

    dims: int = 2
    roll: bool = False
    arm: str = ""
    extra: tuple = (PHI,)

    @staticmethod
    def of(dims: int, roll: bool = False, arm: str = "") -> Layout:
        """The layout of an arm's targets without a header."""
        return Layout(dims, roll, arm, (PHI, ROLL) if roll else (PHI,))

    def col(self, what: str) -> int | None:
        """The field index of an optional column, or None if the lines have none."""
        return self.dims + self.extra.index(what) if what in self.extra else None


def form(lay: Layout | int) -> str:
    """How a line looks, in words."""
    if isinstance(lay, int):
        lay = Layout.of(lay)
    if not lay.roll:
        return "'x,y' or 'x,y,phi_deg'" if lay.dims == 2 else "'x,y,z' or 'x,y,z,phi_deg'"
    xyz = ",".join("xyz"[: lay.dims])
    tail = "".join(f"[,{c}" for c in lay.extra) + "]" * len(lay.extra)
    return f"'{xyz}{tail}' (an empty field: not given)"


def header_layout(fields: list, lineno: int, name: str, lay: Layout) -> Layout:
    """The layout a header line (``x,y,z,roll_deg``) names: the columns after the coordinates in their order when
    it names ``roll_deg``, else the arm's default (any header was taken so before rolls)."""
    names = [f.strip().lower() for f in fields[lay.dims :]]
    if ROLL not in names:
        return Layout.of(lay.dims, lay.roll, lay.arm)
    if not lay.roll:
        raise BadInputError(f"{name}:{lineno}: a roll_deg column, but arm '{lay.arm}' has no wrist roll")
    for n in names:
        if n not in (PHI, ROLL) or names.count(n) > 1:
            raise BadInputError(
                f"{name}:{lineno}: header column {n!r}: after the coordinates come phi_deg and roll_deg, once each"
            )
    return Layout(lay.dims, lay.roll, lay.arm, tuple(names))


@dataclass
class Block:
    """Targets parsed from one block of lines: ``pts`` (k, dims) m, ``phi`` (k,) rad (NaN: none given), ``roll``
    (k,) rad (NaN: none given, the roll is kept)."""

    pts: np.ndarray
    phi: np.ndarray
    has_phi: np.ndarray
    lines: int  # how many lines the block holds
    roll: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.roll is None:
            self.roll = np.full(len(self.pts), np.nan)

    @property
    def has_roll(self) -> np.ndarray:
        return ~np.isnan(self.roll)

    def __len__(self) -> int:
        return len(self.pts)


def _optional(field: str, what: str, lay: Layout) -> float | None:
    """An optional column's value (rad), None when empty on an arm with a roll."""
    if lay.roll and not field:
        return None
    return math.radians(parse_float(field, what=what))


def parse_line(line: str, lineno: int, name: str, lay: Layout | int = 2):
    """One line of a targets file: ``((x_m, y_m[, z_m]), phi_rad or None, roll_rad or None)``, or None for a
    blank, comment or header line; BadInputError naming ``name:lineno`` for anything else."""
    if isinstance(lay, int):
        lay = Layout.of(lay)
    text = line.split("#", 1)[0].strip()
    if not text:
        return None
    fields = [f.strip() for f in text.split(",")]
    dims = lay.dims
    if fields[0].lower() in ("x", "x_m"):
        if header_layout(fields, lineno, name, lay) != lay:
            raise BadInputError(f"{name}:{lineno}: this header names other columns than the file's first one")
        return None  # a header line
    if not dims <= len(fields) <= dims + len(lay.extra):
        raise BadInputError(f"{name}:{lineno}: expected {form(lay)}, found {line.strip()!r}")
    try:
        pt = tuple(parse_length(f, what=w) for f, w in zip(fields, "xyz"[:dims]))
        got = dict(zip(lay.extra, fields[dims:]))
        phi = _optional(got[PHI], PHI, lay) if PHI in got else None
        roll = _optional(got[ROLL], ROLL, lay) if ROLL in got else None
    except BadInputError as exc:
        raise BadInputError(f"{name}:{lineno}: {exc}") from None
    return pt, phi, roll


def _from_rows(rows: list, lines: int, dims: int) -> Block:
    k = len(rows)
    pts = np.array([r[0] for r in rows], dtype=float).reshape(k, dims)
    has_phi = np.array([r[1] is not None for r in rows], dtype=bool)
    phi = np.array([np.nan if r[1] is None else r[1] for r in rows], dtype=float)
    roll = np.array([np.nan if r[2] is None else r[2] for r in rows], dtype=float)
    return Block(pts, phi, has_phi, lines, roll)


def _parse_lines(text: str, first_line: int, name: str, lay: Layout) -> Block:
    lines = text.splitlines()
    rows = []
    for i, line in enumerate(lines):
        row = parse_line(line, first_line + i, name, lay)
        if row is not None:
            rows.append(row)
    return _from_rows(rows, len(lines), lay.dims)


def _parse_plain(block: bytes, first_line: int, name: str, lay: Layout) -> Block | None:
    """numpy's reader on the plain lines and the line parser on the others; None if anything is
    unusual (then the whole block goes through the line parser, which finds the first mistake)."""
    dims = lay.dims
    if not block.isascii():
        return None
    if b"\r" in block:  # Windows line ends are fine; other uses of CR are line breaks: the line parser
        block = block.replace(b"\r\n", b"\n")
        if b"\r" in block:
            return None
    buf = np.frombuffer(block, np.uint8)
    nl = np.flatnonzero(buf == 10)
    n_lines = len(nl) + (1 if len(buf) and buf[-1] != 10 else 0)
    odd = np.flatnonzero(~_PLAIN[buf])
    special: list[int] = []
    if odd.size:
        special = np.unique(np.searchsorted(nl, odd)).tolist()  # line index of each odd byte
        if len(special) * 8 > n_lines:
            return None
    starts = np.concatenate([[0], nl + 1])
    ends = np.concatenate([nl, [len(buf)]])
    extra = []  # (line index, row) from lines the line parser read
    if special:
        text = block.decode("ascii")
        pieces, prev = [], 0
        for j in special:
            s, e = int(starts[j]), int(ends[j])
            try:
                row = parse_line(text[s:e], first_line + j, name, lay)
            except BadInputError:
                return None
            if row is not None:
                extra.append((j, row))
            pieces.append(block[prev:s])
            prev = min(e + 1, len(block))
        pieces.append(block[prev:])
        plain = b"".join(pieces)
    else:
        plain = block
    if plain.strip():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                vals = np.loadtxt(
                    io.StringIO(plain.decode("ascii")), delimiter=",", dtype=float, ndmin=2, comments=None
                )
        except (ValueError, UserWarning):
            return None
        if not dims <= vals.shape[1] <= dims + len(lay.extra) or not np.all(np.abs(vals[:, :dims]) <= MAX_LENGTH_M):
            return None  # too many or too few fields, NaN, inf, beyond 1 km: the line parser says which
        if vals.shape[1] > dims and not np.all(np.isfinite(vals[:, dims:])):
            return None
    else:
        vals = np.zeros((0, dims))
    k = len(vals)
    pts = vals[:, :dims]
    cols = {c: dims + j for j, c in enumerate(lay.extra) if dims + j < vals.shape[1]}
    has_phi = np.full(k, PHI in cols)
    phi = np.radians(vals[:, cols[PHI]]) if PHI in cols else np.full(k, np.nan)
    roll = np.radians(vals[:, cols[ROLL]]) if ROLL in cols else np.full(k, np.nan)
    if extra:
        # Put the line parser's rows where their lines are among the plain rows (numpy's reader
        # skipped the empty lines; a blank one made it fail).
        kept = starts[:n_lines] < ends[:n_lines]
        kept[special] = False
        plain_rows = np.flatnonzero(kept)
        if len(plain_rows) != k:
            return None
        extra_block = _from_rows([r for _, r in extra], 0, dims)
        order = np.argsort(np.concatenate([plain_rows, [j for j, _ in extra]]), kind="stable")
        pts = np.concatenate([pts, extra_block.pts])[order]
        phi = np.concatenate([phi, extra_block.phi])[order]
        has_phi = np.concatenate([has_phi, extra_block.has_phi])[order]
        roll = np.concatenate([roll, extra_block.roll])[order]
    return Block(np.ascontiguousarray(pts), phi, has_phi, n_lines, roll)


def parse_block(block: bytes, first_line: int, name: str, lay: Layout | int = 2) -> Block:
    """The targets in ``block`` (whole lines of the file, the first being line ``first_line``).
    Raises BadInputError naming the first bad line, UnicodeDecodeError (offsets within the block)."""
    if isinstance(lay, int):
        lay = Layout.of(lay)
    parsed = _parse_plain(block, first_line, name, lay)
    if parsed is None:
        parsed = _parse_lines(block.decode("utf-8"), first_line, name, lay)
    return parsed


class TargetSource:
    """The targets file (or standard input) as blocks of whole lines."""

    def __init__(self, path: str):
        self.path = path
        self.name = "<stdin>" if path == "-" else path
        if path == "-":
            self._fh = getattr(sys.stdin, "buffer", None) or io.BytesIO(sys.stdin.read().encode("utf-8"))
        else:
            try:
                self._fh = open(path, "rb")  # noqa: SIM115 (closed by close())
            except OSError as exc:
                raise BadInputError(f"{path}: cannot read: {exc.strerror or exc}") from None

    def close(self) -> None:
        if self.path != "-":
            self._fh.close()

    def blocks(self):
        """Yield (bytes, offset of its first byte in the file), each ending at a line end."""
        offset, rest = 0, b""
        while True:
            try:
                data = self._fh.read(BLOCK_BYTES)
            except OSError as exc:
                raise BadInputError(f"{self.name}: cannot read: {exc.strerror or exc}") from None
            if not data:
                if rest:
                    yield rest, offset
                return
            data = rest + data
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                rest = data
                continue
            yield data[:cut], offset
            offset += cut
            rest = data[cut:]


class Checked:
    """The whole file, checked and parsed: row count, how many give a tool angle and a roll, the line of the
    first that gives a tool angle (for 2-link arms), and the parsed rows waiting to be solved (``chunks``)."""

    def __init__(self, dims: int = 2):
        self.dims = dims
        self.rows = 0
        self.with_phi = 0
        self.with_roll = 0
        self.first_phi_line: int | None = None
        self._spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)

    def add(self, parsed: Block) -> None:
        d = self.dims
        rec = np.empty((len(parsed), d + 2))
        rec[:, :d] = parsed.pts
        rec[:, d] = parsed.phi  # NaN: no tool angle on that line (given angles are finite)
        rec[:, d + 1] = parsed.roll  # NaN: no roll (the roll is kept)
        self._spool.write(rec.tobytes())
        self.rows += len(parsed)
        self.with_phi += int(parsed.has_phi.sum())
        self.with_roll += int(parsed.has_roll.sum())

    def chunks(self):
        """The parsed targets in file order, at most SOLVE_ROWS at a time."""
        self._spool.seek(0)
        while True:
            d = self.dims
            data = self._spool.read(SOLVE_ROWS * 8 * (d + 2))
            if not data:
                return
            rec = np.frombuffer(data, dtype=float).reshape(-1, d + 2)
            has_phi = ~np.isnan(rec[:, d])
            yield Block(np.ascontiguousarray(rec[:, :d]), rec[:, d].copy(), has_phi, 0, rec[:, d + 1].copy())

    def close(self) -> None:
        self._spool.close()


def _file_layout(block: bytes, line: int, name: str, lay: Layout) -> Layout:
    """The layout a header on the file's first line with anything on it names (else ``lay``)."""
    for i, text in enumerate(block.decode("utf-8", errors="replace").splitlines()):
        text = text.split("#", 1)[0].strip()
        if text:
            fields = [f.strip() for f in text.split(",")]
            return header_layout(fields, line + i, name, lay) if fields[0].lower() in ("x", "x_m") else lay
    return lay


def check_all(src: TargetSource, arm_links: int, lay: Layout | int = 2, roll_check=None) -> Checked:
    """Read and parse every line (``lay``: the coordinates, then the optional tool angle and roll): the first
    mistake raises BadInputError (a file that is not UTF-8 anywhere is reported first, as when the file was
    decoded whole). ``arm_links``: the chain's links (a tool angle needs 3); ``roll_check(rad)`` raises
    BadInputError for a roll the arm cannot take. The caller closes the result."""
    if isinstance(lay, int):
        lay = Layout.of(lay)
    line, error = 1, None
    checked = Checked(lay.dims)
    try:
        for block, offset in src.blocks():
            try:
                if error is not None:
                    if not block.isascii():
                        block.decode("utf-8")
                    continue
                if line == 1:
                    lay = _file_layout(block, line, src.name, lay)
                parsed = parse_block(block, line, src.name, lay)
                if roll_check is not None and parsed.has_roll.any():
                    _check_rolls(block, parsed, line, src.name, lay, roll_check)
            except UnicodeDecodeError as exc:
                raise BadInputError(f"{src.name}: cannot read: not UTF-8 text (byte {offset + exc.start})") from None
            except BadInputError as exc:
                error = exc
                continue
            if checked.first_phi_line is None and arm_links != 3 and parsed.has_phi.any():
                checked.first_phi_line = _first_line(block.decode("utf-8"), line, src.name, lay, 1)  # the error
            checked.add(parsed)
            line += parsed.lines
        if error is not None:
            raise error
        if checked.rows == 0:
            raise BadInputError(f"{src.name}: no targets (expected one {form(lay)} a line)")
    except BaseException:
        checked.close()
        raise
    return checked


def _check_rolls(block: bytes, parsed: Block, line: int, name: str, lay: Layout, roll_check) -> None:
    """BadInputError naming the line of the block's first roll ``roll_check`` refuses."""

    def refusal(r: float) -> BadInputError | None:
        try:
            roll_check(r)
        except BadInputError as exc:
            return exc
        return None

    if not any(refusal(r) for r in np.unique(parsed.roll[parsed.has_roll]).tolist()):
        return
    text = block.decode("utf-8")
    at = _first_line(text, line, name, lay, 2, lambda r: refusal(r) is not None)
    if at is None:  # (the line parser read each roll as numpy's reader did)
        raise BadInputError(f"{name}: roll_deg: {next(filter(None, map(refusal, parsed.roll[parsed.has_roll])))}")
    row = parse_line(text.splitlines()[at - line], at, name, lay)
    raise BadInputError(f"{name}:{at}: roll_deg: {refusal(row[2])}")


def _first_line(text: str, first_line: int, name: str, lay: Layout, k: int, accept=None) -> int | None:
    """The line of the first row in ``text`` giving field ``k`` (1: the tool angle, 2: the roll) that ``accept``s."""
    for i, line in enumerate(text.splitlines()):
        row = parse_line(line, first_line + i, name, lay)
        if row is not None and row[k] is not None and (accept is None or accept(row[k])):
            return first_line + i
    return None


@dataclass
class Solved:
    """Results for a chunk of targets, one row each."""

    ok: np.ndarray
    q: np.ndarray
    error_m: np.ndarray
    shortfall_m: np.ndarray
    reasons: list
    iterations: np.ndarray


def solve_chunk(arm, chunk: Block, *, method: str, batch: bool, q0) -> Solved:
    """``solve_batch`` on the chunk (``batch``, no roll given), else ``solve`` row by row with ``method`` (each row
    at its roll, or the roll of ``q0``)."""
    from armctl.ik import solve, solve_batch

    has_roll = chunk.has_roll
    if batch and not has_roll.any():
        any_phi = bool(chunk.has_phi.any())
        res = solve_batch(arm, chunk.pts, phi=chunk.phi if any_phi else None, q0=q0)
        return Solved(
            np.asarray(res.ok, dtype=bool),
            res.q,
            np.asarray(res.error_m, dtype=float),
            np.asarray(res.shortfall_m, dtype=float),
            list(res.reasons),
            np.asarray(res.iterations),
        )
    out = []
    for t, p, h, roll, hr in zip(chunk.pts, chunk.phi.tolist(), chunk.has_phi.tolist(), chunk.roll, has_roll):
        kw = {"roll": float(roll)} if hr else {}
        out.append(solve(arm, t, phi=p if h else None, q0=q0, method=method, **kw))
    return Solved(
        np.array([bool(r.ok) for r in out], dtype=bool),
        np.array([r.q for r in out], dtype=float).reshape(len(out), arm.n),
        np.array([r.error_m for r in out], dtype=float),
        np.array([r.shortfall_m for r in out], dtype=float),
        [r.reason for r in out],
        np.array([int(r.iterations) for r in out], dtype=np.int64),
    )


def csv_header(n_joints: int, dims: int = 2, roll: bool = False) -> bytes:
    """The first line of the CSV output (``roll``: the arm has a wrist roll, its angle after the joints')."""
    qcols = ",".join(f"q{i + 1}_deg" for i in range(n_joints)) + (",roll_deg" if roll else "")
    xyz = ",".join(f"{c}_m" for c in "xyz"[:dims])
    return f"{xyz},ok,{qcols},error_m,shortfall_m\n".encode("ascii")


def csv_rows(chunk: Block, res: Solved, roll: bool = False) -> bytes:
    """``x,y[,z],ok,q1..qn (deg)[,roll_deg],error_m,shortfall_m`` lines for the chunk."""
    k = len(chunk)
    comma = nt.literal(",", k)
    qd = np.degrees(res.q)
    fields = []
    for j in range(chunk.pts.shape[1]):
        fields += [nt.fixed(chunk.pts[:, j], 6), comma]
    fields.append(nt.choose(res.ok, "1", "0"))
    for j in range(qd.shape[1]):
        fields += [comma, nt.fixed(qd[:, j], 6)]
    if roll:
        fields += [comma, nt.fixed(qd[:, -1], 6)]
    fields += [comma, nt.sci(res.error_m, 3), comma, nt.fixed(res.shortfall_m, 6), nt.literal("\n", k)]
    return nt.join(fields)


def json_rows(chunk: Block, res: Solved, method: str, roll: bool = False) -> bytes:
    """The chunk's results as JSON objects separated by ', ' (what ``json.dumps`` of the list writes
    between its brackets); ``roll``: each with the wrist roll's angle (``roll_deg``)."""
    k = len(chunk)
    qd = np.degrees(res.q)
    fields = [
        nt.choose(res.ok, '{"ok": true, "target_m": [', '{"ok": false, "target_m": ['),
    ]
    for j in range(chunk.pts.shape[1]):
        if j:
            fields.append(nt.literal(", ", k))
        fields.append(nt.float_repr(chunk.pts[:, j]))
    fields.append(nt.literal('], "q_deg": [', k))
    for j in range(qd.shape[1]):
        if j:
            fields.append(nt.literal(", ", k))
        fields.append(nt.round_repr(qd[:, j], 6))
    fields += [
        nt.literal('], "error_m": ', k),
        nt.sci(res.error_m, 3),  # as the CSV: 4 significant digits (repr of a 1e-12 residual is slow)
        nt.literal(', "iterations": ', k),
        nt.ints(res.iterations),
        nt.literal(f', "method": "{method}"', k),
    ]
    if chunk.has_phi.any():
        fields += [
            nt.only(nt.literal(', "phi_deg": ', k), chunk.has_phi),
            nt.only(nt.round_repr(np.degrees(np.where(chunk.has_phi, chunk.phi, 0.0)), 6), chunk.has_phi),
        ]
    if roll:
        fields += [nt.literal(', "roll_deg": ', k), nt.round_repr(qd[:, -1], 6)]
    failed = ~res.ok
    if failed.any():
        fields += [
            nt.only(nt.literal(', "reason": ', k), failed),
            nt.only(nt.json_strings([r if f else None for r, f in zip(res.reasons, failed.tolist())]), failed),
            nt.only(nt.literal(', "shortfall_m": ', k), failed),
            nt.only(nt.float_repr(np.where(failed, res.shortfall_m, 0.0)), failed),
        ]
    fields.append(nt.literal("}, ", k))
    return nt.join(fields)[:-2]
