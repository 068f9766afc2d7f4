"""Numbers to text in bulk: columns of floats formatted exactly as Python formats each one.

For outputs of a million rows (``armctl ik --targets``, ``armctl plan --json/--csv``) formatting
value by value in Python costs more than computing them. Here a column of N values becomes a
``Field``: a (W, N) byte matrix holding row i's string in column i, between a first and a
one-past-last byte index; ``join`` stacks fields and cuts out the bytes of each row in turn. (The
transposed layout keeps every digit position one contiguous numpy row: 5x faster to fill.)

Every formatter gives byte for byte what Python gives for each value (``f"{v:.6f}"``,
``f"{v:.3e}"``, ``repr(round(v, 6))``, ``repr(v)``): the digits come from integer arithmetic on
``rint(|v| * 10**d)``, which is the correctly rounded (half-even) decimal whenever ``|v| * 10**d``
is not within its own rounding error of a half-integer; the few values that are (and NaN, inf,
huge values) are formatted by Python itself.
"""

from __future__ import annotations

import json

import numpy as np

__all__ = [
    "Field",
    "fixed",
    "sci",
    "round_repr",
    "float_repr",
    "ints",
    "literal",
    "choose",
    "strings",
    "reprs",
    "json_strings",
    "only",
    "join",
]

_ZERO = ord("0")
_TWO52 = 2.0**52
# 10**k correctly rounded, for k in -330..330 (exact for 0 <= k <= 22).
_POW10_MIN = -330
_POW10 = np.array([float(f"1e{k}") for k in range(_POW10_MIN, 331)])


class Field:
    """N strings as a (W, N) uint8 matrix: string i is ``chars[start[i]:end[i], i]``."""

    __slots__ = ("chars", "start", "end")

    def __init__(self, chars: np.ndarray, start, end):
        self.chars = chars
        w, n = chars.shape
        self.start = np.broadcast_to(np.asarray(start, dtype=np.int64), (n,))
        self.end = np.broadcast_to(np.asarray(end, dtype=np.int64), (n,))

    def __len__(self) -> int:
        return self.chars.shape[1]

    def tolist(self) -> list[str]:
        """The strings, one a row (for tests and debugging)."""
        return [bytes(c[s:e]).decode("ascii") for c, s, e in zip(self.chars.T, self.start, self.end)]

    def patched(self, rows, texts) -> Field:
        """This field with ``rows`` replaced by ``texts`` (strings or a Field; the matrix grows if needed)."""
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size == 0:
            return self
        sub = texts if isinstance(texts, Field) else strings(texts)
        w, n = self.chars.shape
        ws = sub.chars.shape[0]
        if ws > w:
            chars = np.concatenate([self.chars, np.zeros((ws - w, n), np.uint8)], axis=0)
        else:
            chars = self.chars.copy()
        start, end = self.start.copy(), self.end.copy()
        chars[:ws, rows] = sub.chars
        start[rows], end[rows] = 0, sub.end
        return Field(chars, start, end)


def _digits(chars: np.ndarray, stop: int, values: np.ndarray, count: int) -> None:
    """Write ``count`` decimal digits of ``values`` (float64 holding integers below 2**50) into
    rows ``stop - count .. stop - 1`` of ``chars``, zero-padded. Floor of a division by 10 is exact
    there, and float arithmetic is several times faster than int64 division."""
    v = values
    for j in range(count):
        q = np.floor(v / 10.0)
        chars[stop - 1 - j] = v - q * 10.0 + _ZERO
        v = q


def _ndigits(values: np.ndarray) -> np.ndarray:
    """Number of decimal digits of non-negative integer values (1 for 0)."""
    nd = np.ones(values.shape, dtype=np.int64)
    top = float(values.max()) if values.size else 0.0
    p = 10.0
    while p <= top:
        nd += values >= p
        p *= 10.0
    return nd


