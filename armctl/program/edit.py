"""Programs changed from outside the file: the default blend distance from ``--blend``, and where the parts of
``pick: {marker: ID}`` steps lie, from a camera."""

from __future__ import annotations

import math

from armctl.model.validate import MAX_BLEND_M
from armctl.program.load import MarkerRef, Pose, Program


def blend_option(blend_mm: str | float) -> float:
    """``--blend MM`` (a number of millimetres, or the text of one) in metres. BadInputError for a negative,
    non-finite or too large value (over ``MAX_BLEND_M``)."""
    from armctl.errors import BadInputError

    try:
        v = float(blend_mm)
    except (TypeError, ValueError):
        raise BadInputError(f"--blend: {blend_mm!r} is not a number of millimetres") from None
    if not math.isfinite(v) or v < 0 or v > MAX_BLEND_M * 1000:
        raise BadInputError(f"--blend: {blend_mm!r} mm: give 0 .. {MAX_BLEND_M * 1000:g} mm")
    return v / 1000.0


def with_blend(prog: Program, blend_mm: str | float | None) -> Program:
    """``prog`` with its default blend distance (settings ``blend_mm``) set to ``blend_mm`` millimetres (a
    number or the text of one, as ``--blend MM`` gives it); steps with their own ``blend_mm`` keep theirs.
    None: ``prog`` unchanged. BadInputError for a bad value (``blend_option``)."""
    import dataclasses

    if blend_mm is None:
        return prog
    blend_m = blend_option(blend_mm)
    return dataclasses.replace(prog, settings=dataclasses.replace(prog.settings, blend_m=blend_m))


def markers_of(prog: Program) -> list[MarkerRef]:
    """The markers the program's pick and place steps name (the parts a camera must find), each id once, in order."""
    out: list[MarkerRef] = []

    def walk(steps):
        for st in steps:
            if isinstance(st.target, MarkerRef) and all(m.marker_id != st.target.marker_id for m in out):
                out.append(st.target)
            walk(st.steps)

    walk(prog.steps)
    return out


def with_parts(prog: Program, parts, yaws=None) -> Program:
    """``prog`` with where its parts lie: ``parts`` maps a marker id to the point (m: x, y, z on a base arm; x, y
    in a planar arm's plane) its pick or place goes to, ``yaws`` (optional) to the part's yaw on the table (rad:
    the marker's x from the base's x), which an arm with a wrist roll turns its jaws to."""
    import dataclasses

    yaws = yaws or {}
    found = {
        int(mid): Pose(
            name=f"<marker {mid}>",
            line=None,
            point_m=tuple(float(v) for v in p),
            key="xyz_m",
            yaw_rad=None if yaws.get(mid) is None else float(yaws[mid]),
        )
        for mid, p in parts.items()
    }
    return dataclasses.replace(prog, parts={**prog.parts, **found})
