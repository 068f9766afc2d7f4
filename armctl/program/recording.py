"""Recording poses into a program file: what ``armctl jog --record FILE`` and ``armctl web --record FILE`` write.

``armctl.program`` reads programs; this module is the one that writes them. Each record adds a named
joint pose under ``poses:`` (the joint angles the arm was commanded to, so playing the program commands
the very same pulses; a comment gives the tool point) and a joint move to it at the end of ``steps:``,
with a gripper step when the gripper was opened or closed since the previous record: before the move, or
after it when the gripper acted once the arm had got there (``gripper_after``). A joint move
is used because it always plans between two poses inside the joint limits, whatever lies between them;
change it to a ``line`` step by hand for a straight path.

The file is edited as text, so its comments, layout and other content stay as they were: the new pose
goes after the last one, the new steps after the last step (block or flow style). The result is read
back and planned on the arm before it is written (atomically); if the text edit does not give exactly
the program expected, the file is written anew from its data instead (comments lost, said so). A
missing file is created as a complete program. ``undo`` puts back the text before the last record of
this session (or removes the file it created), unless someone changed the file since.
"""

from __future__ import annotations

import math
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from armctl.core import limits
from armctl.core.config import load_yaml_text
from armctl.core.paths import PRESET_DIR, atomic_write
from armctl.errors import BadInputError, ConfigError, MotionError
from armctl.model.arm import Arm
from armctl.model.kinematics import tool_pitch, tool_point
from armctl.program import Program, expand, load_program_text, plan_program

NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,39}")
ANGLE_DECIMALS = 3  # 0.001 deg: far below a 0.5 us pulse step, so the pose plays back as the same pulses


@dataclass(frozen=True)
class Recorded:
    """What one record did: the pose's ``name``, the ``steps`` added (YAML text), the file, how many poses
    it has now, and whether its comments and layout were kept (``kept_layout``)."""

    name: str
    steps: tuple[str, ...]
    path: Path
    poses: int
    kept_layout: bool


def gripper_state(arm: Arm, gripper_rad: float | None) -> str | None:
    """``"open"`` or ``"closed"``: whichever of the arm's two gripper angles ``gripper_rad`` is nearer;
    None without a gripper or a known angle."""
    g = arm.gripper
    if g is None or gripper_rad is None or not math.isfinite(gripper_rad):
        return None
    return "open" if abs(gripper_rad - g.open_rad) <= abs(gripper_rad - g.closed_rad) else "closed"


def check_name(name: str) -> str:
    """A pose name as typed, stripped; BadInputError unless it is 1-40 letters, digits, ``_``, ``.``, ``-``."""
    name = name.strip()
    if not NAME_RE.fullmatch(name):
        raise BadInputError(
            f"pose name {name!r}: use 1 to 40 letters, digits, '_', '.' or '-' (no spaces), starting with a "
            "letter, digit or '_'"
        )
    return name


def _yaml_key(name: str) -> str:
    """``name`` as a YAML mapping key: plain where YAML reads it back as that text, else quoted."""
    try:
        plain = yaml.safe_load(f"{name}: 0")
    except yaml.YAMLError:
        plain = None
    return name if isinstance(plain, dict) and list(plain) == [name] else f"'{name}'"


def _arm_key(arm: Arm, folder: Path) -> str:
    """The ``arm:`` value naming ``arm``: its preset name, else its file relative to the program's folder."""
    source = Path(arm.source)
    if source.suffix in (".yaml", ".yml", ".urdf") and source.parent.resolve() != PRESET_DIR.resolve():
        link = f"#{arm.urdf.tool_link}" if arm.urdf is not None and arm.urdf.tool_link_given else ""
        try:
            # with "/" on every OS: Windows reads it too, and the program stays usable on Linux and macOS
            return os.path.relpath(source.resolve(), folder.resolve()).replace(os.sep, "/") + link
        except ValueError:  # another drive (Windows)
            return str(source.resolve())
    return arm.name


