"""The simulated STS3215 against what Feetech documents for its homing offset and where its position loop wraps
(docs/feetech.md, "Homing offset and the seam"), not against the simulator's own code:

- register 31 "Position correction": -2047..2047 steps, sign-magnitude with the sign in bit 11;
- present position = encoder position - offset, read modulo 4096 (single-turn feedback, Phase bit 4 clear);
- torque switch 128: the offset is set so the present position reads 2048 where the servo stands;
- the position loop is absolute in that corrected frame: it turns the way goal - present says, inside its
  0..4095, whatever the encoder's own 0/4095 (the wrap point is present 0 = encoder at the offset).

The register bytes and readings below are written out by hand from those rules.
"""

from __future__ import annotations

import pytest

from armctl.bus.feetech.protocol import BROADCAST_ID, READ, SYNC_WRITE, WRITE, Packet
from armctl.sim.feetechsim import FeetechSim, FeetechSimOptions

# (offset register bytes 31-32 as written, little-endian; the encoder's position; present position bytes 56-57)
OFFSET_TABLE = [
    (b"\x00\x00", 100, b"\x64\x00"),  # offset 0: present = encoder, 100
    (b"\x64\x00", 100, b"\x00\x00"),  # +100 (0x0064): 100 - 100 = 0
    (b"\xc8\x00", 100, b"\x9c\x0f"),  # +200: 100 - 200 = -100, modulo 4096: 3996 (0x0F9C)
    (b"\xc8\x08", 4000, b"\x68\x00"),  # -200 (0x08C8, bit 11 = sign): 4000 + 200 = 4200 -> 104
    (b"\x64\x08", 4000, b"\x04\x00"),  # -100 (0x0864): 4100 -> 4
    (b"\xff\x0f", 0, b"\xff\x07"),  # -2047 (0x0FFF): 0 + 2047 = 2047
    (b"\xff\x07", 4095, b"\x00\x08"),  # +2047 (0x07FF): 4095 - 2047 = 2048
    (b"\xff\x07", 2047, b"\x00\x00"),  # +2047: the encoder at the offset reads 0 (the wrap point)
    (b"\xff\x07", 2046, b"\xff\x0f"),  # ... one step below it reads 4095
]


def _sim(**kw) -> FeetechSim:
    return FeetechSim(FeetechSimOptions(ids=[1], **kw))


def _do(sim: FeetechSim, code: int, params: bytes, dt: float = 0.001) -> None:
    """One instruction packet reaching the servos (SYNC_WRITE broadcast, the others to id 1), then ``dt`` s."""
    sim._execute(Packet(BROADCAST_ID if code == SYNC_WRITE else 1, code, params), sim.now)
    sim.pump(sim.now + dt)


def _read(sim: FeetechSim, address: int, count: int) -> bytes:
    return sim.servo(1).read(address, count)


@pytest.mark.parametrize(("offset_bytes", "encoder", "present_bytes"), OFFSET_TABLE)
def test_present_position_is_the_encoder_less_the_offset_modulo_a_turn(offset_bytes, encoder, present_bytes):
    sim = _sim()
    _do(sim, WRITE, bytes([31]) + offset_bytes)  # as a host writes it, raw bytes
    assert _read(sim, 31, 2) == offset_bytes
    sim.servo(1).raw = float(encoder)  # the horn turned by hand: the physical encoder position
    assert _read(sim, 56, 2) == present_bytes


@pytest.mark.parametrize(("encoder", "offset_bytes"), [(3000, b"\xb8\x03"), (100, b"\x9c\x0f")])
def test_torque_128_makes_the_present_position_read_2048(encoder, offset_bytes):
    """3000 - 2048 = +952 (0x03B8); 100 - 2048 = -1948: magnitude 0x79C with the sign bit 11 set, 0x0F9C."""
    sim = _sim()
    sim.servo(1).raw = float(encoder)
    _do(sim, WRITE, bytes([40, 128]))
    assert _read(sim, 56, 2) == b"\x00\x08"  # 2048
    assert _read(sim, 31, 2) == offset_bytes


def _sweep(sim: FeetechSim, goal: int, seconds: float) -> list[int]:
    """Torque on where it stands, then ``goal``; the present positions read every 5 ms for ``seconds``."""
    here = sim.servo(1).present_steps()
    _do(sim, WRITE, bytes([42, here & 0xFF, here >> 8]))
    _do(sim, WRITE, bytes([40, 1]))
    _do(sim, SYNC_WRITE, bytes([42, 2, 1, goal & 0xFF, goal >> 8]))
    seen = []
    for _ in range(int(seconds / 0.005)):
        sim.pump(sim.now + 0.005)
        data = _read(sim, 56, 2)
        seen.append(data[0] | data[1] << 8)
    return seen


def _monotonic(seen: list[int], up: bool) -> bool:
    steps = [b - a for a, b in zip(seen, seen[1:])]
    return all(d >= 0 for d in steps) if up else all(d <= 0 for d in steps)


def test_a_range_whose_encoder_positions_cross_the_encoders_seam_is_turned_through_the_inside():
    """LeRobot's wrist_flex of erics_first_so101.json: offset -2047, limits 869..3248. From present 1000 (encoder
    1000 - 2047 -> 3049) to 3000 (encoder 953) the encoder passes its own 4095/0; the servo turns 2000 steps up
    through 2048, as goal - present says, and never the long way round through present 0."""
    sim = _sim(offsets={1: -2047}, limits={1: (869, 3248)}, start_steps=[1000])
    assert sim.servo(1).raw == 3049
    seen = _sweep(sim, 3000, 1.2)
    assert seen[-1] == 3000 and _monotonic(seen, up=True), seen[:: len(seen) // 12]
    assert max(b - a for a, b in zip(seen, seen[1:])) < 40  # 3400 step/s: at most 17 steps in 5 ms
    assert sim.servo(1).raw == 953


def test_the_servo_never_turns_across_the_corrected_frames_0_4095():
    """LeRobot's wrist_roll (offset +2047, range 0..4095): from present 4000 to 100 the servo turns 3900 steps
    down through 2048 (goal - present = -3900), not 196 up across its 0/4095."""
    sim = _sim(offsets={1: 2047}, start_steps=[4000])
    seen = _sweep(sim, 100, 2.0)
    assert seen[-1] == 100 and _monotonic(seen, up=False)
    assert 2048 in range(min(seen), max(seen) + 1)


def test_angle_limits_clamp_the_goal_in_the_corrected_frame():
    """Min/Max_Position_Limit bound the goal as the present position counts, not as the encoder does."""
    sim = _sim(offsets={1: -1407}, limits={1: (2027, 3447)}, start_steps=[3000])
    seen = _sweep(sim, 3643, 0.6)
    assert seen[-1] == 3447 and _monotonic(seen, up=True)


def test_a_read_of_present_position_matches_the_sync_read_bytes():
    sim = _sim(offsets={1: -200}, start_steps=[104])
    _do(sim, READ, bytes([56, 2]))
    assert _read(sim, 56, 2) == b"\x68\x00"
    assert sim.servo(1).raw == pytest.approx(4000)