def _scaled(a: np.ndarray, k, slack: float):
    """``rint(a * 10**k)`` (float64 integers) and a mask of rows where that may not be the
    correctly rounded (half-even) value of the exact product: within ``slack`` relative error of a
    half-integer, or too large for exact integers (and NaN, inf)."""
    with np.errstate(over="ignore", invalid="ignore"):
        p = a * _POW10[np.asarray(k) - _POW10_MIN]
    unsure = ~(p < _TWO52 / 4)
    p = np.where(unsure, 0.0, p)
    fr = p - np.floor(p)
    unsure |= np.abs(fr - 0.5) <= p * slack
    return np.rint(p), unsure


def _fixed_parts(x, decimals: int):
    x = np.ascontiguousarray(x, dtype=float).ravel()
    m, unsure = _scaled(np.abs(x), decimals, 2.0**-51)
    return x, m, unsure


def _fixed_field(neg, m, decimals: int) -> Field:
    """Sign, integer digits, '.', ``decimals`` digits of ``m / 10**decimals`` (m: float integers)."""
    n = len(m)
    scale = float(10**decimals)
    ip = np.floor(m / scale)
    nd = _ndigits(ip)
    k = int(nd.max()) if n else 1
    w = 1 + k + (1 if decimals else 0) + decimals
    chars = np.empty((w, n), dtype=np.uint8)
    int_end = w
    if decimals:
        _digits(chars, w, m - ip * scale, decimals)
        int_end = w - 1 - decimals
        chars[int_end] = ord(".")
    _digits(chars, int_end, ip, k)
    start = int_end - nd - neg
    idx = np.flatnonzero(neg)
    chars[start[idx], idx] = ord("-")
    return Field(chars, start, w)


def fixed(x, decimals: int) -> Field:
    """``f"{v:.{decimals}f}"`` for each value of ``x`` (0 <= decimals <= 15)."""
    x, m, unsure = _fixed_parts(x, decimals)
    f = _fixed_field(np.signbit(x), m, decimals)
    bad = np.flatnonzero(unsure)
    return f.patched(bad, [f"{v:.{decimals}f}" for v in x[bad].tolist()])


def _strip_zeros(f: Field, m: np.ndarray, decimals: int) -> Field:
    """Drop trailing zeros of the fraction, keeping at least one digit."""
    tz = np.zeros(len(m), dtype=np.int64)
    v = m
    for i in range(decimals - 1):
        q = np.floor(v / 10.0)
        zero = (v == q * 10.0) & (tz == i)  # an unbroken run of zeros from the right
        if not zero.any():
            break
        tz += zero
        v = q
    return Field(f.chars, f.start, f.end - tz)


def round_repr(x, decimals: int) -> Field:
    """``repr(round(float(v), decimals))`` for each value of ``x`` (1 <= decimals <= 15): what
    ``json.dumps`` and ``csv.writer`` write for a rounded float."""
    x, m, unsure = _fixed_parts(x, decimals)
    # round(v, d) is the double nearest the correctly rounded decimal; its repr is that decimal
    # (trailing zeros dropped) when it has at most 15 significant digits and repr is positional.
    unsure |= ~(np.abs(x) < 1e8) | ((m > 0) & (m < 10.0 ** (decimals - 4)))
    m[unsure] = 0.0
    f = _strip_zeros(_fixed_field(np.signbit(x), m, decimals), m, decimals)
    bad = np.flatnonzero(unsure)
    return f.patched(bad, [repr(round(v, decimals)) for v in x[bad].tolist()])


def float_repr(x, decimals: int = 9) -> Field:
    """``repr(float(v))`` for each value of ``x``. Values with at most ``decimals`` decimals (and
    15 significant digits) are formatted in bulk; the rest by Python."""
    x = np.ascontiguousarray(x, dtype=float).ravel()
    a = np.abs(x)
    m, unsure = _scaled(a, decimals, 2.0**-51)
    # Exact when the decimal m / 10**decimals rounds back to |v| (one correctly rounded division).
    unsure |= (m / _POW10[decimals - _POW10_MIN]) != a
    unsure |= ~(a < 1e6) | ((m > 0) & (m < 10.0 ** (decimals - 4)))
    m[unsure] = 0.0
    f = _strip_zeros(_fixed_field(np.signbit(x), m, decimals), m, decimals)
    bad = np.flatnonzero(unsure)
    if not len(bad):
        return f
    return f.patched(bad, reprs(x[bad].tolist()))


