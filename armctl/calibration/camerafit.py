"""Calibrating an arm from a fixed camera (eye-to-hand): a least-squares fit of ``ParamModel``'s parameters
(``armctl.calibration.cameramodel``) to the marker's pixels, with the uncertainty of each, the parameters the poses
cannot tell apart named and held, and the calibration armctl drives by made from the result.

``fit_camera(arm, cal, obs)`` starts from the believed calibration and the camera from a PnP of the believed marker
positions, holds what cannot be observed (a rank test of the Jacobian in a fixed order: the camera first, so the
base's zero is held as the camera's yaw and the shoulder's height as its height, unless a ``TableReference`` fixes
the camera in the base frame), fits the rest with ``scipy.optimize.least_squares`` and gives a ``CameraFit``.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field

import numpy as np

from armctl.calibration.cameramodel import (
    CAMERA_NAMES,
    CameraObservations,
    ParamModel,
    matrix_to_rt,
    need_cv2,
    rt_to_matrix,
)
from armctl.errors import BadInputError

RANK_TOL = 1e-5  # a column closer than this (relative) to the span of those before it is unobservable
MAX_RMS_PX = 3.0  # a fit whose residual stays above this (and 6 sigma) did not converge
OUTLIER_PX = 3.0  # a sighting whose corners miss the first fit by more (RMS, and by 8 sigma) is dropped
OUTLIER_SHARE = 0.1  # ... as long as no more than this share of them is
MAX_ITERATIONS = 40  # Jacobians (of the free parameters) before a fit is called not converging
FIT_ORDER = ("camera", "links_m", "base_offset_m", "zero", "gain", "curve", "backlash", "shoulder_height_m")


@dataclass(frozen=True)
class TableReference:
    """The camera's pose in the base frame known from elsewhere (a ChArUco board on the table at a known pose):
    ``base_to_camera`` (4x4) and its covariance ``cov`` (6x6, over OpenCV's rvec and tvec: rad, m), or None to
    hold the camera fixed there. ``table_reference`` makes one from a board's corners."""

    base_to_camera: np.ndarray
    cov: np.ndarray | None = None

    @property
    def rt(self) -> np.ndarray:
        return matrix_to_rt(self.base_to_camera)


def table_reference(board_points_m, board_pixels, board_in_base, matrix, dist, *, sigma_px=0.5, pose_sigma=(0.1, 0.5)):
    """The ``TableReference`` of a board lying on the table: ``board_points_m`` (k, 3) its corners in its own frame,
    ``board_pixels`` (k, 2) where the camera sees them, ``board_in_base`` (4x4) where the user put it in the base
    frame (``pose_sigma``: how well, in deg about each axis and mm along the table; its height is the table's).
    The camera's pose from ``cv2.solvePnP``; its covariance from the PnP's Jacobian and the pixel noise, and from
    ``pose_sigma``, carried through the composition."""
    cv2 = need_cv2()
    obj = np.asarray(board_points_m, dtype=float).reshape(-1, 3)
    img = np.asarray(board_pixels, dtype=float).reshape(-1, 2)
    if len(obj) < 4 or len(obj) != len(img):
        raise BadInputError(f"table reference: need 4 or more board corners with their pixels, got {len(img)}")
    ok, rvec, tvec = cv2.solvePnP(obj, img, matrix, dist)
    if not ok:
        raise BadInputError("table reference: the board's corners give no camera pose (cv2.solvePnP failed)")
    _, jac = cv2.projectPoints(obj, rvec, tvec, matrix, dist)
    J = jac[:, :6] / sigma_px
    board_rt = np.concatenate([rvec.ravel(), tvec.ravel()])
    in_base = np.asarray(board_in_base, dtype=float)
    base_rt = matrix_to_rt(in_base)

    def compose(v):  # (board in the camera, board in the base) -> the base in the camera
        return matrix_to_rt(rt_to_matrix(v[:3], v[3:6]) @ np.linalg.inv(rt_to_matrix(v[6:9], v[9:12])))

    v0 = np.concatenate([board_rt, base_rt])
    D = np.column_stack([(compose(v0 + e) - compose(v0 - e)) / 2e-7 for e in np.eye(12) * 1e-7])
    cov_in = np.zeros((12, 12))
    cov_in[:6, :6] = np.linalg.inv(J.T @ J)
    r, t = math.radians(pose_sigma[0]), pose_sigma[1] / 1000.0
    cov_in[6:, 6:] = np.diag([r * r] * 3 + [t * t, t * t, 0.0])
    return TableReference(rt_to_matrix(compose(v0)[:3], compose(v0)[3:]), D @ cov_in @ D.T + np.eye(6) * 1e-14)


@dataclass(frozen=True)
class CameraFit:
    """A fitted model: ``x`` the parameters (``model.names``), ``sigma`` their standard deviations (0 for held
    ones), ``held`` the held ones with why, ``rms_px`` the residual, ``seconds`` the fit's time."""

    model: ParamModel
    x: np.ndarray
    sigma: np.ndarray
    held: dict = field(default_factory=dict)
    rms_px: float = 0.0
    n_poses: int = 0
    seconds: float = 0.0
    dropped: tuple = ()  # indices of the sightings left out as misdetections

    def value(self, name: str) -> float:
        return float(self.x[self.model.index(name)])

    def sigma_of(self, name: str) -> float:
        return float(self.sigma[self.model.index(name)])

    @property
    def base_to_camera(self) -> np.ndarray:
        """The base frame in the camera's (4x4): a base point p is at ``T @ p`` in the camera frame."""
        return rt_to_matrix(self.x[:3], self.x[3:6])

    @property
    def camera_to_base(self) -> np.ndarray:
        """The camera frame in the base's (4x4): the camera's pose on its stand."""
        return np.linalg.inv(self.base_to_camera)

    @property
    def arm(self):
        """The arm with the fitted lengths."""
        return self.model.arm_of(self.x)

    def angles(self, values, approach) -> np.ndarray:
        """The fitted joint angles (rad) of servo values reached moving in ``approach``."""
        return self.model.angles(self.x, np.atleast_2d(values), np.atleast_2d(approach))

    def lines(self) -> list[str]:
        """One line per parameter: its value, its uncertainty, or why it was held; then where the camera is."""
        out = []
        for i, name in enumerate(self.model.names):
            v, unit = self.model.display(name, self.x[i])
            if name in self.held:
                out.append(f"{name:>24} = {v:10.4f} {unit:3} held: {self.held[name]}")
            else:
                s, _ = self.model.display(name, self.sigma[i])
                out.append(f"{name:>24} = {v:10.4f} {unit:3} +- {abs(s):.4f}")
        pose = self.camera_to_base
        where = ", ".join(f"{1000 * v:.1f}" for v in pose[:3, 3])
        look = ", ".join(f"{v:+.3f}" for v in pose[:3, 2])
        if self.dropped:
            out.append(f"left out {len(self.dropped)} sightings far off the fit (misdetected?): {list(self.dropped)}")
        out.append(
            f"camera at ({where}) mm in the base frame, looking along ({look}); residual {self.rms_px:.2f} px "
            f"over {self.n_poses} sightings"
        )
        return out


def initial_camera(model: ParamModel, x, obs: CameraObservations) -> np.ndarray:
    """The camera (rvec, tvec) from ``cv2.solvePnP`` of the marker's points under ``x`` and their pixels."""
    cv2 = need_cv2()
    pts = model.marker_points(x, obs).reshape(-1, 3)
    px = obs.pixels.reshape(-1, 2)
    ok, rvec, tvec = cv2.solvePnP(pts, px, obs.matrix, obs.dist, flags=cv2.SOLVEPNP_ITERATIVE)
    if not ok or not np.all(np.isfinite(tvec)):
        raise BadInputError("camera fit: the marker's sightings give no camera pose (cv2.solvePnP failed)")
    return np.concatenate([rvec.ravel(), tvec.ravel()])


def _order(model: ParamModel) -> list[int]:
    """The parameters in the rank test's order (``FIT_ORDER``): the first of two that move the marker alike stays."""
    names = model.names
    out = []
    for kind in FIT_ORDER:
        if kind == "camera":
            out += list(range(6))
        elif kind in ("zero", "gain", "curve", "backlash"):
            out += list(range(model.group(kind).start, model.group(kind).stop))
        else:
            out += [i for i, nm in enumerate(names) if nm == kind or nm.startswith(kind + "[")]
    return out


def _is_length(name: str) -> bool:
    return name.startswith("links_m") or name in ("base_offset_m", "shoulder_height_m")


def _reason(model: ParamModel, name: str, partners: list[str], value: float) -> str:
    """Why parameter ``name`` is held: what it moves the marker as (``partners``), at its believed ``value``."""
    v, unit = model.display(name, value)
    camera = partners and all(p in CAMERA_NAMES for p in partners)
    if name != "shoulder_height_m" and _is_length(name) and all(p in CAMERA_NAMES or _is_length(p) for p in partners):
        why = "it is the scale of the whole scene (the marker's corners, of known size, fix it)"
    elif camera:
        what = "the camera's yaw" if name.endswith(" zero") else "the camera's position"
        if name == "shoulder_height_m":
            what = "the camera's height"
        why = f"it is {what} (a table reference fixes it)"
    else:
        why = f"it moves the marker as {', '.join(partners)} do" if partners else "it moves nothing seen"
    return f"unobservable: {why}; held at its believed {v:.4g} {unit}".rstrip()


def unobservable(model: ParamModel, J: np.ndarray, free: np.ndarray) -> dict[str, str]:
    """The free parameters whose columns of ``J`` (scaled) lie in the span of those before them in ``_order``:
    name -> the reason (which others they move the marker as)."""
    Q = np.zeros((J.shape[0], 0))
    kept: list[int] = []
    out = {}
    for i in _order(model):
        if not free[i]:
            continue
        c = J[:, i]
        norm = np.linalg.norm(c)
        r = c - Q @ (Q.T @ c) if norm > 0 else c
        if norm == 0 or np.linalg.norm(r) < RANK_TOL * norm:
            partners = []
            if kept and norm > 0:
                coef, *_ = np.linalg.lstsq(J[:, kept], c, rcond=None)
                weight = np.abs(coef) * np.linalg.norm(J[:, kept], axis=0)
                partners = [model.names[kept[k]] for k in np.argsort(-weight)[:2] if weight[k] > 1e-3 * norm]
            out[model.names[i]] = _reason(model, model.names[i], partners, model.believed[i])
            continue
        Q = np.column_stack([Q, r / np.linalg.norm(r)])
        kept.append(i)
    return out


class _Problem:
    """The residual of a fit: pixel errors in units of the pixel noise, then the table reference's rows."""

    def __init__(self, model: ParamModel, obs: CameraObservations, x0, free, reference: TableReference | None):
        self.model, self.obs, self.x0, self.free = model, obs, np.array(x0, dtype=float), np.asarray(free)
        self.prior = None
        if reference is not None and reference.cov is not None:
            self.prior = (reference.rt, np.linalg.cholesky(np.linalg.inv(reference.cov)).T)

    def full(self, xf) -> np.ndarray:
        x = self.x0.copy()
        x[self.free] = xf
        return x

    def residual_of(self, x) -> np.ndarray:
        r = ((self.model.project(x, self.obs) - self.obs.pixels) / self.obs.sigma_px).ravel()
        if self.prior is None:
            return r
        rt, L = self.prior
        return np.concatenate([r, L @ (x[:6] - rt)])

    def __call__(self, xf) -> np.ndarray:
        return self.residual_of(self.full(xf))

    def jacobian(self, x) -> np.ndarray:
        """d residual / d parameter (every parameter), central differences at ``x``, columns scaled by
        ``model.scale``."""
        cols = []
        for i, h in enumerate(self.model.scale * 1e-3):
            e = np.zeros_like(x)
            e[i] = h
            cols.append((self.residual_of(x + e) - self.residual_of(x - e)) / 2e-3)
        return np.column_stack(cols)


def _least_determined(model: ParamModel, J: np.ndarray, free_idx: np.ndarray) -> str:
    """The name of the parameter that dominates the weakest direction of ``J`` (scaled columns of the free ones)."""
    _, _, vt = np.linalg.svd(J / np.maximum(np.linalg.norm(J, axis=0), 1e-300), full_matrices=False)
    return model.names[free_idx[int(np.argmax(np.abs(vt[-1])))]]


def fit_camera(
    arm, cal, obs: CameraObservations, *, reference: TableReference | None = None, hold=(), converge: bool = True
) -> CameraFit:
    """Fit ``arm`` driven through ``cal`` to the marker sightings ``obs`` (see the module's doc). ``reference``:
    the camera's pose in the base frame (fixed, or a prior with its covariance); ``hold``: parameter names kept
    at their believed values; ``converge`` False accepts any residual (the believed model's). BadInputError
    naming the parameter when the fit is singular or does not converge. Sightings far off the first fit (a
    misdetection; no more than ``OUTLIER_SHARE`` of them) are dropped, the fit made again, and said
    (``CameraFit.dropped``)."""
    t0 = time.perf_counter()
    model = ParamModel(arm, cal)
    if obs.values.shape[1] != model.n:
        raise BadInputError(f"camera observations have {obs.values.shape[1]} servo values a pose, arm has {model.n}")
    unknown = [h for h in hold if h not in model.names]
    if unknown:
        raise BadInputError(f"cannot hold {unknown[0]!r}: not a parameter ({', '.join(model.names)})")
    if obs.pixels.size < 2 * len(model.names):
        raise BadInputError(
            f"camera fit: {len(obs)} sightings give {obs.pixels.size} pixel coordinates for {len(model.names)} "
            "parameters: take more poses (camera_poses)"
        )
    x0 = model.believed.copy()
    x0[:6] = reference.rt if reference is not None else initial_camera(model, x0, obs)
    free = np.array([nm not in hold for nm in model.names])
    held = {nm: "held as asked" for nm in hold}
    if reference is not None and reference.cov is None:
        free[:6] = False
        held.update({nm: "fixed by the table reference" for nm in CAMERA_NAMES})
    problem = _Problem(model, obs, x0, free, reference)
    J = problem.jacobian(x0)
    for name, why in unobservable(model, J, free).items():
        free[model.index(name)] = False
        held[name] = why
    free_idx = np.flatnonzero(free)
    x, res = _solve(model, obs, x0, free, reference)
    dropped = ()
    if converge and res is not None:
        per = np.sqrt(np.mean(np.square(model.project(x, obs) - obs.pixels), axis=(1, 2)))
        bad = per > max(OUTLIER_PX, 8.0 * obs.sigma_px)
        if bad.any() and bad.sum() <= OUTLIER_SHARE * len(obs):
            dropped = tuple(int(i) for i in np.flatnonzero(bad))
            obs = obs.subset(~bad)
            x, res = _solve(model, obs, x, free, reference)
    sigma, rms = np.zeros(len(x0)), _rms(_Problem(model, obs, x, free, reference).residual_of(x), obs)
    if res is not None:
        Js = res.jac * model.scale[free]
        if not res.success or converge and rms > max(MAX_RMS_PX, 6.0 * obs.sigma_px):
            raise BadInputError(
                f"the camera fit did not converge (residual {rms:.2f} px after {res.nfev} evaluations): "
                f"{_least_determined(model, Js, free_idx)} is the least determined parameter; check the marker "
                "size, the camera's intrinsics and that every sighting is of the marker on the tool"
            )
        sigma[free] = _sigmas(model, Js, res.fun, free_idx) * model.scale[free]
    return CameraFit(model, x, sigma, held, rms, len(obs), time.perf_counter() - t0, dropped)


def _solve(model: ParamModel, obs: CameraObservations, x0, free, reference):
    """(x, scipy's result) of a least-squares fit of the ``free`` parameters from ``x0``; (x0, None) if none is."""
    from scipy.optimize import least_squares

    if not np.any(free):
        return x0.copy(), None
    problem = _Problem(model, obs, x0, free, reference)
    most = MAX_ITERATIONS * (int(np.sum(free)) + 1)
    res = least_squares(problem, x0[free], method="lm", x_scale=model.scale[free], max_nfev=most)
    return problem.full(res.x), res


def _rms(r, obs: CameraObservations) -> float:
    """The RMS pixel error (px, over the image coordinates) of normalised residuals ``r``."""
    m = obs.pixels.size
    return float(np.sqrt(np.mean(np.square(r[:m])))) * obs.sigma_px


def _sigmas(model: ParamModel, Js, r, free_idx) -> np.ndarray:
    """Standard deviations (scaled units) from the Jacobian at the solution, scaled by the residual."""
    dof = max(len(r) - Js.shape[1], 1)
    s2 = float(r @ r) / dof
    sv = np.linalg.svd(Js, compute_uv=False)
    if sv[-1] < 1e-9 * sv[0]:
        raise BadInputError(
            f"the camera fit is singular: {_least_determined(model, Js, free_idx)} cannot be told apart from the "
            "others with these poses (hold it, or move that joint over more of its range)"
        )
    return np.sqrt(np.diag(np.linalg.inv(Js.T @ Js)) * s2)


def believed_fit(arm, cal, obs: CameraObservations, *, reference: TableReference | None = None) -> CameraFit:
    """The believed model (the arm file and calibration as they are) with only the camera fitted: the "before"."""
    model = ParamModel(arm, cal)
    return fit_camera(arm, cal, obs, reference=reference, hold=model.names[6:], converge=False)


def tool_error_mm(fit: CameraFit, obs: CameraObservations) -> np.ndarray:
    """Per sighting, how far (mm) the tool the model predicts lies from the one the camera sees, across the
    camera's view (the marker centre's pixel error times its depth over the focal length)."""
    x = fit.x
    model = fit.model
    centre = dataclasses.replace(obs, pixels=obs.pixels.mean(axis=1, keepdims=True))
    err = np.linalg.norm(model.project(x, centre)[:, 0] - centre.pixels[:, 0], axis=-1)
    pts = model.marker_points(x, centre)[:, 0]
    depth = (fit.base_to_camera[:3, :3] @ pts.T + fit.base_to_camera[:3, 3:4])[2]
    return 1000.0 * err * depth / math.sqrt(obs.matrix[0, 0] * obs.matrix[1, 1])


def to_calibration(fit: CameraFit, cal):
    """The calibration armctl drives by, from a fit of ``cal``: per joint servo its zero value and direction from
    the fitted zero and gain (its per-degree scale from the gain's size), its ``curve_pct`` and ``backlash_deg``;
    the fitted link lengths (and base offset) as the arm's corrections (version 2 where any of these needs it)."""
    from armctl.calibration.maps import ArmGeometry, BusServoCal

    m, x = fit.model, fit.x
    joints = []
    for i, s in enumerate(cal.joints):
        zero, gain = math.degrees(x[m.group("zero")][i]), float(x[m.group("gain")][i])
        curve, backlash = float(x[m.group("curve")][i]), math.degrees(x[m.group("backlash")][i])
        if abs(gain) < 0.2:
            raise BadInputError(f"{m.names[m.group('gain').start + i]} fitted {gain:.3f}: the joint hardly moves")
        per_deg = s.per_deg / abs(gain)
        new = {
            "direction": int(s.direction * np.sign(gain)),
            "curve_pct": round(100.0 * (gain * s.curve_pct / 100.0 + curve) / abs(gain), 4),
            "backlash_deg": round(max(backlash, 0.0), 3),
        }
        zero_value = s.zero - zero * s.direction * s.per_deg / gain
        if isinstance(s, BusServoCal):
            new.update(zero_steps=zero_value, steps_per_deg=per_deg)
        else:
            new.update(zero_us=zero_value, us_per_deg=per_deg)
        joints.append(dataclasses.replace(s, **new))
    arm = fit.arm
    geometry = ArmGeometry(
        tuple(round(float(v), 6) for v in arm.links_m), round(float(arm.base_offset_m), 6) if arm.has_base else None
    )
    return dataclasses.replace(cal, joints=tuple(joints), geometry=geometry, version=2)


@dataclass(frozen=True)
class CameraReport:
    """A camera calibration's outcome: the ``fit``, and the tool's error (mm, across the camera's view:
    ``tool_error_mm``) on the held-out sightings under the believed model (``before``) and the fitted (``after``)."""

    fit: CameraFit
    before_mm: np.ndarray
    after_mm: np.ndarray

    def lines(self) -> list[str]:
        b, a = self.before_mm, self.after_mm
        return self.fit.lines() + [
            f"tool error on {len(a)} held-out poses: before {np.mean(b):.2f} mm mean, {np.max(b):.2f} max; "
            f"after {np.mean(a):.2f} mm mean, {np.max(a):.2f} max"
        ]


def calibrate_from_sightings(arm, cal, obs: CameraObservations, held_out, *, reference=None, hold=()) -> CameraReport:
    """Fit on the sightings not ``held_out`` (a mask), judge the believed and the fitted model on the rest."""
    held_out = np.asarray(held_out, dtype=bool)
    if held_out.all() or not held_out.any():
        raise BadInputError("camera fit: keep some sightings out to judge the fit by, and fit on the rest")
    train, test = obs.subset(~held_out), obs.subset(held_out)
    fit = fit_camera(arm, cal, train, reference=reference, hold=hold)
    before = believed_fit(arm, cal, train, reference=reference)
    return CameraReport(fit, tool_error_mm(before, test), tool_error_mm(fit, test))
