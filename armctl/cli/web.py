"""``armctl web``: serve a page that shows the arm and moves it where you click (default: the simulated arm)."""

from __future__ import annotations

import secrets
import sys

from armctl.cli import add_command
from armctl.cli.common import open_robot, setup  # the same arm, calibration and port as jog/run
from armctl.errors import BadInputError

EPILOG = """\
The page draws the arm to scale with its reachable region and joint limits; click (or drag and
release) to move the tool there in a straight line through the same planner, limits and streaming
as 'armctl jog'. Stop holds the pose like Ctrl-C. Only one page controls the arm at a time; closing
it stops the arm. The URL printed at start carries a token that every API call needs, on loopback
too (another user of the same machine cannot claim the arm); --no-token turns it off on loopback.
examples:
  armctl web                                   # the simulated arm on http://127.0.0.1:8000/
  armctl --port /dev/ttyACM0 web --listen 127.0.0.1:8080
  armctl --arm seed-2link web --listen 0.0.0.0:8000   # reachable from the LAN (with the token)
  armctl web --no-token                        # a single-user machine: no token on loopback
  armctl web --record taught.yaml              # 'Record pose' writes a program: armctl run taught.yaml
  armctl web --watch --listen 127.0.0.1:8001   # watch (read-only) the arm another armctl drives"""


DESCRIPTION = "Serve a page that shows the arm and moves it to where you click."


def register(sub, parents) -> None:
    p = add_command(sub, "web", parents=parents, epilog=EPILOG, description=DESCRIPTION)
    p.add_argument(
        "--listen",
        metavar="HOST:PORT",
        default="127.0.0.1:8000",
        help="address to serve on (default 127.0.0.1:8000; port 0 picks a free one)",
    )
    tok = p.add_mutually_exclusive_group()
    tok.add_argument(
        "--token", action="store_true", help="require the printed token (the default; kept for old scripts)"
    )
    tok.add_argument(
        "--no-token",
        action="store_true",
        help="loopback only, on a single-user machine: no token (any local user could then move the arm)",
    )
    p.add_argument("--wire-log", metavar="FILE", help="write every byte sent and received, with times, to FILE")
    p.add_argument(
        "--record",
        metavar="FILE.yaml",
        help="the page's 'Record pose' button adds the arm's pose (and a move to it) to this program file",
    )
    p.add_argument(
        "--watch",
        action="store_true",
        help="read-only: show the arm another armctl drives on this port (run, jog, a script), without opening "
        "the port (it reads the pose that armctl publishes in the state folder)",
    )
    p.set_defaults(func=cmd_web)


def parse_listen(text: str) -> tuple[str, int]:
    """'HOST:PORT' (IPv6 in brackets) -> (host, port); BadInputError if malformed."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535 or not host:
        raise BadInputError(f"--listen: expected HOST:PORT like 127.0.0.1:8000, got {text!r}")
    return host.strip("[]"), int(port)


def _token(args, host: str) -> str | None:
    """A fresh token, unless --no-token on a loopback address (a LAN address always has one)."""
    from armctl.web.server import is_loopback

    if getattr(args, "no_token", False):
        if not is_loopback(host):
            raise BadInputError(f"--no-token: {host} is not a loopback address; a page on the network needs the token")
        return None
    return secrets.token_urlsafe(16)


def cmd_web(args) -> int:
    from armctl.web.app import serve

    host, port = parse_listen(args.listen)
    args.token_value = _token(args, host)  # before anything opens: a refused --no-token moves nothing
    arm, cal = setup(args)
    if args.watch:
        return _watch(args, arm, cal, host, port)
    recorder = None
    if args.record:
        from armctl.program.recording import Recorder

        recorder = Recorder(args.record, arm)  # a program it cannot record into fails before the port opens
    with open_robot(args, arm, cal) as robot:
        robot.hold_stored_pose()  # a board that reset on open holds the arm again (no motion), not limp
        return serve(
            robot,
            host=host,
            port=port,
            token=args.token_value,
            out=sys.stdout,
            recorder=recorder,
        )


def _watch(args, arm, cal, host: str, port: int) -> int:
    from armctl.robot.robot import Watch
    from armctl.web.app import serve_watch

    if args.record:
        raise BadInputError("--record needs control of the arm; --watch only watches")
    if args.port == "auto":
        raise BadInputError("--watch --port auto would open every port to probe it: give the port the driver uses")
    watch = Watch(arm, args.port, args.backend, cal)
    return serve_watch(watch, host=host, port=port, token=args.token_value, out=sys.stdout)