class Recorder:
    """Records poses into the program file ``path`` for ``arm`` (see the module docstring).

    The file, if it exists, must already be a program that plans on ``arm`` (ConfigError or MotionError
    naming its line otherwise): recording never breaks a working program, and never writes into one it
    cannot read."""

    def __init__(self, path: str | Path, arm: Arm):
        self.path = Path(path)
        self.arm = arm
        self._undo: list[tuple[str | None, str, str]] = []  # (text before, text written, pose name)
        text = self._read()
        if text is not None:
            self._check(text, self._program(text))

    # --- reading ---------------------------------------------------------------------------------------

    def _read(self) -> str | None:
        if not self.path.exists():
            return None
        return limits.read_utf8(self.path, what="program to record into")

    def _program(self, text: str) -> Program | None:
        """The program in ``text``; None for a file with nothing in it yet (empty, or comments only)."""
        try:
            if load_yaml_text(text, self.path) is None:  # bounded (aliases, nesting): armctl.core.limits
                return None
        except ConfigError:
            pass  # load_program_text names the line (and the limit)
        return load_program_text(text, str(self.path))

    def _check(self, text: str, prog: Program | None) -> None:
        if prog is None:
            return
        try:
            plan_program(prog, self.arm)
        except MotionError as exc:
            raise type(exc)(
                f"{exc} (the program to record into must plan on arm '{self.arm.name}'; fix it or record into "
                "another file)"
            ) from None

    @property
    def names(self) -> list[str]:
        """The pose names in the file now."""
        text = self._read()
        prog = None if text is None else self._program(text)
        return [] if prog is None else list(prog.poses)

    def next_name(self) -> str:
        """The first free name of the form p1, p2, ..."""
        taken = set(self.names)
        k = 1
        while f"p{k}" in taken:
            k += 1
        return f"p{k}"

    @property
    def can_undo(self) -> bool:
        """True if this session recorded something it can still take back."""
        return bool(self._undo)

    # --- writing ---------------------------------------------------------------------------------------

    def record(self, name: str, q_rad, *, gripper: str | None = None, gripper_after: bool = False) -> Recorded:
        """Add pose ``name`` (joint angles ``q_rad``, rad) and a joint move to it, with a gripper step if
        ``gripper`` (``"open"``/``"closed"``) differs from the state the program leaves the gripper in: before
        the move, or after it with ``gripper_after`` (the gripper acted at this pose, after the arm got there),
        so the steps come in the order they were done. BadInputError for a bad or taken name; the file is
        unchanged on any error."""
        name = check_name(name)
        q = np.asarray(q_rad, dtype=float)
        if q.shape != (self.arm.n,) or not np.all(np.isfinite(q)):
            raise BadInputError(f"expected {self.arm.n} finite joint angles for arm {self.arm.name!r}, got {q_rad!r}")
        if not self.arm.within_limits(q, tol=1e-6):
            raise BadInputError(f"pose {name!r}: joint angles outside the limits of arm {self.arm.name!r}")
        before = self._read()
        prog = None if before is None else self._program(before)
        if prog is not None and name in prog.poses:
            raise BadInputError(f"{self.path} already has a pose named {name!r}: give another name")
        if self.arm.gripper is None:
            gripper = None
        steps = []
        start = prog is None  # a new program starts where its first pose is (not at home), gripper as it was
        steps.append(f"{{joint: {_yaml_key(name)}}}")
        if gripper is not None and not start and gripper != _gripper_at_end(prog):
            steps.insert(
                len(steps) if gripper_after else 0, f"{{gripper: {'close' if gripper == 'closed' else 'open'}}}"
            )
        pose = "{q_deg: [" + ", ".join(f"{round(math.degrees(v), ANGLE_DECIMALS):g}" for v in q) + "]}"
        comment = self._comment(q)
        want_poses = (list(prog.poses) if prog else []) + [name]
        want_steps = (len(prog.steps) if prog else 0) + len(steps)

        kept = True
        if prog is None:
            text = self._new_text(before or "", name, pose, comment, steps, gripper)
            self._verify(text, want_poses, want_steps, name, q, steps)
        else:
            try:
                text = _insert(before, _yaml_key(name), pose, comment, steps)
                self._verify(text, want_poses, want_steps, name, q, steps)
            except (ConfigError, MotionError, yaml.YAMLError, ValueError, LookupError):
                kept = False
                text = _redump(before, name, pose, steps)
                self._verify(text, want_poses, want_steps, name, q, steps)
        try:
            atomic_write(self.path, text)
        except OSError as exc:
            raise BadInputError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        self._undo.append((before, text, name))
        return Recorded(name=name, steps=tuple(steps), path=self.path, poses=len(want_poses), kept_layout=kept)

    def undo(self) -> str:
        """Take back the last record of this session: the file's text before it (or no file, if the record
        created it). Returns the pose name taken back. BadInputError if there is none, or if the file was
        changed since (then nothing is touched)."""
        if not self._undo:
            raise BadInputError("nothing to undo: no pose recorded in this session")
        before, written, name = self._undo[-1]
        if self._read() != written:
            raise BadInputError(f"{self.path} was changed since pose {name!r} was recorded: not undone")
        try:
            if before is None:
                self.path.unlink()
            else:
                atomic_write(self.path, before)
        except OSError as exc:
            raise BadInputError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        self._undo.pop()
        return name

    # --- helpers ---------------------------------------------------------------------------------------

    def _comment(self, q: np.ndarray) -> str:
        point = ", ".join(f"{float(v) * 1000:.1f}" for v in tool_point(self.arm, q))
        text = f"tool ({point}) mm"
        if self.arm.n_links == 3:
            text += f", phi {math.degrees(float(tool_pitch(self.arm, q))):.1f} deg"
        return text

    def _new_text(
        self, head: str, name: str, pose: str, comment: str, steps: list[str], gripper: str | None = None
    ) -> str:
        head = head if not head or head.endswith("\n") else head + "\n"
        lines = [
            f"# Recorded by armctl ({time.strftime('%Y-%m-%d %H:%M')}): each pose holds the joint angles the arm",
            "# was at, each step a joint move there. Check it with 'armctl plan FILE', play it with 'armctl run FILE'.",
            f"arm: {_arm_key(self.arm, self.path.parent)}",
            f"start: {_yaml_key(name)}  # the program starts at the first recorded pose, not at home",
            *([f"start_gripper: {gripper}"] if gripper is not None else []),
            "poses:",
            f"  {_yaml_key(name)}: {pose}  # {comment}",
            "steps:",
            *(f"  - {s}" for s in steps),
        ]
        return head + "\n".join(lines) + "\n"

    def _verify(self, text: str, poses: list[str], n_steps: int, name: str, q: np.ndarray, steps: list[str]) -> None:
        """``text`` must be a program with exactly the poses and step count expected, the new pose at ``q``,
        and it must plan on the arm; else ConfigError/MotionError (nothing is written)."""
        prog = load_program_text(text, str(self.path))
        got = prog.poses.get(name)
        if list(prog.poses) != poses or len(prog.steps) != n_steps or got is None or got.q_rad is None:
            raise ConfigError("the recorded program did not read back as expected", path=self.path)
        if np.abs(np.asarray(got.q_rad) - q).max() > math.radians(10**-ANGLE_DECIMALS):
            raise ConfigError("the recorded pose did not read back as expected", path=self.path)
        tail = prog.steps[len(prog.steps) - len(steps) :]
        want = ["joint" if s.startswith("{joint:") else "gripper" for s in steps]
        if [st.action for st in tail] != want or next(st for st in tail if st.action == "joint").target != name:
            raise ConfigError("the recorded step did not read back as expected", path=self.path)
        plan_program(prog, self.arm)


