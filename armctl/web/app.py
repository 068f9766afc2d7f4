"""Put the pieces together: controller + control lease + HTTP server, on an open Robot."""

from __future__ import annotations

import secrets
import threading

from armctl.core import stopsignals
from armctl.errors import LinkError
from armctl.robot.robot import Robot
from armctl.web import api
from armctl.web.controller import Controller
from armctl.web.reach_map import calibrated_reach_map
from armctl.web.server import ArmServer, is_loopback
from armctl.web.session import Control


def start(
    robot: Robot,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    heartbeat_timeout_s: float | None = None,
    recorder=None,
) -> ArmServer:
    """Start serving ``robot`` (open) on ``host``:``port`` in a background thread; returns the server.

    A non-loopback ``host`` always gets a token (a fresh one unless ``token`` is given). ``recorder`` (an
    ``armctl.program.recording.Recorder``) turns on the page's "record pose" button. Stop it with ``stop(server)``;
    the caller closes the robot.
    """
    if token is None and not is_loopback(host):
        token = secrets.token_urlsafe(16)
    control = Control() if heartbeat_timeout_s is None else Control(timeout_s=heartbeat_timeout_s)
    controller = Controller(robot, watchdog=control.silent, recorder=recorder)
    reach = calibrated_reach_map(robot.arm, robot.calibration)  # what a click can do (the shading)
    info = api.describe(
        robot.arm,
        robot.calibration,
        reach,
        backend=robot.backend.name,
        port=robot.port,
        firmware=robot.info.firmware if robot.info is not None else "",
    )
    info["record_file"] = None if recorder is None else str(recorder.path)
    try:
        server = ArmServer((host, port), controller, control, info, reach, token=token)
    except OSError as exc:
        raise LinkError(f"cannot listen on {host}:{port}: {exc}") from None
    controller.start()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    server.thread = thread
    return server


def start_watch(watch, *, host: str = "127.0.0.1", port: int = 8000, token: str | None = None) -> ArmServer:
    """Serve a read-only page of the arm another armctl drives (``watch``: an ``armctl.robot.robot.Watch``): no port is
    opened and no lock taken. Stop it with ``stop(server)``."""
    from armctl.web.watch import WatchController

    if token is None and not is_loopback(host):
        token = secrets.token_urlsafe(16)
    controller = WatchController(watch)
    reach = calibrated_reach_map(watch.arm, watch.calibration)
    info = api.describe(watch.arm, watch.calibration, reach, backend=watch.backend_name, port=watch.port, firmware="")
    info.update(record_file=None, watch=True)
    try:
        server = ArmServer((host, port), controller, Control(), info, reach, token=token)
    except OSError as exc:
        raise LinkError(f"cannot listen on {host}:{port}: {exc}") from None
    controller.start()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    server.thread = thread
    return server


def serve_watch(watch, *, host: str, port: int, token: str | None, out) -> int:
    """Serve the read-only page until Ctrl-C (which stops only this server: the arm is not ours)."""
    server = start_watch(watch, host=host, port=port, token=token)
    driver = watch.driver()
    print(f"armctl web --watch: arm {watch.arm.name!r} on {watch.port}, read-only", file=out)
    print(f"driven by {driver}" if driver else "no armctl drives it now: the page shows its last pose", file=out)
    print(f"open {server.url}", file=out)
    print("Ctrl-C stops this server (not the arm)", file=out, flush=True)
    try:
        server.thread.join()
    finally:
        stop(server)
    return 0


def stop(server: ArmServer) -> None:
    """Controlled stop of the arm, then close the server (the robot stays open for the caller)."""
    server.controller.close()
    server.shutdown()
    server.server_close()


def serve(robot: Robot, *, host: str, port: int, token: str | None, out, recorder=None) -> int:
    """Serve until Ctrl-C (then a controlled stop, and the KeyboardInterrupt goes on); prints the URL to open."""
    server = start(robot, host=host, port=port, token=token, recorder=recorder)
    print(f"armctl web: arm {robot.arm.name!r} on {robot.port} ({robot.backend.name})", file=out)
    if recorder is not None:
        print(f"'Record pose' adds the pose to {recorder.path}", file=out)
    print(f"open {server.url}", file=out)
    if server.token:
        print("(the token in that URL is required: only share it with people who may move the arm)", file=out)
    print("Ctrl-C stops the arm and the server", file=out, flush=True)

    try:
        stopsignals.join(server.thread)  # until Ctrl-C (or SIGTERM/SIGHUP, ...: the command line makes them one)
    finally:
        stop(server)
    return 0
