"""``--record-dataset DIR --task TEXT [--fps N] [--camera NAME=SOURCE ...]``: the options ``armctl follow``
and ``armctl run`` share, and the recorder they open (everything checked before anything moves)."""

from __future__ import annotations

from armctl.core.units import parse_float
from armctl.errors import BadInputError


def dataset_options(p, *, follow: bool) -> None:
    """``--record-dataset DIR --task TEXT [--fps N] [--camera NAME=SOURCE ...]`` (follow and run)."""
    g = p.add_argument_group("LeRobot dataset (pip install 'armctl[dataset]')")
    g.add_argument("--record-dataset", metavar="DIR", help="write (or append) LeRobotDataset v3.0 episodes in DIR")
    g.add_argument("--task", metavar="TEXT", help="what the episodes show (LeRobot's task), e.g. 'pick the cube'")
    g.add_argument("--fps", default="30", metavar="N", help="dataset frames a second (default 30)")
    g.add_argument(
        "--camera",
        action="append",
        default=[],
        metavar="NAME=SOURCE",
        help="a camera (any OpenCV source: 0, /dev/video0, a file, a URL) as observation.images.NAME; repeatable. "
        "armctl run: a SOURCE without NAME= is the camera that sees the arm (parts of pick: {marker: ID}, the watch)",
    )
    if follow:
        g.add_argument("--episode-s", metavar="S", help="end each episode after S seconds (the next starts at once)")
        g.add_argument("--episodes", metavar="N", help="stop after N saved episodes")


def cameras_need_port(args) -> bool:
    """Whether a ``--camera NAME=SOURCE`` of the recording is the simulator's own (``simcam://``,
    ``physicscam://``): it can be opened only once the simulator's port is."""
    from armctl.dataset.camera import parse_camera
    from armctl.vision.sources import CAMERA_SCHEMES, camera_scheme

    return any(camera_scheme(parse_camera(text)[1]) in CAMERA_SCHEMES for text in args.camera or ())


def open_dataset(args, arm, cal, *, state_source: str):
    """The cameras and the ``Recorder`` for ``--record-dataset`` (None without it); everything checked, nothing
    moved. BadInputError for a missing --task, a bad fps, an unknown camera, another robot's dataset."""
    if args.record_dataset is None:
        for opt in ("camera", "task"):
            if getattr(args, opt):
                raise BadInputError(f"--{opt} is for recording: give --record-dataset DIR too")
        return None
    if not args.task or not args.task.strip():
        raise BadInputError("--record-dataset needs --task TEXT: what the episodes show (e.g. 'pick the cube')")
    fps = parse_float(args.fps, what="--fps")
    if fps != int(fps) or not 1 <= fps <= 1000:
        raise BadInputError(f"--fps: a whole number of frames a second, 1..1000, got {args.fps}")
    from armctl.dataset.camera import open_cameras
    from armctl.dataset.recorder import Recorder, arm_features
    from armctl.dataset.writer import DatasetWriter
    from armctl.vision.sources import scheme_source

    cams = open_cameras(args.camera, scheme_source)
    try:
        feats = arm_features(arm, cal)
        writer = DatasetWriter(
            args.record_dataset,
            robot_type=feats.robot_type,
            fps=int(fps),
            state_names=feats.names,
            cameras={n: (c.height, c.width) for n, c in cams.items()},
            info={
                "arm": arm.name,
                "calibration": str(cal.source),
                "state_source": state_source,
                "action": "the pose commanded to the servos each frame",
                "units": feats.units,
                "cameras": {n: c.source for n, c in cams.items()},
            },
        )
    except BaseException:
        for c in cams.values():
            c.close()
        raise
    return Recorder(writer, feats, cams)


def saved_text(recorder) -> str:
    """What a summary line says of the episodes saved: '2 episodes (3, 4) saved to DIR' ('no episode ...')."""
    saved, where = recorder.saved, recorder.writer.root
    if not saved:
        return f"no episode saved to {where}"
    n = len(saved)
    return f"{n} episode{'s' if n > 1 else ''} ({', '.join(map(str, saved))}) saved to {where}"