def sci(x, decimals: int) -> Field:
    """``f"{v:.{decimals}e}"`` for each value of ``x`` (1 <= decimals <= 14)."""
    x = np.ascontiguousarray(x, dtype=float).ravel()
    n = len(x)
    a = np.abs(x)
    pos = (a > 0) & (a < np.inf)
    e = np.zeros(n, dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        e[pos] = np.floor(np.log10(a[pos])).astype(np.int64)
    lo, hi = float(10**decimals), float(10 ** (decimals + 1))
    unsure = ~((a == 0) | pos) | (e < -300) | (e > 300)
    e[unsure] = 0
    slack = 2.0**-49  # 10**k may itself be rounded: two roundings
    m, u = _scaled(a, decimals - e, slack)
    # log10 may be one off near powers of ten: move the exponent and scale again.
    fix = np.flatnonzero(pos & ~unsure & ((m >= hi) | (m < lo)))
    if fix.size:
        e[fix] += np.where(m[fix] >= hi, 1, -1)
        m2, u2 = _scaled(a[fix], decimals - e[fix], slack)
        m[fix] = m2
        u[fix] |= u2  # the first scaling chose the move: it must have been sure too
    unsure |= u | (pos & ((m >= hi) | (m < lo)))
    m[unsure] = 0.0
    e[unsure] = 0
    # Layout: sign slot, digit, '.', decimals digits, 'e', exponent sign, 2 or 3 exponent digits.
    neg = np.signbit(x)
    ae = np.abs(e).astype(float)
    three = ae >= 100
    w = 3 + decimals + 2 + 3
    chars = np.empty((w, n), dtype=np.uint8)
    chars[0] = ord("-")
    lead = np.floor(m / lo)
    chars[1] = lead + _ZERO
    chars[2] = ord(".")
    _digits(chars, 3 + decimals, m - lead * lo, decimals)
    chars[3 + decimals] = ord("e")
    chars[4 + decimals] = np.where(e < 0, ord("-"), ord("+"))
    exp = np.empty((3, n), dtype=np.uint8)
    _digits(exp, 3, ae, 3)
    chars[5 + decimals] = np.where(three, exp[0], exp[1])
    chars[6 + decimals] = np.where(three, exp[1], exp[2])
    chars[7 + decimals] = exp[2]
    f = Field(chars, 1 - neg, w - 1 + three)
    bad = np.flatnonzero(unsure)
    return f.patched(bad, [f"{v:.{decimals}e}" for v in x[bad].tolist()])


def ints(x) -> Field:
    """``str(int(v))`` for each value of the integer array ``x`` (|v| < 2**50)."""
    x = np.asarray(x).ravel()
    neg = x < 0
    a = np.abs(x).astype(float)
    nd = _ndigits(a)
    k = int(nd.max()) if len(x) else 1
    w = k + 1
    chars = np.empty((w, len(x)), dtype=np.uint8)
    _digits(chars, w, a, k)
    start = w - nd - neg
    idx = np.flatnonzero(neg)
    chars[start[idx], idx] = ord("-")
    return Field(chars, start, w)


def literal(text: str, n: int) -> Field:
    """The same ASCII ``text`` on each of ``n`` rows."""
    b = np.frombuffer(text.encode("ascii"), np.uint8)
    return Field(np.broadcast_to(b[:, None], (len(b), n)), 0, len(b))


def choose(mask, when_true: str, when_false: str) -> Field:
    """``when_true`` on rows where ``mask`` is true, else ``when_false`` (ASCII)."""
    mask = np.asarray(mask, dtype=bool).ravel()
    t, f = when_true.encode("ascii"), when_false.encode("ascii")
    w = max(len(t), len(f), 1)
    table = np.zeros((w, 2), dtype=np.uint8)
    table[: len(f), 0] = np.frombuffer(f, np.uint8)
    table[: len(t), 1] = np.frombuffer(t, np.uint8)
    return Field(table[:, mask.astype(np.intp)], 0, np.where(mask, len(t), len(f)))


def _split(buf: bytes, sep: bytes, n: int, skip: int = 0) -> Field:
    """The ``n`` strings of ``buf[skip:]`` separated by ``sep`` (which none of them contains)."""
    b = np.frombuffer(buf, np.uint8)
    if len(sep) == 1:
        cuts = np.flatnonzero(b == sep[0])
    else:
        cuts = np.flatnonzero((b[:-1] == sep[0]) & (b[1:] == sep[1]))
    starts = np.concatenate([[skip], cuts + len(sep)])[:n]
    ends = np.concatenate([cuts, [len(b)]])[:n]
    lens = ends - starts
    w = max(int(lens.max()) if n else 0, 1)
    padded = np.concatenate([b, np.zeros(w, np.uint8)])
    chars = padded[starts[None, :] + np.arange(w)[:, None]]
    return Field(chars, 0, lens)


def strings(texts: list[str]) -> Field:
    """Any ASCII strings without a newline, one a row."""
    return _split("\n".join(texts).encode("ascii"), b"\n", len(texts))


def reprs(values: list[float]) -> Field:
    """``repr(v)`` of each Python float, by the list's C repr (no Python call per value)."""
    text = repr(values).encode("ascii")  # '[1.5, 2e-05, ...]'
    return _split(text[:-1], b", ", len(values), skip=1)


def json_strings(texts: list) -> Field:
    """``json.dumps(t)`` for each string (or None); each distinct one encoded once."""
    cache: dict = {}
    out = []
    for t in texts:
        s = cache.get(t)
        if s is None:
            s = cache[t] = json.dumps(t)
        out.append(s)
    return strings(out)


def only(field: Field, mask) -> Field:
    """``field`` on rows where ``mask`` is true, the empty string elsewhere."""
    mask = np.asarray(mask, dtype=bool)
    return Field(field.chars, field.start, np.where(mask, field.end, field.start))


def join(fields: list[Field]) -> bytes:
    """Row by row, each field's string in turn: the bytes of all rows.

    The (W, N) byte rows are packed eight at a time into (W/8, N) uint64 words, which transpose to
    row-major text 8x faster than bytes do; bytes outside the strings are zero, and dropped."""
    fields = [f for f in fields if f.chars.shape[0]]
    if not fields or len(fields[0]) == 0:
        return b""
    n = len(fields[0])
    total = sum(f.chars.shape[0] for f in fields)
    words = np.zeros(((total + 7) // 8, n), dtype=np.uint64)
    const = np.zeros((total + 7) // 8, dtype=np.uint64)  # bytes that are the same on every row
    tmp = np.empty(n, dtype=np.uint64)
    j = 0
    for f in fields:
        w = f.chars.shape[0]
        same = f.chars.strides[1] == 0 and f.start.strides[0] == 0 and f.end.strides[0] == 0
        if same:  # a literal: the same bytes on every row
            s, e = int(f.start[0]), int(f.end[0])
            for r in range(s, e):
                const[(j + r) // 8] += np.uint64(int(f.chars[r, 0]) << (8 * ((j + r) % 8)))
        else:
            rows = np.arange(w)[:, None]
            chars = np.where((rows >= f.start) & (rows < f.end), f.chars, 0).astype(np.uint8, copy=False)
            for r in range(w):
                k = j + r
                np.multiply(chars[r], np.uint64(1 << (8 * (k % 8))), out=tmp, dtype=np.uint64)
                words[k // 8] += tmp
        j += w
    words += const[:, None]
    flat = np.ascontiguousarray(words.T).view(np.uint8).ravel()
    return flat[flat != 0].tobytes()
