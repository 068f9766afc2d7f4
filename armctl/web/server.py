"""The HTTP server of ``armctl web``: the page, a JSON API and a server-sent-events stream (standard library).

GET  /                      the page (static files from the package)
GET  /api/arm               geometry, limits, servos, reachable region
GET  /api/state             the arm's state now (pose, pulses, motion)
GET  /api/events?session=S  server-sent events: the state whenever it changes; the controlling page's
                            stream closing stops the arm
POST /api/session           claim control -> {"session": S}; 409 while another page holds it
POST /api/move              {"x_mm", "y_mm"[, "z_mm", "phi_deg", "roll_deg", "speed_mm_s", "mode": "line"|"joint"]}
POST /api/home, /api/gripper {"state": "open"|"close"}, /api/heartbeat
POST /api/record            {"name": "pick"} or {}: the pose into the --record program file; /api/record/undo
POST /api/stop              any page may stop the arm
POST /api/pause, /api/resume  feed hold / go on; /api/override {"percent": 10..200}: speed override
POST /api/program/preview   {"text": YAML, "name": "file.yaml"}: plan it whole, its path and steps
POST /api/program/run       the same (and "from_step"): run it, with pause/resume/override

``armctl web --watch`` serves the same page over an arm another armctl drives: GET works, every POST is
refused (403; /api/session 409) with the reason, as the page is read-only.

Every API call carries the token (header ``X-Armctl-Token``, or ``token=`` in the query of
/api/events) when the server has one; control calls carry ``X-Armctl-Session``. POST bodies
must be ``application/json``, and a browser's Origin must match the Host (no cross-site
requests); a loopback server also refuses unknown Host names (DNS rebinding).
"""

from __future__ import annotations

import ipaddress
import json
import secrets
import select
import socket
import sys
import threading
import time
import urllib.parse
from concurrent.futures import TimeoutError as FutureTimeout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources

from armctl.core import limits
from armctl.errors import ArmctlError, LinkError, StopRequested
from armctl.web import api, planner
from armctl.web.controller import ArmBusy, Controller, gripper_command, home_command, program_command
from armctl.web.reach_map import ReachMap
from armctl.web.session import Control

STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/static/style.css": ("style.css", "text/css; charset=utf-8"),
}
SSE_POLL_S = 0.01  # how often the controlling page's stream checks that the page is still there
SSE_KEEPALIVE_S = 1.0  # a view stream sleeps until the state changes, or this long (then a ping)
MAX_STREAMS = 256  # event streams open at once; past that 503 (each is a thread, though an idle one costs nothing)
PLAN_WAIT_S = 15.0
REQUEST_TIMEOUT_S = 10.0  # longest wait for the rest of a request, or on an idle kept-alive connection
MAX_CONNECTIONS = 512  # connections served at once (each is a thread); past that a new one is closed at once
PLAN_BUDGET_S = 5.0  # a page's program is parsed and planned in at most this long, else refused (422)
PLAN_QUEUE_S = 0.2  # a second program sent while one is being planned waits this long, then 503


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and 'localhost'."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class ArmServer(ThreadingHTTPServer):
    """Serves one arm (``controller``) to pages; ``token`` None on loopback unless asked for."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # connections waiting to be accepted (socketserver's 5 resets a burst of pages)

    def __init__(self, address, controller: Controller, control: Control, info: dict, reach: ReachMap, *, token):
        self.controller, self.control, self.info, self.reach, self.token = controller, control, info, reach, token
        self.closing = threading.Event()
        self.streams = threading.BoundedSemaphore(MAX_STREAMS)
        self.connections = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.planning = threading.Lock()  # one page program parsed and planned at a time
        super().__init__(address, Handler)

    @property
    def url(self) -> str:
        """The address to open in a browser (with the token when there is one)."""
        host, port = self.server_address[:2]
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/" + (f"?token={self.token}" if self.token else "")

    def process_request(self, request, client_address) -> None:
        """A thread for the connection, unless MAX_CONNECTIONS are being served (then it is closed: half-sent
        requests by the thousand cannot take the machine's threads and memory)."""
        if not self.connections.acquire(blocking=False):
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.connections.release()

    def shutdown(self) -> None:
        self.closing.set()
        wake = getattr(self.controller, "wake_streams", None)
        if wake is not None:
            wake()
        super().shutdown()

    def handle_error(self, request, client_address) -> None:
        """A page that went away mid-reply (closed tab, the server stopping) is no error; anything else is
        one line on stderr, not socketserver's traceback."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)):
            return
        self.handle_error_line(client_address, exc)

    def handle_error_line(self, client_address, exc) -> None:
        try:
            print(f"armctl web: a request from {client_address[0]} failed: {exc!r}", file=sys.stderr, flush=True)
        except OSError:
            pass


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ArmServer
    timeout = REQUEST_TIMEOUT_S  # a request sent slowly (or a connection left idle) is dropped after this long

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass  # quiet: the page polls and streams; errors reach the page as JSON

    # --- replies -------------------------------------------------------------------------------------

    def _send(self, status: int, body: bytes, ctype: str, extra: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, obj) -> None:
        self._send(status, api.finite_json(obj).encode(), "application/json")

    def _error(self, err: api.ApiError) -> None:
        if err.status >= 400 and err.status not in (401, 403, 404, 409, 422):
            self.close_connection = True  # a body may be left unread: the connection cannot be trusted further
        self._json(err.status, err.body())

    def parse_request(self) -> bool:
        """http.server's parse, and a request line without a version (HTTP/0.9, answered without a status line or
        headers) refused: every answer is HTTP/1.x with a JSON body."""
        ok = super().parse_request()
        if ok and self.request_version == "HTTP/0.9":
            self.send_error(400, "a request line needs its HTTP version (HTTP/1.1)")
            return False
        return ok

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (a garbage request line, too many or too long headers, an unknown method)
        as the API's JSON, like every other answer, instead of its HTML page."""
        self.close_connection = True
        if self.request_version == "HTTP/0.9":  # a request line too broken to name a version: answer in HTTP/1.0
            self.request_version = "HTTP/1.0"
        try:
            short, _ = self.responses.get(code, ("error", ""))
        except AttributeError:
            short = "error"
        body = api.finite_json({"ok": False, "error": message or short}).encode()
        self.send_response(code, message)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD" and code >= 200 and code not in (204, 304):
            self.wfile.write(body)

    def _guarded(self, serve) -> None:
        """Run ``serve``; an ApiError is its JSON answer, anything unexpected a 500 JSON answer and one line on
        stderr, never a connection closed with no reply."""
        try:
            serve()
        except api.ApiError as err:
            note = getattr(self.server.controller, "note_refusal", None)
            if err.status == 422 and note is not None:  # nothing moved: the page's state says why too
                note(err.reason, err.extra.get("target_mm"))
            self._error(err)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            raise
        except Exception as exc:  # noqa: BLE001 - answered, and said once on stderr
            self.server.handle_error_line(self.client_address, exc)
            try:
                self._error(api.ApiError(500, f"internal error: {type(exc).__name__}: {exc}"[:300]))
            except OSError:
                pass

    # --- checks ---------------------------------------------------------------------------------------

    def _query(self) -> dict:
        return urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)

    def _check_host(self) -> None:
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]")
        bound = self.server.server_address[0]
        if is_loopback(bound) and not is_loopback(host):
            raise api.ApiError(403, f"Host {host!r} is not a loopback name: this server only answers local pages")

    def _check_token(self) -> None:
        token = self.server.token
        if token is None:
            return
        given = self.headers.get("X-Armctl-Token") or (self._query().get("token") or [""])[0]
        if not secrets.compare_digest(given.encode(), token.encode()):
            raise api.ApiError(401, "missing or wrong token: open the URL 'armctl web' printed (it has ?token=...)")

    def _check_origin(self) -> None:
        origin = self.headers.get("Origin")
        if origin is None:
            return
        if urllib.parse.urlsplit(origin).netloc != self.headers.get("Host"):
            raise api.ApiError(403, f"cross-site request from {origin!r} refused")

    def _session(self) -> str:
        """The control session of this request; ApiError 409/403 unless it holds control (heartbeat too)."""
        session = self.headers.get("X-Armctl-Session") or ""
        control = self.server.control
        if control.beat(session):
            return session
        if control.held():
            raise api.ApiError(409, "another page controls the arm: this one is read-only", read_only=True)
        raise api.ApiError(403, "this page does not control the arm: claim it first (POST /api/session)")

    def _body(self, limit: int = api.MAX_BODY_BYTES) -> dict:
        if (self.headers.get("Content-Type") or "").split(";")[0].strip().lower() != "application/json":
            raise api.ApiError(415, "POST bodies must be Content-Type: application/json")
        length = (self.headers.get("Content-Length") or "").strip()
        if not length:
            raise api.ApiError(411, "Content-Length required")
        if not (length.isascii() and length.isdigit()) or len(length) > 12:
            raise api.ApiError(400, f"Content-Length must be a number of bytes, found {length[:20]!r}")
        if len(set(v.strip() for v in self.headers.get_all("Content-Length") or ())) > 1:
            raise api.ApiError(400, "two different Content-Length headers")
        n = int(length)
        if n > limit:
            raise api.ApiError(413, f"body too large ({n} bytes, at most {limit})")
        raw = self.rfile.read(n)
        if len(raw) != n:
            raise api.ApiError(400, f"the body ended after {len(raw)} of its {n} bytes (Content-Length)")
        return api.parse_body(raw)

    # --- GET --------------------------------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._guarded(self._get)

    def _get(self) -> None:
        path = urllib.parse.urlsplit(self.path).path
        self._check_host()
        if path in STATIC:
            name, ctype = STATIC[path]
            data = resources.files(__package__).joinpath("static", name).read_bytes()
            self._send(200, data, ctype)
            return
        if not path.startswith("/api/"):
            raise api.ApiError(404, f"no such page {path!r}")
        self._check_token()
        if path == "/api/arm":
            self._json(200, {**self.server.info, "token_required": self.server.token is not None})
        elif path == "/api/state":
            state, _ = self.server.controller.state()
            self._json(200, {**state, "control_held": self.server.control.held()})
        elif path == "/api/events":
            if not self.server.streams.acquire(blocking=False):
                raise api.ApiError(503, f"too many event streams open (at most {MAX_STREAMS}); close some pages")
            try:
                self._events((self._query().get("session") or [""])[0])
            finally:
                self.server.streams.release()
        else:
            raise api.ApiError(404, f"no such API {path!r}")

    def _events(self, session: str) -> None:
        control, controller = self.server.control, self.server.controller
        controlling = bool(session) and control.stream_opened(session)
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        self.end_headers()
        role = "control" if controlling else "view"
        version, last = -1, 0.0
        try:
            self.wfile.write(b"retry: 1000\n\n")
            while not self.server.closing.is_set():
                # The controlling page's stream looks for a closed page every SSE_POLL_S (its closing stops the
                # arm); a view stream sleeps until the state changes (no polling: 200 idle pages cost nothing).
                state, v = controller.wait_change(version, 0.0 if controlling else SSE_KEEPALIVE_S)
                now = time.monotonic()
                if v != version:
                    payload = {**state, "role": role, "control_held": control.held()}
                    self.wfile.write(b"data: " + api.finite_json(payload).encode() + b"\n\n")
                    self.wfile.flush()
                    version, last = v, now
                elif now - last > SSE_KEEPALIVE_S:
                    payload = {"role": role, "control_held": control.held()}
                    self.wfile.write(b"event: ping\ndata: " + json.dumps(payload).encode() + b"\n\n")
                    self.wfile.flush()
                    last = now
                if _peer_closed(self.connection, SSE_POLL_S if controlling else 0.0):
                    break
        except OSError:
            pass  # the page went away mid-write
        finally:
            if controlling and control.stream_closed(session):
                controller.stop("the controlling page closed or lost its connection")

    # --- POST -------------------------------------------------------------------------------------------

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self._guarded(self._post)

    def _post(self) -> None:
        path = urllib.parse.urlsplit(self.path).path
        srv = self.server
        self._check_host()
        self._check_token()
        self._check_origin()
        body = self._body(limits.get("body_bytes") if path.startswith("/api/program/") else api.MAX_BODY_BYTES)
        if getattr(srv.controller, "read_only", False):  # armctl web --watch: another process drives the arm
            raise api.ApiError(409 if path == "/api/session" else 403, srv.controller.why(), read_only=True)
        if path == "/api/session":
            session = srv.control.claim()
            if session is None:
                raise api.ApiError(409, "another page controls the arm: this one is read-only", read_only=True)
            self._json(200, {"ok": True, "session": session})
        elif path == "/api/stop":
            self._wait(srv.controller.stop("stop button"), None)
        elif path == "/api/heartbeat":
            self._session()
            self._json(200, {"ok": True})
        elif path == "/api/move":
            self._session()
            cmd = api.move_command(body, srv.controller.arm, srv.reach)
            self._wait(srv.controller.submit(cmd), cmd)
        elif path == "/api/home":
            self._session()
            api._only(body, set())
            cmd = home_command(srv.controller.arm)
            self._wait(srv.controller.submit(cmd), cmd)
        elif path == "/api/gripper":
            self._session()
            cmd = gripper_command(srv.controller.arm, api.gripper_close(body, srv.controller.arm))
            self._wait(srv.controller.submit(cmd), cmd)
        elif path in ("/api/record", "/api/record/undo"):
            self._session()
            self._record(path, body)
        elif path in ("/api/pause", "/api/resume"):
            self._session()
            api._only(body, set())
            ctl = srv.controller.pause() if path == "/api/pause" else srv.controller.resume()
            self._json(200, {"ok": True, "control": ctl})
        elif path == "/api/override":
            self._session()
            self._json(200, {"ok": True, "control": srv.controller.override(api.override_percent(body))})
        elif path == "/api/program/preview":
            self._session()
            self._json(*self._preview_page_program(body))
        elif path == "/api/program/run":
            self._session()
            prog, _, step = self._plan_page_program(body)
            cmd = program_command(prog, step)
            self._wait(srv.controller.submit(cmd), cmd)
        else:
            raise api.ApiError(404, f"no such API {path!r}")

    def _preview_page_program(self, body: dict) -> tuple[int, dict]:
        """The preview of a page's program, parsed and planned in a child process (``planner``), one at a time
        (a second waits PLAN_QUEUE_S, then 503): this process only waits on a pipe, so heartbeats and stops are
        answered at once however long the program."""
        if not self.server.planning.acquire(timeout=PLAN_QUEUE_S):
            raise api.ApiError(503, "another program is being planned: send it again in a moment")
        try:
            return planner.preview(body, self.server.controller.arm, budget_s=PLAN_BUDGET_S)
        finally:
            self.server.planning.release()

    def _plan_page_program(self, body: dict):
        """``api.load_page_program`` one at a time and within PLAN_BUDGET_S: a second page program waits
        PLAN_QUEUE_S for the first, then 503; the parse and plan are bounded by armctl.core.limits (size, aliases,
        moves, segments) and this time budget, so heartbeats and stops are answered meanwhile."""
        if not self.server.planning.acquire(timeout=PLAN_QUEUE_S):
            raise api.ApiError(503, "another program is being planned: send it again in a moment")
        try:
            with limits.time_budget(PLAN_BUDGET_S, "planning the page's program"):
                return api.load_page_program(body, self.server.controller.arm)
        finally:
            self.server.planning.release()

    def _record(self, path: str, body: dict) -> None:
        """Record the pose (or take the last record back): 200, 404 when not recording, 409 while moving or
        when the file changed since, 400 for a bad or taken name, 503 on a link error."""
        controller = self.server.controller
        if controller.recorder is None:
            raise api.ApiError(404, "not recording: start the server with 'armctl web --record FILE.yaml'")
        try:
            if path == "/api/record":
                result = controller.record(api.record_name(body))
            else:
                api._only(body, set())
                result = controller.undo_record()
        except ArmBusy as exc:
            raise api.ApiError(409, f"not recorded: {exc}") from None
        except LinkError as exc:
            raise api.ApiError(503, f"link error: {exc}") from None
        except ArmctlError as exc:
            status = 409 if "changed since" in str(exc) or "nothing to undo" in str(exc) else 400
            raise api.ApiError(status, str(exc)) from None
        self._json(200, {"ok": True, **result})

    def _wait(self, future, cmd) -> None:
        """Answer once the worker has planned ``cmd`` (or refused it): 200, 409, 422 or 503."""
        try:
            result = future.result(timeout=PLAN_WAIT_S)
        except FutureTimeout:
            raise api.ApiError(503, "the arm did not answer in time") from None
        except StopRequested as exc:
            raise api.ApiError(409, f"not moved: {exc}") from None
        except LinkError as exc:
            raise api.ApiError(503, f"link error: {exc}") from None
        except ArmctlError as exc:
            raise api.refusal(exc, cmd, self.server.reach) from None
        self._json(200, {"ok": True, **(result or {})})


def _peer_closed(conn: socket.socket, wait_s: float) -> bool:
    """Wait up to ``wait_s`` for the page to send something; True if it closed the connection."""
    try:
        readable, _, _ = select.select([conn], [], [], wait_s)
        if not readable:
            return False
        return conn.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True
