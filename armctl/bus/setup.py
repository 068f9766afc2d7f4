"""Giving bus servos their ids and baud rates (``armctl servos``), whatever the bus: written once over
``armctl.bus.setupbus.SetupBus``, which each bus implements (``BUSES``).

- ``scan``: every baud rate (or those asked) and every id; a baud rate where nothing answers a broadcast ping is
  skipped (a bus without one is pinged id by id); a garbled answer at an id, asked again, is two servos on it.
- ``set_id``, ``set_baud``: the servo found, the new id or baud refused when a servo already answers there (never
  two servos on one id), the write confirmed (``confirm``), unlocked and locked as the series needs, and read
  back (at the new baud for a baud rate).
- ``setup_servos``: one servo on the bus at a time (``ask``: "connect only the gripper servo, press Enter"),
  found at any id and baud rate (a new one: the bus's factory id and rate), given its joint's id and the asked
  baud rate, verified; then every servo at once, each answering at its id.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Sequence

from armctl.bus.setupbus import Found, SetupBus
from armctl.errors import BadInputError, LinkError

#: the setup buses by ``--backend`` name: module and class (imported when asked for)
BUSES = {
    "feetech": ("armctl.bus.feetech.setupbus", "FeetechSetupBus"),
    "dynamixel": ("armctl.bus.dynamixel.setupbus", "DynamixelSetupBus"),
}


def open_setup_bus(backend: str, port: str | None, timeout_s: float) -> SetupBus:
    """The setup bus ``backend`` on ``port`` (None: its simulator, ``<backend>sim://``), not yet open, its pings
    waiting ``timeout_s`` for an answer; BadInputError naming the backends otherwise."""
    if backend not in BUSES:
        raise BadInputError(f"--backend {backend}: armctl servos knows {', '.join(BUSES)}")
    module, name = BUSES[backend]
    return getattr(importlib.import_module(module), name)(port or f"{backend}sim://", timeout_s=timeout_s)


def parse_ids(text: str, bus: SetupBus) -> list[int]:
    """``A-B`` or ``N`` (or several, comma-separated) as ids on ``bus``; BadInputError naming the text otherwise."""
    out: list[int] = []
    for part in text.split(","):
        a, dash, b = part.strip().partition("-")
        try:
            ids = range(int(a), int(b) + 1) if dash else [int(a)]
        except ValueError:
            raise BadInputError(f"--ids {text!r}: expected A-B or N (ids 0..{bus.max_id})") from None
        if not ids or any(not 0 <= i <= bus.max_id for i in ids):
            raise BadInputError(f"--ids {text!r}: ids must be 0..{bus.max_id}, A <= B")
        out.extend(ids)
    return sorted(set(out))


def check_id(servo_id: int, bus: SetupBus, what: str = "id") -> int:
    if not 0 <= servo_id <= bus.max_id:
        raise BadInputError(f"{what} {servo_id} is outside 0..{bus.max_id} ({bus.backend})")
    return servo_id


def check_baud(baud: int, bus: SetupBus, what: str = "baud rate") -> int:
    if baud not in bus.baud_rates:
        rates = ", ".join(map(str, bus.baud_rates))
        raise BadInputError(f"{what} {baud} is not one a {bus.backend} servo runs at: {rates}")
    return baud


# --- finding servos -----------------------------------------------------------------------------------------


def scan_baud(bus: SetupBus, baud: int, ids: Sequence[int] | None = None) -> list[Found]:
    """What answers at ``baud``, at ``ids`` (None: every id)."""
    bus.use_baud(baud)
    every = range(bus.max_id + 1) if ids is None else ids
    heard = bus.broadcast()
    if heard is not None:
        clean, other = heard
        if not clean and not other:
            return []  # silence: nobody runs at this rate
        if not other:  # each answer clean: only those ids need asking (for their model, and a collision)
            every = [i for i in every if i in set(clean)]
    return [f for f in map(bus.ping, every) if f is not None]


def scan(bus: SetupBus, bauds: Iterable[int] | None = None, ids: Sequence[int] | None = None) -> list[Found]:
    """Every servo answering at ``bauds`` (None: all the bus's) and ``ids`` (None: all), by baud then id."""
    found: list[Found] = []
    for baud in bauds or bus.baud_rates:
        found += scan_baud(bus, check_baud(baud, bus), ids)
    return found


def find_one(bus: SetupBus, what: str, bauds: Iterable[int] | None = None) -> Found:
    """The one servo on the bus, at whatever id and baud rate (the factory's tried first). BadInputError when
    more than one answers, or one id answers garbled (two servos on it); LinkError when nothing answers."""
    bauds = list(bauds or bus.baud_rates)
    for baud in bauds:
        found = scan_baud(bus, baud)
        if not found:
            continue
        if len(found) > 1 or found[0].collided:
            raise BadInputError(f"{_many(found)}: connect only {what}")
        return found[0]
    raise LinkError(f"{bus.port}: no servo answers at any id at {_bauds(bauds)}: is {what} connected and powered?")


def find_id(bus: SetupBus, servo_id: int, bauds: Iterable[int] | None = None) -> Found:
    """Servo ``servo_id`` at the first of ``bauds`` (None: all) where it answers; BadInputError when its answer
    is garbled (two servos on that id), LinkError when it does not answer."""
    bauds = list(bauds or bus.baud_rates)
    for baud in bauds:
        bus.use_baud(baud)
        found = bus.ping(servo_id)
        if found is not None:
            if found.collided:
                raise BadInputError(f"{_many([found])}: connect only one of them to change it")
            return found
    raise LinkError(f"{bus.port}: no servo answers at id {servo_id} at {_bauds(bauds)}")


def _many(found: Sequence[Found]) -> str:
    if len(found) == 1:
        f = found[0]
        return f"two servos (or more) answer at id {f.id} at {f.baud} baud: their answers collide"
    ids = ", ".join(str(f.id) + (" (two servos or more: garbled)" if f.collided else "") for f in found)
    return f"more than one servo answers at {found[0].baud} baud: ids {ids}"


def _bauds(bauds: Sequence[int]) -> str:
    return f"{bauds[0]} baud" if len(bauds) == 1 else "any baud rate (" + ", ".join(map(str, bauds)) + ")"


def _refuse_taken(bus: SetupBus, servo_id: int, bauds: Iterable[int], why: str) -> None:
    """BadInputError when anything answers at ``servo_id`` at one of ``bauds``: nothing is written."""
    for baud in bauds:
        bus.use_baud(baud)
        if bus.ping(servo_id) is not None:
            raise BadInputError(
                f"id {servo_id} is taken: a servo answers there at {baud} baud ({why}); nothing written"
            )


# --- writing ------------------------------------------------------------------------------------------------


def program(bus: SetupBus, found: Found, new_id: int, new_baud: int) -> Found:
    """Give the servo ``found`` the id ``new_id`` and baud rate ``new_baud`` (torque off, EEPROM unlocked, written,
    locked) and read both back at the new rate: what answers there. LinkError if the servo did not take them;
    BadInputError, before anything is written, if its model does not run at ``new_baud``."""
    rates = bus.model_bauds(found.model)
    if new_baud not in rates:
        raise BadInputError(
            f"servo {found.id} ({found.model.upper()}) does not run at {new_baud} baud, only at "
            f"{', '.join(map(str, rates))}; nothing written"
        )
    bus.use_baud(found.baud)
    bus.torque_off(found.id)
    bus.unlock(found.id)
    if new_id != found.id:
        bus.write_id(found.id, new_id)
    if new_baud != found.baud:
        bus.write_baud(new_id, new_baud)
    bus.use_baud(new_baud)
    try:
        bus.lock(new_id)
        got = bus.read_id_baud(new_id)
    except LinkError as exc:
        raise LinkError(f"the servo does not answer as id {new_id} at {new_baud} baud after the write: {exc}") from None
    if got != (new_id, new_baud):
        raise LinkError(f"the servo reads back id {got[0]} at {got[1]} baud, not id {new_id} at {new_baud} baud")
    after = bus.ping(new_id)
    if after is None or after.collided:
        raise LinkError(f"id {new_id} at {new_baud} baud does not answer cleanly after the write")
    return after


def set_id(bus: SetupBus, old: int, new: int, baud: int | None, confirm: Callable[[str], bool]) -> Found:
    """Servo ``old`` (at ``baud``, None: found at any) becomes ``new``, refused when ``new`` answers at any baud
    rate; ``confirm`` asked first (False: BadInputError, nothing written)."""
    check_id(old, bus, "OLD id")
    check_id(new, bus, "NEW id")
    bauds = [check_baud(baud, bus, "--baud")] if baud is not None else None
    found = _known(bus, find_id(bus, old, bauds), f"servo {old}")
    if new == old:
        return found
    _refuse_taken(bus, new, bus.baud_rates, "never two servos on one id")
    _confirm(confirm, f"write id {new} into the EEPROM of servo {old} ({found.model}, {found.baud} baud)?")
    return program(bus, found, new, found.baud)


def set_baud(bus: SetupBus, baud: int, servo_id: int | None, confirm: Callable[[str], bool]) -> Found:
    """Servo ``servo_id`` (None: the one servo on the bus) runs at ``baud`` from now on, refused when another servo
    already answers at its id at ``baud``; ``confirm`` asked first."""
    check_baud(baud, bus, "BAUD")
    if servo_id is None:
        found = find_one(bus, "the servo to change")
    else:
        found = find_id(bus, check_id(servo_id, bus, "--id"))
    found = _known(bus, found, f"servo {found.id}")
    if found.baud == baud:
        return found
    _refuse_taken(bus, found.id, [baud], f"servo {found.id} at {found.baud} baud would share it")
    _confirm(confirm, f"write {baud} baud into the EEPROM of servo {found.id} ({found.model}, now {found.baud} baud)?")
    return program(bus, found, found.id, baud)


def _known(bus: SetupBus, found: Found, what: str) -> Found:
    """``found``; BadInputError if its model is one armctl does not know (its id and baud registers may be elsewhere:
    nothing is written to it)."""
    if not found.known:
        known = ", ".join(bus.models.values())
        raise BadInputError(
            f"{what} (id {found.id} at {found.baud} baud) reports model number {found.model_number}, "
            f"a model armctl does not know ({bus.backend}: {known}): nothing written"
        )
    return found


def _confirm(confirm: Callable[[str], bool], question: str) -> None:
    if not confirm(question):
        raise BadInputError("not confirmed: nothing written")


# --- one servo at a time ------------------------------------------------------------------------------------


def setup_servos(
    bus: SetupBus,
    joints: Sequence[tuple[str, int]],
    baud: int,
    ask: Callable[[str], None],
    say: Callable[[str], None],
    models: dict[str, str] | None = None,
) -> list[dict]:
    """Each joint's servo in turn (``joints``: (name, id), in the order asked), alone on the bus: found anywhere,
    given its id and ``baud``, verified. Then all connected: each must answer cleanly at its id. The summary:
    one dict a servo (joint, id, baud, model, firmware, where it was found). ``models``: joint -> the model the arm
    has there (a servo of another model is refused, nothing written: a leader's servo in a follower, say)."""
    check_baud(baud, bus, "--baud")
    ids = [check_id(i, bus, f"joint {name}'s id") for name, i in joints]
    if len(set(ids)) != len(ids):
        raise BadInputError(f"the arm gives one id to two joints ({ids}): fix its calibration first")
    done = []
    for name, servo_id in joints:
        ask(f"connect only the {name} servo to the bus (it becomes id {servo_id}) and press Enter")
        found = _known(bus, find_one(bus, f"the {name} servo"), f"the {name} servo")
        want = (models or {}).get(name)
        if want is not None and want in bus.models.values() and found.model != want:
            raise BadInputError(
                f"the {name} servo (id {found.id} at {found.baud} baud) is a {found.model.upper()}; the arm has a "
                f"{want.upper()} there: connect that one (or --any-model): nothing written"
            )
        after = program(bus, found, servo_id, baud)
        was = f"id {found.id} at {found.baud} baud"
        say(f"{name}: {was} -> id {servo_id} at {baud} baud ({after.model}, firmware {after.firmware})")
        done.append({"joint": name, **after.as_dict(), "was": {"id": found.id, "baud": found.baud}})
    ask(f"connect all {len(joints)} servos to the bus and press Enter")
    check_all(bus, joints, baud)
    return done


def check_all(bus: SetupBus, joints: Sequence[tuple[str, int]], baud: int) -> None:
    """Every joint's servo answers cleanly at its id at ``baud``; LinkError naming those that do not."""
    bus.use_baud(baud)
    wrong = []
    for name, servo_id in joints:
        found = bus.ping(servo_id)
        if found is None or found.collided:
            wrong.append(f"{name} (id {servo_id}: {'no answer' if found is None else 'garbled: two servos on it'})")
    if wrong:
        raise LinkError(f"{bus.port}: not every servo answers at its id at {baud} baud: {', '.join(wrong)}")
