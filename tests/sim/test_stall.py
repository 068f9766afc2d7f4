"""``armsim://?stall=NAME@S``: a servo that jams mid-run stays where it was, whatever its pulses."""

import numpy as np
import pytest

from armctl.sim.armsim import SimArm, SimOptions
from armctl.sim.protocol_armsim import parse_url


def test_a_stalled_servo_keeps_its_horn_where_it_was():
    sim = SimArm(SimOptions(arm="mearm", stall=("shoulder", 1.0), slew_deg_s=30.0))  # 300 us take about 1 s
    ch = {s.name: s.channel for s in sim.cal.servos}
    shoulder, elbow = sim.servos[ch["shoulder"]], sim.servos[ch["elbow"]]
    start_s, start_e = shoulder.position_us(0.0), elbow.position_us(0.0)
    shoulder.command(0.5, start_s + 300)  # 300 us away: the horn turns until it jams at 1.0 s
    elbow.command(0.5, start_e + 300)
    at_jam = shoulder.position_us(1.0)
    assert start_s < at_jam < start_s + 300
    assert shoulder.position_us(5.0) == at_jam
    shoulder.command(2.0, start_s - 200)  # later commands move it no more
    assert shoulder.position_us(9.0) == at_jam
    assert elbow.position_us(5.0) == start_e + 300  # the others go on
    assert np.isclose(sim.q_rad(9.0)[1], float(shoulder.angle_rad(9.0)))


@pytest.mark.parametrize("bad", ["stall=shoulder", "stall=@3", "stall=shoulder@-1", "stall=shoulder@nan"])
def test_bad_stall_options(bad):
    with pytest.raises(ValueError, match="stall"):
        parse_url(f"armsim://?{bad}")


def test_unknown_servo_is_named():
    with pytest.raises(ValueError, match="no servo 'knee'; servos: base, shoulder, elbow, gripper"):
        SimArm(SimOptions(arm="mearm", stall=("knee", 1.0)))