def _gripper_at_end(prog: Program | None) -> str:
    """The gripper state a program leaves: its last gripper step (loops unrolled), else ``start_gripper``."""
    if prog is None:
        return "open"
    state = prog.start_gripper
    for item in expand(prog):
        if item.step.action == "gripper":
            state = "closed" if item.step.gripper == "close" else "open"
    return state


def _line_end(text: str, line: int) -> int:
    """Offset just past the end of 0-based ``line`` (its newline included when there is one)."""
    offset = 0
    for _ in range(line):
        offset = text.index("\n", offset) + 1
    nl = text.find("\n", offset)
    return len(text) if nl < 0 else nl + 1


def _line_start(text: str, line: int) -> int:
    offset = 0
    for _ in range(line):
        offset = text.index("\n", offset) + 1
    return offset


def _end_line(node) -> int:
    """0-based line of the last character of ``node``'s content. A block collection's own end mark lies at
    the next token (past blank and comment lines), so it is found from its last item instead."""
    if isinstance(node, yaml.MappingNode) and not node.flow_style and node.value:
        return _end_line(node.value[-1][1])
    if isinstance(node, yaml.SequenceNode) and not node.flow_style and node.value:
        return _end_line(node.value[-1])
    end = node.end_mark
    return end.line if end.column > 0 else end.line - 1


