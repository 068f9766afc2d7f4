"""Reading an SVG drawing: every shape's outline (paths, lines, rectangles, circles, ellipses, polygons, with their
transforms; parsed by the svgelements library) as ``Drawing`` strokes in CSS px; a hostile file is refused by
counting before the parser starts."""

from __future__ import annotations

import re

import numpy as np

from armctl.core import limits
from armctl.errors import BadInputError
from armctl.program.strokes import Curve, Drawing

SVG_PX_MM = 25.4 / 96.0  # SVG user units (CSS px) in mm

_GEOMETRY_ATTR = re.compile(r"\b(d|points|x|y|x1|y1|x2|y2|cx|cy|r|rx|ry|width|height|transform)\s*=\s*[\"']([^\"']*)")
_NOT_FINITE = re.compile(r"(?i)(?<![a-z])(nan|inf(inity)?)(?![a-z])")


def parse_svg(text: str, source: str = "<svg>") -> Drawing:
    """Every shape's outline of an SVG document, transforms applied (svgelements), in CSS px."""
    import io

    try:
        import svgelements as se
    except ImportError:
        raise BadInputError("drawing an SVG needs svgelements: pip install -e '.[draw]'") from None
    _svg_size_ok(text, source)  # before svgelements, which takes minutes over a million segments
    for no, line in enumerate(text.splitlines(), 1):  # the parser drops a path's data at a NaN without a word
        for attr, value in _GEOMETRY_ATTR.findall(line):
            if _NOT_FINITE.search(value):
                raise BadInputError(f'{source}:{no}: {attr}="{value}": a coordinate is not a finite number')
    try:
        svg = se.SVG.parse(io.StringIO(text), reify=True)
    except RecursionError:
        raise BadInputError(f"{source}: the SVG's elements are nested more deeply than the parser can read") from None
    except Exception as exc:  # a malformed document: the parser's own words
        raise BadInputError(f"{source}: not a readable SVG: {exc}") from None
    d = Drawing(source=source, unit_m=SVG_PX_MM / 1000.0, y_down=True)
    shape_no = 0
    for el in svg.elements():
        if isinstance(el, se.Text):
            words = (getattr(el, "text", "") or "").strip()
            raise BadInputError(
                f"{source}: text {words!r} cannot be drawn as it is: convert it to paths first "
                "(Inkscape: Path > Object to Path)"
            )
        if not isinstance(el, se.Shape):
            continue
        if el.values.get("visibility") == "hidden" or el.values.get("display") == "none":
            continue
        shape_no += 1
        tag = type(el).__name__.lower()
        name = f'<{tag} id="{el.id}">' if el.id else f"<{tag}>"
        strokes = _subpaths(se, el)
        d.strokes.extend(strokes)
        n = len(strokes)  # the shape's subpaths that draw
        for k in range(n):
            part = f", subpath {k + 1} of {n}" if n > 1 else ""
            d.origins.append((f"shape {shape_no} {name}{part}", None))
    return d


def _subpaths(se, el) -> list:
    """The strokes (start, primitives) of one shape: one per subpath that draws."""
    strokes = []
    start, prims, first = None, [], None
    for seg in se.Path(el).segments():
        if isinstance(seg, se.Move):
            if start is not None and prims:
                strokes.append((start, prims))
            start = first = np.array([seg.end.x, seg.end.y], dtype=float)
            prims = []
        elif isinstance(seg, se.Close):
            if first is not None:
                prims.append(first.copy())
        else:
            if start is None:
                start = first = np.array([seg.start.x, seg.start.y], dtype=float)
            # a line to its end; Arc, CubicBezier, QuadraticBezier flattened later
            prims.append(np.array([seg.end.x, seg.end.y], dtype=float) if isinstance(seg, se.Line) else Curve(seg))
    if start is not None and prims:
        strokes.append((start, prims))
    return strokes


_SVG_TAG = re.compile(r"<[A-Za-z]")
_SVG_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_SVG_PATH_DATA = re.compile(r"\b(?:d|points)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")


def _svg_size_ok(text: str, source: str) -> None:
    """Refuse an SVG with more elements, or more path points (two numbers each), than the ``moves`` limit, by
    counting them in the text (regular expressions, in C): no parse of a hostile drawing starts."""
    cap = limits.get("moves")
    elements = len(_SVG_TAG.findall(text))
    if elements > cap:
        raise limits.LimitError(f"the SVG has {elements} elements, more than {cap}", limit="moves", path=source)
    numbers = 0
    for m in _SVG_PATH_DATA.finditer(text):
        for _ in _SVG_NUMBER.finditer(m.group(1) or m.group(2) or ""):  # counted one by one: stops at the cap
            numbers += 1
            if numbers > 2 * cap:
                line = text.count("\n", 0, m.start()) + 1
                raise limits.LimitError(
                    f"the SVG's paths have more than {cap} points", limit="moves", path=source, line=line
                )