def _insert(text: str, key: str, pose: str, comment: str, steps: list[str]) -> str:
    """``text`` with the pose added to ``poses:`` and the steps to ``steps:``, layout and comments kept.
    Raises ValueError or LookupError where the layout is not one it knows (the caller falls back)."""
    root = yaml.compose(text)
    if not isinstance(root, yaml.MappingNode):
        raise ValueError("not a mapping")
    items = {k.value: (k, v) for k, v in root.value if isinstance(k, yaml.ScalarNode)}
    edits: list[tuple[int, str]] = []  # (offset, text to insert), applied from the end

    if "steps" not in items:
        raise LookupError("no steps")
    skey, seq = items["steps"]
    if not isinstance(seq, yaml.SequenceNode) or not seq.value:
        raise ValueError("steps is not a list")
    if seq.flow_style:
        close = seq.end_mark.index - 1
        if text[close] != "]":
            raise ValueError("flow list without ]")
        edits.append((close, "".join(f", {s}" for s in steps)))
    else:
        dash_col = seq.start_mark.column
        at = _line_end(text, _end_line(seq.value[-1]))
        prefix = "" if text[:at].endswith("\n") else "\n"
        edits.append((at, prefix + "".join(" " * dash_col + f"- {s}\n" for s in steps)))

    entry = f"{key}: {pose}"
    if "poses" in items:
        _, poses = items["poses"]
        if not isinstance(poses, yaml.MappingNode):
            raise ValueError("poses is not a mapping")
        if poses.flow_style:
            close = poses.end_mark.index - 1
            if text[close] != "}":
                raise ValueError("flow mapping without }")
            edits.append((close, (", " if poses.value else "") + entry))
        elif poses.value:
            last_key, last_value = poses.value[-1]
            at = _line_end(text, _end_line(last_value))
            prefix = "" if text[:at].endswith("\n") else "\n"
            edits.append((at, f"{prefix}{' ' * last_key.start_mark.column}{entry}  # {comment}\n"))
        else:
            raise ValueError("empty block mapping")
    else:  # a new section right above steps: (above the comment lines that lead into it)
        line = skey.start_mark.line
        if skey.start_mark.column != 0:
            raise ValueError("steps: is not at the left margin")
        lines = text.splitlines()
        while line > 0 and lines[line - 1].lstrip().startswith("#"):
            line -= 1
        edits.append((_line_start(text, line), f"poses:\n  {entry}  # {comment}\n"))

    for offset, add in sorted(edits, reverse=True):
        text = text[:offset] + add + text[offset:]
    return text


def _redump(text: str, name: str, pose: str, steps: list[str]) -> str:
    """The program written anew from its data with the pose and steps added (comments are lost)."""
    data = yaml.safe_load(text)
    poses = data.get("poses") or {}
    poses[name] = yaml.safe_load(pose)
    data["poses"] = poses
    data["steps"] = list(data["steps"]) + [yaml.safe_load(s) for s in steps]
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None, allow_unicode=True)
